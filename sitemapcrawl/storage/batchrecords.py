"""Batch records: a batch's rows listed in the `batchrow` table, so reading a batch costs what it holds.

Keys `<batch>|<kind>|<bucket>|<webpage key>`: members (kind `m`, cell `r:pa`
= fetch split; generate, and fetch for a redirect hop), touched rows
(`t`; parse and updatedb's spread, for each row given an `il:` cell and
`k:dsc`), and listed entries (`l`, `...|<sitemap key>|<part>`, one cell
`r:lk` holding the part's entry keys, so a 50,000-entry sitemap is a few
dozen records of one cell each; `listing_owner` picks the one record a row
is read from; a host with many entries has its rows read by a scan of its
key range instead). The
bucket is the row's host bucket, so a split is one key range. A record is
written before the cells it stands for: readers test the mark on the row and
skip a row without it. updatedb (or releasing the batch) drops the records
(`drop_records`); a batch from before the records (`b:rec` unset) is read by
a server-filtered scan of `webpage`, as it always was.
Cost: `batch_rows` reads the batch's records by prefix and gets their rows in chunks.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Iterator, Set

from sitemapcrawl.errors import CellDecodeError, InvalidUrlError
from sitemapcrawl.model.cells import (
    column_names,
    columns_of,
    decode,
    encode,
    equals_filter,
    field_encoder,
    map_column,
)
from sitemapcrawl.model.linkvalues import InlinkKind, parse_inlink
from sitemapcrawl.model.splits import WHOLE, Split, bucket_label, bucket_of
from sitemapcrawl.model.webpage import (
    BATCH_TABLE,
    BATCHROW_TABLE,
    WEBPAGE_TABLE,
    BatchRecord,
    BatchRow,
    WebPage,
)
from sitemapcrawl.storage.dueindex import chunks, write_pages
from sitemapcrawl.storage.overlap import WriteBehind
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, pages
from sitemapcrawl.web import rowkeys

log = logging.getLogger(__name__)


#: Record kinds: a row of the batch (generate, fetch's redirect hops), a row it gave inlinks to merge,
#: the entry rows of one sitemap parse (many per record).
MEMBER, TOUCHED, LISTED = b"m", b"t", b"l"
#: Which records hold the rows a batch mark is tested on: members carry the generate and fetch marks,
#: touched and listed rows the discover mark.
_KIND_OF_MARK = {"generate_mark": MEMBER, "fetch_mark": MEMBER, "discover_mark": TOUCHED}
_SEP = b"|"
_TOUCHED_CELLS = encode(BatchRecord("", touched=True))
_WORK_CELLS = encode(BatchRecord("", work=True))
_WORK, _encode_work = field_encoder(BatchRecord, "work")
_NO_WORK = _encode_work(False)
_LISTED_KEYS, _encode_listed_keys = field_encoder(BatchRecord, "listed_keys")
_INLINK_PREFIX = map_column(WebPage, "inlinks")
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
        return rowkeys.row_key(url).encode("utf-8")
    except InvalidUrlError:
        return None


def _listed_entries(record: bytes, cells: dict[bytes, bytes]) -> list[bytes]:
    """The entry keys a listed record names: its `r:lk` lines, or one `r:k.<key>` cell each (older records);
    none, logged, for a record that does not decode."""
    try:
        found = decode(BatchRecord, "", cells, ["listed_keys", "listed"])
    except CellDecodeError as exc:
        log.warning("listed record %r: %s; its entries are not merged", record[:200], exc)
        return []
    return [key.encode("utf-8") for key in (*(found.listed_keys or ()), *(found.listed or {}))]


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


def listed_in_batch(row: WebPage, batch_id: str) -> bool:
    """Did a sitemap parsed in the batch give the row an entry inlink (`b=` the batch)? What marks a listed row
    of the batch in place of `k:dsc` (parse writes none on entries of a batch with records). `row` must hold
    `inlinks`. No I/O."""
    for text in (row.inlinks or {}).values():
        link = parse_inlink(text)
        if link is not None and link.kind in _ENTRY_KINDS and link.batch == batch_id:
            return True
    return False


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


def record_members(store: Store, batch_id: str, members: Iterable[tuple[bytes, int | None, bool]]) -> int:
    """Record rows as members of a batch: (webpage key, fetch split (None: 0), has work in sitemap-only
    mode (`r:w`: a sitemap, a redirect)) triples; returns records written.

    Call it before the rows get their batch marks. Cost: one batched put.
    """
    return store.write(BATCHROW_TABLE, (
        (record_key(batch_id, MEMBER, key),
         encode(BatchRecord("", fetch_split=part if part is not None else 0, work=work)))
        for key, part, work in members)).rows


def record_work(store: Store, batch_id: str, keys: Iterable[bytes]) -> int:
    """Say that members of a batch have work in sitemap-only mode after all (fetch: they redirected).

    Cost: one batched put.
    """
    return store.write(BATCHROW_TABLE, ((record_key(batch_id, MEMBER, key), _WORK_CELLS) for key in keys)).rows


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
    """Put the entry cells of one sitemap parse (their `il:` cells name the batch), each chunk's listed
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
        for part, rows in enumerate(chunks(puts, chunk)):
            fresh = [key for key in dict.fromkeys(key for key, _ in rows) if key not in seen]
            seen.update(fresh)
            later.submit(_write_listed_part, store, batch_id, sitemap_key, part, fresh, rows, written)
    return sum(written)


