-- One row per claim: what it says, where from, how confident and why, and its edges.
SELECT
    c.session_id,
    c.id                 AS claim_id,
    c.text,
    c.quote,
    s.publisher,
    s.publisher_name,
    s.source_class,
    s.url,
    s.published,
    cs.cluster_id,
    cs.representative,
    cs.confidence,
    cs.publishers        AS cluster_publishers,
    cs.contradictors,
    cs.superseded,
    cs.grounded,
    cs.explanation,
    cr.relevance,
    cr.to_question       AS relevance_to_question,
    cr.to_sub_question   AS relevance_to_sub_question,
    cr.basis             AS relevance_basis,
    cr.explanation       AS relevance_explanation,
    (SELECT string_agg(e.kind || ':' || CASE WHEN e.src_claim_id = c.id THEN e.dst_claim_id
                                             ELSE e.src_claim_id END, ', ' ORDER BY e.kind)
     FROM claim_edges e
     WHERE e.src_claim_id = c.id OR e.dst_claim_id = c.id) AS edges
FROM claims c
JOIN sources s ON s.id = c.source_id
LEFT JOIN confidence_scores cs ON cs.claim_id = c.id
LEFT JOIN claim_relevance cr ON cr.claim_id = c.id
