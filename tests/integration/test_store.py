"""The storage layer against the real local HBase."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time

import pytest
from hbase_fixtures import hbase_local, side_gateway

from sitemapcrawl.config import Settings
from sitemapcrawl.errors import StoreUnavailableError, TableMissingError
from sitemapcrawl.model.webpage import BATCH_TABLE, BATCHROW_TABLE, DUE_TABLE, HISTORY_TABLE, HOST_TABLE, WEBPAGE_TABLE
from sitemapcrawl.storage.store import Store, WriteCounts


def test_create_tables_is_idempotent(settings: Settings) -> None:
    with Store(settings) as store:
        assert store.create_tables() == [WEBPAGE_TABLE, HOST_TABLE, BATCH_TABLE, HISTORY_TABLE, BATCHROW_TABLE,
                                         DUE_TABLE]
        assert store.create_tables() == []
        assert sorted(store.existing_tables()) == sorted(
            [WEBPAGE_TABLE, HOST_TABLE, BATCH_TABLE, HISTORY_TABLE, BATCHROW_TABLE, DUE_TABLE])


def test_write_read_and_scan(store: Store) -> None:
    rows = [(f"com.example:http/{i:05d}".encode(), {b"f:st": b"unfetched", b"m:dp": str(i).encode()})
            for i in range(2500)]
    rows.append((b"org.other:http/x", {b"f:st": b"fetched"}))
    counts = store.write(WEBPAGE_TABLE, rows)
    assert (counts.rows, counts.batches) == (2501, 3)

    assert store.row(WEBPAGE_TABLE, b"com.example:http/00042") == {b"f:st": b"unfetched", b"m:dp": b"42"}
    assert store.row(WEBPAGE_TABLE, b"com.example:http/nope") is None
    assert store.row(WEBPAGE_TABLE, b"com.example:http/00042", columns=[b"m:dp"]) == {b"m:dp": b"42"}

    found = store.rows(WEBPAGE_TABLE, [b"com.example:http/00001", b"missing", b"org.other:http/x"])
    assert sorted(found) == [b"com.example:http/00001", b"org.other:http/x"]

    keys = [key for key, _ in store.scan(WEBPAGE_TABLE, prefix=b"com.example:")]
    assert len(keys) == 2500 and keys == sorted(keys)
    assert [k for k, _ in store.scan(WEBPAGE_TABLE, prefix=b"org.")] == [b"org.other:http/x"]
    fetched = list(store.scan(
        WEBPAGE_TABLE, filter="SingleColumnValueFilter('f','st',=,'binary:fetched',true,true)"))
    assert [k for k, _ in fetched] == [b"org.other:http/x"]
    assert len(list(store.scan(WEBPAGE_TABLE, limit=10))) == 10


def test_put_merges_columns_and_keeps_one_version(store: Store) -> None:
    store.write(WEBPAGE_TABLE, [(b"k:http/", {b"f:st": b"unfetched", b"m:sc": b"1.0"})])
    store.write(WEBPAGE_TABLE, [(b"k:http/", {b"f:st": b"fetched"})])
    assert store.row(WEBPAGE_TABLE, b"k:http/") == {b"f:st": b"fetched", b"m:sc": b"1.0"}


def test_missing_table_says_run_init(settings: Settings) -> None:
    with Store(settings) as store:
        with pytest.raises(TableMissingError, match="sitemapcrawl init"):
            store.require_tables(WEBPAGE_TABLE)
        with pytest.raises(TableMissingError, match="sitemapcrawl init"):
            store.row(WEBPAGE_TABLE, b"x")


def test_unreachable_hbase_is_one_clear_error() -> None:
    with (Store(Settings(hbase="127.0.0.1:1")) as store,
          pytest.raises(StoreUnavailableError, match=r"127\.0\.0\.1:1.*Thrift1 gateway running there") as caught):
        store.existing_tables()
    # Not the local default address: no advice to start the local HBase (issue 12).
    assert "scripts/hbase-local" not in str(caught.value)


def test_a_store_that_never_answers_fails_within_the_call_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loopback socket that accepts and never replies: every call hangs until its socket timeout,
    and the retries stop at `hbase_call_timeout`, not after `hbase_retries` (100) attempts."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        monkeypatch.setenv("HBASE_LOCAL_THRIFT_PORT", str(port))  # the local HBase's address: name its logs
        monkeypatch.setenv("HBASE_LOCAL_DIR", "/srv/hb")
        settings = Settings(hbase=f"127.0.0.1:{port}", hbase_timeout_ms=500, hbase_call_timeout=2.0,
                            hbase_retries=100)
        began = time.monotonic()
        with Store(settings) as store, pytest.raises(StoreUnavailableError) as caught:
            store.write(WEBPAGE_TABLE, [(b"k:http/", {b"f:st": b"fetched"})])
        took = time.monotonic() - began
    message = str(caught.value)
    assert 2.0 <= took < 2.0 + 0.5 + 1.5, took  # the bound, the last call's timeout, some slack
    assert f"HBase at 127.0.0.1:{port} did not answer" in message and "/srv/hb/logs/master.log" in message
    assert "\n" not in message and "scripts/hbase-local status" in message


def test_thrift_restart_during_batched_write_loses_and_duplicates_nothing(settings: Settings) -> None:
    """Restart the Thrift server while a large batched write runs; count the rows after.

    The write goes through a gateway of its own, restarted by PID: the tests
    running beside this one keep the shared gateway."""
    total = 120_000
    with side_gateway(settings.hbase) as port, \
            Store(Settings(hbase=f"127.0.0.1:{port}", table_prefix=settings.table_prefix,
                           hbase_batch_size=500)) as store:
        store.create_tables()
        started = threading.Event()

        def rows():
            for i in range(total):
                if i == 20_000:
                    started.set()
                yield f"com.bulk:http/{i:07d}".encode(), {b"m:dp": str(i).encode(), b"f:st": b"unfetched"}

        outcome: dict[str, object] = {}

        def write() -> None:
            try:
                outcome["counts"] = store.write(WEBPAGE_TABLE, rows())
            except Exception as exc:  # noqa: BLE001 - reported by the assertion below
                outcome["error"] = exc

        writer = threading.Thread(target=write)
        writer.start()
        assert started.wait(300), "the write never got going"
        assert hbase_local("stop-thrift", str(port)).returncode == 0
        restarted = hbase_local("start-thrift", str(port))
        assert restarted.returncode == 0, restarted.stderr
        writer.join(600)
        assert "error" not in outcome, outcome.get("error")
        assert store.retries > 0, "the restart did not interrupt the write; the test proved nothing"

        seen = 0
        for key, cells in store.scan(WEBPAGE_TABLE, prefix=b"com.bulk:"):
            assert cells[b"m:dp"] == str(int(key.rsplit(b"/", 1)[1])).encode()
            seen += 1
        assert seen == total


def test_a_scan_whose_gateway_goes_after_its_last_row_ends_with_the_rows_asked_for(store: Store,
                                                                                 settings: Settings) -> None:
    """The gateway stops after a scan's `limit`-th row and before its scanner is closed: the scan
    is complete, so it ends. It used to reopen: failing here (the only gateway gone), and through a
    second gateway asking happybase for zero rows, a ValueError that killed a crawl."""
    keys = [f"com.limit:http/{n}".encode() for n in range(5)]
    store.write(WEBPAGE_TABLE, [(key, {b"f:st": b"1"}) for key in keys])
    with side_gateway(settings.hbase) as port, \
            Store(dataclasses.replace(settings, hbase=f"127.0.0.1:{port}", hbase_retries=2)) as side:
        rows = side.scan(WEBPAGE_TABLE, prefix=b"com.limit:", limit=3)
        first = [next(rows)[0] for _ in range(3)]  # one round trip: the scanner is still open
        assert hbase_local("stop-thrift", str(port)).returncode == 0
        assert list(rows) == []
    assert first == sorted(keys)[:3]


def test_delete_many_deletes_columns_and_rows_in_batches(settings: Settings) -> None:
    with Store(dataclasses.replace(settings, hbase_batch_size=2)) as store:
        store.create_tables()
        store.write(WEBPAGE_TABLE, [(f"k:{i}".encode(), {b"f:st": b"fetched", b"f:nft": b"x", b"m:dp": b"1"})
                                    for i in range(5)])
        done = store.delete_many(WEBPAGE_TABLE, [
            (b"k:0", [b"f:nft"]), (b"k:1", [b"f:nft", b"m:dp"]), (b"k:2", None), (b"k:3", []),
            (b"k:9", [b"f:nft"]),  # no such row: nothing happens
        ])
        assert (done.rows, done.batches) == (4, 2)  # the empty column list is no delete
        assert store.row(WEBPAGE_TABLE, b"k:0") == {b"f:st": b"fetched", b"m:dp": b"1"}
        assert store.row(WEBPAGE_TABLE, b"k:1") == {b"f:st": b"fetched"}
        assert store.row(WEBPAGE_TABLE, b"k:2") is None
        assert store.row(WEBPAGE_TABLE, b"k:3") == store.row(WEBPAGE_TABLE, b"k:4")
        assert store.delete_many(WEBPAGE_TABLE, iter([])) == WriteCounts(0, 0, 0)
        # Sending the same deletes again (a retried batch) leaves the same rows.
        store.delete_many(WEBPAGE_TABLE, [(b"k:0", [b"f:nft"]), (b"k:2", None)])
        assert store.row(WEBPAGE_TABLE, b"k:0") == {b"f:st": b"fetched", b"m:dp": b"1"}
        assert store.row(WEBPAGE_TABLE, b"k:2") is None


class _ScanCountingStore(Store):
    """A real `Store` that remembers how many rows each of its range scans returned."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.scanned: list[int] = []

    def _scan(self, table, start, stop, columns, filter, limit):  # type: ignore[no-untyped-def]
        rows = list(super()._scan(table, start, stop, columns, filter, limit))
        self.scanned.append(len(rows))
        return iter(rows)


