"""The config file: where it lives (XDG), refusing it when others can read it, and how keys,
base URLs and tier models are resolved from it and the environment."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mole_dag.config import ConfigError, config_path, load_config
from mole_dag.llm.provider import Tier
from mole_dag.llm.registry import MissingKey, UnknownProvider, default_provider
from mole_dag.skillsets import skills_for


def _write(path: Path, data: object, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, "utf-8")
    os.chmod(path, mode)
    return path


def test_mole_config_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOLE_CONFIG", str(tmp_path / "elsewhere.json"))
    assert config_path() == tmp_path / "elsewhere.json"


def test_path_follows_xdg_config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MOLE_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config_path() == tmp_path / "xdg" / "mole" / "config.json"


def test_path_defaults_to_dot_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MOLE_CONFIG")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config_path() == tmp_path / ".config" / "mole" / "config.json"


def test_relative_xdg_config_home_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MOLE_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config_path() == tmp_path / ".config" / "mole" / "config.json"


def test_missing_file_is_an_empty_config() -> None:
    assert not config_path().exists()
    assert load_config() == {}


def test_private_file_is_read() -> None:
    _write(config_path(), {"provider": "anthropic"})
    assert load_config() == {"provider": "anthropic"}


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o606, 0o620])
def test_file_others_can_access_is_refused_with_chmod_advice(mode: int) -> None:
    path = _write(config_path(), {"anthropic": {"api_key": "sk-ant-secret-value"}}, mode)
    with pytest.raises(ConfigError) as exc:
        load_config()
    msg = str(exc.value)
    assert f"chmod 600 {path}" in msg
    assert f"{mode:04o}" in msg
    assert "sk-ant-secret-value" not in msg


def test_refused_config_stops_a_model_provider_before_anything() -> None:
    _write(config_path(), {"anthropic": {"api_key": "k"}}, 0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        skills_for("anthropic")
    # The offline default never needs the file, so a bad file does not break it.
    assert skills_for("extractive").name == "extractive"


def test_bad_json_names_the_line() -> None:
    _write(config_path(), '{"provider": "anthropic",\n "x": }')
    with pytest.raises(ConfigError, match="line 2"):
        load_config()


def test_non_object_is_refused() -> None:
    _write(config_path(), "[1, 2]")
    with pytest.raises(ConfigError, match="JSON object"):
        load_config()


def test_default_provider_env_then_file(monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_provider({}) == "extractive"
    assert default_provider({"provider": "openai"}) == "openai"
    monkeypatch.setenv("MOLE_PROVIDER", "anthropic")
    assert default_provider({"provider": "openai"}) == "anthropic"


def test_unknown_provider() -> None:
    with pytest.raises(UnknownProvider, match="available: extractive, anthropic, openai"):
        skills_for("gemini")


def test_anthropic_without_a_key_says_where_to_put_one() -> None:
    with pytest.raises(MissingKey) as exc:
        skills_for("anthropic", {})
    assert "ANTHROPIC_API_KEY" in str(exc.value) and "chmod 600" in str(exc.value)


def test_key_from_file_and_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    from mole_dag.llm.registry import _settings

    cfg = {
        "anthropic": {
            "api_key": "from-file",
            "base_url": "http://file.invalid",
            "models": {"cheap": "claude-3-5-haiku"},
        }
    }
    got = _settings("anthropic", cfg)
    assert got["api_key"] == "from-file" and got["base_url"] == "http://file.invalid"
    assert got["models"] == {Tier.CHEAP: "claude-3-5-haiku"}
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://env.invalid")
    got = _settings("anthropic", cfg)
    assert got["api_key"] == "from-env" and got["base_url"] == "http://env.invalid"


def test_tier_models_are_configurable_and_checked() -> None:
    sk = skills_for(
        "anthropic",
        {
            "anthropic": {
                "api_key": "k",
                "models": {"cheap": "claude-3-5-haiku", "strong": "claude-opus-4-1"},
            }
        },
    )
    assert sk.models() == {Tier.CHEAP: "claude-3-5-haiku", Tier.STRONG: "claude-opus-4-1"}
    with pytest.raises(ConfigError, match="unknown tier 'fast'"):
        skills_for("anthropic", {"anthropic": {"api_key": "k", "models": {"fast": "x"}}})


def test_openai_json_mode_setting() -> None:
    from mole_dag.llm.registry import _settings

    assert _settings("openai", {})["json_mode"] is None
    assert _settings("openai", {"openai": {"json_mode": False}})["json_mode"] is False
    with pytest.raises(ConfigError, match="true or false"):
        _settings("openai", {"openai": {"json_mode": "yes"}})


def test_session_launched_without_a_provider_takes_the_default(
    store: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The UI path: a session created from launch config that names no provider gets
    MOLE_PROVIDER, else the config file's provider, else extractive."""
    from mole_dag.session import ensure_session
    from mole_dag.store import q

    def provider_of(sid: str) -> str:
        return store.row(q("session_get"), {"session_id": sid})["provider"]  # type: ignore[attr-defined]

    ensure_session(store, "s-plain", question="q?", usd="0.10")  # type: ignore[arg-type]
    assert provider_of("s-plain") == "extractive"
    _write(config_path(), {"provider": "openai"})
    ensure_session(store, "s-file", question="q?", usd="0.10")  # type: ignore[arg-type]
    assert provider_of("s-file") == "openai"
    monkeypatch.setenv("MOLE_PROVIDER", "anthropic")
    # The UI path now runs the launch check, which refuses a provider without its key.
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
    ensure_session(store, "s-env", question="q?", usd="0.10")  # type: ignore[arg-type]
    assert provider_of("s-env") == "anthropic"
    # A cassette session needs its recording, from the UI as from the command line.
    tape = Path(__file__).parent / "fixtures" / "cassettes" / "claude_session.jsonl"
    monkeypatch.setenv("MOLE_CASSETTE", str(tape))
    ensure_session(
        store,
        "s-named",
        question="q?",
        usd="0.10",  # type: ignore[arg-type]
        provider="cassette",
    )
    assert provider_of("s-named") == "cassette"
    # An existing session is found without reading the config at all.
    os.chmod(config_path(), 0o644)
    ensure_session(store, "s-file")  # type: ignore[arg-type]
