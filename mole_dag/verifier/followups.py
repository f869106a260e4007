"""Follow-up leads for live contradictions: research the disagreement once more, within caps.

Deterministic (contradictions taken in canonical pair order), so a cassette replays and two runs
of one session queue the same work. The verifier proposes; the caller queues."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mole_dag.text import STOPWORDS, stem, words

# A follow-up of a follow-up of a follow-up is drift, not diligence.
DEFAULT_MAX_DEPTH = 3
# Per root claim, counted across the whole session: a disagreement that survives three attempts
# to settle it is a real disagreement, and the honest thing is to report it as disputed.
DEFAULT_MAX_PER_ROOT = 3
# Per verification pass. Small on purpose: passes repeat each round, so follow-ups accumulate
# anyway, and a graph full of disagreement could otherwise queue more work than the budget runs.
DEFAULT_MAX_PER_PASS = 2
QUERY_TERMS = 8


@dataclass(frozen=True)
class ClaimInfo:
    id: str
    text: str
    sub_question_id: str
    depth: int  # depth of the lead that found it
    root: str  # root claim of the follow-up chain it belongs to (itself when none)


@dataclass(frozen=True)
class FollowUp:
    sub_question_id: str
    query: str
    depth: int
    root_claim_id: str
    because: str


def _content_words(text: str) -> list[str]:
    return list(
        dict.fromkeys(w for w in words(text) if w not in STOPWORDS and len(w) > 1 or w.isdigit())
    )


def follow_up_query(a: str, b: str) -> str:
    """Words both claims use (the topic) first, then the words they differ on: a search for the
    evidence that would settle which one holds. Surface words, not stems: this goes to search
    engines."""
    wa, wb = _content_words(a), _content_words(b)
    stems_a, stems_b = {stem(w) for w in wa}, {stem(w) for w in wb}
    shared = [w for w in wa if stem(w) in stems_b]
    differ = [w for w in wa if stem(w) not in stems_b] + [w for w in wb if stem(w) not in stems_a]
    keep_differ = differ[:3]  # the crux: the figure or the direction they disagree on
    return " ".join(shared[: QUERY_TERMS - len(keep_differ)] + keep_differ)


def propose(
    contradictions: Sequence[tuple[str, str]],
    claims: dict[str, ClaimInfo],
    existing_per_root: dict[str, int],
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_per_root: int = DEFAULT_MAX_PER_ROOT,
    max_per_pass: int = DEFAULT_MAX_PER_PASS,
) -> list[FollowUp]:
    out: list[FollowUp] = []
    per_root = dict(existing_per_root)

    def text_of(x: str) -> str:
        got = claims.get(x)
        return got.text if got else ""

    # Pairs, and the two claims within a pair, in the order of their wording, not their ids:
    # ids hash the session id, and the per-pass cap, the query's word order and the follow-up's
    # sub-question all follow this order (issue 10 item 6). The ids settle exact ties only.
    pairs = {tuple(sorted(p)) for p in contradictions}
    ordered = sorted(
        (sorted(p, key=lambda x: (text_of(x), x)) for p in pairs),
        key=lambda p: ([text_of(x) for x in p], p),
    )
    for a_id, b_id in ordered:
        if len(out) >= max_per_pass:
            break
        a, b = claims.get(a_id), claims.get(b_id)
        if a is None or b is None:
            continue
        depth = max(a.depth, b.depth) + 1
        if depth > max_depth:
            continue
        root = min(a.root, b.root)
        if per_root.get(root, 0) >= max_per_root:
            continue
        query = follow_up_query(a.text, b.text)
        if not query:
            continue
        per_root[root] = per_root.get(root, 0) + 1
        out.append(
            FollowUp(
                a.sub_question_id,
                query,
                depth,
                root,
                # Canonical (id) order: how the store and the
                # already-followed check name the pair.
                "contradiction between {} and {}".format(*sorted((a_id, b_id))),
            )
        )
    return out
