-- Which model a settled call ran on. The tool name says which skill (`anthropic:mine`); the
-- tier's model is configuration that can change between sessions, so the ledger keeps the one
-- that was priced. 'extractive' for the model-free provider; NULL for calls no skill made
-- (searches).
ALTER TABLE tool_calls ADD COLUMN model VARCHAR;
