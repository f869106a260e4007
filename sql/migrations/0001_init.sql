-- The store and the ledger. Every rule that can live in the schema lives here, so a bug in the
-- Python above cannot write a state the design forbids: the database refuses it.
--
-- No FOREIGN KEYs: DuckDB implements UPDATE as delete+insert, so a referenced row (a session whose
-- `spent` moves on every call) could not be updated while anything points at it. Referential
-- integrity is kept by the code that writes, and checked by `mole eval` and the asset checks.

CREATE TABLE sessions (
    id              VARCHAR PRIMARY KEY,
    question        VARCHAR NOT NULL CHECK (length(trim(question)) > 0),
    -- usd_micros: integer micro-dollars; tokens: model tokens. Chosen per session, never mixed.
    unit            VARCHAR NOT NULL CHECK (unit IN ('usd_micros', 'tokens')),
    total           BIGINT  NOT NULL CHECK (total > 0),
    spent           BIGINT  NOT NULL DEFAULT 0 CHECK (spent >= 0),
    held            BIGINT  NOT NULL DEFAULT 0 CHECK (held >= 0),
    escrow          BIGINT  NOT NULL CHECK (escrow >= 0),
    -- Spend a call made beyond its own reservation. The estimate is an upper bound by
    -- construction, so this is a bug made visible: recorded truthfully, never folded into
    -- `spent` where it could break the ceiling.
    overrun         BIGINT  NOT NULL DEFAULT 0 CHECK (overrun >= 0),
    escrow_released BOOLEAN NOT NULL DEFAULT false,
    status          VARCHAR NOT NULL DEFAULT 'created'
                    CHECK (status IN ('created', 'running', 'reporting', 'done', 'failed', 'abandoned')),
    provider        VARCHAR NOT NULL DEFAULT 'extractive',
    corpus          VARCHAR,
    -- Search providers for this session's leads, comma-separated names (e.g. 'local').
    actors          VARCHAR NOT NULL DEFAULT 'local',
    rounds          INTEGER NOT NULL DEFAULT 0 CHECK (rounds >= 0),
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL,
    -- The ceiling. Overspending is not a state this row can hold.
    CHECK (spent + held + escrow <= total),
    -- Escrow is returned exactly once, when the report starts.
    CHECK (NOT escrow_released OR escrow = 0)
);

-- The append-only ledger and the source of truth for spend: one row per paid (or free) call,
-- inserted at reserve, completed once at settle, release or expiry, never deleted.
CREATE TABLE tool_calls (
    id            VARCHAR PRIMARY KEY,
    session_id    VARCHAR NOT NULL,
    role          VARCHAR NOT NULL CHECK (role IN ('planner', 'executor', 'verifier', 'output')),
    stage         VARCHAR NOT NULL,
    tool          VARCHAR NOT NULL,
    reserved      BIGINT  NOT NULL CHECK (reserved >= 0),
    actual        BIGINT  CHECK (actual >= 0),
    -- The part of `actual` beyond `reserved` (or beyond what an expired hold still covered).
    overrun       BIGINT  NOT NULL DEFAULT 0 CHECK (overrun >= 0),
    status        VARCHAR NOT NULL CHECK (status IN ('reserved', 'settled', 'released', 'expired')),
    input_tokens  BIGINT  CHECK (input_tokens >= 0),
    output_tokens BIGINT  CHECK (output_tokens >= 0),
    cache_read_tokens  BIGINT CHECK (cache_read_tokens >= 0),
    cache_write_tokens BIGINT CHECK (cache_write_tokens >= 0),
    note          VARCHAR,
    created_at    TIMESTAMP NOT NULL,
    expires_at    TIMESTAMP NOT NULL,
    completed_at  TIMESTAMP,
    -- A settled call has a measured cost; nothing else does.
    CHECK ((status = 'settled') = (actual IS NOT NULL)),
    CHECK ((status = 'reserved') = (completed_at IS NULL)),
    CHECK (overrun <= coalesce(actual, 0)),
    CHECK (expires_at >= created_at)
);

CREATE TABLE sub_questions (
    id          VARCHAR PRIMARY KEY,
    session_id  VARCHAR NOT NULL,
    round       INTEGER NOT NULL CHECK (round >= 1),
    ordinal     INTEGER NOT NULL CHECK (ordinal >= 0),
    text        VARCHAR NOT NULL CHECK (length(trim(text)) > 0),
    query       VARCHAR NOT NULL CHECK (length(trim(query)) > 0),
    created_at  TIMESTAMP NOT NULL
);

