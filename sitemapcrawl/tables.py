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
read a batch. Cost: what the store's scan costs; a dict lookup and a codec
per cell to decode.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from sitemapcrawl import urls
from sitemapcrawl.errors import CellDecodeError, InvalidUrlError
from sitemapcrawl.splits import WHOLE, Split
from sitemapcrawl.store import Cells, Store
from sitemapcrawl.webpage import WEBPAGE_TABLE, HistoryRow, HostRow, WebPage, column_names, decode, equals_filter

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


def batch_rows(store: Store, field_name: str, batch_id: str, fields: list[str], chunk: int,
               job: str, unreadable: Unreadable, split: Split = WHOLE) -> Iterator[list[tuple[bytes, WebPage]]]:
    """The rows of `split` whose `field_name` equals `batch_id`, in chunks of `chunk` rows.

    Each chunk is a fresh scan resuming after the last key, so no scanner sits
    idle while the caller works on a chunk. Rows that do not decode are
    counted in `unreadable` and left out; reading a field not in `fields`
    raises FieldNotReadError. Cost: one server-filtered scan over the table.
    """
    # The server's column filter sees only the columns scanned: scan the tested one too.
    fields = [*fields, field_name] if field_name not in fields else fields
    columns = column_names(WebPage, fields)
    row_filter = equals_filter(WebPage, field_name, batch_id)
    start: bytes | None = None
    while True:
        scanned = list(store.scan(WEBPAGE_TABLE, start=start, columns=columns, filter=row_filter, limit=chunk))
        if not scanned:
            return
        start = scanned[-1][0] + b"\x00"
        if not split.whole:
            scanned = [(key, cells) for key, cells in scanned if split.holds(key)]
        yield list(pages(scanned, job, unreadable, fields))
