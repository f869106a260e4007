"""Shared fixtures. Every test gets its own MOLE_HOME, so nothing touches the project's .mole/."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from mole_dag.budget import Ledger
from mole_dag.paths import PROJECT_ROOT
from mole_dag.store import Store

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("mole-home")
    monkeypatch.setenv("MOLE_HOME", str(home))
    monkeypatch.delenv("MOLE_DB", raising=False)
    monkeypatch.delenv("MOLE_PROVIDER", raising=False)
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
    root = tmp_path / "corpus"
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


# -- Postgres (temporary: until the shared server fixture lands) ------------------------------


@pytest.fixture
def pg_dsn() -> Iterator[str]:
    import os
    import uuid

    admin = os.environ.get("MOLE_TEST_PG_DSN")
    if not admin:
        pytest.skip("no PostgreSQL server: set MOLE_TEST_PG_DSN")
    import psycopg

    from mole_dag.store import pg

    name = f"mole_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    base = admin.rsplit("/", 1)[0]
    url = f"{base}/{name}"
    yield url
    pg.close_url(url)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
