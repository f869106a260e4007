"""What an actor gives the executor: documents with text, or dead ends with a cause."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from mole_dag.core import DeadEndCause, Document


@dataclass(frozen=True)
class Found:
    document: Document
    rank: int
    score: float


@dataclass(frozen=True)
class DeadEnd:
    cause: DeadEndCause
    url: str | None = None
    detail: str | None = None


class Actor(Protocol):
    """Searches one kind of source. Raw text leaves an actor only inside a Found, which the
    executor chunks and then drops."""

    name: str

    def gather(self, query: str, limit: int) -> Iterator[Found | DeadEnd]: ...
