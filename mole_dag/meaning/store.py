"""Sentence vectors kept on disk, so an unchanged folder embeds nothing the second time
(issue 30, item 4).

A VectorCache is a folder (the local corpus's lives beside its index, under paths.index_dir())
holding one file, vectors-<model>.npy: a numpy array of (key, vector) rows, the key being the
sha1 of the text in hex and the vector float16 (half the disk of float32; cosines move by
about 1e-3, far below what separates a paraphrase from an unrelated sentence). The file is
rewritten whole and atomically (diskfull.write_bytes_atomic), one file so that keys and vectors
can never come from two different saves. Its name carries the model's sha256 and the
truncation, so vectors from another model are never read as this one's; a damaged file is
discarded with a warning and rebuilt, never a crash."""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mole_dag.diskfull import write_bytes_atomic
from mole_dag.meaning.embed import DIM, MAX_TOKENS, MODEL_SHA256, Vectors, embedder

log = logging.getLogger("mole.meaning")

_ROW = np.dtype([("key", "S40"), ("vec", "<f2", (DIM,))])
FILE_NAME = f"vectors-{MODEL_SHA256[:12]}-{MAX_TOKENS}.npy"


def content_key(text: str) -> str:
    """The key a text's vector is stored under: sha1 of its UTF-8, in hex."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


class VectorCache:
    """Vectors of texts, embedded once and kept in FOLDER. `get_many` embeds only the texts
    not already there; `save` writes the file when something was added or dropped."""

    def __init__(self, folder: Path, embed: Callable[[Sequence[str]], Vectors] | None = None):
        self.folder = folder
        self.file = folder / FILE_NAME
        self._embed = embed
        # One get_many at a time: the embedding of the misses runs under the lock too, so two
        # threads asking for the same new texts embed them once. The corpus index is built by
        # one thread; the model itself is not slowed by this.
        self._lock = threading.Lock()
        self._keys: list[bytes] = []
        self._index: dict[bytes, int] = {}
        self._vecs: npt.NDArray[np.float16] = np.empty((0, DIM), dtype=np.float16)
        self._dirty = False
        self.embedded = 0  # texts this cache sent to the model, for tests and logs
        self._load()

    def __len__(self) -> int:
        return len(self._keys)

    def _load(self) -> None:
        try:
            rows = np.load(self.file, allow_pickle=False)
        except FileNotFoundError:
            return
        except (OSError, ValueError, EOFError) as exc:
            self._discard(f"{type(exc).__name__}: {exc}")
            return
        if (
            not (isinstance(rows, np.ndarray) and rows.dtype == _ROW and rows.ndim == 1)
            or not np.isfinite(rows["vec"]).all()
        ):
            self._discard("not a vector cache")
            return
        self._keys = [bytes(k) for k in rows["key"]]
        self._index = {k: i for i, k in enumerate(self._keys)}
        if len(self._index) != len(self._keys):
            self._discard("a key stored twice")
            return
        self._vecs = np.ascontiguousarray(rows["vec"])

    def _discard(self, why: str) -> None:
        log.warning("meaning vector cache %s is unreadable (%s); rebuilding it", self.file, why)
        self._keys, self._index = [], {}
        self._vecs = np.empty((0, DIM), dtype=np.float16)
        self._dirty = True  # the damaged file is replaced at the next save

    def get_many(self, texts: Sequence[str]) -> Vectors:
        """float32 array of shape (len(texts), DIM): the texts' vectors, in order, embedding
        only those not in the cache. Every vector comes back through float16, fresh or not,
        so a text gets the same vector the first time and every time after."""
        keys = [content_key(t).encode("ascii") for t in texts]
        with self._lock:
            missing: dict[bytes, str] = {}
            for key, text in zip(keys, texts, strict=True):
                if key not in self._index:
                    missing.setdefault(key, text)
            if missing:
                embed = self._embed or embedder().embed
                fresh = np.asarray(embed(list(missing.values())), dtype=np.float16)
                if fresh.shape != (len(missing), DIM):
                    raise ValueError(f"embedder returned shape {fresh.shape} for {len(missing)}")
                start = len(self._keys)
                self._grow(start + len(missing))
                self._vecs[start : start + len(missing)] = fresh
                self._keys.extend(missing)
                self._index.update((k, start + i) for i, k in enumerate(missing))
                self.embedded += len(missing)
                self._dirty = True
            rows = [self._index[k] for k in keys]
            return self._vecs[rows].astype(np.float32)

    def _grow(self, n: int) -> None:
        # Room doubles, so a folder embedded a document at a time costs linear copying, not
        # quadratic.
        if n > len(self._vecs):
            room = np.empty((max(n, 2 * len(self._vecs)), DIM), dtype=np.float16)
            room[: len(self._keys)] = self._vecs[: len(self._keys)]
            self._vecs = room

    def retain(self, texts: Iterable[str]) -> None:
        """Drop the vectors of every text not in TEXTS (a folder's files that are gone)."""
        keep = {content_key(t).encode("ascii") for t in texts}
        with self._lock:
            rows = [i for i, k in enumerate(self._keys) if k in keep]
            if len(rows) == len(self._keys):
                return
            self._keys = [self._keys[i] for i in rows]
            self._index = {k: i for i, k in enumerate(self._keys)}
            self._vecs = self._vecs[rows]
            self._dirty = True

    def save(self) -> None:
        """Write the file if anything changed since it was read. A file that cannot be written
        only costs embedding again next time (a warning); a full disk raises DiskFull, as the
        corpus index's cache does."""
        with self._lock:
            if not self._dirty:
                return
            rows = np.empty(len(self._keys), dtype=_ROW)
            rows["key"] = self._keys
            rows["vec"] = self._vecs[: len(self._keys)]
            buf = io.BytesIO()
            np.save(buf, rows, allow_pickle=False)
            try:
                write_bytes_atomic(self.file, buf.getvalue())
            except OSError as exc:
                log.warning("could not cache meaning vectors at %s: %s", self.file, exc.strerror)
                return
            self._dirty = False
        # Vectors of another model or truncation are never read again.
        for old in self.folder.glob("vectors-*.npy"):
            if old != self.file:
                with contextlib.suppress(OSError):
                    old.unlink()


_CACHES: dict[Path, VectorCache] = {}
_CACHES_LOCK = threading.Lock()


def cache_for(folder: Path) -> VectorCache:
    """This process's one VectorCache of FOLDER: two caches of one folder would each save only
    their own vectors over the other's file."""
    with _CACHES_LOCK:
        cache = _CACHES.get(folder)
        if cache is None:
            cache = _CACHES[folder] = VectorCache(folder)
        return cache
