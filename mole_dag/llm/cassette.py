"""Cassettes: record a provider's real HTTP exchanges to a file, replay them byte for byte.

Recorded at the HTTP transport, below the SDK, so a replay runs the same client code a live
call does (the Anthropic SDK's parsing, our retry loop over a recorded 429, the usage
accounting) with no network at all. That is what makes a cassette useful in tests and
benchmarks: it checks the provider, not a stand-in for it.

A cassette is JSON lines. The first line describes what was recorded (provider kind, tier
models, base URL path) so a replay builds the same provider and sends the same requests; each
further line is one exchange: the request's method, target and body, and the response's status,
a few headers and its body. Request headers are never written: they carry the API key. What
is written passes through mole_dag.redaction first (a server can echo the key in an error body,
an answer or a response header), and the file is created readable by its owner only (0600).

Replay matches a request by method, target and the exact body bytes (with the secrets it
knows masked, as they were when it was recorded). Several recorded answers
to the same request (a 429, then the retry's 200) are served in recorded order. A request the
cassette does not hold is an error naming the fix (re-record), never a guess."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import threading
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from mole_dag import redaction

FORMAT = 1
# Response headers worth keeping: what the client reads (type, retry hints) and what helps a
# human match a recording to a provider's logs. Everything else (cookies, dates, rate-limit
# counters) is noise that would make two recordings of one session differ.
KEEP_HEADERS = ("content-type", "retry-after", "retry-after-ms", "request-id", "x-request-id")

_locks: dict[str, threading.Lock] = defaultdict(threading.Lock)


class CassetteError(RuntimeError):
    """A cassette that cannot be used (missing, malformed, or for another provider)."""


class CassetteMiss(CassetteError):
    """A request the cassette has no (more) answers for. Deliberately not a ModelCallFailed:
    a stale cassette must fail the run loudly, not read as a model that had nothing to say."""


@dataclass(frozen=True)
class Exchange:
    method: str
    target: str
    body: bytes
    status: int
    headers: dict[str, str]
    response: bytes


def _key(method: str, target: str, body: bytes) -> str:
    return f"{method.upper()} {target} {hashlib.sha256(body).hexdigest()}"


def _masked(data: bytes, *, request: bool = False) -> bytes:
    """`data` with every secret masked, when it is text (a body that is not UTF-8 is kept as it
    is: base64 in the file, and no key is written in it by a JSON API). A request is a prompt
    quoting pages, and its bytes are what a replay matches on: only the known secrets are
    masked there (redaction.redact_known), never a page's words that look like a credential."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    clean = redaction.redact_known(text) if request else redaction.redact(text)
    return data if clean == text else clean.encode("utf-8")


def _encode_body(data: bytes) -> dict[str, str]:
    try:
        return {"body": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"body_b64": base64.b64encode(data).decode("ascii")}


def _decode_body(obj: dict[str, Any]) -> bytes:
    if "body_b64" in obj:
        return base64.b64decode(obj["body_b64"])
    return str(obj.get("body", "")).encode("utf-8")


def _target(url: Any) -> str:
    raw = url.raw_path
    return raw.decode("ascii") if isinstance(raw, bytes) else str(raw)


