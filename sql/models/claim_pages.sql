-- The page of every claim quoted from a PDF (issue 19): the page its quote starts on, from the
-- source's page map. One row per claim with a page; claims from other sources have none.
SELECT c.session_id, c.id AS claim_id, c.source_id, s.url, s.title, p.page, c.quote
FROM claims c
JOIN sources s ON s.id = c.source_id
JOIN source_pages p
  ON p.source_id = c.source_id
 AND c.quote_byte_start >= p.byte_start AND c.quote_byte_start < p.byte_end
