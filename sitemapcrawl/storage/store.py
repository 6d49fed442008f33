"""HBase access: `Store`, the only class that talks to HBase (through happybase).

`Store` offers what jobs need and no more: create the tables, batched writes,
reads of one or many rows, and scans (by key prefix or range, with only the
columns asked for). It speaks bytes: keys and cells are built by `web.urls`
and `model.cells`; what reaches past happybase's public API is in `_happybase`.
Failures of the wire are retried after reconnecting, bounded in count and
time (`hbase_retries`, `hbase_call_timeout`; each call ends after
`hbase_timeout_ms`), at once through another gateway when there are several.
That is safe because every write is an idempotent put, and a broken scan
resumes after the last row it returned. After the last attempt the error is
`StoreUnavailableError` (exit code 2, naming the address and the log to
read); a permanent refusal (`failures`) fails at once. docs/reliability.md.

Cost: one Thrift round trip per call (per batch of rows for a scan), plus retries.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import happybase
from thriftpy2.thrift import TException

from sitemapcrawl.config import Settings
from sitemapcrawl.errors import StoreRejectedError, StoreUnavailableError, TableMissingError
from sitemapcrawl.model.webpage import TABLE_NAMES, TABLES
from sitemapcrawl.storage._happybase import (
    BAD_REPLIES,
    GATEWAY_FAILURES,
    BatchMutation,
    Mutation,
    Pool,
    check_and_put,
    discard,
    mutate_rows,
)
from sitemapcrawl.storage.failures import (
    as_text,
    check_key,
    check_table_prefix,
    classify,
    create_refusal,
    how_to_reach,
    server_message,
)
from sitemapcrawl.storage.gateways import Gateways

#: Fewest keys `Store.rows` tries to read as one range scan (below, a multi-get is as cheap).
DENSE_READ_MIN = 16

log = logging.getLogger(__name__)

Cells = dict[bytes, bytes]
T = TypeVar("T")


@dataclass(frozen=True)
class WriteCounts:
    """What a batched write did: rows sent, round trips, retried batches."""

    rows: int
    batches: int
    retries: int


class Store:
    """A pool of Thrift connections to one HBase (through one or several gateways), with retries.

    Nothing touches the network until the first operation. Thread-safe: each
    thread takes its own connection from the pool (size `pool_size`). With
    several gateways the connections spread over them (`gateways`).
    """

    def __init__(self, settings: Settings, pool_size: int = 4) -> None:
        self.address = settings.hbase
        self._gateways = Gateways(settings.hbase_gateways)
        self._timeout_ms = settings.hbase_timeout_ms
        self._attempts = max(1, settings.hbase_retries)
        self._call_timeout = settings.hbase_call_timeout
        self._batch_size = max(1, settings.hbase_batch_size)
        self._max_bytes = settings.max_row_bytes
        check_table_prefix(settings.table_prefix)
        self._prefix = settings.table_prefix
        self._transport = settings.hbase_transport
        self._protocol = settings.hbase_protocol
        self._how_to_start = how_to_reach(settings)
        self._pool_size = pool_size
        self._pool: Pool | None = None
        self._connected_once = False
        self._answered_once = False
        self.retries = 0
        """Operations retried after a wire error, since this store was made."""

    @property
    def batch_size(self) -> int:
        """Rows per round trip (`hbase_batch_size`): what callers that read in chunks should use."""
        return self._batch_size

    @property
    def max_row_bytes(self) -> int:
        """Most bytes of one row and of one write call (`max_row_bytes`): what a big value is spread below."""
        return self._max_bytes

    def _attempts_now(self, error: BaseException | None = None) -> int:
        # An HBase that never answered is most likely not running: say so
        # quickly. One that answered before is worth waiting for (a restart).
        # A reply that is not HBase's from one never heard right is a wrong address or protocol.
        if isinstance(error, BAD_REPLIES) and not self._answered_once:
            return min(2, self._attempts)
        return self._attempts if self._connected_once else min(2, self._attempts)

    # ---------------------------------------------------------- plumbing --

    def table_name(self, table: str) -> str:
        """The real HBase table name for a base name (`webpage` -> prefix + `webpage`)."""
        return self._prefix + table

    def _get_pool(self) -> Pool:
        if self._pool is None:
            self._pool = Pool(self._pool_size, self._gateways, timeout=self._timeout_ms,
                              transport=self._transport, protocol=self._protocol)
        return self._pool

    def _fail_over(self, error: BaseException, hops: int) -> bool:
        """Retry at once on another gateway? Yes for a wire error while another gateway is up (at most one
        hop per gateway per call); the pool has already moved the failed connection to the next gateway."""
        return (isinstance(error, GATEWAY_FAILURES) and self._gateways.several
                and hops < len(self._gateways.all) and self._gateways.any_up())

    def _call(self, what: str, operation: Callable[[happybase.Connection], T]) -> T:
        """Run `operation` on a pooled connection, retrying wire errors with backoff (or at once on another
        gateway), in bounded time."""
        pause = 0.25
        started = time.monotonic()
        attempt = hops = 0
        while True:
            try:
                with self._get_pool().connection() as connection:
                    self._connected_once = True
                    try:
                        answer = operation(connection)
                    except BaseException as exc:
                        _drop_if_interrupted(connection, exc)
                        raise
                    self._answered_once = True
                    return answer
            except GATEWAY_FAILURES + (TException,) as exc:
                error: BaseException = exc
                self._raise_if_permanent(what, exc)
            if self._fail_over(error, hops):
                hops += 1
                self.retries += 1
                continue
            attempt += 1
            if attempt >= self._attempts_now(error) or self._out_of_time(started, pause):
                raise self._gave_up(what, attempt + hops, started, error) from None
            log.info("HBase %s failed (%s); retry %d in %.2fs", what, server_message(error), attempt, pause)
            self.retries += 1
            time.sleep(pause)
            pause = min(pause * 2, 5.0)

    def _out_of_time(self, started: float, pause: float) -> bool:
        """Whether a retry after `pause` would start past `hbase_call_timeout` (counted from `started`)."""
        return time.monotonic() + pause - started >= self._call_timeout

    def _gave_up(self, what: str, attempts: int, started: float, error: BaseException) -> StoreUnavailableError:
        """The one line for an operation that failed every attempt: HBase, what failed, how long, where to look."""
        answer = ("answered with what is not HBase's Thrift1" if isinstance(error, BAD_REPLIES)
                  else "did not answer")
        return StoreUnavailableError(
            f"HBase at {self.address} {answer} ({what} failed {attempts} times in "
            f"{time.monotonic() - started:.0f}s: {type(error).__name__}: {server_message(error)}); "
            f"{self._how_to_start}")

    def _raise_if_permanent(self, what: str, exc: BaseException) -> None:
        """Raise the one-line error for a failure no retry can cure; return otherwise."""
        reason = classify(exc)
        if reason is None:
            return
        if reason in ("table missing", "namespace missing"):
            raise TableMissingError(
                f"{what}: {reason} in HBase at {self.address}; run `sitemapcrawl init`") from None
        raise StoreRejectedError(f"{what}: HBase at {self.address} refused it: {reason}") from None

    def close(self) -> None:
        """Close every pooled connection (the store may be used again after)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------ tables --

    def existing_tables(self) -> list[str]:
        """Base names of our tables that exist (one round trip)."""
        names = {n.decode() for n in self._call("list tables", lambda c: c.tables())}
        return [base for base in TABLE_NAMES if self.table_name(base) in names]

    def create_tables(self, compression: str = "NONE") -> list[str]:
        """Create the tables that are missing, with their families: the registry `model.webpage.TABLES`.

        `compression` is HBase's name for the families' block compression
        (NONE, GZ, SNAPPY...): the cluster checks that it can use it, and a
        refusal (or a missing namespace) raises StoreRejectedError at once,
        one line with the server's first line and what to do. Returns the
        base names created; an empty list means all existed and nothing
        changed. Costs one round trip plus one per table created.
        """
        created = []
        existing = set(self.existing_tables())
        for table in TABLES:
            base, families = table.name, table.families
            if base in existing:
                continue
            options = {
                family.name: {
                    "max_versions": family.max_versions,
                    "block_cache_enabled": family.block_cache_enabled,
                    "bloom_filter_type": family.bloom_filter_type,
                    "compression": compression,
                }
                for family in families
            }
            name = self.table_name(base)

            def create(connection: happybase.Connection, name: str = name, options: dict = options) -> None:
                try:
                    connection.create_table(name, options)
                except TException as exc:
                    # A retry after a lost reply finds the table made: that is success.
                    exists = type(exc).__name__ == "AlreadyExists"  # Thrift's own answer to a second create
                    if not exists and "TableExistsException" not in server_message(exc, limit=2000):
                        refusal = create_refusal(exc, name, self.address)
                        if refusal is not None:
                            raise refusal from None
                        raise

            self._call(f"create table {name}", create)
            created.append(base)
        return created

    def regions(self, table: str) -> list[tuple[bytes, bytes, str]]:
        """The table's regions as (start key, end key, server), in key order (one round trip)."""
        name = self.table_name(table)
        found = self._call(f"regions of {name}", lambda c: c.table(name).regions())
        return [(r["start_key"], r["end_key"], f"{as_text(r.get('server_name', b''))}:{r.get('port', 0)}")
                for r in found]

    def require_tables(self, *bases: str) -> None:
        """Raise TableMissingError (saying to run init) unless these tables exist."""
        existing = set(self.existing_tables())
        missing = [self.table_name(b) for b in bases if b not in existing]
        if missing:
            raise TableMissingError(
                f"table {', '.join(missing)} missing in HBase at {self.address}; run `sitemapcrawl init`"
            )

    def families(self, table: str) -> dict[str, dict[str, object]]:
        """Family name -> options as HBase reports them (one round trip)."""
        name = self.table_name(table)
        raw = self._call(f"describe {name}", lambda c: c.table(name).families())
        return {family.decode(): dict(options) for family, options in raw.items()}

    def drop_tables(self) -> list[str]:
        """Disable and delete this prefix's tables (tests and `init --drop`)."""
        dropped = []
        for base in self.existing_tables():
            name = self.table_name(base)
            self._call(f"drop table {name}", functools.partial(_drop, name=name))
            dropped.append(base)
        return dropped

    # ------------------------------------------------------------ writes --

    def write(self, table: str, rows: Iterable[tuple[bytes, Mapping[bytes, bytes]]]) -> WriteCounts:
        """Put rows in batches of `hbase_batch_size` rows and at most `max_row_bytes` bytes (a larger row goes
        alone); a failed batch is sent again.

        Streams: holds one batch in memory, whatever the length of `rows`.
        Cells of a row are merged with what the row has (a put per column).
        """
        name = self.table_name(table)
        sent = batches = size = 0
        retries_before = self.retries
        chunk: list[tuple[bytes, Mapping[bytes, bytes]]] = []
        for row in rows:
            check_key(row[0], f"write to {name}")
            row_size = _row_bytes(row)
            if chunk and size + row_size > self._max_bytes:
                self._send(name, chunk)
                sent, batches, chunk, size = sent + len(chunk), batches + 1, [], 0
            chunk.append(row)
            size += row_size
            if len(chunk) >= self._batch_size:
                self._send(name, chunk)
                sent, batches, chunk, size = sent + len(chunk), batches + 1, [], 0
        if chunk:
            self._send(name, chunk)
            sent += len(chunk)
            batches += 1
        return WriteCounts(sent, batches, self.retries - retries_before)

    def _send(self, name: str, chunk: Sequence[tuple[bytes, Mapping[bytes, bytes]]]) -> None:
        # The Thrift call happybase's Batch.send makes, with the mutations built in one pass: Batch.put
        # copies each row's cells into per-row lists first, which cost ~10% of an inventory's Python time.
        # A cell repeated on many rows of the chunk (a status, a batch mark, a schedule) is one Mutation:
        # it is only read, to be serialised (half the cost per cell where most cells repeat).
        made: dict[tuple[bytes, bytes], Mutation] = {}
        rows = []
        for key, cells in chunk:
            if not cells:
                continue
            mutations = []
            for cell in cells.items():
                mutation = made.get(cell)
                if mutation is None:
                    mutation = made[cell] = Mutation(False, cell[0], cell[1], True)
                mutations.append(mutation)
            rows.append(BatchMutation(key, mutations))
        if not rows:
            return
        table = name.encode()

        def send(connection: happybase.Connection) -> None:
            mutate_rows(connection, table, rows)

        self._call(f"write {len(chunk)} rows to {name}", send)

    def delete(self, table: str, key: bytes, columns: Sequence[bytes] | None = None) -> None:
        """Delete some columns of a row (all of it when `columns` is None)."""
        name = self.table_name(table)
        check_key(key, f"delete from {name}")
        self._call(f"delete from {name}", lambda c: c.table(name).delete(key, columns=columns))

    def delete_many(self, table: str, rows: Iterable[tuple[bytes, Sequence[bytes] | None]]) -> WriteCounts:
        """Delete cells of many rows: (key, columns) pairs, a whole row when columns is None.

        One round trip per `hbase_batch_size` rows, like `write`; a failed
        batch is sent again, which is safe: deleting twice leaves the same
        row. An empty column list deletes nothing. Streams: holds one batch.
        Mind HBase's timestamps: a delete and a put of the same column in
        the same millisecond leave the delete winning, so never delete a
        column that a put just sent.
        """
        name = self.table_name(table)
        sent = batches = 0
        retries_before = self.retries
        chunk: list[tuple[bytes, Sequence[bytes] | None]] = []
        for key, columns in rows:
            if columns is not None and not columns:
                continue
            chunk.append((key, columns))
            if len(chunk) >= self._batch_size:
                self._send_deletes(name, chunk)
                sent, batches, chunk = sent + len(chunk), batches + 1, []
        if chunk:
            self._send_deletes(name, chunk)
            sent, batches = sent + len(chunk), batches + 1
        return WriteCounts(sent, batches, self.retries - retries_before)

    def _send_deletes(self, name: str, chunk: Sequence[tuple[bytes, Sequence[bytes] | None]]) -> None:
        def send(connection: happybase.Connection) -> None:
            batch = connection.table(name).batch()
            for key, columns in chunk:
                batch.delete(key, columns=columns)
            batch.send()

        self._call(f"delete from {len(chunk)} rows of {name}", send)

    def check_and_put(self, table: str, key: bytes, column: bytes, expected: bytes | None, value: bytes) -> bool:
        """Put `value` in one cell if it holds `expected` now (None: if it is absent); atomic.

        HBase's checkAndPut through Thrift1: of two callers expecting the same
        value, exactly one wins. Returns whether the put was made. One round
        trip. A wire error is retried: a retry after a lost reply may find the
        cell already holding `value`, which counts as a win.
        """
        name = self.table_name(table)
        check_key(key, f"check-and-put in {name}")

        def attempt(connection: happybase.Connection) -> bool:
            if check_and_put(connection, name.encode(), key, column, expected, value):
                return True
            now = connection.table(name).row(key, columns=[column]).get(column)
            return now == value

        return bool(self._call(f"check-and-put in {name}", attempt))

    # ------------------------------------------------------------- reads --

    def row(self, table: str, key: bytes, columns: Sequence[bytes] | None = None) -> Cells | None:
        """One row's cells, or None when the row does not exist (one round trip)."""
        name = self.table_name(table)
        check_key(key, f"read from {name}")
        cells = self._call(f"read from {name}", lambda c: c.table(name).row(key, columns=columns))
        return cells or None

    def rows(self, table: str, keys: Sequence[bytes], columns: Sequence[bytes] | None = None) -> dict[bytes, Cells]:
        """Cells of many rows by key, in about one round trip per `hbase_batch_size` keys.

        Rows that do not exist are absent from the result. The keys are read
        in sorted order, `hbase_batch_size` at a time. Where they lie close
        together (a batch's rows of one host, a sitemap's URLs), a part is
        read as one range scan from its first key to its last, which the
        server answers faster than the same keys as gets (a multi-get is one
        random read per key). The scan
        stops after a quarter more rows than wanted; when the range holds
        more rows than that (the keys are scattered in a large table), the
        keys it did not reach are read as gets. So a part costs at most its
        gets plus a scan of 1.25 times its size, and a dense part one scan.
        """
        name = self.table_name(table)
        wanted = sorted(set(keys))
        for key in wanted:
            check_key(key, f"read from {name}")
        found: dict[bytes, Cells] = {}
        for start in range(0, len(wanted), self._batch_size):
            part = wanted[start : start + self._batch_size]
            rest = part
            if len(part) >= DENSE_READ_MIN:
                budget = len(part) + len(part) // 4 + 1
                scanned = list(self._scan(table, part[0], part[-1] + b"\x00", columns, None, budget))
                members = set(part)
                found.update((key, cells) for key, cells in scanned if key in members and cells)
                reached = scanned[-1][0] if len(scanned) >= budget else part[-1]
                rest = [key for key in part if key > reached]
            if rest:
                read = functools.partial(_read_rows, name=name, keys=rest, columns=columns)
                result = self._call(f"read from {name}", read)
                found.update((key, cells) for key, cells in result if cells)
        return found

    def scan(
        self,
        table: str,
        *,
        prefix: bytes | None = None,
        start: bytes | None = None,
        stop: bytes | None = None,
        columns: Sequence[bytes] | None = None,
        filter: str | None = None,
        limit: int | None = None,
    ) -> Iterator[tuple[bytes, Cells]]:
        """Rows in key order, `hbase_batch_size` per round trip.

        `prefix` or `start`/`stop` bound the keys; `filter` is an HBase filter
        string evaluated by the server; `columns` limits the cells fetched. A
        scan broken by a wire error reopens after the last row returned. The
        server expires an idle scanner (2 minutes here): do not do slow work
        between rows; read what you need first.
        """
        if prefix is not None:
            if start is not None or stop is not None:
                raise ValueError("scan: give prefix, or start/stop, not both")
            start, stop = prefix, _prefix_end(prefix)
        return self._scan(table, start, stop, columns, filter, limit)

    def _scan(self, table: str, start: bytes | None, stop: bytes | None, columns: Sequence[bytes] | None,
              filter: str | None, limit: int | None) -> Iterator[tuple[bytes, Cells]]:
        """`scan` within bounds, for `scan` and `rows` (so a subclass counting scans sees each read once)."""
        name = self.table_name(table)
        returned = 0
        last: bytes | None = None
        pause = 0.25
        failures = hops = 0
        failing_since = 0.0  # when the scan last stopped making progress (its first failure after a row)
        last_at_failure: bytes | None = b""  # no key is empty: the first failure starts the clock
        while True:
            resume = start if last is None else last + b"\x00"
            try:
                with self._get_pool().connection() as connection:
                    self._connected_once = True
                    scanner = connection.table(name).scan(
                        row_start=resume, row_stop=stop, columns=columns, filter=filter,
                        batch_size=self._batch_size,
                        limit=None if limit is None else limit - returned,
                    )
                    try:
                        for key, cells in scanner:
                            last = key
                            returned += 1
                            yield key, cells
                    except BaseException as exc:
                        _drop_if_interrupted(connection, exc)
                        raise
                return
            except GATEWAY_FAILURES + (TException,) as exc:
                if limit is not None and returned >= limit:
                    # Every row asked for was read; what broke is the closing of the scanner (the server
                    # expires it). Reopening would ask for no row at all.
                    log.info("scan of %s: closing the scanner failed after its last row (%s)", name,
                             server_message(exc))
                    return
                self._raise_if_permanent(f"scan {name}", exc)
                if self._fail_over(exc, hops):
                    hops += 1
                    self.retries += 1
                    log.info("scan of %s broke (%s); resuming after %r on another gateway", name,
                             server_message(exc), last)
                    continue
                failures += 1
                if last != last_at_failure:
                    failing_since, last_at_failure = time.monotonic(), last
                if failures >= self._attempts_now(exc) or self._out_of_time(failing_since, pause):
                    raise self._gave_up(f"scan {name}", failures + hops, failing_since, exc) from None
                log.info("scan of %s broke (%s); resuming after %r", name, server_message(exc), last)
                self.retries += 1
                time.sleep(pause)
                pause = min(pause * 2, 5.0)