def _write_listed_part(store: Store, batch_id: str, sitemap_key: bytes, part: int, keys: list[bytes],
                       rows: list[tuple[bytes, dict[bytes, bytes]]], written: list[int]) -> None:
    by_bucket: dict[int, list[str]] = {}
    for key in keys:  # canonical URLs hold no line break: one key per line
        by_bucket.setdefault(bucket_of(key), []).append(key.decode("utf-8"))
    store.write(BATCHROW_TABLE, [(listed_record_key(batch_id, bucket, part, sitemap_key),
                                  {_LISTED_KEYS: _encode_listed_keys(tuple(names))})
                                 for bucket, names in sorted(by_bucket.items())])
    written.append(write_pages(store, rows).rows)


def listed_sitemaps(store: Store, batch_id: str, split: Split = WHOLE) -> frozenset[bytes]:
    """The sitemaps (row keys) whose parse in the batch left listed records in `split`'s buckets.

    Cost: one range scan of the listed records, keys only (a few dozen per 50,000 entries).
    """
    start, stop = record_range(batch_id, LISTED, split)
    return frozenset(listed_sitemap(key) for key, _ in
                     store.scan(BATCHROW_TABLE, start=start, stop=stop, filter=_KEYS_ONLY))


def recorded_keys(store: Store, batch_id: str, kind: bytes, split: Split = WHOLE, chunk: int = 1000,
                  fetch_split: int | None = None,
                  on_no_work: Callable[[int], None] | None = None) -> Iterator[list[bytes]]:
    """The `webpage` keys a batch recorded (members or touched) in `split`, in chunks of `chunk`.

    In bucket order, then key order. `fetch_split`: members of that fetch
    split only (tested by the server). `on_no_work`: members whose
    record says they have no work in sitemap-only mode (`r:w` = 0: pages
    that did not redirect) are left out, and their number told to it. Each
    chunk is a fresh scanner resuming after the last record, so none idles
    while the caller works. Cost: one range scan of `batchrow` over the
    batch's records of that kind.
    """
    start, stop = record_range(batch_id, kind, split)
    columns = column_names(BatchRecord, ["fetch_split", "touched", "work"])
    row_filter = equals_filter(BatchRecord, "fetch_split", fetch_split) if fetch_split is not None else None
    while True:
        records = list(store.scan(BATCHROW_TABLE, start=start, stop=stop, columns=columns, filter=row_filter,
                                  limit=chunk))
        if not records:
            return
        if on_no_work is None:
            yield [page_key(record) for record, _ in records]
        else:
            keys = [page_key(record) for record, cells in records if cells.get(_WORK) != _NO_WORK]
            on_no_work(len(records) - len(keys))
            if keys:
                yield keys
        if len(records) < chunk:
            return
        start = records[-1][0] + b"\x00"


