-- What a provider's refusals (429, 529) did to a session's concurrent model calls (issue 20).

-- name: throttling_insert
INSERT INTO call_throttling
    (session_id, stage, label, parallel, lowest, rate_limited, overloaded, throttled_s, pass_s,
     created_at)
VALUES ($session_id, $stage, $label, $parallel, $lowest, $rate_limited, $overloaded,
        $throttled_s, $pass_s, $now);

-- name: session_throttling
-- One line per session: refusals, the lowest concurrency, seconds below the setting, which passes.
SELECT count(*) AS passes,
       sum(rate_limited) AS rate_limited,
       sum(overloaded) AS overloaded,
       min(lowest) AS lowest,
       max(parallel) AS parallel,
       sum(throttled_s) AS throttled_s,
       string_agg(DISTINCT label, ', ' ORDER BY label) AS labels,
       min(created_at) AS first_at
FROM call_throttling
WHERE session_id = $session_id
HAVING count(*) > 0;
