"""A full disk, in one line (issue 29).

Whatever writes (the copy of dagster.yaml, Dagster's SQLite run and event storage, the store,
the corpus index cache, report files) fails in its own words when there is no room: an OSError
with ENOSPC or EDQUOT, SQLite's "database or disk is full" (or only "disk I/O error" when it
could not even make its journal), DuckDB's "Could not write file ...: No space left on device",
the same text inside a Dagster step's serialised error. `disk_full` reads all of them as
`DiskFull(folder)`, which the command line prints as one line and which leaves the session
resumable; `write_text_atomic` writes a file whole or not at all."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mole_dag import invoked

NO_ROOM_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
# The C library's words for the two errnos (DuckDB and Dagster pass them on as text) and
# SQLite's SQLITE_FULL.
_NO_ROOM_TEXT = ("no space left on device", "disk quota exceeded", "database or disk is full")
# SQLite says only this when a full disk stops it creating its journal: a full disk only when
# the folder it writes in has (almost) no room left. The margin is a guess, flagged as one: far
# less than any database or report mole writes needs, far more than a rounding error.
_AMBIGUOUS_TEXT = "disk i/o error"
LOW_ROOM_BYTES = 1 << 20
# A file an error message names: DuckDB quotes it with ", an OSError's text with '.
_QUOTED_PATH = re.compile(r"""["'](/[^"'\n]+)["']""")
_OURS = re.compile(r"no space left on device in (/[^\n]*?)(?::|\n|$)")


class DiskFull(Exception):
    """No room left where mole writes. `session_id` is set once a session is known to be
    affected (it was marked interrupted), so the line can say how to continue it."""

    def __init__(self, folder: Path | None, session_id: str | None = None) -> None:
        self.folder = folder
        self.session_id = session_id
        super().__init__(self.reason())

    def reason(self) -> str:
        return "no space left on device" + (f" in {self.folder}" if self.folder else "")

    def line(self) -> str:
        then = (
            f"`{invoked.command('resume', self.session_id)}`"
            if self.session_id
            else "run the command again"
        )
        return f"{self.reason()}: free some space, then {then}"


def _little_room(folder: Path) -> bool:
    for where in (folder, *folder.parents):
        with contextlib.suppress(OSError):
            return shutil.disk_usage(where).free < LOW_ROOM_BYTES
    return False


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception, what caused it, and a driver's own error that SQLAlchemy wraps (.orig)."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        orig = getattr(e, "orig", None)
        todo += [orig if isinstance(orig, BaseException) else None, e.__cause__, e.__context__]


def _folder_in(text: str) -> Path | None:
    ours = _OURS.search(text)
    if ours:
        return Path(ours.group(1))
    named = _QUOTED_PATH.search(text)
    return Path(named.group(1)).parent if named else None


def _from_text(text: str, default: Path | None) -> DiskFull | None:
    low = text.lower()
    if any(t in low for t in _NO_ROOM_TEXT):
        return DiskFull(_folder_in(text) or default)
    if _AMBIGUOUS_TEXT in low and default is not None and _little_room(default):
        return DiskFull(default)
    return None


def disk_full(exc: BaseException, default: Path | None = None) -> DiskFull | None:
    """`exc` as a DiskFull when it (or what it wraps) means there is no room, else None.
    `default` is the folder to name when the error names no file: the folder the failed code
    writes in."""
    for e in _chain(exc):
        if isinstance(e, DiskFull):
            return e
        if isinstance(e, OSError) and e.errno in NO_ROOM_ERRNOS:
            name = e.filename if isinstance(e.filename, str | bytes) else None
            return DiskFull(Path(os.fsdecode(name)).parent if name else default)
    for e in _chain(exc):
        if isinstance(getattr(e, "orig", None), BaseException):
            # SQLAlchemy's wrapper quotes the statement and its parameters, whose paths are
            # not the file that failed; the driver's own error (.orig) is read instead.
            continue
        got = _from_text(str(e), default)
        if got is not None:
            return got
    return None


def disk_full_in_error(err: Any, default: Path | None = None) -> DiskFull | None:
    """The same reading for an error Dagster serialised (its SerializableErrorInfo: message,
    cls_name, cause, context): a step's exception arrives as text."""
    seen = 0
    while err is not None and seen < 20:  # a chain, bounded in case it loops
        got = _from_text(f"{err.message}", default)
        if got is not None:
            return got
        err = err.cause or err.context
        seen += 1
    return None


@contextlib.contextmanager
def writing(folder: Path) -> Iterator[None]:
    """Writes in `folder`: an error that means no room becomes DiskFull(folder)."""
    try:
        yield
    except DiskFull:
        raise
    except Exception as exc:
        full = disk_full(exc, folder)
        if full is None:
            raise
        # The folder written in, unless the error names a file elsewhere (another disk).
        named = full.folder
        inside = named is None or named == folder or folder in named.parents
        raise DiskFull(folder if inside else named) from exc


def drop_dagster_noise(text: str) -> bool:
    """Dagster writes a failed event-log write straight to stderr (statement and parameters,
    several lines) before raising it; when that failure is a full disk, the one line the
    command prints says it all."""
    return text.startswith("Exception while writing logger call") and (
        _from_text(text, None) is not None or _AMBIGUOUS_TEXT in text.lower()
    )


def write_text_atomic(path: Path, text: str) -> None:
    """`path` whole or not at all, as UTF-8 text (see write_bytes_atomic)."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """`path` whole or not at all: written under a temporary name in the same folder (so the
    rename cannot cross file systems), then renamed over it; the temporary file is removed when
    anything fails, so a full disk leaves no empty or half-written file behind."""
    folder = path.parent
    part = folder / f".{path.name}.{os.getpid()}.tmp"
    with writing(folder):
        folder.mkdir(parents=True, exist_ok=True)
        try:
            with open(part, "wb") as f:
                f.write(data)
                # On disk before the rename: a file system may report no room only on flush.
                f.flush()
                os.fsync(f.fileno())
            os.replace(part, path)
        except BaseException:
            with contextlib.suppress(OSError):
                part.unlink()
            raise
