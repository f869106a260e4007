"""mole-mcp driven by the official MCP client the way a coding agent drives it.

Each test gives the server its own MOLE_HOME and DAGSTER_HOME (the extractive provider, no
network) and talks to it in this process; the test that stops the server spawns the `mole-mcp`
entry point as a subprocess over stdio, as an agent does, which the client stops when the
connection closes. Research sessions run detached; a fixture ends any worker still alive."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from survey_data import survey_csv  # noqa: F401 - fixture

from mole_dag.mcp.workers import _alive
from mole_dag.paths import PROJECT_ROOT
from mole_dag.store import Store
from tests.sessions import as_process

BIN = Path(sys.executable).parent
CANARY = "sk-ant-api03-MCP-CANARY-77c1e0d2-do-not-leak"
# Bounded waits. Generous: a research session here takes seconds, CI machines are slow.
FINISH_WITHIN_S = 240.0

TOOLS = {
    "research",
    "resume",
    "session_status",
    "report",
    "trace",
    "eval",
    "diff",
    "chunk",
    "find_quote",
    "publisher_of",
    "confidence",
    "local_profile",
    "local_query",
}


@pytest.fixture
def home(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The server's environment, and at the end: any detached research worker still alive is
    ended (by its pid; each leads its own process group)."""
    dagster_home = tmp_path / "dagster-home"
    dagster_home.mkdir()
    shutil.copy(PROJECT_ROOT / "dagster.yaml", dagster_home / "dagster.yaml")
    mole_home = tmp_path / "mole-home"
    env = {
        "MOLE_HOME": str(mole_home),
        "DAGSTER_HOME": str(dagster_home),
        "MOLE_CONFIG": str(mole_home / "config.json"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "MOLE_PROVIDER": "extractive",
        # A key the server holds: no answer may carry it.
        "ANTHROPIC_API_KEY": CANARY,
        # The code under test when it is not the installed one (a checkout run with
        # PYTHONPATH): the server must import the same package as the test.
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
    }
    yield env
    for meta in (mole_home / "mcp").glob("*.json") if (mole_home / "mcp").exists() else []:
        got = json.loads(meta.read_text())
        # Only a process that is still this test's worker (its command line names the session).
        if _alive(int(got["pid"]), got["session"]):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(got["pid"]), signal.SIGTERM)


def _params(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=str(BIN / "mole-mcp"), env=env)


def run(
    env: dict[str, str], body: Callable[[Client], Awaitable[Any]], *, stdio: bool = False
) -> Any:
    """Connect a client to mole-mcp, run body, disconnect. In this process by default, with the
    server's environment (tests/sessions.py; issue 34: a `mole-mcp` process per test cost its
    interpreter and imports, and a tool's answer does not depend on the process it runs in);
    `stdio`: a fresh `mole-mcp` process over stdio, which the disconnect ends, as an agent
    starts it (test_research_outlives_the_connection_then_reports, which stops the server)."""
    from mole_dag.mcp.server import server

    async def go() -> Any:
        target = _params(env) if stdio else server
        async with Client(target, read_timeout_seconds=120) as client:
            return await body(client)

    try:
        if stdio:
            return asyncio.run(go())
        with as_process(env):
            return asyncio.run(go())
    except BaseExceptionGroup as group:  # the client's task group wraps a failed assertion
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup):
            leaf = leaf.exceptions[0]
        raise leaf from None


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def ok(client: Client, tool: str, args: dict[str, Any]) -> Any:
    res = await client.call_tool(tool, args)
    assert not res.is_error, f"{tool} failed: {text_of(res)}"
    assert CANARY not in text_of(res)
    return res.structured_content if res.structured_content is not None else text_of(res)


async def err(client: Client, tool: str, args: dict[str, Any]) -> str:
    res = await client.call_tool(tool, args)
    assert res.is_error, f"{tool} should have refused {args}: {text_of(res)[:300]}"
    assert CANARY not in text_of(res)
    return text_of(res)


