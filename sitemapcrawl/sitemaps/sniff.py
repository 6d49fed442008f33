"""Tell what a document is from its first bytes, never from its name or Content-Type.

Containers first (gzip and zip by their magic bytes), then the format of the
plain bytes: XML (its root element names the kind: urlset, sitemapindex, rss,
Atom feed), plain text with http(s) URL lines, or not a sitemap (HTML, other
XML, binary, text without URLs: `NotASitemapError`), or nothing at all
(`EmptySitemapError`). Only the first `ROOT_SNIFF_BYTES` are looked at.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from enum import Enum

from sitemapcrawl.sitemaps.decompress import GZIP_MAGIC, ZIP_MAGIC
from sitemapcrawl.sitemaps.feeds import ATOM_03_NS, ATOM_10_NS
from sitemapcrawl.sitemaps.limits import ByteSource
from sitemapcrawl.sitemaps.model import EmptySitemapError, NotASitemapError, SitemapKind
from sitemapcrawl.sitemaps.text import looks_like_url_line, text_encoding
from sitemapcrawl.sitemaps.xml import ROOT_SNIFF_BYTES, SITEMAP_084_NS, SITEMAP_NS, find_root

_WHITESPACE = b" \t\r\n"
_XML_ROOTS = {
    "urlset": SitemapKind.URLSET,
    "sitemapindex": SitemapKind.INDEX,
    "rss": SitemapKind.RSS,
    "feed": SitemapKind.ATOM,
}
_EXPECTED_NS = {
    SitemapKind.URLSET: ("", SITEMAP_NS, SITEMAP_084_NS),
    SitemapKind.INDEX: ("", SITEMAP_NS, SITEMAP_084_NS),
    SitemapKind.RSS: ("",),
    SitemapKind.ATOM: ("", ATOM_10_NS, ATOM_03_NS),
}


class Container(Enum):
    """How the bytes are packed."""

    PLAIN = "plain"
    GZIP = "gzip"
    ZIP = "zip"


def sniff_container(head: bytes) -> Container:
    """GZIP or ZIP by magic bytes, else PLAIN."""
    if head.startswith(GZIP_MAGIC):
        return Container.GZIP
    if head.startswith(ZIP_MAGIC):
        return Container.ZIP
    return Container.PLAIN


@dataclass(frozen=True)
class Detected:
    """The format of plain (uncompressed) bytes."""

    kind: SitemapKind
    namespace: str = ""
    """The root element's namespace (XML kinds)."""
    encoding: str = "utf-8-sig"
    """The codec (text kind)."""
    skip: int = 0
    """Leading bytes to drop before parsing (spaces before `<?xml`)."""
    note: str | None = None
    """A problem worth reporting that does not stop reading (odd namespace)."""


class PeekReader:
    """A byte stream whose first bytes can be looked at, then read again."""

    def __init__(self, source: ByteSource) -> None:
        self._source = source
        self._buffer = b""

    def peek(self, size: int) -> bytes:
        """At least `size` bytes from the start (fewer only at the end); nothing consumed."""
        while len(self._buffer) < size:
            data = self._source.read(size - len(self._buffer))
            if not data:
                break
            self._buffer += data
        return self._buffer[:size]

    def skip(self, size: int) -> None:
        """Drop `size` bytes already peeked."""
        self._buffer = self._buffer[size:]

    def read(self, size: int = -1, /) -> bytes:
        if self._buffer:
            if size is None or size < 0:
                data, self._buffer = self._buffer, b""
                return data + self._source.read()
            data, self._buffer = self._buffer[:size], self._buffer[size:]
            return data
        return self._source.read(size)


def _leading_space(head: bytes) -> int:
    """How many bytes to drop so a UTF-8 document starts at its first `<` (BOM too)."""
    start = len(codecs.BOM_UTF8) if head.startswith(codecs.BOM_UTF8) else 0
    return len(head) - len(head[start:].lstrip(_WHITESPACE))


def _is_utf16(head: bytes) -> bool:
    return head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or head[:4] in (
        b"<\x00?\x00",
        b"\x00<\x00?",
    )


def sniff_document(head: bytes, at_end: bool) -> Detected:
    """The kind of plain bytes starting with `head` (`at_end`: head is all there is).

    Raises EmptySitemapError or NotASitemapError with a one-line reason.
    """
    if _is_utf16(head):
        sample = head.decode("utf-16", errors="replace") if head[:2] in (
            codecs.BOM_UTF16_LE,
            codecs.BOM_UTF16_BE,
        ) else head.decode("utf-16-le" if head[0] == 0x3C else "utf-16-be", errors="replace")
        skip = 0
    else:
        skip = _leading_space(head)
        sample = head[skip:].decode("utf-8", errors="replace")
    text = sample.lstrip("\ufeff \t\r\n")
    if not text:
        raise EmptySitemapError("the document is empty")
    if text.startswith("<"):
        return _sniff_xml(head[skip:], text, skip)
    if "\x00" in text:
        raise NotASitemapError("binary data, not a sitemap")
    return _sniff_text(head, text, at_end)


def _sniff_xml(head: bytes, text: str, skip: int) -> Detected:
    root = find_root(head)
    lowered = text[:4096].lower()
    if root is None:
        if "<html" in lowered or "<!doctype html" in lowered:
            raise NotASitemapError("an HTML page, not a sitemap")
        raise NotASitemapError("not a sitemap: no XML root element found")
    namespace, local = root
    if local.lower() == "html":
        raise NotASitemapError("an HTML page, not a sitemap")
    kind = _XML_ROOTS.get(local)
    if kind is None:
        raise NotASitemapError(f"not a sitemap: XML root element <{local}>")
    note = None
    if namespace not in _EXPECTED_NS[kind]:
        note = f"unexpected namespace {namespace!r} on <{local}>, read anyway"
    return Detected(kind, namespace=namespace, skip=skip, note=note)


def _sniff_text(head: bytes, text: str, at_end: bool) -> Detected:
    lines = text.splitlines()
    if not at_end and len(lines) > 1:
        lines.pop()  # maybe cut in the middle
    content = [line.strip() for line in lines]
    content = [line for line in content if line and not line.startswith("#")]
    if any(looks_like_url_line(line) for line in content):
        return Detected(SitemapKind.TEXT, encoding=text_encoding(head))
    if not content and at_end:
        raise EmptySitemapError("the document has only comments or blank lines")
    lowered = text[:4096].lower()
    if "<html" in lowered or "<!doctype html" in lowered:
        raise NotASitemapError("an HTML page, not a sitemap")
    limit = ROOT_SNIFF_BYTES // 1024
    raise NotASitemapError(f"not a sitemap: no http(s) URL line in the first {limit} KiB")
