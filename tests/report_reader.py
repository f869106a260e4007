"""Read a report the way a reader does, and list every statement that carries no citation.

Everything before `## Local data` / `## Sources` is read. A line is either structural (a
heading, the session line, a banner, a finding's relevance/confidence line, the empty-report
notice, the not-answered notice) or a statement. List items must carry a citation `[n]`; a
paragraph is split into sentences (a quoted span “…” counts as one, its inside is the source's
words) and every sentence must carry one; a PDF citation's page, `[n] (p. 12)`, is part of
it. Every `[n]` must name a source listed under `## Sources`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_CITE = re.compile(r"(?<!\\)\[(\d+)\]")
_CITE_RUN = re.compile(r"(?:(?<!\\)\[\d+\])+")
_STRUCTURAL = (
    re.compile(r"^Session `[^`]+` · provider `"),
    re.compile(r"^> "),
    re.compile(r"^ {3}relevance \d\.\d\d · confidence \d\.\d\d — "),
    re.compile(r"^No finding to report: "),
    # A report whose findings do not answer its question says so, citing nothing (issue 21).
    re.compile(
        r"^(?:None of the \d+ sources read answers|The one source read does not answer) this "
        r"question\. The closest findings are below\.$"
    ),
)
_LIST = re.compile(r"^\s*(?:\d+\.|-)\s")
_QUOTED = re.compile("\u201c[^\u201d]*\u201d")
# The page a PDF citation carries after its number, "[3] (p. 12)" (issue 19): part of the
# citation, not a sentence of its own (and its "p." does not end one).
_PAGE = re.compile(r"(?<=\])\s*\(pp?\. \d+(?:[-\u2013]\d+)?\)")
_DISPUTED = re.compile(r"\s*\(disputed by #\d+(?:, #\d+)*\)")
# A sentence ends at . ! ? followed by a space, or after a run of citations.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=\])\.?\s+")


@dataclass
class Reading:
    sources: set[int] = field(default_factory=set)
    uncited: list[str] = field(default_factory=list)  # statements without a citation
    dangling: list[int] = field(default_factory=list)  # [n] with no source n
    answer: str = ""
    sections: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.uncited and not self.dangling


def section(markdown: str, heading: str) -> str:
    """The text under `## heading`, up to the next `## `."""
    m = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", markdown, re.M | re.S)
    return m.group(1).strip() if m else ""


def read(markdown: str) -> Reading:
    r = Reading()
    for m in re.finditer(r"^\[(\d+)\] ", section(markdown, "Sources"), re.M):
        r.sources.add(int(m.group(1)))
    r.answer = section(markdown, "Answer")
    r.sections = re.findall(r"^## (.+)$", markdown, re.M)
    body = re.split(r"^## (?:Local data|Sources)$", markdown, maxsplit=1, flags=re.M)[0]
    for line in body.splitlines():
        text = line.rstrip()
        if not text.strip() or text.startswith("#") or any(p.match(text) for p in _STRUCTURAL):
            continue
        r.dangling += [int(n) for n in _CITE.findall(text) if int(n) not in r.sources]
        if _LIST.match(text):
            if not _CITE.search(text):
                r.uncited.append(text)
            continue
        masked = _PAGE.sub("", _DISPUTED.sub("", _QUOTED.sub("Q", text)))
        for sentence in _SENTENCE_END.split(masked):
            if sentence.strip() and not _CITE.search(sentence):
                r.uncited.append(sentence.strip())
    return r
