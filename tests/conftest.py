"""Shared fixtures. Every test gets its own MOLE_HOME, so nothing touches the project's .mole/."""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from mole_dag.budget import Ledger
from mole_dag.paths import PROJECT_ROOT
from mole_dag.store import Store
from tests import pg_server
from tests.once import once_per_run
from tests.sessions import RecordedSession, extractive_cli_session, replay_cassette_session

FIXTURES = Path(__file__).parent / "fixtures"

# Per-test CPU-seconds when MOLE_TEST_CPU_LOG is set (issue 34; tests/cpu_times.py).
pytest_plugins = ["tests.cpu_times"]


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("mole-home")
    monkeypatch.setenv("MOLE_HOME", str(home))
    monkeypatch.delenv("MOLE_DB", raising=False)
    monkeypatch.delenv("MOLE_PROVIDER", raising=False)
    # `make test` exports DAGSTER_HOME=<checkout>/.mole/dagster, which a fresh clone (CI) has not
    # made: a `mole` subprocess that inherited it refused to run. Without it the CLI uses the
    # test's MOLE_HOME/dagster; tests that want their own set it (the dagster_home fixture).
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    # The scale-out profile's variables, if the developer's shell has them.
    for var in ("MOLE_DAGSTER_PG_URL", "MOLE_DASK_SCHEDULER", "MOLE_DRIVER_INTERVAL_S"):
        monkeypatch.delenv(var, raising=False)
    # Search settings (issue 4): never the developer's own config file or API keys.
    monkeypatch.setenv("MOLE_CONFIG", str(home / "config.json"))
    for var in (
        "BRAVE_API_KEY",
        "BRAVE_SEARCH_API_KEY",
        "TAVILY_API_KEY",
        "NCBI_API_KEY",
        "OPENALEX_API_KEY",
        "MOLE_CONTACT_EMAIL",
    ):
        monkeypatch.delenv(var, raising=False)
    return home


# The store's two backends (issue 14). A test marked `both_backends` that uses `store_target`
# (directly, or through `store` / `ledger`) runs once on a DuckDB file and once on a fresh
# Postgres database; the Postgres case skips with the reason where no server is available
# (never in CI: .ci/run starts one and sets MOLE_REQUIRE_PG).
BACKENDS = ("duckdb", "postgres")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test's hang limit (pytest-timeout: the ini's `timeout`, or its own marker) scaled
    by how loaded this machine is now (tests/machine.py): 300 s suits an idle machine, not a
    second `make test` running beside this one."""
    from tests.machine import slowdown

    factor = slowdown()
    if factor <= 1.0:
        return
    default = float(config.getini("timeout") or 0)
    for item in items:
        marker = item.get_closest_marker("timeout")
        base = float(marker.args[0]) if marker and marker.args else default
        if base > 0:
            item.add_marker(pytest.mark.timeout(base * factor), append=False)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("both_backends") and (
        "store_target" in metafunc.fixturenames
    ):
        metafunc.parametrize("store_target", BACKENDS, indirect=True)


@pytest.fixture
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the test's store lives: a DuckDB file by default, a Postgres URL for the
    `postgres` case of a `both_backends` test."""
    backend = getattr(request, "param", "duckdb")
    if backend == "duckdb":
        return str(tmp_path / "test.duckdb")
    return str(request.getfixturevalue("pg_dsn"))


@pytest.fixture
def store(store_target: str) -> Iterator[Store]:
    s = Store(store_target)
    yield s
    s.close()


@pytest.fixture
def ledger(store: Store) -> Ledger:
    return Ledger(store)


@pytest.fixture
def mini_corpus(tmp_path: Path) -> Path:
    """A small self-contained corpus with a planted duplicate, contradiction and supersession."""
    return write_mini_corpus(tmp_path)


def write_mini_corpus(parent: Path) -> Path:
    """The mini_corpus fixture's documents in `parent`/corpus (for module-scoped fixtures)."""
    root = parent / "corpus"
    root.mkdir()
    docs = {
        "a.md": (
            "https://www.alpha-news.com/tea",
            "2021-03-01",
            "Green tea and sleep. Drinking green tea in the evening raises the risk of "
            "poor sleep in adults who are sensitive to caffeine. Many people enjoy green "
            "tea with meals. The wire report said that green tea drinkers had a lower risk "
            "of stroke in a large cohort study of older adults.",
        ),
        "b.md": (
            "https://www.beta-health.org/tea",
            "2021-06-01",
            "Evening tea. Drinking green tea in the evening does not raise the risk of poor "
            "sleep in adults who are sensitive to caffeine. The wire report said that green "
            "tea drinkers had a lower risk of stroke in a large cohort study of older "
            "adults.",
        ),
        "c.txt": (
            "https://www.tea-agency.gov/classification",
            "2005-01-10",
            "Green tea extract is classified as a possible liver toxin because of reports "
            "of liver injury in green tea drinkers.",
        ),
        "d.txt": (
            "https://www.tea-agency.gov/classification-2019",
            "2019-05-02",
            "Green tea extract is no longer classified as a possible liver toxin because "
            "the reports of liver injury in green tea drinkers were not confirmed.",
        ),
        "e.md": (
            "https://gamma.github.io/tea",
            "2022-01-01",
            "Brewing notes. Green tea drinkers had a lower risk of stroke in a large cohort "
            "study of older adults, the wire report said. Water at eighty degrees makes a "
            "pleasant cup of green tea for most drinkers.",
        ),
    }
    for name, (url, date, body) in docs.items():
        (root / name).write_text(
            f"---\ntitle: {name}\nurl: {url}\npublished: {date}\n---\n{body}\n", "utf-8"
        )
    return root


