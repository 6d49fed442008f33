"""The due index: which webpage rows are due, best first, read as key ranges instead of a full scan.

Two families in the `due` table. Waiting entries `KIND|TIME|ROW KEY` hold
rows due later, oldest first (written together, they share rows). Ready
entries `r|KIND|BUCKET|HOST|ORDER|REST OF ROW KEY` hold rows due now, per
host bucket (`--split`), per host (caps), best first (`model.rank`): a
writer puts a row due by the time it writes straight into the ready queue,
and generate moves the waiting entries that came due (`promote`). KIND keeps
apart what the crawl modes read (sitemap documents, listed pages, other
pages). An entry is a claim, checked against its row when read: writers add
the entry of a row's new state, and whoever meets a stale one deletes it.
The layout: docs/tables.md. Pure: no I/O (`sitemapcrawl.storage.dueindex`).
"""

from __future__ import annotations

import enum
from datetime import datetime, timedelta
from typing import NamedTuple

from sitemapcrawl.model.codec import format_time
from sitemapcrawl.model.rank import ORDER_DIGITS, order_of_text, order_text
from sitemapcrawl.model.splits import Split, bucket_label, bucket_of
from sitemapcrawl.modes import CrawlMode

#: Separates the parts of an entry key (`|` is not in a time text and sorts after letters).
SEP = b"|"
#: The row saying the index was built by a full scan (`~` sorts after every kind).
BUILT_KEY = b"~built"
#: Bytes of a time in an entry key (`YYYY-MM-DDTHH:MM:SSZ`).
TIME_BYTES = 20
#: The first part of a ready entry's key (no kind is `r`).
READY = b"r"
#: The layout of the `due` table this version writes (the `~built` marker holds the one a table has).
LAYOUT = 2


class DueKind(enum.StrEnum):
    """What a due row is, as far as the crawl modes care (the first part of an entry key)."""

    SITEMAP = "s"
    """A sitemap document (`s:sm` = 1)."""
    LISTED = "l"
    """A page some sitemap lists (`s:in` = 1), not itself a sitemap."""
    PAGE = "p"
    """Any other row (found by a link, a redirect, a seed)."""


class Entry(NamedTuple):
    """An index entry: the row `row_key` is due at `due` (fixed-width time text) and is of `kind`."""

    kind: DueKind
    due: bytes
    row_key: bytes

    def key(self) -> bytes:
        """The `due` table row key of this entry."""
        return self.kind.value.encode() + SEP + self.due + SEP + self.row_key


def kind_of(is_sitemap: bool | None, in_sitemap: bool | None) -> DueKind:
    """The kind of a row from its flags (a sitemap document first: it is fetched as one)."""
    if is_sitemap:
        return DueKind.SITEMAP
    return DueKind.LISTED if in_sitemap else DueKind.PAGE


def entry_of(row_key: bytes, next_fetch: bytes | None, is_sitemap: bool | None,
             in_sitemap: bool | None) -> Entry | None:
    """The entry a row's state calls for (`next_fetch` as its `f:nft` text), or None without a next fetch."""
    if not next_fetch:
        return None
    return Entry(kind_of(is_sitemap, in_sitemap), next_fetch, row_key)


def parse_entry(key: bytes) -> Entry | None:
    """The entry a `due` row key stands for, or None for a key that is not one (the marker, junk)."""
    kind, sep, rest = key.partition(SEP)
    if not sep or len(rest) < TIME_BYTES + 2 or rest[TIME_BYTES:TIME_BYTES + 1] != SEP:
        return None
    try:
        return Entry(DueKind(kind.decode("ascii")), rest[:TIME_BYTES], rest[TIME_BYTES + 1:])
    except (ValueError, UnicodeDecodeError):
        return None


def kinds_for(mode: CrawlMode, documents_only: bool = False) -> tuple[DueKind, ...]:
    """The kinds a generate in `mode` can select (generate's `mode_allows`, by kind).

    links-only takes no sitemap documents (listed pages yes: they are pages);
    sitemap-only takes sitemap documents and listed pages; mixed takes all.
    `documents_only` (an inventory) takes sitemap documents alone.
    """
    if mode is CrawlMode.LINKS_ONLY:
        kinds: tuple[DueKind, ...] = (DueKind.LISTED, DueKind.PAGE)
    elif mode is CrawlMode.SITEMAP_ONLY:
        kinds = (DueKind.SITEMAP, DueKind.LISTED)
    else:
        kinds = (DueKind.SITEMAP, DueKind.LISTED, DueKind.PAGE)
    if documents_only:
        kinds = tuple(k for k in kinds if k is DueKind.SITEMAP)
    return kinds


def due_range(kind: DueKind, now: datetime) -> tuple[bytes, bytes]:
    """Start (inclusive) and stop (exclusive) keys of the entries of `kind` due at or before `now`.

    Times have whole seconds, so "at or before now" is "before now + 1 s".
    """
    prefix = kind.value.encode() + SEP
    return prefix, prefix + format_time(now + timedelta(seconds=1)).encode() + SEP


class ReadyEntry(NamedTuple):
    """A ready entry: the row `row_key` (of `kind`) is due, with generate order `order` (`model.rank`)."""

    kind: DueKind
    order: int
    row_key: bytes

    def key(self) -> bytes:
        """The `due` table row key of this entry (the row key's host part is the host's queue)."""
        rest = self.row_key[self.row_key.index(b":"):]
        return host_queue(self.kind, self.row_key) + order_text(self.order) + SEP + rest


def host_queue(kind: DueKind, row_key: bytes) -> bytes:
    """The key prefix of the ready queue of `row_key`'s host (its entries follow, best first)."""
    host = row_key.partition(b":")[0]
    return READY + SEP + kind.value.encode() + SEP + bucket_label(bucket_of(row_key)) + SEP + host + SEP


def parse_ready(key: bytes) -> ReadyEntry | None:
    """The ready entry a `due` row key stands for, or None for a key that is not one."""
    parts = key.split(SEP, 4)
    if len(parts) != 5 or parts[0] != READY:
        return None
    _, kind, bucket, host, tail = parts
    order, sep, rest = tail[:ORDER_DIGITS], tail[ORDER_DIGITS:ORDER_DIGITS + 1], tail[ORDER_DIGITS + 1:]
    try:
        entry = ReadyEntry(DueKind(kind.decode("ascii")), order_of_text(order), host + rest)
    except (ValueError, UnicodeDecodeError):
        return None
    if sep != SEP or not rest.startswith(b":") or bucket != bucket_label(bucket_of(entry.row_key)):
        return None
    return entry


def ready_range(kind: DueKind, split: Split) -> tuple[bytes, bytes]:
    """Start (inclusive) and stop (exclusive) keys of the ready entries of `kind` in `split`'s host buckets."""
    buckets = split.buckets()
    prefix = READY + SEP + kind.value.encode() + SEP
    return prefix + bucket_label(buckets.start) + SEP, prefix + bucket_label(buckets.stop) + SEP

