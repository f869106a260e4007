-- Watching a question (issue 32): mole_dag/watch.py.

-- name: watch_insert
INSERT INTO watches (id, session_id, question, every, cron, unit, budget, notify, created_at)
VALUES ($id, $session_id, $question, $every, $cron, $unit, $budget, $notify, $now);

-- name: watch_get
SELECT * FROM watches WHERE id = $id;

-- name: watches_active
SELECT * FROM watches WHERE removed_at IS NULL ORDER BY created_at, id;

-- name: watch_remove
UPDATE watches SET removed_at = $now WHERE id = $id AND removed_at IS NULL;

-- name: watch_runs_of
-- A watch's runs, latest first.
SELECT * FROM watch_runs WHERE watch_id = $watch_id ORDER BY due_at DESC;

-- name: watch_run_get
SELECT * FROM watch_runs WHERE watch_id = $watch_id AND due_at = $due_at;

-- name: watch_run_insert
INSERT INTO watch_runs (watch_id, due_at, session_id, previous_session_id, status, started_at)
VALUES ($watch_id, $due_at, $session_id, $previous_session_id, 'running', $now);

-- name: watch_run_finish
UPDATE watch_runs
SET status = $status, finished_at = $now, material = $material, notified = $notified,
    notify_error = $notify_error
WHERE watch_id = $watch_id AND due_at = $due_at;