@pytest.fixture(autouse=True)
def _isolated_model_config(_isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Model providers (issue 3): no test reads the developer's config file or provider keys, or
    records a cassette. The config file is MOLE_HOME/config.json (set here and by any other
    fixture to the same path, so their order does not matter)."""
    monkeypatch.setenv("MOLE_CONFIG", str(_isolated_home / "config.json"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(_isolated_home / "xdg-config"))
    for var in (
        "MOLE_CASSETTE",
        "MOLE_RECORD",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    ):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def dagster_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A DAGSTER_HOME of the test's own with the project's dagster.yaml, for in-process CLI runs
    (the CLI changes into DAGSTER_HOME; monkeypatch restores the working directory)."""
    home = tmp_path / "dagster-home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home


# PostgreSQL (issue 14). One server per test process (each pytest-xdist worker starts its own,
# ~1 s), one fresh database per test. CI starts a server itself and passes its superuser DSN in
# MOLE_TEST_PG_DSN, with MOLE_REQUIRE_PG=1 so a missing server fails instead of skipping.


def _pg_unavailable(reason: str) -> None:
    if os.environ.get("MOLE_REQUIRE_PG") == "1":
        pytest.fail(f"{reason} (MOLE_REQUIRE_PG=1: PostgreSQL tests may not skip)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pg_superuser_dsn() -> Iterator[str]:
    """A superuser DSN (postgresql://...) of a running server: CI's, else a private one this
    process starts on 127.0.0.1 and always stops at the end of the session."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _pg_unavailable("psycopg not installed: pip install -e '.[postgres]' (or '.[dev]')")
    given = os.environ.get("MOLE_TEST_PG_DSN")
    if given:
        yield given
        return
    try:
        server = pg_server.start()
    except pg_server.PgUnavailable as exc:
        _pg_unavailable(str(exc))
        raise AssertionError("unreachable") from exc
    try:
        yield server.dsn
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_bindir() -> Path:
    """The PostgreSQL binaries' folder, for tests that start servers of their own."""
    bindir = pg_server.find_bindir()
    if bindir is None:
        _pg_unavailable("PostgreSQL not installed: no initdb/postgres/pg_isready found")
        raise AssertionError("unreachable")
    return bindir


def _close_store_pool(url: str) -> None:
    """Close this process's connection pool for the database (the store keeps one per URL)."""
    from mole_dag.store import pg

    pg.close_url(url)


def with_dbname(dsn: str, dbname: str) -> str:
    """The same server URL with another database."""
    parts = urlsplit(dsn)
    if parts.scheme not in ("postgresql", "postgres"):
        raise ValueError(f"expected a postgresql:// URL, got scheme {parts.scheme!r}")
    return urlunsplit(parts._replace(path=f"/{dbname}"))


@pytest.fixture
def pg_dsn(pg_superuser_dsn: str) -> Iterator[str]:
    """A fresh, empty database for this test (postgresql://... URL), dropped after it."""
    import psycopg
    from psycopg import sql

    name = f"mole_t_{secrets.token_hex(6)}"
    with psycopg.connect(pg_superuser_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = with_dbname(pg_superuser_dsn, name)
    try:
        yield url
    finally:
        _close_store_pool(url)
        with psycopg.connect(pg_superuser_dsn, autocommit=True) as conn:
            # FORCE: a pool or a Dagster process the test left open must not keep it alive.
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture(scope="session")
def cassette_session(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> RecordedSession:
    """The recorded Claude session (tests/fixtures/cassettes/claude_session.jsonl) replayed
    once per `pytest -n` run (tests/once.py), for the tests that only read a finished model
    session: its report, graph, scorecard, `mole show`, Dagster's materializations (issue 34:
    each ran its own). Every test process reads the same folder: open it read-only."""
    return RecordedSession.from_json(
        once_per_run(
            tmp_path_factory,
            worker_id,
            "cassette-session",
            lambda: replay_cassette_session(
                tmp_path_factory.mktemp("cassette-session") / "home"
            ).to_json(),
        )
    )


@pytest.fixture(scope="session")
def cli_session(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> RecordedSession:
    """An extractive `mole research` over the mini corpus, run once per `pytest -n` run
    (tests/once.py), for the tests that only read what a CLI run leaves in Dagster's instance
    (issue 34). Every test process reads the same folder: open it read-only."""

    def make() -> dict[str, Any]:
        root = tmp_path_factory.mktemp("cli-session")
        return extractive_cli_session(root / "home", write_mini_corpus(root)).to_json()

    return RecordedSession.from_json(once_per_run(tmp_path_factory, worker_id, "cli-session", make))
