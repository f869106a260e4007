-- Statements the pipeline stages run, by stage.

-- name: session_set_status
UPDATE sessions SET status = $status, updated_at = $now WHERE id = $session_id;

-- name: session_clear_stop_reason
-- A resumed session is no longer stopped: why it stopped last time would read as its outcome.
UPDATE sessions SET stop_reason = NULL, updated_at = $now WHERE id = $session_id;

-- name: session_next_round
UPDATE sessions SET rounds = rounds + 1, status = 'running', updated_at = $now
WHERE id = $session_id;

-- name: session_rounds
SELECT rounds FROM sessions WHERE id = $session_id;

-- name: sessions_list
SELECT id, status, unit, total, spent, held, escrow, overrun, rounds, provider, question, created_at,
       coalesce(kind, 'research') AS kind,
       (SELECT count(*) FROM claims c WHERE c.session_id = s.id) AS claims
FROM sessions s ORDER BY created_at DESC, id;

-- planner ----------------------------------------------------------------------------------

-- name: digest_sub_questions
SELECT sq.id, sq.text, count(c.id) AS claims
FROM sub_questions sq LEFT JOIN claims c ON c.sub_question_id = sq.id
WHERE sq.session_id = $session_id
GROUP BY sq.id, sq.text, sq.round, sq.ordinal
ORDER BY sq.round, sq.ordinal;

-- name: digest_dead_ends
SELECT cause, count(*) AS n FROM dead_ends WHERE session_id = $session_id GROUP BY cause ORDER BY cause;

-- name: digest_contradictions
SELECT count(*) FROM claim_edges WHERE session_id = $session_id AND kind = 'contradicts';

-- name: sub_question_insert
INSERT INTO sub_questions (id, session_id, round, ordinal, text, query, created_at)
VALUES ($id, $session_id, $round, $ordinal, $text, $query, $now)
ON CONFLICT DO NOTHING;

-- name: lead_insert
INSERT INTO leads (id, session_id, sub_question_id, actor, query, depth, root_claim_id, because, created_at)
VALUES ($id, $session_id, $sub_question_id, $actor, $query, $depth, $root_claim_id, $because, $now)
ON CONFLICT DO NOTHING;

-- name: pending_leads_count
SELECT count(*) FROM leads WHERE session_id = $session_id AND status IN ('pending', 'leased');

-- executor ---------------------------------------------------------------------------------

-- name: leases_requeue_expired
UPDATE leads SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL
WHERE session_id = $session_id AND status = 'leased' AND lease_expires_at < $now;

-- name: leases_requeue_session
-- Every lease of a session whose driving process is gone (recovery, `mole resume`).
UPDATE leads SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL
WHERE session_id = $session_id AND status = 'leased';

-- name: leases_expired_count
SELECT count(*) FROM leads
WHERE session_id = $session_id AND status = 'leased' AND lease_expires_at < $now;

-- name: leads_pending
SELECT id FROM leads WHERE session_id = $session_id AND status = 'pending';

-- name: lease_take_many
-- A round's pending leads leased to one owner in one statement (issue 12); its workers then
-- run them in plan order.
UPDATE leads
SET status = 'leased', lease_owner = $owner, lease_expires_at = $expires_at,
    heartbeat_at = $now, attempts = attempts + 1
WHERE id IN (SELECT unnest($ids)) AND status = 'pending';

-- name: leases_of_owner
SELECT id, sub_question_id, actor, query, depth FROM leads
WHERE session_id = $session_id AND status = 'leased' AND lease_owner = $owner
ORDER BY depth, created_at, id;

-- name: lease_heartbeat_owner
UPDATE leads SET lease_expires_at = $expires_at, heartbeat_at = $now
WHERE session_id = $session_id AND status = 'leased' AND lease_owner = $owner;

-- name: lead_next_pending
SELECT id, sub_question_id, actor, query, depth FROM leads
WHERE session_id = $session_id AND status = 'pending'
ORDER BY depth, created_at, id
LIMIT 1;

-- name: lease_take
UPDATE leads
SET status = 'leased', lease_owner = $owner, lease_expires_at = $expires_at,
    heartbeat_at = $now, attempts = attempts + 1
WHERE id = $id AND status = 'pending';

-- name: lease_heartbeat
UPDATE leads SET lease_expires_at = $expires_at, heartbeat_at = $now
WHERE id = $id AND status = 'leased' AND lease_owner = $owner;

