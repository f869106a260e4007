"""The index of a local corpus and its cache: each file's stamp and what came of reading it,
the documents and their terms, built incrementally (a file unchanged since the cached index was
written is carried over, not extracted again) and kept as one JSON file under `.mole/index/`.
A cache written by other indexing code, or a damaged one, is rebuilt, saying why."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import asdict, dataclass, field, fields
from datetime import date
from pathlib import Path

from mole_dag.actors.corpus_files import (
    LOCATOR,
    MAX_FILE_BYTES,
    MAX_PDF_BYTES,
    PDF_SUFFIXES,
    CorpusFileError,
    corpus_files,
    load_document,
)
from mole_dag.actors.extract import ExtractionError
from mole_dag.core import DeadEndCause, Document
from mole_dag.diskfull import write_text_atomic
from mole_dag.text import terms

log = logging.getLogger("mole.local")

# 4: each document's terms stored as one space-separated string (issue 14).
# 5: PDFs, and a per-file entry (size, mtime, digest) so an index is rebuilt file by file.
# 6: a file's URL is its file:// URI, not "corpus:<path>".
INDEX_VERSION = 6


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


def indexer_sources() -> list[str]:
    """The files of the code that makes an index's text: this module, the reading of a corpus
    file (corpus_files.py), the text tools, HTML and text extraction, and the whole PDF reader
    (its layout rules decide what a paper's stored text is; a cache kept across a change to
    them would keep the old text)."""
    import mole_dag.actors.corpus_files as files_mod
    import mole_dag.actors.extract as extract_mod
    import mole_dag.actors.pdf as pdf_pkg
    import mole_dag.text as text_mod

    pdf_files = sorted(str(p) for p in Path(str(pdf_pkg.__file__)).parent.glob("*.py"))
    return [
        __file__,
        str(files_mod.__file__),
        str(text_mod.__file__),
        str(extract_mod.__file__),
        *pdf_files,
    ]


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
    files = corpus_files(root)
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
