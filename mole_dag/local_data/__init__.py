"""The local-data boundary: a CSV file or folder is analysed only through aggregates over at
least five rows, and every value that leaves is recorded.

    connector -> hypothesis -> sqlguard -> gate -> exfil check -> crossings

Nothing is imported here on purpose: `view` (what a model may see and answer) is imported by the
skills protocol and must stay free of DuckDB, sqlglot and scipy."""
