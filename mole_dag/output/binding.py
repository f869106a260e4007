"""No sentence without evidence: the check every sentence of the answer paragraph passes.

A writer (a model, or the extractive provider) returns sentences, each naming the findings
that support it by number (mole_dag.skills.protocol.WrittenAnswer). It never writes a citation:
the report renders `[n]` from the named findings' sources. This module decides which
sentences may reach the report, and drops the rest, counted by reason:

- it names no finding, or a number that is not a finding of this report;
- it carries bracketed numbers, a page reference or Markdown/HTML of its own (a citation it
  made up, in the form "[3]", "[3, p. 12]" or "[3] (p. 12)"; a link);
- it looks like raw JSON (a writer that echoed its own answer format);
- it is not supported by the findings it names: a lexical check, so a floor, not a proof.

The support check is deliberately plain, and its thresholds are guesses, flagged as such: most
of the sentence's content terms must occur in the named findings or the question; every number
it states must occur there; and it must not negate what none of its findings negates. A
sentence that is one of its findings' quotes, word for word, is supported by construction."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from mole_dag.skills.protocol import BoundSentence, WrittenAnswer
from mole_dag.text import NEGATIONS, terms, words


class Dropped(StrEnum):
    EMPTY = "empty"
    NO_FINDING = "names no finding"
    UNKNOWN_FINDING = "names a finding that does not exist"
    OWN_MARKUP = "carries bracketed numbers or markup of its own"
    RAW_JSON = "looks like raw JSON"
    UNSUPPORTED = "is not supported by the findings it names"


# Share of a sentence's distinct content terms that must occur in its findings or the
# question. A guess, flagged as one: a paraphrase keeps most content words; a sentence that
# brings in its own subject, outcome or population does not. Calibrate against labelled
# answers when there are some.
SUPPORT_SHARE = 0.6
# Too few sentences kept, and the answer is replaced by the deterministic one: a paragraph with
# most of its sentences cut reads as something other than what the writer wrote. Also a guess.
MIN_KEPT_SHARE = 0.5

_BRACKET = re.compile(r"[\[\]]")
# Markup a plain sentence never needs: code spans, bold/italic runs, strike-through, HTML tags,
# link syntax, a line that starts a heading, a quote or a list, and a page reference of its own
# ("(p. 12)"): the report prints a PDF page after the citation it renders, "[3] (p. 12)" (issue
# 19), and a page the writer wrote would read as part of one.
_MARKUP = re.compile(
    r"`|\*\*|__|~~|</?[A-Za-z!][^>]*>|\]\(|^\s*(?:#|>|[-*+]\s|\d+[.)]\s)|\(pp?\.\s*\d"
)
_JSON = re.compile(r'^\s*[{\[]|"\s*:\s*[\[{"\d]|\{\s*"')
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)*$")


@dataclass(frozen=True)
class Binding:
    """The sentences that may be printed, and what was dropped and why."""

    kept: tuple[BoundSentence, ...]
    offered: int
    dropped: tuple[tuple[str, int], ...] = ()  # (reason, count), most frequent first
    quoted: frozenset[int] = field(default_factory=frozenset)  # indexes of kept verbatim quotes

    @property
    def enough(self) -> bool:
        return bool(self.kept) and len(self.kept) >= MIN_KEPT_SHARE * self.offered

    def explain(self) -> str:
        """One clause, for the report's note: what was offered, what was dropped and why.
        No bracketed numbers: this text is printed in the report."""
        if not self.offered:
            return "the writer returned no sentence"
        parts = ", ".join(f"{n} {reason}" for reason, n in self.dropped)
        said = f"{self.offered} sentence{'s' if self.offered != 1 else ''}"
        return f"{len(self.kept)} of the writer's {said} passed the evidence check" + (
            f"; dropped: {parts}" if parts else ""
        )


def _collapse(text: str) -> str:
    return " ".join(text.split())


def check_sentence(
    sentence: BoundSentence, findings: Mapping[int, str], question: str
) -> Dropped | None:
    """Why this sentence may not be printed, or None if it may. `findings` maps each finding
    number of the report to the text the report shows for it (its quote)."""
    text = _collapse(sentence.text)
    if not text:
        return Dropped.EMPTY
    if not sentence.findings:
        return Dropped.RAW_JSON if _JSON.search(text) else Dropped.NO_FINDING
    if any(n not in findings for n in sentence.findings):
        return Dropped.UNKNOWN_FINDING
    named = [_collapse(findings[n]) for n in dict.fromkeys(sentence.findings)]
    if text.rstrip(".") in {t.rstrip(".") for t in named}:
        # A finding's own quote, whatever it contains (code, brackets): the report prints it
        # in quotation marks with its Markdown escaped.
        return None
    if _JSON.search(text):
        return Dropped.RAW_JSON
    if _BRACKET.search(text) or _MARKUP.search(text):
        return Dropped.OWN_MARKUP
    if not _supported(text, named, question):
        return Dropped.UNSUPPORTED
    return None


def _supported(text: str, named: list[str], question: str) -> bool:
    evidence = " ".join(named)
    have = set(terms(evidence)) | set(terms(question))
    mine = set(terms(text))
    if not mine:
        return False  # nothing checkable ("Yes."): not evidence of anything
    if len(mine & have) < SUPPORT_SHARE * len(mine):
        return False
    # A number is the easiest thing to get wrong and the least covered by a share of terms.
    numbers = {w for w in words(text) if _NUMBER.match(w)}
    if numbers - {w for w in words(evidence + " " + question) if _NUMBER.match(w)}:
        return False
    # Negation words are stopwords to `terms`, so "does not raise" would pass against "raises":
    # a sentence may negate only where one of its findings does.
    negates = any(w in NEGATIONS for w in words(text))
    return not negates or any(w in NEGATIONS for w in words(evidence))


def bind(answer: WrittenAnswer, findings: Mapping[int, str], question: str) -> Binding:
    kept: list[BoundSentence] = []
    quoted: set[int] = set()
    why: Counter[str] = Counter()
    for s in answer.sentences:
        reason = check_sentence(s, findings, question)
        if reason is not None:
            why[str(reason)] += 1
            continue
        named = {_collapse(findings[n]).rstrip(".") for n in s.findings}
        if _collapse(s.text).rstrip(".") in named:
            quoted.add(len(kept))
        kept.append(BoundSentence(_collapse(s.text), tuple(dict.fromkeys(s.findings))))
    dropped = tuple(sorted(why.items(), key=lambda kv: (-kv[1], kv[0])))
    return Binding(tuple(kept), len(answer.sentences), dropped, frozenset(quoted))
