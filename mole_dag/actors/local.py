"""The `local` search provider: BM25 over a folder of PDF, HTML, Markdown and plain-text
documents.

The folder's files are read by corpus_files.py, indexed and cached by corpus_index.py (built
once under `.mole/index/`, incrementally: only new and changed files are extracted again), and
its facets read off by corpus_topics.py. This module opens a folder (from the cache when it
describes the folder as it is), searches it, by BM25 or, opted in, by meaning, and gives each
session its view: the same search plus one dead end per file that could not be read."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from mole_dag.actors import corpus_topics
from mole_dag.actors.base import DeadEnd, Found
from mole_dag.actors.bm25 import BM25
from mole_dag.actors.corpus_files import (
    LOCATOR,
    CorpusFileError,
    CorpusPdfError,
    corpus_files,
    corpus_path,
    file_url,
    load_document,
    relative_to_corpus,
)
from mole_dag.actors.corpus_index import (
    INDEX_VERSION,
    CorpusIndex,
    FileEntry,
    Skipped,
    _doc_from_json,
    _fingerprint,
    _read_cache,
    _stale,
    _write_cache,
    build_index,
    indexer_sources,
)
from mole_dag.core import DeadEndCause, Document
from mole_dag.paths import index_dir
from mole_dag.text import terms

# Names other modules import from here, the corpus's one entry point.
__all__ = [
    "INDEX_VERSION",
    "LOCATOR",
    "CorpusError",
    "CorpusFileError",
    "CorpusIndex",
    "CorpusPdfError",
    "FileEntry",
    "LocalCorpus",
    "SessionCorpus",
    "Skipped",
    "build_index",
    "corpus_path",
    "file_url",
    "indexer_sources",
    "load_document",
    "relative_to_corpus",
]

log = logging.getLogger("mole.local")

# Retrieval by meaning (issue 30, item 4): BM25 chooses candidate documents, the meaning model
# re-ranks them by their best passage, the two orders fused by reciprocal rank (meaning.rerank,
# k = 60, the published constant). MOLE_RETRIEVAL=meaning turns it on. Off by default, by
# measurement (BENCHMARKS.md, issue 30, third pass): on the PDF sets it moved no unseen question
# and lost one DEV question.
MEANING = os.environ.get("MOLE_RETRIEVAL", "").strip().lower() == "meaning"
# BM25's candidates per result asked for: what the meaning model may lift into the results.
# A guess, flagged as one.
CANDIDATES_PER_RESULT = 3
# Passages embedded per query: the candidates' passages that share most of the query's words
# by BM25 (a passage with none of them is not read). Embedding every passage of every candidate
# cost minutes on a PDF folder, and 64 passages of 80 words took 10 s a query on the loaded
# benchmark machine; these are embedded once and kept beside the index. A guess, flagged as one.
PASSAGES_PER_QUERY = 32


class CorpusError(ValueError):
    """The corpus folder cannot be used; the message says why."""


# Corpora opened by this process, by index cache file, with that file's size and mtime when
# it was read or written: see LocalCorpus.open.
_OPENED: dict[Path, tuple[tuple[int, int], LocalCorpus]] = {}
_OPENED_LOCK = threading.Lock()


def _file_stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _remember(cache: Path, corpus: LocalCorpus) -> LocalCorpus:
    stamp = _file_stamp(cache)
    if stamp is not None:
        with _OPENED_LOCK:
            _OPENED[cache] = (stamp, corpus)
    return corpus


def _remembered(cache: Path, fingerprint: list[list[object]]) -> LocalCorpus | None:
    """The corpus this process opened from `cache`, if neither the folder nor the cache file
    changed since: then reading the file again would give the same index."""
    with _OPENED_LOCK:
        seen = _OPENED.get(cache)
    if seen is None or seen[1].index.fingerprint != fingerprint:
        return None
    return seen[1] if _file_stamp(cache) == seen[0] else None


class LocalCorpus:
    """A searchable folder. Construct with `LocalCorpus.open(path)`."""

    name = "local"

    def __init__(self, index: CorpusIndex, cache_dir: Path | None = None) -> None:
        self.index = index
        self.root = Path(index.root)
        self._docs = [_doc_from_json(d) for d in index.docs]
        self._bm25 = BM25.build(index.terms)
        # Where the passages' vectors are kept: beside the index, shared by every corpus
        # indexed there (a vector is keyed by its text), so an unchanged folder embeds nothing
        # the second time.
        self._vector_dir = (cache_dir or index_dir()) / "meaning"
        self._passages: dict[int, list[tuple[str, list[str]]]] = {}
        self._passage_lock = threading.Lock()

    @classmethod
    def open(cls, root: str | os.PathLike[str], cache_dir: Path | None = None) -> LocalCorpus:
        root = Path(root).expanduser()
        if not root.exists():
            raise CorpusError(f"corpus folder {root} does not exist")
        if not root.is_dir():
            raise CorpusError(f"corpus path {root} is not a folder")
        root = root.resolve()
        files = corpus_files(root)
        if not files:
            raise CorpusError(
                f"corpus folder {root} has no .pdf, .html, .md or .txt documents to search"
            )
        if MEANING:
            # A missing or damaged model is one clear error at launch, never a search that
            # quietly falls back to BM25 alone and answers differently.
            from mole_dag.meaning.embed import MeaningModelError, embedder

            try:
                embedder()
            except MeaningModelError as exc:
                raise CorpusError(f"retrieval by meaning (MOLE_RETRIEVAL=meaning): {exc}") from None
        cache_dir = cache_dir or index_dir()
        key = hashlib.sha256(str(root).encode()).hexdigest()[:16]
        cache = cache_dir / f"corpus-{key}.json"
        fp = _fingerprint(root, files)
        seen = _remembered(cache, fp)
        if seen is not None:
            # Opened already in this process (`mole research` checks the corpus at launch, then
            # its first round opens it again): the same index, not a second read and parse of
            # its cache file (issue 12).
            return seen
        cached, why = _read_cache(cache)
        if cached is not None:
            why = _stale(cached.fingerprint, fp)
            if not why:
                try:
                    return _remember(cache, cls(cached, cache_dir))
                except (TypeError, ValueError, KeyError, AttributeError) as exc:
                    # Well-formed JSON with a broken document in it: rebuilt like any
                    # other damaged cache, never a crash.
                    why = f"unreadable ({type(exc).__name__}: {exc})"
        if why:
            # One line, so a slow open (a large folder re-extracted) is explained: a warning
            # for a damaged file, information for the expected cases (the folder or mole
            # changed since the cache was written).
            level = logging.WARNING if why.startswith("unreadable") else logging.INFO
            log.log(level, "corpus index cache %s is %s; rebuilding it", cache, why)
        index = build_index(root, None if why.startswith("unreadable") else cached)
        if not index.docs:
            # Say why each file was left out: "no extractable text" was wrong for a folder of
            # files skipped for their size.
            # A PDF by its named cause; any other file by its reason in words.
            reasons = Counter(
                sk.cause if sk.cause.startswith("pdf_") else sk.reason for sk in index.skipped
            )
            why = ", ".join(f"{reason}: {n}" for reason, n in reasons.most_common())
            raise CorpusError(
                f"corpus folder {root}: all {len(index.skipped)} documents were "
                f"skipped ({why}); add readable .pdf, .html, .md or .txt documents or "
                "pass another --corpus"
            )
        _write_cache(cache, index)
        return _remember(cache, cls(index, cache_dir))

    def is_current(self) -> bool:
        """Whether the folder still holds what this index was built from (the files, their
        sizes and mtimes, and the indexing code). A process that keeps a corpus open (the
        registry's cache, a watch's runs in the Dagster daemon) asks before each session, so a
        rerun over a changed folder searches and re-reads what is there now, not the index of
        the first run (issue 32)."""
        try:
            return _fingerprint(self.root, corpus_files(self.root)) == self.index.fingerprint
        except OSError:
            return False

    @property
    def documents(self) -> list[Document]:
        return self._docs

    @property
    def skipped(self) -> list[Skipped]:
        return self.index.skipped

    def topics(self, k: int, about: str = "") -> tuple[str, ...]:
        """The corpus's facets (corpus_topics.topics), or those of the documents a search for
        ABOUT finds."""
        return corpus_topics.topics(self.index.terms, self._docs, self._bm25, k, about)

    def search(self, query: str, limit: int) -> list[tuple[Document, float]]:
        if not MEANING:
            hits = self._bm25.top(terms(query), limit)
            return [(self._docs[i], score) for i, score in hits]
        return [(self._docs[i], score) for i, score in self._by_meaning(query, limit)]

    def _passages_of(self, doc: int) -> list[tuple[str, list[str]]]:
        """A document's passages with their terms, made once a process (a session's queries
        read the same candidates again)."""
        from mole_dag.meaning.rerank import passages

        with self._passage_lock:
            got = self._passages.get(doc)
            if got is None:
                d = self._docs[doc]
                text = f"{d.title}. {d.text}" if d.title else d.text
                got = self._passages[doc] = [(p, terms(p)) for p in passages(text)]
            return got

    def _by_meaning(self, query: str, limit: int) -> list[tuple[int, float]]:
        """BM25's candidates re-ranked: each candidate's best passage by meaning (among the
        PASSAGES_PER_QUERY passages of all candidates that BM25 rates best for the query),
        and the BM25 and meaning orders fused by reciprocal rank. The fused score is returned."""
        q_terms = terms(query)
        hits = self._bm25.top(q_terms, max(limit, CANDIDATES_PER_RESULT * limit))
        if len(hits) <= 1:
            return hits[:limit]
        # Imported here: numpy and the model load only when retrieval by meaning runs.
        from mole_dag.meaning.rerank import best_similarity, fuse
        from mole_dag.meaning.store import cache_for

        pool = [(i, p, t) for i, _ in hits for p, t in self._passages_of(i)]
        local = BM25.build([t for _, _, t in pool])
        chosen = [pool[j][:2] for j, _ in local.top(q_terms, PASSAGES_PER_QUERY)]
        cache = cache_for(self._vector_dir)
        best = best_similarity(query, chosen, cache)
        cache.save()
        by_meaning = sorted(best, key=lambda i: -best[i])
        return fuse([[i for i, _ in hits], by_meaning])[:limit]

    def gather(self, query: str, limit: int) -> Iterator[Found | DeadEnd]:
        hits = self.search(query, limit)
        if not hits:
            yield DeadEnd(DeadEndCause.NO_RESULTS, detail=f"local corpus: no match for {query!r}")
            return
        for rank, (doc, score) in enumerate(hits):
            yield Found(document=doc, rank=rank, score=score)


# (session, corpus root, file) of unreadable PDFs already reported as dead ends by this process.
_REPORTED: set[tuple[str, str, str]] = set()
_REPORTED_LOCK = threading.Lock()


@dataclass
class SessionCorpus:
    """A session's view of a shared corpus: the same search, plus one dead end per file the
    index could not read for a named cause (an encrypted or scanned PDF...), recorded once per
    session, so `mole show` names it. `recorded` says whether the store already has it (a
    resumed session in a new process)."""

    corpus: LocalCorpus
    session_id: str
    recorded: Callable[[str], bool] | None = None
    name: str = "local"

    def gather(self, query: str, limit: int) -> Iterator[Found | DeadEnd]:
        for sk in self.corpus.skipped:
            if not sk.cause:
                continue
            url = file_url(self.corpus.root / sk.path)
            key = (self.session_id, str(self.corpus.root), sk.path)
            with _REPORTED_LOCK:
                if key in _REPORTED:
                    continue
                _REPORTED.add(key)
            # A session resumed from a store written before file URLs has it as "corpus:<path>".
            if self.recorded is not None and (
                self.recorded(url) or self.recorded(LOCATOR + sk.path)
            ):
                continue
            # The reason alone: the URL names the file (`mole show` printed it twice).
            yield DeadEnd(DeadEndCause(sk.cause), url, sk.reason)
        yield from self.corpus.gather(query, limit)
