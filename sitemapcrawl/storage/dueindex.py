"""The due index (`sitemapcrawl.model.due`) kept in the `due` table beside `webpage`.

`write_pages` is the one way to put `webpage` cells that hold a next fetch
time, the sitemap flags or a rank field: it adds the row's entry with them
(a ready entry when the row is due by then, else a waiting one). `promote`
moves the waiting entries that came due into the ready queue, each once;
`readyqueue` reads that queue best first. `rebuild_due` and `sweep_due` are
the full-scan repair behind `generate --rescan`. Cost: one extra put per
written row that is (or becomes) due, one delete per row whose entry moved;
reads by key range.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice
from typing import NamedTuple, TypeVar

from sitemapcrawl.clock import utc_now
from sitemapcrawl.errors import CellDecodeError
from sitemapcrawl.model.cells import (
    column_names,
    compare_filter_of,
    decode,
    encode,
    field_encoder,
    map_column,
    was_read,
)
from sitemapcrawl.model.codec import format_time
from sitemapcrawl.model.due import (
    BUILT_KEY,
    LAYOUT,
    DueKind,
    Entry,
    ReadyEntry,
    due_range,
    kind_of,
    parse_entry,
    parse_ready,
)
from sitemapcrawl.model.rank import RANK_FIELDS, order_of, unjittered_rank
from sitemapcrawl.model.webpage import (
    DUE_TABLE,
    WEBPAGE_TABLE,
    DueRow,
    WebPage,
)
from sitemapcrawl.storage.store import Cells, Store, WriteCounts
from sitemapcrawl.storage.tables import Unreadable, pages

log = logging.getLogger(__name__)


#: The fields that decide a row's due entries (when, what kind, what rank), and their columns.
DUE_FIELDS = ["next_fetch", "is_sitemap", "in_sitemap", *RANK_FIELDS]
_DUE_COLUMNS = column_names(WebPage, DUE_FIELDS)
_DUE_SET = frozenset(_DUE_COLUMNS)
_RANK_SET = frozenset(column_names(WebPage, RANK_FIELDS))
#: The columns whose put moves an entry: all but the fetch time. A fetch spends the new-URL boost, but its
#: row is in a batch until updatedb reschedules it and moves its entry; the boosted entry left behind is
#: dropped by the generate that meets it. So fetch writes its rows without reading them again.
_MOVING = _DUE_SET - frozenset(column_names(WebPage, ["fetch_time"]))
_NFT, _SM, _IN = _DUE_COLUMNS[:3]
_ENCODERS = [field_encoder(WebPage, name) for name in DUE_FIELDS]
_ENTRY_CELLS = encode(DueRow("", entry=True))
_ENTRY_COLUMN, _ENTRY_VALUE = next(iter(_ENTRY_CELLS.items()))
_MEMBER_PREFIX = map_column(DueRow, "members")
#: Entries of one kind and time that one write puts in one `due` row, at most: a million rows
#: due at once later are ~16,000 index rows, not a million, and a scan of `hbase_batch_size` index rows
#: stays small.
DUE_GROUP = 64

T = TypeVar("T")


def chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """`items` in lists of `size` (the last one shorter), read lazily."""
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def with_due_fields(fields: list[str]) -> list[str]:
    """`fields` and the DUE_FIELDS not among them: what a reader that checks entries against rows reads."""
    return [*fields, *(name for name in DUE_FIELDS if name not in fields)]


class DueState(NamedTuple):
    """What a row's due entries follow: its next fetch text (None: unscheduled), kind and generate order
    (None when a rank cell does not decode: the row keeps a waiting entry, and `promote` drops it)."""

    next_fetch: bytes | None
    kind: DueKind
    order: int | None

    def waiting(self, row_key: bytes) -> Entry | None:
        """The waiting entry of this state (None when unscheduled)."""
        return Entry(self.kind, self.next_fetch, row_key) if self.next_fetch else None

    def ready(self, row_key: bytes) -> ReadyEntry | None:
        """The ready entry of this state (None when unscheduled or of an unreadable rank)."""
        return ReadyEntry(self.kind, self.order, row_key) if self.next_fetch and self.order is not None else None


def due_state(row_key: bytes, cells: Mapping[bytes, bytes]) -> DueState:
    """The due state of a row from its cells (at least those of DUE_FIELDS that it has).

    An unscheduled row has no entry, so no order is worked out for it (None): every new row's state
    before its first put is one.
    """
    next_fetch = cells.get(_NFT) or None
    kind = kind_of(cells.get(_SM) == b"1", cells.get(_IN) == b"1")
    if next_fetch is None:
        return DueState(None, kind, None)
    unjittered = _unjittered(tuple([(column, value) for column, value in cells.items() if column in _RANK_SET]))
    return DueState(next_fetch, kind, None if unjittered is None else order_of(unjittered, row_key))


@functools.lru_cache(maxsize=8192)
def _unjittered(rank_cells: tuple[tuple[bytes, bytes], ...]) -> float | None:
    """The `unjittered_rank` of a row's rank cells (None: a cell does not decode). Remembered: an
    inventory's million listed rows have a few thousand sets, each decoded and ranked once."""
    try:
        return unjittered_rank(decode(WebPage, "", dict(rank_cells)))
    except CellDecodeError:
        return None


