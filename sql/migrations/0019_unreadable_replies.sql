-- Issue 29: a model reply a stage could not read (prose where JSON was asked for, or JSON without
-- the list asked for). The call was answered and paid for like any other, so the ledger shows
-- nothing wrong; this row is how the report can say that its findings are thin because the
-- model's answers were lost ("the model's replies could not be read (7 of 9 ...)"). One row per
-- reply; `skill` is the ledger's tool suffix (plan, mine, judge, write, ...).
CREATE TABLE unreadable_replies (
    session_id VARCHAR NOT NULL,
    skill      VARCHAR NOT NULL CHECK (length(skill) > 0),
    problem    VARCHAR NOT NULL CHECK (length(problem) > 0),
    created_at TIMESTAMP NOT NULL
);
