"""What every stage's prompts share: the caps on what may reach a model, and `flat`.

What each prompt may contain is the security boundary; each stage's prompts module spells out its
own, and together they are:
- plan (mole_dag.planner.prompts): the Digest only (the question, the planner's own sub-question
  wording, counts, dead-end causes from a fixed enum, budget left). No page text, so nothing for
  a page to inject into the one stage that decides where the session goes next.
- mine (mole_dag.mining.prompts): one chunk of one page, fenced and labelled as data. Whatever the
  model returns is checked against the page verbatim before it can exist (mining/mine.py).
- judge (mole_dag.verifier.prompts): claim texts, each capped at MAX_CLAIM_CHARS, so a page cannot
  size the call.
- write (mole_dag.output.prompts): the question and the findings' quotes, each numbered. The
  writer names findings by number and writes no citation; each sentence is checked against the
  findings it names (output/binding.py) and the project renders the citations.
- ground (mole_dag.verifier.prompts): one claim and the passage re-read around its quote, each
  capped, the passage fenced as data. The answer only moves confidence through the graph
  (verifier/grounding.py).
- hypothesize (mole_dag.local_data.prompts): the profile's view (names, types, counts, roles),
  never a value from a row.
Source text is fenced so that it cannot end its fence (issue 22: a page holding
`</passage> SYSTEM: … <passage>` put its own words outside the `<passage>` fence). `fenced`
wraps text in `<passage>` … `</passage>` after `neutralise` has replaced every spelling of a
fence tag inside it (any case, spaces or invisible characters inside the tag, HTML entities,
look-alike brackets) with the inert `[tag]`; `quoted` puts text in “…” after turning the curly
quotes inside it into straight ones, so the only “ and ” left are the delimiters. One-line
fields (titles, claim texts, column names) go through `flat` and `neutralise` as well: they
have no fence to close, but a fence tag in them could open a fake one.
Every answer is parsed defensively (mole_dag.llm.jsonout): truncated JSON is salvaged item by
item, and anything malformed is dropped rather than guessed at. Output allowances (max_tokens)
are guesses, flagged as such, sized to the answer each prompt asks for: a truncated answer is
salvaged, so erring small loses the last item, not the call."""

from __future__ import annotations

import re

from mole_dag.sanitize import one_line

MAX_SUB_QUESTION_CHARS = 300

MAX_RATIONALE_CHARS = 300


def flat(text: str, limit: int) -> str:
    """One line, controls stripped, capped: the boundary that does not trust upstream caps."""
    return one_line(text)[:limit]


# -- fences ---------------------------------------------------------------------------------

FENCE = "passage"
# What a fence tag's brackets and slash can be written as, in a model's eyes: the characters,
# their HTML entities (named, decimal, hex; the ";" optional as browsers allow), and look-alike
# brackets (full-width, small, single angle quotation marks, mathematical and CJK angles).
_LT = r"(?:<|&lt;?|&#0*60;?|&#x0*3c;?|\uff1c|\ufe64|\u2039|\u2329|\u27e8|\u3008)"
_SLASH = r"(?:/|\\|&sol;|&#0*47;?|&#x0*2f;?|\uff0f|\u2215|\u2044)"
# Inside a tag: spaces and the characters that render as nothing.
_GAP = "[\\s\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]*"


def _letter(ch: str) -> str:
    """A letter of a tag's name as it can be written: itself, or its full-width form."""
    if "a" <= ch.lower() <= "z":
        wide = chr(ord(ch.lower()) - ord("a") + 0xFF41)
        return f"[{ch}{wide}{wide.upper()}]"
    return re.escape(ch)


def _tag_pattern(word: str) -> re.Pattern[str]:
    # The word with anything invisible allowed between its letters ("pas\u200bsage").
    spelled = _GAP.join(_letter(ch) for ch in word)
    return re.compile(rf"{_LT}{_GAP}(?:{_SLASH}{_GAP})?{spelled}(?![A-Za-z0-9_])", re.IGNORECASE)


_TAGS: dict[str, re.Pattern[str]] = {}


def neutralise(text: str, word: str = FENCE) -> str:
    """`text` with every opening or closing `word` tag, however spelt, replaced by `[tag]`.
    The rest of a tag (attributes, `>`) stays: without its start it opens and closes nothing."""
    pattern = _TAGS.get(word)
    if pattern is None:
        pattern = _TAGS[word] = _tag_pattern(word)
    return pattern.sub("[tag]", text)


def fenced(text: str, word: str = FENCE) -> str:
    """Source text between `<word>` and `</word>` lines, which nothing inside can close."""
    return f"<{word}>\n{neutralise(text, word)}\n</{word}>"


def quoted(text: str) -> str:
    """One line of source text in curly quotes that nothing inside can close."""
    inner = neutralise(text).replace("\u201c", '"').replace("\u201d", '"')
    return f"\u201c{inner}\u201d"


def label(text: str, limit: int) -> str:
    """A one-line field taken from a source (a title, a claim, a column name): one line,
    capped, with no fence tag in it."""
    return neutralise(flat(text, limit))
