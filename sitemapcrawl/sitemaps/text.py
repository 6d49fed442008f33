"""Plain-text sitemaps: one URL per line, streamed.

Blank lines, surrounding spaces, CRLF and `#` comments are skipped; a line
that is not an http(s) URL counts as invalid. The text is decoded as UTF-8
(UTF-16 when it starts with a UTF-16 BOM), with undecodable bytes replaced,
chunk by chunk, so memory is one chunk plus the longest line.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator

from sitemapcrawl.sitemaps.limits import ByteSource
from sitemapcrawl.sitemaps.model import PageEntry
from sitemapcrawl.sitemaps.normalize import normalize_loc

_CHUNK = 64 * 1024


def text_encoding(head: bytes) -> str:
    """The codec for a text sitemap starting with `head` (by BOM; UTF-8 otherwise)."""
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return "utf-8-sig"


def looks_like_url_line(line: str) -> bool:
    """True for a line a text sitemap would list (an http(s) URL, comments aside)."""
    return normalize_loc(line) is not None


def text_entries(source: ByteSource, encoding: str) -> Iterator[PageEntry | None]:
    """Yield a page per URL line, None per other non-blank, non-comment line."""
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    rest = ""
    while True:
        chunk = source.read(_CHUNK)
        text = rest + decoder.decode(chunk, final=not chunk)
        lines = text.splitlines()
        rest = lines.pop() if chunk and lines and not text.endswith(("\n", "\r")) else ""
        for line in lines:
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            loc = normalize_loc(stripped)
            yield None if loc is None else PageEntry(loc)
        if not chunk:
            return
