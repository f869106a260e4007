-- Issue 11: query-set overlap control. Two aggregates that each rest on at least five rows can
-- still differ by one row, and their difference is that row's values. Each crossing therefore
-- keeps, privately, the set of rows each of its figures rested on; a later figure whose row set
-- differs from a kept one by 1 to floor-1 rows is refused (or its group suppressed).

-- One row set per figure that left: per shown group (`cell` >= 0, in envelope order) and the
-- union of the shown groups (`cell` = -1, what adding them up gives), per aggregated column set
-- (`columns`: '' for the rows themselves, i.e. count(*); else the aggregate's columns, sorted,
-- comma-separated: the rows on which they are all set). `bits` is a zlib-compressed bitmap over
-- the dataset's row order. Internal to the boundary: no view, listing, tool or model reads it.
CREATE TABLE local_row_sets (
    session_id      VARCHAR NOT NULL,
    crossing_id     VARCHAR NOT NULL,
    seq             INTEGER NOT NULL CHECK (seq >= 0),
    dataset_sha256  VARCHAR NOT NULL CHECK (length(dataset_sha256) = 64),
    cell            INTEGER NOT NULL CHECK (cell >= -1),
    columns         VARCHAR NOT NULL,
    n               BIGINT  NOT NULL CHECK (n >= 0),
    bits            BLOB    NOT NULL,
    PRIMARY KEY (crossing_id, cell, columns)
);

CREATE INDEX local_row_sets_session ON local_row_sets (session_id, dataset_sha256);

-- Two new refusal reasons (mirrored by mole_dag.compute.refusal): `query_overlap` (a figure
-- whose rows differ from an earlier one's by fewer than the floor) and `secondary_suppression`
-- (a group given up so that a suppressed remainder cannot be recovered by subtraction). DuckDB
-- cannot alter a CHECK constraint, so the table is rebuilt with its rows; the `crossings` view
-- binds by name and reads the new table.
CREATE TABLE local_refusals_0010 (
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

INSERT INTO local_refusals_0010 SELECT * FROM local_refusals;
DROP TABLE local_refusals;
ALTER TABLE local_refusals_0010 RENAME TO local_refusals;
