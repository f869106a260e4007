"""Issue 32: a rerun of a question is linked to its predecessor, carries unchanged sources
instead of mining them again, and reports what changed: one figure changed, one source gone,
one new source, the rest byte-identical plus a page whose only change is a timestamp. In
process, with the extractive provider (offline, free)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mole_dag.actors.registry import forget_cached
from mole_dag.budget import Ledger
from mole_dag.cli import main
from mole_dag.context import Run
from mole_dag.core import SessionStatus, Unit
from mole_dag.driver import run_session
from mole_dag.output.changes import as_json, diff_sessions
from mole_dag.session import check_rerun, create_rerun, create_session
from mole_dag.skillsets import skills_for
from mole_dag.store import Store, q
from mole_dag.store.records import SessionRow
from tests.fakeweb import FakeWeb, Route, Seen, page

QUESTION = "Does drinking green tea lower the risk of stroke?"
COHORT = "https://cohort.example.org/tea"
OSAKA = "https://osaka.example.jp/tea"
VESSELS = "https://vessels.example.com/tea"
BREW = "https://brew.example.net/tea"
NEWS = "https://news.example.org/tea"
TRIAL = "https://trial.example.org/tea"
FIGURE = (
    "A large cohort study found that drinking green tea daily lowered the risk of stroke by "
    "{} percent in older adults."
)
GONE = (
    "Researchers in Osaka reported that green tea drinkers had fewer strokes over a ten year "
    "follow-up of adults."
)
ADDED = (
    "A 2024 trial reported that green tea extract reduced stroke incidence among adults with "
    "high blood pressure."
)


def _doc(root: Path, name: str, url: str, body: str) -> None:
    (root / name).write_text(f"---\ntitle: {name}\nurl: {url}\n---\n{body}\n", "utf-8")


def _first_corpus(root: Path) -> None:
    root.mkdir()
    _doc(root, "a.md", COHORT, "Stroke study. " + FIGURE.format(20))
    _doc(root, "b.md", OSAKA, "Osaka report. " + GONE)
    _doc(
        root,
        "c.md",
        VESSELS,
        "Catechins. Green tea contains catechins that may protect blood vessels and reduce the "
        "risk of stroke.",
    )
    _doc(
        root,
        "d.md",
        BREW,
        "Brewing. Water at eighty degrees makes a pleasant cup of green tea for most drinkers.",
    )
    _doc(
        root,
        "e.md",
        NEWS,
        "Last updated: 2024-03-01 09:15 UTC\n\nTea news. A review of trials concluded that green "
        "tea drinking is linked to a modestly lower risk of stroke.",
    )


def _second_corpus(root: Path) -> None:
    """One figure changes, one source disappears, one source is added, one page's timestamp
    moves; the rest stays byte-identical."""
    (root / "b.md").unlink()
    a = (root / "a.md").read_text("utf-8")
    (root / "a.md").write_text(a.replace("by 20 percent", "by 25 percent"), "utf-8")
    e = (root / "e.md").read_text("utf-8")
    (root / "e.md").write_text(e.replace("2024-03-01 09:15", "2024-04-02 11:40"), "utf-8")
    _doc(root, "f.md", TRIAL, "New trial. " + ADDED)


@dataclass
class Pair:
    db: Path
    old: str
    new: str
    report: str


def _mining_calls(store: Store, sid: str) -> int:
    return int(
        store.scalar(
            "SELECT count(*) FROM tool_calls WHERE session_id = ? AND stage = 'mined_claims'",
            [sid],
        )
    )


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    tmp = tmp_path_factory.mktemp("rerun")
    with pytest.MonkeyPatch.context() as mp:
        # Module-scoped: the per-test home fixture has not run yet, so this one sets its own.
        mp.setenv("MOLE_HOME", str(tmp / "home"))
        mp.setenv("MOLE_CONFIG", str(tmp / "home" / "config.json"))
        mp.delenv("MOLE_DB", raising=False)
        mp.delenv("MOLE_PROVIDER", raising=False)
        root = tmp / "corpus"
        _first_corpus(root)
        db = tmp / "rerun.duckdb"
        skills = skills_for("extractive")
        with Store(db) as st:
            old = create_session(st, QUESTION, Unit.TOKENS, 50_000, corpus=str(root)).session_id
            run_session(Run(st, Ledger(st), skills, old, progress=lambda _m: None))
        # The folder changes under the process that indexed it: the rerun must see it now
        # (LocalCorpus.is_current), with no cache dropped by hand.
        _second_corpus(root)
        with Store(db) as st:
            new = create_rerun(st, check_rerun(st, old), Unit.TOKENS, 50_000).session_id
            _, fin = run_session(Run(st, Ledger(st), skills, new, progress=lambda _m: None))
        forget_cached()
        assert fin is not None
        yield Pair(db, old, new, fin.report.markdown)


def test_a_changed_corpus_folder_is_indexed_again(tmp_path: Path) -> None:
    """A process keeps the corpora it opened; a folder changed since is indexed again, not
    searched as it was (a watch's reruns run in one long-lived Dagster process)."""
    from mole_dag.actors.registry import local_corpus

    root = tmp_path / "corpus"
    _first_corpus(root)
    first = local_corpus(str(root))
    assert first.is_current()
    _second_corpus(root)  # sizes change too, so no mtime granularity is relied on
    assert not first.is_current()
    again = local_corpus(str(root))
    texts = {d.metadata["path"]: d.text for d in again.documents}
    assert "b.md" not in texts and "f.md" in texts and "by 25 percent" in texts["a.md"]
    assert again.is_current()
    forget_cached()


def test_rerun_is_linked_and_carries_unchanged_sources(pair: Pair) -> None:
    with Store(pair.db) as st:
        row = st.row("SELECT previous_session_id, question FROM sessions WHERE id = ?", [pair.new])
        assert row == {"previous_session_id": pair.old, "question": QUESTION}
        outcomes = {
            r["url"]: r["outcome"]
            for r in st.rows(
                "SELECT url, outcome FROM source_changes WHERE session_id = ?", [pair.new]
            )
        }
        assert outcomes == {
            COHORT: "changed",
            OSAKA: "gone",
            VESSELS: "unchanged",
            BREW: "unchanged",
            NEWS: "changed",
            TRIAL: "added",
        }
        carried = st.rows(
            "SELECT s.url, o.quote AS old_quote, c.quote FROM carried_claims cc "
            "JOIN claims c ON c.id = cc.claim_id JOIN claims o ON o.id = cc.previous_claim_id "
            "JOIN sources s ON s.id = c.source_id WHERE cc.session_id = ?",
            [pair.new],
        )
        # The unchanged pages' claims came across with their provenance, quote for quote.
        assert carried and {r["url"] for r in carried} <= {VESSELS, BREW}
        assert all(r["old_quote"] == r["quote"] for r in carried)
        # ... and were not mined again: one mining call per chunk of each (lead, page) pair,
        # for the changed and added pages only.
        pairs = (
            "SELECT count(*) FROM lead_sources ls JOIN chunks ch ON ch.source_id = ls.source_id "
            "WHERE ls.session_id = $sid AND ls.source_id {} (SELECT new_source_id FROM "
            "source_changes WHERE session_id = $sid AND outcome = 'unchanged')"
        )
        mined = int(st.scalar(pairs.format("NOT IN"), {"sid": pair.new}))
        carried_pairs = int(st.scalar(pairs.format("IN"), {"sid": pair.new}))
        assert carried_pairs > 0
        assert _mining_calls(st, pair.new) == mined
        mined_urls = {
            r["url"]
            for r in st.rows(
                "SELECT DISTINCT s.url FROM claims c JOIN sources s ON s.id = c.source_id "
                "WHERE c.session_id = ? AND c.id NOT IN (SELECT claim_id FROM carried_claims)",
                [pair.new],
            )
        }
        assert not mined_urls & {VESSELS, BREW}


def test_diff_lists_exactly_what_moved(pair: Pair) -> None:
    with Store(pair.db) as st:
        got = as_json(diff_sessions(st, pair.old, pair.new))
    assert got["old"] == pair.old and got["new"] == pair.new and got["question"] == QUESTION
    f = got["findings"]
    assert len(f["changed"]) == 1
    change = f["changed"][0]
    assert change["old"]["quote"] == FIGURE.format(20)
    assert change["new"]["quote"] == FIGURE.format(25)
    assert change["old"]["source"] == change["new"]["source"] == COHORT
    assert change["why"] == "20 → 25"
    assert [(r["quote"], r["source"]) for r in f["removed"]] == [(GONE, OSAKA)]
    assert f["removed"][0]["cause"] == "source gone: the file is no longer in the corpus"
    assert [(r["quote"], r["source"]) for r in f["new"]] == [(ADDED, TRIAL)]
    assert set(f["new"][0]) == {"text", "quote", "source", "page"}
    # Nothing from the unchanged pages or the page whose only change is its timestamp.
    listed = [c["old"]["source"] for c in f["changed"]] + [c["source"] for c in f["removed"]]
    listed += [c["source"] for c in f["new"]]
    assert not set(listed) & {VESSELS, BREW, NEWS}
    assert f["same"] >= 2
    assert got["sources"] == {
        "added": [TRIAL],
        "removed": [OSAKA],
        "changed": [COHORT],
        "unreachable": [],
    }
    assert got["answer_changed"] is True  # the cohort figure is in the Answer
    assert got["confidence_shifts"] == []


def test_report_opens_with_what_changed_and_sql_has_the_changes(pair: Pair) -> None:
    head = f"## What changed since {pair.old} ("
    assert head in pair.report
    assert pair.report.index(head) < pair.report.index("## Answer")
    section = pair.report[pair.report.index(head) : pair.report.index("## Answer")]
    assert "1 new, 1 removed, 1 changed" in section and "(20 → 25)" in section
    with Store(pair.db) as st:
        rows = st.rows(
            "SELECT old_session_id, new_session_id, kind, old_source, new_source FROM "
            "claim_changes ORDER BY kind"
        )
        stored = st.row(
            "SELECT material, diff_json FROM session_diffs WHERE new_session_id = ?", [pair.new]
        )
        live = as_json(diff_sessions(st, pair.old, pair.new))
    assert [(r["kind"], r["old_source"], r["new_source"]) for r in rows] == [
        ("changed", COHORT, COHORT),
        ("new", None, TRIAL),
        ("removed", OSAKA, None),
    ]
    assert all((r["old_session_id"], r["new_session_id"]) == (pair.old, pair.new) for r in rows)
    assert stored is not None and stored["material"] is True
    assert json.loads(stored["diff_json"]) == live


def test_mole_diff_prints_the_section_and_the_json(
    pair: Pair, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--db", str(pair.db), "diff", pair.old, pair.new, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    with Store(pair.db) as st:
        assert printed == as_json(diff_sessions(st, pair.old, pair.new))
    assert main(["--db", str(pair.db), "diff", pair.old, pair.new]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"## What changed since {pair.old} (")
    assert "**removed** (source gone: the file is no longer in the corpus)" in out
    # A session against itself: nothing material.
    assert main(["--db", str(pair.db), "diff", pair.new, pair.new]) == 0
    assert "Nothing material changed" in capsys.readouterr().out


# -- bad input: one clear line, nothing written ------------------------------------------------


def _snapshot(db: Path) -> dict[str, int]:
    with Store(db) as st:
        return {
            t: int(st.scalar(f"SELECT count(*) FROM {t}"))
            for t in ("sessions", "tool_calls", "source_changes", "session_diffs", "claims")
        }


@pytest.fixture
def small_store(tmp_path: Path, mini_corpus: Path) -> tuple[Path, str, str, str]:
    """A finished session, a running one, and a finished one of another question."""
    db = tmp_path / "bad.duckdb"
    with Store(db) as st:
        ledger = Ledger(st)
        done = create_session(st, QUESTION, Unit.TOKENS, 20_000, corpus=str(mini_corpus))
        other = create_session(
            st, "Is green tea safe?", Unit.TOKENS, 20_000, corpus=str(mini_corpus)
        )
        running = create_session(st, QUESTION, Unit.TOKENS, 20_000, corpus=str(mini_corpus))
        # Their states are what matters here, not their findings.
        for sid in (done.session_id, other.session_id):
            ledger.set_status(sid, SessionStatus.DONE)
        ledger.set_status(running.session_id, SessionStatus.RUNNING)
    forget_cached()
    return db, done.session_id, running.session_id, other.session_id


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["rerun", "nope", "--usd", "0.1"], "no session 'nope'"),
        (["rerun", "{running}", "--usd", "0.1"], "is running: re-run it once it has finished"),
        (["rerun", "{done}"], "a budget is required"),
        (["rerun", "{done}", "--usd", "0.1", "--tokens", "5"], "not both"),
        (["diff", "{done}", "nope"], "no session 'nope'"),
        (["diff", "{done}", "{other}"], "ask different questions"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    small_store: tuple[Path, str, str, str],
    argv: list[str],
    said: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db, done, running, other = small_store
    before = _snapshot(db)
    args = [a.format(done=done, running=running, other=other) for a in argv]
    assert main(["--db", str(db), *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and said in err, err
    assert _snapshot(db) == before


# -- web pages: conditional re-reads, gone versus unreachable ----------------------------------


@pytest.fixture
def web(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeWeb]:
    from mole_dag.actors import web_registry
    from mole_dag.actors.fetch import FetchLimits

    # No pacing between requests to one host: the test reads four pages of one server.
    monkeypatch.setattr(web_registry, "FETCH_LIMITS", FetchLimits(interval_s=0.0))
    server = FakeWeb().start()
    yield server
    server.stop()


def test_web_reread_is_conditional_and_tells_gone_from_unreachable(
    tmp_path: Path, web: FakeWeb, mini_corpus: Path
) -> None:
    from mole_dag.actors.search_settings import SearchSettings
    from mole_dag.executor.rerun import PreviousSource, digest, read_again

    body = page("Tea", "Green tea drinkers had a lower risk of stroke in a large cohort study.")

    def same(seen: Seen) -> Route:
        if seen.headers.get("if-none-match") == '"v1"':
            return Route(b"", 304, {"ETag": '"v1"'})
        return Route(body, 200, {"Content-Type": "text/html; charset=utf-8", "ETag": '"v1"'})

    web.handlers["/same"] = same
    web.route("/changed", page("Tea", "Green tea drinkers had no lower risk of stroke at all."))
    web.route("/down", b"busy", 503, content_type="text/plain")
    with Store(tmp_path / "web.duckdb") as st:
        sid = create_session(
            st,
            QUESTION,
            Unit.TOKENS,
            1000,
            corpus=str(mini_corpus),
            search=SearchSettings(("local",), None, ("127.0.0.1",)),
        ).session_id
        sess = check_rerun_row(st, sid)

        def prev(path: str, etag: str | None = None, sha: str = "") -> PreviousSource:
            url = web.url(path)
            return PreviousSource(f"src-{path}", url, "searxng", url, False, sha, etag)

        first = read_again(sess, prev("/same"), st)
        assert first.document is not None and first.document.metadata["etag"] == '"v1"'
        again = read_again(sess, prev("/same", '"v1"', digest(first.document.text)), st)
        assert (again.outcome, again.document) == ("unchanged", None)
        assert web.requests_to("/same")[-1].headers["if-none-match"] == '"v1"'
        changed = read_again(sess, prev("/changed", '"v0"', "old digest"), st)
        assert changed.document is not None and "no lower risk" in changed.document.text
        gone = read_again(sess, prev("/gone", '"v1"'), st)
        assert (gone.outcome, gone.detail) == ("gone", "HTTP 404")
        down = read_again(sess, prev("/down"), st)
        assert down.outcome == "unreachable" and "503" in down.detail


def check_rerun_row(st: Store, sid: str) -> SessionRow:
    row = st.one(SessionRow, q("session_get"), {"session_id": sid})
    assert row is not None
    return row
