"""Splits: how N processes share one phase of a batch without doing any row twice.

Every `webpage` row key falls in one of `BUCKETS` host buckets: crc32 of the
key's host part (before the first `:`) mod `BUCKETS`. Split K of N owns the
contiguous bucket range `[K*BUCKETS//N, (K+1)*BUCKETS//N)`, so the splits of
one N cover every row once; all rows of a host are in one split (exact
per-host caps, a host's pages and sitemaps together; a crawl of one host
cannot be split, as politeness allows for its fetch); with many hosts the
hash keeps the work even. Batch records (`storage.batchrecords`) put the
bucket right after the record kind, so a split reads its share as one key
range. Why buckets and not regions: docs/commands.md, Splits and workers.
Pure: no I/O.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from sitemapcrawl.errors import UsageError

#: Host buckets. A split is a range of them, so at most this many splits (`config.MAX_SPLITS`, the
#: settings' bound, is this number: a test holds them equal). Batch records keep their bucket in the
#: row key, so changing it would strand the records of every stored batch.
BUCKETS = 256


def bucket_of(row_key: bytes) -> int:
    """The host bucket of a `webpage` row key: crc32 of its host part mod BUCKETS."""
    host, _, _ = row_key.partition(b":")
    return zlib.crc32(host) % BUCKETS


def bucket_label(bucket: int) -> bytes:
    """A bucket as fixed-width text for record keys (`007`), so buckets sort in number order."""
    return b"%03d" % bucket


def parse_share(text: str, option: str, most: int) -> tuple[int, int]:
    """`K/N` -> (K, N) with 0 <= K < N <= `most`; UsageError naming `option` otherwise.

    The one reader of `--split K/N` and `--partition K/N`: digits are counted
    before they are converted, so no typed number, however long, costs more
    than reading its text.
    """
    k, slash, n = text.partition("/")
    k, n = k.strip(), n.strip()
    if not slash or not k.isdigit() or not n.isdigit() or not k.isascii() or not n.isascii():
        raise UsageError(f"{option} {_shown(text)}: expected K/N, e.g. 0/4")
    width = len(str(most))
    index, count = (int(k), int(n)) if len(k) <= width and len(n) <= width else (most, most + 1)
    if not 1 <= count <= most or index >= count:
        raise UsageError(f"{option} {_shown(text)}: need 0 <= K < N <= {most}")
    return index, count


def _shown(text: str) -> str:
    """`text` as an error line shows it: repr, at most 40 characters."""
    shown = repr(text)
    return shown if len(shown) <= 40 else shown[:37] + "..."


@dataclass(frozen=True)
class Split:
    """Split `index` of `count` (0 <= index < count <= BUCKETS)."""

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.count <= BUCKETS or not 0 <= self.index < self.count:
            raise UsageError(f"split {self.index}/{self.count}: need 0 <= K < N <= {BUCKETS}")

    @classmethod
    def parse(cls, text: str, option: str = "--split") -> Split:
        """`K/N` -> Split(K, N); UsageError naming `option` otherwise."""
        return cls(*parse_share(text, option, BUCKETS))

    @property
    def whole(self) -> bool:
        """Is this the only split (the whole phase)?"""
        return self.count == 1

    def buckets(self) -> range:
        """The host buckets this split owns: a contiguous range."""
        return range(self.index * BUCKETS // self.count, (self.index + 1) * BUCKETS // self.count)

    def holds(self, row_key: bytes) -> bool:
        """Is this row key's bucket in this split?"""
        return bucket_of(row_key) in self.buckets()

    def text(self) -> str:
        """`K/N`, as the option takes it and as lease names use it."""
        return f"{self.index}/{self.count}"


WHOLE = Split()
"""The one split of an unsplit phase."""
