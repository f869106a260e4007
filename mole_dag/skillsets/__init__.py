"""The skills a session uses, built by provider name: the stages' own prompts and extractive rules
wired into the skills protocol (mole_dag.skills). Above every stage, since it assembles all of
them; below the driver, which picks them for a session."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mole_dag.config import load_config
from mole_dag.llm.pricing import PriceTable
from mole_dag.llm.registry import PROVIDERS, UnknownProvider, build_provider, judge_model_of
from mole_dag.skills.protocol import Skills
from mole_dag.skillsets.extractive import ExtractiveSkills


def skills_for(provider: str | None, config: Mapping[str, Any] | None = None) -> Skills:
    """The skills for a provider name. Reads the config file only for a model provider, so the
    offline default works on a machine with no config at all."""
    name = (provider or "extractive").strip().lower()
    if name == "extractive":
        return ExtractiveSkills()
    if name not in PROVIDERS:
        raise UnknownProvider(f"unknown provider {provider!r}; available: {', '.join(PROVIDERS)}")
    from mole_dag.skillsets.model import ModelSkills

    cfg = load_config() if config is None else config
    prices = PriceTable.load(cfg.get("pricing"))
    if name == "cassette":
        # A replay judges with the model it was recorded with, whatever the config says now.
        from mole_dag.llm.cassette import Cassette

        replay = build_provider(name, cfg)
        tape = getattr(replay, "cassette", None)
        judge = (tape.meta.get("judge_model") if isinstance(tape, Cassette) else None) or None
        return ModelSkills(replay, prices, name=name, judge_model=judge)
    return ModelSkills(
        build_provider(name, cfg), prices, name=name, judge_model=judge_model_of(name, cfg)
    )
