"""Issue 22, "secrets never written": against an endpoint that echoes the credentials it is
sent (in a 401 error body, in a 200 body and the model's answer, and in response headers), a
recorded `mole research` writes no canary anywhere: no file under the data folder (store,
reports, indexes, Dagster's instance) or the working directory (the cassettes), nothing on
stdout or stderr. Three sessions, one per kind of secret: an Anthropic key from the
environment (sent as x-api-key), an OpenAI-compatible key from the config file (sent as a
bearer token), and a basic-auth password in the server's URL. The commands run in this process
(tests/sessions.py; issue 34: three `mole` processes and three more for `mole show` cost their
interpreters and imports, and what is written does not depend on the process); what they print
is read at the file descriptors too."""

from __future__ import annotations

import base64
import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from tests.model_server import ModelServer, Received, Reply, SimulatedModel
from tests.sessions import Outcome, run_mole

CORPUS = Path(__file__).parent / "fixtures" / "model_corpus"
QUESTION = "Does green tea affect sleep and stroke risk?"
ENV_KEY = "sk-ant-api03-CANARY-ENV-7d1e0a9c4b-do-not-leak"
CONFIG_KEY = "cfgkey-CANARY-CONFIG-2f8a61c0d3-do-not-leak"
URL_PASSWORD = "pw-CANARY-URL-55e0b7a913"
CANARIES = (ENV_KEY, CONFIG_KEY, URL_PASSWORD)


class Echoing(SimulatedModel):
    """Answers as the simulated model does, and gives back whatever credentials it was sent:
    the first mining request is refused with a 401 whose body quotes them; every other answer
    carries them in its headers, in an extra field of its JSON body and, for the planner, in
    the sub-question it proposes (the model's own text)."""

    def __init__(self) -> None:
        super().__init__(later_rounds=False)
        self.refused = False

    @staticmethod
    def sent(got: Received) -> str:
        """Every credential in the request, as the server saw it (basic auth decoded too)."""
        parts = []
        if got.headers.get("x-api-key"):
            parts.append(f"x-api-key: {got.headers['x-api-key']}")
        auth = got.headers.get("authorization", "")
        if auth:
            parts.append(f"Authorization: {auth}")
            if auth.lower().startswith("basic "):
                parts.append(base64.b64decode(auth.split()[1]).decode())
        return "; ".join(parts)

    def answer(self, got: Received) -> str:
        text = super().answer(got)
        if got.skill == "plan":
            plan = json.loads(text)
            for sq in plan["sub_questions"]:
                sq["text"] += f" (asked with {self.sent(got)})"
            text = json.dumps(plan)
        return text

    def __call__(self, got: Received) -> Reply:
        echo = self.sent(got)
        if got.skill == "mine" and not self.refused:
            self.refused = True
            message = f"invalid credentials: {echo}"
            if got.path.endswith("/chat/completions"):
                return Reply(401, {"error": {"type": "invalid_api_key", "message": message}})
            return Reply(
                401,
                {"type": "error", "error": {"type": "authentication_error", "message": message}},
            )
        reply = super().__call__(got)
        assert isinstance(reply.body, dict)
        reply.body["echo"] = echo
        reply.headers.update({"request-id": echo, "x-request-id": echo, "x-echo": echo})
        return reply


def _research(env: dict[str, str], cwd: Path, provider: str, sid: str, tape: str) -> Outcome:
    return run_mole(
        env,
        [
            "research", QUESTION, "--usd", "0.50", "--corpus", str(CORPUS),
            "--provider", provider, "--session-id", sid, "--record", tape,
        ],
        cwd,
    )  # fmt: skip


@pytest.mark.slow
def test_no_canary_is_written_against_an_echoing_endpoint(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    data, work, conf = tmp_path / "data", tmp_path / "work", tmp_path / "conf"
    for d in (data, work, conf):
        d.mkdir()
    config = conf / "config.json"
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MOLE_", "DAGSTER_", "ANTHROPIC_", "OPENAI_"))
    }
    base.update(MOLE_HOME=str(data), MOLE_CONFIG=str(config))
    printed: list[str] = []
    model = Echoing()
    with ModelServer(model) as server:
        host = server.url.removeprefix("http://")
        sessions = [
            # The Anthropic key from the environment, sent as x-api-key.
            ("anthropic", "s-env", {"ANTHROPIC_API_KEY": ENV_KEY,
                                    "ANTHROPIC_BASE_URL": server.url}, {}),
            # An OpenAI-compatible key from the config file, sent as a bearer token.
            ("openai", "s-config", {}, {"api_key": CONFIG_KEY, "base_url": f"{server.url}/v1"}),
            # A basic-auth password in the server's URL (from the environment).
            ("openai", "s-url", {"OPENAI_BASE_URL": f"http://mole:{URL_PASSWORD}@{host}/v1",
                                 "OPENAI_API_KEY": "unused-key"}, {}),
        ]  # fmt: skip
        for provider, sid, env_extra, openai_cfg in sessions:
            config.write_text(json.dumps({"openai": openai_cfg} if openai_cfg else {}))
            config.chmod(0o600)
            model.refused = False
            got = _research({**base, **env_extra}, work, provider, sid, f"{sid}.jsonl")
            assert got.code == 0, got.err
            printed += [got.out, got.err]
            shown = run_mole({**base, **env_extra}, ["show", sid], work)
            assert shown.code == 0, shown.err
            printed += [shown.out, shown.err]
    # What reached the file descriptors past sys.stdout and sys.stderr (a handler made before
    # the redirect, a C library), and the warnings a `mole` process prints through logging's
    # last-resort handler, which pytest's log capture takes here: printed all the same.
    printed += [*capfd.readouterr(), caplog.text]
    assert "mining chunk" in caplog.text  # the refused mining call's warning, read above

    # The endpoint really was sent each secret, and echoed it back in every way it could.
    sent = " ".join(Echoing.sent(r) for r in server.received)
    assert all(c in sent for c in CANARIES)
    assert sum(1 for r in server.replied if r.status == 401) == 3
    assert any(r.headers.get("request-id") for r in server.replied)
    # The refused call and the echoed sub-question reached the session: the search below
    # covers text that carried the canaries in.
    everything = "\n".join(printed)
    assert "refused the call (HTTP 401)" in everything and "(asked with" in everything

    files = [p for root in (data, work) for p in root.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"mole.duckdb", "s-env.jsonl", "s-config.jsonl", "s-url.jsonl"} <= names
    assert any(p.suffix == ".md" for p in files) and any("dagster" in p.parts for p in files)
    for path in files:
        content = path.read_bytes()
        for canary in CANARIES:
            assert canary.encode() not in content, f"{canary} written to {path}"
    for canary in CANARIES:
        assert canary not in everything, f"{canary} printed"
    # Recordings are the owner's alone.
    for sid in ("s-env", "s-config", "s-url"):
        assert stat.S_IMODE((work / f"{sid}.jsonl").stat().st_mode) == 0o600
    shutil.rmtree(work)
