"""The README and docs/ match the product (issues 23 and 34). Every code block of README.md and
docs/*.md is run, offline, in a data folder of its own: each `mole` command in process through
the CLI's real entry point, in an order that gives it the sessions it names (the placeholders
`<session>`, `<folder>`, ... are filled in here); a `make` target by the `mole` commands its
recipe runs; `dagster` through Dagster's own CLI in process; SQL, Python, JSON and the
launchpad's YAML as written. A block that cannot run offline says why in the line above it,
`<!-- not run by the docs test: REASON -->` (a whole page: `<!-- page not run by the docs
test: REASON -->`); its `mole` commands still parse with the real parser and its `make` targets
still exist. deploy/README.md's commands are parsed and checked the same way (its profile needs
a PostgreSQL server and a dask cluster, which tests/test_deploy_profile.py starts). Paths and
links the pages name exist, and none points outside the repository."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mole_dag.budget import Ledger
from mole_dag.cli import build_parser, main
from mole_dag.core import Role, SessionStatus, Unit
from mole_dag.paths import PROJECT_ROOT, default_store_path
from mole_dag.session import create_session, stop_session
from mole_dag.store import Store
from mole_dag.store.models import materialize_all
from tests.conftest import write_mini_corpus
from tests.survey_data import write_survey

DOCS = (PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md")))
READMES = (*DOCS, PROJECT_ROOT / "deploy" / "README.md")
# The benchmark history is a record: its commands and paths are those of the commits it names,
# and it names the shared benchmark sets outside the repository, as the benchmark READMEs must.
HISTORY = PROJECT_ROOT / "docs" / "benchmarks-history.md"

NOT_RUN = re.compile(r"^<!-- not run by the docs test: (.+?) -->$")
PAGE_NOT_RUN = re.compile(r"^<!-- page not run by the docs test: (.+?) -->$", re.M)
FENCE = re.compile(r"^([ \t]*)```(\w*)[^\n]*\n(.*?)^\1```[ \t]*$", re.S | re.M)
# The languages a block may be written in, and what this test does with each.
LANGUAGES = {"sh", "python", "json", "yaml", "text"}


@dataclass(frozen=True)
class Block:
    path: Path
    lang: str
    body: str
    not_run: str | None  # why it is not run, when the page says so

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(PROJECT_ROOT)} ({self.lang} block)"


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a page, in order, each with the reason it is not run (the
    comment on the last non-blank line above it, or the page's own)."""
    text = path.read_text("utf-8")
    page = PAGE_NOT_RUN.search(text)
    out = []
    for m in FENCE.finditer(text):
        indent, lang, body = m.group(1), m.group(2), m.group(3)
        body = "".join(line.removeprefix(indent) for line in body.splitlines(keepends=True))
        above = [ln.strip() for ln in text[: m.start()].splitlines() if ln.strip()]
        marked = NOT_RUN.match(above[-1]) if above else None
        reason = page.group(1) if page else (marked.group(1) if marked else None)
        out.append(Block(path, lang, body, reason))
    return out


def shell_blocks(path: Path) -> list[str]:
    """The ```sh blocks, heredoc bodies dropped (they are another program's input)."""
    out = []
    for block in blocks(path):
        if block.lang == "sh":
            body = re.sub(r"<<'?(\w+)'?\n.*?\n\1\n", "\n", block.body, flags=re.S)
            out.append(body.replace("\\\n", " "))
    return out


def _uncomment(block: str) -> str:
    """The block without its comments: a `#` at the start of a word, outside quotes, to the end
    of its line (the newline kept: it ends the command)."""
    out, quote, i = [], "", 0
    while i < len(block):
        c = block[i]
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or block[i - 1] in " \t\n"):
            while i < len(block) and block[i] != "\n":
                i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