class Cassette:
    """One cassette file, opened for replay or for recording."""

    def __init__(
        self, path: Path, meta: dict[str, Any], exchanges: list[Exchange], recording: bool
    ) -> None:
        self.path = path
        self.meta = meta
        self.recording = recording
        self._queues: dict[str, deque[Exchange]] = defaultdict(deque)
        for ex in exchanges:
            self._queues[_key(ex.method, ex.target, ex.body)].append(ex)
        self.served = 0
        self._lock = threading.Lock()

    # -- opening ----------------------------------------------------------------------------

    @classmethod
    def load(cls, path: Path | str) -> Cassette:
        path = Path(path)
        if not path.is_file():
            raise CassetteError(
                f"no cassette at {path}; record one with `mole research ... "
                "--record FILE` (or pass the right --cassette path)"
            )
        meta, exchanges = read(path)
        return cls(path, meta, exchanges, recording=False)

    @classmethod
    def record_to(cls, path: Path | str, meta: dict[str, Any]) -> Cassette:
        """Append to `path`. Appending lets every stage of a run (each builds its own provider)
        add to one cassette. Nothing is written until the first exchange, so a run refused
        before any call leaves no file behind."""
        path = Path(path)
        with _locks[str(path.resolve())]:
            if path.exists() and path.stat().st_size > 0:
                have, _ = read(path)
                if have.get("provider") != meta.get("provider"):
                    raise CassetteError(
                        f"{path} holds a {have.get('provider')} recording; "
                        f"record {meta.get('provider')} calls to another file"
                    )
        return cls(path, meta, [], recording=True)

    # -- replay and record ------------------------------------------------------------------

    def answer(self, method: str, target: str, body: bytes) -> Exchange:
        body = _masked(body, request=True)
        with self._lock:
            q = self._queues.get(_key(method, target, body))
            if not q:
                raise CassetteMiss(
                    f"cassette {self.path} has no recorded answer for {method} {target} "
                    f"(request body sha256 {hashlib.sha256(body).hexdigest()[:16]}): the "
                    "requests changed since it was recorded (prompts, models or inputs); "
                    "record it again"
                )
            self.served += 1
            return q.popleft()

    def remaining(self) -> int:
        with self._lock:
            return sum(len(q) for q in self._queues.values())

    def append(self, ex: Exchange) -> None:
        line = json.dumps(
            {
                "request": {
                    "method": ex.method,
                    "target": redaction.redact(ex.target),
                    **_encode_body(_masked(ex.body, request=True)),
                },
                "response": {
                    "status": ex.status,
                    "headers": {k: redaction.redact(v) for k, v in ex.headers.items()},
                    **_encode_body(_masked(ex.response)),
                },
            },
            ensure_ascii=False,
            sort_keys=True,
        )
        with _locks[str(self.path.resolve())]:
            if not self.path.exists() or self.path.stat().st_size == 0:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                head = json.dumps(
                    {"mole_cassette": FORMAT, **redaction.redact_all(self.meta)}, sort_keys=True
                )
                line = head + "\n" + line
            # Created for its owner alone: whatever a redaction missed is not shared with every
            # account on the machine.
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as f:
                f.write(line + "\n")

    def transport(self, http: ModuleType, inner: Any | None = None) -> Any:
        """An `http.BaseTransport` (http is httpx, or httpx2 for the Anthropic SDK) that
        replays from this cassette, or records what `inner` (default: a real HTTP transport)
        answers."""
        if not self.recording:

            def replay(request: Any) -> Any:
                ex = self.answer(request.method, _target(request.url), request.read())
                return http.Response(
                    ex.status, headers=ex.headers, content=ex.response, request=request
                )

            return http.MockTransport(replay)

        real = inner if inner is not None else http.HTTPTransport()

        def record(request: Any) -> Any:
            body = request.read()
            resp = real.handle_request(request)
            try:
                content = resp.read()  # decoded: the content-encoding header is not kept
            finally:
                resp.close()
            headers = {k.lower(): v for k, v in resp.headers.items() if k.lower() in KEEP_HEADERS}
            self.append(
                Exchange(
                    request.method, _target(request.url), body, resp.status_code, headers, content
                )
            )
            return http.Response(
                resp.status_code, headers=headers, content=content, request=request
            )

        return http.MockTransport(record)


def read(path: Path) -> tuple[dict[str, Any], list[Exchange]]:
    """Parse a cassette file: (description, exchanges)."""
    meta: dict[str, Any] | None = None
    out: list[Exchange] = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                if meta is None:
                    if obj.get("mole_cassette") != FORMAT:
                        raise ValueError(f"not a mole cassette (format {FORMAT}) description")
                    meta = {k: v for k, v in obj.items() if k != "mole_cassette"}
                    continue
                req, resp = obj["request"], obj["response"]
                out.append(
                    Exchange(
                        str(req["method"]),
                        str(req["target"]),
                        _decode_body(req),
                        int(resp["status"]),
                        dict(resp.get("headers") or {}),
                        _decode_body(resp),
                    )
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise CassetteError(f"{path}, line {n}: {exc}") from None
    if meta is None:
        raise CassetteError(f"{path} is empty: not a cassette")
    return meta, out


def response_bodies(path: Path) -> list[tuple[int, bytes]]:
    """(status, body) of every recorded exchange, in file order: for checks that sum usage."""
    return [(ex.status, ex.response) for ex in read(path)[1]]


NoSleep: Callable[[float], None] = lambda _s: None  # noqa: E731  (a replay waits for nobody)
