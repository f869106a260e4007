"""Pick the skills a session asked for."""

from __future__ import annotations

from mole_dag.llm.extractive import ExtractiveSkills
from mole_dag.llm.skills import Skills

PROVIDERS = ("extractive",)


class UnknownProvider(ValueError):
    pass


def skills_for(provider: str | None) -> Skills:
    name = (provider or "extractive").strip().lower()
    if name == "extractive":
        return ExtractiveSkills()
    raise UnknownProvider(
        f"unknown provider {provider!r}; available: {', '.join(PROVIDERS)}"
    )
