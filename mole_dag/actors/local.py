"""The `local` search provider: BM25 over a folder of HTML, Markdown and plain-text documents.

The index (extracted text, metadata and term counts) is built once and cached under
`.mole/index/`, keyed by the folder and invalidated when any file's size or mtime changes, so a
second session over the same corpus does not re-extract every page."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from datetime import date
from pathlib import Path

from mole_dag.actors.base import DeadEnd, Found
from mole_dag.actors.bm25 import BM25
from mole_dag.actors.extract import ExtractionError, from_html, from_plain
from mole_dag.core import DeadEndCause, Document
from mole_dag.paths import index_dir
from mole_dag.text import stem, terms, words

log = logging.getLogger("mole.local")

HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".text", ".rst"}
# A guess, flagged as one: a local document larger than this is almost certainly not prose.
MAX_FILE_BYTES = 8 * 1024 * 1024
# 4: each document's terms stored as one space-separated string (issue 14).
INDEX_VERSION = 4


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


class CorpusError(ValueError):
    """The corpus folder cannot be used; the message says why."""


@dataclass
class Skipped:
    path: str
    reason: str


@dataclass
class CorpusIndex:
    root: str
    fingerprint: list[list[object]]
    docs: list[dict[str, object]] = field(default_factory=list)
    terms: list[list[str]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    matches = list(from_bytes(raw))
    if not matches:
        raise ExtractionError("not text in any encoding we can detect")
    # Short Western text often ties between several single-byte code pages; among the equally
    # good guesses prefer windows-1252, which is what "latin-1" means on the web (WHATWG).
    best_key = min((m.percent_chaos, -m.percent_coherence) for m in matches)
    tied = [m for m in matches if (m.percent_chaos, -m.percent_coherence) == best_key]
    pick = next((m for m in tied if m.encoding == "cp1252"), tied[0])
    return str(pick)


def load_document(path: Path, relpath: str) -> Document:
    raw = path.read_bytes()
    if b"\x00" in raw[:4096]:
        raise ExtractionError("binary content")
    text = _decode(raw)
    fallback_url = f"corpus:{relpath}"
    if path.suffix.lower() in HTML_SUFFIXES:
        doc = from_html(text, fallback_title=path.stem)
        if not doc.url:
            doc.url = fallback_url
        return doc
    return from_plain(text, fallback_url=fallback_url, fallback_title=path.stem)


def _files(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if name.startswith(".") or p.suffix.lower() not in HTML_SUFFIXES | TEXT_SUFFIXES:
                continue
            out.append(p)
    return out


def _indexer_version() -> str:
    """A digest of the code that builds an index (this module, the text tools, extraction), so
    a cache written by another version of mole is rebuilt rather than reused. Seen: a cache from
    before a tokenizer change kept giving the old topics, so the planner planned other facets
    than a fresh index would."""
    global _INDEXER_VERSION
    if _INDEXER_VERSION is None:
        import mole_dag.actors.extract as extract_mod
        import mole_dag.text as text_mod

        h = hashlib.sha256()
        for mod_file in (__file__, text_mod.__file__, extract_mod.__file__):
            try:
                h.update(Path(str(mod_file)).read_bytes())
            except OSError:  # no source shipped: the package version stands in
                from importlib.metadata import version

                h.update(version("mole-dag").encode())
        _INDEXER_VERSION = h.hexdigest()[:16]
    return _INDEXER_VERSION


_INDEXER_VERSION: str | None = None


def _fingerprint(root: Path, files: list[Path]) -> list[list[object]]:
    fp: list[list[object]] = [["<indexer>", _indexer_version(), 0]]
    for p in files:
        st = p.stat()
        fp.append([str(p.relative_to(root)), st.st_size, st.st_mtime_ns])
    return fp


def _doc_to_json(doc: Document) -> dict[str, object]:
    # Field by field rather than `asdict`, whose recursive deep copy cost a quarter of a
    # second per 10k documents for values that are all strings (issue 14).
    d: dict[str, object] = {f.name: getattr(doc, f.name) for f in _DOC_FIELDS}
    d["metadata"] = dict(doc.metadata)
    d["published"] = doc.published.isoformat() if doc.published else None
    return d


_DOC_FIELDS = fields(Document)


def _doc_from_json(d: dict[str, object]) -> Document:
    d = dict(d)
    pub = d.get("published")
    d["published"] = date.fromisoformat(str(pub)) if pub else None
    return Document(**d)  # type: ignore[arg-type]


def _pooled(pool: dict[str, str], doc_terms: list[str]) -> list[str]:
    """DOC_TERMS with each term replaced by POOL's object for it. Every token kept as its own
    string was most of a corpus's memory (terms() and the JSON decoder both make a new object
    per occurrence: 143 MB for 2.3 million tokens, 21 MB shared); shared strings also keep
    their hash, which makes building the index faster. A dict per index rather than
    sys.intern, so the strings go with the index (interned strings may be immortal, depending
    on the Python); `map` over setdefault runs in C, with no Python call per token."""
    return list(map(pool.setdefault, doc_terms, doc_terms))


def build_index(root: Path) -> CorpusIndex:
    files = _files(root)
    idx = CorpusIndex(root=str(root), fingerprint=_fingerprint(root, files))
    pool: dict[str, str] = {}
    for p in files:
        rel = str(p.relative_to(root))
        if p.stat().st_size > MAX_FILE_BYTES:
            idx.skipped.append(Skipped(rel, f"larger than {MAX_FILE_BYTES // 1024 // 1024} MB"))
            continue
        try:
            doc = load_document(p, rel)
        except (OSError, ExtractionError) as exc:
            idx.skipped.append(Skipped(rel, str(exc)))
            continue
        if not doc.text.strip():
            idx.skipped.append(Skipped(rel, "no text after extraction"))
            continue
        doc.metadata["path"] = rel
        doc.metadata["locator"] = f"corpus:{rel}"
        idx.docs.append(_doc_to_json(doc))
        idx.terms.append(_pooled(pool, terms(f"{doc.title}\n{doc.text}")))
    return idx


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

    def __init__(self, index: CorpusIndex) -> None:
        self.index = index
        self.root = Path(index.root)
        self._docs = [_doc_from_json(d) for d in index.docs]
        self._bm25 = BM25.build(index.terms)

    @classmethod
    def open(cls, root: str | os.PathLike[str], cache_dir: Path | None = None) -> LocalCorpus:
        root = Path(root).expanduser()
        if not root.exists():
            raise CorpusError(f"corpus folder {root} does not exist")
        if not root.is_dir():
            raise CorpusError(f"corpus path {root} is not a folder")
        root = root.resolve()
        files = _files(root)
        if not files:
            raise CorpusError(f"corpus folder {root} has no .html, .md or .txt documents to search")
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
                    return _remember(cache, cls(cached))
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
        index = build_index(root)
        if not index.docs:
            # Say why each file was left out: "no extractable text" was wrong for a folder of
            # files skipped for their size.
            reasons = Counter(sk.reason.split(":")[0] for sk in index.skipped)
            why = ", ".join(f"{reason}: {n}" for reason, n in reasons.most_common())
            raise CorpusError(
                f"corpus folder {root}: all {len(index.skipped)} documents were "
                f"skipped ({why}); add readable .html, .md or .txt documents or "
                "pass another --corpus"
            )
        _write_cache(cache, index)
        return _remember(cache, cls(index))

    @property
    def documents(self) -> list[Document]:
        return self._docs

    @property
    def skipped(self) -> list[Skipped]:
        return self.index.skipped

    def topics(self, k: int, about: str = "") -> tuple[str, ...]:
        """The corpus's dominant terms, as words a reader would write: a term's occurrences
        over the corpus times its inverse document frequency (the terms documents keep coming
        back to, not the ones every document has), minus words every study uses. For planning
        a broad question ("What do the sources say?") from the corpus itself."""
        docs = self.index.terms
        exclude = set(_GENERIC)
        if about:
            # Topics of the documents a search for `about` finds, minus its own words: the
            # facets of a broad question, read off the corpus rather than a fixed list.
            exclude |= set(terms(about))
            docs = [self.index.terms[i] for i, _ in self._bm25.top(terms(about), TOPIC_DOCS)]
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
        for doc in self._docs[:200]:
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

    def search(self, query: str, limit: int) -> list[tuple[Document, float]]:
        hits = self._bm25.top(terms(query), limit)
        return [(self._docs[i], score) for i, score in hits]

    def gather(self, query: str, limit: int) -> Iterator[Found | DeadEnd]:
        hits = self.search(query, limit)
        if not hits:
            yield DeadEnd(DeadEndCause.NO_RESULTS, detail=f"local corpus: no match for {query!r}")
            return
        for rank, (doc, score) in enumerate(hits):
            yield Found(document=doc, rank=rank, score=score)


def _read_cache(path: Path) -> tuple[CorpusIndex | None, str]:
    """The cached index, or None and why it cannot be used ("" when there is none yet)."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return None, ""
    except (OSError, ValueError) as exc:  # ValueError: not UTF-8
        return None, f"unreadable ({type(exc).__name__}: {exc})"
    try:
        raw = json.loads(text)
    except ValueError as exc:
        return None, f"unreadable (not JSON: {exc})"
    if not isinstance(raw, dict):
        return None, "unreadable (not an index)"
    if raw.get("version") != INDEX_VERSION:
        return None, f"from another index version ({raw.get('version')!r})"
    try:
        fingerprint, docs, joined = raw["fingerprint"], raw["docs"], raw["terms"]
        root = raw["root"]
        skipped = [Skipped(**s) for s in raw.get("skipped", [])]
    except (KeyError, TypeError) as exc:
        return None, f"unreadable (missing or wrong field: {exc})"
    if not (
        isinstance(fingerprint, list)
        and isinstance(docs, list)
        and isinstance(joined, list)
        and len(docs) == len(joined)
        and all(isinstance(t, str) for t in joined)
    ):
        return None, "unreadable (fields of the wrong shape)"
    pool: dict[str, str] = {}
    doc_terms = [_pooled(pool, t.split()) for t in joined]
    return CorpusIndex(root, fingerprint, docs, doc_terms, skipped), ""


