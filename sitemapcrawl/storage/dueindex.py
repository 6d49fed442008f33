"""The due index (`sitemapcrawl.model.due`) kept in the `due` table beside `webpage`.

`write_pages` is the one way to put `webpage` cells that hold a next fetch
time or the sitemap flags: it adds the row's index entry with them.
`due_pages` reads the rows due by now through the index, so choosing a
batch reads about as many entries as it takes; `rebuild_due` and
`sweep_due` are the full-scan repair behind `generate --rescan`.
Cost: one extra put per written row that is (or becomes) due; reads by key range.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice

from sitemapcrawl.errors import CellDecodeError
from sitemapcrawl.model.cells import column_names, compare_filter_of, decode, encode
from sitemapcrawl.model.codec import format_time
from sitemapcrawl.model.due import BUILT_KEY, DueKind, Entry, due_range, entry_of, parse_entry
from sitemapcrawl.model.splits import WHOLE, Split
from sitemapcrawl.model.webpage import (
    DUE_TABLE,
    WEBPAGE_TABLE,
    DueRow,
    WebPage,
)
from sitemapcrawl.storage.store import Cells, Store, WriteCounts
from sitemapcrawl.storage.tables import Unreadable, pages

log = logging.getLogger(__name__)


#: The fields that decide a row's due entry, and their columns.
DUE_FIELDS = ["next_fetch", "is_sitemap", "in_sitemap"]
_NFT, _SM, _IN = column_names(WebPage, DUE_FIELDS)
_ENTRY_CELLS = encode(DueRow("", entry=True))
_ENTRY_COLUMN, _ENTRY_VALUE = next(iter(_ENTRY_CELLS.items()))
_MEMBER_PREFIX = next(iter(encode(DueRow("", members={"": ""}))))
#: Entries of one kind and time that one write puts in one `due` row, at most: a million new rows
#: due at once are ~16,000 index rows, not a million, and a scan of `hbase_batch_size` index rows
#: stays small.
DUE_GROUP = 64
_State = tuple[bytes | None, bool, bool]


def chunks(items: Iterable[tuple[bytes, Cells]], size: int) -> Iterator[list[tuple[bytes, Cells]]]:
    """`items` in lists of `size` (the last one shorter), read lazily."""
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def _cells_state(cells: Mapping[bytes, bytes]) -> _State:
    return cells.get(_NFT) or None, cells.get(_SM) == b"1", cells.get(_IN) == b"1"


def _page_state(page: WebPage | None) -> _State:
    """The index state of a row as read (it must have been read with DUE_FIELDS: else FieldNotReadError)."""
    if page is None:
        return None, False, False
    nft = format_time(page.next_fetch).encode() if page.next_fetch is not None else None
    return nft, bool(page.is_sitemap), bool(page.in_sitemap)


def entry_rows(entries: Iterable[Entry]) -> Iterator[tuple[bytes, Cells]]:
    """The `due` rows that hold `entries`: those of one kind and time together, up to DUE_GROUP a row.

    A row is keyed by the least of its entries' row keys (`d:e`); the others
    are its members (`d:r.<row key>`). One entry alone is the plain entry
    row an older version wrote. Holds the entries in memory (one write's).
    """
    groups: dict[tuple[DueKind, bytes], set[bytes]] = {}
    for entry in entries:
        groups.setdefault((entry.kind, entry.due), set()).add(entry.row_key)
    for (kind, due), keys in groups.items():
        ordered = sorted(keys)
        for at in range(0, len(ordered), DUE_GROUP):
            anchor, *members = ordered[at:at + DUE_GROUP]
            cells = dict(_ENTRY_CELLS)
            cells.update((_MEMBER_PREFIX + key, _ENTRY_VALUE) for key in members)
            yield Entry(kind, due, anchor).key(), cells


def held_entries(key: bytes, cells: Mapping[bytes, bytes]) -> list[tuple[Entry, bytes]]:
    """The entries a `due` row holds, each with the column holding it; none for the marker or junk
    (a member cell naming no row key is junk too)."""
    anchor = parse_entry(key)
    if anchor is None:
        return []
    held = [(anchor, _ENTRY_COLUMN)] if _ENTRY_COLUMN in cells else []
    held.extend((Entry(anchor.kind, anchor.due, column[len(_MEMBER_PREFIX):]), column)
                for column in cells if column.startswith(_MEMBER_PREFIX) and len(column) > len(_MEMBER_PREFIX))
    return held


def write_pages(store: Store, puts: Iterable[tuple[bytes, Cells]],
                before: Mapping[bytes, WebPage | None] | None = None, span: int | None = None) -> WriteCounts:
    """Put `webpage` rows and keep their due index entries in step; the counts of the row puts.

    A put holding `f:nft`, `s:sm` or `s:in` that changes the row's entry
    adds the entry of the row's new state: the row as it was, overlaid with
    the put. The row as it was comes from `before` (rows read with at least
    DUE_FIELDS; None for a row that did not exist) or, for keys not in it,
    from one multi-get of those three columns per span. Streams in spans of
    `span` rows (default `hbase_batch_size`): a span's new entries are
    written grouped (`entry_rows`: one put for a span of new rows due at
    once) and before its rows (put `hbase_batch_size` a call), so a crash
    leaves at worst a stale entry (generate drops it), never a due row the
    index misses. The old entry is deleted after, where it is a row's own
    (`d:e` of its key); one held as a group member stays behind, stale,
    until a reader meets it (`due_pages`, `sweep_due`). Cost per span: the
    puts of the rows, one put of the entries (a row per kind and time,
    DUE_GROUP entries a row), one delete when entries moved, and the
    multi-get for rows not in `before`; puts not touching those columns cost
    what `Store.write` costs.
    """
    known = before or {}
    rows = batches = retries = 0
    for chunk in chunks(puts, span or store.batch_size):
        touched = [(key, cells) for key, cells in chunk if _NFT in cells or _SM in cells or _IN in cells]
        unknown = [key for key, _ in touched if key not in known]
        read = store.rows(WEBPAGE_TABLE, unknown, columns=[_NFT, _SM, _IN]) if unknown else {}
        new_entries: list[Entry] = []
        old_entries: list[bytes] = []
        for key, cells in touched:
            old = _page_state(known[key]) if key in known else _cells_state(read.get(key, {}))
            new = (cells.get(_NFT) or old[0], cells[_SM] == b"1" if _SM in cells else old[1],
                   cells[_IN] == b"1" if _IN in cells else old[2])
            old_entry, new_entry = entry_of(key, *old), entry_of(key, *new)
            if old_entry == new_entry:
                continue
            if new_entry is not None:
                new_entries.append(new_entry)
            if old_entry is not None:
                old_entries.append(old_entry.key())
        store.write(DUE_TABLE, entry_rows(new_entries))
        done = store.write(WEBPAGE_TABLE, chunk)
        store.delete_many(DUE_TABLE, ((key, [_ENTRY_COLUMN]) for key in old_entries))
        rows, batches, retries = rows + done.rows, batches + done.batches, retries + done.retries
    return WriteCounts(rows, batches, retries)


@dataclass
class DueRead:
    """What a read of the due index met: stale entries, deleted."""

    stale: int = 0


def _current(entry: Entry, cells: Cells | None) -> bool:
    """Does the row (its cells, None when it is gone) still call for this entry?"""
    return cells is not None and entry_of(entry.row_key, *_cells_state(cells)) == entry


def due_pages(store: Store, kinds: Iterable[DueKind], now: datetime, fields: list[str], job: str,
              unreadable: Unreadable, read: DueRead, split: Split = WHOLE) -> Iterator[list[tuple[bytes, WebPage]]]:
    """The rows of `split` due at or before `now` whose kind is in `kinds`, through the index, in chunks.

    Each scan reads up to `hbase_batch_size` index rows (a fresh scan
    resuming after the last, so no scanner idles); their entries are checked
    `hbase_batch_size` at a time with one multi-get of their rows with
    `fields` (plus DUE_FIELDS), one chunk each. An entry whose row no longer
    calls for it (next fetch changed or deleted, kind changed, row gone) is
    stale: its cell deleted in one batched delete per chunk, counted in
    `read.stale`, and its row not returned. A row is returned once a chunk
    even if two entries name it (a rerun after a crash between an entry's
    write and its row's can leave two). Rows that do not decode are counted
    in `unreadable`. Cost: proportional to the due entries of those kinds,
    not to the table.
    """
    wanted = [*fields, *(name for name in DUE_FIELDS if name not in fields)]
    columns = column_names(WebPage, wanted)
    for kind in kinds:
        start, stop = due_range(kind, now)
        while True:
            scanned = list(store.scan(DUE_TABLE, start=start, stop=stop, limit=store.batch_size))
            if not scanned:
                break
            start = scanned[-1][0] + b"\x00"
            held = [(entry, key, column) for key, cells in scanned for entry, column in held_entries(key, cells)
                    if split.whole or split.holds(entry.row_key)]
            for at in range(0, len(held), store.batch_size):
                part = held[at:at + store.batch_size]
                found = store.rows(WEBPAGE_TABLE, list(dict.fromkeys(entry.row_key for entry, _, _ in part)),
                                   columns=columns)
                current: list[bytes] = []
                stale: list[tuple[bytes, list[bytes]]] = []
                for entry, key, column in part:
                    if _current(entry, found.get(entry.row_key)):
                        current.append(entry.row_key)
                    else:
                        stale.append((key, [column]))
                if stale:
                    read.stale += len(stale)
                    store.delete_many(DUE_TABLE, stale)
                yield list(pages(((key, found[key]) for key in dict.fromkeys(current)), job, unreadable, wanted))


def rebuild_due(store: Store, now: datetime, fields: list[str], job: str,
                unreadable: Unreadable) -> Iterator[list[tuple[bytes, WebPage]]]:
    """Full scan: write the index entry of every row with a next fetch; return the rows due by `now`, in chunks.

    The repair behind `generate --rescan`: each chunk is a fresh scan of up
    to `hbase_batch_size` rows (server-filtered to rows with `f:nft`), whose
    entries are written before the chunk is returned, each as its row's own
    (`d:e` of its key: writing it again changes nothing). Stale entries, and
    group members that these make duplicates, are left to `sweep_due`. Cost:
    one scan of every scheduled row, one put of entries per chunk.
    """
    wanted = [*fields, *(name for name in DUE_FIELDS if name not in fields)]
    columns = column_names(WebPage, wanted)
    scheduled = compare_filter_of(WebPage, "next_fetch", ">=", datetime(1, 1, 1, tzinfo=UTC))
    limit = format_time(now).encode()
    start: bytes | None = None
    while True:
        scanned = list(store.scan(WEBPAGE_TABLE, start=start, columns=columns, filter=scheduled,
                                  limit=store.batch_size))
        if not scanned:
            return
        start = scanned[-1][0] + b"\x00"
        entries = [entry_of(key, *_cells_state(cells)) for key, cells in scanned]
        store.write(DUE_TABLE, ((entry.key(), _ENTRY_CELLS) for entry in entries if entry is not None))
        due = [(key, cells) for key, cells in scanned if (cells.get(_NFT) or b"~") <= limit]
        yield list(pages(due, job, unreadable, wanted))


def sweep_due(store: Store) -> int:
    """Delete every index entry its row no longer calls for, and every group member that a row's own
    entry repeats; return how many.

    The second half of `generate --rescan` (after `rebuild_due` gave every
    scheduled row its own entry). Cost: one scan of the `due` table; per
    `hbase_batch_size` index rows, a multi-get of three columns of the rows
    their entries name and one of the own-entry rows their members would
    repeat.
    """
    deleted = 0
    start = b""
    while True:
        scanned = list(store.scan(DUE_TABLE, start=start, stop=BUILT_KEY, limit=store.batch_size))
        if not scanned:
            return deleted
        start = scanned[-1][0] + b"\x00"
        by_row = [(key, held_entries(key, cells)) for key, cells in scanned]
        held = [(entry, key, column) for key, entries in by_row for entry, column in entries]
        found = store.rows(WEBPAGE_TABLE, list(dict.fromkeys(entry.row_key for entry, _, _ in held)),
                           columns=[_NFT, _SM, _IN])
        members = [entry.key() for entry, _, column in held if column != _ENTRY_COLUMN]
        own = store.rows(DUE_TABLE, members, columns=[_ENTRY_COLUMN]) if members else {}
        doomed = [(key, [column]) for entry, key, column in held
                  if not _current(entry, found.get(entry.row_key))
                  or (column != _ENTRY_COLUMN and entry.key() in own)]
        junk = [(key, None) for key, entries in by_row if not entries]
        store.delete_many(DUE_TABLE, [*doomed, *junk])
        deleted += len(doomed) + len(junk)


def due_index_built(store: Store) -> datetime | None:
    """When a full scan last built the due index, or None when it never did (one round trip)."""
    cells = store.row(DUE_TABLE, BUILT_KEY)
    if not cells:
        return None
    try:
        return decode(DueRow, BUILT_KEY.decode(), cells).built
    except CellDecodeError:
        return None


def mark_due_built(store: Store, now: datetime) -> None:
    """Record that a full scan built the due index at `now` (one put)."""
    store.write(DUE_TABLE, [(BUILT_KEY, encode(DueRow(BUILT_KEY.decode(), built=now)))])