PUNCTUATION = "();<>|&\n"
PLACEHOLDER = re.compile(r"<([A-Za-z][\w. -]*)>")
# A placeholder after shlex: `<session-id>` is written `@session-id@` before lexing, so that it
# is not read as a redirection.
TOKEN = re.compile(r"@([A-Za-z][\w. -]*)@")


def block_commands(body: str) -> list[list[str]]:
    """Each simple command of a shell block, as argv (redirections and their targets out). A
    quoted argument may span lines, as in the SQL examples."""
    body = re.sub(r"<<'?(\w+)'?\n.*?\n\1\n", "\n", body, flags=re.S).replace("\\\n", " ")
    text = PLACEHOLDER.sub(lambda m: "@" + m.group(1) + "@", _uncomment(body))
    lex = shlex.shlex(text, posix=True, punctuation_chars=PUNCTUATION)
    lex.whitespace = " \t\r"
    lex.whitespace_split = True
    lex.commenters = ""
    found: list[list[str]] = []
    argv: list[str] = []
    skip_next = False
    for tok in lex:
        if skip_next:
            skip_next = False
            continue
        if tok and set(tok) <= set(PUNCTUATION):
            if ("<" in tok or ">" in tok) and "\n" not in tok:
                skip_next = True  # a redirection: its target is no argument
                continue
            if argv:
                found.append(argv)
            argv = []
            continue
        argv.append(tok)
    if argv:
        found.append(argv)
    return found


def commands(path: Path) -> list[list[str]]:
    return [argv for b in blocks(path) if b.lang == "sh" for argv in block_commands(b.body)]


def _program(argv: list[str]) -> tuple[str, list[str]]:
    i = 0
    while i < len(argv) and re.match(r"^[A-Z_]+=", argv[i]):  # VAR=value before a command
        i += 1
    if i >= len(argv):
        return "", []
    return Path(argv[i]).name, argv[i + 1 :]


def mole_commands() -> list[tuple[str, list[str]]]:
    got = []
    for readme in READMES:
        for argv in commands(readme):
            prog, args = _program(argv)
            if prog == "mole":
                got.append((readme.name, args))
    return got


def test_the_readmes_name_mole_commands() -> None:
    names = {args[0] for _, args in mole_commands() if args and not args[0].startswith("-")}
    # A broken extraction would make the tests below vacuous.
    assert {"research", "sessions", "show", "sql", "materialize", "resume"} <= names, names
    assert {"rerun", "diff", "watch", "crossings", "trace", "eval", "models"} <= names, names


@pytest.mark.parametrize(
    ("readme", "args"), mole_commands(), ids=lambda v: " ".join(v) if isinstance(v, list) else v
)
def test_every_mole_command_in_a_readme_parses(readme: str, args: list[str]) -> None:
    parser = build_parser()
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser.parse_args(args)
    except SystemExit as exc:
        pytest.fail(f"{readme}: `mole {' '.join(args)}` does not parse: {err.getvalue().strip()}")
        raise AssertionError from exc


def _make_targets() -> set[str]:
    makefile = (PROJECT_ROOT / "Makefile").read_text("utf-8")
    return set(re.findall(r"^([A-Za-z][\w.-]*):", makefile, re.M))


def test_every_make_target_in_a_readme_exists() -> None:
    named = []
    for readme in READMES:
        for argv in commands(readme):
            prog, args = _program(argv)
            if prog == "make":
                named += [a for a in args if not a.startswith("-") and "=" not in a]
    assert named, "the READMEs show make commands"
    assert set(named) <= _make_targets(), set(named) - _make_targets()


PATH = re.compile(r"[`(]((?:sql|mole_dag|assets|tests|bench|examples|deploy|docs|\.ci)/[^`)\s]*)")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _current_pages() -> list[Path]:
    return [p for p in READMES if p != HISTORY]


