"""What a mind may see of attached data, and what it may answer.

The view carries names, types, counts and roles; never a value from a row. The answer is a
template name and column names, which the boundary looks up in the profile: text a model writes is
never placed into SQL. Plain dataclasses, importable by the skills protocol without pulling in the
boundary's machinery."""

from __future__ import annotations

from dataclasses import dataclass, field

# Column roles a template can ask for.
GROUP = "group"  # a category with few enough levels to group by
MEASURE = "measure"  # a number to average, take the median of, correlate, bucket
BINARY = "binary"  # exactly two levels, each on at least the floor's number of rows


@dataclass(frozen=True)
class ColumnView:
    name: str
    type: str  # integer | number | text | boolean | date | other
    roles: tuple[str, ...] = ()
    distinct: int = 0
    null_rate: float = 0.0
    withheld: str | None = None  # why the column may not be used, or None


@dataclass(frozen=True)
class TemplateInfo:
    name: str
    slots: tuple[tuple[str, str], ...]  # (slot, role the column in it must have)
    description: str


@dataclass(frozen=True)
class ProfileView:
    """The profile as the hypothesis skill receives it, with the question it should serve."""

    question: str
    file: str
    rows: int
    columns: tuple[ColumnView, ...]
    templates: tuple[TemplateInfo, ...]
    max_choices: int

    def visible(self, role: str) -> list[ColumnView]:
        return [c for c in self.columns if c.withheld is None and role in c.roles]


@dataclass(frozen=True)
class HypothesisChoice:
    """One answer: a template and, per slot, the NAME of a column. `buckets` is used only by the
    distribution template."""

    template: str
    columns: dict[str, str] = field(default_factory=dict)
    buckets: int | None = None
