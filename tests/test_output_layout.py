"""The report's package keeps files of one job (issue 34, item 4): no module of mole_dag/output
over 600 lines unless its docstring says why it stays whole, and no import loop between its
modules (imports inside functions and under TYPE_CHECKING included: a loop hidden in a function
is still two modules that cannot be read or changed apart)."""

from __future__ import annotations

import ast
from pathlib import Path

OUTPUT = Path(__file__).resolve().parent.parent / "mole_dag" / "output"
MAX_LINES = 600
PACKAGE = "mole_dag.output."


def _modules() -> dict[str, ast.Module]:
    return {p.stem: ast.parse(p.read_text("utf-8")) for p in sorted(OUTPUT.glob("*.py"))}


def _imports(tree: ast.Module) -> set[str]:
    """The modules of the package this one imports, wherever the import statement sits."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith(PACKAGE):
                out.add(node.module.removeprefix(PACKAGE))
            elif node.module == PACKAGE.rstrip("."):
                out |= {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name.removeprefix(PACKAGE) for a in node.names if a.name.startswith(PACKAGE)}
    return out


def _loop(graph: dict[str, set[str]]) -> list[str] | None:
    """One import loop of the graph, as the modules along it; None when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return [*path[path.index(n) :], n]
            if n not in state and (found := visit(n)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_no_output_module_is_long_without_saying_why() -> None:
    long = []
    for p in sorted(OUTPUT.glob("*.py")):
        lines = len(p.read_text("utf-8").splitlines())
        doc = ast.get_docstring(ast.parse(p.read_text("utf-8"))) or ""
        if lines > MAX_LINES and "stays whole" not in " ".join(doc.split()):
            long.append(f"{p.name}: {lines} lines")
    assert not long, f"split these, or say in the docstring why each stays whole: {long}"


def test_no_import_loop_between_output_modules() -> None:
    modules = _modules()
    graph = {name: _imports(tree) & set(modules) for name, tree in modules.items()}
    assert _loop(graph) is None, (
        f"import loop in mole_dag/output: {' -> '.join(_loop(graph) or [])}"
    )


def test_the_loop_finder_finds_a_loop() -> None:
    # The check above passes on any graph if _loop never reports: shown here on one that loops.
    assert _loop({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _loop({"a": {"b"}, "b": set()}) is None
