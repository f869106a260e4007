"""How the report words what it shows: a source's words escaped as data, a count with its noun
in the right number, an amount in its unit. Shared by the selection, the reasons, the answer and
the rendering of the report."""

from __future__ import annotations


def escape_markdown(text: str) -> str:
    """A source's words shown as data: a bracketed marker it carried (`[2]`, `l[2]`) must not
    read as a citation the report assigned, and is not deleted either (`int(l[2])` is code).
    Backslash first, so an escape the source wrote stays visible as written."""
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def counted(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def fmt_amount(amount: int, unit: str) -> str:
    if unit == "usd_micros":
        return f"${amount / 1_000_000:.4f}"
    return f"{amount} tokens"
