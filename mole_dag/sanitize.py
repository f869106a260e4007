"""Strip what a hostile page could use to rewrite what the reader sees: terminal control
sequences (C0 and C1 controls, ANSI escapes) and bidirectional overrides and isolates. Applied at
render time, to everything that reaches a report or a terminal."""

from __future__ import annotations

import re

# CSI with parameters; OSC up to BEL/ST, or to the end of the line when unterminated; any other
# escape sequence (ESC c resets a terminal). Lone C1 bytes in decoded text are almost always
# mojibake, so they are dropped by themselves (below) without eating the text after them.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?"
    r"|\x1b[ -/]*[0-~]"
)
# C0 controls except tab and newline, DEL, C1 controls; bidi embeddings/overrides/isolates and
# the marks; zero-width characters that can hide text; the BOM.
_CONTROLS = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)


def strip_controls(text: str) -> str:
    text = _ANSI.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROLS.sub("", text)


def one_line(text: str) -> str:
    """For table cells and list items: controls stripped, whitespace collapsed."""
    return " ".join(strip_controls(text).split())


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """For a terminal: every control, bidi and invisible character above (tab and newline
    excepted) shown as a visible escape (\\x1b, \\u202e) rather than removed, so what the store
    holds is shown as it is, yet cannot recolour, retitle or reorder the reader's terminal."""
    return _CONTROLS.sub(_visible, text)