def has_marked_rows(store: Store, batch_id: str) -> bool:
    """Does any `webpage` row carry the batch's generate, fetch or discover mark (a batch made before the registry)?

    Cost: a server-filtered scan that stops at the first such row; for a batch
    id nobody generated, the whole table.
    """
    marks = ("generate_mark", "fetch_mark", "discover_mark")
    column = column_names(WebPage, list(marks))
    marked = " OR ".join(f"({equals_filter(WebPage, name, batch_id)})" for name in marks)
    return any(True for _ in store.scan(WEBPAGE_TABLE, columns=column, filter=marked, limit=1))


def recorded_splits(store: Store, batch_id: str) -> set[int]:
    """The fetch splits (`r:pa`) of a batch's members; a record whose split does not decode is left out.

    Cost: one range scan of the batch's member records, one small cell each;
    memory: a set of at most the batch's fetch split count.
    """
    start, stop = record_range(batch_id, MEMBER)
    column = column_names(BatchRecord, ["fetch_split"])[0]
    found: set[int] = set()
    for key, cells in store.scan(BATCHROW_TABLE, start=start, stop=stop, columns=[column]):
        try:
            fetch_split = decode(BatchRecord, "", cells, ["fetch_split"]).fetch_split
        except CellDecodeError as exc:
            log.warning("batch %s: member record %r: %s", batch_id, key[:80], exc)
            continue
        found.add(fetch_split or 0)
    return found


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
               job: str, unreadable: Unreadable, split: Split = WHOLE, fetch_split: int | None = None,
               on_no_work: Callable[[int], None] | None = None) -> Iterator[list[tuple[bytes, WebPage]]]:
    """The rows of `split` whose `field_name` equals `batch_id`, in chunks of at most `chunk` rows.

    Rows that do not decode are counted in `unreadable` and left out;
    a field not in `fields` holds its `NotRead` (`model.cells`). `fetch_split`:
    only members of that fetch split (`m:pa`). `on_no_work`: members
    recorded as having no work in sitemap-only mode are not read, only
    counted to it (`recorded_keys`; a batch without records reads them). For the generate and
    fetch marks the batch's member records say which rows to read, for the
    discover mark its listed and touched records (each row once: `listing_owner`), when the batch has records
    (`has_records`); the mark is tested on each row read. Cost: one get
    (the registry row); then one range scan of the batch's records and one
    `Store.rows` of `webpage` per chunk (a range scan where the keys lie close); for a batch without records (or
    another field), one server-filtered scan over the whole table.
    """
    # The tested column is read too (for the server's filter, or to test it here).
    fields = [*fields, field_name] if field_name not in fields else fields
    if fetch_split is not None and "fetch_split" not in fields:
        fields = [*fields, "fetch_split"]
    kind = _KIND_OF_MARK.get(field_name)
    if kind is TOUCHED and has_records(store, batch_id):
        yield from _touched_recorded_rows(store, field_name, batch_id, fields, chunk, job, unreadable, split)
    elif kind is not None and has_records(store, batch_id):
        yield from _recorded_rows(store, kind, field_name, batch_id, fields, chunk, job, unreadable, split,
                                  fetch_split, on_no_work)
    else:
        yield from _scanned_rows(store, field_name, batch_id, fields, chunk, job, unreadable, split, fetch_split)


def _recorded_rows(store: Store, kind: bytes, field_name: str, batch_id: str, fields: list[str], chunk: int,
                   job: str, unreadable: Unreadable, split: Split, fetch_split: int | None,
                   on_no_work: Callable[[int], None] | None) -> Iterator[list[tuple[bytes, WebPage]]]:
    for keys in recorded_keys(store, batch_id, kind, split, chunk, fetch_split, on_no_work):
        yield _marked_rows(store, keys, field_name, batch_id, fields, job, unreadable)


