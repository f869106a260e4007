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

-- name: local_row_set_insert
INSERT INTO local_row_sets (session_id, crossing_id, seq, dataset_sha256, cell, columns, n, bits)
VALUES ($session_id, $crossing_id, $seq, $dataset_sha256, $cell, $columns, $n, $bits);

-- name: local_row_sets_history
-- The row sets of a session's earlier crossings over the same data (all of them, or those
-- before a given crossing when one is re-run).
SELECT r.columns, r.n, r.bits
FROM local_row_sets r
WHERE r.session_id = $session_id AND r.dataset_sha256 = $dataset_sha256 AND r.seq < $before_seq
ORDER BY r.seq, r.cell, r.columns;