-- name: lease_finish
UPDATE leads SET status = $status, lease_owner = NULL, lease_expires_at = NULL, finished_at = $now
WHERE id = $id AND status = 'leased' AND lease_owner = $owner;

-- name: source_by_url
SELECT id FROM sources WHERE session_id = $session_id AND url = $url;

-- name: dead_end_by_url
-- How an earlier lead of this session failed on a URL, so another lead does not fetch it again.
-- The oldest first, so every later lead repeats the same cause.
SELECT cause, detail FROM dead_ends
WHERE session_id = $session_id AND url = $url AND cause <> 'budget_exhausted'
ORDER BY created_at, id
LIMIT 1;

-- name: source_insert
INSERT INTO sources (id, session_id, url, title, publisher, publisher_name, author, published, doi,
                     pmid, pmcid, arxiv_id, source_class, actor, provider_supplied,
                     content_sha256, byte_length, fetched_at, locator, etag, last_modified)
VALUES ($id, $session_id, $url, $title, $publisher, $publisher_name, $author, $published, $doi,
        $pmid, $pmcid, $arxiv_id, $source_class, $actor, $provider_supplied,
        $content_sha256, $byte_length, $now, $locator, $etag, $last_modified);

-- name: source_origin_set
UPDATE sources SET origin = $origin WHERE id = $id;

-- name: trace_sources
SELECT s.id, s.url, s.title, s.publisher, s.source_class, s.origin, count(c.id) AS claims
FROM sources s
JOIN claims c ON c.source_id = s.id
WHERE s.session_id = $session_id
GROUP BY s.id, s.url, s.title, s.publisher, s.source_class, s.origin
ORDER BY s.url;

-- name: chunk_insert
INSERT INTO chunks (id, session_id, source_id, ordinal, byte_start, byte_end, text)
VALUES ($id, $session_id, $source_id, $ordinal, $byte_start, $byte_end, $text);

-- name: lead_source_insert
INSERT INTO lead_sources (session_id, lead_id, sub_question_id, source_id, rank, score, created_at)
VALUES ($session_id, $lead_id, $sub_question_id, $source_id, $rank, $score, $now)
ON CONFLICT DO NOTHING;

-- name: dead_end_insert
INSERT INTO dead_ends (id, session_id, sub_question_id, lead_id, url, cause, detail, created_at)
VALUES ($id, $session_id, $sub_question_id, $lead_id, $url, $cause, $detail, $now);

-- miner ------------------------------------------------------------------------------------

-- name: unmined_lead_sources
-- In plan order, never by id: ids hash the session id, and the first lead to mine a shared
-- source gives its claims their sub-question (issue 10 item 6: two identical runs differed).
SELECT ls.lead_id, ls.source_id, ls.sub_question_id, sq.text AS sub_question, s.title
FROM lead_sources ls
JOIN sub_questions sq ON sq.id = ls.sub_question_id
JOIN leads l ON l.id = ls.lead_id
JOIN sources s ON s.id = ls.source_id
WHERE ls.session_id = $session_id AND NOT ls.mined
ORDER BY sq.round, sq.ordinal, l.depth, l.actor, l.query, ls.rank, s.url;

-- name: source_chunks
SELECT id, source_id, ordinal, byte_start, byte_end, text FROM chunks WHERE source_id = $source_id
ORDER BY ordinal;

