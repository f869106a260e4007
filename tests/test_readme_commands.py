"""Issue 23: the README matches the product. Every `mole` command in a shell block of README.md
and deploy/README.md parses with the CLI's real parser (so a subcommand or flag that does not
exist fails here, and a flag added later needs no edit here); every `make` target exists; every
path of the project the READMEs name exists; and the SQL examples run, as written, against a
store with a session in it."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from mole_dag.budget import Ledger
from mole_dag.cli import build_parser, main
from mole_dag.core import Role, Unit
from mole_dag.paths import PROJECT_ROOT
from mole_dag.store import Store
from mole_dag.store.models import materialize_all

READMES = (PROJECT_ROOT / "README.md", PROJECT_ROOT / "deploy" / "README.md")


def shell_blocks(path: Path) -> list[str]:
    """The ```sh blocks, heredoc bodies dropped (they are another program's input)."""
    text = path.read_text("utf-8")
    blocks = re.findall(r"^[ \t]*```sh\n(.*?)^[ \t]*```", text, re.S | re.M)
    out = []
    for block in blocks:
        block = re.sub(r"<<'?(\w+)'?\n.*?\n\1\n", "\n", block, flags=re.S)
        out.append(block.replace("\\\n", " "))
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
PLACEHOLDER = re.compile(r"<([A-Za-z][\w-]*)>")


def commands(path: Path) -> list[list[str]]:
    """Each simple command of each shell block, as argv (redirections and their targets out).
    A quoted argument may span lines, as in the SQL examples."""
    found: list[list[str]] = []
    for block in shell_blocks(path):
        # `<session-id>` is a placeholder, not a redirection.
        text = PLACEHOLDER.sub(r"@\1@", _uncomment(block))
        lex = shlex.shlex(text, posix=True, punctuation_chars=PUNCTUATION)
        lex.whitespace = " \t\r"
        lex.whitespace_split = True
        lex.commenters = ""
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
    # A broken extraction would make the test below vacuous.
    assert {"research", "sessions", "show", "sql", "materialize", "resume"} <= names, names


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


def test_every_make_target_in_a_readme_exists() -> None:
    makefile = (PROJECT_ROOT / "Makefile").read_text("utf-8")
    targets = set(re.findall(r"^([A-Za-z][\w.-]*):", makefile, re.M))
    named = []
    for readme in READMES:
        for argv in commands(readme):
            prog, args = _program(argv)
            if prog == "make":
                named += [a for a in args if not a.startswith("-") and "=" not in a]
    assert named, "the READMEs show make commands"
    assert set(named) <= targets, set(named) - targets


PATH = re.compile(r"[`(]((?:sql|mole_dag|assets|tests|bench|examples|deploy|docs|\.ci)/[^`)\s]*)")


def test_every_project_path_a_readme_names_exists() -> None:
    missing = []
    for readme in READMES:
        for name in PATH.findall(readme.read_text("utf-8")):
            name = name.rstrip(".,:;")
            if any(c in name for c in "<>*{}$") or "..." in name:
                continue  # a pattern, not a path
            base = PROJECT_ROOT if readme.parent == PROJECT_ROOT else readme.parent
            if not (base / name).exists() and not (PROJECT_ROOT / name).exists():
                missing.append(f"{readme.name}: {name}")
    assert not missing, missing


def test_the_sql_examples_run_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
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
        assert main([a.replace("@session-id@", sid) for a in args]) == 0, capsys.readouterr().err
        ran += 1
    assert ran >= 3
    assert "0.075000" in capsys.readouterr().out
