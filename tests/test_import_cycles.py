"""No import loops inside any package of mole_dag, nor inside assets/ (issue 34): a module that
imports one which imports it back (even inside a function, where the loop hides until that
function runs) holds two jobs that belong in one place, or one that belongs in a third. The
imports are read from the source with ast, so the test sees every import statement, run or
not."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Every package: mole_dag's subpackages at any depth, and assets/. A package added later is
# checked without being named here.
PACKAGES = tuple(
    sorted(
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in [*ROOT.glob("mole_dag/*/**/__init__.py"), ROOT / "assets" / "__init__.py"]
    )
)


def _modules(package: str) -> dict[str, Path]:
    folder = ROOT / package.replace(".", "/")
    return {
        package if p.stem == "__init__" else f"{package}.{p.stem}": p
        for p in sorted(folder.glob("*.py"))
    }


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(tree: ast.Module, module: str, is_package: bool) -> set[str]:
    """Every module name `tree` imports, anywhere in it (functions included), except under
    `if TYPE_CHECKING:`, which never runs. `from a import b` names a.b as well as a, since b may
    be a module."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                anchor = parts if is_package else parts[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names |= {f"{base}.{a.name}" for a in node.names}
    return names


def _graph(package: str) -> dict[str, set[str]]:
    modules = _modules(package)
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        imported = _imported(tree, name, path.stem == "__init__")
        # A module's own packages are always imported before it (`from pkg import sub` inside
        # pkg names pkg, which is already loading), so an edge to one of them is no loop.
        ancestors = {name.rsplit(".", k)[0] for k in range(1, name.count(".") + 1)}
        graph[name] = {m for m in imported if m in modules and m != name and m not in ancestors}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_loop_hidden_in_a_function() -> None:
    tree = ast.parse("def f():\n    from pkg.a import x\n")
    edges = _imported(tree, "pkg.b", False)
    assert "pkg.a" in edges
    assert _cycles({"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}, "pkg.c": {"pkg.a"}}) == [
        ["pkg.a", "pkg.b"]
    ]
    skipped = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.a\n")
    assert "pkg.a" not in _imported(skipped, "pkg.b", False)


def test_every_package_is_checked() -> None:
    # The glob above finds them all, assets/ and the store (their loops were issue 34's) among them.
    assert {"assets", "mole_dag.store", "mole_dag.mining", "mole_dag.actors.pdf"} <= set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_loop_inside_the_package(package: str) -> None:
    graph = _graph(package)
    assert graph, f"no modules found for {package}"
    assert not _cycles(graph), f"import loops inside {package}: {_cycles(graph)}"
