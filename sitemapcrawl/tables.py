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
`sitemapcrawl.marks`; a new row is `sitemapcrawl.newrows`.

Batch-scoped queries live here too, so that no job imports another job to
read a batch. A batch's rows are *recorded* in the `batchrow` table, so that
reading a batch costs what the batch holds, not what the table holds:

- members: `<batch>|m|<bucket>|<webpage key>`, cell `r:pa` = the fetch
  partition, written by generate for each row it selects (and by fetch for
  a redirect hop that joins the batch);
- touched: `<batch>|t|<bucket>|<webpage key>`, cell `r:t` = 1, written by
  parse (sitemap entries, index children, URLs a re-parsed sitemap dropped)
  and updatedb's spread (link and redirect targets) for each row they give
  an `il:` cell and `k:dsc` = batch to.

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
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from sitemapcrawl import urls
from sitemapcrawl.errors import CellDecodeError, InvalidUrlError
from sitemapcrawl.splits import WHOLE, Split, bucket_label, bucket_of
from sitemapcrawl.store import Cells, Store
from sitemapcrawl.webpage import (
    BATCH_TABLE,
    BATCHROW_TABLE,
    WEBPAGE_TABLE,
    BatchRecord,
    BatchRow,
    HistoryRow,
    HostRow,
    WebPage,
    column_names,
    columns_of,
    decode,
    encode,
    equals_filter,
)

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


def pages(scan: Iterable[tuple[bytes, Cells]], job: str, unreadable: Unreadable,
          fields: Iterable[str] | None = None) -> Iterator[tuple[bytes, WebPage]]:
    """Decode a scan of `webpage` rows; unreadable rows are counted in `unreadable` and left out."""
    wanted = list(fields) if fields is not None else None
    for key, cells in scan:
        try:
            yield key, decode_page(key, cells, wanted)
        except (InvalidUrlError, CellDecodeError) as exc:
            unreadable.add(job, key, exc)


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
    wanted = list(fields) if fields is not None else None
    for key, cells in scan:
        try:
            yield key, decode_host(key, cells, wanted)
        except (InvalidUrlError, CellDecodeError) as exc:
            unreadable.add(job, key, exc)


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
    wanted = list(fields) if fields is not None else None
    for key, cells in scan:
        try:
            yield key, decode_history(key, cells, wanted)
        except (InvalidUrlError, CellDecodeError) as exc:
            unreadable.add(job, key, exc)


# ------------------------------------------------------------ batch records --

#: Record kinds: a row of the batch (generate, fetch's redirect hops), a row it gave inlinks to merge.
MEMBER, TOUCHED = b"m", b"t"
#: Which records hold the rows a batch mark is tested on: members carry the generate and fetch marks,
#: touched rows the discover mark.
_KIND_OF_MARK = {"generate_mark": MEMBER, "fetch_mark": MEMBER, "discover_mark": TOUCHED}
_SEP = b"|"
_TOUCHED_CELLS = encode(BatchRecord("", touched=True))


def record_key(batch_id: str, kind: bytes, key: bytes) -> bytes:
    """The `batchrow` key recording `webpage` row `key` in a batch: `<batch>|<kind>|<bucket>|<key>`."""
    return _SEP.join((batch_id.encode("utf-8"), kind, bucket_label(bucket_of(key)), key))


