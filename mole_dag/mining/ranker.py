"""The learned ranking: how likely a sentence is to hold the answer to a question, from general
features of the two, weighed by a logistic model fitted outside every question set of this
project (bench/fit_ranker.py, on the WikiQA answer-sentence data; the weights and the command
that made them are in mole_dag/data/ranker_weights.json).

The features, each a number a reader can check:
- words: the question's term weight in the sentence, BM25-saturated (relevance.evidence);
- words around it: the weight found only in the sentences beside it, and in the page title;
- meaning: the cosine of the sentence and the question in a sentence-embedding model
  (mole_dag.meaning), so an answer worded apart from its question still ranks (its
  neighbours' meaning added little on the fitting data, 1.1 against 8.1, and cost an embedding
  of every sentence beside a candidate: left out);
- the kind of answer asked for (a name, a number, a date) and whether the sentence only
  restates the question.
No weight here is chosen by hand; the file says what data chose them."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import TYPE_CHECKING

from mole_dag.mining.answer_types import AnswerType
from mole_dag.mining.relevance_records import Evidence, Relevance
from mole_dag.paths import index_dir

if TYPE_CHECKING:
    from mole_dag.meaning.store import VectorCache
    from mole_dag.mining.relevance import Query

FEATURES = ("words", "around", "title", "kind", "restates", "meaning")

_KIND = {
    AnswerType.PERSON: "a name, as asked",
    AnswerType.NAME: "a name, as asked",
    AnswerType.NUMBER: "a number, as asked",
    AnswerType.DATE: "a date, as asked",
    AnswerType.PLACE: "a place, as asked",
    AnswerType.ANY: "the kind of answer asked for",
}


@dataclass(frozen=True)
class Features:
    words: float
    around: float
    title: float
    kind: float
    restates: float
    meaning: float

    def vector(self) -> tuple[float, ...]:
        return tuple(float(getattr(self, f)) for f in FEATURES)


@dataclass(frozen=True)
class Model:
    intercept: float
    weights: dict[str, float]
    source: str  # what the weights were fitted on, for the explanation's reader
    # The probability MINE_RECALL of the fitting data's answer sentences reach (the extractive
    # miner's floor), and the best candidate's below which its question went unanswered.
    mine_floor: float = 0.0
    answer_floor: float = 0.0
    # The log-odds below a question's best candidate within which MINE_RECALL of the fitting
    # data's answer sentences lie: what a report keeps (near_best).
    report_gap: float = 0.0

    def logit(self, x: Features) -> float:
        return self.intercept + sum(
            self.weights[f] * v for f, v in zip(FEATURES, x.vector(), strict=True)
        )

    def probability(self, x: Features) -> float:
        z = self.logit(x)
        return 1.0 / (1.0 + math.exp(-z)) if z > -60 else 0.0


class RankerWeightsError(RuntimeError):
    """The fitted weights are missing or unreadable: one line, never a silent fallback."""


@cache
def model() -> Model:
    try:
        raw = resources.files("mole_dag.data").joinpath("ranker_weights.json").read_text()
        data = json.loads(raw)
        weights = {f: float(data["weights"][f]) for f in FEATURES}
        return Model(
            float(data["intercept"]),
            weights,
            str(data["fitted_on"]),
            float(data["mine_floor"]),
            float(data["answer_floor"]),
            float(data["report_gap"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise RankerWeightsError(
            f"the ranking weights (mole_dag/data/ranker_weights.json) cannot be read ({e}); "
            "reinstall mole-dag, or refit them with bench/fit_ranker.py"
        ) from e


def _log_odds(p: float) -> float:
    p = min(max(p, 1e-9), 1 - 1e-9)
    return math.log(p / (1 - p))


def near_best(value: float, best: float, m: Model | None = None) -> bool:
    """Whether a probability is close enough to the best one beside it to be listed with it:
    within the fitted report_gap in log-odds. A ratio of probabilities would cut a sentence at
    0.3 beside one at 0.9, which the model rates a near tie in log-odds terms."""
    if value <= 0:
        return False
    return _log_odds(value) >= _log_odds(best) - (m or model()).report_gap


def vectors() -> VectorCache:
    """The sentence vectors of this data folder, kept on disk beside the corpus index (under
    MOLE_HOME), so a text read again, by this session or a later one, is not embedded again."""
    env = os.environ
    return _vectors_of(env.get("MOLE_HOME", ""), env.get("XDG_DATA_HOME", ""), env.get("HOME", ""))


@lru_cache(maxsize=8)
def _vectors_of(_mole_home: str, _xdg: str, _home: str) -> VectorCache:
    """vectors() by the settings that name the data folder: asked once per claim and question,
    and resolving the folder's path each time was a fifth of a scoring stage."""
    # Imported here: numpy and onnxruntime load only when the learned ranking runs.
    from mole_dag.meaning.store import cache_for

    return cache_for(index_dir() / "meaning")


