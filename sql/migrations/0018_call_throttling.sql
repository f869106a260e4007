-- Issue 20: a stage's model calls run concurrently, and a provider's 429 (rate limited) or 529
-- (overloaded) lowers the session's concurrency instead of failing the calls. One row per pass
-- of calls that met such a refusal (mole_dag/llm/fanout.py), so `mole show` can say when a
-- session was throttled, how far its concurrency went down and for how long.
CREATE TABLE call_throttling (
    session_id   VARCHAR NOT NULL,
    stage        VARCHAR NOT NULL,
    label        VARCHAR NOT NULL,
    parallel     INTEGER NOT NULL CHECK (parallel >= 1),
    lowest       INTEGER NOT NULL CHECK (lowest >= 1 AND lowest <= parallel),
    rate_limited INTEGER NOT NULL CHECK (rate_limited >= 0),
    overloaded   INTEGER NOT NULL CHECK (overloaded >= 0),
    throttled_s  DOUBLE  NOT NULL CHECK (throttled_s >= 0),
    pass_s       DOUBLE  NOT NULL CHECK (pass_s >= 0),
    created_at   TIMESTAMP NOT NULL
);
