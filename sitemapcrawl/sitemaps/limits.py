"""Named limits of the engine, the reader that enforces the byte limit, the entry tally.

`SitemapLimits` carries the numbers (defaults are the sitemaps.org limits:
50,000 URLs and 50 MB since 2016; a document over the old 10 MB is reported,
not cut); `CappedReader` wraps any byte stream and stops handing out bytes at
`max_bytes`, remembering that it did, so every format reader obeys the same
cap without counting bytes itself. `EntryTally` counts what became of a
document's entries (the URL limit is enforced against its `kept`).
"""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import dataclass
from typing import Protocol

from sitemapcrawl.config import Settings
from sitemapcrawl.errors import UsageError


class ByteSource(Protocol):
    """Anything with `read(n) -> bytes` (files, BytesIO, the decompressors)."""

    def read(self, size: int = -1, /) -> bytes: ...


class EntryTally:
    """What became of one document's entries so far (mutable, shared by its parts).

    `kept`: handed out (the URL limit applies to it); `dropped_scope`: outside
    the sitemap's scope, `dropped_host` of them on a host that neither holds
    nor vouches for the sitemap (the rest are outside its folder);
    `over_limit`: valid and in scope but after the URL limit; `invalid`: no
    usable http(s) URL; `bad_lastmod`: entries kept whose `lastmod` is no
    date of years 0001..9999 (ignored, counted); `lenient`: entries read although they break the
    rules, by what was forgiven (a warning for the site owner). The loops that count
    (`document._admit`, `xml.UrlsetEntries`) keep the numbers in locals and
    store them here when they stop, so the values are current between parts,
    not while one is being read. A plain slotted class: it is created per
    document and is internal, so it needs none of a dataclass's methods.
    """

    __slots__ = ("bad_lastmod", "dropped_host", "dropped_scope", "invalid", "kept", "lenient", "over_limit")

    def __init__(self) -> None:
        self.kept = 0
        self.dropped_scope = 0
        self.dropped_host = 0
        self.over_limit = 0
        self.invalid = 0
        self.bad_lastmod = 0
        self.lenient: Counter[str] = Counter()


#: The sitemaps.org byte limit until 2016 (10 MB): a document over it is read, and reported
#: (`ProblemKind.OVER_10MB`), since older readers still stop there.
OLD_BYTE_LIMIT = 10_485_760
#: The byte limit of the protocol since 2016, Google's and crawler-commons': 50 MB uncompressed.
PROTOCOL_BYTE_LIMIT = Settings.max_sitemap_bytes


@dataclass(frozen=True)
class SitemapLimits:
    """How much of a document is read and how deep indexes are followed."""

    max_urls: int = 50_000
    """Entries kept per document, first ones in document order."""
    max_bytes: int = PROTOCOL_BYTE_LIMIT
    """Uncompressed bytes read per document (50 MiB, the protocol's limit); also caps every decompression."""
    max_depth: int = 5
    """Index levels followed below a root sitemap (tree walking only)."""

    def __post_init__(self) -> None:
        for name in ("max_urls", "max_bytes", "max_depth"):
            if getattr(self, name) < 0:
                raise UsageError(f"sitemap limit {name} must be >= 0, not {getattr(self, name)}")

    @classmethod
    def from_settings(
        cls, settings: Settings, *, max_urls: int | None = None, max_bytes: int | None = None
    ) -> SitemapLimits:
        """Limits from `Settings`, with optional overrides (None keeps the setting)."""
        return cls(
            max_urls=settings.max_sitemap_urls if max_urls is None else max_urls,
            max_bytes=settings.max_sitemap_bytes if max_bytes is None else max_bytes,
            max_depth=settings.max_index_depth,
        )


class CappedReader(io.RawIOBase):
    """A read-only stream that ends after `limit` bytes of `source`.

    `limit_hit` turns True when the source had more to give at the cap (one
    extra byte is peeked to tell a document of exactly `limit` bytes from a
    longer one). `bytes_read` counts what was handed out. Cost: no copy beyond
    the chunks asked for.
    """

    def __init__(self, source: ByteSource, limit: int) -> None:
        super().__init__()
        self._source = source
        self._left = limit
        self.bytes_read = 0
        self.limit_hit = False

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1, /) -> bytes:
        if self._left <= 0:
            if not self.limit_hit and self._source.read(1):
                self.limit_hit = True
            return b""
        want = self._left if size is None or size < 0 else min(size, self._left)
        data = self._source.read(want)
        self._left -= len(data)
        self.bytes_read += len(data)
        if self._left <= 0 and self._source.read(1):
            self.limit_hit = True
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)
