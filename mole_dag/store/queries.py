"""Named SQL queries, loaded from sql/queries/*.sql.

Each query is a block that starts with a `-- name: <name>` line, so SQL stays in sql/ where it
can be read and reviewed as SQL, and Python refers to it by name."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from mole_dag.paths import sql_dir

_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


class UnknownQuery(KeyError):
    pass


def parse_queries(text: str, origin: str = "<string>") -> dict[str, str]:
    out: dict[str, str] = {}
    marks = list(_NAME.finditer(text))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[m.end() : end].strip()
        name = m.group(1)
        if name in out:
            raise ValueError(f"{origin}: query {name!r} defined twice")
        if not body:
            raise ValueError(f"{origin}: query {name!r} is empty")
        out[name] = body.rstrip(";").strip()
    return out


@lru_cache(maxsize=4)
def load_queries(directory: Path | None = None) -> dict[str, str]:
    directory = directory or sql_dir() / "queries"
    out: dict[str, str] = {}
    for path in sorted(directory.glob("*.sql")):
        for name, body in parse_queries(path.read_text(encoding="utf-8"), str(path)).items():
            if name in out:
                raise ValueError(f"{path}: query {name!r} already defined in another file")
            out[name] = body
    return out


def q(name: str) -> str:
    try:
        return load_queries()[name]
    except KeyError:
        raise UnknownQuery(f"no named query {name!r} in {sql_dir() / 'queries'}") from None