def _due_cells(page: WebPage | None) -> dict[bytes, bytes]:
    """The DUE_FIELDS cells of a row as read (it must have been read with them: else FieldNotReadError)."""
    if page is None:
        return {}
    cells = {}
    for (column, encoded), name in zip(_ENCODERS, DUE_FIELDS, strict=True):
        value = was_read(getattr(page, name))
        if value is not None:
            cells[column] = encoded(value)
    return cells


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
                before: Mapping[bytes, WebPage | None] | None = None, span: int | None = None,
                now: datetime | None = None) -> WriteCounts:
    """Put `webpage` rows and keep their due index entries in step; the counts of the row puts.

    A put holding a DUE_FIELDS cell (but the fetch time alone) that changes the row's entries adds the
    entry of the row's new state (the row as it was, overlaid with the put):
    a ready entry when the row is due by `now` (default: the clock), else a
    waiting one. The row as it was comes from `before` (rows read with at
    least DUE_FIELDS; None for a row that did not exist) or, for keys not in
    it, from one multi-get per span. Streams in spans of `span` rows (default
    `hbase_batch_size`): a span's new entries are written before its rows, so
    a crash leaves at worst a stale entry (generate drops it), never a due
    row the index misses; the old entries are deleted after (a waiting one
    held as a group member stays, stale, until a reader meets it). Cost per
    span: the puts of the rows, one put of the entries, one delete when
    entries moved, and the multi-get for rows not in `before`.
    """
    known = before or {}
    due_by = format_time(now or utc_now()).encode()
    rows = batches = retries = 0
    for chunk in chunks(puts, span or store.batch_size):
        touched = [(key, cells) for key, cells in chunk if not _MOVING.isdisjoint(cells)]
        unknown = [key for key, _ in touched if key not in known]
        read = store.rows(WEBPAGE_TABLE, unknown, columns=_DUE_COLUMNS) if unknown else {}
        waiting: list[Entry] = []
        ready: list[bytes] = []
        gone: list[tuple[bytes, list[bytes] | None]] = []
        for key, cells in touched:
            was = _due_cells(known[key]) if key in known else read.get(key, {})
            old = due_state(key, was)
            new = due_state(key, {**was, **{column: cells[column] for column in _DUE_SET.intersection(cells)}})
            if old == new:
                continue
            new_ready = new.ready(key) if new.next_fetch and new.next_fetch <= due_by else None
            new_waiting = new.waiting(key) if new_ready is None else None
            # The new entry is written even when the old state names the same one: the old row's entry may
            # be in the other family (a waiting row come due keeps a waiting entry until promoted).
            if new_waiting is not None:
                waiting.append(new_waiting)
            if new_ready is not None:
                ready.append(new_ready.key())
            old_waiting, old_ready = old.waiting(key), old.ready(key)
            if old_waiting is not None and old_waiting != new_waiting:
                gone.append((old_waiting.key(), [_ENTRY_COLUMN]))
            if old_ready is not None and old_ready != new_ready:
                gone.append((old_ready.key(), None))
        store.write(DUE_TABLE, [*entry_rows(waiting), *((key, _ENTRY_CELLS) for key in ready)])
        done = store.write(WEBPAGE_TABLE, chunk)
        store.delete_many(DUE_TABLE, gone)
        rows, batches, retries = rows + done.rows, batches + done.batches, retries + done.retries
    return WriteCounts(rows, batches, retries)


