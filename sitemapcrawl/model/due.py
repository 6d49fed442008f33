"""The due index: which webpage rows are due by a time, read as key ranges instead of a full scan.

The `due` table holds an entry for every row with a next fetch time, keyed
`KIND|TIME|ROW KEY`, so the entries of a kind due by `now` are one key range,
oldest first. KIND keeps apart what the crawl modes read (sitemap documents,
listed pages, other pages): `--mode sitemap-only` never reads the due pages
found by links, and an inventory never reads the million listed pages it
leaves due forever. Entries written together share a row, so a million new
rows cost thousands of puts, not a million. An entry is a claim, checked
against the row when read (`entry_of`): writers add the entry of a row's new
state, and whoever meets a stale one deletes it. The layout: docs/tables.md.
Pure: no I/O (the reads and writes are in `sitemapcrawl.storage.dueindex`).
"""

from __future__ import annotations

import enum
from datetime import datetime, timedelta
from typing import NamedTuple

from sitemapcrawl.model.codec import format_time
from sitemapcrawl.modes import CrawlMode

#: Separates the parts of an entry key (`|` is not in a time text and sorts after letters).
SEP = b"|"
#: The row saying the index was built by a full scan (`~` sorts after every kind).
BUILT_KEY = b"~built"
#: Bytes of a time in an entry key (`YYYY-MM-DDTHH:MM:SSZ`).
TIME_BYTES = 20


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
