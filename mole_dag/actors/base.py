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
    # The document is a stand-in (URL and title, no text) for a source this session already
    # stored: the executor links the stored copy to the lead and never inserts the stand-in.
    linked: bool = False


@dataclass(frozen=True)
class DeadEnd:
    cause: DeadEndCause
    url: str | None = None
    detail: str | None = None


class Actor(Protocol):
    """Searches one kind of source. Raw text leaves an actor only inside a Found, which the
    executor chunks and then drops."""

    @property
    def name(self) -> str: ...  # read-only: the web actor derives it from its provider

    def gather(self, query: str, limit: int) -> Iterator[Found | DeadEnd]: ...
