-- Issue 29: a resume after SIGTERM paid again for mining already done. A stage applies its
-- calls' answers in plan order, so answers that arrived ahead of a slower call were held in
-- memory and lost with the process. Each paid answer a stage can use again is now kept here,
-- written in the transaction that settles its call: a stage run again (resume) takes it from
-- here instead of asking, and paying, again. `call_key` names the work (a lead's chunk, a
-- batch of pairs), not the request, so the same work asked again finds it.
CREATE TABLE call_answers (
    session_id  VARCHAR NOT NULL,
    stage       VARCHAR NOT NULL,
    call_key    VARCHAR NOT NULL,
    call_id     VARCHAR NOT NULL,
    answer      VARCHAR NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (session_id, stage, call_key)
);
