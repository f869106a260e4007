-- Per-session search settings that are not secrets: which SearXNG instance the session's leads
-- query and which hosts its fetcher may reach despite the SSRF guard. The provider names are the
-- session's `actors`; API keys are never stored, they are read from config or the environment
-- when the actors are built.
CREATE TABLE session_search (
    session_id  VARCHAR PRIMARY KEY,
    searxng_url VARCHAR CHECK (searxng_url IS NULL OR regexp_matches(searxng_url, '^https?://')),
    -- Comma-separated host names or IP literals, lower case; '' for none.
    allow_hosts VARCHAR NOT NULL DEFAULT '' CHECK (allow_hosts NOT LIKE '%/%'),
    created_at  TIMESTAMP NOT NULL
);
