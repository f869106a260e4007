-- The report's own reads (mole_dag/output/selection.py, reasons.py and report.py), beside
-- report_findings in pipeline.sql.

-- name: report_claim_positions
-- Where each claim's quote sits: the tie-break between findings of equal relevance and
-- confidence is by content (source URL, then quote position), never by claim id, which is a
-- hash of the session id and would order two sessions of one question differently.
SELECT c.id AS claim_id, s.url, c.quote_byte_start
FROM claims c JOIN sources s ON s.id = c.source_id
WHERE c.session_id = $session_id;

-- name: report_relevance_scored
-- Whether anything scored relevance in this session: 0 rows means "not scored" (a session from
-- before the scorer), which is not the same as "scored and found irrelevant".
SELECT count(*) AS scored, coalesce(max(relevance), 0.0) AS best
FROM claim_relevance WHERE session_id = $session_id;

-- name: report_model_work
-- What a model did in this session, by skill (the tool is `<provider>:<skill>`): settled calls
-- on a model. The extractive provider's calls carry model 'extractive' and searches none.
SELECT split_part(tool, ':', 2) AS skill, count(*) AS calls
FROM tool_calls
WHERE session_id = $session_id AND status = 'settled' AND model IS NOT NULL
  AND model <> 'extractive'
GROUP BY 1 ORDER BY 1;

-- name: report_dead_ends
SELECT cause, count(*) AS n FROM dead_ends WHERE session_id = $session_id
GROUP BY cause ORDER BY n DESC, cause;

-- name: unreadable_reply_insert_many
INSERT INTO unreadable_replies (session_id, skill, problem, created_at)
SELECT $session_id, unnest($skill), unnest($problem), $now;

-- name: report_unreadable_replies
-- Replies the stages could not read, by skill, beside the replies that skill's calls got
-- (settled model calls): "7 of 9".
SELECT u.skill, u.n, coalesce(c.calls, 0) AS calls
FROM (SELECT skill, count(*) AS n FROM unreadable_replies WHERE session_id = $session_id
      GROUP BY skill) AS u
LEFT JOIN (SELECT split_part(tool, ':', 2) AS skill, count(*) AS calls FROM tool_calls
           WHERE session_id = $session_id AND status = 'settled' AND model IS NOT NULL
           GROUP BY 1) AS c ON c.skill = u.skill
ORDER BY u.skill;

-- name: report_failed_model_calls
-- Model calls that failed and whose work the session went on without (released, or settled
-- because the provider charged for an empty answer): how many, and the newest one's note,
-- which names the error. Not a provider that stopped answering (ProviderUnavailable): that
-- interrupts the session, and `mole resume` asks for the same work again; nor a call not
-- retried because its pass was interrupted (CallNotRetried), whose work resume does again too.
SELECT count(*) AS n, arg_max(note, completed_at) AS last
FROM tool_calls
WHERE session_id = $session_id
  AND split_part(tool, ':', 2) IN ('plan', 'mine', 'judge', 'write', 'ground', 'hypothesize')
  -- Not LIKE 'call failed:%': a literal % is a placeholder to the Postgres driver.
  AND split_part(note, ':', 1) IN ('call failed', 'paid for, but failed')
  AND trim(split_part(note, ':', 2)) NOT IN ('ProviderUnavailable', 'CallNotRetried');
