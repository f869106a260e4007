"""Which search providers a session uses, where its SearXNG is, which hosts its fetcher may reach
despite the SSRF guard, and the keys the paid providers need.

Settings come from the command line (or the UI's launch config), falling back to the user's
config file (see mole_dag/config.py: XDG-aware, or $MOLE_CONFIG, refused unless only its owner
can read it, because it holds keys). Its search part:

    {"search": ["searxng", "arxiv"], "searxng_url": "http://127.0.0.1:8888",
     "allow_hosts": ["127.0.0.1"], "contact_email": "me@example.org",
     "keys": {"brave": "...", "tavily": "...", "pubmed": "...", "openalex": "..."}}

Keys may also come from each provider's usual environment variable. A provider whose key or URL
is missing is skipped with a note that says what to set; keys are never stored or logged."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mole_dag.actors.fetch.hosts import normalise_host
from mole_dag.actors.search import SEARCH_PROVIDERS, SPECS
from mole_dag.config import ConfigError, config_path, load_config
from mole_dag.store import Store, q, utcnow

LOCAL = "local"
ALL_PROVIDERS = (LOCAL, *SEARCH_PROVIDERS)


class SettingsError(ValueError):
    """Search settings that cannot be used; the message says what to change."""


def read_config(path: Path | None = None) -> dict[str, Any]:
    """The user's config (mole_dag.config: the one reader of that file), or {} when there is
    none; its errors surface here as SettingsError so the CLI reports them in one line."""
    try:
        return load_config(path)
    except ConfigError as exc:
        raise SettingsError(str(exc)) from None


@dataclass(frozen=True)
class SearchSettings:
    providers: tuple[str, ...] = (LOCAL,)
    searxng_url: str | None = None
    allow_hosts: tuple[str, ...] = ()


def _list(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"{what} must be a list of strings")
    return value


def check_url(url: str) -> str:
    url = url.strip()
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if not parts or parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(
            f"--searxng-url expects an http(s) URL like http://127.0.0.1:8888, got {url!r}"
        )
    return url.rstrip("/")


def check_host(host: str) -> str:
    h = normalise_host(host)
    if not h or any(c in h for c in "/@?#, \t") or "://" in host:
        raise SettingsError(
            f"--allow-host expects a host name or IP address like 127.0.0.1, got {host!r}"
        )
    return h


def resolve_settings(
    config: dict[str, Any],
    *,
    search: list[str] | None = None,
    searxng_url: str | None = None,
    allow_hosts: list[str] | None = None,
) -> SearchSettings:
    """Flags win over config, setting by setting. Validates names, URL and hosts."""
    names = search if search else _list(config.get("search"), "config `search`") or [LOCAL]
    providers: list[str] = []
    for raw in names:
        for name in (n.strip().lower() for n in raw.split(",")):
            if not name:
                continue
            if name not in ALL_PROVIDERS:
                raise SettingsError(
                    f"unknown search provider {name!r}; available: {', '.join(ALL_PROVIDERS)}"
                )
            if name not in providers:
                providers.append(name)
    url = searxng_url or config.get("searxng_url")
    if url is not None and not isinstance(url, str):
        raise SettingsError("config `searxng_url` must be a string")
    hosts = allow_hosts if allow_hosts else _list(config.get("allow_hosts"), "config `allow_hosts`")
    return SearchSettings(
        providers=tuple(providers or [LOCAL]),
        searxng_url=check_url(url) if url else None,
        allow_hosts=tuple(dict.fromkeys(check_host(h) for h in hosts)),
    )


def api_key(name: str, config: dict[str, Any]) -> str | None:
    keys = config.get("keys")
    if isinstance(keys, dict) and isinstance(keys.get(name), str) and keys[name].strip():
        return keys[name].strip()
    spec = SPECS.get(name)
    for env in spec.key_env if spec else ():
        if os.environ.get(env, "").strip():
            return os.environ[env].strip()
    return None


def contact_email(config: dict[str, Any]) -> str | None:
    value = config.get("contact_email") or os.environ.get("MOLE_CONTACT_EMAIL")
    return value.strip() if isinstance(value, str) and "@" in value else None


@dataclass(frozen=True)
class Availability:
    usable: tuple[str, ...]
    notes: tuple[str, ...]  # one line per skipped provider, saying what to set


def availability(settings: SearchSettings, config: dict[str, Any]) -> Availability:
    usable: list[str] = []
    notes: list[str] = []
    for name in settings.providers:
        spec = SPECS.get(name)
        if spec and spec.needs_key and not api_key(name, config):
            envs = " or ".join(spec.key_env)
            notes.append(
                f"search provider {name} skipped: no API key (set {envs}, or "
                f"`keys.{name}` in {config_path()})"
            )
            continue
        if spec and spec.needs_url and not settings.searxng_url:
            notes.append(
                f"search provider {name} skipped: no instance URL (pass --searxng-url "
                f"URL, or set `searxng_url` in {config_path()})"
            )
            continue
        usable.append(name)
    return Availability(tuple(usable), tuple(notes))


def save_for_session(store: Store, session_id: str, settings: SearchSettings) -> None:
    store.transact(
        lambda cur: cur.execute(
            q("session_search_insert"),
            {
                "session_id": session_id,
                "searxng_url": settings.searxng_url,
                "allow_hosts": ",".join(settings.allow_hosts),
                "now": utcnow(),
            },
        )
    )


def load_for_session(store: Store, session_id: str) -> tuple[str | None, tuple[str, ...]]:
    row = store.row(q("session_search_get"), {"session_id": session_id})
    if row is None:
        return None, ()
    hosts = tuple(h for h in str(row["allow_hosts"] or "").split(",") if h)
    return row["searxng_url"], hosts
