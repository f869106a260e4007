"""Citations are assigned mechanically. Sources are numbered before the writer runs, so every
[n] the writer can legitimately use already maps to a real source; this module checks that the
writer used only those."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A page after a citation: " (p. 12)", or a range " (pp. 12-14)".
_PAGE = r"pp?\.\s*\d+(?:[-\u2013]\d+)?"
# "[3]", "[3][4]", "[3, 4]", and a PDF's page (issue 19) in the form the report prints,
# "[3] (p. 12)", or the form it printed before, "[3, p. 12]" (old stored reports, and a source
# that carried either).
_CITE = re.compile(rf"\[(\d+(?:\s*[,;]\s*\d+)*)(?:,\s*{_PAGE})?\](?:\s*\({_PAGE}\))?")


def cite(number: int, page: int | None = None) -> str:
    """One citation as the report prints it: "[3]", or "[3] (p. 12)" for a page of a PDF. The
    number stands alone in its brackets, as every reader of "[n]" expects (a scorer, a script);
    the space keeps "[3] (p. 12)" from reading as a Markdown link "[3](p. 12)"."""
    return f"[{number}] (p. {page})" if page else f"[{number}]"


def strip_reference_markers(text: str) -> str:
    """Remove bracketed numbers a source carried ("... in adults.[7]"): quoted into a report they
    would read as citations that the report did not assign."""
    return " ".join(_CITE.sub(" ", text).split())


def cited_numbers(body: str) -> list[int]:
    out: list[int] = []
    for m in _CITE.finditer(body):
        out.extend(int(x) for x in re.split(r"\s*[,;]\s*", m.group(1)))
    return out


@dataclass(frozen=True)
class CitationCheck:
    ok: bool
    forged: tuple[int, ...] = ()  # numbers that map to no source
    unsupported: tuple[int, ...] = ()  # sources that support no claim in the report
    cited: tuple[int, ...] = ()

    def explain(self) -> str:
        if self.ok:
            return f"{len(set(self.cited))} distinct citations, all valid"
        parts = []
        # Numbers without brackets: this text can end up in a report, where "[99]" would itself
        # read as a citation.
        if self.forged:
            parts.append(
                "cites source numbers that do not exist: " + ", ".join(map(str, self.forged))
            )
        if self.unsupported:
            parts.append(
                "cites source numbers that support no finding: "
                + ", ".join(map(str, self.unsupported))
            )
        return "; ".join(parts)


def check_body(body: str, numbered: set[int], supporting: set[int]) -> CitationCheck:
    """`numbered`: every source number that exists. `supporting`: those that support at least
    one finding in the report. A body citing outside either is rejected."""
    cited = cited_numbers(body)
    forged = sorted({n for n in cited if n not in numbered})
    unsupported = sorted({n for n in cited if n in numbered and n not in supporting})
    return CitationCheck(
        not forged and not unsupported, tuple(forged), tuple(unsupported), tuple(cited)
    )
