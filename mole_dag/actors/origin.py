"""Where a document in a local folder comes from, read from the document itself (issue 31).

A file has no domain, so the web's rules (a source class from the registrable domain, one
publisher per domain) read every paper of a folder as one "unknown" publisher: a journal paper
and a package's FAQ weighed alike, and two groups' papers counted as one word. Here the class is
read from the first page (a journal's masthead or a statement that the paper was published in
one, a conference line, a DOI in the front matter, an arXiv id, a vignette, a manual or an FAQ)
and the publisher from the authors (the PDF's metadata, else the first page's author line).
Each comes with the evidence it was read from, which `mole trace` shows.

Only the front matter is read (the text before the abstract or the introduction, at most
FRONT_CHARS): a DOI or a journal named in the references is another paper's. Every rule is a
guess, flagged as one, on general shapes of scholarly front matter, not on any document's
words."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from mole_dag.core import Document, SourceClass

# How much of the text counts as the front matter when no abstract or introduction heading
# ends it sooner. A guess, flagged as one: a first page's title block and abstract.
FRONT_CHARS = 1500

# The front matter ends where the body begins. The abstract is kept: it is where a reprint says
# where it was published ("This paper has been published in the Journal of ...").
_FRONT_END = re.compile(r"\b(?:Contents|Introduction|Keywords)\b")

# A journal's name: up to four capitalised words, a journal word, and what it is of or on.
_JOURNAL_NAME = (
    r"(?:[A-Z][\w&-]*\s+){0,4}(?:Journal|Transactions|Proceedings|Annals|Letters)\b"
    r"(?:\s+(?:of|on|for)(?:\s+(?:the\s+)?[A-Z][\w&-]*){1,5})?"
)
# A journal's masthead: its name with a volume or an issue ("Journal of Statistical Software
# July 2008, Volume 27, Issue 3").
_MASTHEAD = re.compile(rf"(?P<name>{_JOURNAL_NAME}).{{0,60}}?\b(?:Volume|Vol\.)\s*\d+", re.S)
# A statement that this text is (a version of) a paper published or accepted in a journal
# ("... published in the Journal of Statistical Software", "a preprint of an article to be
# published in Biometrical Journal").
_PUBLISHED_IN = re.compile(
    r"\b(?:published|appeared|accepted(?: for publication)?)\s+in\s+(?:the\s+)?"
    rf"(?P<name>{_JOURNAL_NAME})"
)
_CONFERENCE = re.compile(
    r"\b(?:In\s+)?Proceedings of the\s+(?:[\w&-]+\s+){0,8}?(?:Conference|Symposium|Workshop)\b"
)
_DOI = re.compile(r"\b(?:doi:\s*|https?://(?:dx\.)?doi\.org/)(10\.\d{4,9}/[^\s,;]+)", re.I)
_ARXIV = re.compile(r"\barXiv:\s*(\d{4}\.\d{4,5}(?:v\d+)?)", re.I)
_VIGNETTE = re.compile(r"\bvignette\b", re.I)
_MANUAL_TITLE = re.compile(
    r"\b(?:FAQ|Frequently Asked Questions|Manual|Reference Guide|Quick Reference|User'?s Guide|"
    r"Handbook|Cheat ?Sheet|Tutorial)\b",
    re.I,
)

# A person's name: a given name, initials or particles, a surname ("Mark A. van de Wiel"). A
# middle name written out reads as two people's; names run together without commas are
# ambiguous anyway, and two capitalised words a name is the common case.
_CAP = r"[A-Z][a-z\u00e0-\u024f'\u2019-]+"
_NAME = re.compile(
    rf"\b({_CAP}(?:\s+(?:[A-Z]\.\s*)+|\s+)(?:(?:van|von|de|der|da|di|le|la)\s+){{0,3}}{_CAP})"
)
# An affiliation marker: a lower-case letter standing alone before a link or a capitalised
# word ("a http://...", "bDepts of ..."), which the author line glues to each surname.
_MARKER = r"(?:^|[\s;,])%s(?=\s?(?:https?:|[A-Z]))"
# Words of an affiliation or a date line, which end the author line.
_NOT_AUTHOR = re.compile(
    r"\b(?:\w*[Uu]niversi\w*|\w*[Ii]nstitu\w*|Technische|Department|Dept|School|College|Project|"
    r"Laboratory|Center|Centre|Inc|Ltd|GmbH|Team|Foundation|Abstract|Contents|This|The|We|"
    r"January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\b"
)


_MONTH = re.compile(
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Oct|Nov|Dec|Abstract|Contents|This|The|We)\b"
)


@dataclass(frozen=True)
class Origin:
    """What a local document says of itself: its source class and publisher, each with the
    evidence it was read from."""

    source_class: SourceClass
    class_basis: str
    publisher: str | None
    publisher_basis: str

    def explanation(self) -> str:
        return f"{self.source_class}: {self.class_basis}; publisher: {self.publisher_basis}"


def front_matter(text: str) -> str:
    head = text[:FRONT_CHARS]
    m = _FRONT_END.search(head, 40)
    return head[: m.start()] if m else head


def _one_line(s: str, width: int = 80) -> str:
    s = " ".join(s.split())
    return s if len(s) <= width else s[: width - 1] + "…"


def _class_of(doc: Document, front: str) -> tuple[SourceClass, str]:
    m = _MASTHEAD.search(front)
    if m:
        return (
            SourceClass.PEER_REVIEWED,
            f"journal line '{_one_line(m.group(0))}' on its first page",
        )
    m = _PUBLISHED_IN.search(front)
    if m:
        return (
            SourceClass.PEER_REVIEWED,
            f"states it was published in '{_one_line(m.group('name'))}'",
        )
    m = _CONFERENCE.search(front)
    if m:
        return SourceClass.PEER_REVIEWED, f"conference line '{_one_line(m.group(0))}'"
    m = _DOI.search(front)
    if m:
        return SourceClass.PEER_REVIEWED, f"DOI {m.group(1)} in its front matter"
    m = _ARXIV.search(front)
    if m:
        return SourceClass.PRIMARY, f"arXiv preprint {m.group(1)} (not yet reviewed)"
    m = _MANUAL_TITLE.search(doc.title or "")
    if m:
        return SourceClass.PRIMARY, f"documentation by its makers ('{m.group(0)}' in its title)"
    m = _VIGNETTE.search(front)
    if m:
        return SourceClass.PRIMARY, "a package vignette (says so on its first page)"
    return SourceClass.UNKNOWN, "no journal, conference, DOI, arXiv id, vignette or manual found"


def _surname(name: str, front: str = "") -> str:
    word = unicodedata.normalize("NFKC", name.split()[-1]).strip(".,'’")
    # "Eddelbuettela" with "a http://..." below it: the letter is the affiliation's marker.
    if len(word) > 3 and word[-1] in "abcdefgh" and re.search(_MARKER % word[-1], front):
        word = word[:-1]
    return word.casefold()


def _authors_from_front(doc: Document, front: str) -> list[str]:
    """The names on the author line: the text after the title, up to an affiliation, a date,
    a link or the abstract."""
    title = " ".join((doc.title or "").split())
    flat = " ".join(front.split())
    at = flat.find(title) if title else -1
    rest = flat[at + len(title) :] if at >= 0 else flat
    stop = len(rest)
    for pattern in (_NOT_AUTHOR, re.compile(r"https?://|@|\d")):
        m = pattern.search(rest)
        if m:
            stop = min(stop, m.start())
    line = rest[:stop]
    m = _NOT_AUTHOR.search(rest)
    if m and m.start() == stop and m.group(0)[:1].isupper() and not _MONTH.match(m.group(0)):
        # "Dirk Eddelbuettel Debian Project": the capitalised word before an affiliation's
        # keyword belongs to the affiliation.
        line = re.sub(rf"\s*{_CAP}\s*$", " ", line)
    return [n for n in _NAME.findall(line)][:8]


def publisher_of_document(doc: Document, front: str) -> tuple[str | None, str]:
    """The authors as the publisher key ("authors:hornik,hothorn"): two papers by the same
    people count once, two groups' papers twice. None when no author can be read."""
    if doc.author and doc.author.strip():
        names = [n.strip() for n in re.split(r",|;|\band\b|&", doc.author) if n.strip()]
        where = "the PDF's metadata"
    else:
        names = _authors_from_front(doc, front)
        where = "its first page"
    surnames = sorted({_surname(n, front) for n in names if _surname(n, front)})
    if not surnames:
        return None, "no author found (counted with the folder's other unattributed files)"
    shown = ", ".join(names[:4]) + (" ..." if len(names) > 4 else "")
    return "authors:" + ",".join(surnames), f"authors {shown} (from {where})"


def read_origin(doc: Document) -> Origin:
    front = front_matter(doc.text)
    cls, why = _class_of(doc, front)
    publisher, who = publisher_of_document(doc, front)
    return Origin(cls, why, publisher, who)
