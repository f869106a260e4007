"""The user's config file: `$XDG_CONFIG_HOME/mole/config.json` (default `~/.config/mole/`).

It holds API keys, so it is refused unless only its owner can read it: a key readable by every
account on the machine is a leaked key, and saying so beats using it. Keys read from here (or
from the provider's usual environment variable) are passed straight to the client that needs
them and go nowhere else: not into logs, Dagster run config or metadata, reports or the store.

    {
      "provider": "anthropic",
      "anthropic": {"api_key": "...", "models": {"cheap": "claude-haiku-4-5",
                                                  "strong": "claude-sonnet-4-5"}},
      "openai": {"base_url": "http://127.0.0.1:11434/v1", "api_key": "...",
                 "models": {"cheap": "llama3.1:8b", "strong": "llama3.1:70b"},
                 "json_mode": true},
      "pricing": {"llama3.1:8b": {"input": 0, "output": 0}}
    }
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """The config file exists but cannot be used; the message says how to fix it."""


def config_path() -> Path:
    """Where the config lives. MOLE_CONFIG names a file outright (tests, several profiles)."""
    explicit = os.environ.get("MOLE_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or ""
    # XDG: a relative XDG_CONFIG_HOME is invalid and must be ignored.
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "mole" / "config.json"


def check_private(path: Path) -> None:
    """Refuse a file that anyone but its owner can read or write."""
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise ConfigError(
            f"{path} is accessible to other users (mode {mode:04o}) and holds API keys; "
            f"run `chmod 600 {path}` and try again"
        )


def load_config(path: Path | None = None) -> dict[str, Any]:
    """The parsed config, or {} when there is none. Never returns a partially read file."""
    path = path or config_path()
    if not path.exists():
        return {}
    if not path.is_file():
        raise ConfigError(f"{path} is not a regular file")
    check_private(path)
    try:
        data = json.loads(path.read_text("utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} cannot be read: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a JSON object, not {type(data).__name__}")
    return data


def section(config: dict[str, Any], name: str) -> dict[str, Any]:
    got = config.get(name) or {}
    if not isinstance(got, dict):
        raise ConfigError(f'"{name}" in {config_path()} must be an object')
    return got


def first_set(*values: Any) -> str | None:
    """The first non-empty string among values (environment first, then the file)."""
    for v in values:
        if isinstance(v, str) and v.strip():
            return v.strip()
    return None
