"""Mining: claims from stored chunks, kept only when their quote is in the source verbatim
(mine.py); which sentences of a page may become claims, and how well each answers the question."""