@dataclass
class DueRead:
    """What generate's reads of the due index met and did: entries read, moved and dropped."""

    promoted: int = 0
    """Waiting entries that came due, moved into the ready queue."""
    stale: int = 0
    """Entries their rows no longer called for: deleted."""
    demoted: int = 0
    """Ready entries of rows not due yet by this `now` (a writer with a later clock): made waiting again."""
    entries: int = 0
    """Ready entries read."""
    rows: int = 0
    """`webpage` rows read to check them."""


def promote(store: Store, kinds: Iterable[DueKind], now: datetime, read: DueRead) -> None:
    """Move the waiting entries of `kinds` due by `now` into the ready queue (counts in `read`).

    Each scan reads up to `hbase_batch_size` waiting rows from the start of
    the kind (what is left there is not yet promoted, so due entries are one
    key range); one multi-get checks their rows (DUE_FIELDS), one put writes
    the ready entries of the current ones, one delete removes every cell read.
    Every entry is moved once, by whichever generate meets it first (split
    workers share this step: the waiting family is ordered by time, not by
    bucket). Cost: the entries that came due since the last generate.
    """
    for kind in kinds:
        start, stop = due_range(kind, now)
        while True:
            scanned = list(store.scan(DUE_TABLE, start=start, stop=stop, limit=store.batch_size))
            if not scanned:
                break
            start = scanned[-1][0] + b"\x00"
            held = [(entry, column) for key, cells in scanned for entry, column in held_entries(key, cells)]
            found = store.rows(WEBPAGE_TABLE, list(dict.fromkeys(entry.row_key for entry, _ in held)),
                               columns=_DUE_COLUMNS)
            moved: list[bytes] = []
            for entry, _ in held:
                cells = found.get(entry.row_key)
                state = due_state(entry.row_key, cells) if cells is not None else None
                current = state is not None and state.waiting(entry.row_key) == entry
                ready = state.ready(entry.row_key) if state is not None and current else None
                if ready is None:
                    read.stale += 1
                else:
                    moved.append(ready.key())
            store.write(DUE_TABLE, ((key, _ENTRY_CELLS) for key in dict.fromkeys(moved)))
            read.promoted += len(moved)
            store.delete_many(DUE_TABLE, [(key, list(cells)) for key, cells in scanned])


def check_ready(entry: ReadyEntry, cells: Cells | None, now: datetime) -> str:
    """What a ready entry is to generate, given its row's cells (None: gone): "due", "later" or "stale".

    "later": the row's entry, but the row is not due by `now` (a writer with
    a later clock put it there): it goes back to waiting. "stale": the row
    no longer calls for this entry (moved, rescheduled, re-ranked, gone).
    """
    if cells is None:
        return "stale"
    state = due_state(entry.row_key, cells)
    if state.ready(entry.row_key) != entry:
        return "stale"
    return "due" if state.next_fetch is not None and state.next_fetch <= format_time(now).encode() else "later"


def demote(store: Store, entries: Iterable[tuple[ReadyEntry, bytes]]) -> None:
    """Make ready entries waiting again: (entry, the row's next fetch text) each; one put, one delete."""
    moved = list(entries)
    store.write(DUE_TABLE, entry_rows(Entry(entry.kind, next_fetch, entry.row_key) for entry, next_fetch in moved))
    store.delete_many(DUE_TABLE, [(entry.key(), None) for entry, _ in moved])


