"""The parent side of PDF reading: one worker process (worker.py) per mole process, started on
first use and kept for the next PDF, asked one PDF at a time under the caps of PdfLimits. A
worker that overruns the time cap is killed (and the next PDF starts a new one); one that dies is
reported as the file's fault. Every failure is a PdfRefused with a dead-end cause."""

from __future__ import annotations

import json
import logging
import os
import selectors
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from mole_dag.core import DeadEndCause

log = logging.getLogger("mole.pdf")


@dataclass(frozen=True)
class PdfLimits:
    # A guess, flagged as one: a thesis or a book-length report is a few hundred pages; past
    # this a PDF is a scanned archive or a catalogue, not something to mine whole.
    max_pages: int = 1000
    # Seconds for one PDF, the whole read. PDFium reads the DEV papers at ~300 pages/s on one
    # core (BENCHMARKS.md, issue 19), so a thousand pages fit with room. A guess, flagged as one.
    max_seconds: float = 60.0
    # What the file's compressed streams may inflate to in total. A guess, flagged as one:
    # the DEV papers inflate to a few MB each; a scan with raw bitmaps can reach tens.
    max_inflated_bytes: int = 256 << 20
    # The worker's address space (MB). A guess, flagged as one: PDFium plus Python need ~100 MB.
    max_memory_mb: int = 2048


class PdfRefused(Exception):
    """The PDF could not be read; `cause` is the dead end's, `detail` says what was wrong."""

    def __init__(self, cause: DeadEndCause, detail: str) -> None:
        super().__init__(f"{cause}: {detail}")
        self.cause, self.detail = cause, detail


@dataclass(frozen=True)
class RawPage:
    width: float
    height: float
    # [text, x0, x1, top, bottom, font_size, monospace, ends_in_hyphen] per line (worker.py)
    lines: list[list[Any]]


@dataclass(frozen=True)
class RawPdf:
    pages: list[RawPage]
    meta: dict[str, str]


def worker_command(limits: PdfLimits) -> list[str]:
    return [sys.executable, "-m", "mole_dag.actors.pdf.worker", str(limits.max_memory_mb)]


class PdfReader:
    """Reads PDFs through a worker process. Thread-safe: one PDF at a time, in arrival order."""

    def __init__(self, command: list[str] | None = None) -> None:
        self._command = command
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def _start(self, limits: PdfLimits) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        env = dict(os.environ)
        # The worker imports mole_dag from wherever this process did (a checkout or a wheel).
        pkg_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, env.get("PYTHONPATH")) if p)
        self._proc = subprocess.Popen(
            self._command or worker_command(limits),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            close_fds=True,
        )
        return self._proc

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.kill()
        proc.wait()
        for f in (proc.stdin, proc.stdout):
            if f is not None:
                f.close()

    def close(self) -> None:
        with self._lock:
            self._kill()

    def read(self, data: bytes, limits: PdfLimits | None = None) -> RawPdf:
        limits = limits or PdfLimits()
        with self._lock:
            deadline = time.monotonic() + limits.max_seconds
            proc = self._start(limits)
            assert proc.stdin is not None and proc.stdout is not None
            header = json.dumps(
                {"max_pages": limits.max_pages, "max_inflated_bytes": limits.max_inflated_bytes}
            ).encode()
            try:
                proc.stdin.write(struct.pack(">I", len(header)) + header)
                proc.stdin.write(struct.pack(">I", len(data)))
                proc.stdin.write(data)
                proc.stdin.flush()
            except (BrokenPipeError, OSError):
                code = proc.poll()
                self._kill()
                raise PdfRefused(
                    DeadEndCause.PDF_CORRUPT, f"the PDF reader stopped (exit {code})"
                ) from None
            try:
                body = self._answer(proc, deadline)
            except TimeoutError:
                self._kill()
                raise PdfRefused(
                    DeadEndCause.PDF_TOO_SLOW,
                    f"reading it took longer than the cap of {limits.max_seconds:g} s",
                ) from None
            if body is None:
                code = proc.poll()
                self._kill()
                # Killed by the kernel or crashed inside PDFium: the file did it.
                raise PdfRefused(
                    DeadEndCause.PDF_CORRUPT,
                    f"the PDF reader crashed on it (exit {code}); the file may be damaged",
                )
        answer = json.loads(body)
        if not answer.get("ok"):
            raise PdfRefused(DeadEndCause(answer["cause"]), str(answer.get("detail") or ""))
        return RawPdf(
            [RawPage(p["w"], p["h"], p["lines"]) for p in answer["pages"]],
            {str(k): str(v) for k, v in (answer.get("meta") or {}).items()},
        )

    @staticmethod
    def _answer(proc: subprocess.Popen[bytes], deadline: float) -> bytes | None:
        """The worker's length-prefixed answer, None when it died first. TimeoutError at the
        deadline."""
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        buf = bytearray()
        need: int | None = None
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while need is None or len(buf) < need:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise TimeoutError
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return None
                buf += chunk
                if need is None and len(buf) >= 4:
                    need = 4 + struct.unpack(">I", bytes(buf[:4]))[0]
        return bytes(buf[4:need])


_shared: PdfReader | None = None
_shared_lock = threading.Lock()


def shared_reader() -> PdfReader:
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = PdfReader()
        return _shared
