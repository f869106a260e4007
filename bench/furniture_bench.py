"""Page furniture among the sentences a miner sees, before and after issue 10's clean-up.

Over the saved pages in ../shared/web-pages/, each sentence is labelled from the page's own HTML,
independently of the filter: text inside h1-h6 is a heading; inside nav/header/footer/aside or an
element whose class or id says menu/nav/breadcrumb/share/social/cookie (not a page or article
wrapper, not one holding three or more long paragraphs) is navigation; a list item
under a heading named References/Bibliography/Works cited/Notes/Sources (or inside a list or block
whose class says ref/citation/bibliography) is a reference entry; other text inside <p> is
ordinary paragraph text. A sentence takes the label of the smallest labelled element that holds
it; one held by none but holding a whole heading, menu or reference text (a heading glued onto a
sentence) takes that label.

BEFORE: trafilatura's txt output (the old extraction), the old splitter (copied below), no
filter. AFTER: mole_dag.actors.extract.from_html, mole_dag.text.sentence_spans, and
mole_dag.mining.furniture.non_claim_reason. Candidates are the sentences of miner shape (the
extractive miner's word and length window). Also reported: what the new extraction kept of the
old text.

    .venv/bin/python bench/furniture_bench.py

The pages are other people's text: read in place, never copied. Absent folder: says so, exits 0."""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import lxml.html
import trafilatura

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mole_dag.actors.extract import from_html  # noqa: E402
from mole_dag.chunk import chunk_text  # noqa: E402
from mole_dag.mining.extractive import mine_sentences  # noqa: E402
from mole_dag.mining.furniture import non_claim_reason  # noqa: E402
from mole_dag.mining.passages import Passages  # noqa: E402
from mole_dag.mining.relevance import TermStats  # noqa: E402
from mole_dag.skills.protocol import MineRequest  # noqa: E402
from mole_dag.text import sentence_spans, stem, terms  # noqa: E402

PAGES = Path(__file__).resolve().parent.parent.parent / "shared" / "web-pages"

# The extractive miner's window (mole_dag/mining/extractive.py, mole_dag/actors/quote.py).
MIN_WORDS, MAX_WORDS, MAX_CHARS, MIN_CHARS = 6, 90, 600, 24

# The splitter as it was before issue 10, kept here to measure the old path.
_OLD_END = re.compile(
    r"(?<=[.!?])(?P<close>[\"')\]\u201d\u2019]*)\s+"
    r"(?=[\"'(\[\u201c\u2018]?[A-Z0-9\u00c0-\u024f\u0400-\u04ff\u3040-\u30ff\u4e00-\u9fff])"
    r"|(?<=[\u3002\uff01\uff1f])(?P<cjkclose>[\u300d\u300f\u201d\uff09]*)"
    r"|\n\s*\n"
)


def old_sentence_spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0

    def push(a: int, b: int) -> None:
        seg = text[a:b]
        lead, trail = len(seg) - len(seg.lstrip()), len(seg) - len(seg.rstrip())
        if b - trail > a + lead:
            spans.append((a + lead, b - trail))

    for m in _OLD_END.finditer(text):
        end = m.start() + len(m.group("close") or m.group("cjkclose") or "")
        if end <= start:
            continue
        push(start, end)
        start = m.end()
    push(start, len(text))
    return spans


def old_text(html: str) -> str:
    doc = trafilatura.bare_extraction(
        html, with_metadata=True, include_comments=False, include_tables=True
    )
    return (doc.text or "").strip("\n") if doc is not None else ""


def collapse(s: str) -> str:
    return " ".join(s.split())


# ---- ground truth from the markup -------------------------------------------------------------

_NAV_TAGS = {"nav", "header", "footer", "aside"}
_NAV_ATTR = re.compile(
    r"(?:^|[\s_-])(?:menu|menus|nav|navbar|navigation|breadcrumbs?|share|"
    r"sharing|social|cookies?|consent)(?:$|[\s_-])",
    re.I,
)
_REF_HEAD = re.compile(
    r"^\s*(?:references?|bibliography|works cited|literature cited|notes|"
    r"sources|further reading|literatur|einzelnachweise|quellen|"
    r"bibliographie|références|referencias)\b",
    re.I,
)
_REF_ATTR = re.compile(r"ref|citation|bibliograph", re.I)
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_LABELLED = _HEADINGS | {
    "p",
    "li",
    "td",
    "th",
    "dd",
    "dt",
    "figcaption",
    "a",
    "span",
    "div",
    "nav",
    "header",
    "footer",
    "aside",
    "section",
    "ol",
    "ul",
}
FURNITURE = ("heading", "reference", "navigation")


