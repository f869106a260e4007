-- The answers of paid calls a stage keeps, so a stage run again does not pay for them twice
-- (sql/migrations/0021_call_answers.sql, mole_dag/llm/fanout.py).

-- name: call_answer_keep
INSERT INTO call_answers (session_id, stage, call_key, call_id, answer, created_at)
VALUES ($session_id, $stage, $call_key, $call_id, $answer, $now)
ON CONFLICT (session_id, stage, call_key) DO NOTHING;

-- name: call_answers_kept
SELECT call_key, answer FROM call_answers
WHERE session_id = $session_id AND stage = $stage AND call_key IN (SELECT unnest($keys));