def rebuild_due(store: Store, now: datetime, fields: list[str], job: str,
                unreadable: Unreadable) -> Iterator[list[tuple[bytes, WebPage]]]:
    """Full scan: write the entry of every row with a next fetch; return the rows due by `now`, in chunks.

    The repair behind `generate --rescan`: each chunk is a fresh scan of up
    to `hbase_batch_size` rows (server-filtered to rows with `f:nft`), whose
    entries are written before the chunk is returned: a ready entry for a
    row due by `now`, else its own waiting entry (writing either again
    changes nothing). Stale entries, and group members that these make
    duplicates, are left to `sweep_due`. Cost: one scan of every scheduled
    row, one put of entries per chunk.
    """
    wanted = with_due_fields(fields)
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
        entries: list[bytes] = []
        for key, cells in scanned:
            state = due_state(key, cells)
            ready = state.ready(key) if state.next_fetch and state.next_fetch <= limit else None
            waiting = state.waiting(key)
            if ready is not None:
                entries.append(ready.key())
            elif waiting is not None:
                entries.append(waiting.key())
        store.write(DUE_TABLE, ((key, _ENTRY_CELLS) for key in entries))
        due = [(key, cells) for key, cells in scanned if (cells.get(_NFT) or b"~") <= limit]
        yield list(pages(due, job, unreadable, wanted))


def sweep_due(store: Store) -> int:
    """Delete every entry its row no longer calls for, and every waiting group member that a row's own
    entry repeats; return how many.

    The second half of `generate --rescan` (after `rebuild_due` gave every
    scheduled row its own entry). A ready entry stays while it is its row's
    (generate makes it waiting again if the row is not due when met); a
    waiting entry stays while its row's time and kind are the entry's.
    Cost: one scan of the `due` table; per `hbase_batch_size` index rows, a
    multi-get of DUE_FIELDS of the rows their entries name and one of the
    own-entry rows their members would repeat.
    """
    deleted = 0
    start = b""
    while True:
        scanned = list(store.scan(DUE_TABLE, start=start, stop=BUILT_KEY, limit=store.batch_size))
        if not scanned:
            return deleted
        start = scanned[-1][0] + b"\x00"
        readies = [(key, parse_ready(key)) for key, _ in scanned]
        by_row = [(key, held_entries(key, cells)) for key, cells in scanned]
        held = [(entry, key, column) for key, entries in by_row for entry, column in entries]
        named = [entry.row_key for entry, _, _ in held] + [entry.row_key for _, entry in readies if entry]
        found = store.rows(WEBPAGE_TABLE, list(dict.fromkeys(named)), columns=_DUE_COLUMNS)
        members = [entry.key() for entry, _, column in held if column != _ENTRY_COLUMN]
        own = store.rows(DUE_TABLE, members, columns=[_ENTRY_COLUMN]) if members else {}

        states = {key: due_state(key, cells) for key, cells in found.items()}
        doomed: list[tuple[bytes, list[bytes] | None]] = []
        for entry, key, column in held:
            state = states.get(entry.row_key)
            if state is None or state.waiting(entry.row_key) != entry or (column != _ENTRY_COLUMN
                                                                          and entry.key() in own):
                doomed.append((key, [column]))
        for key, ready in readies:
            if ready is not None:
                state = states.get(ready.row_key)
                if state is None or state.ready(ready.row_key) != ready:
                    doomed.append((key, None))
        junk = [(key, None) for (key, entries), (_, ready) in zip(by_row, readies, strict=True)
                if not entries and ready is None]
        store.delete_many(DUE_TABLE, [*doomed, *junk])
        deleted += len(doomed) + len(junk)


def due_index_marker(store: Store) -> DueRow | None:
    """The `~built` marker: when a full scan last built the due index and in what layout; None when it
    never did (one round trip). A marker without a layout is of layout 1 (waiting entries only)."""
    cells = store.row(DUE_TABLE, BUILT_KEY)
    if not cells:
        return None
    try:
        marker = decode(DueRow, BUILT_KEY.decode(), cells)
    except CellDecodeError:
        return None
    return marker if marker.built is not None else None


def mark_due_built(store: Store, built: datetime) -> None:
    """Record the due index as built by a full scan at `built`, in this version's layout (one put)."""
    store.write(DUE_TABLE, [(BUILT_KEY, encode(DueRow(BUILT_KEY.decode(), built=built, layout=LAYOUT)))])
