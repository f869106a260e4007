"""Retrieval by meaning over a local folder (issue 30, item 4): BM25 chooses the candidates,
the meaning model re-ranks them by their best passage, fused by reciprocal rank (k = 60); the
passages' vectors are kept beside the index, so the same folder and questions embed nothing the
second time; a missing model is one clear error at open. The documents are made up here."""

from __future__ import annotations

from pathlib import Path

import pytest

import mole_dag.actors.local as local
import mole_dag.meaning.embed as embed_mod
import mole_dag.meaning.store as store_mod
from mole_dag.actors.local import CorpusError, LocalCorpus
from mole_dag.meaning.rerank import RRF_K, fuse, passages

QUESTION = "How do I stop my laptop from overheating?"
DOCS = {
    # Shares the question's words, says nothing of heat.
    "stickers.txt": "Laptop stickers. Stop by our shop to decorate your laptop. Every laptop "
    "sticker we sell is vinyl, and we stop taking orders at noon. My laptop has six of them.",
    # The answer, worded apart from the question: one shared word, second by BM25.
    "cooling.txt": "Keeping a laptop cool. Clean the fan vents with compressed air, keep the "
    "laptop on a hard flat surface rather than a blanket, and use a cooling pad so the "
    "processor does not get too hot.",
    # Shares a word, off the subject, nearer it in meaning than the stickers; third by BM25.
    "battery.txt": "Laptop batteries wear out. A battery loses capacity after a few hundred "
    "charge cycles, and a swollen battery should be replaced at once.",
}


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new process's state: no corpus opened and no vector cache loaded yet."""
    monkeypatch.setattr(local, "_OPENED", {})
    monkeypatch.setattr(store_mod, "_CACHES", {})


def test_reciprocal_rank_fusion_sums_one_over_k_plus_rank() -> None:
    fused = dict(fuse([["a", "b", "c"], ["c", "b"]]))
    assert fused["a"] == pytest.approx(1 / (RRF_K + 1))
    assert fused["b"] == pytest.approx(2 / (RRF_K + 2))
    assert fused["c"] == pytest.approx(1 / (RRF_K + 3) + 1 / (RRF_K + 1))
    # Ties go to the first ranking's order.
    assert [k for k, _ in fuse([["x", "y"], ["y", "x"]])] == ["x", "y"]


def test_passages_are_whole_sentences_under_the_word_bound() -> None:
    text = " ".join(f"Sentence number {i} has exactly seven words." for i in range(30))
    got = passages(text, words=20)
    assert all(len(p.split()) <= 21 for p in got)
    assert " ".join(got) == " ".join(text.split())


def test_meaning_lifts_the_answer_worded_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_process: None
) -> None:
    folder = _folder(tmp_path)
    monkeypatch.setattr(local, "MEANING", False)
    by_words = LocalCorpus.open(folder, cache_dir=tmp_path / "index")
    assert by_words.search(QUESTION, 1)[0][0].metadata["path"] == "stickers.txt"
    monkeypatch.setattr(local, "_OPENED", {})
    monkeypatch.setattr(local, "MEANING", True)
    by_meaning = LocalCorpus.open(folder, cache_dir=tmp_path / "index")
    hits = by_meaning.search(QUESTION, 1)
    assert hits[0][0].metadata["path"] == "cooling.txt"


def test_an_unchanged_folder_embeds_nothing_the_second_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_process: None
) -> None:
    folder = _folder(tmp_path)
    monkeypatch.setattr(local, "MEANING", True)
    index = tmp_path / "index"
    corpus = LocalCorpus.open(folder, cache_dir=index)
    # Indexing embeds nothing: passages are embedded when a query reads them.
    assert store_mod.cache_for(index / "meaning").embedded == 0
    first = [d.metadata["path"] for d, _ in corpus.search(QUESTION, 3)]
    assert store_mod.cache_for(index / "meaning").embedded > 0
    # A new process over the same folder: the index and the vectors come from disk.
    monkeypatch.setattr(local, "_OPENED", {})
    monkeypatch.setattr(store_mod, "_CACHES", {})
    again = LocalCorpus.open(folder, cache_dir=index)
    second = [d.metadata["path"] for d, _ in again.search(QUESTION, 3)]
    assert second == first
    assert store_mod.cache_for(index / "meaning").embedded == 0


def test_a_missing_model_is_one_clear_error_at_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_process: None
) -> None:
    folder = _folder(tmp_path)
    monkeypatch.setattr(local, "MEANING", True)
    monkeypatch.setattr(embed_mod, "_EMBEDDER", None)
    monkeypatch.setattr(embed_mod, "model_file", lambda: tmp_path / "gone.onnx")
    with pytest.raises(CorpusError) as exc:
        LocalCorpus.open(folder, cache_dir=tmp_path / "index")
    line = str(exc.value)
    assert "\n" not in line and "meaning model is missing" in line and "gone.onnx" in line
