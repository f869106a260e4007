"""The writing prompt and the parser for its answer (the boundary: mole_dag.skills.prompting)."""

from __future__ import annotations

import re

from mole_dag.llm.jsonout import first_object, parse_items, string_field
from mole_dag.llm.provider import Call, Message, Tier
from mole_dag.sanitize import strip_controls
from mole_dag.skills.prompting import MAX_SUB_QUESTION_CHARS, flat, quoted
from mole_dag.skills.protocol import BoundSentence, WriteRequest, WrittenAnswer

WRITE_MAX_TOKENS = 700

# How much of one quote the writer sees. A guess, flagged: long enough for a paragraph-sized
# quote, short enough that thirty findings cannot size the call.
MAX_WRITE_QUOTE_CHARS = 800


WRITE_SYSTEM = """\
You write the answer paragraph of a research report. You get the question and numbered \
findings under the sub-questions they answer. Each finding is a passage quoted from a source, \
with its relevance to the question and its confidence (how far its sources can be trusted), \
both from 0 to 1.

First decide whether the findings answer the question: whether some finding states what it \
asks for (the name, number, date, place or fact), about what the question names. A finding on \
the same topic that does not state it does not answer it.

If they answer it, answer in two to five plain sentences, from the findings only. Each \
sentence must state only what the findings it names say, in their words as far as you can; \
name them by number in "findings". Prefer relevant, confident findings. Say when a finding is \
disputed, and do not present a superseded finding as current.

If they do not answer it, write no sentence: the report then says that the sources read do \
not answer the question and lists the closest findings as related.

Never write citations, source numbers, square brackets, markup, headings or lists: the \
citations are added for you from the findings you name.

Reply with JSON only, no prose: {"answered": true, "sentences": [{"text": "...", \
"findings": [1, 3]}]} or {"answered": false, "sentences": []}"""


_REF_MARK = re.compile(r"\[\s*\d+(?:\s*[,;–-]\s*\d+)*\s*\]")


def write_call(req: WriteRequest) -> Call:
    lines = [f"Question: {flat(req.question, 1000)}"]
    part: str | None = None
    for f in req.findings:
        # Findings come in report order, grouped by sub-question: each sub-question is written
        # once, above its findings, not repeated on every line (it would size the call).
        if f.sub_question != part:
            part = f.sub_question
            lines += ["", f"Sub-question: {flat(part, MAX_SUB_QUESTION_CHARS) or '(none)'}"]
        flags = [f"relevance {f.relevance:.2f}", f"confidence {f.confidence:.2f}"]
        if f.disputed:
            flags.append("disputed")
        if f.superseded:
            flags.append("superseded")
        # Reference markers copied from a page ("[7]") are removed here, in the prompt only:
        # a bracketed number invites the model to write citations, which it must not. The
        # report itself shows the quote with its markers escaped, never deleted.
        text = _REF_MARK.sub("", flat(f.text, MAX_WRITE_QUOTE_CHARS))
        # In curly quotes that nothing inside can close (skills/prompting.py).
        lines.append(f"{f.number}. ({'; '.join(flags)}) {quoted(text)}")
    if not req.findings:
        lines += ["", "Findings: (none)"]
    return Call(
        Tier.STRONG,
        (Message("user", "\n".join(lines)),),
        WRITE_MAX_TOKENS,
        system=WRITE_SYSTEM,
        json=True,
        purpose="write",
    )


# A finding list whose answer holds more sentences than this was not asked for: the rest are
# ignored. A guess, flagged as one: the prompt asks for two to five.
MAX_WRITE_SENTENCES = 8
MAX_SENTENCE_CHARS = 600


def _finding_numbers(value: object) -> tuple[int, ...]:
    """The finding numbers a sentence names. Anything that is not a whole number (a string
    like "[1]", a float, a bool) becomes 0, which names no finding, so the binding check drops
    the sentence and counts why instead of this parser guessing what was meant."""
    items = value if isinstance(value, list) else [value] if value is not None else []
    out: list[int] = []
    for v in items:
        if isinstance(v, int) and not isinstance(v, bool):
            out.append(v)
        elif isinstance(v, str) and v.strip().isdigit():
            out.append(int(v.strip()))
        else:
            out.append(0)
    return tuple(out)


def _declined(text: str) -> bool:
    """The writer said the findings do not answer the question: `"answered": false` (a JSON
    false, or the string "false"/"no"). Anything else is read as an answer, to be checked."""
    value = first_object(text).get("answered")
    if isinstance(value, str):
        return value.strip().casefold() in ("false", "no")
    return value is False


def parse_write(text: str) -> WrittenAnswer:
    """Sentences bound to finding numbers, or the writer's finding that nothing answers the
    question. Whatever is not in that shape is not guessed at: free prose yields no sentence
    (and says so), a truncated answer keeps its whole sentences. The text is kept as written
    (controls stripped): the binding check (mole_dag.output.binding) decides what may reach
    the report."""
    if _declined(text):
        return WrittenAnswer((), answered=False)
    if not re.search(r'"sentences"\s*:', text):
        # Free prose, or JSON of another shape. Not parse_items: its bare-array fallback
        # would read a prose "[1]" as an empty list and call the answer complete.
        return WrittenAnswer(
            (),
            "the answer's JSON had no sentences"
            if first_object(text)
            else "the answer was not the JSON asked for",
        )
    got = parse_items(text, "sentences")
    out: list[BoundSentence] = []
    for item in got.items[:MAX_WRITE_SENTENCES]:
        sentence = strip_controls(string_field(item, "text", "sentence"))[:MAX_SENTENCE_CHARS]
        out.append(BoundSentence(sentence, _finding_numbers(item.get("findings"))))
    problem = "" if got.complete else "the answer was cut off; its whole sentences were kept"
    return WrittenAnswer(tuple(out), problem)
