"""A research session's launch config as Dagster config: the schema the launchpad checks, and
the config a stored session's later runs carry.

The schema makes `question` and exactly one budget (a Selector: `usd` or `tokens`) required,
so the launchpad shows an empty or half-filled config as missing entries and will not launch
it; before, every key was optional and an empty config failed inside the run. What the schema
cannot check (a corpus that exists, a priced model, a session id's characters) is the launch
check of mole_dag.launch, run by the `session` asset, in the words `mole research` uses.

Every run that materialises `session` names its session's question and budget: the first one
creates the session from them, later ones (the CLI's rounds, the sensor's, `mole materialize`)
pass the stored values (`session_run_config`), and a config that names another question or
budget than the stored session's is refused rather than ignored."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import dagster as dg

from mole_dag.core import Unit
from mole_dag.session import ensure_session
from mole_dag.store import Store
from mole_dag.store.records import SessionRow

# Strings, not floats: money is exact here ("0.10" stays ten cents), as on the command line.
BUDGET = dg.Selector(
    {
        "usd": dg.Field(
            str, description='A ceiling in US dollars, quoted: "0.50". 15 % is held for the report.'
        ),
        "tokens": dg.Field(
            str, description='A ceiling in model tokens, quoted: "200000" (no prices needed).'
        ),
    }
)

SESSION_CONFIG: dict[str, dg.Field] = {
    "question": dg.Field(str, description="The question, as for `mole research`."),
    "budget": dg.Field(
        BUDGET, description="Exactly one of usd or tokens; there is no default, as on the CLI."
    ),
    "corpus": dg.Field(
        dg.Noneable(str),
        default_value=None,
        description="A folder of documents, as --corpus (default: the bundled demo corpus).",
    ),
    "provider": dg.Field(
        str,
        default_value="",
        description="extractive, anthropic, openai or cassette (default: MOLE_PROVIDER, else "
        'the config file\'s "provider", else extractive).',
    ),
    "search": dg.Field(
        [str],
        default_value=[],
        description="Search providers, as --search (default: the config file's, else local).",
    ),
    "searxng_url": dg.Field(dg.Noneable(str), default_value=None, description="As --searxng-url."),
    "allow_hosts": dg.Field([str], default_value=[], description="As --allow-host."),
    "data": dg.Field(
        dg.Noneable(str),
        default_value=None,
        description="A CSV file or folder for the local-data gate, as --data.",
    ),
}


@dataclass(frozen=True)
class LaunchConfig:
    """The `session` asset's config, read from Dagster's validated dict."""

    question: str
    usd: str | None
    tokens: str | None
    corpus: str | None
    provider: str | None
    search: list[str]
    searxng_url: str | None
    allow_hosts: list[str]
    data: str | None

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> LaunchConfig:
        budget = config["budget"]
        return cls(
            question=config["question"],
            usd=budget.get("usd"),
            tokens=budget.get("tokens"),
            corpus=config.get("corpus"),
            provider=config.get("provider") or None,
            search=list(config.get("search") or []),
            searxng_url=config.get("searxng_url"),
            allow_hosts=list(config.get("allow_hosts") or []),
            data=config.get("data"),
        )

    def ensure(self, store: Store, session_id: str, note: Callable[[str], None]) -> None:
        """The session this launch names, created if the store lacks it, with the checks
        `mole research` makes (mole_dag.session.ensure_session): raises LaunchError or
        SessionMissing for a refused launch."""
        ensure_session(
            store,
            session_id,
            question=self.question,
            usd=self.usd,
            tokens=self.tokens,
            corpus=self.corpus,
            provider=self.provider,
            search=self.search,
            searxng_url=self.searxng_url,
            allow_hosts=self.allow_hosts,
            note=note,
            data=self.data,
        )


def budget_config(unit: Unit | str, total: int) -> dict[str, str]:
    """The budget selector for a stored budget: micro-dollars back to an exact dollar string."""
    if str(unit) == str(Unit.USD_MICROS):
        return {"usd": format(Decimal(total) / 1_000_000, "f")}
    return {"tokens": str(total)}


def stored_launch(row: SessionRow) -> dict[str, Any]:
    """The `session` op config naming a stored session's question and budget."""
    return {"question": row.question, "budget": budget_config(row.unit, row.total)}


def session_run_config(row: SessionRow) -> dict[str, Any]:
    """Run config for a run that materialises `session` of a session the store already has."""
    return {"ops": {"session": {"config": stored_launch(row)}}}