def test_rows_reads_close_keys_by_range_scan_and_scattered_keys_by_gets(settings: Settings) -> None:
    with _ScanCountingStore(dataclasses.replace(settings, hbase_batch_size=100)) as store:
        store.create_tables()
        written = {f"k:{i:05d}".encode(): {b"f:st": b"fetched", b"m:dp": str(i).encode()} for i in range(3000)}
        for i in range(0, 3000, 7):  # some rows lack the column asked for below: absent, as with gets
            del written[f"k:{i:05d}".encode()][b"m:dp"]
        store.write(WEBPAGE_TABLE, written.items())

        dense = [f"k:{i:05d}".encode() for i in range(500, 800)]
        store.scanned.clear()
        assert store.rows(WEBPAGE_TABLE, dense) == {key: written[key] for key in dense}
        assert store.scanned == [100, 100, 100]  # three parts, each one scan of exactly its rows

        scattered = [f"k:{i:05d}".encode() for i in range(0, 3000, 29)]
        store.scanned.clear()
        assert store.rows(WEBPAGE_TABLE, scattered) == {key: written[key] for key in scattered}
        assert store.scanned and all(n <= 100 + 25 + 1 for n in store.scanned)  # bounded, then gets

        mixed = [b"k:99999", *dense[:40], b"a:missing", *scattered[::-1], dense[0], b"k:00100\x00"]
        found = store.rows(WEBPAGE_TABLE, mixed, columns=[b"m:dp"])
        assert found == {key: {b"m:dp": written[key][b"m:dp"]} for key in set(mixed)
                         if key in written and b"m:dp" in written[key]}
        assert store.rows(WEBPAGE_TABLE, []) == {}


def test_a_call_cut_short_by_ctrl_c_leaves_no_reply_for_the_next_call(settings: Settings) -> None:
    with Store(settings, pool_size=1) as store:  # one connection: the next call gets the same one
        store.create_tables()
        store.write(WEBPAGE_TABLE, [(b"k:1", {b"f:st": b"fetched"})])

        def interrupted(connection: object) -> None:
            connection.client._send("getTableNames")  # type: ignore[attr-defined]  # the request is out...
            raise KeyboardInterrupt  # ...and Ctrl-C comes before its reply is read

        with pytest.raises(KeyboardInterrupt):
            store._call("list tables", interrupted)
        assert store.row(WEBPAGE_TABLE, b"k:1") == {b"f:st": b"fetched"}
        assert store.rows(WEBPAGE_TABLE, [b"k:1"]) == {b"k:1": {b"f:st": b"fetched"}}