def page_key(record: bytes) -> bytes:
    """The `webpage` row key a `batchrow` key records (everything after its third `|`)."""
    return record.split(_SEP, 3)[3]


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

    Streams: holds one chunk of `chunk` puts. Returns the `webpage` rows
    written. Cost: two batched puts per chunk.
    """
    written = 0
    part: list[tuple[bytes, dict[bytes, bytes]]] = []
    for put in puts:
        part.append(put)
        if len(part) >= chunk:
            written += _write_touched_part(store, batch_id, part)
            part = []
    if part:
        written += _write_touched_part(store, batch_id, part)
    return written


def _write_touched_part(store: Store, batch_id: str, part: list[tuple[bytes, dict[bytes, bytes]]]) -> int:
    record_touched(store, batch_id, (key for key, _ in part))
    return store.write(WEBPAGE_TABLE, part).rows


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


def batch_keys(store: Store, batch_id: str, kind: bytes, split: Split = WHOLE, chunk: int = 1000) -> Iterator[bytes]:
    """Every `webpage` key the batch recorded of `kind` (MEMBER or TOUCHED) in `split`, one by one.

    For steps that work on what a batch touched (the sitemaps it parsed,
    the rows it merged). Recorded is not done: test the row's mark. Cost:
    see `recorded_keys`.
    """
    for keys in recorded_keys(store, batch_id, kind, split, chunk):
        yield from keys


def drop_records(store: Store, batch_id: str, split: Split = WHOLE, chunk: int = 1000) -> int:
    """Delete the batch's records (both kinds) in `split`'s buckets; returns records deleted.

    Cost: one range scan per kind and one batched delete per chunk.
    """
    deleted = 0
    for kind in (MEMBER, TOUCHED):
        start, stop = record_range(batch_id, kind, split)
        while True:
            # Keys first, deletes after: a scanner must not idle while we write.
            records = [key for key, _ in store.scan(BATCHROW_TABLE, start=start, stop=stop, limit=chunk)]
            if not records:
                break
            deleted += store.delete_many(BATCHROW_TABLE, ((key, None) for key in records)).rows
            start = records[-1] + b"\x00"
    return deleted


def batch_rows(store: Store, field_name: str, batch_id: str, fields: list[str], chunk: int,
               job: str, unreadable: Unreadable, split: Split = WHOLE,
               partition: int | None = None) -> Iterator[list[tuple[bytes, WebPage]]]:
    """The rows of `split` whose `field_name` equals `batch_id`, in chunks of at most `chunk` rows.

    Rows that do not decode are counted in `unreadable` and left out;
    reading a field not in `fields` raises FieldNotReadError. `partition`:
    only members of that fetch partition (`m:pa`). For the generate and
    fetch marks the batch's member records say which rows to read, for the
    discover mark its touched records, when the batch has records
    (`has_records`); the mark is tested on each row read. Cost: one get
    (the registry row); then one range scan of the batch's records and one
    multi-get of `webpage` rows per chunk; for a batch without records (or
    another field), one server-filtered scan over the whole table.
    """
    # The tested column is read too (for the server's filter, or to test it here).
    fields = [*fields, field_name] if field_name not in fields else fields
    if partition is not None and "partition" not in fields:
        fields = [*fields, "partition"]
    kind = _KIND_OF_MARK.get(field_name)
    if kind is not None and has_records(store, batch_id):
        yield from _recorded_rows(store, kind, field_name, batch_id, fields, chunk, job, unreadable, split,
                                  partition)
    else:
        yield from _scanned_rows(store, field_name, batch_id, fields, chunk, job, unreadable, split, partition)


def _recorded_rows(store: Store, kind: bytes, field_name: str, batch_id: str, fields: list[str], chunk: int,
                   job: str, unreadable: Unreadable, split: Split,
                   partition: int | None) -> Iterator[list[tuple[bytes, WebPage]]]:
    columns = column_names(WebPage, fields)
    mark_column = column_names(WebPage, [field_name])[0]
    mark = columns_of(WebPage)[field_name].codec.encode(batch_id)
    for keys in recorded_keys(store, batch_id, kind, split, chunk, partition):
        found = store.rows(WEBPAGE_TABLE, keys, columns=columns)
        marked = [(key, found[key]) for key in keys if key in found and found[key].get(mark_column) == mark]
        yield list(pages(marked, job, unreadable, fields))


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


def touched_rows(store: Store, batch_id: str, fields: list[str], chunk: int, job: str, unreadable: Unreadable,
                 split: Split = WHOLE) -> Iterator[list[tuple[bytes, WebPage]]]:
    """The rows of `split` a batch touched, each once, in chunks: those marked `k:dsc` (entries of the
    sitemaps parsed, URLs a sitemap stopped listing, link targets), then those fetched.

    What the counters of updatedb (quality evidence, row counts) read; the one
    place they learn what a batch touched. Cost: `batch_rows` for the discover
    mark, then for the fetch mark (with records: two range scans and a multi-get per chunk).
    """
    yield from batch_rows(store, "discover_mark", batch_id, fields, chunk, job, unreadable, split)
    wanted = fields if "discover_mark" in fields else [*fields, "discover_mark"]
    for rows in batch_rows(store, "fetch_mark", batch_id, wanted, chunk, job, unreadable, split):
        yield [(key, row) for key, row in rows if row.discover_mark != batch_id]
