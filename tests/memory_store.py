"""An in-memory stand-in for `Store`: ONLY for unit tests of pure bookkeeping
(what a writer puts, deletes and reads back), never for anything HBase does.

Integration tests use the real HBase (`hbase_fixtures`, `counting_store`).
It holds just the calls the units under test make: `write`, `delete_many`,
`row`, `rows` and `batch_size`; a write can be made to fail once, and every
key read is counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from sitemapcrawl.errors import StoreUnavailableError
from sitemapcrawl.model.webpage import TABLE_NAMES, WEBPAGE_TABLE
from sitemapcrawl.storage.store import Cells, WriteCounts
from sitemapcrawl.web import rowkeys


class MemoryStore:
    """Tables as dicts of row key -> cells; a write merges cells into a row and a
    delete takes the named columns (the whole row when none are named), like HBase.

    `fail_next`: the next `write` raises `StoreUnavailableError` and writes nothing.
    `read`: keys asked for by `row` and `rows` so far.
    """

    def __init__(self, batch_size: int = 1000) -> None:
        self.batch_size = batch_size
        self.tables: dict[str, dict[bytes, dict[bytes, bytes]]] = {table: {} for table in TABLE_NAMES}
        self.fail_next = False
        self.read = 0
        self.retries = 0
        """Operations retried (as `Store.retries`; this store never retries)."""

    def put_page(self, url: str, cells: Mapping[bytes, bytes]) -> None:
        """Store `cells` as the webpage row of `url` (keyed as the real store keys it)."""
        self.tables[WEBPAGE_TABLE][rowkeys.row_key(url).encode()] = dict(cells)

    def keys(self, table: str) -> set[bytes]:
        """The row keys `table` holds."""
        return set(self.tables[table])

    def write(self, table: str, rows: Iterable[tuple[bytes, Mapping[bytes, bytes]]]) -> WriteCounts:
        rows = list(rows)
        if self.fail_next:
            self.fail_next = False
            raise StoreUnavailableError("down")
        for key, cells in rows:
            self.tables[table].setdefault(key, {}).update(cells)
        return WriteCounts(len(rows), 1, 0)

    def delete_many(self, table: str, rows: Iterable[tuple[bytes, Sequence[bytes] | None]]) -> WriteCounts:
        rows = list(rows)
        for key, columns in rows:
            cells = self.tables[table].get(key)
            if cells is not None and columns is not None:
                for column in columns:
                    cells.pop(column, None)
            if cells is not None and (columns is None or not cells):
                del self.tables[table][key]
        return WriteCounts(len(rows), 1, 0)

    def row(self, table: str, key: bytes, columns: Sequence[bytes] | None = None) -> Cells | None:
        return self.rows(table, [key], columns).get(key)

    def rows(self, table: str, keys: Sequence[bytes], columns: Sequence[bytes] | None = None) -> dict[bytes, Cells]:
        self.read += len(keys)
        found = {key: self.tables[table][key] for key in keys if key in self.tables[table]}
        return {key: {c: v for c, v in cells.items() if columns is None or _asked(c, columns)}
                for key, cells in found.items()}


def _asked(column: bytes, columns: Sequence[bytes]) -> bool:
    """Is `column` (`family:qualifier`) among `columns`, as HBase reads them: a name without ':' is a family."""
    family = column.split(b":", 1)[0]
    return column in columns or family in columns or family + b":" in columns
