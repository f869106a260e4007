-- What changed between two sessions of one question (issue 32): mole_dag/output/changes.py.

-- name: changes_claims
-- Every claim of a session with its source, its page (PDFs), its place in the graph and, for a
-- rerun, the previous claim it was carried from.
SELECT c.id AS claim_id, c.text, c.quote, s.url,
       (SELECT min(p.page) FROM source_pages p
        WHERE p.source_id = c.source_id
          AND c.quote_byte_start >= p.byte_start AND c.quote_byte_start < p.byte_end) AS page,
       coalesce(cs.representative, false) AS representative, cs.cluster_id, cs.confidence,
       cs.explanation, cc.previous_claim_id AS carried_from
FROM claims c
JOIN sources s ON s.id = c.source_id
LEFT JOIN confidence_scores cs ON cs.claim_id = c.id AND cs.session_id = c.session_id
LEFT JOIN carried_claims cc ON cc.claim_id = c.id AND cc.session_id = c.session_id
WHERE c.session_id = $session_id
ORDER BY s.url, c.quote_byte_start, c.quote_byte_end, c.id;

-- name: changes_source_texts
-- Each source's text as its chunks tile it, in order, with its digest.
SELECT s.url, s.content_sha256, ch.text
FROM sources s
LEFT JOIN chunks ch ON ch.source_id = s.id
WHERE s.session_id = $session_id
ORDER BY s.url, ch.ordinal;

-- name: changes_report
SELECT id, answered, created_at FROM reports
WHERE session_id = $session_id
ORDER BY created_at DESC, id DESC
LIMIT 1;

-- name: changes_answer_claims
SELECT claim_id FROM report_answer_claims WHERE report_id = $report_id ORDER BY claim_id;

-- name: changes_source_outcomes
SELECT url, outcome, detail FROM source_changes
WHERE session_id = $session_id AND previous_session_id = $previous_session_id
ORDER BY url;

-- name: report_answer_claim_insert
INSERT INTO report_answer_claims (report_id, session_id, claim_id)
VALUES ($report_id, $session_id, $claim_id)
ON CONFLICT DO NOTHING;

-- name: finding_changes_clear
DELETE FROM finding_changes
WHERE old_session_id = $old_session_id AND new_session_id = $new_session_id;

-- name: session_diff_clear
DELETE FROM session_diffs
WHERE old_session_id = $old_session_id AND new_session_id = $new_session_id;

-- name: finding_change_insert
INSERT INTO finding_changes (old_session_id, new_session_id, kind, old_claim_id, new_claim_id,
                             why, created_at)
VALUES ($old_session_id, $new_session_id, $kind, $old_claim_id, $new_claim_id, $why, $now);

-- name: session_diff_insert
INSERT INTO session_diffs (old_session_id, new_session_id, material, diff_json, created_at)
VALUES ($old_session_id, $new_session_id, $material, $diff_json, $now);

-- name: session_diff_get
SELECT material, diff_json FROM session_diffs
WHERE old_session_id = $old_session_id AND new_session_id = $new_session_id;

-- name: rerun_first_plan
-- The plan a rerun carries (issue 32): the previous session's first-round sub-questions in
-- their order, and whether each searched (a grouping-only one has no lead of its own).
SELECT sq.text, sq.query,
       EXISTS (SELECT 1 FROM leads l WHERE l.sub_question_id = sq.id AND l.depth = 0) AS search
FROM sub_questions sq
WHERE sq.session_id = $session_id AND sq.round = 1
ORDER BY sq.ordinal, sq.id;

-- name: rerun_carried_map
-- A rerun's carried claims and the previous claims they were copied from.
SELECT claim_id, previous_claim_id FROM carried_claims WHERE session_id = $session_id;

-- name: rerun_previous_verdicts
-- The verdicts of the session a rerun re-runs, for pairs of claims it carried.
SELECT a_claim_id, b_claim_id, relation, decided_by, confirmed, rationale
FROM pair_verdicts
WHERE session_id = $session_id;

-- name: rerun_carried_checks
-- Grounding outcomes of the previous claims a rerun carried, oldest first (the latest wins),
-- for carried claims this session has not checked yet. Only the two outcomes that judge the
-- passage: the passage is byte-identical (the source is unchanged), so the judgement holds.
SELECT cc.claim_id, c.source_id, g.outcome, g.note, g.decided_by, g.paid_by
FROM carried_claims cc
JOIN claims c ON c.id = cc.claim_id
JOIN grounding_checks g ON g.claim_id = cc.previous_claim_id
WHERE cc.session_id = $session_id
  AND g.outcome IN ('confirmed', 'unsupported')
  AND cc.claim_id NOT IN (SELECT claim_id FROM grounding_checks WHERE session_id = $session_id)
ORDER BY cc.claim_id, g.checked_at, g.id;

-- name: ground_carried_insert
INSERT INTO grounding_checks (id, session_id, claim_id, source_id, paid_by, outcome, note,
                              decided_by, checked_at)
VALUES ($id, $session_id, $claim_id, $source_id, $paid_by, $outcome, $note, $decided_by, $now);