def meaning(question: str, sentence: str) -> float:
    """Cosine of the sentence and the question. Vectors are kept per text (vectors()), so a
    caller that warms them in one batch (warm) pays once."""
    vecs = vectors().get_many([question, sentence])
    return float(vecs[1] @ vecs[0])


def warm(texts: Sequence[str]) -> None:
    """Embed these in length-sorted batches now, so scoring them one by one later costs a
    lookup."""
    if texts:
        vectors().get_many(list(dict.fromkeys(texts)))


def keep() -> None:
    """Write this folder's new vectors to disk (once a stage, not once a chunk: the file is
    rewritten whole)."""
    vectors().save()


def features(ev: Evidence, meaning_own: float, rest: float = 1.0) -> Features:
    """The features of a sentence. `rest`: the share of the question's weight left once the
    words naming its document are set aside (rank); 1 where it names none (the fitting's case)."""
    return Features(
        words=min(ev.own / rest, 1.0),
        around=min(ev.around / rest, 1.0),
        title=min(ev.title / rest, 1.0),
        kind=1.0 if ev.cue else 0.0,
        restates=1.0 if ev.restates else 0.0,
        meaning=max(meaning_own, 0.0),
    )


_SHOWN = {
    "words": "words",
    "around": "words around it",
    "title": "words in the title",
    "meaning": "meaning",
}


def decided_by(x: Features, kind: AnswerType, m: Model | None = None) -> str:
    """The features that lifted the score most, as a reader checks them: "meaning 0.71 ·
    words 0.42 · a number, as asked". A sentence that restates the question says so."""
    m = m or model()
    parts: list[tuple[float, str]] = []
    for f, v in zip(FEATURES, x.vector(), strict=True):
        w = m.weights[f]
        if v <= 0 or w <= 0:
            continue
        label = _KIND[kind] if f == "kind" else f"{_SHOWN[f]} {v:.2f}"
        if f != "restates":
            parts.append((w * v, label))
    shown = [label for _, label in sorted(parts, key=lambda p: -p[0])[:3]]
    if x.restates and m.weights["restates"] < 0:
        shown.append("restates the question")
    return " · ".join(shown) if shown else "nothing of the question"


def rank(query: Query, ev: Evidence, sentence: str) -> Relevance:
    """A sentence's relevance to a question: the fitted model's probability that it holds the
    answer. Where the question names its document (Query.scope), the sentence is scored on the
    rest of the question and scaled by how much of the named document's words its document
    holds, as relevance.weigh does: within the document the naming words order nothing."""
    rest = 1.0 - ev.scoped if 0.0 < ev.scoped < 1.0 else 1.0
    x = features(ev, meaning(query.text, sentence), rest)
    m = model()
    value = m.probability(x)
    if rest < 1.0:
        value *= rest + ev.scope
    return Relevance(
        round(min(max(value, 0.0), 1.0), 4),
        ev.own,
        ev.around,
        ev.cue,
        ev.restates,
        ev.scope,
        decided=decided_by(x, query.kind, m),
    )
