-- Relevance is not confidence. Confidence says how far to trust a claim (the graph); relevance
-- says how well it answers its sub-question and the question. Stored per claim, re-scored each
-- round (the lexical weights depend on every page the session has read so far), and what the
-- report orders and cuts by. Its own table because DuckDB cannot add a CHECK to a column of an
-- existing table.
CREATE TABLE claim_relevance (
    claim_id        VARCHAR PRIMARY KEY,
    session_id      VARCHAR NOT NULL,
    relevance       DOUBLE  NOT NULL CHECK (relevance >= 0 AND relevance <= 1),
    to_question     DOUBLE  NOT NULL CHECK (to_question >= 0 AND to_question <= 1),
    to_sub_question DOUBLE  NOT NULL CHECK (to_sub_question >= 0 AND to_sub_question <= 1),
    -- The sub-question the claim answers best (the report's section for it); may differ from
    -- the one whose lead mined it, since one page can answer several parts of a question.
    sub_question_id VARCHAR NOT NULL,
    -- 'lexical' (extractive: term weights, context, answer-type cues) or 'model+lexical'
    -- (the miner's grade blended with the lexical score).
    basis           VARCHAR NOT NULL CHECK (basis IN ('lexical', 'model+lexical')),
    -- The miner's own grade, 0..3, when a model mined the claim; NULL otherwise.
    model_grade     INTEGER CHECK (model_grade IS NULL OR (model_grade >= 0 AND model_grade <= 3)),
    explanation     VARCHAR NOT NULL,
    scored_at       TIMESTAMP NOT NULL
);
CREATE INDEX claim_relevance_session ON claim_relevance (session_id);
