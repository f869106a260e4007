"""mole-dag: a deep-research agent whose invariants live in the schema, not the prompt."""

__version__ = "0.1.0"
