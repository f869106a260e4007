"""robots.txt, parsed with protego (longest-match rules, wildcards, Crawl-delay, as RFC 9309 and
the big crawlers read them) and cached per origin for every session in the process.

RFC 9309's outcomes: a 2xx body is the rules; a 4xx means there are none (everything allowed);
a 5xx or an unreachable server means assume everything is disallowed, so a site that is down or
refusing does not get crawled in the meantime."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from protego import Protego

# How long a parsed robots.txt is trusted. RFC 9309 says not more than 24 hours; an hour keeps a
# long session current. A guess, flagged as one.
TTL_S = 3600.0
# A server error is remembered briefly: long enough not to hammer it, short enough to recover.
ERROR_TTL_S = 60.0
# RFC 9309: crawlers must parse at least 500 KiB.
MAX_ROBOTS_BYTES = 512 * 1024
USER_AGENT_TOKEN = "mole-dag"


@dataclass(frozen=True)
class Rules:
    parser: Protego | None  # None with allow_all or disallow_all
    allow_all: bool = False
    disallow_all: bool = False

    def allows(self, url: str) -> bool:
        if self.allow_all:
            return True
        if self.disallow_all or self.parser is None:
            return False
        return bool(self.parser.can_fetch(url, USER_AGENT_TOKEN))

    def crawl_delay(self) -> float | None:
        if self.parser is None:
            return None
        delay = self.parser.crawl_delay(USER_AGENT_TOKEN)
        return float(delay) if delay is not None else None


ALLOW_ALL = Rules(None, allow_all=True)
DISALLOW_ALL = Rules(None, disallow_all=True)


def parse(text: str) -> Rules:
    return Rules(Protego.parse(text))


def origin_of(url: str) -> str:
    p = urlsplit(url)
    return f"{p.scheme.lower()}://{p.netloc.lower()}"


def robots_url(url: str) -> str:
    return origin_of(url) + "/robots.txt"


class RobotsCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[float, Rules]] = {}
        self._origin_locks: dict[str, threading.Lock] = {}

    def lock_for(self, url: str) -> threading.Lock:
        """Held while one worker fetches an origin's robots.txt, so the others wait for its
        answer instead of asking the site the same question at once."""
        with self._lock:
            return self._origin_locks.setdefault(origin_of(url), threading.Lock())

    def get(self, url: str) -> Rules | None:
        key = origin_of(url)
        with self._lock:
            got = self._entries.get(key)
            if got is None:
                return None
            if got[0] < time.monotonic():
                del self._entries[key]
                return None
            return got[1]

    def put(self, url: str, rules: Rules, ttl_s: float = TTL_S) -> None:
        with self._lock:
            self._entries[origin_of(url)] = (time.monotonic() + ttl_s, rules)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


shared_robots = RobotsCache()
