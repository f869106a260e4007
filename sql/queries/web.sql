-- Search settings and the web actor's bookkeeping.

-- name: session_search_insert
INSERT INTO session_search (session_id, searxng_url, allow_hosts, created_at)
VALUES ($session_id, $searxng_url, $allow_hosts, $now)
ON CONFLICT DO NOTHING;

-- name: session_search_get
SELECT searxng_url, allow_hosts FROM session_search WHERE session_id = $session_id;

-- name: digest_dead_ends_by_sub_question
SELECT sq.text AS sub_question, d.cause, count(*) AS n
FROM dead_ends d JOIN sub_questions sq ON sq.id = d.sub_question_id
WHERE d.session_id = $session_id
GROUP BY sq.text, sq.round, sq.ordinal, d.cause
ORDER BY sq.round, sq.ordinal, d.cause;
