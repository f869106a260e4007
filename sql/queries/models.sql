-- Model calls and what the quote check threw away (issue 3). Queried by `mole show` and the
-- Dagster metadata, so a session's stats say what its models cost and how many of their
-- claims did not survive.

-- name: discarded_by_cause
-- 'empty' is a draft with no quote at all.
SELECT cause, sum(n)::BIGINT AS n
FROM discarded_claims
WHERE session_id = $session_id
GROUP BY cause
ORDER BY cause;

-- name: spend_by_model
SELECT model, count(*) AS calls,
       coalesce(sum(actual), 0)::BIGINT AS spent,
       coalesce(sum(input_tokens), 0)::BIGINT AS input_tokens,
       coalesce(sum(output_tokens), 0)::BIGINT AS output_tokens,
       coalesce(sum(cache_read_tokens), 0)::BIGINT AS cache_read_tokens,
       coalesce(sum(cache_write_tokens), 0)::BIGINT AS cache_write_tokens,
       coalesce(sum(overrun), 0)::BIGINT AS overrun
FROM tool_calls
WHERE session_id = $session_id AND status = 'settled' AND model IS NOT NULL
GROUP BY model
ORDER BY model;

-- name: settled_model_calls
SELECT id, tool, model, reserved, actual, overrun, input_tokens, output_tokens,
       cache_read_tokens, cache_write_tokens
FROM tool_calls
WHERE session_id = $session_id AND status = 'settled' AND model IS NOT NULL
ORDER BY created_at, id;
