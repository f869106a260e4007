-- One row per session with a report: its question and what its latest report decided, whether
-- the findings answer the question (`answered`, NULL for a report written before the decision
-- was recorded) and why (`answer_basis`), with the report's findings and citations.
SELECT
    s.id                 AS session_id,
    s.question,
    s.status,
    s.provider,
    r.id                 AS report_id,
    r.answered,
    r.answer_basis,
    r.findings,
    r.citations,
    r.made_without_model,
    r.created_at         AS reported_at
FROM sessions s
JOIN reports r ON r.session_id = s.id
WHERE r.created_at = (SELECT max(r2.created_at) FROM reports r2 WHERE r2.session_id = s.id)
