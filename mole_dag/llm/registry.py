"""Build a session's provider from the config (mole_dag.skillsets picks its skills).

    extractive  no model (the offline default)
    anthropic   Claude through the official SDK (ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL, or the
                config's "anthropic" section)
    openai      any OpenAI-compatible endpoint (OPENAI_API_KEY / OPENAI_BASE_URL, or the config's
                "openai" section)
    cassette    replay a recorded session (MOLE_CASSETTE, or the config's "cassette": {"path"})

Keys come from the provider's environment variable first, then the config file, and are
handed to the provider's client only. MOLE_RECORD (or `mole research --record FILE`) records a
live provider's exchanges to a cassette."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mole_dag.config import ConfigError, config_path, first_set, load_config, section
from mole_dag.llm.default_models import DEFAULT_TIERS
from mole_dag.llm.provider import Provider, Tier

PROVIDERS = ("extractive", "anthropic", "openai", "cassette")
MODEL_PROVIDERS = ("anthropic", "openai")


class UnknownProvider(ValueError):
    pass


class MissingKey(ConfigError):
    pass


def default_provider(config: Mapping[str, Any] | None = None) -> str:
    """MOLE_PROVIDER, else the config's "provider", else extractive."""
    cfg = load_config() if config is None else config
    return first_set(os.environ.get("MOLE_PROVIDER"), cfg.get("provider")) or "extractive"


def _models(sect: Mapping[str, Any], name: str) -> dict[Tier, str]:
    raw = sect.get("models") or {}
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f'"{name}.models" in {config_path()} must be an object like '
            '{"cheap": "...", "strong": "..."}'
        )
    out: dict[Tier, str] = {}
    for key, value in raw.items():
        try:
            tier = Tier(str(key))
        except ValueError:
            raise ConfigError(
                f'"{name}.models" has an unknown tier {key!r}; the tiers are cheap and strong'
            ) from None
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f'"{name}.models.{key}" must be a model name')
        out[tier] = value.strip()
    return out


def _settings(name: str, cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Constructor arguments for a live provider. The key is read here and nowhere else."""
    sect = section(dict(cfg), name)
    if name == "anthropic":
        key = first_set(os.environ.get("ANTHROPIC_API_KEY"), sect.get("api_key"))
        if not key:
            raise MissingKey(
                "no Anthropic API key: set ANTHROPIC_API_KEY, or put it in "
                f'{config_path()} as {{"anthropic": {{"api_key": "..."}}}} (then chmod 600)'
            )
        return {
            "api_key": key,
            "base_url": first_set(os.environ.get("ANTHROPIC_BASE_URL"), sect.get("base_url")),
            "models": _models(sect, name),
        }
    from mole_dag.llm.openai_compat import DEFAULT_BASE_URL

    json_mode = sect.get("json_mode")
    if json_mode is not None and not isinstance(json_mode, bool):
        raise ConfigError(f'"openai.json_mode" in {config_path()} must be true or false')
    return {
        "api_key": first_set(os.environ.get("OPENAI_API_KEY"), sect.get("api_key")),
        "base_url": first_set(os.environ.get("OPENAI_BASE_URL"), sect.get("base_url"))
        or DEFAULT_BASE_URL,
        # true and absent both mean "ask, fall back if refused"; false never asks.
        "json_mode": None if json_mode in (None, True) else False,
        "models": _models(sect, name),
    }


def _make(
    kind: str, args: dict[str, Any], cassette: Any | None = None, sleep: Any | None = None
) -> Provider:
    extra: dict[str, Any] = {}
    if sleep is not None:
        extra["sleep"] = sleep
    if kind == "anthropic":
        import httpx2

        from mole_dag.llm.anthropic_provider import AnthropicProvider

        transport = cassette.transport(httpx2) if cassette is not None else None
        provider: Any = AnthropicProvider(transport=transport, **args, **extra)
    elif kind == "openai":
        import httpx

        from mole_dag.llm.openai_compat import OpenAICompatProvider

        transport = cassette.transport(httpx) if cassette is not None else None
        provider = OpenAICompatProvider(transport=transport, **args, **extra)
    else:
        raise UnknownProvider(
            f"a cassette of {kind!r} calls cannot be replayed; "
            f"recordable providers: {', '.join(MODEL_PROVIDERS)}"
        )
    provider.cassette = cassette  # for callers that check what a replay served
    return provider


def judge_model_of(name: str, cfg: Mapping[str, Any]) -> str | None:
    """MOLE_JUDGE_MODEL, else "<provider>": {"judge_model": ...} in the config, else None."""
    got = first_set(os.environ.get("MOLE_JUDGE_MODEL"), section(dict(cfg), name).get("judge_model"))
    return got.strip() if isinstance(got, str) and got.strip() else None


def _cassette_meta(
    kind: str, args: dict[str, Any], judge_model: str | None = None
) -> dict[str, Any]:
    """What a replay needs to send the same requests: the provider kind, the base URL's path and
    the tier models in effect (defaults included, so a later change of default cannot change
    what a replay sends)."""
    base = args.get("base_url") or ""
    return {
        "provider": kind,
        "base_path": urlsplit(base).path if base else "",
        "models": {str(t): m for t, m in {**DEFAULT_TIERS[kind], **args["models"]}.items()},
        "json_mode": args.get("json_mode"),
        "judge_model": judge_model,
    }


def build_provider(name: str, config: Mapping[str, Any] | None = None) -> Provider:
    from mole_dag.llm.cassette import Cassette, NoSleep

    cfg = load_config() if config is None else config
    if name == "cassette":
        path = first_set(
            os.environ.get("MOLE_CASSETTE"), section(dict(cfg), "cassette").get("path")
        )
        if not path:
            raise ConfigError(
                "the cassette provider needs a recording: pass --cassette FILE, "
                'set MOLE_CASSETTE, or set "cassette": {"path": ...} in '
                f"{config_path()}"
            )
        tape = Cassette.load(Path(path).expanduser())
        kind = str(tape.meta.get("provider"))
        models = {Tier(k): v for k, v in (tape.meta.get("models") or {}).items()}
        # The replay needs no key and reaches no host: the transport answers every request.
        base_path = tape.meta.get("base_path") or ""
        args: dict[str, Any] = {"base_url": f"http://cassette.invalid{base_path}", "models": models}
        if kind == "anthropic":
            args["api_key"] = "cassette-replay"
        else:
            args["json_mode"] = tape.meta.get("json_mode")
        return _make(kind, args, tape, sleep=NoSleep)
    args = _settings(name, cfg)
    record = first_set(os.environ.get("MOLE_RECORD"), cfg.get("record"))
    recording = (
        Cassette.record_to(
            Path(record).expanduser(), _cassette_meta(name, args, judge_model_of(name, cfg))
        )
        if record
        else None
    )
    return _make(name, args, recording)
