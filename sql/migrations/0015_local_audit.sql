-- Issue 22: the query audit, per dataset. Overlap control (0010) compared answers in pairs and
-- within one session; three answers, or two split over two sessions on the same CSV, still added
-- up to one respondent. Now every figure answered over a dataset is recorded once for the data,
-- whichever session or process asked, and a new answer is refused when, with the recorded ones,
-- it makes a set of fewer than `floor` rows a sum of answers (mole_dag/local_data/audit.py).

-- One row per dataset, keyed by the hash of its bytes without the file names (a renamed copy is
-- the same data). `answered` is how many row sets are recorded, the next set's seq; the row is
-- locked by every audited answer, so two processes cannot each pass one half of a combination.
-- `audit_id` is a fresh token per record, so a process's cached audit is never mistaken for
-- another store's.
CREATE TABLE local_audits (
    data_sha256  VARCHAR PRIMARY KEY CHECK (length(data_sha256) = 64),
    audit_id     VARCHAR NOT NULL,
    row_count    BIGINT  NOT NULL CHECK (row_count >= 5),
    answered     INTEGER NOT NULL CHECK (answered >= 0),
    created_at   TIMESTAMP NOT NULL,
    updated_at   TIMESTAMP NOT NULL
);

-- The rows each answered figure rests on: one set per shown group and aggregated column set
-- (`columns`: '' for the rows themselves, i.e. count(*) and every row's n; else the aggregate's
-- columns, sorted, comma-separated: the rows on which they are all set). `bits` is a
-- zlib-compressed bitmap over the dataset's row order. Internal to the boundary: no view,
-- listing, tool or model reads it. Append-only, in the order answered.
CREATE TABLE local_audit_sets (
    data_sha256  VARCHAR NOT NULL CHECK (length(data_sha256) = 64),
    seq          INTEGER NOT NULL CHECK (seq >= 0),
    session_id   VARCHAR NOT NULL,
    crossing_id  VARCHAR NOT NULL,
    columns      VARCHAR NOT NULL,
    n            BIGINT  NOT NULL CHECK (n >= 0),
    bits         BLOB    NOT NULL,
    PRIMARY KEY (data_sha256, seq)
);

CREATE INDEX local_audit_sets_crossing ON local_audit_sets (crossing_id);

-- Which sessions asked about which data, so `mole crossings` can count the attempts the audit
-- refused on the same data in other sessions.
CREATE TABLE local_audit_sessions (
    session_id   VARCHAR PRIMARY KEY,
    data_sha256  VARCHAR NOT NULL CHECK (length(data_sha256) = 64)
);

-- Two refusal reasons (mirrored by mole_dag.local_data.refusal): `query_audit` (with the answers
-- already given over this data, the answer would make a set of fewer than `floor` rows
-- derivable) and `audit_unverified` (a combination the audit could not prove over the
-- rationals). DuckDB cannot alter a CHECK constraint, so the table is rebuilt with its rows. The
-- `crossings` view reads it and is dropped first (Postgres will not drop a table a view depends
-- on); opening the store re-creates every view after the migrations.
DROP VIEW IF EXISTS crossings;

CREATE TABLE local_refusals_0015 (
    id               VARCHAR PRIMARY KEY,
    session_id       VARCHAR NOT NULL,
    seq              INTEGER NOT NULL CHECK (seq >= 0),
    stage            VARCHAR NOT NULL CHECK (stage IN ('hypothesis', 'sqlguard', 'gate', 'exfil')),
    reason           VARCHAR NOT NULL CHECK (reason IN (
                        'unknown_template', 'bad_arguments', 'unknown_column', 'withheld_column',
                        'wrong_column_role', 'parse_error', 'multiple_statements', 'not_select',
                        'set_operation', 'cte', 'subquery', 'join', 'table_function',
                        'unknown_table', 'star', 'window_function', 'function_not_allowed',
                        'aggregate_argument', 'row_values', 'clause_not_allowed',
                        'construct_not_allowed', 'below_floor', 'execution_error',
                        'query_overlap', 'secondary_suppression',
                        'query_audit', 'audit_unverified',
                        'leak_under_floor', 'leak_count_mismatch', 'leak_withheld_value',
                        'leak_withheld_column', 'leak_unknown_label')),
    kind             VARCHAR NOT NULL CHECK (kind IN ('template', 'sql')),
    request          VARCHAR NOT NULL,
    detail           VARCHAR NOT NULL CHECK (length(trim(detail)) > 0),
    crossing_id      VARCHAR,
    withheld_sha256  VARCHAR,
    created_at       TIMESTAMP NOT NULL,
    UNIQUE (session_id, seq)
);

INSERT INTO local_refusals_0015 SELECT * FROM local_refusals;
DROP TABLE local_refusals;
ALTER TABLE local_refusals_0015 RENAME TO local_refusals;
