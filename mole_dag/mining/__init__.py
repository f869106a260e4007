"""Mining: which sentences of a page may become claims, and how well each answers the question."""