-- Leads are leased, not marked running: a crashed worker's lease expires and a sweep re-queues it.
CREATE TABLE leads (
    id               VARCHAR PRIMARY KEY,
    session_id       VARCHAR NOT NULL,
    sub_question_id  VARCHAR NOT NULL,
    actor            VARCHAR NOT NULL,
    query            VARCHAR NOT NULL CHECK (length(trim(query)) > 0),
    status           VARCHAR NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'leased', 'done', 'dead')),
    depth            INTEGER NOT NULL DEFAULT 0 CHECK (depth >= 0),
    root_claim_id    VARCHAR,
    because          VARCHAR,
    lease_owner      VARCHAR,
    lease_expires_at TIMESTAMP,
    heartbeat_at     TIMESTAMP,
    attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    created_at       TIMESTAMP NOT NULL,
    finished_at      TIMESTAMP,
    CHECK ((status = 'leased') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL))
);

CREATE TABLE sources (
    id                VARCHAR PRIMARY KEY,
    session_id        VARCHAR NOT NULL,
    url               VARCHAR NOT NULL,
    title             VARCHAR,
    -- Registrable domain (eTLD+1) or scholarly paper key: what counts as one publisher.
    publisher         VARCHAR NOT NULL,
    publisher_name    VARCHAR,
    author            VARCHAR,
    published         DATE,
    doi               VARCHAR,
    pmid              VARCHAR,
    pmcid             VARCHAR,
    arxiv_id          VARCHAR,
    source_class      VARCHAR NOT NULL DEFAULT 'unknown'
                      CHECK (source_class IN ('peer-reviewed', 'primary', 'secondary', 'local', 'unknown')),
    actor             VARCHAR NOT NULL,
    provider_supplied BOOLEAN NOT NULL DEFAULT false,
    content_sha256    VARCHAR NOT NULL,
    byte_length       BIGINT  NOT NULL CHECK (byte_length >= 0),
    fetched_at        TIMESTAMP NOT NULL,
    UNIQUE (session_id, url)
);

-- Which lead found which source, and whether the source has been mined for that lead's
-- sub-question yet.
CREATE TABLE lead_sources (
    session_id      VARCHAR NOT NULL,
    lead_id         VARCHAR NOT NULL,
    sub_question_id VARCHAR NOT NULL,
    source_id       VARCHAR NOT NULL,
    rank            INTEGER NOT NULL CHECK (rank >= 0),
    score           DOUBLE,
    mined           BOOLEAN NOT NULL DEFAULT false,
    created_at      TIMESTAMP NOT NULL,
    PRIMARY KEY (lead_id, source_id)
);

-- Contiguous byte-offset slices of a source's extracted text: their concatenation is the text.
CREATE TABLE chunks (
    id          VARCHAR PRIMARY KEY,
    session_id  VARCHAR NOT NULL,
    source_id   VARCHAR NOT NULL,
    ordinal     INTEGER NOT NULL CHECK (ordinal >= 0),
    byte_start  BIGINT  NOT NULL CHECK (byte_start >= 0),
    byte_end    BIGINT  NOT NULL CHECK (byte_end > byte_start),
    text        VARCHAR NOT NULL,
    -- The stored text is exactly the slice its offsets name (strlen counts bytes).
    CHECK (strlen(text) = byte_end - byte_start),
    UNIQUE (source_id, ordinal)
);

-- A claim exists only with a quote found verbatim in its source; the length floor is here too,
-- because a three-word quote matches almost any document by chance.
CREATE TABLE claims (
    id               VARCHAR PRIMARY KEY,
    session_id       VARCHAR NOT NULL,
    source_id        VARCHAR NOT NULL,
    chunk_id         VARCHAR NOT NULL,
    sub_question_id  VARCHAR NOT NULL,
    text             VARCHAR NOT NULL CHECK (length(trim(text)) > 0 AND length(text) <= 600),
    quote            VARCHAR NOT NULL
                     CHECK (length(regexp_replace(trim(quote), '\s+', ' ', 'g')) >= 24),
    quote_byte_start BIGINT  NOT NULL CHECK (quote_byte_start >= 0),
    quote_byte_end   BIGINT  NOT NULL CHECK (quote_byte_end > quote_byte_start),
    created_by       VARCHAR NOT NULL,
    verified         BOOLEAN NOT NULL DEFAULT false,
    created_at       TIMESTAMP NOT NULL
);