async def wait_finished(client: Client, sid: str) -> dict[str, Any]:
    deadline = time.monotonic() + FINISH_WITHIN_S
    while True:
        st = await ok(client, "session_status", {"session": sid})
        if st["finished"]:
            return st
        assert time.monotonic() < deadline, f"session {sid} not finished: {st}"
        await asyncio.sleep(0.5)


def _parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def _sessions_in(env: dict[str, str]) -> int:
    db = Path(env["MOLE_HOME"]) / "mole.duckdb"
    if not db.exists():
        return 0
    with Store(db) as st:
        return int(st.scalar("SELECT count(*) FROM sessions"))


# -- listing --------------------------------------------------------------------------------


def test_lists_the_tools_with_their_caps(home: dict[str, str]) -> None:
    async def body(client: Client) -> None:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == TOOLS
        for name in (
            "research",
            "chunk",
            "find_quote",
            "publisher_of",
            "confidence",
            "local_query",
        ):
            assert "at most" in (listed[name].description or ""), name
        props = listed["chunk"].input_schema["properties"]
        assert props["text"]["maxLength"] == 1_000_000
        assert "usd" in listed["research"].input_schema["properties"]

    run(home, body)


# -- toolkit mode ---------------------------------------------------------------------------


def test_chunk(home: dict[str, str]) -> None:
    text = (
        "First paragraph about tea. It has two sentences.\n\n"
        "第二段落です。日本語の文。" * 20 + "\n\nLast words without an end"
    )

    async def body(client: Client) -> None:
        got = await ok(client, "chunk", {"text": text, "max_bytes": 64})
        data = text.encode("utf-8")
        spans = got["chunks"]
        assert len(spans) > 5 and got["bytes"] == len(data)
        assert spans[0]["byte_start"] == 0 and spans[-1]["byte_end"] == len(data)
        for a, b in zip(spans, spans[1:], strict=False):
            assert a["byte_end"] == b["byte_start"]  # contiguous
        for s in spans:
            assert data[s["byte_start"] : s["byte_end"]].decode("utf-8") == s["text"]
            assert s["byte_end"] - s["byte_start"] <= 64
        assert "".join(s["text"] for s in spans) == text
        assert (await ok(client, "chunk", {"text": ""}))["chunks"] == []

        assert "max_bytes must be between 8" in await err(
            client, "chunk", {"text": "abc", "max_bytes": 4}
        )
        assert "at most 1000000 characters" in await err(client, "chunk", {"text": "x" * 1_000_001})
        assert "text" in await err(client, "chunk", {})

    run(home, body)


def test_find_quote(home: dict[str, str]) -> None:
    source = (
        "Café notes.\nDrinking green tea in the evening   raises the risk of\n"
        "poor sleep in adults. Drinking green tea in the evening raises the risk of poor "
        "sleep in adults."
    )

    async def body(client: Client) -> None:
        got = await ok(
            client,
            "find_quote",
            {
                "source_text": source,
                "quote": "green tea in the evening raises the risk of poor sleep",
            },
        )
        assert got["found"] is True and got["occurrences"] == 2
        raw = source.encode("utf-8")[got["byte_start"] : got["byte_end"]].decode("utf-8")
        # The span is in the source as written (its own line break and spaces), and starts after
        # the two-byte é, so these are byte offsets, not character offsets.
        assert raw == got["text"] and "\n" in raw and raw.startswith("green tea")
        assert got["byte_start"] == source.index("green tea") + 1

        missing = await ok(
            client,
            "find_quote",
            {"source_text": source, "quote": "green tea in the morning raises the risk of"},
        )
        assert missing["found"] is False and missing["reason"] == "quote_not_found"
        assert missing["rejected"] is False
        short = await ok(client, "find_quote", {"source_text": source, "quote": "green tea"})
        assert short == {**short, "found": False, "rejected": True, "reason": "quote_too_short"}
        assert "at least 24" in short["detail"]

        assert "source_text is empty" in await err(
            client, "find_quote", {"source_text": "  ", "quote": "x" * 30}
        )
        assert "at most 10000 characters" in await err(
            client, "find_quote", {"source_text": source, "quote": "q" * 10_001}
        )

    run(home, body)


