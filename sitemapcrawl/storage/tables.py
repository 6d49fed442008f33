"""The typed access layer over the tables: what jobs read, decoded one way.

Every job reads `webpage` rows (and `host` origin rows, `history` rows)
through these functions, so there is one decode policy (`decoded`): a row
whose key is not a URL key, or whose cells do not decode, is logged once
(with the job's name) and counted in `Unreadable`, never raised and never
read as an empty row; each job says the count in its summary line. Rows are
decoded with the fields the caller asked for, so a field not asked for holds
its `NotRead` (a truth test of it raises FieldNotReadError), not None. A batch's rows are
read through `batchrecords`; writes of due-deciding cells go through
`dueindex.write_pages`.

Cost: what the store's scan costs; a dict lookup and a codec per cell to decode.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from sitemapcrawl.errors import CellDecodeError, InvalidUrlError
from sitemapcrawl.model.cells import RowT, column_names, decode
from sitemapcrawl.model.webpage import (
    WEBPAGE_TABLE,
    HistoryRow,
    HostRow,
    WebPage,
)
from sitemapcrawl.storage.store import Cells, Store
from sitemapcrawl.web import rowkeys

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
        url = rowkeys.url_from_row_key(key.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidUrlError(f"row key is not UTF-8: {exc}") from None
    return decode(WebPage, url, cells, fields)


def decoded(scan: Iterable[tuple[bytes, Cells]], decoder: Callable[[bytes, Cells, list[str] | None], RowT],
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
    return decoded(scan, decode_page, job, unreadable, fields)


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

    Politeness rows (keys from `~`, `storage.politeness`) are not origin rows:
    scan the table up to them.
    """
    try:
        text = key.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidUrlError(f"row key is not UTF-8: {exc}") from None
    return decode(HostRow, rowkeys.url_from_row_key(text + "/")[:-1], cells, fields)


def hosts(scan: Iterable[tuple[bytes, Cells]], job: str, unreadable: Unreadable,
          fields: Iterable[str] | None = None) -> Iterator[tuple[bytes, HostRow]]:
    """Decode a scan of `host` origin rows; unreadable rows are counted in `unreadable` and left out."""
    return decoded(scan, decode_host, job, unreadable, fields)


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
    return decoded(scan, decode_history, job, unreadable, fields)