def test_every_project_path_a_readme_names_exists() -> None:
    missing = []
    for readme in _current_pages():
        for name in PATH.findall(readme.read_text("utf-8")):
            name = name.rstrip(".,:;")
            if any(c in name for c in "<>*{}$") or "..." in name:
                continue  # a pattern, not a path
            base = PROJECT_ROOT if readme.parent == PROJECT_ROOT else readme.parent
            if not (base / name).exists() and not (PROJECT_ROOT / name).exists():
                missing.append(f"{readme.name}: {name}")
    assert not missing, missing


def test_every_link_resolves_inside_the_repository() -> None:
    """Relative links (pages, screenshots) exist, and none leaves the repository: the README
    once pointed developers to a design document that is not in it (issue 34)."""
    bad = []
    for page in _current_pages():
        text = page.read_text("utf-8")
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+://", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if not path.is_relative_to(PROJECT_ROOT.resolve()) or not path.exists():
                bad.append(f"{page.relative_to(PROJECT_ROOT)}: {target}")
        for outside in ("../shared", "DESIGN.md"):
            if outside in text:
                bad.append(f"{page.relative_to(PROJECT_ROOT)} names {outside}")
    assert not bad, bad


def test_the_ui_screenshots_are_linked() -> None:
    shots = sorted(p.name for p in (PROJECT_ROOT / "docs" / "ui-launch").glob("*.png"))
    linked = set(
        re.findall(
            r"ui-launch/([\w.-]+\.png)",
            (PROJECT_ROOT / "docs" / "dagster-ui.md").read_text("utf-8"),
        )
    )
    assert shots and set(shots) <= linked, set(shots) - linked


def test_every_block_is_run_or_says_why() -> None:
    """A block this test would not know how to run fails here, unless its page says why it
    is not run: a new kind of command must be taught to the test, or marked."""
    unknown = []
    for page in DOCS:
        for block in blocks(page):
            if block.lang not in LANGUAGES:
                unknown.append(f"{block.where}: a block needs a language this test knows")
            if block.lang != "sh" or block.not_run:
                continue
            for argv in block_commands(block.body):
                prog, _ = _program(argv)
                if prog not in RUNNERS:
                    unknown.append(f"{block.where}: `{' '.join(argv)}` cannot be run here")
    assert not unknown, unknown


# -- running the documented commands ------------------------------------------------------------


DEMO_QUESTION = "What are the health effects of drinking coffee?"


@dataclass
class World:
    """What the documented commands run against, filled in as they run."""

    home: Path
    folder: Path  # `<folder>`: a small corpus
    survey: Path  # `<survey.csv>`
    sessions: dict[str, str]  # role -> session id: demo, folder, data, interrupted, old, new
    demo_report: str = ""
    ran: set[tuple[str, ...]] = field(default_factory=set)

    def fill(self, argv: list[str]) -> list[str]:
        """The command with its placeholders filled in: which session `<session>` is depends on
        the subcommand (resume needs an interrupted one, crossings one with data, ...)."""
        sub = argv[0] if argv else ""

        def value(m: re.Match[str]) -> str:
            name = m.group(1)
            if name == "folder":
                return str(self.folder)
            if name == "survey.csv":
                return str(self.survey)
            if name == "its question":
                return DEMO_QUESTION
            if name in ("old", "new"):
                return self.sessions[name]
            if name in ("session", "session-id"):
                role = {"resume": "interrupted", "crossings": "data", "rerun": "folder"}
                return self.sessions[role.get(sub, "demo")]
            raise AssertionError(f"placeholder <{name}>: teach tests/test_readme_commands.py")

        return [TOKEN.sub(value, a) for a in argv]


@contextlib.contextmanager
def _as_a_process() -> Iterator[None]:
    """Each command as if in a process of its own: the CLI moves into Dagster's instance folder
    and sets DAGSTER_HOME for the runs it starts, which a `mole` process leaves behind at exit."""
    cwd, env = Path.cwd(), dict(os.environ)
    try:
        yield
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)


