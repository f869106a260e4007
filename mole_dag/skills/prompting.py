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
Every answer is parsed defensively (mole_dag.llm.jsonout): truncated JSON is salvaged item by
item, and anything malformed is dropped rather than guessed at. Output allowances (max_tokens)
are guesses, flagged as such, sized to the answer each prompt asks for: a truncated answer is
salvaged, so erring small loses the last item, not the call."""

from __future__ import annotations

from mole_dag.sanitize import one_line

MAX_SUB_QUESTION_CHARS = 300

MAX_RATIONALE_CHARS = 300


def flat(text: str, limit: int) -> str:
    """One line, controls stripped, capped: the boundary that does not trust upstream caps."""
    return one_line(text)[:limit]
