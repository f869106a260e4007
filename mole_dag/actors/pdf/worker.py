"""The PDF reading process: PDFium (through pypdfium2) runs here, in a child process of its own,
never in mole's process.

Why a process: PDFium is C++ and reads attacker-chosen bytes. A PDF that makes it loop cannot be
interrupted from Python, one that makes it allocate gigabytes takes the whole process down, and
PDFium is not thread-safe. In a child the parent can kill it at the time cap, its address space
is capped (a decompression bomb that slips past the scan below meets MemoryError here, not the
machine's memory), and requests are served one at a time.

Protocol (stdin -> stdout, both binary): a request is a 4-byte big-endian length and a JSON header
({"max_pages", "max_inflated_bytes"}), then a 4-byte length and the PDF's bytes. The answer is a
4-byte length and a JSON object: {"ok": true, "pages": [...], "meta": {...}} or
{"ok": false, "cause": <DeadEndCause value>, "detail": "..."}. A page is {"w", "h", "lines"}; a
line is [text, x0, x1, top, bottom, font_size, monospace, ends_in_hyphen]. The worker exits when
stdin closes. Run as `python -m mole_dag.actors.pdf.worker [address-space cap in MB]`."""

from __future__ import annotations

import ctypes
import json
import os
import re
import struct
import sys
import zlib
from typing import Any, BinaryIO

# Decompressed bytes produced per step of the scan: the most one stream can make us hold.
_STEP = 1 << 20
_STREAM = re.compile(rb"stream\r?\n")
_MONO = re.compile(r"mono|courier|typewriter|cmtt|consol|menlo|inconsolata|sourcecodepro", re.I)
# Where PDFium ends a line of a page's text (it writes CR LF), and the mark it puts in place of a
# hyphen at a line's end (U+FFFE in get_text_range, 0x02 in some builds), the line break removed.
_SPLIT = re.compile("\r\n|\r|\n|\ufffe|\x02")


def inflated_size(data: bytes, cap: int) -> int:
    """How many bytes the file's Flate streams inflate to, counted in bounded steps and stopped
    as soon as the total passes `cap` (so a bomb costs at most `cap` of work, never memory).
    Every `stream` keyword is tried: what is not zlib data fails on its first bytes."""
    total = 0
    for m in _STREAM.finditer(data):
        z = zlib.decompressobj()
        buf = data[m.end() : m.end() + (1 << 16)]
        pos = m.end() + len(buf)
        try:
            while True:
                out = z.decompress(buf, _STEP)
                total += len(out)
                if total > cap:
                    return total
                if z.eof:
                    break
                if z.unconsumed_tail:
                    buf = z.unconsumed_tail
                    continue
                if pos >= len(data):
                    break
                buf = data[pos : pos + (1 << 16)]
                pos += len(buf)
        except zlib.error:
            continue
    return total


def _refuse(cause: str, detail: str) -> dict[str, Any]:
    return {"ok": False, "cause": cause, "detail": detail}


def _font(tp: Any, raw: Any, index: int, buf: Any, flags: Any) -> tuple[float, bool]:
    size = float(raw.FPDFText_GetFontSize(tp.raw, index))
    n = raw.FPDFText_GetFontInfo(tp.raw, index, buf, len(buf), ctypes.byref(flags))
    name = buf.value.decode("latin-1", "replace") if n else ""
    return size, bool(flags.value & 1) or bool(_MONO.search(name))


