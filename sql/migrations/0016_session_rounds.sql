-- Issue 22: resume from any stop. A round is plan -> execute -> mine -> verify -> score, and a
-- session stopped inside one must finish that round, not start another: replanning a round
-- whose plan was written pays for a second plan and drifts from what an uninterrupted run
-- does (a stop during planning left a round counted with no leads; a stop during adjudication
-- left claims that were never scored, so grounding found nothing to re-read). So each round
-- records when its plan was written (with its sub-questions and leads, in one transaction)
-- and when its scores were (the round's last stage). `sessions.rounds` stays the round being
-- run; the driver reads these to tell a finished round from one stopped part-way.
CREATE TABLE session_rounds (
    session_id  VARCHAR NOT NULL,
    round       INTEGER NOT NULL CHECK (round >= 1),
    planned_at  TIMESTAMP,
    done_at     TIMESTAMP,
    PRIMARY KEY (session_id, round),
    CHECK (done_at IS NULL OR planned_at IS NOT NULL)
);

-- Sessions from before this version: their last round counts as planned and finished (what
-- the driver assumed of them until now), so none is replanned.
INSERT INTO session_rounds (session_id, round, planned_at, done_at)
SELECT id, rounds, updated_at, updated_at FROM sessions WHERE rounds > 0;
