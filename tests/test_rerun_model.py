"""Issue 32 on the model path: a rerun with a model carries what its unchanged sources already
cost (their claims, the judge's verdicts on pairs of them, their grounding checks, and the
first round's plan), so it pays for what changed only; and the difference it reports is the
extractive path's, here from recorded model calls replayed with no server.

The model is tests/model_server.py's simulated Claude behind the real Anthropic SDK on
127.0.0.1 (offline, deterministic)."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from mole_dag.budget import Ledger
from mole_dag.context import Run
from mole_dag.core import Unit
from mole_dag.driver import run_session
from mole_dag.output.changes import as_json, diff_sessions
from mole_dag.session import check_rerun, create_rerun, create_session
from mole_dag.skills.protocol import Skills
from mole_dag.skillsets import skills_for
from mole_dag.store import Store
from tests.model_server import ModelServer, SimulatedModel
from tests.test_rerun_changes import (
    ADDED,
    COHORT,
    FIGURE,
    GONE,
    OSAKA,
    QUESTION,
    TRIAL,
    _doc,
    _first_corpus,
    _second_corpus,
)

PINNED = {"cheap": "claude-haiku-4-5", "strong": "claude-sonnet-4-5"}
# The bound: a rerun in which a fifth of the sources changed makes at most this share
# of the first run's model calls.
MAX_SHARE = 0.30
STATEMENTS = [
    "drinkers of green tea had fewer strokes over ten years of follow-up",
    "green tea intake was linked to lower stroke mortality in older adults",
    "three cups of green tea a day went with a lower risk of stroke",
    "green tea polyphenols lowered blood pressure, a main cause of stroke",
    "stroke incidence fell among regular green tea drinkers in a cohort",
    "green tea catechins protected blood vessels and lowered stroke risk",
    "green tea drinkers had lower rates of the atrial fibrillation behind strokes",
    "green tea was associated with lower cholesterol and fewer strokes",
    "women who drank green tea daily had fewer ischaemic strokes",
]


def _config(server: ModelServer) -> dict[str, object]:
    return {"anthropic": {"api_key": "sk-ant-test", "base_url": server.url, "models": PINNED}}


# A page is more than its finding: a methods section, long enough that each page is two
# chunks, as a real report's page is several (a one-sentence page made the first run's
# mining, the cost a rerun saves, unrealistically small against its fixed calls).
METHODS = (
    "Methods. Households in {n} districts were sent a questionnaire by post in the spring. "
    "Forms were returned by {n}0 percent of households and entered twice by separate clerks. "
    "Interviewers visited the homes that did not answer and left a second copy of the form. "
    "Data were stored on a server at the regional office and checked for gaps every month. "
)


def _page(i: int, said: str) -> str:
    methods = "".join(METHODS.format(n=i + k) for k in range(8))
    return f"Report {i}. Researchers found that {said} in a study of adults.\n\n{methods}"


def _ten_sources(root: Path) -> None:
    root.mkdir()
    _doc(root, "a.md", COHORT, "Stroke study. " + FIGURE.format(20) + "\n\n" + _page(9, "")[19:])
    for i, said in enumerate(STATEMENTS):
        _doc(root, f"s{i}.md", f"https://s{i}.example.org/tea", _page(i, said))


def _calls(store: Store, sid: str) -> Counter[str]:
    """The session's model calls by skill, from the ledger (its tool names end in the skill)."""
    rows = store.rows(
        "SELECT tool FROM tool_calls WHERE session_id = ? AND model IS NOT NULL", [sid]
    )
    return Counter(r["tool"].rsplit(":", 1)[-1] for r in rows)