def _attr(el: lxml.html.HtmlElement) -> str:
    return f"{el.get('class') or ''} {el.get('id') or ''}"


def _nav_by_name(el: lxml.html.HtmlElement) -> bool:
    """A menu/share/cookie class or id names navigation, unless it sits on a page or article
    wrapper ("has-social-share" on <body>) or wraps running text (three or more real
    paragraphs)."""
    if el.tag in ("html", "body", "main", "article") or not _NAV_ATTR.search(_attr(el)):
        return False
    long_paragraphs = sum(1 for p in el.iter("p") if len(p.text_content()) >= 100)
    return long_paragraphs < 3


def markup_segments(html: str) -> list[tuple[str, str]]:
    """(collapsed text, label) of every labelled element, smallest first."""
    try:
        tree = lxml.html.fromstring(html)
    except (lxml.etree.ParserError, ValueError):
        return []
    for bad in tree.xpath("//script|//style|//noscript|//template"):
        bad.drop_tree()
    out: list[tuple[str, str]] = []
    in_refs = False

    def walk(el: lxml.html.HtmlElement, ctx: str | None) -> None:
        nonlocal in_refs
        tag = el.tag if isinstance(el.tag, str) else ""
        if tag in _HEADINGS:
            in_refs = bool(_REF_HEAD.match(el.text_content()))
        label = ctx
        if tag in _HEADINGS:
            label = "heading"
        elif ctx is None and (tag in _NAV_TAGS or _nav_by_name(el)):
            label = "navigation"
        elif ctx is None and (
            (tag in ("ol", "ul", "div") and _REF_ATTR.search(_attr(el)))
            or (tag == "li" and in_refs)
        ):
            label = "reference"
        elif ctx is None and tag == "p":
            label = "paragraph"
        if tag in _LABELLED:
            text = collapse(el.text_content())
            if text:
                out.append((text, label or "other"))
        for child in el:
            walk(child, label if label != "paragraph" else "paragraph")

    walk(tree, None)
    out.sort(key=lambda seg: len(seg[0]))
    return out


def label_of(sentence: str, segments: list[tuple[str, str]]) -> str:
    s = collapse(sentence)
    for text, label in segments:  # smallest first
        if len(text) >= len(s) and s in text:
            return label
    # Held by no single element: a heading, menu or reference glued onto other text.
    for text, label in segments:
        if label in FURNITURE and len(text) >= 8 and text in s:
            return label
    return "unlabelled"


# ---- mined claims: the miner as it was before issue 10, and as it is ---------------------------

_OLD_EFFECT = frozenset(
    stem(w)
    for w in (
        "risk increase decrease raise lower reduce cause associated link protect protective "
        "improve worsen higher more less percent effect benefit harm safe unsafe classified "
        "evidence found show"
    ).split()
)
_OLD_NUMBER = re.compile(r"^\d+(?:[.,]\d+)?$")


def old_mine(chunk: str, question: str) -> list[str]:
    """The extractive miner before issue 10 (sentences sharing content terms with the question,
    at most 5 a chunk), copied here to measure the old path."""
    want = set(terms(question))
    scored = []
    for a, b in old_sentence_spans(chunk):
        sentence = chunk[a:b]
        if (
            not (6 <= len(sentence.split()) <= 90)
            or len(sentence) > 600
            or len(collapse(sentence)) < 24
        ):
            continue
        if sentence.rstrip()[-1:] in {":", ",", ";"} or sentence.lstrip().startswith("#"):
            continue
        have = set(terms(sentence))
        shared = have & want
        effect = bool(have & _OLD_EFFECT) or any(_OLD_NUMBER.match(w) for w in have)
        if not shared or (len(shared) < 2 and not effect):
            continue
        scored.append((len(shared) * 1.5 + (1.0 if effect else 0.0), a, sentence))
    return [x[2] for x in sorted(scored, key=lambda x: (-x[0], x[1]))[:5]]


def new_mine(text: str, question: str, stats: TermStats) -> list[str]:
    return [
        d.quote
        for ch in chunk_text(text)
        for d in mine_sentences(MineRequest(question, question, ch.text, "", stats))
    ]


# ---- the two paths ----------------------------------------------------------------------------


def miner_shaped(sentence: str) -> bool:
    n = len(sentence.split())
    return (
        MIN_WORDS <= n <= MAX_WORDS
        and len(sentence) <= MAX_CHARS
        and len(collapse(sentence)) >= MIN_CHARS
    )


def sentences(text: str, splitter: Callable[[str], list[tuple[int, int]]]) -> Iterator[str]:
    for a, b in splitter(text):
        if miner_shaped(text[a:b]):
            yield text[a:b]


