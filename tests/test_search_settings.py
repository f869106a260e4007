"""Search settings: flags over config, validation with clear errors, providers without a key or
URL skipped with a note, the config file refused unless private, and the CLI refusing bad input
before it writes anything."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mole_dag import cli
from mole_dag.actors.registry import actors_for
from mole_dag.actors.search_settings import (
    SearchSettings,
    SettingsError,
    availability,
    config_path,
    load_for_session,
    read_config,
    resolve_settings,
)
from mole_dag.actors.web import WebActor
from mole_dag.core import Unit
from mole_dag.launch import usable_search
from mole_dag.session import create_session
from mole_dag.store import Store
from mole_dag.store.records import SessionRow


def write_config(data: dict, mode: int = 0o600) -> Path:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), "utf-8")
    os.chmod(path, mode)
    return path


def test_defaults_to_local_without_config() -> None:
    assert read_config() == {}
    assert resolve_settings({}) == SearchSettings(("local",), None, ())


def test_flags_override_config_setting_by_setting() -> None:
    cfg = {
        "search": ["arxiv", "crossref"],
        "searxng_url": "http://127.0.0.1:8888/",
        "allow_hosts": ["Intranet.Example."],
    }
    s = resolve_settings(cfg)
    assert s == SearchSettings(
        ("arxiv", "crossref"), "http://127.0.0.1:8888", ("intranet.example",)
    )
    s = resolve_settings(cfg, search=["searxng", "searxng,pubmed"], allow_hosts=["[::1]"])
    assert s.providers == ("searxng", "pubmed") and s.allow_hosts == ("::1",)
    assert s.searxng_url == "http://127.0.0.1:8888"


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"search": ["google"]}, "unknown search provider 'google'"),
        ({"searxng_url": "127.0.0.1:8888"}, "--searxng-url expects an http(s) URL"),
        ({"allow_hosts": ["http://127.0.0.1/"]}, "--allow-host expects a host name"),
        ({"allow_hosts": ["10.0.0.0/8"]}, "--allow-host expects a host name"),
    ],
)
def test_bad_settings_say_what_to_change(kw: dict, message: str) -> None:
    with pytest.raises(SettingsError) as err:
        resolve_settings({}, **kw)
    assert message in str(err.value)


def test_provider_without_key_or_url_is_skipped_with_a_note() -> None:
    s = resolve_settings({}, search=["brave", "tavily", "searxng", "arxiv"])
    avail = availability(s, {})
    assert avail.usable == ("arxiv",)
    notes = "\n".join(avail.notes)
    assert "brave skipped: no API key (set BRAVE_API_KEY" in notes
    assert "tavily skipped: no API key (set TAVILY_API_KEY" in notes
    assert "searxng skipped: no instance URL (pass --searxng-url" in notes


def test_keys_come_from_config_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    s = resolve_settings({}, search=["brave", "tavily"])
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-env")
    assert availability(s, {"keys": {"brave": "from-config"}}).usable == ("brave", "tavily")


def test_nothing_usable_is_an_error() -> None:
    with pytest.raises(SettingsError, match="no usable search provider"):
        usable_search(search=["brave"], searxng_url=None, allow_hosts=None, note=lambda _: None)


def test_config_readable_by_others_is_refused() -> None:
    write_config({"keys": {"brave": "secret"}}, mode=0o644)
    with pytest.raises(SettingsError, match="chmod 600"):
        read_config()


def test_config_must_be_json_object() -> None:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[1, 2", "utf-8")
    os.chmod(path, 0o600)
    with pytest.raises(SettingsError, match="not valid JSON"):
        read_config()


def test_session_keeps_its_settings_and_builds_its_own_actors(store: Store) -> None:
    settings = SearchSettings(("searxng", "arxiv"), "http://127.0.0.1:9", ("127.0.0.1",))
    bal = create_session(
        store, "q?", Unit.USD_MICROS, 1_000_000, actors=settings.providers, search=settings
    )
    assert load_for_session(store, bal.session_id) == ("http://127.0.0.1:9", ("127.0.0.1",))
    session = store.one(SessionRow, "SELECT * FROM sessions WHERE id = $id", {"id": bal.session_id})
    assert session and session.actors == "searxng,arxiv"
    actors = actors_for(session, store)
    assert set(actors) == {"searxng", "arxiv"}
    sx = actors["searxng"]
    assert isinstance(sx, WebActor) and sx.fetcher.policy.allows("127.0.0.1")
    assert sx.provider.base_url == "http://127.0.0.1:9"  # type: ignore[attr-defined]
    # Another session with no allow-list gets a fetcher that allows nothing extra.
    other = create_session(
        store,
        "q2?",
        Unit.USD_MICROS,
        1_000_000,
        actors=("arxiv",),
        search=SearchSettings(("arxiv",)),
    )
    row = store.one(SessionRow, "SELECT * FROM sessions WHERE id = $id", {"id": other.session_id})
    assert row is not None
    ax = actors_for(row, store)["arxiv"]
    assert isinstance(ax, WebActor) and not ax.fetcher.policy.allows("127.0.0.1")
    assert ax.fetcher._client is not sx.fetcher._client  # pools never cross allow-lists


def test_allow_list_in_the_schema_refuses_urls(store: Store) -> None:
    import duckdb

    with pytest.raises(duckdb.ConstraintException), store.write() as cur:
        cur.execute("INSERT INTO session_search VALUES ('s', 'ftp://x', '', now())")


# --- the command line ------------------------------------------------------------------------


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = cli.main(["--db", str(config_path().parent / "cli.duckdb"), *argv])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--search", "google"], "unknown search provider 'google'"),
        (["--search", "brave"], "BRAVE_API_KEY"),
        (["--search", "searxng"], "--searxng-url"),
        (["--search", "searxng", "--searxng-url", "localhost:8888"], "expects an http(s) URL"),
        (["--search", "arxiv", "--allow-host", "http://x/"], "--allow-host expects"),
    ],
)
def test_cli_refuses_bad_search_flags_before_writing(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, err = run_cli(capsys, "research", "q?", "--usd", "0.10", *argv)
    assert code == cli.EXIT_USAGE and message in err
    db = config_path().parent / "cli.duckdb"
    if db.exists():
        s = Store(db)
        try:
            assert s.scalar("SELECT count(*) FROM sessions") == 0
        finally:
            s.close()


def test_cli_config_with_loose_mode_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    write_config({"search": ["arxiv"]}, mode=0o640)
    code, err = run_cli(capsys, "research", "q?", "--usd", "0.10")
    assert code == cli.EXIT_USAGE and "chmod 600" in err


def test_cli_notes_skipped_providers(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """brave has no key and is skipped with a note; the session goes on with local."""
    seen: dict = {}

    def fake_create(store, question, unit, total, **kw):  # type: ignore[no-untyped-def]
        seen.update(kw)
        raise cli.CliError("stop here")

    monkeypatch.setattr("mole_dag.session.create_session", fake_create)
    code, err = run_cli(
        capsys,
        "research",
        "q?",
        "--usd",
        "0.10",
        "--search",
        "brave",
        "--search",
        "local",
        "--allow-host",
        "127.0.0.1",
    )
    assert "search provider brave skipped: no API key" in err
    assert seen["actors"] == ("local",)
    assert seen["search"].allow_hosts == ("127.0.0.1",)
