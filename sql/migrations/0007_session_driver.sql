-- Who drives a session's rounds: the `mole` CLI (in its own process), or Dagster's sensor for
-- sessions launched from the UI. The sensor only ever touches the latter, so the two never run
-- the same session's rounds at once.
ALTER TABLE sessions ADD COLUMN driver VARCHAR DEFAULT 'cli';