def test_publisher_of(home: dict[str, str]) -> None:
    async def body(client: Client) -> None:
        bbc = await ok(client, "publisher_of", {"url": "https://www.bbc.co.uk/news/health-1"})
        guardian = await ok(client, "publisher_of", {"url": "https://theguardian.co.uk/x"})
        assert bbc["publisher"] == "bbc.co.uk" and guardian["publisher"] == "theguardian.co.uk"
        alice = await ok(client, "publisher_of", {"url": "https://alice.github.io/post"})
        bob = await ok(client, "publisher_of", {"url": "https://bob.github.io/post"})
        assert alice["publisher"] != bob["publisher"]
        paper = await ok(
            client,
            "publisher_of",
            {"url": "https://doi.org/10.1000/ABC", "doi": "https://doi.org/10.1000/ABC"},
        )
        assert paper["publisher"] == "doi:10.1000/abc"
        assert paper["source_class"] == "peer-reviewed"
        arxiv = await ok(client, "publisher_of", {"arxiv_id": "arXiv:2401.01234v2"})
        assert arxiv["publisher"] == "arxiv:2401.01234" and arxiv["source_class"] == "primary"
        unknown = await ok(client, "publisher_of", {"url": "https://some-blog.example/x"})
        assert unknown["source_class"] == "unknown"

        assert "give a url, or at least one of" in await err(client, "publisher_of", {})
        assert "whitespace" in await err(client, "publisher_of", {"url": "a.com b.com"})
        assert "at most 2048" in await err(client, "publisher_of", {"url": "a" * 3000})

    run(home, body)


def test_confidence(home: dict[str, str]) -> None:
    claims = [
        {"id": "a", "publisher": "alpha.com", "source_class": "secondary"},
        {"id": "b", "publisher": "beta.org", "source_class": "secondary"},
        {"id": "c", "publisher": "gamma.net", "source_class": "secondary"},
        {"id": "d", "publisher": "delta.io"},
    ]

    async def body(client: Client) -> None:
        alone = await ok(client, "confidence", {"claims": claims})
        assert len(alone["clusters"]) == 4
        single = alone["clusters"][0]["confidence"]

        got = await ok(
            client,
            "confidence",
            {
                "claims": claims,
                "edges": [
                    {"src": "b", "dst": "a", "kind": "duplicate_of"},
                    {"src": "d", "dst": "c", "kind": "contradicts"},
                ],
                "grounded": {"a": True},
            },
        )
        by_member = {m: c for c in got["clusters"] for m in c["members"]}
        ab = by_member["a"]
        assert ab is by_member["b"] and ab["publishers"] == 2
        assert ab["confidence"] > single  # two independent publishers, and a confirmed re-read
        assert "2 publishers" in ab["explanation"] and "re-read confirmed" in ab["explanation"]
        assert by_member["c"]["contradicting_publishers"] == 1
        assert by_member["c"]["confidence"] < single
        assert by_member["d"]["source_class"] == "unknown"  # omitted: the weakest class

        assert "claim 'zz' is not among the claims sent" in await err(
            client,
            "confidence",
            {"claims": claims, "edges": [{"src": "a", "dst": "zz", "kind": "contradicts"}]},
        )
        assert "kind" in await err(
            client,
            "confidence",
            {"claims": claims, "edges": [{"src": "a", "dst": "b", "kind": "agrees"}]},
        )
        assert "appears twice" in await err(
            client, "confidence", {"claims": [claims[0], claims[0]]}
        )
        assert "source_class" in await err(
            client,
            "confidence",
            {"claims": [{"id": "x", "publisher": "p", "source_class": "gospel"}]},
        )
        assert "grounded: claim 'q'" in await err(
            client, "confidence", {"claims": claims, "grounded": {"q": False}}
        )
        assert "claims" in await err(client, "confidence", {"claims": []})

    run(home, body)


