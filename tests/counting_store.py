"""A real `Store` that also counts what it reads, per table: for tests that bound what a job reads;
and one that dies at a chosen write, for tests of a worker killed mid-pass.

Not a mock: every call goes to the real HBase through `Store`; the counts
are of rows that came back from scans and of keys asked for by gets, and
every scan's bounds are kept so a test can tell a range scan from a scan of
the whole table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from sitemapcrawl.config import Settings
from sitemapcrawl.storage.store import Cells, Store, WriteCounts


@dataclass(frozen=True)
class ScanCall:
    """One scan as asked for."""

    table: str
    start: bytes | None
    stop: bytes | None
    filter: str | None

    @property
    def whole_table(self) -> bool:
        """Did it go over the whole table (no start, no stop)?"""
        return not self.start and self.stop is None


class CountingStore(Store):
    """`Store` counting rows read per table (scans: rows returned; gets: keys asked for),
    and the round trips of multi-gets and batched deletes (any table)."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.scanned: Counter[str] = Counter()
        self.got: Counter[str] = Counter()
        self.scans: list[ScanCall] = []
        self.keys_got: dict[str, list[bytes]] = {}
        self.multi_gets = 0  # calls of `rows`
        self.delete_batches: list[int] = []  # rows deleted by each `delete_many` call

    def reset(self) -> None:
        """Forget what was counted so far."""
        self.scanned.clear()
        self.got.clear()
        self.scans.clear()
        self.keys_got.clear()
        self.multi_gets = 0
        self.delete_batches.clear()

    def read(self, table: str) -> int:
        """Rows of `table` read so far, by scans and gets."""
        return self.scanned[table] + self.got[table]

    def whole_table_scans(self, table: str) -> list[ScanCall]:
        """The scans that went over all of `table`."""
        return [call for call in self.scans if call.table == table and call.whole_table]

    def row(self, table: str, key: bytes, columns: Sequence[bytes] | None = None) -> Cells | None:
        self.got[table] += 1
        self.keys_got.setdefault(table, []).append(key)
        return super().row(table, key, columns)

    def rows(self, table: str, keys: Sequence[bytes], columns: Sequence[bytes] | None = None) -> dict[bytes, Cells]:
        self.got[table] += len(keys)
        self.multi_gets += 1
        self.keys_got.setdefault(table, []).extend(keys)
        return super().rows(table, keys, columns)

    def delete_many(self, table: str, rows: Iterable[tuple[bytes, Sequence[bytes] | None]]) -> WriteCounts:
        done = super().delete_many(table, rows)
        self.delete_batches.append(done.rows)
        return done

    def scan(self, table: str, *, prefix: bytes | None = None, start: bytes | None = None,
             stop: bytes | None = None, columns: Sequence[bytes] | None = None, filter: str | None = None,
             limit: int | None = None) -> Iterator[tuple[bytes, Cells]]:
        bounds = (prefix, prefix + b"\xff") if prefix is not None else (start, stop)
        self.scans.append(ScanCall(table, bounds[0], bounds[1], filter))
        for item in super().scan(table, prefix=prefix, start=start, stop=stop, columns=columns, filter=filter,
                                 limit=limit):
            self.scanned[table] += 1
            yield item


class Killed(Exception):
    """What `DyingStore` raises: the process "died" at that write."""


class DyingStore(Store):
    """A real `Store` whose first write to `table` holding a cell whose column starts with
    `column_prefix` raises `Killed` before anything of it is written: a worker killed mid-pass."""

    def __init__(self, settings: Settings, *, table: str, column_prefix: bytes) -> None:
        super().__init__(settings)
        self.table, self.column_prefix, self.died = table, column_prefix, False

    def write(self, table: str, rows: Iterable[tuple[bytes, Mapping[bytes, bytes]]]) -> WriteCounts:
        rows = list(rows)
        if not self.died and table == self.table and any(
                name.startswith(self.column_prefix) for _key, cells in rows for name in cells):
            self.died = True
            raise Killed(f"killed at a write to {table} of {self.column_prefix!r}")
        return super().write(table, rows)
