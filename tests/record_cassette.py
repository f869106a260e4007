"""Record tests/fixtures/cassettes/claude_session.jsonl: a whole `mole research` session through
the Anthropic provider, against the simulated Claude in tests/model_server.py on 127.0.0.1.

    .venv/bin/python -m tests.record_cassette

Run it again when a prompt, a tier default or the pipeline changes what is sent (the replay
test then fails with "record it again"). Everything happens in a temporary folder; the only
file written in the checkout is the cassette."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASSETTE = HERE / "fixtures" / "cassettes" / "claude_session.jsonl"
CORPUS = HERE / "fixtures" / "model_corpus"
QUESTION = "Does green tea affect sleep and stroke risk?"
SESSION_ID = "cassette-claude-1"
USD = "0.05"
# The key the recording was made with. Not a secret: the simulated server accepts anything,
# and request headers are never written to a cassette.
RECORDING_KEY = "sk-ant-recording-not-a-real-key"
# The models the recording is made as, pinned rather than the registry's defaults of the day:
# the tests over this cassette name them (`mole show`, decided_by), and their prices decide how
# many grounding checks fit the released escrow, hence the confidence explanations the tests
# expect. Re-recording after a prompt change (issue 14's judge prompt) then changes only what
# the prompt changed.
RECORDING_MODELS = {"cheap": "claude-haiku-4-5", "strong": "claude-sonnet-4-5"}


def research_args(*extra: str) -> list[str]:
    return [
        "research",
        QUESTION,
        "--usd",
        USD,
        "--corpus",
        str(CORPUS),
        "--session-id",
        SESSION_ID,
        "--no-report-print",
        *extra,
    ]


def prepare_home(root: Path) -> None:
    """A throwaway MOLE_HOME and DAGSTER_HOME (with the project's dagster.yaml) under root."""
    project = HERE.parent
    (root / "dagster").mkdir(parents=True, exist_ok=True)
    shutil.copy(project / "dagster.yaml", root / "dagster" / "dagster.yaml")
    os.environ["MOLE_HOME"] = str(root / "mole")
    os.environ["DAGSTER_HOME"] = str(root / "dagster")
    os.environ["XDG_CONFIG_HOME"] = str(root / "xdg")
    os.environ.pop("MOLE_DB", None)


def main() -> int:
    from mole_dag import cli
    from tests.model_server import ModelServer, SimulatedModel

    cwd = os.getcwd()
    with (
        tempfile.TemporaryDirectory() as tmp,
        ModelServer(SimulatedModel(throttle_first_mine=True)) as server,
    ):
        prepare_home(Path(tmp))
        config = Path(tmp) / "config.json"
        config.write_text(json.dumps({"anthropic": {"models": RECORDING_MODELS}}))
        config.chmod(0o600)  # the config loader refuses a key file others can read
        os.environ["MOLE_CONFIG"] = str(config)
        os.environ["ANTHROPIC_API_KEY"] = RECORDING_KEY
        os.environ["ANTHROPIC_BASE_URL"] = server.url
        out = Path(tmp) / "claude_session.jsonl"
        try:
            code = cli.main(research_args("--provider", "anthropic", "--record", str(out)))
        finally:
            os.chdir(cwd)
        if code != 0:
            print(f"recording failed (exit {code}); the cassette was not replaced", file=sys.stderr)
            return code
        CASSETTE.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(out, CASSETTE)
    print(f"recorded {len(CASSETTE.read_text('utf-8').splitlines()) - 1} exchanges to {CASSETTE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
