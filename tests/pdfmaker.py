"""A tiny PDF writer for tests: pages of text lines in Helvetica at given positions, and the bad
inputs issue 19 names (no text layer, a decompression bomb, damage, many pages). Written by hand,
so a test says exactly what the file holds; encryption uses pypdf's writer (a dev dependency)."""

from __future__ import annotations

import io
import zlib
from collections.abc import Sequence

# (x, y, text, size): a line of text with its baseline at y (points from the page's bottom).
Line = tuple[float, float, str, float]
WIDTH, HEIGHT = 612, 792


def _escape(text: str) -> bytes:
    raw = text.encode("cp1252")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def _content(lines: Sequence[Line]) -> bytes:
    out = []
    for x, y, text, size in lines:
        out.append(b"BT /F1 %g Tf %g %g Td (" % (size, x, y) + _escape(text) + b") Tj ET")
    return b"\n".join(out)


def make_pdf(
    pages: Sequence[Sequence[Line]],
    *,
    title: str | None = None,
    extra_stream: bytes | None = None,
    graphics_only: bool = False,
) -> bytes:
    """A PDF whose page i shows `pages[i]`. `extra_stream`: raw bytes of one more object, a
    Flate stream (the bomb). `graphics_only`: pages draw a rectangle and carry no text."""
    objs: list[bytes] = []

    def add(body: bytes) -> int:
        objs.append(body)
        return len(objs)

    catalog = add(b"")  # filled in below
    pages_obj = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    kids = []
    for lines in pages:
        data = b"0 0 m 300 300 l 300 0 l h f" if graphics_only else _content(lines)
        stream = zlib.compress(data)
        content = add(
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream)
            + stream
            + b"\nendstream"
        )
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %d %d] /Contents %d 0 R "
                b"/Resources << /Font << /F1 %d 0 R >> >> >>"
                % (pages_obj, WIDTH, HEIGHT, content, font)
            )
        )
    if extra_stream is not None:
        add(
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(extra_stream)
            + extra_stream
            + b"\nendstream"
        )
    objs[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_obj
    objs[pages_obj - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    info = None
    if title is not None:
        info = add(b"<< /Title (" + _escape(title) + b") >>")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % i + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    trailer = b"<< /Size %d /Root %d 0 R" % (len(objs) + 1, catalog)
    if info is not None:
        trailer += b" /Info %d 0 R" % info
    out.write(b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


def prose_page(sentences: Sequence[str], *, top: float = 700, size: float = 11) -> list[Line]:
    """Sentences set as one paragraph of lines about 80 characters wide from `top` down."""
    words = " ".join(sentences).split()
    lines: list[Line] = []
    cur = ""
    y = top
    for w in words:
        if cur and len(cur) + 1 + len(w) > 80:
            lines.append((72, y, cur, size))
            y -= size * 1.25
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    if cur:
        lines.append((72, y, cur, size))
    return lines


def encrypt(pdf: bytes, password: str = "secret") -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(pdf)).pages:
        writer.add_page(page)
    writer.encrypt(user_password=password, owner_password=password, algorithm="AES-128")
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()
