-- Issue 32: what changed since last time. A rerun is a new session of an old question, linked
-- to it; the sources its findings cite are read again, an unchanged one is carried (its claims
-- copied, not mined again), and the difference between the two sessions is stored.

-- The session this one re-runs (NULL for a first run). Set once, at creation.
ALTER TABLE sessions ADD COLUMN previous_session_id VARCHAR;

-- A web page's validators as the server gave them on the first read, so a re-read can ask
-- "changed since?" (If-None-Match / If-Modified-Since) and a 304 costs no transfer.
ALTER TABLE sources ADD COLUMN etag VARCHAR;
ALTER TABLE sources ADD COLUMN last_modified VARCHAR;

-- What a rerun learned of each source by URL, against the session it re-runs. One row per URL:
--   unchanged    the same content digest (or the server said 304): its claims are carried;
--   changed      read again, another digest: mined as usual;
--   gone         404/410, or the corpus file is no longer there: its findings are removed;
--   unreachable  could not be read this time: nothing learned, its claims are carried as they
--                were (a source that could not be reached removes nothing);
--   added        the old session did not read it.
CREATE TABLE source_changes (
    session_id          VARCHAR NOT NULL,
    previous_session_id VARCHAR NOT NULL,
    url                 VARCHAR NOT NULL,
    old_source_id       VARCHAR,
    new_source_id       VARCHAR,
    outcome             VARCHAR NOT NULL
                        CHECK (outcome IN ('unchanged', 'changed', 'gone', 'unreachable', 'added')),
    detail              VARCHAR,
    checked_at          TIMESTAMP NOT NULL,
    PRIMARY KEY (session_id, url),
    CHECK (outcome = 'added' OR old_source_id IS NOT NULL),
    CHECK (outcome = 'gone' OR new_source_id IS NOT NULL)
);

-- A claim copied from the previous session's unchanged source instead of mined again: its
-- provenance. The copy's quote is the old quote at the same bytes of the same text.
CREATE TABLE carried_claims (
    session_id        VARCHAR NOT NULL,
    claim_id          VARCHAR NOT NULL,
    previous_claim_id VARCHAR NOT NULL,
    PRIMARY KEY (session_id, claim_id)
);

-- Which findings a report's Answer rests on, so "did the answer change" compares evidence,
-- not wording.
CREATE TABLE report_answer_claims (
    report_id  VARCHAR NOT NULL,
    session_id VARCHAR NOT NULL,
    claim_id   VARCHAR NOT NULL,
    PRIMARY KEY (report_id, claim_id)
);

-- The difference a rerun's report found, one row per material change (view claim_changes).
CREATE TABLE finding_changes (
    old_session_id VARCHAR NOT NULL,
    new_session_id VARCHAR NOT NULL,
    kind           VARCHAR NOT NULL CHECK (kind IN ('new', 'removed', 'changed')),
    old_claim_id   VARCHAR,
    new_claim_id   VARCHAR,
    -- removed: the cause; changed: what differs.
    why            VARCHAR,
    created_at     TIMESTAMP NOT NULL,
    CHECK (kind = 'new' OR old_claim_id IS NOT NULL),
    CHECK (kind = 'removed' OR new_claim_id IS NOT NULL)
);

-- Each stored difference as a whole (the JSON `mole diff --json` prints), for watches and the UI.
CREATE TABLE session_diffs (
    old_session_id VARCHAR NOT NULL,
    new_session_id VARCHAR NOT NULL,
    material       BOOLEAN NOT NULL,
    diff_json      VARCHAR NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    PRIMARY KEY (old_session_id, new_session_id)
);
