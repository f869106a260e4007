-- Issue 11: the budget ceiling counts overrun, and crash recovery has states to land in.
--
-- DuckDB cannot alter or add a CHECK on an existing table, so `sessions` and `tool_calls` are
-- rebuilt with the rules they need now (no FOREIGN KEYs point at them, see 0001) and their rows
-- copied across. New here:
--   sessions.status  'exhausted' (an overrun stopped it, or the budget could not pay for the
--                    first call) and 'interrupted' (SIGINT/SIGTERM, or its driving process
--                    died: `mole resume` continues it).
--   sessions.owner   'host:pid' of the process driving the session, so recovery can tell a
--                    session whose driver died from one still running.
--   sessions.stop_reason  one line saying why a session stopped early, for the CLI and MCP.
--   tool_calls.owner 'host:pid' of the process that made the reservation.
--   tool_calls.assumed  settled at the reserved amount because its outcome is unknown (the
--                    process died or was interrupted with the call in flight). Never released
--                    for free: the provider may well have charged for it.

CREATE TABLE sessions_0009 (
    id              VARCHAR PRIMARY KEY,
    question        VARCHAR NOT NULL CHECK (length(trim(question)) > 0),
    unit            VARCHAR NOT NULL CHECK (unit IN ('usd_micros', 'tokens')),
    total           BIGINT  NOT NULL CHECK (total > 0),
    spent           BIGINT  NOT NULL DEFAULT 0 CHECK (spent >= 0),
    held            BIGINT  NOT NULL DEFAULT 0 CHECK (held >= 0),
    escrow          BIGINT  NOT NULL CHECK (escrow >= 0),
    -- Spend beyond a call's own reservation: real money, kept apart from `spent` so the
    -- reservation arithmetic below stays exact, and added to `spent` in every figure a user sees.
    overrun         BIGINT  NOT NULL DEFAULT 0 CHECK (overrun >= 0),
    escrow_released BOOLEAN NOT NULL DEFAULT false,
    status          VARCHAR NOT NULL DEFAULT 'created'
                    CHECK (status IN ('created', 'running', 'reporting', 'done', 'failed',
                                      'abandoned', 'exhausted', 'interrupted')),
    provider        VARCHAR NOT NULL DEFAULT 'extractive',
    corpus          VARCHAR,
    actors          VARCHAR NOT NULL DEFAULT 'local',
    rounds          INTEGER NOT NULL DEFAULT 0 CHECK (rounds >= 0),
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL,
    data            VARCHAR,
    kind            VARCHAR DEFAULT 'research',
    driver          VARCHAR DEFAULT 'cli',
    owner           VARCHAR,
    stop_reason     VARCHAR,
    CHECK (spent + held + escrow <= total),
    CHECK (NOT escrow_released OR escrow = 0)
);
INSERT INTO sessions_0009
    (id, question, unit, total, spent, held, escrow, overrun, escrow_released, status, provider,
     corpus, actors, rounds, created_at, updated_at, data, kind, driver)
SELECT id, question, unit, total, spent, held, escrow, overrun, escrow_released, status, provider,
       corpus, actors, rounds, created_at, updated_at, data, kind, driver
FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_0009 RENAME TO sessions;

CREATE TABLE tool_calls_0009 (
    id            VARCHAR PRIMARY KEY,
    session_id    VARCHAR NOT NULL,
    role          VARCHAR NOT NULL CHECK (role IN ('planner', 'executor', 'verifier', 'output')),
    stage         VARCHAR NOT NULL,
    tool          VARCHAR NOT NULL,
    reserved      BIGINT  NOT NULL CHECK (reserved >= 0),
    actual        BIGINT  CHECK (actual >= 0),
    overrun       BIGINT  NOT NULL DEFAULT 0 CHECK (overrun >= 0),
    status        VARCHAR NOT NULL CHECK (status IN ('reserved', 'settled', 'released', 'expired')),
    input_tokens  BIGINT  CHECK (input_tokens >= 0),
    output_tokens BIGINT  CHECK (output_tokens >= 0),
    cache_read_tokens  BIGINT CHECK (cache_read_tokens >= 0),
    cache_write_tokens BIGINT CHECK (cache_write_tokens >= 0),
    note          VARCHAR,
    created_at    TIMESTAMP NOT NULL,
    expires_at    TIMESTAMP NOT NULL,
    completed_at  TIMESTAMP,
    model         VARCHAR,
    owner         VARCHAR,
    assumed       BOOLEAN NOT NULL DEFAULT false,
    CHECK ((status = 'settled') = (actual IS NOT NULL)),
    CHECK ((status = 'reserved') = (completed_at IS NULL)),
    CHECK (overrun <= coalesce(actual, 0)),
    CHECK (expires_at >= created_at),
    -- An assumed settlement charges exactly what was held: no more (we do not know it used
    -- more), no less (we do not know it used less).
    CHECK (NOT assumed OR (status = 'settled' AND actual = reserved AND overrun = 0))
);
INSERT INTO tool_calls_0009
    (id, session_id, role, stage, tool, reserved, actual, overrun, status, input_tokens,
     output_tokens, cache_read_tokens, cache_write_tokens, note, created_at, expires_at,
     completed_at, model)
SELECT id, session_id, role, stage, tool, reserved, actual, overrun, status, input_tokens,
       output_tokens, cache_read_tokens, cache_write_tokens, note, created_at, expires_at,
       completed_at, model
FROM tool_calls;
DROP TABLE tool_calls;
ALTER TABLE tool_calls_0009 RENAME TO tool_calls;
CREATE INDEX tool_calls_session ON tool_calls (session_id);
