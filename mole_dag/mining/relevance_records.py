"""The records relevance scoring hands on: what a sentence has of a question (Evidence) and
the score made of it (Relevance). Apart from relevance.py so the ranker, which builds both,
imports them without importing the scorer that calls it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Relevance:
    value: float  # 0..1
    own: float
    context: float
    cue: bool
    restates: bool
    scope: float = 0.0  # share credited by the document the question points to
    # The question quotes the title of another source read (quoted_titles): not this one.
    other_title: bool = False
    # Question words the sentence says another way, as (sentence's word, question's word).
    said: tuple[tuple[str, str], ...] = ()
    # The learned ranking (mining.ranker): the features that decided, as a reader checks them
    # ("meaning 0.71 · words 0.42 · a number, as asked"); empty when scored by weigh().
    decided: str = ""
    # A heading or an FAQ's entry that restates the question (furniture.restates_question):
    # scored 0, whatever its words, since it is where the answer starts, not the answer.
    heading: bool = False

    def explain(self) -> str:
        if self.other_title:
            return f"{self.value:.2f}: the question quotes the title of another source"
        if self.heading:
            return f"{self.value:.2f}: restates the question (a heading or FAQ entry, no answer)"
        if self.decided:
            parts = [f"{self.value:.2f} = {self.decided}"]
            if self.said:
                parts.append("(" + ", ".join(f'"{a}" for "{b}"' for a, b in self.said) + ")")
            if self.scope:
                parts.append(f"x in the document the question names {self.scope:.2f}")
            return " ".join(parts)
        parts = [f"{self.value:.2f} = question terms in the sentence {self.own:.2f}"]
        if self.said:
            parts.append("(" + ", ".join(f'"{a}" for "{b}"' for a, b in self.said) + ")")
        if self.scope:
            parts.append(f"+ in the document the question names {self.scope:.2f}")
        if self.context:
            parts.append(f"+ around it {self.context:.2f}")
        if self.cue:
            parts.append("+ holds the kind of answer asked for")
        if self.restates:
            parts.append("x restates the question only")
        return " ".join(parts)


@dataclass(frozen=True)
class Evidence:
    """What a sentence has of a question, before any weight is applied: shares of the
    question's term weight (0..1) found in the sentence itself (BM25-saturated), only in the
    sentences around it, and only in the page title; whether it holds the kind of answer asked
    for; whether it only restates the question."""

    own: float
    around: float
    title: float
    cue: bool
    restates: bool
    # The question's weight in the terms that name its document (Query.scope), as shares:
    # all of them (`scoped`), and those found anywhere in the sentence's document (`scope`),
    # the same for every sentence of it. Both 0 when the document is not known.
    scope: float = 0.0
    scoped: float = 0.0
    # Question terms the sentence says with a near-synonym, as (sentence's term, question's).
    said: tuple[tuple[str, str], ...] = ()

    @property
    def coverage(self) -> float:
        """Share of the question's weight found in the sentence, around it, in the title or in
        the document the question points to."""
        return min(self.own + self.around + self.title + self.scope, 1.0)
