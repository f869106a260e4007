-- A claim's relevance can come from the learned ranking or from the mean of the word score and
-- the learned one (MOLE_RANKING=learned / fused, issue 30), and the row must say which: it was
-- recorded as 'lexical' whatever scored it. DuckDB cannot alter a CHECK, so the table is rebuilt
-- and its rows copied across; the views over it are dropped first (PostgreSQL refuses to drop a
-- table a view reads) and made again after the migrations, as at every writing open.
DROP VIEW IF EXISTS claim_overview CASCADE;
CREATE TABLE claim_relevance_0032 (
    claim_id        VARCHAR PRIMARY KEY,
    session_id      VARCHAR NOT NULL,
    relevance       DOUBLE  NOT NULL CHECK (relevance >= 0 AND relevance <= 1),
    to_question     DOUBLE  NOT NULL CHECK (to_question >= 0 AND to_question <= 1),
    to_sub_question DOUBLE  NOT NULL CHECK (to_sub_question >= 0 AND to_sub_question <= 1),
    sub_question_id VARCHAR NOT NULL,
    -- What scored it: 'lexical' (term weights, context, answer-type cues), 'learned' (the
    -- ranking fitted outside the project's question sets) or 'fused' (the mean of the two);
    -- 'model+' when the miner's grade was blended in.
    basis           VARCHAR NOT NULL CHECK (basis IN ('lexical', 'learned', 'fused',
                                                      'model+lexical', 'model+learned',
                                                      'model+fused')),
    model_grade     INTEGER CHECK (model_grade IS NULL OR (model_grade >= 0 AND model_grade <= 3)),
    explanation     VARCHAR NOT NULL,
    scored_at       TIMESTAMP NOT NULL
);
INSERT INTO claim_relevance_0032 (claim_id, session_id, relevance, to_question, to_sub_question,
                                  sub_question_id, basis, model_grade, explanation, scored_at)
SELECT claim_id, session_id, relevance, to_question, to_sub_question, sub_question_id, basis,
       model_grade, explanation, scored_at
FROM claim_relevance;
DROP TABLE claim_relevance;
ALTER TABLE claim_relevance_0032 RENAME TO claim_relevance;
CREATE INDEX claim_relevance_session ON claim_relevance (session_id);