def _marked_rows(store: Store, keys: list[bytes], field_name: str | None, batch_id: str, fields: list[str],
                 job: str, unreadable: Unreadable) -> list[tuple[bytes, WebPage]]:
    """The rows of `keys` whose `field_name` mark says `batch_id` (None: all of them), decoded (one `Store.rows`)."""
    found = store.rows(WEBPAGE_TABLE, keys, columns=column_names(WebPage, fields))
    if field_name is None:
        return list(pages(((key, found[key]) for key in keys if key in found), job, unreadable, fields))
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
            held.extend(_listed_entries(record, cells))
        if len(records) < _LISTED_PER_SCAN:
            break
        start = records[-1][0] + b"\x00"
    if current is not None and held:
        yield current[1], sorted(held)


#: Listed entries of one host in a batch from which the host's rows are read by scanning its key range.
#: Sitemaps of one host list interleaved keys: read sitemap by sitemap, a chunk's key range holds the
#: other sitemaps' rows, so most of its keys became gets (20 sitemaps of 50,000: 19 of 20 keys).
HOST_SCAN_MIN = 4_096
#: A host scan stops once it has read this many rows per listed entry of the host (plus a chunk): the
#: host holds many rows the batch did not touch; the keys past it are read sitemap by sitemap.
HOST_SCAN_SLACK = 1.5


def _host_of(key: bytes) -> bytes:
    """The host part of a `webpage` row key (before its first `:`), as `splits.bucket_of` takes it."""
    return key.partition(b":")[0]


def _host_range(host: bytes) -> tuple[bytes, bytes]:
    """The (start, stop) keys of every `webpage` row whose host part is `host` (`;` follows `:`)."""
    return host + b":", host + b";"


def _listed_hosts(store: Store, batch_id: str, split: Split) -> dict[bytes, int]:
    """Listed entries per host in the split's listed records (a row listed by two sitemaps counts twice).

    Cost: one range scan of the listed records (read a few per scan); memory: one count per host.
    """
    counts: dict[bytes, int] = {}
    start, stop = record_range(batch_id, LISTED, split)
    while True:
        records = list(store.scan(BATCHROW_TABLE, start=start, stop=stop, limit=_LISTED_PER_SCAN))
        for record, cells in records:
            for key in _listed_entries(record, cells):
                host = _host_of(key)
                counts[host] = counts.get(host, 0) + 1
        if len(records) < _LISTED_PER_SCAN:
            return counts
        start = records[-1][0] + b"\x00"


def _scanned_host_rows(store: Store, host: bytes, entries: int, batch_id: str, fields: list[str], chunk: int,
                       job: str, unreadable: Unreadable, listed: frozenset[bytes],
                       covered: dict[bytes, bytes]) -> Iterator[list[tuple[bytes, WebPage]]]:
    """The host's rows that a listed record stands for (`listing_owner` names one), read by scanning the
    host's key range in chunks; sets `covered[host]` to the first key not looked at.

    Stops after `HOST_SCAN_SLACK` rows per entry (plus a chunk). Cost: range scans of at most that many rows.
    """
    columns = column_names(WebPage, fields)
    needle = b"b=" + batch_id.encode("utf-8")
    start, stop = _host_range(host)
    budget = int(entries * HOST_SCAN_SLACK) + chunk
    while True:
        scanned = list(store.scan(WEBPAGE_TABLE, start=start, stop=stop, columns=columns, limit=chunk))
        budget -= len(scanned)
        if scanned:
            start = scanned[-1][0] + b"\x00"
        covered[host] = stop if len(scanned) < chunk else start
        # Only rows with an inlink cell naming the batch are decoded (the others were not touched by it).
        candidates = [(key, cells) for key, cells in scanned
                      if any(needle in value for column, value in cells.items() if column.startswith(_INLINK_PREFIX))]
        rows = [(key, row) for key, row in pages(candidates, job, unreadable, fields)
                if listing_owner(row, batch_id, listed) is not None]
        if rows:
            yield rows
        if len(scanned) < chunk or budget <= 0:
            return


