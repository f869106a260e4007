"""The report's Markdown, answer first: the question, the banners, the Answer, one section per
sub-question listing its findings, then disputes, superseded findings, the local-data appendix,
sources, what was not read, and spend. A finding is shown in the source's own words (its
stored quote), with Markdown escaped, never with the miner's paraphrase; its citations are
rendered from its sources' numbers (mole_dag.output.citations), never written by the writer."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mole_dag.actors.local import corpus_path, relative_to_corpus
from mole_dag.output.binding import Binding
from mole_dag.output.citations import cite
from mole_dag.output.selection import Finding
from mole_dag.output.unread import UnreadFile
from mole_dag.output.wording import counted, escape_markdown, fmt_amount
from mole_dag.sanitize import one_line, strip_controls
from mole_dag.store import utcnow
from mole_dag.store.records import SessionRow, SourceRow

# Headings of a report whose findings do not answer its question: they are related, not answers.
RELATED_PREFIX = "Related findings: "


def _cites(numbers: Iterable[int], pages: dict[int, int] | None = None) -> str:
    """Citations as printed: "[3][4]", or "[3] (p. 12) [4]" where a finding was quoted from a page
    of a PDF (issue 19): spaced once a page is among them, so each page sits after its own
    number."""
    pages = pages or {}
    numbers = list(numbers)
    parts = [cite(n, pages.get(n)) for n in numbers]
    return (" " if any(n in pages for n in numbers) else "").join(parts)


def render_answer(binding: Binding, findings: list[Finding]) -> str:
    """The answer: each kept sentence with the citations of the findings it names. A sentence
    that is a finding's quote is printed in quotation marks, escaped. An answer made only of
    quotes (the extractive answer) is a list, one quote an item: a quote of two sentences ("...
    can not be converted to bool. Instead one must use is_true ...") stays one statement with
    its citation after it, where a paragraph would run the quotes of several sources together
    and leave a reader to find where each ends. A written answer is a paragraph."""
    by_no = {f.number: f for f in findings}
    out: list[str] = []
    for i, s in enumerate(binding.kept):
        cites = list(dict.fromkeys(c for n in s.findings for c in by_no[n].citations))
        pages: dict[int, int] = {}
        for n in s.findings:
            for c, page in by_no[n].pages.items():
                pages.setdefault(c, page)
        others = sorted({d for n in s.findings for d in by_no[n].disputed_with} - set(s.findings))
        disputed = (" (disputed by " + ", ".join(f"#{d}" for d in others) + ")") if others else ""
        text = escape_markdown(one_line(s.text))
        if i in binding.quoted:
            out.append(f"\u201c{text}\u201d {_cites(cites, pages)}{disputed}")
            continue
        end = text[-1] if text[-1] in ".!?" else "."
        body = text[:-1] if text[-1] in ".!?" else text
        out.append(f"{body} {_cites(cites, pages)}{disputed}{end}")
    if out and len(binding.quoted) == len(binding.kept):
        return "\n".join(f"- {line}" for line in out)
    return " ".join(out)


def render(
    *,
    session: SessionRow,
    answer: str,
    findings: list[Finding],
    numbered: dict[int, SourceRow],
    banners: list[str],
    spend_by_role: list[dict[str, Any]],
    appendix: list[str] | None = None,
    answered: bool = True,
    why: str = "",
    preface: list[str] | None = None,
    not_read: list[UnreadFile] | None = None,
) -> str:
    """The report's Markdown. When the findings do not answer the question (`answered` False),
    the Answer section is the plain notice in `answer`, with `why` under it, and every section
    of findings is headed as related."""
    unit = session.unit
    out: list[str] = [f"# {one_line(session.question)}", ""]
    out.append(
        f"Session `{session.id}` · provider `{session.provider}` · "
        f"budget {fmt_amount(session.total, unit)} · "
        f"generated {utcnow():%Y-%m-%d %H:%M} UTC"
    )
    out.append("")
    for b in banners:
        out += [f"> {one_line(b)}", ""]
    out += preface or []  # a rerun's "What changed since" section (mole_dag/output/changes.py)
    # One line, or the lines of a list of quotes (render_answer), each made one line.
    out += ["## Answer", "", *(one_line(line) for line in answer.split("\n")), ""]
    if why:
        out += [f"> Why: {one_line(why)}.", ""]

    sections: dict[str, list[Finding]] = {}
    for f in findings:
        sections.setdefault(f.sub_question_id, []).append(f)
    label = "" if answered else RELATED_PREFIX
    question = " ".join(session.question.split())
    for group in sections.values():
        heading = one_line(group[0].sub_question)
        # The question itself as a sub-question (always the first, often the only one): its
        # heading would repeat the title right under the Answer (issue 33).
        if heading.rstrip("?？. ").casefold() == question.rstrip("?？. ").casefold():
            out += [f"## {label.rstrip(': ') or 'Findings'}", ""]
        else:
            out += [f"## {label}{heading}", ""]
        for f in group:
            flags = []
            if f.superseded:
                by = (
                    ", ".join([*(f"#{n}" for n in f.superseded_by), *f.newer_sources])
                    or "a newer finding"
                )
                flags.append(f"**superseded** by {by}")
            if f.disputed_with:
                flags.append("**disputed** by " + ", ".join(f"#{n}" for n in f.disputed_with))
            flag = f" ({'; '.join(flags)})" if flags else ""
            text = escape_markdown(f.text)
            if f.superseded:
                text = f"~~{text}~~"
            out.append(f"{f.number}. {text} {_cites(f.citations, f.pages)}{flag}  ")
            why = one_line(f.explanation)
            said = one_line(f.relevance_explanation)
            # "question: 0.62 = ..." reads on as "relevance to the question: ..."; anything
            # else ("not scored") as itself.
            if said.startswith("question:"):
                why += f"; relevance to the {said}"
            elif said:
                why += f"; relevance: {said}"
            out.append(f"   relevance {f.relevance:.2f} · confidence {f.confidence:.2f} — {why}")
        out.append("")

    disputes = sorted(
        {(min(f.number, o), max(f.number, o)) for f in findings for o in f.disputed_with}
    )
    by_no = {f.number: f for f in findings}
    if disputes:
        out += ["## Disputed", ""]
        for lo, hi in disputes:
            fa, fb = by_no[lo], by_no[hi]
            out.append(f"- #{lo} {escape_markdown(fa.text)} {_cites(fa.citations, fa.pages)}")
            out.append(
                f"  - versus #{hi} {escape_markdown(fb.text)} {_cites(fb.citations, fb.pages)}"
            )
        out.append("")

    sup = [f for f in findings if f.superseded]
    if sup:
        out += ["## Superseded", ""]
        for f in sup:
            newer = (
                ", ".join(
                    [
                        *(
                            f"#{n} {_cites(by_no[n].citations, by_no[n].pages)}"
                            for n in f.superseded_by
                        ),
                        *(f"the newer source {s}" for s in f.newer_sources),
                    ]
                )
                or "a newer source"
            )
            out.append(
                f"- #{f.number} {_cites(f.citations, f.pages)} is superseded by {newer}: the "
                "sources disagree and are more than a year apart."
            )
        out.append("")

    out += appendix or []  # e.g. the local-data section (mole_dag/output/local_data_section.py)
    out += ["## Sources", ""]
    if not numbered:
        out.append("No source is cited.")
    for n, s in sorted(numbered.items()):
        name = one_line(s.publisher_name or "")
        who = f"{name} ({s.publisher})" if name else s.publisher
        local = relative_to_corpus(s.locator or s.url, session.corpus) or corpus_path(
            s.url, s.locator
        )
        link = f" <{one_line(s.url)}>"
        if local is not None:
            # A file of the corpus folder (issue 19): its path relative to the folder, and no
            # absolute file:// link (issue 33: it told readers where the author keeps files).
            who = f"local file {escape_markdown(one_line(local))}"
            link = ""
        date = f", {s.published:%Y-%m-%d}" if s.published else ""
        title = escape_markdown(one_line(s.title or local or s.url))
        out.append(f"[{n}] {title} — {who}, {s.source_class}{date}.{link}  ")
    out.append("")

    if not_read:
        # What the answer could not draw on: a reader should know the folder held more than
        # was read (issue 33). After the sources, with them: it says what was not one.
        head = f"{counted(len(not_read), 'file was', 'files were')} not read:"
        out += ["## Not read", "", head, ""]
        for u in not_read:
            out.append(f"- {escape_markdown(u.shown)}: {escape_markdown(u.reason)}")
        out.append("")

    out += ["## Spend", ""]
    if spend_by_role:
        for r in spend_by_role:
            calls = counted(int(r["calls"]), "call")
            if int(r["spent"]) == 0:
                # Nothing paid (the extractive provider, a free local model): "0 tokens over
                # 891 calls" read as a count of tokens that were never asked for (issue 33).
                out.append(f"- {r['role']}: {calls}, nothing spent")
            else:
                spent = fmt_amount(int(r["spent"]), unit)
                out.append(f"- {r['role']}: {spent} over {calls}")
    else:
        out.append("- no calls recorded")
    out.append("")
    return strip_controls("\n".join(out))
