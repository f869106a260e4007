-- Local data: the attached dataset, what crossed the boundary, what it refused, and the claims
-- made from crossings.

-- name: session_set_data
UPDATE sessions SET data = $data, updated_at = $now WHERE id = $session_id;

-- name: local_dataset_get
SELECT * FROM local_datasets WHERE session_id = $session_id;

-- name: local_dataset_insert
INSERT INTO local_datasets (session_id, path, name, sha256, files, row_count, columns, withheld,
                            created_at)
VALUES ($session_id, $path, $name, $sha256, $files, $row_count, $columns, $withheld, $now);

-- name: local_next_seq
SELECT coalesce(max(seq), -1) + 1 FROM (
    SELECT seq FROM local_crossings WHERE session_id = $session_id
    UNION ALL
    SELECT seq FROM local_refusals WHERE session_id = $session_id
) AS seqs;  -- named: Postgres requires an alias

-- name: local_crossing_insert
INSERT INTO local_crossings (id, session_id, seq, kind, template, columns, sql, executed_sql,
                             envelope, envelope_sha256, dataset_sha256, floor, min_rows,
                             created_at)
VALUES ($id, $session_id, $seq, $kind, $template, $columns, $sql, $executed_sql, $envelope,
        $envelope_sha256, $dataset_sha256, $floor, $min_rows, $now);

-- name: local_refusal_insert
INSERT INTO local_refusals (id, session_id, seq, stage, reason, kind, request, detail,
                            crossing_id, withheld_sha256, created_at)
VALUES ($id, $session_id, $seq, $stage, $reason, $kind, $request, $detail, $crossing_id,
        $withheld_sha256, $now);

-- name: local_crossings_list
SELECT * FROM local_crossings WHERE session_id = $session_id ORDER BY seq;

-- name: local_crossing_get
SELECT * FROM local_crossings WHERE id = $id;

-- name: local_refusals_list
SELECT * FROM local_refusals WHERE session_id = $session_id ORDER BY seq;

-- name: local_finding_insert
INSERT INTO local_findings (claim_id, session_id, crossing_id, sql, envelope_sha256, created_at)
VALUES ($claim_id, $session_id, $crossing_id, $sql, $envelope_sha256, $now);

-- name: local_findings_list
SELECT f.claim_id, f.crossing_id, f.sql, f.envelope_sha256, c.text
FROM local_findings f JOIN claims c ON c.id = f.claim_id
WHERE f.session_id = $session_id ORDER BY f.crossing_id, f.claim_id;

-- name: local_sub_question
SELECT id FROM sub_questions WHERE id = $id;

-- name: max_round
SELECT coalesce(max(round), 1) FROM sub_questions WHERE session_id = $session_id;


-- The query audit (issue 22; migration 0015): every answered figure's rows, per dataset.

-- name: local_audit_head_create
INSERT INTO local_audits (data_sha256, audit_id, row_count, answered, created_at, updated_at)
VALUES ($data_sha256, $audit_id, $row_count, 0, $now, $now)
ON CONFLICT (data_sha256) DO NOTHING;

-- name: local_audit_head_get
SELECT data_sha256, audit_id, row_count, answered FROM local_audits
WHERE data_sha256 = $data_sha256;

-- name: local_audit_head_advance
UPDATE local_audits SET answered = $answered, updated_at = $now
WHERE data_sha256 = $data_sha256 AND answered = $before;

-- name: local_audit_sets_range
-- The recorded sets from one position to another, in the order they were answered.
SELECT seq, columns, n, bits FROM local_audit_sets
WHERE data_sha256 = $data_sha256 AND seq >= $start AND seq < $stop
ORDER BY seq;

-- name: local_audit_set_insert
INSERT INTO local_audit_sets (data_sha256, seq, session_id, crossing_id, columns, n, bits)
VALUES ($data_sha256, $seq, $session_id, $crossing_id, $columns, $n, $bits);

-- name: local_audit_crossing_start
-- Where a crossing's sets begin in the record: the audit it was judged against is what precedes.
SELECT min(seq) FROM local_audit_sets WHERE crossing_id = $crossing_id;

-- name: local_audit_session_add
INSERT INTO local_audit_sessions (session_id, data_sha256) VALUES ($session_id, $data_sha256)
ON CONFLICT (session_id) DO NOTHING;

-- name: local_audit_summary
-- For `mole crossings`: what the audit holds for this session's data, over every session.
SELECT a.data_sha256, a.answered,
       (SELECT count(*) FROM local_audit_sessions s WHERE s.data_sha256 = a.data_sha256)
           AS sessions,
       (SELECT count(*) FROM local_refusals r
        JOIN local_audit_sessions s ON s.session_id = r.session_id
        WHERE s.data_sha256 = a.data_sha256
          AND r.reason IN ('query_audit', 'audit_unverified')) AS refused,
       (SELECT count(*) FROM local_refusals r
        WHERE r.session_id = $session_id
          AND r.reason IN ('query_audit', 'audit_unverified')) AS refused_here
FROM local_audits a
JOIN local_audit_sessions m ON m.data_sha256 = a.data_sha256
WHERE m.session_id = $session_id;

-- name: local_audit_seed_legacy
-- A record started on data that issue 11's per-session overlap control already answered on
-- (local_row_sets, keyed by the hash with file names): its sets, groups only (a union of groups
-- adds nothing to a span), become the record's first.
INSERT INTO local_audit_sets (data_sha256, seq, session_id, crossing_id, columns, n, bits)
SELECT $data_sha256, CAST(row_number() OVER (ORDER BY session_id, seq, cell, columns) - 1 AS INTEGER),
       session_id, crossing_id, columns, n, bits
FROM local_row_sets
WHERE dataset_sha256 = $legacy_sha256 AND cell >= 0;

-- name: local_audit_count
SELECT count(*) FROM local_audit_sets WHERE data_sha256 = $data_sha256;
