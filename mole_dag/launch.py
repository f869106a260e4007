"""Checking a research launch before anything is written.

The question, the budget (exactly one of USD or tokens, no default), the session id, the
concurrency setting, the model provider (known, keyed, priced in a USD session), the search
providers, the local corpus and the local data are each checked here, in that order, and the
first problem is raised as one user-facing line. `mole research`, mole-mcp's `research` tool and
the Dagster `session` asset's launch config (through mole_dag.session.ensure_session) all call
this, so the three front doors refuse the same input in the same words, and none writes anything
for it."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from mole_dag.actors.search_settings import (
    SearchSettings,
    SettingsError,
    availability,
    read_config,
    resolve_settings,
)
from mole_dag.core import MAX_QUESTION_CHARS, Unit
from mole_dag.sanitize import one_line

log = logging.getLogger("mole.launch")

SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

# Ceilings on a budget. Guesses, flagged as such: far above any research session we have run
# (cents to a few dollars; a few hundred thousand tokens), far below where the ledger's BIGINT
# columns overflow (9.2e18 micro-dollars), so a typo or `inf` is refused up front instead of
# failing inside DuckDB with a traceback, or worse, being taken at its word.
MAX_USD = Decimal("10000")
MAX_TOKENS = 10**12
_WHOLE = re.compile(r"^\+?[0-9][0-9_]*$")


class LaunchError(ValueError):
    """Input a research session cannot start from; the message says what to change."""


@dataclass(frozen=True)
class Launch:
    """Everything a session needs, checked."""

    question: str
    unit: Unit
    total: int
    provider: str
    skills: Any  # mole_dag.skills.protocol.Skills
    search: SearchSettings
    actors: tuple[str, ...]
    corpus: Path
    data: str | None


def _quiet(_line: str) -> None:
    return None


def check_session_id(session_id: str, flag: str = "--") -> str:
    if not SESSION_ID.match(session_id):
        raise LaunchError(
            f"{flag}session-id {session_id!r}: use letters, digits, '.', '_' or "
            "'-' (at most 64, starting with a letter or digit)"
        )
    return session_id


def check_text(text: str, what: str) -> str:
    """Text that will be stored must be UTF-8. A command line in another encoding (or bytes
    that are not text) reaches Python as lone surrogates, which no store can hold: refuse it
    here, naming the first bad byte, rather than fail in the store's driver."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        code = ord(bad)
        byte = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
        raise LaunchError(
            f"{what} is not valid UTF-8 text ({byte} at character {exc.start + 1}); "
            "pass it in UTF-8"
        ) from None
    return text


def clean_question(question: str) -> str:
    """The question as it is stored and searched for: terminal control sequences (ANSI CSI and
    OSC escapes whole, so no "31m" or window title is left behind), C0/C1 controls and bidi
    overrides removed, whitespace collapsed. A question is typed by a person; an escape in it
    is never a word to search for, and stored it would replay in every terminal it is shown in."""
    return one_line(question)


def check_budget(usd: str | None, tokens: str | None, flag: str = "--") -> tuple[Unit, int]:
    """Exactly one of usd and tokens, no default; finite, positive and at most the ceiling.
    USD becomes integer micro-dollars. The one budget check: the command line, mole-mcp, the
    Dagster launch config (check_launch) and re-grounding's run config (parse_budget) all come
    through here. `flag`
    is how messages spell option names ("--" on the command line, "" for a tool argument)."""
    if usd is None and tokens is None:
        raise LaunchError(f"a budget is required: pass {flag}usd AMOUNT or {flag}tokens N")
    if usd is not None and tokens is not None:
        raise LaunchError(f"pass {flag}usd or {flag}tokens, not both")
    if usd is not None:
        text = str(usd).strip()
        try:
            amount = Decimal(text.removeprefix("$"))
        except InvalidOperation:
            raise LaunchError(f"{flag}usd expects an amount like 0.50, got {usd!r}") from None
        # Decimal accepts "inf", "nan" and "snan"; none of them is an amount of money.
        if not amount.is_finite():
            raise LaunchError(f"{flag}usd must be a finite amount like 0.50, got {usd!r}")
        if amount <= 0:
            raise LaunchError(f"{flag}usd must be positive, got {text}")
        if amount > MAX_USD:
            raise LaunchError(
                f"{flag}usd {text} is over the maximum of ${MAX_USD:,}; pass a smaller amount"
            )
        micros = amount * 1_000_000
        if micros != micros.to_integral_value():
            raise LaunchError(f"{flag}usd {text} is finer than a micro-dollar")
        return Unit.USD_MICROS, int(micros)
    text = str(tokens).strip()
    if not _WHOLE.match(text):
        if text.startswith("-") and _WHOLE.match(text[1:]):
            raise LaunchError(f"{flag}tokens must be positive, got {text}")
        raise LaunchError(f"{flag}tokens expects a whole number, got {tokens!r}")
    digits = text.lstrip("+").replace("_", "").lstrip("0")
    # Compare lengths before int(): Python refuses to parse over 4300 digits, with a message
    # about its own limit rather than the budget's.
    if len(digits) > len(str(MAX_TOKENS)) or (digits and int(digits) > MAX_TOKENS):
        raise LaunchError(
            f"{flag}tokens {text} is over the maximum of {MAX_TOKENS:,}; pass a smaller number"
        )
    if not digits:
        raise LaunchError(f"{flag}tokens must be positive, got {text}")
    return Unit.TOKENS, int(digits)


