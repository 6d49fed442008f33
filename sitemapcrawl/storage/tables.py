"""The typed access layer over the tables: what jobs read, decoded one way.

Every job reads `webpage` rows (and `host` origin rows, `history` rows)
through these functions, so there is one decode policy: a row whose key is
not a URL key, or whose cells do not decode, is logged once (with the job's
name) and counted in `Unreadable`, never raised and never read as an empty
row; each job says the count in its summary line. Rows are decoded with the
fields the caller asked for, so reading a field not asked for raises
FieldNotReadError instead of reading as None.

Scans: `pages` (any scan), `scan_pages` (a prefix and a server filter),
`batch_rows` (a batch, in chunks); gets: `read_page`, `read_pages`; the
other tables: `hosts`, `history_rows`. The batch marks themselves are
`sitemapcrawl.model.marks`; a new row is `sitemapcrawl.model.newrows`.

Batch-scoped queries live here too, so that no job imports another job to
read a batch. A batch's rows are *recorded* in the `batchrow` table, so that
reading a batch costs what the batch holds, not what the table holds:

- members: `<batch>|m|<bucket>|<webpage key>`, cell `r:pa` = the fetch
  partition, written by generate for each row it selects (and by fetch for
  a redirect hop that joins the batch);
- touched: `<batch>|t|<bucket>|<webpage key>`, cell `r:t` = 1, written by
  parse (URLs a re-parsed sitemap dropped) and updatedb's spread (link and
  redirect targets) for each row they give an `il:` cell and `k:dsc` =
  batch to;
- listed: `<batch>|l|<bucket>|<sitemap key>|<part>`, a cell `r:k.<webpage
  key>` per entry, written by parse for each chunk of a sitemap's entries
  (`write_listed`): a 50,000-entry sitemap is a few dozen records to write,
  read and delete, not 50,000. A row recorded twice (an entry of two
  sitemaps, or also a link target) is read from one record only, the one
  `listing_owner` names.

The bucket is the row's host bucket (`splits.bucket_label(bucket_of(key))`),
so the members (or touched rows) of a split are one key range. A record is
written before the cells it stands for, so a phase killed half-way leaves at
worst a record whose row does not carry the mark yet: readers test the mark
on the row (as the filtered scan did) and skip it. updatedb deletes a
batch's records when it finishes the batch (`drop_records`), as does
releasing it. A batch from before the records (the registry's `b:rec` not
set) is read by a server-filtered scan of `webpage`, as it always was.

Cost: what the store's scan costs; a dict lookup and a codec per cell to
decode.

The due index (`sitemapcrawl.model.due`) is kept here as well: `write_pages` is
the one way to put `webpage` cells that hold a next fetch time or the
sitemap flags, and adds the row's index entry with them; `due_pages` reads
the rows due by now through the index; `rebuild_due` and `sweep_due` are
the full-scan repair behind `generate --rescan`.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice

from sitemapcrawl.errors import CellDecodeError, InvalidUrlError
from sitemapcrawl.model.cells import column_names, columns_of, compare_filter_of, decode, encode, equals_filter
from sitemapcrawl.model.codec import format_time
from sitemapcrawl.model.due import BUILT_KEY, DueKind, Entry, due_range, entry_of, parse_entry
from sitemapcrawl.model.linkvalues import InlinkKind, parse_inlink
from sitemapcrawl.model.splits import WHOLE, Split, bucket_label, bucket_of
from sitemapcrawl.model.webpage import (
    BATCH_TABLE,
    BATCHROW_TABLE,
    DUE_TABLE,
    WEBPAGE_TABLE,
    BatchRecord,
    BatchRow,
    DueRow,
    HistoryRow,
    HostRow,
    RowT,
    WebPage,
)
from sitemapcrawl.storage.overlap import WriteBehind
from sitemapcrawl.storage.store import Cells, Store, WriteCounts
from sitemapcrawl.web import urls

log = logging.getLogger(__name__)


@dataclass
class Unreadable:
    """Rows a job could not decode and left out: how many, and the first few keys for the log."""

    rows: int = 0

    def add(self, job: str, key: bytes, exc: Exception) -> None:
        """Count one unreadable row and log why (one warning line per row)."""
        self.rows += 1
        log.warning("%s: skipping unreadable row %r: %s", job, key[:200], exc)


def decode_page(key: bytes, cells: Cells, fields: Iterable[str] | None = None) -> WebPage:
    """One `webpage` row from its key and cells; raises InvalidUrlError or CellDecodeError."""
    try:
        url = urls.url_from_row_key(key.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidUrlError(f"row key is not UTF-8: {exc}") from None
    return decode(WebPage, url, cells, fields)


def _decoded(scan: Iterable[tuple[bytes, Cells]], decoder: Callable[[bytes, Cells, list[str] | None], RowT],
             job: str, unreadable: Unreadable, fields: Iterable[str] | None) -> Iterator[tuple[bytes, RowT]]:
    """The one decode policy: each row through `decoder`; unreadable ones counted in `unreadable`, left out."""
    wanted = list(fields) if fields is not None else None
    for key, cells in scan:
        try:
            yield key, decoder(key, cells, wanted)
        except (InvalidUrlError, CellDecodeError) as exc:
            unreadable.add(job, key, exc)


def pages(scan: Iterable[tuple[bytes, Cells]], job: str, unreadable: Unreadable,
          fields: Iterable[str] | None = None) -> Iterator[tuple[bytes, WebPage]]:
    """Decode a scan of `webpage` rows; unreadable rows are counted in `unreadable` and left out."""
    return _decoded(scan, decode_page, job, unreadable, fields)


def scan_pages(store: Store, job: str, unreadable: Unreadable, fields: list[str], *, prefix: bytes | None = None,
               row_filter: str | None = None) -> Iterator[tuple[bytes, WebPage]]:
    """`pages` over a scan of `webpage` (a key prefix and a server filter optional) reading only `fields`.

    Cost: one scan of the rows the prefix and filter leave, their `fields` columns only.
    """
    scan = store.scan(WEBPAGE_TABLE, prefix=prefix, columns=column_names(WebPage, fields), filter=row_filter)
    return pages(scan, job, unreadable, fields)


def read_page(store: Store, key: bytes, fields: list[str], job: str, unreadable: Unreadable) -> WebPage | None:
    """One `webpage` row by its key, `fields` only (one get); None when it holds none of them or is unreadable.

    An unreadable row is counted in `unreadable` and logged, as `pages` does.
    """
    cells = store.row(WEBPAGE_TABLE, key, column_names(WebPage, fields))
    if not cells:
        return None
    try:
        return decode_page(key, cells, fields)
    except (InvalidUrlError, CellDecodeError) as exc:
        unreadable.add(job, key, exc)
        return None


def read_pages(store: Store, keys: list[bytes], fields: list[str], job: str,
               unreadable: Unreadable) -> dict[bytes, WebPage]:
    """The `webpage` rows of `keys` that exist, `fields` only (one multi-get); unreadable ones counted and left out."""
    found = store.rows(WEBPAGE_TABLE, keys, column_names(WebPage, fields))
    return dict(pages(((key, cells) for key, cells in found.items() if cells), job, unreadable, fields))


def decode_host(key: bytes, cells: Cells, fields: Iterable[str] | None = None) -> HostRow:
    """One origin row of the `host` table (key `com.example.www:http:8080`); raises InvalidUrlError or CellDecodeError.

    Politeness rows (keys from `~`, `jobs.politeness`) are not origin rows:
    scan the table up to them.
    """
    try:
        text = key.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidUrlError(f"row key is not UTF-8: {exc}") from None
    return decode(HostRow, urls.url_from_row_key(text + "/")[:-1], cells, fields)


def hosts(scan: Iterable[tuple[bytes, Cells]], job: str, unreadable: Unreadable,
          fields: Iterable[str] | None = None) -> Iterator[tuple[bytes, HostRow]]:
    """Decode a scan of `host` origin rows; unreadable rows are counted in `unreadable` and left out."""
    return _decoded(scan, decode_host, job, unreadable, fields)


def decode_history(key: bytes, cells: Cells, fields: Iterable[str] | None = None) -> HistoryRow:
    """One `history` row (a parse of a sitemap, or its snapshot); raises InvalidUrlError or CellDecodeError."""
    try:
        text = key.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidUrlError(f"row key is not UTF-8: {exc}") from None
    return decode(HistoryRow, text, cells, fields)


def history_rows(scan: Iterable[tuple[bytes, Cells]], job: str, unreadable: Unreadable,
                 fields: Iterable[str] | None = None) -> Iterator[tuple[bytes, HistoryRow]]:
    """Decode a scan of `history` rows; unreadable rows are counted in `unreadable` and left out."""
    return _decoded(scan, decode_history, job, unreadable, fields)


# ------------------------------------------------------------ batch records --

#: Record kinds: a row of the batch (generate, fetch's redirect hops), a row it gave inlinks to merge,
#: the entry rows of one sitemap parse (many per record).
MEMBER, TOUCHED, LISTED = b"m", b"t", b"l"
#: Which records hold the rows a batch mark is tested on: members carry the generate and fetch marks,
#: touched and listed rows the discover mark.
_KIND_OF_MARK = {"generate_mark": MEMBER, "fetch_mark": MEMBER, "discover_mark": TOUCHED}
_SEP = b"|"
_TOUCHED_CELLS = encode(BatchRecord("", touched=True))
_LISTED_PREFIX = encode(BatchRecord("", listed={"": ""})).popitem()[0]
#: The inlink kinds a sitemap parse writes: what makes a row an entry of a sitemap in `listing_owner`.
_ENTRY_KINDS = (InlinkKind.SITEMAP, InlinkKind.INDEX)
#: Keys only: what `drop_records` and `listed_sitemaps` read of a record (a listed one holds many cells).
_KEYS_ONLY = "KeyOnlyFilter() AND FirstKeyOnlyFilter()"


def record_key(batch_id: str, kind: bytes, key: bytes) -> bytes:
    """The `batchrow` key recording `webpage` row `key` in a batch: `<batch>|<kind>|<bucket>|<key>`."""
    return _SEP.join((batch_id.encode("utf-8"), kind, bucket_label(bucket_of(key)), key))


def page_key(record: bytes) -> bytes:
    """The `webpage` row key a `batchrow` key records (everything after its third `|`)."""
    return record.split(_SEP, 3)[3]


def listed_record_key(batch_id: str, bucket: int, part: int, sitemap_key: bytes) -> bytes:
    """The `batchrow` key of one part of a sitemap parse's entries in one bucket:
    `<batch>|l|<bucket>|<sitemap row key>|<part, 8 hex digits>` (a sitemap's parts follow each other)."""
    return _SEP.join((batch_id.encode("utf-8"), LISTED, bucket_label(bucket), sitemap_key, b"%08x" % part))


def listed_sitemap(record: bytes) -> bytes:
    """The sitemap row key a listed record names (between its third `|` and the part)."""
    return record.split(_SEP, 3)[3][:-9]


@functools.lru_cache(maxsize=4096)
def key_of_url(url: str) -> bytes | None:
    """The `webpage` row key of a canonical URL, or None when it has none (the last few thousand
    remembered: readers ask for the same sitemaps' keys row after row)."""
    try:
        return urls.row_key(url).encode("utf-8")
    except InvalidUrlError:
        return None


def listing_owner(row: WebPage, batch_id: str, listed: Set[bytes]) -> bytes | None:
    """Which record stands for a row the batch touched: the least sitemap (row key) in `listed` whose parse
    in this batch gave the row an entry inlink, or None: its own touched record.

    A row can be recorded more than once (an entry of two sitemaps, also a
    link target); every reader applies this one rule, so each touched row
    is read once. `listed`: the sitemaps with listed records in the row's
    split (a sitemap listing the row has one in the row's bucket). `row`
    must hold `inlinks`. No I/O.
    """
    owner: bytes | None = None
    for source, text in (row.inlinks or {}).items():
        link = parse_inlink(text)
        if link is None or link.kind not in _ENTRY_KINDS or link.batch != batch_id:
            continue
        key = key_of_url(source)
        if key is not None and key in listed and (owner is None or key < owner):
            owner = key
    return owner


def record_range(batch_id: str, kind: bytes, split: Split = WHOLE) -> tuple[bytes, bytes]:
    """The (start, stop) keys of a batch's records of one kind in `split`'s buckets: one key range."""
    head = _SEP.join((batch_id.encode("utf-8"), kind, b""))
    buckets = split.buckets()
    return head + bucket_label(buckets.start), head + bucket_label(buckets.stop)


def has_records(store: Store, batch_id: str) -> bool:
    """Did generate record this batch's members (`b:rec` on its registry row)? One get."""
    cells = store.row(BATCH_TABLE, batch_id.encode("utf-8"), column_names(BatchRow, ["records"]))
    try:
        return bool(cells) and decode(BatchRow, batch_id, cells or {}).records is True
    except CellDecodeError as exc:
        log.warning("batch %s: unreadable records flag (%s); reading the batch by a table scan", batch_id, exc)
        return False


def record_members(store: Store, batch_id: str, members: Iterable[tuple[bytes, int | None]]) -> int:
    """Record rows as members of a batch: (webpage key, fetch partition; None: 0) pairs; returns records written.

    Call it before the rows get their batch marks. Cost: one batched put.
    """
    return store.write(BATCHROW_TABLE, (
        (record_key(batch_id, MEMBER, key), encode(BatchRecord("", partition=part if part is not None else 0)))
        for key, part in members)).rows


def record_touched(store: Store, batch_id: str, keys: Iterable[bytes]) -> int:
    """Record rows the batch gives inlinks to merge (before their `k:dsc` is written); returns records written.

    Cost: one batched put.
    """
    return store.write(BATCHROW_TABLE, ((record_key(batch_id, TOUCHED, key), _TOUCHED_CELLS)
                                        for key in dict.fromkeys(keys))).rows


def write_touching(store: Store, batch_id: str, puts: Iterable[tuple[bytes, dict[bytes, bytes]]],
                   chunk: int) -> int:
    """Put `webpage` cells that mark their rows `k:dsc` = batch, each chunk's touched records first.

    Streams: holds a few chunks of `chunk` puts; each chunk is written in the
    background (`WriteBehind`) while `puts` makes the next (a sitemap being
    parsed). Returns the `webpage` rows written, once all are. Cost: two
    batched puts per chunk.
    """
    written: list[int] = []
    part: list[tuple[bytes, dict[bytes, bytes]]] = []
    with WriteBehind() as later:
        for put in puts:
            part.append(put)
            if len(part) >= chunk:
                later.submit(_write_touched_part, store, batch_id, part, written)
                part = []
        if part:
            later.submit(_write_touched_part, store, batch_id, part, written)
    return sum(written)


def _write_touched_part(store: Store, batch_id: str, part: list[tuple[bytes, dict[bytes, bytes]]],
                        written: list[int]) -> None:
    record_touched(store, batch_id, (key for key, _ in part))
    written.append(write_pages(store, part).rows)  # with due index entries, should a put carry f:nft or the flags


def write_listed(store: Store, batch_id: str, sitemap_url: str, puts: Iterable[tuple[bytes, dict[bytes, bytes]]],
                 chunk: int) -> int:
    """Put the entry cells of one sitemap parse (they mark their rows `k:dsc` = batch), each chunk's listed
    records first: one record per bucket the chunk's rows fall in, naming every row once.

    Streams like `write_touching`; holds the keys recorded so far (one per
    entry of the sitemap), so an entry listed twice is recorded once. A rerun
    writes the same records again. Returns the `webpage` rows written. Cost
    per chunk: a put of a few record rows and the batched put of the cells.
    """
    sitemap_key = key_of_url(sitemap_url)
    if sitemap_key is None:
        raise InvalidUrlError(f"sitemap URL has no row key: {sitemap_url[:200]}")
    seen: set[bytes] = set()
    written: list[int] = []
    with WriteBehind() as later:
        for part, rows in enumerate(_chunks(puts, chunk)):
            fresh = [key for key in dict.fromkeys(key for key, _ in rows) if key not in seen]
            seen.update(fresh)
            later.submit(_write_listed_part, store, batch_id, sitemap_key, part, fresh, rows, written)
    return sum(written)


def _write_listed_part(store: Store, batch_id: str, sitemap_key: bytes, part: int, keys: list[bytes],
                       rows: list[tuple[bytes, dict[bytes, bytes]]], written: list[int]) -> None:
    by_bucket: dict[int, dict[bytes, bytes]] = {}
    for key in keys:
        by_bucket.setdefault(bucket_of(key), {})[_LISTED_PREFIX + key] = b""
    store.write(BATCHROW_TABLE, [(listed_record_key(batch_id, bucket, part, sitemap_key), cells)
                                 for bucket, cells in sorted(by_bucket.items())])
    written.append(write_pages(store, rows).rows)


def listed_sitemaps(store: Store, batch_id: str, split: Split = WHOLE) -> frozenset[bytes]:
    """The sitemaps (row keys) whose parse in the batch left listed records in `split`'s buckets.

    Cost: one range scan of the listed records, keys only (a few dozen per 50,000 entries).
    """
    start, stop = record_range(batch_id, LISTED, split)
    return frozenset(listed_sitemap(key) for key, _ in
                     store.scan(BATCHROW_TABLE, start=start, stop=stop, filter=_KEYS_ONLY))


def recorded_keys(store: Store, batch_id: str, kind: bytes, split: Split = WHOLE, chunk: int = 1000,
                  partition: int | None = None) -> Iterator[list[bytes]]:
    """The `webpage` keys a batch recorded (members or touched) in `split`, in chunks of `chunk`.

    In bucket order, then key order. `partition`: members of that fetch
    partition only (tested by the server). Each chunk is a fresh scanner
    resuming after the last record, so none idles while the caller works.
    Cost: one range scan of `batchrow` over the batch's records of that kind.
    """
    start, stop = record_range(batch_id, kind, split)
    columns = column_names(BatchRecord, ["partition", "touched"])
    row_filter = equals_filter(BatchRecord, "partition", partition) if partition is not None else None
    while True:
        records = [key for key, _ in store.scan(BATCHROW_TABLE, start=start, stop=stop, columns=columns,
                                                 filter=row_filter, limit=chunk)]
        if not records:
            return
        yield [page_key(record) for record in records]
        if len(records) < chunk:
            return
        start = records[-1] + b"\x00"


def drop_records(store: Store, batch_id: str, split: Split = WHOLE, chunk: int = 1000) -> int:
    """Delete the batch's records (every kind) in `split`'s buckets; returns records deleted.

    Cost: one range scan per kind and one batched delete per chunk (written
    behind: the next chunk is scanned while one is deleted).
    """
    deleted: list[int] = []

    def delete(records: list[bytes]) -> None:
        deleted.append(store.delete_many(BATCHROW_TABLE, [(key, None) for key in records]).rows)

    with WriteBehind() as later:
        for kind in (MEMBER, TOUCHED, LISTED):
            start, stop = record_range(batch_id, kind, split)
            while True:
                # Keys first, deletes after: a scanner must not idle while we write.
                records = [key for key, _ in store.scan(BATCHROW_TABLE, start=start, stop=stop, filter=_KEYS_ONLY,
                                                        limit=chunk)]
                if not records:
                    break
                later.submit(delete, records)
                start = records[-1] + b"\x00"
    return sum(deleted)


def batch_rows(store: Store, field_name: str, batch_id: str, fields: list[str], chunk: int,
               job: str, unreadable: Unreadable, split: Split = WHOLE,
               partition: int | None = None) -> Iterator[list[tuple[bytes, WebPage]]]:
    """The rows of `split` whose `field_name` equals `batch_id`, in chunks of at most `chunk` rows.

    Rows that do not decode are counted in `unreadable` and left out;
    reading a field not in `fields` raises FieldNotReadError. `partition`:
    only members of that fetch partition (`m:pa`). For the generate and
    fetch marks the batch's member records say which rows to read, for the
    discover mark its listed and touched records (each row once: `listing_owner`), when the batch has records
    (`has_records`); the mark is tested on each row read. Cost: one get
    (the registry row); then one range scan of the batch's records and one
    `Store.rows` of `webpage` per chunk (a range scan where the keys lie close); for a batch without records (or
    another field), one server-filtered scan over the whole table.
    """
    # The tested column is read too (for the server's filter, or to test it here).
    fields = [*fields, field_name] if field_name not in fields else fields
    if partition is not None and "partition" not in fields:
        fields = [*fields, "partition"]
    kind = _KIND_OF_MARK.get(field_name)
    if kind is TOUCHED and has_records(store, batch_id):
        yield from _touched_recorded_rows(store, field_name, batch_id, fields, chunk, job, unreadable, split)
    elif kind is not None and has_records(store, batch_id):
        yield from _recorded_rows(store, kind, field_name, batch_id, fields, chunk, job, unreadable, split,
                                  partition)
    else:
        yield from _scanned_rows(store, field_name, batch_id, fields, chunk, job, unreadable, split, partition)


def _recorded_rows(store: Store, kind: bytes, field_name: str, batch_id: str, fields: list[str], chunk: int,
                   job: str, unreadable: Unreadable, split: Split,
                   partition: int | None) -> Iterator[list[tuple[bytes, WebPage]]]:
    for keys in recorded_keys(store, batch_id, kind, split, chunk, partition):
        yield _marked_rows(store, keys, field_name, batch_id, fields, job, unreadable)


def _marked_rows(store: Store, keys: list[bytes], field_name: str, batch_id: str, fields: list[str], job: str,
                 unreadable: Unreadable) -> list[tuple[bytes, WebPage]]:
    """The rows of `keys` whose `field_name` mark says `batch_id`, decoded (one `Store.rows`)."""
    found = store.rows(WEBPAGE_TABLE, keys, columns=column_names(WebPage, fields))
    mark_column = column_names(WebPage, [field_name])[0]
    mark = columns_of(WebPage)[field_name].codec.encode(batch_id)
    marked = [(key, found[key]) for key in keys if key in found and found[key].get(mark_column) == mark]
    return list(pages(marked, job, unreadable, fields))


#: Listed records read per round trip (each names up to a chunk of rows).
_LISTED_PER_SCAN = 4
#: Keys of one sitemap and bucket gathered before they are sorted and read (a sitemap has at most 50,000).
_LISTED_KEYS_HELD = 65_536


def _listed_keys(store: Store, batch_id: str, split: Split) -> Iterator[tuple[bytes, list[bytes]]]:
    """(sitemap, its entry keys in one bucket, sorted) for each sitemap and bucket of the split's listed records.

    Holds one sitemap's keys of one bucket (at most `_LISTED_KEYS_HELD`:
    beyond, they are handed on in parts). Records are read a few per scan,
    so no scanner idles while the caller works.
    """
    start, stop = record_range(batch_id, LISTED, split)
    current: tuple[bytes, bytes] | None = None  # (bucket, sitemap) of the keys held
    held: list[bytes] = []
    while True:
        records = list(store.scan(BATCHROW_TABLE, start=start, stop=stop, limit=_LISTED_PER_SCAN))
        for record, cells in records:
            bucket = record.split(_SEP, 3)[2]
            owner = (bucket, listed_sitemap(record))
            if owner != current or len(held) >= _LISTED_KEYS_HELD:
                if current is not None and held:
                    yield current[1], sorted(held)
                current, held = owner, []
            held.extend(name[len(_LISTED_PREFIX):] for name in cells if name.startswith(_LISTED_PREFIX))
        if len(records) < _LISTED_PER_SCAN:
            break
        start = records[-1][0] + b"\x00"
    if current is not None and held:
        yield current[1], sorted(held)


def _touched_recorded_rows(store: Store, mark: str, batch_id: str, fields: list[str], chunk: int, job: str,
                           unreadable: Unreadable, split: Split) -> Iterator[list[tuple[bytes, WebPage]]]:
    """The rows marked `k:dsc` = batch: the entries of each listed record, then the touched records' rows;
    each row once, from the record `listing_owner` names."""
    fields = fields if "inlinks" in fields else [*fields, "inlinks"]
    listed = listed_sitemaps(store, batch_id, split)
    for sitemap, keys in _listed_keys(store, batch_id, split) if listed else ():
        # A sitemap's rows of one bucket in key order: neighbouring keys come as one range scan.
        for at in range(0, len(keys), chunk):
            rows = _marked_rows(store, keys[at:at + chunk], mark, batch_id, fields, job, unreadable)
            yield [(key, row) for key, row in rows if listing_owner(row, batch_id, listed) == sitemap]
    for keys in recorded_keys(store, batch_id, TOUCHED, split, chunk):
        rows = _marked_rows(store, keys, mark, batch_id, fields, job, unreadable)
        yield [(key, row) for key, row in rows if not listed or listing_owner(row, batch_id, listed) is None]


def _scanned_rows(store: Store, field_name: str, batch_id: str, fields: list[str], chunk: int,
                  job: str, unreadable: Unreadable, split: Split,
                  partition: int | None) -> Iterator[list[tuple[bytes, WebPage]]]:
    """Each chunk is a fresh scan resuming after the last key: no scanner idles while the caller works."""
    columns = column_names(WebPage, fields)
    row_filter = equals_filter(WebPage, field_name, batch_id)
    if partition is not None:
        row_filter += " AND " + equals_filter(WebPage, "partition", partition)
    start: bytes | None = None
    while True:
        scanned = list(store.scan(WEBPAGE_TABLE, start=start, columns=columns, filter=row_filter, limit=chunk))
        if not scanned:
            return
        start = scanned[-1][0] + b"\x00"
        if not split.whole:
            scanned = [(key, cells) for key, cells in scanned if split.holds(key)]
        yield list(pages(scanned, job, unreadable, fields))


# ------------------------------------------------------------- due index --

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


def _chunks(items: Iterable[tuple[bytes, Cells]], size: int) -> Iterator[list[tuple[bytes, Cells]]]:
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
    for chunk in _chunks(puts, span or store.batch_size):
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
