"""The assets/ modules import each other one way (issue 34): no loop among them, imports inside
functions included (assets/driver.py imported assets/definitions.py at run time to run the step
jobs inside a run, and the definitions imported the driver). And the step jobs a driving run
resolves without the definitions are the jobs the definitions hold."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"


def _imports(path: Path) -> set[str]:
    """The assets/ modules `path` imports, anywhere in it (module level or inside a function)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "assets":
                found |= {f"assets.{a.name}" for a in node.names}
            elif node.module.startswith("assets."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("assets.")}
    return found


def _graph() -> dict[str, set[str]]:
    modules = {f"assets.{p.stem}": p for p in ASSETS.glob("*.py") if p.stem != "__init__"}
    return {name: _imports(path) & modules.keys() for name, path in modules.items()}


def _loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import loop, each once, as the path that closes it."""
    loops: list[list[str]] = []
    seen: set[frozenset[str]] = set()

    def walk(path: list[str]) -> None:
        for nxt in sorted(graph[path[-1]]):
            if nxt in path:
                loop = path[path.index(nxt) :] + [nxt]
                if frozenset(loop) not in seen:
                    seen.add(frozenset(loop))
                    loops.append(loop)
            else:
                walk([*path, nxt])

    for start in sorted(graph):
        walk([start])
    return loops


def test_the_walk_finds_a_loop() -> None:
    # The check itself: a loop made by hand is found (so an empty answer means something).
    assert _loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert _imports(ASSETS / "definitions.py") >= {"assets.driver", "assets.jobs"}


def test_no_import_loop_among_assets_modules() -> None:
    assert _loops(_graph()) == []


def test_the_step_jobs_are_the_definitions_jobs() -> None:
    from assets.definitions import defs
    from assets.jobs import step_jobs

    for name, job in step_jobs().items():
        assert job.get_job_snapshot_id() == defs.resolve_job_def(name).get_job_snapshot_id(), name
