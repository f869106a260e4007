"""A model of meaning that ships with mole and runs on the CPU (issue 30): sentence vectors
(embed.py) and their cache on disk beside the local corpus index (store.py)."""

from mole_dag.meaning.embed import (
    DIM,
    Embedder,
    MeaningModelError,
    embedder,
    similarities,
)

__all__ = ["DIM", "Embedder", "MeaningModelError", "embedder", "similarities"]
