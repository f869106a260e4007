"""The relations an adjudicator may return, and what each one does to the graph.

Three, because three is what the graph reads: `contradicts` (penalises confidence, queues a
follow-up), `duplicate_of` (merges claims into a cluster, changing the publisher count) and
`neither`, which stores no edge. The retired `supports`, `refines` and `unrelated` are accepted
on the way in and normalised to `neither`: they built edges nothing read, and they were the
dominant source of adjudication error."""

from __future__ import annotations

import re

CONTRADICTS = "contradicts"
DUPLICATE_OF = "duplicate_of"
NEITHER = "neither"
LIVE = (CONTRADICTS, DUPLICATE_OF, NEITHER)
RETIRED = {"supports": NEITHER, "refines": NEITHER, "unrelated": NEITHER}
_ALIASES = {
    "duplicate": DUPLICATE_OF,
    "duplicates": DUPLICATE_OF,
    "contradict": CONTRADICTS,
    "contradiction": CONTRADICTS,
    "none": NEITHER,
}


def normalize_relation(value: str) -> str | None:
    """The live relation a verdict means, or None when it names nothing we know."""
    v = re.sub(r"[\s-]+", "_", value.strip().lower())
    if v in LIVE:
        return v
    if v in RETIRED:
        return RETIRED[v]
    return _ALIASES.get(v)
