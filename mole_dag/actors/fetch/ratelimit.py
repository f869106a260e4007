"""Per-domain rate limits shared by every worker and every session on the machine.

Each domain has a slot file under the mole home holding the wall-clock time of its next free
slot. Taking a slot is a read-modify-write under an exclusive `flock`, which serialises threads
(each opens its own file description) and processes alike, so two `mole research` runs and the
Dagster UI pace one site together instead of each being polite on its own. A slot further away
than `max_wait` is not taken: the caller records a `rate_limited` dead end instead of stalling a
worker. A 429 pushes the domain's next slot out by its Retry-After."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the in-process lock still paces threads
    fcntl = None  # type: ignore[assignment]

from mole_dag.paths import mole_home

# One request per second per domain: the customary polite crawl rate. A guess, flagged as one;
# robots.txt Crawl-delay raises it for a site that asks.
DEFAULT_INTERVAL_S = 1.0
# Longer than this in the queue for one site and the page is not worth a worker. A guess.
DEFAULT_MAX_WAIT_S = 30.0
# Retry-After values beyond this are clamped: a site cannot park a domain for a day.
MAX_PENALTY_S = 300.0


class RateLimited(Exception):
    def __init__(self, key: str, wait_s: float) -> None:
        super().__init__(f"{key}: next request slot is {wait_s:.0f}s away")
        self.key, self.wait_s = key, wait_s


class DomainLimiter:
    def __init__(
        self,
        directory: Path | None = None,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.directory = directory or mole_home() / "ratelimit"
        self.clock, self.sleep = clock, sleep
        self._lock = threading.Lock()

    def _path(self, key: str) -> Path:
        return self.directory / hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]

    def _update(self, key: str, fn: Callable[[float, float], tuple[float | None, float]]) -> float:
        """Run fn(now, next_free) -> (new next_free or None to leave it, result) under the lock."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with self._lock, open(self._path(key), "a+b") as fh:
            if fcntl is not None:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                fh.seek(0)
                raw = fh.read().decode("ascii", "replace").strip()
                try:
                    next_free = float(raw) if raw else 0.0
                except ValueError:  # a torn or foreign file: start afresh
                    next_free = 0.0
                now = self.clock()
                new, result = fn(now, next_free)
                if new is not None:
                    fh.seek(0)
                    fh.truncate()
                    fh.write(f"{new:.6f}".encode("ascii"))
                    fh.flush()
                    os.fsync(fh.fileno())
                return result
            finally:
                if fcntl is not None:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def reserve(self, key: str, interval_s: float, max_wait_s: float = DEFAULT_MAX_WAIT_S) -> float:
        """Take the domain's next slot; return how long to wait for it (not yet waited)."""

        def take(now: float, next_free: float) -> tuple[float | None, float]:
            slot = max(now, next_free)
            wait = slot - now
            if wait > max_wait_s:
                raise RateLimited(key, wait)
            return slot + max(interval_s, 0.0), wait

        return self._update(key, take)

    def acquire(self, key: str, interval_s: float, max_wait_s: float = DEFAULT_MAX_WAIT_S) -> None:
        """Take a slot and wait for it."""
        wait = self.reserve(key, interval_s, max_wait_s)
        if wait > 0:
            self.sleep(wait)

    def penalise(self, key: str, seconds: float) -> None:
        """The site said slow down (429): nobody asks it again before `seconds` have passed."""
        seconds = min(max(seconds, 0.0), MAX_PENALTY_S)

        def push(now: float, next_free: float) -> tuple[float | None, float]:
            return max(next_free, now + seconds), 0.0

        self._update(key, push)


_shared: dict[Path, DomainLimiter] = {}
_shared_lock = threading.Lock()


def shared_limiter() -> DomainLimiter:
    """The process's limiter for the current mole home (files make it machine-wide)."""
    directory = mole_home() / "ratelimit"
    with _shared_lock:
        lim = _shared.get(directory)
        if lim is None:
            lim = _shared[directory] = DomainLimiter(directory)
        return lim
