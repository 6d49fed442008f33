"""Run `python -m sitemapcrawl ARGS` with every write and delete the store sends counted, per table.

Usage: `python benchmarks/counted_crawl.py COUNTS.json -- SITEMAPCRAWL ARGS...`. Before the command
line runs, the public write methods of `storage.store.Store` (`write`, `delete`, `delete_many`,
`check_and_put`) are wrapped in this process only (never in the product): each counts, per base
table name, the rows and cells it sends and their bytes (row key + `family:qualifier` + value per
cell, what HBase stores of a cell besides its timestamp and framing), and the deletes (rows, and
cells named; a whole-row delete counts as one). At exit the totals go to COUNTS.json.
Cost: one pass over each written row's cells (~1 µs a row; the crawler's CPU pays it, against it).
"""

from __future__ import annotations

import atexit
import json
import sys
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence

from sitemapcrawl.storage.store import Store, WriteCounts

_LOCK = threading.Lock()
_TOTALS: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))


def _add(table: str, **figures: int) -> None:
    with _LOCK:
        totals = _TOTALS[table]
        for name, value in figures.items():
            totals[name] += value


def _install(path: str) -> None:
    write, delete, delete_many, check_and_put = Store.write, Store.delete, Store.delete_many, Store.check_and_put

    def counted_write(self: Store, table: str, rows: Iterable[tuple[bytes, Mapping[bytes, bytes]]]) -> WriteCounts:
        tally = [0, 0, 0]  # rows, cells, bytes

        def counting() -> Iterator[tuple[bytes, Mapping[bytes, bytes]]]:
            for row in rows:
                key, cells = row
                tally[0] += 1
                tally[1] += len(cells)
                tally[2] += len(key) * len(cells) + sum(map(len, cells)) + sum(map(len, cells.values()))
                yield row

        try:
            return write(self, table, counting())
        finally:
            _add(table, put_rows=tally[0], put_cells=tally[1], put_bytes=tally[2], put_calls=1)

    def counted_delete(self: Store, table: str, key: bytes, columns: Sequence[bytes] | None = None) -> None:
        _add(table, delete_rows=1, delete_cells=len(columns) if columns is not None else 1)
        delete(self, table, key, columns)

    def counted_delete_many(self: Store, table: str,
                            rows: Iterable[tuple[bytes, Sequence[bytes] | None]]) -> WriteCounts:
        tally = [0, 0]

        def counting() -> Iterator[tuple[bytes, Sequence[bytes] | None]]:
            for key, columns in rows:
                tally[0] += 1
                tally[1] += len(columns) if columns is not None else 1
                yield key, columns

        try:
            return delete_many(self, table, counting())
        finally:
            _add(table, delete_rows=tally[0], delete_cells=tally[1])

    def counted_check_and_put(self: Store, table: str, key: bytes, column: bytes, expected: bytes | None,
                              value: bytes) -> bool:
        _add(table, put_rows=1, put_cells=1, put_bytes=len(key) + len(column) + len(value), put_calls=1)
        return check_and_put(self, table, key, column, expected, value)

    Store.write = counted_write  # type: ignore[method-assign]
    Store.delete = counted_delete  # type: ignore[method-assign]
    Store.delete_many = counted_delete_many  # type: ignore[method-assign]
    Store.check_and_put = counted_check_and_put  # type: ignore[method-assign]

    def dump() -> None:
        with open(path, "w", encoding="utf-8") as out:
            json.dump({table: dict(figures) for table, figures in _TOTALS.items()}, out, indent=1, sort_keys=True)

    atexit.register(dump)


def main() -> None:
    if len(sys.argv) < 3 or sys.argv[2] != "--":
        sys.exit("usage: counted_crawl.py COUNTS.json -- SITEMAPCRAWL ARGS...")
    _install(sys.argv[1])
    sys.argv = ["sitemapcrawl", *sys.argv[3:]]
    from sitemapcrawl.cli.app import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
