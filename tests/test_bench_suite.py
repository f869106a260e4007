"""bench/suite.py, the performance suite's driver, with tiny fake benchmarks: it runs each
script several times, reads the last line of JSON, takes medians, compares them with the recorded
file, records, marks a figure outside its limit, and skips (visibly) a script without --json or
one that is missing. No timing is asserted."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_SUITE = Path(__file__).resolve().parent.parent / "bench" / "suite.py"
_spec = importlib.util.spec_from_file_location("bench_suite", _SUITE)
assert _spec and _spec.loader
suite = importlib.util.module_from_spec(_spec)
sys.modules["bench_suite"] = suite  # dataclasses look their module up
_spec.loader.exec_module(suite)

# A fake benchmark: its figure grows by one per run (a counter file), so the median of three
# runs is the second value; --quick halves it.
FAKE = textwrap.dedent(
    """
    import argparse, json, pathlib
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--size", type=int, default=10)
    args = ap.parse_args()
    counter = pathlib.Path(__file__).with_suffix(".count")
    n = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(n))
    print("some progress output")
    print("| a | table |")
    value = args.size * n / (2 if args.quick else 1)
    print(json.dumps({
        "figures": {"speed": value, "overshoot": 0, "nested": {"ok": True}},
        "units": {"speed": "items/s"},
        "better": {"speed": "higher"},
        "limits": {"overshoot": {"max": 0}},
        "notes": ["a note"],
    }))
    """
)
PLAIN = textwrap.dedent(
    """
    import json, sys
    if "--help" in sys.argv:
        print("usage: plain [--json]")
        raise SystemExit(0)
    print(json.dumps({"runs": {"latency ms": [3, 1, 2]}, "count": 7, "label": "text"}))
    """
)
OVER = textwrap.dedent(
    """
    import json, sys
    if "--help" in sys.argv:
        print("--json")
        raise SystemExit(0)
    print(json.dumps({"figures": {"overshoot": 5}, "limits": {"overshoot": {"max": 0}}}))
    """
)
NO_JSON = "import sys\nprint('usage: old [--runs N]')\n"


def _suite(tmp_path: Path) -> str:
    for name, text in {
        "fake_bench.py": FAKE,
        "plain_bench.py": PLAIN,
        "old_bench.py": NO_JSON,
        "over_bench.py": OVER,
    }.items():
        (tmp_path / name).write_text(text)
    return json.dumps(
        [
            {"name": "fake", "script": "fake_bench.py", "args": ["--size", "10"]},
            {"name": "plain", "script": "plain_bench.py", "repeat": 2},
            {"name": "old", "script": "old_bench.py"},
            {"name": "missing", "script": "missing_bench.py"},
            {"name": "over", "script": "over_bench.py"},
        ]
    )


def _run(tmp_path: Path, *extra: str) -> int:
    return suite.main(
        [
            "--bench-dir",
            str(tmp_path),
            "--results",
            str(tmp_path / "results.json"),
            "--suite-json",
            _suite(tmp_path),
            *extra,
        ]
    )


def test_parse_output_reads_the_last_line_only() -> None:
    out = suite.parse_output(
        '{"figures": {"x": 1}}\nnoise\n{"figures": {"x": 2, "y": [1, 5, 3]}}\n'
    )
    assert out.figures == {"x": 2.0, "y": 3.0}
    plain = suite.parse_output(json.dumps({"a": {"b": 2, "c": "text"}, "d": False}))
    assert plain.figures == {"a / b": 2.0, "d": 0.0}
    with pytest.raises(ValueError, match="not JSON"):
        suite.parse_output("a table\n")
    with pytest.raises(ValueError, match="no output"):
        suite.parse_output("")


def test_medians_ratios_record_and_skips(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "results.json").write_text(
        json.dumps({"version": 1, "modes": {"full": {"fake": {"figures": {"speed": 40.0}}}}})
    )
    code = _run(tmp_path, "--only", "fake", "plain", "old", "missing", "--json")
    out = capsys.readouterr().out
    assert code == 0, out
    assert "plain_bench.py --json  (2 run(s)" in out  # its own count; the others 3
    medians = json.loads(out.strip().splitlines()[-1])
    # Runs gave 10, 20, 30: the median is 20, half of the recorded 40.
    assert medians["fake"] == {"speed": 20.0, "overshoot": 0.0, "nested / ok": 1.0}
    assert medians["plain"] == {"runs / latency ms": 2.0, "count": 7.0}
    row = next(ln for ln in out.splitlines() if ln.startswith("| fake | speed |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2:] == ["20.0", "items/s", "higher", "3 (10.0-30.0)", "40.0", "0.50x"]
    assert "| fake | note: a note |" in out
    assert "old_bench.py does not take --json yet" in out
    assert "missing_bench.py not found" in out
    assert "fake_bench.py --json --size 10" in out  # the command, as typed from the checkout
    table = [ln for ln in out.splitlines() if ln.startswith("|")]
    assert table and not any(str(tmp_path) in ln for ln in table)  # no machine paths there

    # --record keeps the reference per mode and per benchmark, never from a skipped one.
    assert _run(tmp_path, "--repeat", "1", "--only", "fake", "old", "--record") == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["modes"]["full"]["fake"]["figures"]["speed"] == 40.0  # the fourth run: 10 x 4
    assert data["modes"]["full"]["fake"]["units"] == {"speed": "items/s"}
    assert "old" not in data["modes"]["full"]
    capsys.readouterr()

    # Quick mode passes --quick, has its own reference, and is never compared with full.
    assert _run(tmp_path, "--quick", "--only", "fake", "--record") == 0
    out = capsys.readouterr().out
    row = next(ln for ln in out.splitlines() if ln.startswith("| fake | speed |"))
    assert [c.strip() for c in row.strip("|").split("|")][-2:] == ["", ""]  # nothing recorded
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["modes"]["quick"]["fake"]["figures"]["speed"] == 25.0  # 10 x 5 / 2
    assert data["modes"]["full"]["fake"]["figures"]["speed"] == 40.0


def test_a_figure_outside_its_limit_fails_the_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(tmp_path, "--repeat", "1", "--only", "over") == 1
    out = capsys.readouterr().out
    assert "overshoot **above its limit 0**" in out
    assert "over / overshoot: 5 is above its limit 0" in out


def test_the_real_suite_lists_the_issue_14_benchmarks(capsys: pytest.CaptureFixture[str]) -> None:
    assert suite.main(["--list"]) == 0
    names = [ln.split()[0] for ln in capsys.readouterr().out.splitlines()]
    assert names == [
        "ledger",
        "batching",
        "session",
        "bm25",
        "quote_chunk",
        "verifier",
        "parallel",
    ]


def test_every_suite_script_takes_json_and_quick() -> None:
    """The suite skips a script whose --help lacks --json: here that is a failure, not a note.
    --help only, no benchmark runs (a second or so per script)."""
    for bench in suite.SUITE:
        help_text = suite._options(suite.HERE / bench.script, sys.executable)
        assert "--json" in help_text, bench.script
        assert "--quick" in help_text, bench.script


@pytest.mark.parametrize("script", ["bm25_bench.py", "quote_chunk_bench.py", "verifier_bench.py"])
def test_a_real_pages_bench_without_the_pages_says_so_in_one_line(
    script: str, tmp_path: Path
) -> None:
    """Absent pages: one line on stderr and a failing exit, no traceback (the suite shows the
    line; a run that measured nothing must not pass). Stops before any benchmark work."""
    got = subprocess.run(
        [sys.executable, str(suite.HERE / script), "--json", "--quick"],
        env={**os.environ, "MOLE_WEB_PAGES": str(tmp_path / "absent")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode != 0
    assert got.stderr.strip().splitlines() == [got.stderr.strip()], got.stderr
    assert "absent" in got.stderr and "Traceback" not in got.stderr