def provider_name(provider: str | None) -> str:
    """The provider asked for, else MOLE_PROVIDER, else the config file's, else extractive."""
    from mole_dag.config import ConfigError
    from mole_dag.llm.registry import default_provider

    try:
        return (provider or default_provider()).strip().lower()
    except ConfigError as exc:
        raise LaunchError(str(exc)) from None


def choose_skills(provider: str, unit: Unit) -> Any:
    """The provider's skills, refusing (before any call is made) an unknown provider, a missing
    key, an unreadable or shared config file, and, in a USD session, a model without a price."""
    from mole_dag.config import ConfigError
    from mole_dag.llm.cassette import CassetteError
    from mole_dag.llm.pricing import PricingError, UnpricedModel
    from mole_dag.llm.registry import UnknownProvider
    from mole_dag.skillsets import skills_for

    try:
        skills = skills_for(provider)
        check = getattr(skills, "check_priced", None)
        if check is not None:
            check(unit)
    except (UnknownProvider, ConfigError, PricingError, UnpricedModel, CassetteError) as exc:
        raise LaunchError(str(exc)) from None
    return skills


def check_parallel(value: str | None = None, flag: str = "--") -> int:
    """The model calls a session may have in flight at once: `value` (the --parallel flag)
    when given, else the setting (MOLE_PARALLEL, else "parallel" in the config file, else 8),
    refused in one line when it is not a whole number from 1 to the maximum."""
    from mole_dag.config import ConfigError
    from mole_dag.llm.concurrency import parallel_setting, parse_parallel

    try:
        if value is not None:
            return parse_parallel(value, f"{flag}parallel")
        return parallel_setting()
    except ConfigError as exc:
        raise LaunchError(str(exc)) from None


def check_data(path: str, note: Callable[[str], None] = _quiet, flag: str = "--") -> str:
    """Open and profile the data; returns the resolved path the session records. `flag` is how
    error messages spell option names ("--" on the command line, "" for a tool argument)."""
    from mole_dag.local_data.connector import DataError, Dataset

    try:
        with Dataset.open(path) as ds:
            note(f"data {ds.describe()}")
            return str(ds.path)
    except DataError as exc:
        raise LaunchError(f"{flag}data: {exc}") from None


def usable_search(
    *,
    search: list[str] | None,
    searxng_url: str | None,
    allow_hosts: list[str] | None,
    note: Callable[[str], None] | None = None,
) -> tuple[SearchSettings, tuple[str, ...]]:
    """Flags (or launch config) over the user's config; providers missing a key or URL are
    skipped with a note. Raises SettingsError when nothing usable is left."""
    config = read_config()
    settings = resolve_settings(
        config, search=search, searxng_url=searxng_url, allow_hosts=allow_hosts
    )
    avail = availability(settings, config)
    for line in avail.notes:
        (note or log.warning)(line)
    if not avail.usable:
        raise SettingsError("no usable search provider: " + "; ".join(avail.notes))
    return settings, avail.usable


def check_launch(
    question: str,
    *,
    usd: str | None,
    tokens: str | None,
    provider: str | None = None,
    session_id: str | None = None,
    corpus: str | None = None,
    data: str | None = None,
    search: list[str] | None = None,
    searxng_url: str | None = None,
    allow_hosts: list[str] | None = None,
    note: Callable[[str], None] = _quiet,
    flag: str = "--",
    before_skills: Callable[[str], None] | None = None,
) -> Launch:
    """Check everything a `mole research` launch names. `note` receives warnings that do not
    stop the launch (a search provider skipped for a missing key, a corpus file skipped).
    `before_skills(provider)` runs once the provider is named and before its skills are built
    (the CLI checks --cassette and --record there); it raises LaunchError to refuse."""
    from mole_dag.actors.local import CorpusError, LocalCorpus
    from mole_dag.paths import demo_corpus

    question = clean_question(question)
    if not question:
        raise LaunchError("the question is empty; ask something, in quotes")
    check_text(question, "the question")
    if len(question) > MAX_QUESTION_CHARS:
        # Named by its length, never echoed: the point is not to print it whole.
        raise LaunchError(
            f"the question is {len(question):,} characters long; ask it in at most "
            f"{MAX_QUESTION_CHARS:,} characters"
        )
    unit, total = check_budget(usd, tokens, flag)
    if session_id is not None:
        check_session_id(session_id, flag)
    check_parallel()
    name = provider_name(provider)
    if before_skills is not None:
        before_skills(name)
    skills = choose_skills(name, unit)
    try:
        settings, actors = usable_search(
            search=search, searxng_url=searxng_url, allow_hosts=allow_hosts, note=note
        )
    except SettingsError as exc:
        raise LaunchError(str(exc)) from None
    root = Path(corpus).expanduser().resolve() if corpus else demo_corpus()
    if "local" in actors:
        try:
            found = LocalCorpus.open(root)
        except CorpusError as exc:
            raise LaunchError(str(exc)) from None
        for skipped in found.skipped:
            note(f"skipped {skipped.path}: {skipped.reason}")
    resolved_data = check_data(data, note, flag) if data else None
    return Launch(question, unit, total, name, skills, settings, actors, root, resolved_data)
