-- Issue 21: whether a report's findings answer its question is a decision, recorded with the
-- report, so a benchmark or a SQL client can read it: `answered` (NULL for reports written
-- before this migration: not decided then) and `answer_basis`, one line saying why, with the
-- figures it rests on. Added columns, nullable, so earlier rows stay as they were.
ALTER TABLE reports ADD COLUMN answered BOOLEAN;
ALTER TABLE reports ADD COLUMN answer_basis VARCHAR;
