-- What left each session's local data, and what the boundary refused: one row per crossing
-- (the profile, each gated envelope) and per refusal, in order.
SELECT session_id, seq, 'crossed' AS outcome, kind, template, columns, sql, NULL AS reason,
       floor, min_rows, envelope_sha256, created_at
FROM local_crossings
UNION ALL
SELECT session_id, seq, 'refused' AS outcome, stage AS kind, NULL AS template,
       NULL AS columns, NULL AS sql, reason, NULL AS floor, NULL AS min_rows,
       NULL AS envelope_sha256, created_at
FROM local_refusals
