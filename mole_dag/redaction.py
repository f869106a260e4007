"""Secrets out of everything mole writes: cassettes, logs, dead-end details, error messages,
reports, Dagster metadata.

A key is handed to its provider's client and nothing else; but text that mole did not write
itself passes through on its way to a file: a server that echoes the request in an error body
("invalid x-api-key: Bearer sk-ant-…"), a response header carrying the key back, an exception
that quotes a URL with its password. So whatever mole writes from such text is passed through
`redact` first. What counts as a secret:

- every value mole knows to be one: environment variables named like credentials (…_API_KEY,
  …_TOKEN, …SECRET, …PASSWORD, …AUTH…), values under such keys in the config file, the
  passwords of URLs in the environment, and whatever a provider registered (`remember`);
- shapes that are secrets whoever they belong to: `Bearer <token>`, the password of a URL
  (`scheme://user:password@host`), a credential header or parameter written out
  (`x-api-key: …`, `api_key=…`), and the providers' key formats (`sk-…`, `sk-ant-…`).

`redact` is for text about the run (logs, errors, recordings). Text that quotes a source (a
report) takes `redact_known`: the known values and URL passwords only, so that a page's own
words are never rewritten by a pattern that happened to match them."""

from __future__ import annotations

import logging
import os
import re
import threading
from typing import Any

MASK = "[redacted]"
# Environment variables and config keys that hold credentials, by the usual naming.
_SECRET_NAME = re.compile(r"(API_?KEY|_TOKEN|^TOKEN|SECRET|PASSWORD|PASSWD|AUTH)", re.IGNORECASE)
# Shorter values are too likely to occur by chance in ordinary text to be worth replacing
# wherever they appear (the patterns below still catch them in a credential's shape).
MIN_SECRET_CHARS = 8

# scheme://user:password@host -> scheme://user:[redacted]@host
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@'\"<>]*:)([^@\s/'\"<>]+)(@)")
# A bearer or basic credential: a long run of token characters with a digit in it (so that
# "bearer instruments" in prose is left alone).
_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+)(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{12,}")
# A credential written out as a header or a parameter: x-api-key: …, api_key=…, "token": "…".
_NAMED = re.compile(
    r"(?i)\b(x-api-key|api[-_]?key|access[-_]?token|auth[-_]?token|secret|password)"
    r"(['\"]?\s*[:=]\s*['\"]?)(?!\[redacted\])([^\s'\"&,;}]{6,})"
)
# The providers' key formats: OpenAI (sk-, sk-proj-), Anthropic (sk-ant-…).
_KEY_SHAPE = re.compile(r"\bsk-[A-Za-z0-9_-]{16,}")

_registered: set[str] = set()
_registered_lock = threading.Lock()
# The config file's secrets, cached by its identity so a log line does not re-read the file.
_config_cache: tuple[tuple[str, int, int], list[str]] | None = None


def remember(*values: str | None) -> None:
    """Register secrets this process holds (a provider's key, however it got it)."""
    with _registered_lock:
        _registered.update(v for v in values if v and len(v) >= 4)


def _url_password(value: str) -> str | None:
    m = _URL_PASSWORD.search(value)
    return m.group(2) if m else None


def _config_secrets() -> list[str]:
    global _config_cache
    from mole_dag.config import config_path, load_config

    path = config_path()
    try:
        st = path.stat()
    except OSError:
        return []
    ident = (str(path), st.st_mtime_ns, st.st_size)
    if _config_cache is not None and _config_cache[0] == ident:
        return _config_cache[1]
    try:
        cfg = load_config(path)
    except Exception:  # noqa: BLE001 - an unreadable config has no keys to hide
        return []
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, str) and _SECRET_NAME.search(str(key)):
                    found.append(value)
                elif isinstance(value, str) and (pw := _url_password(value)):
                    found.append(pw)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(cfg)
    _config_cache = (ident, found)
    return found


def known_secrets() -> list[str]:
    """Every secret value this process knows of, longest first (so a key that contains another
    is masked whole)."""
    values: set[str] = set()
    for name, value in os.environ.items():
        if _SECRET_NAME.search(name):
            values.add(value)
        elif "://" in value and (pw := _url_password(value)):
            values.add(pw)
    values.update(_config_secrets())
    with _registered_lock:
        values.update(_registered)
    return sorted(
        (v for v in values if len(v) >= MIN_SECRET_CHARS or v in _registered),
        key=len,
        reverse=True,
    )


def redact_known(text: str, extra: tuple[str | None, ...] = ()) -> str:
    """The known secrets and URL passwords masked; nothing else touched."""
    if not text:
        return text
    for value in [*(e for e in extra if e and len(e) >= 4), *known_secrets()]:
        if value in text:
            text = text.replace(value, MASK)
    return _URL_PASSWORD.sub(lambda m: m.group(1) + MASK + m.group(3), text)


def redact(text: str, extra: tuple[str | None, ...] = ()) -> str:
    """`text` with every secret masked: the known values and the shapes of credentials."""
    text = redact_known(text, extra)
    if not text:
        return text
    text = _BEARER.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
    text = _NAMED.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
    return _KEY_SHAPE.sub(MASK, text)


def redact_all(value: Any) -> Any:
    """`redact` applied to every string inside a JSON-like value."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_all(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_all(v) for v in value]
    return value


# -- logging --------------------------------------------------------------------------------

_installed = False
_install_lock = threading.Lock()


def install_log_redaction() -> None:
    """Mask secrets in every log record this process makes, whichever logger and handler (ours,
    Dagster's, an SDK's): the record factory rewrites the message and any traceback before a
    handler or Dagster's log capture sees them. Idempotent."""
    global _installed
    with _install_lock:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            try:
                message = record.getMessage()
            except Exception:  # noqa: BLE001 - a malformed record is the logger's to report
                return record
            clean = redact(message)
            if clean != message:
                record.msg, record.args = clean, None
            if record.exc_info and not record.exc_text:
                record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            return record

        logging.setLogRecordFactory(factory)
        _installed = True