def page_lines(page: Any, raw: Any, buf: Any, flags: Any) -> list[list[Any]]:
    """The page's text as PDFium orders it (the content stream's order, which for typeset
    papers is reading order, column by column), one entry per line with its geometry."""
    tp = page.get_textpage()
    try:
        text = tp.get_text_range()
        lines: list[list[Any]] = []
        pos = 0
        for m in [*_SPLIT.finditer(text), None]:
            end = m.start() if m is not None else len(text)
            seg = text[pos:end]
            hyphen = m is not None and m.group() in ("\ufffe", "\x02")
            a = pos + (len(seg) - len(seg.lstrip()))
            b = pos + len(seg.rstrip()) - 1
            pos = m.end() if m is not None else len(text)
            if b < a:
                continue
            x0, _, _, top0 = tp.get_charbox(a)
            _, bottom, x1, _ = tp.get_charbox(b)
            _, bottom0, _, _ = tp.get_charbox(a)
            size, mono = _font(tp, raw, a, buf, flags)
            if mono:
                # Monospace only when the line is: an inline `code()` at a line's start is not
                # a listing. The middle and the last character are asked too.
                mono = (
                    _font(tp, raw, (a + b) // 2, buf, flags)[1] and _font(tp, raw, b, buf, flags)[1]
                )
            lines.append(
                [
                    seg.strip(),
                    round(x0, 1),
                    round(x1, 1),
                    round(top0, 1),
                    round(min(bottom, bottom0), 1),
                    round(size, 2),
                    mono,
                    hyphen,
                ]
            )
        return lines
    finally:
        tp.close()


def read(data: bytes, max_pages: int, max_inflated: int) -> dict[str, Any]:
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    inflated = inflated_size(data, max_inflated)
    if inflated > max_inflated:
        return _refuse(
            "pdf_bomb",
            f"its compressed streams inflate to more than {max_inflated // (1 << 20)} MB "
            "(a decompression bomb, or a file far larger than a paper)",
        )
    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        err = getattr(exc, "err_code", None)
        if err == raw.FPDF_ERR_PASSWORD:
            return _refuse("pdf_encrypted", "it is encrypted with a password")
        if err == raw.FPDF_ERR_SECURITY:
            return _refuse("pdf_encrypted", "it uses an unsupported encryption handler")
        return _refuse("pdf_corrupt", f"it is damaged or truncated ({exc})")
    try:
        n = len(pdf)
        if n == 0:
            return _refuse("pdf_corrupt", "it has no readable page (damaged or truncated)")
        if n > max_pages:
            return _refuse(
                "pdf_too_many_pages", f"it has {n} pages, more than the cap of {max_pages}"
            )
        buf = ctypes.create_string_buffer(128)
        flags = ctypes.c_int()
        pages = []
        for i in range(n):
            page = pdf[i]
            try:
                w, h = page.get_size()
                pages.append(
                    {
                        "w": round(w, 1),
                        "h": round(h, 1),
                        "lines": page_lines(page, raw, buf, flags),
                    }
                )
            finally:
                page.close()
        try:
            meta = {k: str(v) for k, v in pdf.get_metadata_dict().items() if v}
        except pdfium.PdfiumError:
            meta = {}
        return {"ok": True, "pages": pages, "meta": meta}
    finally:
        pdf.close()


def _read_exact(stream: BinaryIO, n: int) -> bytes | None:
    out = bytearray()
    while len(out) < n:
        chunk = stream.read(n - len(out))
        if not chunk:
            return None
        out += chunk
    return bytes(out)


def _message(stream: BinaryIO) -> bytes | None:
    head = _read_exact(stream, 4)
    if head is None:
        return None
    return _read_exact(stream, struct.unpack(">I", head)[0])


def serve(inp: BinaryIO, out: BinaryIO) -> None:
    while True:
        header = _message(inp)
        if header is None:
            return
        data = _message(inp)
        if data is None:
            return
        req = json.loads(header)
        try:
            answer = read(data, int(req["max_pages"]), int(req["max_inflated_bytes"]))
        except MemoryError:
            answer = _refuse(
                "pdf_bomb",
                "reading it needed more memory than the reader is allowed "
                "(a decompression bomb, or a file far larger than a paper)",
            )
        except Exception as exc:  # noqa: BLE001 - any failure of the C reader is this file's
            answer = _refuse("pdf_corrupt", f"the PDF reader failed on it ({type(exc).__name__})")
        body = json.dumps(answer, ensure_ascii=False).encode("utf-8")
        out.write(struct.pack(">I", len(body)) + body)
        out.flush()


def main() -> None:
    if len(sys.argv) > 1 and int(sys.argv[1]) > 0:
        import resource

        cap = int(sys.argv[1]) << 20
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    # The protocol owns the real stdout; anything a library prints goes to stderr instead.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    serve(sys.stdin.buffer, out)


if __name__ == "__main__":
    main()
