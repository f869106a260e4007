-- The verifier's second half and the report's audit trail: where a source can be re-read from,
-- what each re-read found, and which source each report citation number maps to.

-- How to read a source again: `corpus:<path relative to the session's corpus>` for local
-- documents, the fetched URL for web pages. NULL when the source cannot be re-read (a page a
-- search provider supplied, for instance).
ALTER TABLE sources ADD COLUMN locator VARCHAR;

-- One row per claim per grounding check. Only `confirmed` and `unsupported` change confidence:
-- a page that changed (`vanished`) or could not be read is not evidence against a claim.
CREATE TABLE grounding_checks (
    id          VARCHAR PRIMARY KEY,
    session_id  VARCHAR NOT NULL,
    claim_id    VARCHAR NOT NULL,
    source_id   VARCHAR NOT NULL,
    -- The session whose ledger paid for the check: the research session itself, or a
    -- re-grounding maintenance session run by the schedule.
    paid_by     VARCHAR NOT NULL,
    outcome     VARCHAR NOT NULL
                CHECK (outcome IN ('confirmed', 'unsupported', 'vanished', 'unreachable',
                                   'undecided', 'not_refetchable')),
    note        VARCHAR,
    decided_by  VARCHAR NOT NULL,
    checked_at  TIMESTAMP NOT NULL
);

-- The mechanical citation map of each report: number n means this source, nothing else.
CREATE TABLE report_citations (
    report_id   VARCHAR NOT NULL,
    session_id  VARCHAR NOT NULL,
    number      INTEGER NOT NULL CHECK (number >= 1),
    source_id   VARCHAR NOT NULL,
    PRIMARY KEY (report_id, number)
);

-- Confirm pass bookkeeping and follow-up provenance are already columns
-- (pair_verdicts.confirmed, leads.root_claim_id / leads.because / leads.depth).

-- Research sessions and the maintenance sessions the re-grounding schedule opens to pay for its
-- checks (same ledger, same constraints, its own budget).
ALTER TABLE sessions ADD COLUMN kind VARCHAR DEFAULT 'research';
