"""HTML for reading a report in a browser, converted from the report's own Markdown subset
(headings, paragraphs, numbered and bulleted lists, block quotes, bold, strike-through, code
spans, autolinks). Everything is escaped first, so nothing a page wrote can become markup; links
are only ever http(s), or a corpus file's file:// URL."""

from __future__ import annotations

import html
import re

from mole_dag.sanitize import strip_controls

_BOLD = re.compile(r"\*\*(.+?)\*\*")
_STRIKE = re.compile(r"~~(.+?)~~")
_CODE = re.compile(r"`([^`]+)`")
_LINK = re.compile(r"&lt;(https?://[^\s&]+(?:&amp;[^\s&]+)*)&gt;")
# A corpus file's URL (issue 19), as Path.as_uri() writes it: an absolute path on this machine,
# percent-quoted, no host, no query. Reports written since issue 33 carry none (a corpus file is
# named by its path in the folder); older stored reports still link theirs.
_FILE_LINK = re.compile(r"&lt;(file:///[A-Za-z0-9/%._~-]*)&gt;")
_CITE = re.compile(r"\[(\d+)((?:, p\. \d+)?)\]")
_ESCAPES = (("\\\\", "\ue000"), ("\\[", "\ue001"), ("\\]", "\ue002"))

STYLE = (
    "body{font:16px/1.55 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;"
    "color:#1d1d1f}blockquote{border-left:4px solid #ccc;margin:1rem 0;padding:.2rem 1rem;"
    "color:#555}li{margin:.35rem 0}code{background:#f3f3f3;padding:0 .25rem}"
    "a.cite{text-decoration:none}"
)


def _inline(text: str) -> str:
    # Backslash escapes first (the report escapes brackets a source wrote, `int(l\\[2\\])`):
    # held as private-use characters through html.escape, then written as character
    # references, they show as written and can never become a citation link.
    for esc, hold in _ESCAPES:
        text = text.replace(esc, hold)
    t = html.escape(text, quote=True)
    for (_esc, hold), ref in zip(_ESCAPES, ("&#92;", "&#91;", "&#93;"), strict=True):
        t = t.replace(hold, ref)
    t = _CODE.sub(r"<code>\1</code>", t)
    t = _BOLD.sub(r"<strong>\1</strong>", t)
    t = _STRIKE.sub(r"<del>\1</del>", t)
    t = _LINK.sub(r'<a href="\1" rel="noopener noreferrer">\1</a>', t)
    t = _FILE_LINK.sub(r'<a href="\1">\1</a>', t)
    return _CITE.sub(r'<a class="cite" href="#src-\1">[\1\2]</a>', t)


def render_html(markdown: str, title: str = "mole report") -> str:
    lines = strip_controls(markdown).split("\n")
    out: list[str] = []
    open_list: str | None = None
    in_sources = False

    def close_list() -> None:
        nonlocal open_list
        if open_list:
            out.append(f"</{open_list}>")
            open_list = None

    for raw in lines:
        line = raw.rstrip()
        if not line.strip():
            close_list()
            continue
        if line.startswith("#"):
            close_list()
            level = min(len(line) - len(line.lstrip("#")), 6)
            text = line[level:].strip()
            in_sources = text == "Sources"
            out.append(f"<h{level}>{_inline(text)}</h{level}>")
        elif line.startswith("> "):
            close_list()
            out.append(f"<blockquote>{_inline(line[2:])}</blockquote>")
        elif re.match(r"^\d+\. ", line):
            if open_list != "ol":
                close_list()
                out.append("<ol>")
                open_list = "ol"
            out.append(f"<li>{_inline(line.split('. ', 1)[1])}</li>")
        elif line.startswith("- ") or line.lstrip().startswith("- "):
            if open_list != "ul":
                close_list()
                out.append("<ul>")
                open_list = "ul"
            out.append(f"<li>{_inline(line.lstrip()[2:])}</li>")
        elif open_list and raw.startswith("   "):
            out.append(f"<div>{_inline(line.strip())}</div>")
        elif in_sources and (m := re.match(r"^\[(\d+)\] (.*)$", line)):
            close_list()
            out.append(f'<p id="src-{m.group(1)}">[{m.group(1)}] {_inline(m.group(2))}</p>')
        else:
            close_list()
            out.append(f"<p>{_inline(line)}</p>")
    close_list()
    return (
        f'<!doctype html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}'
        f"</title><style>{STYLE}</style></head>\n<body>\n" + "\n".join(out) + "\n</body></html>\n"
    )