def _mole(world: World, args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    args = world.fill(args)
    if tuple(args) in world.ran:
        return  # the same command on two pages (or in a make recipe) runs once
    world.ran.add(tuple(args))
    with _as_a_process():
        code = main(args)
    out = capsys.readouterr()
    assert code == 0, f"`mole {shlex.join(args)}` exited {code}: {out.err[-2000:]}"
    if args[0] in ("research", "rerun"):
        sid = re.search(r"^session (\S+)$", out.out, re.M)
        assert sid, out.out[-2000:]
        if args[0] == "rerun":
            world.sessions["old"], world.sessions["new"] = args[1], sid.group(1)
        elif "--data" in args:
            world.sessions["data"] = sid.group(1)
        elif "--corpus" in args:
            world.sessions["folder"] = sid.group(1)
        elif args[1] == DEMO_QUESTION:
            world.sessions["demo"] = sid.group(1)
            world.demo_report = out.out


def _make(world: World, args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """A make target, by the `mole` commands its recipe runs (its prerequisites, the venv and
    the instance folder, are this test's own)."""
    makefile = (PROJECT_ROOT / "Makefile").read_text("utf-8")
    for target in (a for a in args if "=" not in a and not a.startswith("-")):
        recipe = re.search(rf"^{re.escape(target)}:[^\n]*\n((?:\t[^\n]*\n)*)", makefile, re.M)
        assert recipe, f"make {target}: no such target"
        for line in recipe.group(1).splitlines():
            argv = shlex.split(line.strip())
            assert argv[0] == "$(BIN)/mole", f"make {target}: `{line.strip()}` is not run here"
            _mole(world, argv[1:], capsys)


def _dagster(world: World, args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Dagster's own CLI, in process, on the instance the `mole` commands recorded in."""
    from dagster._cli import cli as dagster_cli

    args = world.fill(args)
    with _as_a_process():
        # As the page says: from the project root, with DAGSTER_HOME the instance folder.
        os.environ["DAGSTER_HOME"] = str(world.home / "dagster")
        os.chdir(PROJECT_ROOT)
        try:
            dagster_cli.main(args=args, standalone_mode=False)
        except SystemExit as exc:
            assert not exc.code, f"`dagster {shlex.join(args)}` exited {exc.code}"
    capsys.readouterr()


RUNNERS: dict[str, Callable[[World, list[str], pytest.CaptureFixture[str]], object]] = {
    "mole": _mole,
    "make": _make,
    "dagster": _dagster,
}
# The order the documented commands run in: each after the ones that make what it names.
PHASES = ("make", "research", "resume", "rerun", "materialize", "dagster", "")


def _phase(argv: list[str]) -> int:
    prog, args = _program(argv)
    for key in (prog, args[0] if args else ""):
        if key in PHASES:
            return PHASES.index(key)
    return len(PHASES) - 1


def _runnable() -> Iterator[tuple[Block, list[str]]]:
    for page in DOCS:
        for block in blocks(page):
            if block.lang == "sh" and not block.not_run:
                for argv in block_commands(block.body):
                    yield block, argv


def _interrupted_session(folder: Path) -> str:
    """A session stopped before its first round, as a signal leaves one: `mole resume`'s."""
    with Store(default_store_path()) as st:
        sid = create_session(
            st, "Does green tea affect sleep?", Unit.TOKENS, 200_000, corpus=str(folder)
        ).session_id
        assert stop_session(Ledger(st), sid, SessionStatus.INTERRUPTED, "stopped by the docs test")
    return sid


def _excerpt_items(excerpt: str) -> list[str]:
    """The README's report excerpt as the statements it quotes: its items and lines, joined
    where wrapped, without the parts that change from run to run (the id, the date) or that
    stand for what was left out."""
    items: list[str] = []
    new = True
    for line in excerpt.splitlines():
        line = re.sub(r"^> ?", "", line).rstrip()
        if not line:
            new = True
        elif new or line == "..." or re.match(r"^(#|- |\d+\. |\[\d+\] |  - )", line):
            items.append(line)
            new = line == "..."
        else:
            items[-1] += " " + line.strip()
    return [" ".join(i.split()) for i in items if i != "..." and "Session `" not in i]


@pytest.mark.slow
@pytest.mark.timeout(900)  # six sessions in process: a few minutes on a loaded two-core machine
def test_the_documented_commands_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = Path(os.environ["MOLE_HOME"])
    monkeypatch.chdir(PROJECT_ROOT)  # the pages' relative paths (examples/demo-labels.json)
    # `mole sql` alone reads statements from a standard input that is not a terminal.
    monkeypatch.setattr(sys, "stdin", io.StringIO("SELECT count(*) FROM sessions;\n"))
    world = World(
        home=home,
        folder=write_mini_corpus(tmp_path),
        survey=write_survey(tmp_path / "survey.csv", rows=400),
        sessions={},
    )
    runnable = sorted(_runnable(), key=lambda item: _phase(item[1]))
    for block, argv in runnable:
        if _phase(argv) >= PHASES.index("resume") and "interrupted" not in world.sessions:
            world.sessions["interrupted"] = _interrupted_session(world.folder)
        prog, args = _program(argv)
        try:
            RUNNERS[prog](world, args, capsys)
        except AssertionError as exc:
            raise AssertionError(f"{block.where}: {exc}") from None
    assert {"demo", "folder", "data", "interrupted", "old", "new"} <= set(world.sessions)

    # The README's example session is what `make demo` prints.
    readme = [b for b in blocks(PROJECT_ROOT / "README.md") if b.lang == "text"]
    assert readme, "the README shows an excerpt of the demo's report"
    report = " ".join(re.sub(r"(?m)^> ?", "", world.demo_report).split())
    missing = [i for i in _excerpt_items(readme[0].body) if i not in report]
    assert not missing, missing


def test_the_other_blocks_are_valid_as_written(tmp_path: Path) -> None:
    """JSON parses; the launchpad's YAML is a valid `research_session` run config; the Python
    connects to a store and reads it."""
    import dagster as dg
    import yaml

    from assets.definitions import defs

    checked = {"json": 0, "yaml": 0, "python": 0}
    db = tmp_path / "mole.duckdb"
    Store(db).close()
    for page in DOCS:
        for block in blocks(page):
            if block.not_run or block.lang not in checked:
                continue
            checked[block.lang] += 1
            if block.lang == "json":
                json.loads(block.body)
            elif block.lang == "yaml":
                job = defs.resolve_job_def("research_session")
                dg.validate_run_config(job, yaml.safe_load(block.body))
            else:
                namespace: dict[str, object] = {}
                exec(compile(block.body, block.where, "exec"), namespace)  # noqa: S102
                connect = namespace["connect"]
                assert callable(connect)
                con = connect(str(db))
                try:
                    assert con.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
                finally:
                    con.close()
    assert all(checked.values()), checked


def test_the_sql_examples_run_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a store with a paid USD session: its amounts print as money."""
    db = tmp_path / "readme.duckdb"
    with Store(db) as st:
        ledger = Ledger(st)
        sid = ledger.create_session("q?", Unit.USD_MICROS, 500_000).session_id
        ledger.settle(ledger.reserve(sid, Role.PLANNER, 75_000, tool="t", stage="plan"), 75_000)
        materialize_all(st)
    monkeypatch.setenv("MOLE_DB", str(db))
    ran = 0
    for _, args in mole_commands():
        if not args or args[0] != "sql" or len(args) == 1:
            continue  # the prompt is interactive
        args = [TOKEN.sub(sid, a) for a in args]
        assert main(args) == 0, capsys.readouterr().err
        ran += 1
    assert ran >= 3
    assert "0.075000" in capsys.readouterr().out