def main() -> int:
    if not PAGES.is_dir():
        print(f"skipped: {PAGES} is absent (the saved pages live beside the project, not in it)")
        return 0
    names = sorted(PAGES.glob("*.html"))
    before: Counter[str] = Counter()
    after: Counter[str] = Counter()  # candidates the filter let through
    seen_after: Counter[str] = Counter()  # every miner-shaped sentence of the new path
    refused: Counter[str] = Counter()  # by markup label
    causes: Counter[str] = Counter()
    para_causes: Counter[str] = Counter()  # why paragraph text was refused
    chars_old = chars_new = kept_sentences = old_sentences = 0
    mined_before: Counter[str] = Counter()
    mined_after: Counter[str] = Counter()
    # The question each page is mined for: its own title, the question a reader who landed on
    # it most plausibly had. Session-wide weights come from every page, as in a session.
    texts = {p: from_html(p.read_text(encoding="utf-8", errors="replace")) for p in names}
    stats = TermStats.from_sentences(
        s.text for d in texts.values() for s in Passages(d.text).sentences
    )
    word = re.compile(r"[^\W_]+")
    for path in names:
        html = path.read_text(encoding="utf-8", errors="replace")
        segments = markup_segments(html)
        old = old_text(html)
        doc = texts[path]
        new = doc.text
        question = doc.title or path.stem
        for ch in chunk_text(old):
            for q in old_mine(ch.text, question):
                mined_before[label_of(q, segments)] += 1
        for q in new_mine(new, question, stats):
            mined_after[label_of(q, segments)] += 1
        chars_old += len(collapse(old))
        chars_new += len(collapse(new))
        new_words = " ".join(word.findall(new))
        for a, b in old_sentence_spans(old):
            seq = " ".join(word.findall(old[a:b]))
            if seq:
                old_sentences += 1
                kept_sentences += seq in new_words
        for s in sentences(old, old_sentence_spans):
            before[label_of(s, segments)] += 1
        for s in sentences(new, sentence_spans):
            label = label_of(s, segments)
            seen_after[label] += 1
            cause = non_claim_reason(s)
            if cause is None:
                after[label] += 1
            else:
                refused[label] += 1
                causes[cause] += 1
                if label == "paragraph":
                    para_causes[cause] += 1

    def row(name: str, c: Counter[str]) -> str:
        total = sum(c.values())
        shares = [100 * c[k] / total if total else 0.0 for k in FURNITURE]
        para = 100 * c["paragraph"] / total if total else 0.0
        return (
            f"| {name:<6} | {total:>10} | {shares[0]:>7.1f} | {shares[1]:>9.1f} | "
            f"{shares[2]:>10.1f} | {sum(shares):>9.1f} | {para:>9.1f} |"
        )

    print(
        f"{len(names)} pages; candidates are miner-shaped sentences "
        f"({MIN_WORDS}-{MAX_WORDS} words, {MIN_CHARS}-{MAX_CHARS} characters)\n"
    )
    print("| path   | candidates | heading | reference | navigation | furniture | paragraph |")
    print("|--------|-----------:|--------:|----------:|-----------:|----------:|----------:|")
    print(row("before", before))
    print(row("after", after))
    print("\nmined claims (each page mined for its own title as the question):\n")
    print("| miner  | claims     | heading | reference | navigation | furniture | paragraph |")
    print("|--------|-----------:|--------:|----------:|-----------:|----------:|----------:|")
    print(row("before", mined_before))
    print(row("after", mined_after))
    para = seen_after["paragraph"]
    furn = sum(seen_after[k] for k in FURNITURE)
    print(
        f"\nfilter, new path: false refusals on paragraph text {refused['paragraph']}/{para} "
        f"({100 * refused['paragraph'] / max(para, 1):.1f}%); furniture refused "
        f"{sum(refused[k] for k in FURNITURE)}/{furn} "
        f"({100 * sum(refused[k] for k in FURNITURE) / max(furn, 1):.1f}%)"
    )
    print(
        "paragraph text refused by cause:",
        ", ".join(f"{k} {v}" for k, v in para_causes.most_common()),
    )
    print("all refusals by cause:", ", ".join(f"{k} {v}" for k, v in causes.most_common()))
    print(
        f"extraction kept: {chars_new}/{chars_old} characters "
        f"({100 * chars_new / max(chars_old, 1):.1f}%, whitespace collapsed); old sentences "
        f"whose words are found in order in the new text {kept_sentences}/{old_sentences} "
        f"({100 * kept_sentences / max(old_sentences, 1):.1f}%)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
