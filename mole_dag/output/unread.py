"""The files a session could not read, as a reader is shown them: a corpus file by its path in
the folder (never the absolute `file://` URL, which tells a reader of a shared report where its
author keeps files), anything else by its URL, and the reason in words ("empty file", "not a PDF
(it is text)", "PDF: it is encrypted with a password"). For the report's "Not read" section
and `mole show` (issue 33: the report never said that five files were not read)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

from mole_dag.actors.local import relative_to_corpus
from mole_dag.sanitize import one_line
from mole_dag.store import Store


@dataclass(frozen=True)
class UnreadFile:
    shown: str  # the corpus-relative path, or the URL of a fetched file
    cause: str  # the dead end's cause (pdf_encrypted, no_text, wrong_type, ...)
    reason: str
    local: bool  # a file of the corpus folder


def unread_files(store: Store, session_id: str, corpus: str | None) -> list[UnreadFile]:
    out = []
    for r in store.named("unread_files", {"session_id": session_id}):
        url = str(r["url"] or "")
        rel = relative_to_corpus(url, corpus)
        reason = one_line(str(r["detail"] or r["cause"]))
        if rel is not None and reason.startswith(f"{rel}: "):
            # Rows written before issue 33 repeat the path in front of the reason.
            reason = reason.removeprefix(f"{rel}: ")
        if rel is not None:
            shown = rel
        elif url.startswith("file:"):
            # A file outside the session's folder (a store from before, a folder moved): its
            # name, not where it lives.
            shown = PurePosixPath(unquote(urlsplit(url).path)).name
        else:
            shown = url
        local = rel is not None or url.startswith("file:")
        out.append(UnreadFile(one_line(shown), str(r["cause"]), reason, local))
    return out