-- Claims a miner proposed whose quote did not check out: counted by cause, text not kept.
CREATE TABLE discarded_claims (
    session_id  VARCHAR NOT NULL,
    source_id   VARCHAR NOT NULL,
    cause       VARCHAR NOT NULL CHECK (cause IN ('quote_not_found', 'quote_too_short', 'empty')),
    n           INTEGER NOT NULL CHECK (n > 0),
    created_at  TIMESTAMP NOT NULL
);

-- Every adjudicated pair, including `neither`, so a pair is judged once and never re-billed.
CREATE TABLE pair_verdicts (
    session_id  VARCHAR NOT NULL,
    a_claim_id  VARCHAR NOT NULL,
    b_claim_id  VARCHAR NOT NULL,
    relation    VARCHAR NOT NULL CHECK (relation IN ('contradicts', 'duplicate_of', 'neither')),
    decided_by  VARCHAR NOT NULL,
    confirmed   BOOLEAN,
    rationale   VARCHAR,
    created_at  TIMESTAMP NOT NULL,
    CHECK (a_claim_id < b_claim_id),
    PRIMARY KEY (session_id, a_claim_id, b_claim_id)
);

CREATE TABLE claim_edges (
    id           VARCHAR PRIMARY KEY,
    session_id   VARCHAR NOT NULL,
    src_claim_id VARCHAR NOT NULL,
    dst_claim_id VARCHAR NOT NULL,
    kind         VARCHAR NOT NULL CHECK (kind IN ('contradicts', 'duplicate_of', 'supersedes')),
    weight       DOUBLE  NOT NULL DEFAULT 1.0 CHECK (weight > 0 AND weight <= 1),
    rationale    VARCHAR,
    created_by   VARCHAR NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    CHECK (src_claim_id <> dst_claim_id),
    -- Symmetric relations are stored once, in canonical order; supersedes points newer -> older.
    CHECK (kind = 'supersedes' OR src_claim_id < dst_claim_id),
    UNIQUE (session_id, src_claim_id, dst_claim_id, kind)
);

-- Derived from the graph, never asked of a model; every score says how it was derived.
CREATE TABLE confidence_scores (
    session_id     VARCHAR NOT NULL,
    claim_id       VARCHAR NOT NULL,
    cluster_id     VARCHAR NOT NULL,
    representative BOOLEAN NOT NULL,
    confidence     DOUBLE  NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
    publishers     INTEGER NOT NULL CHECK (publishers >= 1),
    contradictors  INTEGER NOT NULL CHECK (contradictors >= 0),
    superseded     BOOLEAN NOT NULL,
    grounded       BOOLEAN,
    source_class   VARCHAR NOT NULL
                   CHECK (source_class IN ('peer-reviewed', 'primary', 'secondary', 'local', 'unknown')),
    explanation    VARCHAR NOT NULL CHECK (length(trim(explanation)) > 0),
    computed_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (session_id, claim_id)
);

CREATE TABLE reports (
    id                 VARCHAR PRIMARY KEY,
    session_id         VARCHAR NOT NULL,
    markdown           VARCHAR NOT NULL CHECK (length(markdown) > 0),
    path               VARCHAR,
    made_without_model BOOLEAN NOT NULL,
    findings           INTEGER NOT NULL CHECK (findings >= 0),
    citations          INTEGER NOT NULL CHECK (citations >= 0),
    created_at         TIMESTAMP NOT NULL
);

CREATE TABLE dead_ends (
    id              VARCHAR PRIMARY KEY,
    session_id      VARCHAR NOT NULL,
    sub_question_id VARCHAR,
    lead_id         VARCHAR,
    url             VARCHAR,
    cause           VARCHAR NOT NULL CHECK (cause IN (
                        'no_results', 'fetch_failed', 'robots', 'too_large', 'wrong_type',
                        'js_required', 'no_text', 'no_claims', 'ssrf_refused', 'rate_limited',
                        'budget_exhausted', 'timeout', 'unreadable')),
    detail          VARCHAR,
    created_at      TIMESTAMP NOT NULL
);

-- Indexes only on columns that never change: DuckDB rewrites an updated indexed row as
-- delete+insert, and zone maps serve the session scans on the mutable tables well enough.
CREATE INDEX claims_session ON claims (session_id);
CREATE INDEX chunks_source ON chunks (source_id);
