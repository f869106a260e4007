-- Issue 32: watching a question. A watch re-runs a finished session's question on a schedule
-- (the Dagster schedule `watched_questions`), each run a rerun session of its own with the
-- watch's budget, diffed against the run before it.

CREATE TABLE watches (
    id          VARCHAR PRIMARY KEY,
    -- The session first watched; each run re-runs the latest finished one of the chain.
    session_id  VARCHAR NOT NULL,
    question    VARCHAR NOT NULL,
    -- As the user gave it (daily, weekly or a cron string) and the cron it stands for.
    every       VARCHAR NOT NULL,
    cron        VARCHAR NOT NULL,
    -- The budget of each run: no run without one, and the ledger's ceiling holds per run.
    unit        VARCHAR NOT NULL CHECK (unit IN ('usd_micros', 'tokens')),
    budget      BIGINT  NOT NULL CHECK (budget > 0),
    -- A command run with the diff's JSON on standard input when something material changed.
    notify      VARCHAR,
    created_at  TIMESTAMP NOT NULL,
    -- Removed watches stay, so what they spent stays queryable (view watch_spend).
    removed_at  TIMESTAMP
);

-- One row per run of a watch. `due_at` is the tick of the watch's own schedule the run is for:
-- one run per tick, however often the Dagster schedule looks.
CREATE TABLE watch_runs (
    watch_id            VARCHAR   NOT NULL,
    due_at              TIMESTAMP NOT NULL,
    session_id          VARCHAR   NOT NULL,
    previous_session_id VARCHAR   NOT NULL,
    status              VARCHAR   NOT NULL CHECK (status IN ('running', 'done', 'failed')),
    started_at          TIMESTAMP NOT NULL,
    finished_at         TIMESTAMP,
    -- Whether the diff from the previous run was material, and whether --notify ran (and why
    -- not, when it failed).
    material            BOOLEAN,
    notified            BOOLEAN,
    notify_error        VARCHAR,
    PRIMARY KEY (watch_id, due_at),
    CHECK (status = 'running' OR finished_at IS NOT NULL)
);
