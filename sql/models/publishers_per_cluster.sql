-- Each duplicate cluster with the distinct publishers that state it: the corroboration count
-- confidence is derived from.
SELECT
    cs.session_id,
    cs.cluster_id,
    min(c.text) FILTER (WHERE cs.representative)        AS representative_text,  -- one row: any_value is not in Postgres 15
    count(*)                                             AS claims,
    count(DISTINCT s.publisher)                          AS publishers,
    string_agg(DISTINCT s.publisher, ', ' ORDER BY s.publisher) AS publisher_list,
    max(cs.confidence)                                   AS confidence
FROM confidence_scores cs
JOIN claims c ON c.id = cs.claim_id
JOIN sources s ON s.id = c.source_id
GROUP BY cs.session_id, cs.cluster_id
