"""The `local` search provider: BM25 over a folder of PDF, HTML, Markdown and plain-text
documents.

The index (extracted text, metadata and term counts) is built once and cached under
`.mole/index/`, keyed by the folder. It is incremental (issue 19): when the folder changes, a
file whose size and mtime are those it was indexed with, or whose content digest is, is taken
from the cache as it was; only new and changed files are extracted again. A PDF is the
expensive case (PDFium in a worker process, then the layout), and a folder of papers grows a
few files at a time. A file that could not be read is remembered with its reason the same way,
so an unchanged bad PDF is not tried again either."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, fields
from datetime import date
from pathlib import Path
from urllib.parse import unquote, urlsplit

from mole_dag.actors.base import DeadEnd, Found
from mole_dag.actors.bm25 import BM25
from mole_dag.actors.extract import ExtractionError, from_html, from_plain
from mole_dag.actors.pdf import PdfLimits, PdfRefused, pdf_document
from mole_dag.core import DeadEndCause, Document
from mole_dag.diskfull import write_text_atomic
from mole_dag.paths import index_dir
from mole_dag.text import stem, terms, words

log = logging.getLogger("mole.local")

HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".text", ".rst"}
MARKDOWN_SUFFIXES = {".md", ".markdown"}
PDF_SUFFIXES = {".pdf"}
SUFFIXES = HTML_SUFFIXES | TEXT_SUFFIXES | PDF_SUFFIXES
# A guess, flagged as one: a local document larger than this is almost certainly not prose.
MAX_FILE_BYTES = 8 * 1024 * 1024
# PDFs carry fonts and figures: a paper with plots runs to tens of MB. A guess, flagged as one.
MAX_PDF_BYTES = 64 * 1024 * 1024
# 4: each document's terms stored as one space-separated string (issue 14).
# 5: PDFs, and a per-file entry (size, mtime, digest) so an index is rebuilt file by file.
# 6: a file's URL is its file:// URI, not "corpus:<path>".
INDEX_VERSION = 6
# The caps a PDF in a corpus is read under (module-level so a test can lower them).
PDF_LIMITS = PdfLimits()


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


class CorpusFileError(ExtractionError):
    """A file of the corpus that cannot be read, with its dead-end cause; the message is the
    reason a reader is shown ("empty file")."""

    def __init__(self, cause: DeadEndCause, reason: str) -> None:
        super().__init__(reason)
        self.cause = cause


class CorpusPdfError(CorpusFileError):
    """A PDF in the corpus that cannot be read, with its dead-end cause."""

    def __init__(self, cause: DeadEndCause, detail: str) -> None:
        super().__init__(cause, f"PDF: {detail}")


# The PDF format puts its header ("%PDF-") within the first 1024 bytes; a file named .pdf
# without one is some other kind of file, and says so, rather than reading as a damaged PDF.
PDF_HEADER_WITHIN = 1024


def _not_a_pdf(raw: bytes) -> str | None:
    """Why a file named .pdf is no PDF at all, or None when it has a PDF header."""
    if b"%PDF" in raw[:PDF_HEADER_WITHIN]:
        return None
    head = raw[:4096]
    if b"\x00" not in head:
        try:
            head.decode("utf-8")
            return "not a PDF (it is text)"
        except UnicodeDecodeError as exc:
            if exc.start >= len(head) - 3:  # a character cut by the 4 KB window
                return "not a PDF (it is text)"
    return "not a PDF (no PDF header)"


@dataclass
class Skipped:
    path: str
    reason: str
    # The dead end a session records for it (a PDF's named cause), "" for none.
    cause: str = ""


@dataclass
class FileEntry:
    """What the index knows of one file: the stamp it was read with and what came of it (the
    document's position in `docs`, or -1 and the position of its Skipped entry)."""

    path: str
    size: int
    mtime_ns: int
    sha256: str
    doc: int = -1
    skipped: int = -1


@dataclass
class CorpusIndex:
    root: str
    fingerprint: list[list[object]]
    docs: list[dict[str, object]] = field(default_factory=list)
    terms: list[list[str]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    files: list[FileEntry] = field(default_factory=list)
    # Files read (extracted) by the build that made this index; 0 for one read from the cache.
    extracted: int = 0


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


# How a source of the corpus is read again: "corpus:" and its path relative to the session's
# corpus folder (reread.py resolves it there, and nowhere else). Sources stored before issue 19's
# file URLs also have it as their URL.
LOCATOR = "corpus:"


def file_url(path: Path) -> str:
    """A corpus file's source URL: the file's absolute `file://` URI (RFC 8089, percent-quoted).
    A reader can open it from the report, a scorer matches its file name at the end of the URL's
    path, and two folders' "a.pdf" are two sources, not one."""
    return path.absolute().as_uri()


def corpus_path(url: str, locator: str | None) -> str | None:
    """The path of a corpus file relative to its folder, from its source's URL and locator
    (a `file://` URL, or a `corpus:` one from a store written before); None for any other
    source."""
    if not url.startswith(("file:", LOCATOR)):
        return None
    for where in (locator, url):
        if where and where.startswith(LOCATOR):
            return where.removeprefix(LOCATOR)
    return unquote(urlsplit(url).path)


def relative_to_corpus(url: str, corpus: str | None) -> str | None:
    """A corpus file's path relative to the session's corpus folder, from its `file://` URL
    (or a `corpus:` one): what reports and `mole show` print, so a shared report does not say
    where its author keeps files. None for any other URL."""
    if url.startswith(LOCATOR):
        return url.removeprefix(LOCATOR)
    if not url.startswith("file:") or not corpus:
        return None
    for folder in (Path(corpus), Path(corpus).resolve()):
        root = file_url(folder).rstrip("/") + "/"
        if url.startswith(root):
            return unquote(url.removeprefix(root))
    return None


def load_document(path: Path, raw: bytes | None = None) -> Document:
    """The document in a corpus file, its URL the file's (unless it names its own). Raises
    ExtractionError (PdfRefused for a PDF, with its dead-end cause) when it cannot be read."""
    raw = path.read_bytes() if raw is None else raw
    fallback_url = file_url(path)
    if path.suffix.lower() in PDF_SUFFIXES:
        other = _not_a_pdf(raw)
        if other is not None:
            raise CorpusFileError(DeadEndCause.WRONG_TYPE, other)
        try:
            return pdf_document(raw, url=fallback_url, fallback_title=path.stem, limits=PDF_LIMITS)
        except PdfRefused as exc:
            raise CorpusPdfError(exc.cause, exc.detail) from None
    if b"\x00" in raw[:4096]:
        raise CorpusFileError(DeadEndCause.WRONG_TYPE, "not text (binary content)")
    text = _decode(raw)
    if path.suffix.lower() in HTML_SUFFIXES:
        doc = from_html(text, fallback_title=path.stem)
        if not doc.url:
            doc.url = fallback_url
        return doc
    return from_plain(
        text,
        fallback_url=fallback_url,
        fallback_title=path.stem,
        markdown=path.suffix.lower() in MARKDOWN_SUFFIXES,
    )


def _files(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if name.startswith(".") or p.suffix.lower() not in SUFFIXES:
                continue
            out.append(p)
    return out


def indexer_sources() -> list[str]:
    """The files of the code that makes an index's text: this module, the text tools, HTML and
    text extraction, and the whole PDF reader (its layout rules decide what a paper's stored
    text is; a cache kept across a change to them would keep the old text)."""
    import mole_dag.actors.extract as extract_mod
    import mole_dag.actors.pdf as pdf_pkg
    import mole_dag.text as text_mod

    pdf_files = sorted(str(p) for p in Path(str(pdf_pkg.__file__)).parent.glob("*.py"))
    return [__file__, str(text_mod.__file__), str(extract_mod.__file__), *pdf_files]


def _indexer_version() -> str:
    """A digest of the code that builds an index (indexer_sources), so a cache written by
    another version of mole is rebuilt rather than reused. Seen: a cache from before a tokenizer
    change kept giving the old topics, so the planner planned other facets than a fresh index
    would."""
    global _INDEXER_VERSION
    if _INDEXER_VERSION is None:
        h = hashlib.sha256()
        for mod_file in indexer_sources():
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
    d["pages"] = list(doc.pages)
    d["published"] = doc.published.isoformat() if doc.published else None
    return d


_DOC_FIELDS = fields(Document)


def _doc_from_json(d: dict[str, object]) -> Document:
    d = dict(d)
    pub = d.get("published")
    d["published"] = date.fromisoformat(str(pub)) if pub else None
    d["pages"] = tuple(d.get("pages") or ())  # type: ignore[arg-type]
    return Document(**d)  # type: ignore[arg-type]


def _pooled(pool: dict[str, str], doc_terms: list[str]) -> list[str]:
    """DOC_TERMS with each term replaced by POOL's object for it. Every token kept as its own
    string was most of a corpus's memory (terms() and the JSON decoder both make a new object
    per occurrence: 143 MB for 2.3 million tokens, 21 MB shared); shared strings also keep
    their hash, which makes building the index faster. A dict per index rather than
    sys.intern, so the strings go with the index (interned strings may be immortal, depending
    on the Python); `map` over setdefault runs in C, with no Python call per token."""
    return list(map(pool.setdefault, doc_terms, doc_terms))


def _digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def _unchanged(prev: FileEntry | None, path: Path, st: os.stat_result) -> tuple[bool, bytes | None]:
    """Whether the file is the one PREV describes: the same size and mtime, or the same size
    and content digest (copied or touched, not changed). The bytes, when they had to be read."""
    if prev is None or prev.size != st.st_size:
        return False, None
    if prev.mtime_ns == st.st_mtime_ns:
        return True, None
    if not prev.sha256:
        return False, None
    raw = path.read_bytes()
    return _digest(raw) == prev.sha256, raw


def build_index(root: Path, previous: CorpusIndex | None = None) -> CorpusIndex:
    """The folder's index. With PREVIOUS (the cached index, from the same indexing code), a file
    it describes unchanged is carried over as it was, not extracted again."""
    files = _files(root)
    idx = CorpusIndex(root=str(root), fingerprint=_fingerprint(root, files))
    pool: dict[str, str] = {}
    old: dict[str, FileEntry] = {}
    if previous is not None and previous.fingerprint[:1] == idx.fingerprint[:1]:
        old = {e.path: e for e in previous.files}
    for p in files:
        rel = str(p.relative_to(root))
        st = p.stat()
        prev = old.get(rel)
        same, raw = _unchanged(prev, p, st)
        if same and prev is not None and previous is not None:
            entry = FileEntry(rel, st.st_size, st.st_mtime_ns, prev.sha256)
            if prev.doc >= 0:
                entry.doc = len(idx.docs)
                idx.docs.append(previous.docs[prev.doc])
                idx.terms.append(_pooled(pool, previous.terms[prev.doc]))
            elif prev.skipped >= 0:
                entry.skipped = len(idx.skipped)
                idx.skipped.append(previous.skipped[prev.skipped])
            idx.files.append(entry)
            continue
        entry = FileEntry(rel, st.st_size, st.st_mtime_ns, "")
        idx.files.append(entry)
        # Every file not read gets a cause, so each session records it as a dead end and its
        # report can name it (issue 33: five unread files were invisible in the report).
        if st.st_size == 0:
            entry.skipped = len(idx.skipped)
            idx.skipped.append(Skipped(rel, "empty file", DeadEndCause.NO_TEXT))
            continue
        cap = MAX_PDF_BYTES if p.suffix.lower() in PDF_SUFFIXES else MAX_FILE_BYTES
        if st.st_size > cap:
            entry.skipped = len(idx.skipped)
            idx.skipped.append(
                Skipped(rel, f"larger than {cap // 1024 // 1024} MB", DeadEndCause.TOO_LARGE)
            )
            continue
        idx.extracted += 1
        try:
            raw = p.read_bytes() if raw is None else raw
            entry.sha256 = _digest(raw)
            doc = load_document(p, raw)
        except CorpusFileError as exc:
            entry.skipped = len(idx.skipped)
            idx.skipped.append(Skipped(rel, str(exc), str(exc.cause)))
            continue
        except (OSError, ExtractionError) as exc:
            entry.skipped = len(idx.skipped)
            idx.skipped.append(Skipped(rel, str(exc), DeadEndCause.UNREADABLE))
            continue
        if not doc.text.strip():
            entry.skipped = len(idx.skipped)
            idx.skipped.append(Skipped(rel, "no text after extraction", DeadEndCause.NO_TEXT))
            continue
        doc.metadata["path"] = rel
        doc.metadata["locator"] = LOCATOR + rel
        entry.doc = len(idx.docs)
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
        files = _files(root)
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
            return _fingerprint(self.root, _files(self.root)) == self.index.fingerprint
        except OSError:
            return False

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
        files = [FileEntry(*f) for f in raw.get("files", [])]
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
    return CorpusIndex(root, fingerprint, docs, doc_terms, skipped, files), ""


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
        "files": [[f.path, f.size, f.mtime_ns, f.sha256, f.doc, f.skipped] for f in index.files],
        "version": INDEX_VERSION,
    }
    try:
        write_text_atomic(path, json.dumps(payload, ensure_ascii=False))
    except OSError as exc:  # a cache we cannot write only costs a rebuild next time
        log.warning("could not cache the corpus index at %s: %s", path, exc.strerror)
    # DiskFull is not caught: on a full disk the session cannot go on writing either, so it
    # stops here in one line naming the folder (issue 29).


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
