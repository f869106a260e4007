"""Running `mole` in a test (issue 34): one way to give a command a data folder and Dagster
instance of its own and run it in this process, and the shared recorded session that tests which
only read a finished session use instead of each running their own.

A research session costs 5-8 CPU-seconds, nearly all of it Dagster's; a `mole` process adds
about one more for its interpreter and imports. So a test that needs a session it does not
change reads the shared one, and a command that is not about the process it runs in runs through
`mole_dag.cli.main` here (tests/test_cli.py keeps the `mole` process's own smoke test).
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from mole_dag.paths import PROJECT_ROOT
from mole_dag.store import Store


@dataclass(frozen=True)
class Outcome:
    """A command's exit code and what it printed."""

    code: int
    out: str
    err: str


def home_env(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment without any MOLE_/DAGSTER_/provider settings, pointed at a
    data folder `home` with its own Dagster instance (the project's dagster.yaml copied in),
    config file and XDG config folder; `extra` on top (a provider's key and URL, say)."""
    dagster = home / "dagster"
    dagster.mkdir(parents=True, exist_ok=True)
    shutil.copy(PROJECT_ROOT / "dagster.yaml", dagster / "dagster.yaml")
    return _env_of(home, **extra)


def _env_of(home: Path, **extra: str) -> dict[str, str]:
    """home_env's environment, writing nothing (for a folder another process may be reading)."""
    dagster = home / "dagster"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MOLE_", "DAGSTER_", "ANTHROPIC_", "OPENAI_"))
    }
    env.update(
        MOLE_HOME=str(home),
        DAGSTER_HOME=str(dagster),
        MOLE_CONFIG=str(home / "config.json"),
        XDG_CONFIG_HOME=str(home / "xdg-config"),
    )
    env.update(extra)
    return env


@contextmanager
def as_process(env: Mapping[str, str], cwd: Path | None = None) -> Iterator[None]:
    """This process's environment and working folder as a `mole` process given `env` and
    started in `cwd` (default: here) would have them, for `cli.main` (which changes into
    DAGSTER_HOME); both restored after."""
    with pytest.MonkeyPatch.context() as mp:
        for key in list(os.environ):
            if key not in env:
                mp.delenv(key)
        for key, value in env.items():
            mp.setenv(key, value)
        mp.chdir(os.getcwd())
        if cwd is not None:
            os.chdir(cwd)
        yield


def run_mole(env: Mapping[str, str], argv: list[str], cwd: Path | None = None) -> Outcome:
    """`mole <argv>` run to its end in this process with the environment `env`, from `cwd`.
    What it prints through sys.stdout and sys.stderr is returned; anything written to the file
    descriptors themselves is not (a test that must see everything also reads capfd)."""
    from mole_dag import cli

    out, err = io.StringIO(), io.StringIO()
    with as_process(env, cwd), redirect_stdout(out), redirect_stderr(err):
        code = cli.main(argv)
    return Outcome(code, out.getvalue(), err.getvalue())


@dataclass(frozen=True)
class RecordedSession:
    """A finished session in a data folder of its own, which the tests reading it must not
    change: open its store read-only, or run commands on a `copy_to` of it."""

    home: Path
    session_id: str
    research: Outcome

    @property
    def env(self) -> dict[str, str]:
        """The session's environment for a command; the folder is made already, so nothing is
        written to it (other test processes may be reading it)."""
        return _env_of(self.home)

    @property
    def store_path(self) -> Path:
        return self.home / "mole.duckdb"

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster"

    def store(self) -> Store:
        return Store(self.store_path, read_only=True)

    def to_json(self) -> dict[str, Any]:
        """For tests/once.py, which hands a value made by one test process to the others."""
        return {"home": str(self.home), "session_id": self.session_id, **asdict(self.research)}

    @classmethod
    def from_json(cls, got: dict[str, Any]) -> RecordedSession:
        return cls(
            Path(got["home"]), got["session_id"], Outcome(got["code"], got["out"], got["err"])
        )

    def copy_to(self, dest: Path) -> RecordedSession:
        """The same session in a data folder of the caller's, to run commands that may write."""
        shutil.copytree(self.home, dest)
        return RecordedSession(dest, self.session_id, self.research)


def replay_cassette_session(home: Path) -> RecordedSession:
    """tests/fixtures/cassettes/claude_session.jsonl replayed by `mole research` in `home`: the
    recorded Claude session, through the Dagster jobs, as a user's run would be."""
    from tests.record_cassette import CASSETTE, SESSION_ID, research_args

    assert CASSETTE.is_file(), "record it with: .venv/bin/python -m tests.record_cassette"
    done = run_mole(
        home_env(home), research_args("--provider", "cassette", "--cassette", str(CASSETTE))
    )
    assert done.code == 0, done.err
    return RecordedSession(home, SESSION_ID, done)


# The extractive CLI session the shared fixture makes: no model, the mini corpus.
CLI_QUESTION = "Does green tea affect sleep?"
CLI_SESSION_ID = "s-cli"


def extractive_cli_session(home: Path, corpus: Path) -> RecordedSession:
    """`mole research` without a model over `corpus` (tests/conftest.py's mini corpus) in
    `home`: a session whose runs, tags and observations a user's CLI run would leave in the
    Dagster instance the UI reads."""
    argv = ["research", CLI_QUESTION, "--tokens", "20000", "--corpus", str(corpus)]
    done = run_mole(home_env(home), [*argv, "--session-id", CLI_SESSION_ID])
    assert done.code == 0, done.err
    return RecordedSession(home, CLI_SESSION_ID, done)