def test_a_rerun_with_a_fifth_changed_makes_at_most_30_percent_of_the_calls(
    tmp_path: Path,
) -> None:
    root = tmp_path / "corpus"
    _ten_sources(root)
    db = tmp_path / "model.duckdb"
    with ModelServer(SimulatedModel()) as server:
        skills = skills_for("anthropic", _config(server))
        with Store(db) as st:
            old = create_session(
                st, QUESTION, Unit.USD_MICROS, 2_000_000, corpus=str(root), provider="anthropic"
            ).session_id
            run_session(Run(st, Ledger(st), skills, old, progress=lambda _m: None))
        first_calls = len(server.received)
        # Two of the ten sources change: a figure in one, a detail in another.
        a = root / "a.md"
        a.write_text(a.read_text("utf-8").replace("by 20 percent", "by 25 percent"), "utf-8")
        s1 = root / "s1.md"
        s1.write_text(s1.read_text("utf-8").replace("older adults", "adults over 70"), "utf-8")
        with Store(db) as st:
            new = create_rerun(st, check_rerun(st, old), Unit.USD_MICROS, 2_000_000).session_id
            run_session(Run(st, Ledger(st), skills, new, progress=lambda _m: None))
        rerun_calls = len(server.received) - first_calls

    with Store(db) as st:
        outcomes = Counter(
            r["outcome"]
            for r in st.rows("SELECT outcome FROM source_changes WHERE session_id = ?", [new])
        )
        assert outcomes == {"unchanged": 8, "changed": 2}  # a fifth of the sources changed
        before, after = _calls(st, old), _calls(st, new)
        # Every call the server answered is in the ledger, for each session.
        assert sum(before.values()) == first_calls and sum(after.values()) == rerun_calls
        print(f"model calls: first run {dict(before)}, rerun {dict(after)}")
        assert rerun_calls <= MAX_SHARE * first_calls, (dict(before), dict(after))
        # What was carried, and so not paid for again: the first round's plan, the unchanged
        # sources' claims, the judge's verdicts on pairs of them, their grounding checks.
        assert after["plan"] == 0 and before["plan"] >= 1
        # Mining: one call per chunk of the changed sources, none for the unchanged ones.
        changed_chunks = st.scalar(
            "SELECT count(*) FROM chunks WHERE source_id IN (SELECT new_source_id FROM "
            "source_changes WHERE session_id = ? AND outcome = 'changed')",
            [new],
        )
        assert after["mine"] == changed_chunks == 4
        carried = st.scalar("SELECT count(*) FROM carried_claims WHERE session_id = ?", [new])
        assert carried >= 8
        pairs = st.scalar(
            "SELECT count(*) FROM pair_verdicts WHERE session_id = ? AND rationale LIKE ?",
            [new, f"carried from {old}%"],
        )
        assert pairs >= 1
        checks = st.scalar(
            "SELECT count(*) FROM grounding_checks WHERE session_id = ? AND note LIKE 'carried%'",
            [new],
        )
        assert checks >= 1
        # Its spend is in the ledger like any session's: the calls' sum is the session's spent,
        # by role and stage in the view, and the ledger's own check agrees.
        spent = st.scalar("SELECT spent FROM sessions WHERE id = ?", [new])
        assert spent > 0
        assert spent == st.scalar("SELECT sum(actual) FROM tool_calls WHERE session_id = ?", [new])
        by_stage = st.scalar(
            "SELECT sum(spent) FROM spend_by_role_stage WHERE session_id = ?", [new]
        )
        assert by_stage == spent
        assert Ledger(st).verify(new).ok


def test_the_diff_from_recorded_model_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The done-when corpus (one figure changed, one source gone, one added, one page whose
    only change is a timestamp), both sessions run with a model and recorded, then replayed
    from the recording with no server: the diff lists exactly what moved."""
    tape = tmp_path / "calls.jsonl"
    first_state, second_state = tmp_path / "first", tmp_path / "second"
    _first_corpus(first_state)
    shutil.copytree(first_state, second_state)
    _second_corpus(second_state)
    ids = ("s-old", "s-new")

    def both(db: Path, skills: Skills, provider: str) -> None:
        root = tmp_path / f"corpus-{provider}"
        shutil.copytree(first_state, root)
        with Store(db) as st:
            create_session(
                st,
                QUESTION,
                Unit.USD_MICROS,
                2_000_000,
                corpus=str(root),
                provider=provider,
                session_id=ids[0],
            )
            run_session(Run(st, Ledger(st), skills, ids[0], progress=lambda _m: None))
        # The folder as the second run finds it: same path, its files replaced.
        shutil.rmtree(root)
        shutil.copytree(second_state, root)
        with Store(db) as st:
            create_rerun(st, check_rerun(st, ids[0]), Unit.USD_MICROS, 2_000_000, session_id=ids[1])
            run_session(Run(st, Ledger(st), skills, ids[1], progress=lambda _m: None))

    with ModelServer(SimulatedModel()) as server:
        monkeypatch.setenv("MOLE_RECORD", str(tape))
        both(tmp_path / "live.duckdb", skills_for("anthropic", _config(server)), "anthropic")
        monkeypatch.delenv("MOLE_RECORD")
    monkeypatch.setenv("MOLE_CASSETTE", str(tape))
    replay = skills_for("cassette", {})
    both(tmp_path / "replay.duckdb", replay, "cassette")
    assert replay.provider.cassette.remaining() == 0  # type: ignore[attr-defined]

    for db in (tmp_path / "live.duckdb", tmp_path / "replay.duckdb"):
        with Store(db) as st:
            got = as_json(diff_sessions(st, *ids))
            made = st.scalar(
                "SELECT count(*) FROM tool_calls WHERE session_id = ? AND model IS NOT NULL",
                [ids[1]],
            )
        assert made > 0  # the rerun's changed pages were mined by the model
        f = got["findings"]
        assert len(f["changed"]) == 1, f
        change = f["changed"][0]
        assert change["old"]["quote"] == FIGURE.format(20)
        assert change["new"]["quote"] == FIGURE.format(25)
        assert change["why"] == "20 → 25"
        assert [(r["quote"], r["source"]) for r in f["removed"]] == [(GONE, OSAKA)]
        assert f["removed"][0]["cause"] == "source gone: the file is no longer in the corpus"
        assert [(r["quote"], r["source"]) for r in f["new"]] == [(ADDED, TRIAL)]
        assert got["sources"] == {
            "added": [TRIAL],
            "removed": [OSAKA],
            "changed": [COHORT],
            "unreachable": [],
        }