def _stale(cached: list[list[object]], current: list[list[object]]) -> str:
    """Why an index with fingerprint CACHED does not describe the folder now, "" if it does."""
    if cached == current:
        return ""
    if not cached or not current or cached[0] != current[0]:
        return "from other indexing code"
    try:
        old = {str(f[0]): f[1:] for f in cached[1:]}
    except (TypeError, IndexError, KeyError):
        return "unreadable (a malformed fingerprint)"
    new = {str(f[0]): f[1:] for f in current[1:]}
    added = len(new.keys() - old.keys())
    removed = len(old.keys() - new.keys())
    changed = sum(1 for k in new.keys() & old.keys() if new[k] != old[k])
    return f"out of date ({changed} changed, {added} added, {removed} removed)"


def _write_cache(path: Path, index: CorpusIndex) -> None:
    # The index's own lists go to json.dumps as they are: `asdict(index)` deep-copied every
    # document and term list first, 3.3 s of a 12.1 s index build at 10k documents and a
    # second copy of the whole index in memory (issue 14). A document's terms go as one
    # string: the JSON decoder makes an object per string, and reading 2.3 million separate
    # terms back took 163 MB at its peak against 42 MB for one string a document, and longer.
    # Lossless because a term never holds whitespace (text._WORD matches word characters and
    # inner . , ' only; tests/test_bm25_local.py checks terms() against arbitrary text).
    payload = {
        "root": index.root,
        "fingerprint": index.fingerprint,
        "docs": index.docs,
        "terms": [" ".join(t) for t in index.terms],
        "skipped": [asdict(s) for s in index.skipped],
        "version": INDEX_VERSION,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(payload, ensure_ascii=False), "utf-8")
        tmp.replace(path)
    except OSError as exc:  # a cache we cannot write only costs a rebuild next time
        log.warning("could not cache the corpus index at %s: %s", path, exc.strerror)