-- name: sources_chunks
-- The chunks of many sources in one query (the miner's whole stage), in order within each.
SELECT source_id, id, ordinal, byte_start, byte_end, text FROM chunks
WHERE source_id IN (SELECT unnest($source_ids))
ORDER BY source_id, ordinal;

-- name: source_urls
-- The session's sources by URL, read once per batch of leads instead of once per page.
SELECT url, id FROM sources WHERE session_id = $session_id;

-- name: lead_source_insert_many
INSERT INTO lead_sources (session_id, lead_id, sub_question_id, source_id, rank, score, created_at)
SELECT $session_id, unnest($lead_id), unnest($sub_question_id), unnest($source_id),
       unnest($rank), unnest($score::DOUBLE[]), $now
ON CONFLICT DO NOTHING;

-- name: claim_exists
SELECT count(*) FROM claims
WHERE session_id = $session_id AND source_id = $source_id
  AND quote_byte_start = $quote_byte_start AND quote_byte_end = $quote_byte_end;

-- name: claim_insert
INSERT INTO claims (id, session_id, source_id, chunk_id, sub_question_id, text, quote,
                    quote_byte_start, quote_byte_end, created_by, created_at)
VALUES ($id, $session_id, $source_id, $chunk_id, $sub_question_id, $text, $quote,
        $quote_byte_start, $quote_byte_end, $created_by, $now);

-- name: discarded_insert
INSERT INTO discarded_claims (session_id, source_id, cause, n, created_at)
VALUES ($session_id, $source_id, $cause, $n, $now);

-- name: lead_source_mined
UPDATE lead_sources SET mined = true WHERE lead_id = $lead_id AND source_id = $source_id;

-- name: lead_claim_counts
SELECT ls.lead_id, ls.sub_question_id, count(c.id) AS claims
FROM lead_sources ls
LEFT JOIN claims c ON c.source_id = ls.source_id
WHERE ls.session_id = $session_id AND ls.lead_id IN (SELECT unnest($lead_ids))
GROUP BY ls.lead_id, ls.sub_question_id;

-- verifier ---------------------------------------------------------------------------------

-- name: session_claims
SELECT c.id, c.text, c.source_id, c.verified, c.created_at, s.published, s.publisher,
       s.source_class, s.url
FROM claims c JOIN sources s ON s.id = c.source_id
WHERE c.session_id = $session_id
-- By content, not by id (ids hash the session id): the verifier's candidate cut-off and the
-- choice of a cluster's representative break ties by this order.
ORDER BY s.url, c.quote_byte_start, c.quote_byte_end;

-- name: judged_pairs
SELECT a_claim_id, b_claim_id FROM pair_verdicts WHERE session_id = $session_id;

-- name: verdict_insert
INSERT INTO pair_verdicts (session_id, a_claim_id, b_claim_id, relation, decided_by, confirmed, rationale, created_at)
VALUES ($session_id, $a, $b, $relation, $decided_by, $confirmed, $rationale, $now)
ON CONFLICT DO NOTHING;

-- name: edge_insert
INSERT INTO claim_edges (id, session_id, src_claim_id, dst_claim_id, kind, weight, rationale, created_by, created_at)
VALUES ($id, $session_id, $src, $dst, $kind, $weight, $rationale, $created_by, $now)
ON CONFLICT DO NOTHING;

-- name: claims_mark_verified
UPDATE claims SET verified = true WHERE session_id = $session_id AND id IN (SELECT unnest($ids));

-- name: session_edges
SELECT src_claim_id, dst_claim_id, kind, rationale, created_by FROM claim_edges
WHERE session_id = $session_id ORDER BY kind, src_claim_id, dst_claim_id;

-- confidence -------------------------------------------------------------------------------

-- name: scores_clear
DELETE FROM confidence_scores WHERE session_id = $session_id;

-- name: score_insert
INSERT INTO confidence_scores (session_id, claim_id, cluster_id, representative, confidence,
    publishers, contradictors, superseded, grounded, source_class, explanation, computed_at)
VALUES ($session_id, $claim_id, $cluster_id, $representative, $confidence,
    $publishers, $contradictors, $superseded, $grounded, $source_class, $explanation, $now);

-- report -----------------------------------------------------------------------------------

-- name: report_findings
-- One row per cluster representative. `relevance` is the best relevance of any member of the
-- cluster (a duplicate may be worded closer to the question than the representative); 0 when
-- nothing scored it yet.
SELECT cs.cluster_id, cs.claim_id, cs.confidence, cs.publishers, cs.contradictors, cs.superseded,
       cs.source_class, cs.explanation, c.text, c.quote, sq.id AS sub_question_id,
       sq.text AS sub_question, sq.round AS sub_question_round, sq.ordinal AS sub_question_ordinal,
       coalesce((SELECT max(r.relevance) FROM confidence_scores m
                 JOIN claim_relevance r ON r.claim_id = m.claim_id
                 WHERE m.session_id = cs.session_id AND m.cluster_id = cs.cluster_id), 0.0)
           AS relevance,
       coalesce(cr.explanation, 'not scored') AS relevance_explanation
FROM confidence_scores cs
JOIN claims c ON c.id = cs.claim_id
LEFT JOIN claim_relevance cr ON cr.claim_id = cs.claim_id
JOIN sub_questions sq ON sq.id = coalesce(cr.sub_question_id, c.sub_question_id)
WHERE cs.session_id = $session_id AND cs.representative
-- The last ties by content: claim ids hash the session id.
ORDER BY relevance DESC, cs.confidence DESC, cs.publishers DESC,
         (SELECT s.url FROM sources s WHERE s.id = c.source_id), c.quote_byte_start, cs.claim_id;

-- relevance -----------------------------------------------------------------------------------

-- name: relevance_insert
INSERT INTO claim_relevance (claim_id, session_id, relevance, to_question, to_sub_question,
                             sub_question_id, basis, model_grade, explanation, scored_at)
VALUES ($claim_id, $session_id, $relevance, $to_question, $to_sub_question, $sub_question_id,
        $basis, $model_grade, $explanation, $now);

-- name: relevance_clear
DELETE FROM claim_relevance WHERE session_id = $session_id;

-- name: relevance_claims
-- Every claim of the session with where its quote sits, its sub-question and, when a model
-- mined it, the grade the miner gave (kept across re-scoring).
SELECT c.id, c.source_id, c.text, c.quote, c.quote_byte_start, c.quote_byte_end,
       c.sub_question_id, sq.text AS sub_question, cr.model_grade
FROM claims c
JOIN sub_questions sq ON sq.id = c.sub_question_id
LEFT JOIN claim_relevance cr ON cr.claim_id = c.id
WHERE c.session_id = $session_id
ORDER BY c.source_id, c.quote_byte_start, c.id;

-- name: cluster_members
SELECT cs.cluster_id, c.id AS claim_id, c.source_id, c.quote
FROM confidence_scores cs JOIN claims c ON c.id = cs.claim_id
WHERE cs.session_id = $session_id
ORDER BY cs.cluster_id, c.id;

-- name: session_sources
SELECT id, url, title, publisher, publisher_name, published, source_class, doi, provider_supplied,
       locator
FROM sources WHERE session_id = $session_id;

-- name: report_insert
INSERT INTO reports (id, session_id, markdown, path, made_without_model, findings, citations,
                     answered, answer_basis, created_at)
VALUES ($id, $session_id, $markdown, $path, $made_without_model, $findings, $citations,
        $answered, $answer_basis, $now);

-- name: report_latest
SELECT * FROM reports WHERE session_id = $session_id ORDER BY created_at DESC LIMIT 1;

-- name: session_counts
SELECT
    (SELECT count(*) FROM sub_questions WHERE session_id = $session_id) AS sub_questions,
    (SELECT count(*) FROM leads WHERE session_id = $session_id) AS leads,
    (SELECT count(*) FROM sources WHERE session_id = $session_id) AS sources,
    (SELECT count(*) FROM chunks WHERE session_id = $session_id) AS chunks,
    (SELECT count(*) FROM claims WHERE session_id = $session_id) AS claims,
    (SELECT count(*) FROM claim_edges WHERE session_id = $session_id) AS edges,
    (SELECT count(*) FROM dead_ends WHERE session_id = $session_id) AS dead_ends,
    (SELECT count(*) FROM reports WHERE session_id = $session_id) AS reports;

-- follow-ups --------------------------------------------------------------------------------

-- name: claim_lead_info
-- Each claim with the shallowest lead that found its source, and that lead's follow-up root.
-- Several leads of that depth can have found the source, with different roots: the smallest
-- root id is taken, so a replay of the session takes the same path (arg_min picked any of
-- them, and the root decides the per-root follow-up cap).
WITH found AS (
    SELECT c.id, c.text, c.sub_question_id, l.depth, l.root_claim_id
    FROM claims c
    LEFT JOIN lead_sources ls ON ls.source_id = c.source_id AND ls.session_id = c.session_id
    LEFT JOIN leads l ON l.id = ls.lead_id
    WHERE c.session_id = $session_id
),
shallowest AS (
    SELECT id, min(depth) AS depth FROM found GROUP BY id
)
SELECT f.id, f.text, f.sub_question_id,
       coalesce(s.depth, 0) AS depth,
       min(f.root_claim_id) FILTER (WHERE f.depth = s.depth) AS root
FROM found f
JOIN shallowest s ON s.id = f.id
GROUP BY f.id, f.text, f.sub_question_id, s.depth;

-- name: follow_ups_per_root
SELECT root_claim_id, count(DISTINCT query) AS n
FROM leads WHERE session_id = $session_id AND root_claim_id IS NOT NULL
GROUP BY root_claim_id;

-- name: followed_contradictions
SELECT DISTINCT because FROM leads WHERE session_id = $session_id AND because IS NOT NULL;

-- name: live_contradictions
SELECT src_claim_id, dst_claim_id FROM claim_edges
WHERE session_id = $session_id AND kind = 'contradicts'
ORDER BY src_claim_id, dst_claim_id;

-- grounding ---------------------------------------------------------------------------------

-- name: ground_candidates
-- Cluster representatives not yet settled by a re-read: disputed ones first (a check there can
-- decide the dispute), then the most confident (a wrong confident claim costs the most).
SELECT c.id AS claim_id, c.session_id, c.text, c.quote, c.source_id, cs.confidence,
       cs.contradictors
FROM confidence_scores cs
JOIN claims c ON c.id = cs.claim_id
JOIN sources s ON s.id = c.source_id
WHERE cs.session_id = $session_id AND cs.representative
  -- Local-data findings are re-verified by re-running their query, not by re-reading.
  AND s.source_class <> 'local'
  AND c.id NOT IN (
      SELECT claim_id FROM grounding_checks
      WHERE session_id = $session_id
        AND outcome IN ('confirmed', 'unsupported', 'vanished', 'not_refetchable'))
  -- A rerun's carried claims (issue 32) keep the checks of the claims they were copied from:
  -- their source is byte-identical, so a re-read would read what was read.
  AND c.id NOT IN (SELECT claim_id FROM carried_claims WHERE session_id = $session_id)
-- Ties by content, not by id (ids hash the session id, so two identical runs grounded
-- different claims).
ORDER BY (cs.contradictors > 0) DESC, cs.confidence DESC, s.url, c.quote_byte_start, c.id
LIMIT $limit;

-- name: reground_candidates
-- Across research sessions: never-checked claims first, then the oldest checks.
SELECT c.id AS claim_id, c.session_id, c.text, c.quote, c.source_id,
       max(g.checked_at) AS last_checked
FROM claims c
JOIN sessions s ON s.id = c.session_id AND coalesce(s.kind, 'research') = 'research'
JOIN confidence_scores cs ON cs.claim_id = c.id AND cs.representative
JOIN sources src ON src.id = c.source_id AND src.source_class <> 'local'
LEFT JOIN grounding_checks g ON g.claim_id = c.id
GROUP BY c.id, c.session_id, c.text, c.quote, c.source_id
ORDER BY last_checked ASC NULLS FIRST, c.session_id, c.id
LIMIT $limit;

-- name: source_get
SELECT * FROM sources WHERE id = $source_id;

-- name: ground_insert
INSERT INTO grounding_checks (id, session_id, claim_id, source_id, paid_by, outcome, note,
                              decided_by, checked_at)
VALUES ($id, $session_id, $claim_id, $source_id, $paid_by, $outcome, $note, $decided_by, $now);

-- name: grounded_claims
-- The latest decisive re-read per claim (vanished/unreachable/undecided teach nothing).
SELECT claim_id, arg_max(outcome, checked_at) AS outcome
FROM grounding_checks
WHERE session_id = $session_id AND outcome IN ('confirmed', 'unsupported')
GROUP BY claim_id;

-- name: session_kind_set
UPDATE sessions SET kind = $kind WHERE id = $session_id;

-- name: report_citation_insert
INSERT INTO report_citations (report_id, session_id, number, source_id)
VALUES ($report_id, $session_id, $number, $source_id);

-- trace -------------------------------------------------------------------------------------

-- name: trace_clusters
SELECT cs.cluster_id, cs.claim_id, cs.representative, cs.confidence, cs.publishers,
       cs.contradictors, cs.superseded, cs.grounded, cs.source_class, cs.explanation,
       c.text, s.publisher, cr.relevance, cr.explanation AS relevance_explanation
FROM confidence_scores cs
JOIN claims c ON c.id = cs.claim_id
JOIN sources s ON s.id = c.source_id
LEFT JOIN claim_relevance cr ON cr.claim_id = cs.claim_id
WHERE cs.session_id = $session_id
ORDER BY cs.confidence DESC, cs.cluster_id, cs.representative DESC, cs.claim_id;

-- name: trace_edges
SELECT e.kind, e.src_claim_id, e.dst_claim_id, e.created_by, e.rationale, pv.confirmed
FROM claim_edges e
LEFT JOIN pair_verdicts pv ON pv.session_id = e.session_id
    AND pv.a_claim_id = least(e.src_claim_id, e.dst_claim_id)
    AND pv.b_claim_id = greatest(e.src_claim_id, e.dst_claim_id)
WHERE e.session_id = $session_id
ORDER BY e.kind, e.src_claim_id, e.dst_claim_id;

-- name: trace_verdict_counts
SELECT relation, decided_by, confirmed, count(*) AS n
FROM pair_verdicts WHERE session_id = $session_id
GROUP BY relation, decided_by, confirmed ORDER BY relation, decided_by, confirmed;

-- name: trace_follow_ups
SELECT id, query, depth, root_claim_id, because, status FROM leads
WHERE session_id = $session_id AND because IS NOT NULL
ORDER BY depth, created_at, id;

-- name: trace_grounding
SELECT g.claim_id, g.outcome, g.note, g.decided_by, g.paid_by, g.checked_at
FROM grounding_checks g WHERE g.session_id = $session_id
ORDER BY g.checked_at, g.claim_id;

-- evals --------------------------------------------------------------------------------------

-- name: integrity_claims
SELECT id, source_id, quote, quote_byte_start, quote_byte_end FROM claims
WHERE session_id = $session_id ORDER BY source_id, id;

-- name: report_citation_map
SELECT number, source_id FROM report_citations WHERE report_id = $report_id ORDER BY number;

-- name: sources_with_claims
SELECT DISTINCT source_id FROM claims WHERE session_id = $session_id;

-- name: grounding_counts
SELECT outcome, count(*) AS n FROM grounding_checks WHERE session_id = $session_id GROUP BY outcome;

-- name: contradiction_edges_with_text
SELECT e.kind, e.src_claim_id, e.dst_claim_id, a.text AS src_text, b.text AS dst_text
FROM claim_edges e
JOIN claims a ON a.id = e.src_claim_id
JOIN claims b ON b.id = e.dst_claim_id
WHERE e.session_id = $session_id AND e.kind IN ('contradicts', 'supersedes');

-- driver -------------------------------------------------------------------------------------

-- name: session_driver_set
UPDATE sessions SET driver = $driver WHERE id = $session_id;

-- name: sessions_driven_by_dagster
SELECT id FROM sessions
WHERE coalesce(driver, 'cli') = 'dagster' AND status IN ('created', 'running', 'reporting')
ORDER BY created_at, id;

-- name: relevance_sub_questions
SELECT id, text FROM sub_questions WHERE session_id = $session_id ORDER BY round, ordinal, id;

-- name: relevance_source_texts
-- A source's text is its chunks in order: they tile it byte for byte.
SELECT s.id AS source_id, string_agg(ch.text, '' ORDER BY ch.ordinal) AS text
FROM sources s JOIN chunks ch ON ch.source_id = s.id
WHERE s.session_id = $session_id
GROUP BY s.id
ORDER BY s.id;

-- multi-row statements ---------------------------------------------------------------------
-- One statement for a stage's rows (issue 12): a statement per row costs ~3 ms in DuckDB, a
-- multi-row INSERT ... SELECT unnest(...) a few microseconds a row. Each list parameter is one
-- column, all of one length (mole_dag.core.columns builds them); a scalar parameter repeats.
-- unnest() of several lists in one SELECT zips them, in order.

-- name: sub_question_insert_many
INSERT INTO sub_questions (id, session_id, round, ordinal, text, query, created_at)
SELECT unnest($id), $session_id, $round, unnest($ordinal), unnest($text), unnest($query), $now
ON CONFLICT DO NOTHING;

-- name: lead_insert_many
INSERT INTO leads (id, session_id, sub_question_id, actor, query, depth, root_claim_id, because, created_at)
SELECT unnest($id), $session_id, unnest($sub_question_id), unnest($actor), unnest($query),
       unnest($depth), unnest($root_claim_id::VARCHAR[]), unnest($because::VARCHAR[]), $now
ON CONFLICT DO NOTHING;

-- name: chunk_insert_many
INSERT INTO chunks (id, session_id, source_id, ordinal, byte_start, byte_end, text)
SELECT unnest($id), $session_id, $source_id, unnest($ordinal), unnest($byte_start),
       unnest($byte_end), unnest($text);

-- name: claim_keys
-- Where the session's claims sit, so the miner skips a quote already stored without asking the
-- store once per claim.
SELECT source_id, quote_byte_start, quote_byte_end FROM claims WHERE session_id = $session_id;

-- name: claim_insert_many
-- created_at per row: a cluster's representative is its earliest claim among equals, so each
-- source's claims keep the time they were mined, as when they were written one by one.
INSERT INTO claims (id, session_id, source_id, chunk_id, sub_question_id, text, quote,
                    quote_byte_start, quote_byte_end, created_by, created_at)
SELECT unnest($id), $session_id, unnest($source_id), unnest($chunk_id), unnest($sub_question_id),
       unnest($text), unnest($quote), unnest($quote_byte_start), unnest($quote_byte_end),
       $created_by, unnest($created_at::TIMESTAMP[]);

-- name: discarded_insert_many
INSERT INTO discarded_claims (session_id, source_id, cause, n, created_at)
SELECT $session_id, unnest($source_id), unnest($cause), unnest($n), $now;

-- name: lead_sources_mined_many
UPDATE lead_sources SET mined = true
WHERE (lead_id, source_id) IN (SELECT unnest($lead_id), unnest($source_id));

-- name: verdict_insert_many
INSERT INTO pair_verdicts (session_id, a_claim_id, b_claim_id, relation, decided_by, confirmed, rationale, created_at)
SELECT $session_id, unnest($a), unnest($b), unnest($relation), unnest($decided_by),
       unnest($confirmed::BOOLEAN[]), unnest($rationale), $now
ON CONFLICT DO NOTHING;

-- name: edge_insert_many
INSERT INTO claim_edges (id, session_id, src_claim_id, dst_claim_id, kind, weight, rationale, created_by, created_at)
SELECT unnest($id), $session_id, unnest($src), unnest($dst), unnest($kind), 1.0,
       unnest($rationale), unnest($created_by), $now
ON CONFLICT DO NOTHING;

-- name: score_insert_many
INSERT INTO confidence_scores (session_id, claim_id, cluster_id, representative, confidence,
    publishers, contradictors, superseded, grounded, source_class, explanation, computed_at)
SELECT $session_id, unnest($claim_id), unnest($cluster_id), unnest($representative),
       unnest($confidence::DOUBLE[]), unnest($publishers), unnest($contradictors),
       unnest($superseded), unnest($grounded::BOOLEAN[]), unnest($source_class),
       unnest($explanation), $now;

-- name: relevance_insert_many
INSERT INTO claim_relevance (claim_id, session_id, relevance, to_question, to_sub_question,
                             sub_question_id, basis, model_grade, explanation, scored_at)
SELECT unnest($claim_id), $session_id, unnest($relevance::DOUBLE[]),
       unnest($to_question::DOUBLE[]), unnest($to_sub_question::DOUBLE[]),
       unnest($sub_question_id), unnest($basis), unnest($model_grade::INTEGER[]),
       unnest($explanation), $now;

-- name: ground_insert_many
INSERT INTO grounding_checks (id, session_id, claim_id, source_id, paid_by, outcome, note,
                              decided_by, checked_at)
SELECT unnest($id), unnest($session_id), unnest($claim_id), unnest($source_id), $paid_by,
       unnest($outcome), unnest($note), $decided_by, $now;

-- name: dead_end_insert_many
INSERT INTO dead_ends (id, session_id, sub_question_id, lead_id, url, cause, detail, created_at)
SELECT unnest($id), $session_id, unnest($sub_question_id::VARCHAR[]), unnest($lead_id::VARCHAR[]),
       unnest($url::VARCHAR[]), unnest($cause), unnest($detail::VARCHAR[]), $now;

-- name: source_pages_insert_many
-- A PDF source's page map (issue 19), one statement per source.
INSERT INTO source_pages (session_id, source_id, page, byte_start, byte_end)
SELECT $session_id, $source_id, unnest($page), unnest($byte_start), unnest($byte_end);

-- name: claim_pages
-- The page each claim of a session was quoted from: the page its quote starts on. Claims of
-- sources without pages (web pages, text files) have no row.
SELECT c.id AS claim_id, p.page
FROM claims c
JOIN source_pages p
  ON p.source_id = c.source_id
 AND c.quote_byte_start >= p.byte_start AND c.quote_byte_start < p.byte_end
WHERE c.session_id = $session_id;

-- name: unread_files
-- The files a session could not read, each once, with what was wrong: every corpus file not
-- read (issue 33) and every PDF, fetched or not (issue 19). For `mole show` and the report's
-- "Not read" section.
SELECT url, cause, min(detail) AS detail
FROM dead_ends
WHERE session_id = $session_id
  AND (starts_with(cause, 'pdf_') OR starts_with(url, 'file:') OR starts_with(url, 'corpus:'))
GROUP BY url, cause
ORDER BY url, cause;
-- rounds -----------------------------------------------------------------------------------

-- name: round_mark_planned
-- In the transaction that writes the round's sub-questions and leads (mole_dag.planner.plan).
INSERT INTO session_rounds (session_id, round, planned_at) VALUES ($session_id, $round, $now)
ON CONFLICT (session_id, round) DO UPDATE SET planned_at = excluded.planned_at;

-- name: round_mark_done
-- In the transaction that writes the session's scores, the round's last stage: the round the
-- session is in is finished (a no-op after the report, whose scoring finds it already done).
UPDATE session_rounds SET done_at = $now
WHERE session_id = $session_id AND done_at IS NULL AND planned_at IS NOT NULL
  AND round = (SELECT rounds FROM sessions WHERE id = $session_id);

-- name: round_state
-- The round being run, whether its plan was written and whether it finished.
SELECT s.rounds,
       coalesce(bool_or(r.planned_at IS NOT NULL), false) AS planned,
       coalesce(bool_or(r.done_at IS NOT NULL), false) AS done
FROM sessions s
LEFT JOIN session_rounds r ON r.session_id = s.id AND r.round = s.rounds
WHERE s.id = $session_id
GROUP BY s.rounds;

-- reruns (issue 32) ---------------------------------------------------------------------------

-- name: session_set_previous
UPDATE sessions SET previous_session_id = $previous_session_id, updated_at = $now
WHERE id = $session_id;

-- name: rerun_cited_sources
-- The previous session's sources that back at least one claim: the ones a rerun reads again.
SELECT * FROM sources s
WHERE s.session_id = $session_id
  AND EXISTS (SELECT 1 FROM claims c WHERE c.source_id = s.id)
ORDER BY s.url;

-- name: rerun_leads
-- The session's leads in plan order, with their sub-question's wording: where a source read
-- again is linked, so the miner takes it up (or carries its claims).
SELECT l.id AS lead_id, l.sub_question_id, sq.text AS sub_question
FROM leads l JOIN sub_questions sq ON sq.id = l.sub_question_id
WHERE l.session_id = $session_id
ORDER BY sq.round, sq.ordinal, l.depth, l.actor, l.query, l.id;

-- name: rerun_source_sub_questions
-- The wording of the sub-questions a previous source's claims were mined for, most claims first.
SELECT sq.text AS sub_question, count(*) AS n
FROM claims c JOIN sub_questions sq ON sq.id = c.sub_question_id
WHERE c.source_id = $source_id
GROUP BY sq.text
ORDER BY n DESC, sq.text;

-- name: source_changes_urls
SELECT url FROM source_changes WHERE session_id = $session_id;

-- name: source_change_insert
INSERT INTO source_changes (session_id, previous_session_id, url, old_source_id, new_source_id,
                            outcome, detail, checked_at)
VALUES ($session_id, $previous_session_id, $url, $old_source_id, $new_source_id, $outcome,
        $detail, $now)
ON CONFLICT DO NOTHING;

-- name: rerun_unclassified
-- This session's sources with no source_changes row yet, beside the previous session's source
-- of the same URL (if any) and whether that one was mined.
SELECT n.id AS new_source_id, n.url, n.content_sha256 AS new_sha256,
       o.id AS old_source_id, o.content_sha256 AS old_sha256
FROM sources n
LEFT JOIN sources o ON o.session_id = $previous_session_id AND o.url = n.url
WHERE n.session_id = $session_id
  AND n.url NOT IN (SELECT url FROM source_changes WHERE session_id = $session_id)
ORDER BY n.url;

-- name: rerun_carried_sources
-- This session's sources whose claims are copied from the previous session rather than mined:
-- unchanged (or unreachable, so nothing learned), and mined there.
SELECT sc.new_source_id, sc.old_source_id
FROM source_changes sc
WHERE sc.session_id = $session_id AND sc.outcome IN ('unchanged', 'unreachable')
  AND EXISTS (SELECT 1 FROM lead_sources ls WHERE ls.source_id = sc.old_source_id AND ls.mined);

-- name: rerun_old_claims
-- The claims of previous sources, with the model's grade when a model mined them, in byte order.
SELECT c.id, c.source_id, c.text, c.quote, c.quote_byte_start, c.quote_byte_end,
       r.model_grade
FROM claims c LEFT JOIN claim_relevance r ON r.claim_id = c.id
WHERE c.source_id IN (SELECT unnest($source_ids))
ORDER BY c.source_id, c.quote_byte_start, c.quote_byte_end, c.id;

-- name: carried_claim_insert_many
INSERT INTO carried_claims (session_id, claim_id, previous_claim_id)
SELECT $session_id, unnest($claim_id), unnest($previous_claim_id)
ON CONFLICT DO NOTHING;

-- name: source_copy_chunks
SELECT ordinal, byte_start, byte_end, text FROM chunks WHERE source_id = $source_id
ORDER BY ordinal;

-- name: source_copy_pages
SELECT page, byte_start, byte_end FROM source_pages WHERE source_id = $source_id ORDER BY page;