# -- research mode --------------------------------------------------------------------------


def test_bad_research_input_is_refused_and_writes_nothing(
    home: dict[str, str], tmp_path: Path
) -> None:
    q = "Does green tea affect sleep?"
    cases = [
        ({"question": q}, "a budget is required: pass usd (e.g. 0.50) or tokens"),
        ({"question": q, "usd": 1, "tokens": 5}, "not both"),
        ({"question": "   ", "usd": 1}, "the question is empty"),
        ({"question": q, "usd": "abc"}, "expects an amount"),
        ({"question": q, "usd": -1}, "must be positive"),
        ({"question": q, "tokens": 0}, "must be positive"),
        ({"question": q, "usd": 0.0000001}, "finer than a micro-dollar"),
        # Issue 11: "inf" was an OverflowError with no detail; 1e30 was accepted and the worker
        # then failed inside DuckDB.
        ({"question": q, "usd": "inf"}, "usd must be a finite amount"),
        ({"question": q, "usd": 1e30}, "usd 1e+30 is over the maximum of $10,000"),
        ({"question": q, "tokens": 10**22}, "over the maximum of 1,000,000,000,000"),
        ({"question": q, "usd": 1, "corpus": str(tmp_path / "nope")}, "does not exist"),
        ({"question": q, "usd": 1, "provider": "oracle"}, "unknown provider"),
        ({"question": q, "usd": 1, "provider": "cassette"}, "needs a recording"),
        ({"question": q, "usd": 1, "data": str(tmp_path / "nope.csv")}, "data:"),
        ({"question": q, "usd": 1, "search": ["gopher"]}, "gopher"),
        ({"question": "x" * 2001, "usd": 1}, "at most 2000 characters"),
    ]

    async def body(client: Client) -> None:
        for args, message in cases:
            assert message in await err(client, "research", args), args

    run(home, body)
    assert _sessions_in(home) == 0
    assert not (Path(home["MOLE_HOME"]) / "mcp").exists()  # no worker was started


def test_unknown_or_malformed_session_ids(home: dict[str, str]) -> None:
    async def body(client: Client) -> None:
        for tool in ("session_status", "report", "trace", "eval", "local_profile"):
            assert "no session 'no-such-session'" in await err(
                client, tool, {"session": "no-such-session"}
            ), tool
            assert "is not a session id" in await err(client, tool, {"session": "../mcp/x"})
        assert "no session 'no-such-session'" in await err(
            client,
            "local_query",
            {"session": "no-such-session", "sql": "SELECT count(*) FROM data"},
        )

    run(home, body)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process groups in /proc")
