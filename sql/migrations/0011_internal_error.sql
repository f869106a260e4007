-- Issue 13: a lead that fails on a bug of ours (an unexpected exception) is an `internal_error`
-- dead end, kept apart from `fetch_failed` (the outside world failing), so a bug cannot hide
-- among network errors. Mirrored by mole_dag.core.DeadEndCause. DuckDB cannot alter a CHECK
-- constraint, so the table is rebuilt with its rows; views bind by name and read the new table.
CREATE TABLE dead_ends_0011 (
    id              VARCHAR PRIMARY KEY,
    session_id      VARCHAR NOT NULL,
    sub_question_id VARCHAR,
    lead_id         VARCHAR,
    url             VARCHAR,
    cause           VARCHAR NOT NULL CHECK (cause IN (
                        'no_results', 'fetch_failed', 'robots', 'too_large', 'wrong_type',
                        'js_required', 'no_text', 'no_claims', 'ssrf_refused', 'rate_limited',
                        'budget_exhausted', 'timeout', 'unreadable', 'internal_error')),
    detail          VARCHAR,
    created_at      TIMESTAMP NOT NULL
);

INSERT INTO dead_ends_0011 SELECT * FROM dead_ends;
DROP TABLE dead_ends;
ALTER TABLE dead_ends_0011 RENAME TO dead_ends;
