-- Issue 31: where a local document's source class and publisher were read from (its first
-- page's journal line, a DOI, an arXiv id, a vignette or a manual; its authors from the PDF's
-- metadata or its first page), so `mole trace` can say why a paper weighs what it weighs.
-- NULL for a source classified by its URL alone.
ALTER TABLE sources ADD COLUMN origin VARCHAR;
