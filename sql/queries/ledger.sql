-- The ledger's statements. Availability check and hold are one UPDATE: the WHERE clause is the
-- check, the CHECK constraints on `sessions` are the last line of defence if it is ever wrong.
--
-- No UPDATE ... RETURNING anywhere: under concurrent write-write conflicts DuckDB (2.0.1) was seen
-- to lose later committed updates on a cursor that had run one (tests/test_ledger_stress.py,
-- four-stores-conflicting case, fails with it). The affected-row count that a plain UPDATE returns is enough.

-- name: session_insert
INSERT INTO sessions
    (id, question, unit, total, escrow, status, provider, corpus, actors, created_at, updated_at)
VALUES ($id, $question, $unit, $total, $escrow, 'created', $provider, $corpus, $actors, $now, $now);

-- name: reserve_hold
UPDATE sessions
SET held = held + $amount, updated_at = $now
WHERE id = $session_id
  AND status IN ('created', 'running', 'reporting')
  -- After the first overrun the session's bounds are no bounds: nothing more is dispatched.
  AND overrun = 0
  AND spent + held + escrow + $amount <= total;

-- name: call_insert
INSERT INTO tool_calls (id, session_id, role, stage, tool, reserved, status, note, created_at, expires_at, owner)
VALUES ($id, $session_id, $role, $stage, $tool, $amount, 'reserved', $note, $now, $expires_at, $owner);

-- name: call_get
SELECT id, session_id, role, stage, tool, reserved, actual, overrun, status, expires_at,
       completed_at, assumed
FROM tool_calls WHERE id = $id;

-- name: session_charge
UPDATE sessions
SET held = held - $unhold, spent = spent + $charged, overrun = overrun + $overrun, updated_at = $now
WHERE id = $session_id;

-- name: call_settle
UPDATE tool_calls
SET status = 'settled', actual = $actual, overrun = $overrun,
    input_tokens = $input_tokens, output_tokens = $output_tokens,
    cache_read_tokens = $cache_read_tokens, cache_write_tokens = $cache_write_tokens,
    model = $model, note = coalesce($note, note), completed_at = $now
WHERE id = $id AND status IN ('reserved', 'expired');

-- name: call_release
UPDATE tool_calls
SET status = 'released', note = coalesce($note, note), completed_at = $now
WHERE id = $id AND status = 'reserved';

-- name: stale_holds
SELECT session_id, sum(reserved)::BIGINT AS amount, count(*) AS calls
FROM tool_calls
WHERE status = 'reserved' AND expires_at < $now
GROUP BY session_id;

-- name: session_unhold
UPDATE sessions SET held = held - $amount, updated_at = $now WHERE id = $session_id;

-- name: calls_expire
UPDATE tool_calls
SET status = 'expired', completed_at = $now, note = 'reservation expired before settle'
WHERE status = 'reserved' AND expires_at < $now AND session_id = $session_id;

-- name: session_release_escrow
UPDATE sessions
SET escrow = 0, escrow_released = true, status = 'reporting', updated_at = $now
WHERE id = $session_id AND NOT escrow_released;

-- name: session_get
SELECT * FROM sessions WHERE id = $session_id;

-- name: ledger_verify
-- Recompute the materialised balances from the append-only ledger.
SELECT
    s.id AS session_id, s.total, s.spent, s.held, s.escrow, s.overrun,
    coalesce(sum(c.actual - c.overrun) FILTER (WHERE c.status = 'settled'), 0)::BIGINT AS calls_spent,
    coalesce(sum(c.reserved) FILTER (WHERE c.status = 'reserved'), 0)::BIGINT AS calls_held,
    coalesce(sum(c.overrun), 0)::BIGINT AS calls_overrun,
    count(c.id) FILTER (WHERE c.assumed) AS calls_assumed,
    count(c.id) AS calls
