"""The facets of a local corpus: the terms its documents keep coming back to, as words a reader
would write, for planning a broad question ("What do the sources say?") from the corpus itself."""

from __future__ import annotations

import math
from collections import Counter

from mole_dag.actors.bm25 import BM25
from mole_dag.core import Document
from mole_dag.text import stem, terms, words

# Words that name the work rather than its subject. A guess, flagged as one.
_GENERIC = frozenset(
    stem(w)
    for w in (
        "people study studies research result results finding findings data time year years "
        "also report reported analysis participants author authors paper article page chapter "
        "association associated link linked effect effects evidence group groups hour hours day "
        "days week weeks month months minute minutes percent"
    ).split()
)
# A term in more than this share of the documents is the corpus's subject ("coffee" in a folder
# about coffee), not one of its facets; neither are its other forms ("drinkers" beside
# "drinking"). A guess, flagged as one.
SUBJECT_SHARE = 0.8


# Documents a wide question's facets are read from: enough that a facet few documents share
# (a supersession about cancer in a corpus about coffee) still counts. A guess, flagged as one.
TOPIC_DOCS = 50


def topics(
    index_terms: list[list[str]], documents: list[Document], bm25: BM25, k: int, about: str = ""
) -> tuple[str, ...]:
    """The corpus's dominant terms, as words a reader would write: a term's occurrences
    over the corpus times its inverse document frequency (the terms documents keep coming
    back to, not the ones every document has), minus words every study uses. For planning
    a broad question ("What do the sources say?") from the corpus itself."""
    docs = index_terms
    exclude = set(_GENERIC)
    if about:
        # Topics of the documents a search for `about` finds, minus its own words: the
        # facets of a broad question, read off the corpus rather than a fixed list.
        exclude |= set(terms(about))
        docs = [index_terms[i] for i, _ in bm25.top(terms(about), TOPIC_DOCS)]
    n = len(docs)
    if n == 0:
        return ()
    every: Counter[str] = Counter()
    for doc_terms in docs:
        every.update(set(doc_terms))
    subject = {t for t, c in every.items() if c > SUBJECT_SHARE * n and len(t) > 3}
    exclude |= subject
    # Other forms of an excluded word: "drinker" and "drinking" beside "drink".
    roots = sorted((t for t in exclude if len(t) >= 4), key=len)

    def excluded(t: str) -> bool:
        return t in exclude or any(t.startswith(r) for r in roots)

    df: Counter[str] = Counter()
    tf: Counter[str] = Counter()
    for doc_terms in docs:
        kept = [t for t in doc_terms if len(t) > 3 and t.isalpha() and not excluded(t)]
        df.update(set(kept))
        tf.update(kept)
    ranked = sorted(
        ((tf[t] * math.log(1 + n / c), t) for t, c in df.items() if c > 1 or n == 1),
        key=lambda x: (-x[0], x[1]),
    )
    top = [t for _, t in ranked[: k * 3]]
    # The commonest word form of each stem ("caffein" reads as "caffeine"), and pairs that
    # are one phrase ("blood pressure") joined, so one facet is not planned twice.
    forms: dict[str, Counter[str]] = {t: Counter() for t in top}
    pairs: Counter[tuple[str, str]] = Counter()
    for doc in documents[:200]:
        prev = ""
        for w in words(f"{doc.title} {doc.text}"):
            st = stem(w)
            if st in forms:
                forms[st][w] += 1
                if prev in forms and prev != st:
                    pairs[(prev, st)] += 1
            prev = st
    phrase: dict[str, str] = {}
    for (a, b), c in pairs.most_common():
        # A guess, flagged as one: joined when most of the rarer word's uses are in the pair.
        if a not in phrase and b not in phrase and c >= 0.5 * min(tf[a], tf[b]):
            phrase[a] = phrase[b] = f"{a} {b}"
    out: list[str] = []
    for t in top:
        stems = phrase.get(t, t).split()
        word = " ".join(forms[s].most_common(1)[0][0] if forms[s] else s for s in stems)
        if word not in out:
            out.append(word)
    return tuple(out[:k])
