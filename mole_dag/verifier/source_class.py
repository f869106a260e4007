"""Source classes: peer-reviewed > primary > secondary > unknown, from a hand-written table
(mole_dag/data/source_classes.toml). Unknown is the default and the weakest."""

from __future__ import annotations

import tomllib
from functools import lru_cache
from importlib import resources

from mole_dag.core import SourceClass
from mole_dag.publisher import public_suffix, registrable_domain


@lru_cache(maxsize=1)
def _table() -> dict:
    raw = resources.files("mole_dag.data").joinpath("source_classes.toml").read_text("utf-8")
    return tomllib.loads(raw)


def weight(cls: SourceClass) -> float:
    return float(_table()["weights"][str(cls)])


STRENGTH = {
    SourceClass.PEER_REVIEWED: 4,
    SourceClass.PRIMARY: 3,
    SourceClass.LOCAL: 2,
    SourceClass.SECONDARY: 1,
    SourceClass.UNKNOWN: 0,
}


def class_of(
    url: str,
    *,
    doi: str | None = None,
    pmid: str | None = None,
    pmcid: str | None = None,
    arxiv_id: str | None = None,
) -> SourceClass:
    """Classify a source by its identifiers, then its registrable domain, then its suffix."""
    if doi or pmid or pmcid:
        return SourceClass.PEER_REVIEWED
    if arxiv_id:
        return SourceClass.PRIMARY  # a preprint: original work, not yet reviewed
    table = _table()
    domain = registrable_domain(url)
    if domain:
        for cls, domains in table["domains"].items():
            if domain in domains:
                return SourceClass(cls)
    suffix = public_suffix(url)
    if suffix and domain:
        for cls, suffixes in table["suffixes"].items():
            if suffix in suffixes:
                return SourceClass(cls)
    return SourceClass.UNKNOWN
