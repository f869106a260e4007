-- Local data behind an aggregation boundary. A session may attach a CSV file or folder; what
-- leaves it is recorded here, and the floor of five rows is a constraint, not a convention: a
-- crossing whose smallest figure rests on fewer rows cannot be stored.

-- The attached data's path (a CSV file or a folder of CSVs), or NULL.
ALTER TABLE sessions ADD COLUMN data VARCHAR;

-- The data as profiled when the session analysed it: its identity (a hash of the bytes), so a
-- re-run can tell whether the rows behind a finding are still the same.
CREATE TABLE local_datasets (
    session_id  VARCHAR PRIMARY KEY,
    path        VARCHAR NOT NULL,
    name        VARCHAR NOT NULL,
    sha256      VARCHAR NOT NULL CHECK (length(sha256) = 64),
    files       INTEGER NOT NULL CHECK (files >= 1),
    row_count   BIGINT  NOT NULL CHECK (row_count >= 5),
    columns     INTEGER NOT NULL CHECK (columns >= 1),
    withheld    INTEGER NOT NULL CHECK (withheld >= 0 AND withheld <= columns),
    created_at  TIMESTAMP NOT NULL
);

-- Every envelope that left the boundary, exactly as it left (canonical JSON), with the request
-- and the statement that produced it. Append-only.
CREATE TABLE local_crossings (
    id               VARCHAR PRIMARY KEY,
    session_id       VARCHAR NOT NULL,
    seq              INTEGER NOT NULL CHECK (seq >= 0),
    kind             VARCHAR NOT NULL CHECK (kind IN ('profile', 'template', 'sql')),
    template         VARCHAR,
    columns          VARCHAR NOT NULL,
    sql              VARCHAR,
    executed_sql     VARCHAR,
    envelope         VARCHAR NOT NULL CHECK (length(envelope) > 2),
    envelope_sha256  VARCHAR NOT NULL CHECK (length(envelope_sha256) = 64),
    dataset_sha256   VARCHAR NOT NULL CHECK (length(dataset_sha256) = 64),
    floor            INTEGER NOT NULL CHECK (floor >= 5),
    -- The fewest rows behind any figure in the envelope.
    min_rows         BIGINT  NOT NULL,
    created_at       TIMESTAMP NOT NULL,
    CHECK (min_rows >= floor),
    CHECK ((kind = 'profile') = (sql IS NULL)),
    CHECK ((kind = 'template') = (template IS NOT NULL)),
    UNIQUE (session_id, seq)
);

-- Every request the boundary refused, by stage and reason (a fixed vocabulary, mirrored by
-- mole_dag.compute.refusal). `request` is what was asked (the choice, or the statement), never
-- a data value; for an envelope the exfil check withheld only its hash is kept.
CREATE TABLE local_refusals (
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

-- A claim made from a crossing. The claim's quote is a sentence of the finding's rendered text
-- (the source the claims table points at); this row is its provenance: the statement and the
-- hash of the envelope, which re-running the statement must reproduce.
CREATE TABLE local_findings (
    claim_id         VARCHAR PRIMARY KEY,
    session_id       VARCHAR NOT NULL,
    crossing_id      VARCHAR NOT NULL,
    sql              VARCHAR NOT NULL,
    envelope_sha256  VARCHAR NOT NULL CHECK (length(envelope_sha256) = 64),
    created_at       TIMESTAMP NOT NULL
);

CREATE INDEX local_crossings_session ON local_crossings (session_id);
