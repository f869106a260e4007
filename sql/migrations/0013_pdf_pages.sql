-- Issue 19: PDFs. Six named dead-end causes for a PDF that cannot be read (mirrored by
-- mole_dag.core.DeadEndCause), and every PDF source's page map, so each claim knows its page.
--
-- DuckDB cannot alter a CHECK constraint, so dead_ends is rebuilt with its rows (as in 0011).
-- The view that reads it is dropped first (Postgres refuses to drop a table a view depends on);
-- every open re-creates the views from sql/models after the migrations.
DROP VIEW IF EXISTS dead_ends_by_cause;
CREATE TABLE dead_ends_0013 (
    id              VARCHAR PRIMARY KEY,
    session_id      VARCHAR NOT NULL,
    sub_question_id VARCHAR,
    lead_id         VARCHAR,
    url             VARCHAR,
    cause           VARCHAR NOT NULL CHECK (cause IN (
                        'no_results', 'fetch_failed', 'robots', 'too_large', 'wrong_type',
                        'js_required', 'no_text', 'no_claims', 'ssrf_refused', 'rate_limited',
                        'budget_exhausted', 'timeout', 'unreadable', 'internal_error',
                        'pdf_encrypted', 'pdf_corrupt', 'pdf_no_text', 'pdf_too_many_pages',
                        'pdf_too_slow', 'pdf_bomb')),
    detail          VARCHAR,
    created_at      TIMESTAMP NOT NULL
);
INSERT INTO dead_ends_0013 (id, session_id, sub_question_id, lead_id, url, cause, detail, created_at)
SELECT id, session_id, sub_question_id, lead_id, url, cause, detail, created_at FROM dead_ends;
DROP TABLE dead_ends;
ALTER TABLE dead_ends_0013 RENAME TO dead_ends;

-- Where each page of a PDF source's stored text lies: bytes [byte_start, byte_end) of the text
-- the source's chunks tile. Pages tile the text in order; a page with no text of its own (a
-- figure) is an empty span. A claim's page is the page its quote starts on (query claim_pages,
-- view claim_pages). Other sources have no rows.
CREATE TABLE source_pages (
    session_id  VARCHAR NOT NULL,
    source_id   VARCHAR NOT NULL,
    page        INTEGER NOT NULL CHECK (page >= 1),
    byte_start  BIGINT  NOT NULL CHECK (byte_start >= 0),
    byte_end    BIGINT  NOT NULL CHECK (byte_end >= byte_start),
    PRIMARY KEY (source_id, page)
);
