"""Reading a response body without trusting it: streamed under a byte cap, decompressed by us in
bounded steps (so a gzip bomb is stopped at the cap, not after it has filled memory), sniffed for
binary content whatever its Content-Type says, and decoded with the charset it declares, the one
its bytes support, or a detected one, in that order."""

from __future__ import annotations

import codecs
import re
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from charset_normalizer import from_bytes

from mole_dag.core import DeadEndCause

# Decompressed output per step: the most a single compressed chunk can make us hold at once.
_STEP = 64 * 1024
# File signatures of formats that are never prose, however they are labelled.
_MAGIC = (
    (b"%PDF-", "PDF"),
    (b"\x89PNG", "PNG image"),
    (b"GIF8", "GIF image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"PK\x03\x04", "ZIP archive"),
    (b"\x1f\x8b", "gzip data"),
    (b"\x7fELF", "executable"),
    (b"RIFF", "RIFF media"),
    (b"OggS", "Ogg media"),
    (b"\x00\x00\x01\x00", "icon"),
    (b"wOFF", "font"),
    (b"BZh", "bzip2 data"),
    (b"\xfd7zXZ", "xz data"),
    (b"7z\xbc\xaf", "7z archive"),
)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.I)


class BodyRefused(Exception):
    def __init__(self, cause: DeadEndCause, detail: str) -> None:
        super().__init__(detail)
        self.cause, self.detail = cause, detail


class _Decoder:
    """Content-Encoding undone in bounded steps."""

    def __init__(self, encoding: str) -> None:
        enc = encoding.strip().lower()
        self.encoding = enc
        if enc in ("", "identity"):
            self._z = None
        elif enc in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate":
            self._z = zlib.decompressobj(zlib.MAX_WBITS)  # zlib-wrapped; raw tried on error
            self._raw_fallback = True
        else:
            raise BodyRefused(DeadEndCause.UNREADABLE, f"unsupported content-encoding {enc!r}")
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._z is None:
            yield data
            return
        buf = data
        while buf:
            try:
                out = self._z.decompress(buf, _STEP)
            except zlib.error as exc:
                if self.encoding == "deflate" and not self._started:
                    self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                    self._started = True
                    out = self._z.decompress(buf, _STEP)
                else:
                    raise BodyRefused(
                        DeadEndCause.UNREADABLE, f"corrupt {self.encoding} stream: {exc}"
                    ) from None
            self._started = True
            if out:
                yield out
            buf = self._z.unconsumed_tail
            if self._z.eof:
                return


@dataclass(frozen=True)
class Body:
    data: bytes
    raw_bytes: int


def read_capped(
    chunks: Iterator[bytes], *, content_encoding: str, max_bytes: int, deadline: float
) -> Body:
    """Read raw (still encoded) chunks, decode them, and stop at `max_bytes` of either."""
    dec = _Decoder(content_encoding)
    out = bytearray()
    raw = 0
    for chunk in chunks:
        raw += len(chunk)
        if raw > max_bytes:
            raise BodyRefused(DeadEndCause.TOO_LARGE, f"body exceeds {max_bytes} bytes on the wire")
        for piece in dec.feed(chunk):
            out += piece
            if len(out) > max_bytes:
                raise BodyRefused(
                    DeadEndCause.TOO_LARGE,
                    f"body exceeds {max_bytes} bytes once decoded "
                    f"({raw} bytes read{', ' + dec.encoding if dec.encoding else ''})",
                )
        if time.monotonic() > deadline:
            raise BodyRefused(DeadEndCause.TIMEOUT, "the body did not arrive within the deadline")
    return Body(bytes(out), raw)


def sniff_binary(data: bytes) -> str | None:
    """What binary format the bytes are, when they are not text; None when they may be text."""
    head = data[:8192]
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    if b"\x00" in head and not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "binary data (NUL bytes)"
    if head:
        # C0 controls other than whitespace are rare in any text encoding and common in binary.
        ctl = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13, 27))
        if ctl / len(head) > 0.05:
            return "binary data (control bytes)"
    return None


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name.strip().strip("\"'")).name
    except LookupError:
        return None


def decode_text(data: bytes, *, declared: str | None, html: bool) -> tuple[str, str]:
    """Return (text, charset used). Raises BodyRefused(unreadable) when nothing fits."""
    for bom, enc in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            return data.decode(enc, errors="replace"), enc
    candidates: list[str] = []
    for name in (declared,):
        c = _codec(name)
        if c:
            candidates.append(c)
    if html:
        m = _META_CHARSET.search(data[:4096])
        c = _codec(m.group(1).decode("ascii", "replace")) if m else None
        if c and c not in candidates:
            candidates.append(c)
    if "utf-8" not in candidates:
        candidates.append("utf-8")
    for enc in candidates:
        try:
            return data.decode(enc), enc
        except (UnicodeDecodeError, LookupError):
            continue
    best = from_bytes(data).best()
    if best is not None and best.encoding:
        return str(best), best.encoding
    raise BodyRefused(DeadEndCause.UNREADABLE, "not text in any encoding that can be detected")