def _touched_recorded_rows(store: Store, mark: str, batch_id: str, fields: list[str], chunk: int, job: str,
                           unreadable: Unreadable, split: Split) -> Iterator[list[tuple[bytes, WebPage]]]:
    """The rows the batch gave inlinks to merge: the listed rows (an entry inlink naming the batch) of each
    host with many (`HOST_SCAN_MIN`) by a scan of its key range, the other entries of each listed record,
    then the touched records' rows (marked `mark` = batch); each row once (a listed row from the record
    `listing_owner` names, or from its host's scan)."""
    fields = fields if "inlinks" in fields else [*fields, "inlinks"]
    listed = listed_sitemaps(store, batch_id, split)
    covered: dict[bytes, bytes] = {}
    """Host -> the first key its scan did not look at: entries below it are done."""
    hosts = _listed_hosts(store, batch_id, split) if listed else {}
    for host, entries in sorted(hosts.items()):
        if entries >= HOST_SCAN_MIN:
            yield from _scanned_host_rows(store, host, entries, batch_id, fields, chunk, job, unreadable, listed,
                                          covered)
    # Every host scanned to its end (an inventory): no listed record is left to read.
    rest = any(covered.get(host) != _host_range(host)[1] for host in hosts)
    # Small sitemaps' keys are gathered up to a chunk, so a thousand sitemaps of twenty entries are read in
    # twenty round trips, not a thousand. Each row comes from the record of the sitemap `listing_owner` names.
    gathered: dict[bytes, set[bytes]] = {}
    """Key -> the sitemaps of the gathered records that list it."""
    for sitemap, keys in _listed_keys(store, batch_id, split) if rest else ():
        if covered:
            keys = [key for key in keys if key >= covered.get(_host_of(key), b"")]
        for key in keys:
            gathered.setdefault(key, set()).add(sitemap)
            if len(gathered) >= chunk:
                yield _owned_rows(store, gathered, batch_id, fields, job, unreadable, listed)
                gathered = {}
    if gathered:
        yield _owned_rows(store, gathered, batch_id, fields, job, unreadable, listed)
    for keys in recorded_keys(store, batch_id, TOUCHED, split, chunk):
        rows = _marked_rows(store, keys, mark, batch_id, fields, job, unreadable)
        yield [(key, row) for key, row in rows if not listed or listing_owner(row, batch_id, listed) is None]


def _owned_rows(store: Store, gathered: dict[bytes, set[bytes]], batch_id: str, fields: list[str], job: str,
                unreadable: Unreadable, listed: frozenset[bytes]) -> list[tuple[bytes, WebPage]]:
    """The gathered rows whose owning sitemap (`listing_owner`) is one of the records that named them here;
    in key order, so neighbouring keys come as one range scan (`Store.rows`)."""
    # No mark to test: the entry inlink's `b=` is the batch's (`listing_owner` reads it).
    rows = _marked_rows(store, sorted(gathered), None, batch_id, fields, job, unreadable)
    return [(key, row) for key, row in rows if listing_owner(row, batch_id, listed) in gathered[key]]


def _scanned_rows(store: Store, field_name: str, batch_id: str, fields: list[str], chunk: int,
                  job: str, unreadable: Unreadable, split: Split,
                  fetch_split: int | None) -> Iterator[list[tuple[bytes, WebPage]]]:
    """Each chunk is a fresh scan resuming after the last key: no scanner idles while the caller works."""
    columns = column_names(WebPage, fields)
    row_filter = equals_filter(WebPage, field_name, batch_id)
    if fetch_split is not None:
        row_filter += " AND " + equals_filter(WebPage, "fetch_split", fetch_split)
    start: bytes | None = None
    while True:
        scanned = list(store.scan(WEBPAGE_TABLE, start=start, columns=columns, filter=row_filter, limit=chunk))
        if not scanned:
            return
        start = scanned[-1][0] + b"\x00"
        if not split.whole:
            scanned = [(key, cells) for key, cells in scanned if split.holds(key)]
        yield list(pages(scanned, job, unreadable, fields))