FROM sessions s
LEFT JOIN tool_calls c ON c.session_id = s.id
WHERE s.id = $session_id
-- Spelled out, not GROUP BY ALL: the same query runs on Postgres.
GROUP BY s.id, s.total, s.spent, s.held, s.escrow, s.overrun;

-- name: spend_by_role
SELECT role, count(*) AS calls,
       coalesce(sum(actual), 0)::BIGINT AS spent,
       coalesce(sum(reserved) FILTER (WHERE status = 'reserved'), 0)::BIGINT AS held
FROM tool_calls
WHERE session_id = $session_id
GROUP BY role
ORDER BY role;

-- name: spend_by_stage
SELECT stage, role, count(*) AS calls, coalesce(sum(actual), 0)::BIGINT AS spent
FROM tool_calls
WHERE session_id = $session_id
GROUP BY stage, role
ORDER BY stage, role;

-- name: open_reservations
SELECT c.id, c.session_id, c.reserved, c.expires_at, c.owner, s.status AS session_status
FROM tool_calls c JOIN sessions s ON s.id = c.session_id
WHERE c.status = 'reserved'
ORDER BY c.created_at, c.id;

-- name: calls_reserved_in_stage
SELECT id, session_id, role, stage, tool, reserved, actual, overrun, status, expires_at,
       completed_at, assumed
FROM tool_calls
WHERE session_id = $session_id AND stage = $stage AND status = 'reserved'
ORDER BY created_at, id;

-- name: call_settle_assumed
-- Outcome unknown: charged at the reserved amount, which is an upper bound of what it used.
UPDATE tool_calls
SET status = 'settled', actual = reserved, overrun = 0, assumed = true, completed_at = $now,
    note = 'outcome unknown (caller died or was interrupted): settled at the reserved amount'
WHERE id = $id AND status = 'reserved';

-- name: call_note
UPDATE tool_calls SET note = $note WHERE id = $id;

-- name: call_settle_assumed_late
UPDATE tool_calls
SET actual = $actual, overrun = $overrun, assumed = false,
    input_tokens = $input_tokens, output_tokens = $output_tokens,
    cache_read_tokens = $cache_read_tokens, cache_write_tokens = $cache_write_tokens,
    model = $model, note = coalesce($note, 'settled late, after recovery had assumed it'),
    completed_at = $now
WHERE id = $id AND status = 'settled' AND assumed;

-- name: session_set_status_reason
UPDATE sessions SET status = $status, stop_reason = coalesce($reason, stop_reason),
    updated_at = $now
WHERE id = $session_id;

-- name: session_set_owner
UPDATE sessions SET owner = $owner, updated_at = $now WHERE id = $session_id;

-- name: sessions_orphaned
-- Sessions some process was driving (owner set) that have not finished.
SELECT id, owner FROM sessions
WHERE owner IS NOT NULL AND status IN ('created', 'running', 'reporting');

-- name: free_calls_insert_many
-- Calls that held nothing and cost nothing (an extractive skill, a local search), recorded after
-- the fact in one statement per stage (issue 12): nothing was reserved for them, so there is no
-- hold to commit before dispatch, and the books (spent, held) do not move. One row per call, as
-- for any other call, so tool_calls stays complete.
INSERT INTO tool_calls (id, session_id, role, stage, tool, reserved, actual, overrun, status,
                        input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
                        note, created_at, expires_at, completed_at, model, owner, assumed)
SELECT unnest($id), $session_id, unnest($role), unnest($stage), unnest($tool), 0,
       unnest($actual::BIGINT[]), 0, unnest($status),
       unnest($input_tokens::BIGINT[]), unnest($output_tokens::BIGINT[]),
       unnest($cache_read_tokens::BIGINT[]), unnest($cache_write_tokens::BIGINT[]),
       unnest($note::VARCHAR[]), unnest($created_at::TIMESTAMP[]),
       unnest($expires_at::TIMESTAMP[]), unnest($completed_at::TIMESTAMP[]),
       unnest($model::VARCHAR[]), $owner, unnest($assumed::BOOLEAN[]);
