"""The local-data boundary: a CSV file or folder is analysed only through aggregates over at
least five rows, and every value that leaves is recorded.

    connector -> hypothesis -> sqlguard -> gate -> exfil check -> crossings

Nothing is imported here on purpose: the light modules (the prompts, the extractive choice) must
import without pulling in DuckDB, sqlglot and scipy. What a model may see and answer (the view)
is mole_dag.skills.view, beside the skills protocol that carries it."""
