"""Near-synonyms: the other words a source may use for a question's word. A researcher asks
how the order is "chosen" and the paper says it is "selected"; asks to "roughly" what resolution
and the FAQ says "approximately"; asks for "families" of tests and the introduction names
"classes". Exact terms miss each of these.

The table is WordNet 3.0's (mole_dag/data/wordnet_near.tsv.gz, made by
scripts/wordnet_near.py): two words are near when they share a synset among the first, tagged
senses of both. Relevance credits a near word at a discount (mining.relevance.NEAR_SHARE) and
never more than the near word's own weight, so a common word ("class" in R documentation)
cannot stand in for a rare one."""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from functools import cache
from importlib import resources

TABLE = "wordnet_near.tsv.gz"


@dataclass(frozen=True)
class Lexicon:
    """Terms as mole_dag.text.stem makes them."""

    near: dict[str, frozenset[str]]
    # An irregular form's lemma ("chosen" -> "choos", "kept" -> "keep").
    lemma: dict[str, str]

    def base(self, term: str) -> str:
        return self.lemma.get(term, term)

    def near_terms(self, term: str) -> frozenset[str]:
        """The near-synonyms of a term: its own and, for an irregular form, its lemma's (and
        the lemma itself)."""
        own = self.near.get(term, frozenset())
        lemma = self.lemma.get(term)
        if lemma is None:
            return own
        return own | self.near.get(lemma, frozenset()) | {lemma}


def parse(text: str) -> Lexicon:
    near: dict[str, frozenset[str]] = {}
    lemma: dict[str, str] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("\t")
        if key.startswith("="):
            lemma[key[1:]] = value
        else:
            near[key] = frozenset(value.split())
    return Lexicon(near, lemma)


@cache
def lexicon() -> Lexicon:
    """The shipped table, read once per process (0.36 MB compressed)."""
    data = resources.files("mole_dag.data").joinpath(TABLE).read_bytes()
    return parse(gzip.decompress(data).decode("utf-8"))