def _row_bytes(row: tuple[bytes, Mapping[bytes, bytes]]) -> int:
    """About what a row weighs on the wire: its key, values and a few dozen bytes per cell (qualifier, framing)."""
    key, cells = row
    return len(key) + sum(map(len, cells.values())) + 48 * len(cells)


def _drop_if_interrupted(connection: happybase.Connection, error: BaseException) -> None:
    """Discard a pooled connection whose call was cut short by Ctrl-C (KeyboardInterrupt, SystemExit...).

    Its request may have gone out with the reply still on the way, or half
    read: the next call on that socket would read it as its own. It is
    closed and given fresh transport objects (`_happybase.discard`); the
    pool opens it again for the next call. A scan its reader stopped early
    (GeneratorExit) closed its scanner: nothing is on the way.
    """
    if not isinstance(error, Exception | GeneratorExit):
        discard(connection)


def _drop(connection: happybase.Connection, name: str) -> None:
    connection.delete_table(name, disable=True)


def _read_rows(
    connection: happybase.Connection, name: str, keys: list[bytes], columns: Sequence[bytes] | None
) -> list[tuple[bytes, Cells]]:
    return list(connection.table(name).rows(keys, columns=columns))


def _prefix_end(prefix: bytes) -> bytes | None:
    """The first key after every key starting with `prefix` (None: no end)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])
