-- A model miner's quote can be found verbatim and still be no claim: a heading, a menu line, a
-- caption, a reference entry (the extractive miner never proposes those). Such quotes are now
-- discarded too, counted under their own cause. DuckDB cannot alter a CHECK, so the table is
-- rebuilt (nothing points at it) and its rows copied across.
CREATE TABLE discarded_claims_0011 (
    session_id  VARCHAR NOT NULL,
    source_id   VARCHAR NOT NULL,
    cause       VARCHAR NOT NULL CHECK (cause IN ('quote_not_found', 'quote_too_short', 'empty',
                                                  'not_a_claim')),
    n           INTEGER NOT NULL CHECK (n > 0),
    created_at  TIMESTAMP NOT NULL
);
INSERT INTO discarded_claims_0011 (session_id, source_id, cause, n, created_at)
SELECT session_id, source_id, cause, n, created_at FROM discarded_claims;
DROP TABLE discarded_claims;
ALTER TABLE discarded_claims_0011 RENAME TO discarded_claims;
