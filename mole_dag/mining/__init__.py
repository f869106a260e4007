"""Mining: which sentences of a page are claims, and how well each answers the question."""