def test_research_outlives_the_connection_then_reports(
    home: dict[str, str], mini_corpus: Path
) -> None:
    # A question that starts with a dash must reach the session as a question, not an option.
    question = "-- does green tea affect sleep and stroke risk?"

    async def start(client: Client) -> tuple[str, int, int]:
        got = await ok(
            client, "research", {"question": question, "tokens": 20000, "corpus": str(mini_corpus)}
        )
        sid, pid = got["session"], got["pid"]
        assert got["status"] == "starting"
        st = await ok(client, "session_status", {"session": sid})
        # Returned at once: the work is still going on when the client leaves.
        assert st["finished"] is False and st["worker"]["running"] is True, st
        server_pid = _parent_of(pid)
        assert os.getpgid(pid) != os.getpgid(server_pid)  # its own process group
        return sid, pid, server_pid

    sid, pid, server_pid = run(home, start, stdio=True)
    # The client has closed the connection and the server has ended. A client whose server
    # does not end in its grace period signals the server's whole process group (the SDK does),
    # and so does a terminal's Ctrl-C: the research must not be in that group.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server_pid, signal.SIGTERM)

    async def follow(client: Client) -> None:
        st = await wait_finished(client, sid)
        assert st["status"] == "done", st
        assert st["question"] == question
        assert st["ledger"]["ok"] is True and "ledger consistent" in st["ledger"]["check"]
        assert st["report_ready"] is True and st["counts"]["claims"] > 0
        assert {r["role"] for r in st["spend_by_role"]} >= {"planner", "executor"}
        assert st["budget"]["unit"] == "tokens" and st["budget"]["total"] == 20000
        assert st["budget"]["spent"] <= st["budget"]["total"]

        md = await ok(client, "report", {"session": sid})
        assert md.startswith("#") and "[1]" in md and "## Sources" in md
        assert "made without a language model" in md
        card = await ok(client, "eval", {"session": sid})
        names = {m["name"]: m for m in card["metrics"]}
        assert card["session"] == sid and names["citation_accuracy_pct"]["value"] == 100.0
        assert names["contradiction_precision_pct"]["value"] is None  # no labels: says why
        assert names["contradiction_precision_pct"]["reason"]
        tr = await ok(client, "trace", {"session": sid})
        assert tr.startswith(f"trace of session {sid}") and "clusters (" in tr
        assert "has no data attached" in await err(
            client, "local_query", {"session": sid, "sql": "SELECT count(*) FROM data"}
        )

    run(home, follow, stdio=True)
    # The worker itself recorded how it ended.
    exit_file = Path(home["MOLE_HOME"]) / "mcp" / f"{sid}.exit"
    deadline = time.monotonic() + 60
    while not exit_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert exit_file.read_text().strip() == "0"


def test_local_query_through_the_gate(
    home: dict[str, str], mini_corpus: Path, survey_csv: Path
) -> None:
    async def body(client: Client) -> None:
        got = await ok(
            client,
            "research",
            {
                "question": "Does income differ by region?",
                "usd": "0.50",
                "corpus": str(mini_corpus),
                "data": str(survey_csv),
            },
        )
        sid = got["session"]
        assert any("survey.csv: 40000 rows" in n for n in got["notes"])
        st = await wait_finished(client, sid)
        assert st["status"] == "done" and st["data_attached"] is True, st

        profile = await ok(client, "local_profile", {"session": sid})
        cols = {c["name"]: c for c in profile["envelope"]["columns"]}
        assert "region" in cols and cols["notes"]["withheld"]

        star = await ok(client, "local_query", {"session": sid, "sql": "SELECT * FROM data"})
        assert star["ok"] is False
        assert star["refused"]["stage"] == "sqlguard" and star["refused"]["reason"] == "star"

        agg = await ok(
            client,
            "local_query",
            {
                "session": sid,
                "sql": "SELECT region, count(*) AS n, avg(income) AS mean_income "
                "FROM data GROUP BY region",
            },
        )
        assert agg["ok"] is True and agg["crossing_id"].startswith("x-")
        text = json.dumps(agg["envelope"])
        assert "north" in text and "Isle of Rum" not in text  # a 1-row region stays inside
        assert agg["min_rows"] >= 5

        assert "sql is empty" in await err(client, "local_query", {"session": sid, "sql": " "})
        assert "at most 10000 characters" in await err(
            client, "local_query", {"session": sid, "sql": "SELECT " + "x" * 10_000}
        )
        return sid

    sid = run(home, body)
    with Store(Path(home["MOLE_HOME"]) / "mole.duckdb") as st:
        kinds = [
            r["kind"]
            for r in st.rows(
                "SELECT kind FROM local_crossings WHERE session_id = ? ORDER BY seq", [sid]
            )
        ]
        refusals = st.rows("SELECT reason, request FROM local_refusals WHERE session_id = ?", [sid])
    # Both answers were recorded: the aggregate as a crossing, SELECT * as a refusal; the
    # over-long and empty statements were refused before the boundary and left no row.
    assert kinds.count("sql") == 1 and "profile" in kinds
    assert [r["request"] for r in refusals if r["reason"] == "star"] == ["SELECT * FROM data"]
    assert not any(r["request"].startswith("SELECT xxx") for r in refusals)
