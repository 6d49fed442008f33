"""Fixtures for tests against the real local HBase (scripts/hbase-local).

Each test gets a table prefix of its own while it runs, so tests never see
each other's rows. A test that asks for `store` (or is marked `tables`) gets
a prefix whose tables exist and are empty: made by a background thread while earlier tests ran, or
used by an earlier test and emptied since (creating and dropping six tables
costs seconds of HBase time, deleting a test's rows a fraction of it); any
other test's tables are dropped afterwards. HBase must be running: `.ci/run` and
`scripts/test` start it. Set SITEMAPCRAWL_TEST_HBASE to use another address;
tests that drive scripts/hbase-local (its shell, a further Thrift gateway)
reach the instance its HBASE_LOCAL_* variables name, as the script does.
"""

from __future__ import annotations

import itertools
import os
import queue
import re
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sitemapcrawl.config import Settings
from sitemapcrawl.model.webpage import TABLE_NAMES
from sitemapcrawl.storage.store import Store

REPO = Path(__file__).resolve().parents[1]
HBASE_LOCAL = REPO / "scripts" / "hbase-local"
# Where scripts/hbase-local keeps its jars and which Thrift port it serves, under the
# same variables and defaults as the script: a test runner may use an instance of its own.
HBASE_LOCAL_LIB = Path(os.environ.get("HBASE_LOCAL_LIB")
                       or Path(os.environ.get("HBASE_LOCAL_DIR") or REPO / ".hbase-local") / "lib")
HBASE_LOCAL_ADDRESS = (f"{os.environ.get('HBASE_LOCAL_HOST') or '127.0.0.1'}:"
                       f"{os.environ.get('HBASE_LOCAL_THRIFT_PORT') or '9090'}")


@pytest.fixture(scope="session")
def hbase_address() -> str:
    """HOST:PORT of a running HBase Thrift server; fails the test when none answers."""
    address = os.environ.get("SITEMAPCRAWL_TEST_HBASE", "127.0.0.1:9090")
    store = Store(Settings(hbase=address, hbase_retries=2))
    try:
        store.existing_tables()
    except Exception as exc:  # noqa: BLE001 - any failure means "not running"
        pytest.fail(f"no HBase at {address} ({exc}); start it with scripts/hbase-local start")
    finally:
        store.close()
    return address


class TableDropper:
    """Drops (or empties for reuse) the tables of finished tests on a thread of its own, while the next test runs.

    Dropping a test's six tables (disable, delete) takes HBase seconds, nearly
    all of it waiting on the master's procedures, and making them again as
    much; each prefix is used by one test at a time, so nothing reads it
    again and the work can overlap later work. A prefix from `TablePool`
    is emptied instead and given back to the pool (`recycle_later`): deleting
    a test's few rows costs HBase a fraction of a drop and a create. `finish`
    waits for every drop and fails loudly if one failed.
    """

    def __init__(self, hbase_address: str) -> None:
        self._address = hbase_address
        self._queue: queue.Queue[tuple[str, TablePool | None, float] | None] = queue.Queue()
        self._failures: list[str] = []
        self._thread = threading.Thread(target=self._run, name="table-dropper", daemon=True)
        self._thread.start()

    def drop_later(self, prefix: str) -> None:
        self._queue.put((prefix, None, 0.0))

    def recycle_later(self, prefix: str, pool: TablePool) -> None:
        """Empty the prefix's tables and give it back to `pool`, or drop them when they cannot be reused."""
        self._queue.put((prefix, pool, time.monotonic() + RECYCLE_AFTER))

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            prefix, pool, not_before = item
            try:
                with Store(Settings(hbase=self._address, table_prefix=prefix)) as store:
                    if pool is not None:
                        time.sleep(max(0.0, not_before - time.monotonic()))
                        if pool.empty_for_reuse(store) and pool.give_back(prefix):
                            continue
                    store.drop_tables()
            except Exception as exc:  # noqa: BLE001 - reported at the end of the session
                self._failures.append(f"{prefix}: {exc}")

    def finish(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=600)
        assert not self._thread.is_alive(), "tables still being dropped after 600 s"
        assert self._failures == [], f"tables not dropped: {self._failures}"


RECYCLE_AFTER = 2.0
"""Seconds a finished test's tables rest before they are emptied: a process the test killed has exited."""

REUSE_AT_MOST = 5000
"""Rows in a table past which it is dropped rather than emptied row by row (deletes cost like puts)."""


class TablePool:
    """Hands each test that asks for `store` (or is marked `tables`) a prefix whose tables exist and are empty.

    A prefix is new (a uuid, its tables made on a thread of its own, one set
    ahead, while the test before runs) or one an earlier test of this worker
    used, emptied since (`empty_for_reuse`), so a test never sees another's
    rows. A prefix is reused only while its tables are as made: the six of
    them, one region each, the families of a fresh set. The thread starts at
    the first `take` (a worker running only unit tests creates nothing).
    `finish` hands every set left to the dropper.
    """

    def __init__(self, hbase_address: str, dropper: TableDropper) -> None:
        self._address = hbase_address
        self._dropper = dropper
        self._ready: queue.Queue[str | BaseException] = queue.Queue(maxsize=1)
        self._emptied: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._families: dict[str, dict[str, dict[str, object]]] = {}
        """Table base name -> its families as a fresh set has them (read from the first set made)."""
        self._stop = threading.Event()
        self._closing = threading.Lock()
        """Held while a prefix is given back, and while `finish` stops the pool: none slips in after."""
        self._thread: threading.Thread | None = None

    def take(self) -> str:
        """A prefix whose tables exist and are empty, for one test."""
        try:
            return self._emptied.get_nowait()
        except queue.Empty:
            pass
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="table-pool", daemon=True)
            self._thread.start()
        made = self._ready.get(timeout=600)
        if isinstance(made, BaseException):
            raise made
        return made

    def give_back(self, prefix: str) -> bool:
        """An emptied prefix, for the next test that asks; False when the pool is finished (the caller drops it:
        the last tests' tables are emptied after the session's end, and would be left behind)."""
        with self._closing:
            if self._stop.is_set():
                return False
            self._emptied.put(prefix)
            return True

    def empty_for_reuse(self, store: Store) -> bool:
        """Delete every row of the store's tables if they are as made and small. False when they are not
        (nothing deleted), or when a row is there after the deletes (something still writes): the
        caller drops them."""
        if not self._families or sorted(store.existing_tables()) != sorted(TABLE_NAMES):
            return False
        keys: dict[str, list[bytes]] = {}
        for base in TABLE_NAMES:
            if store.families(base) != self._families[base] or len(store.regions(base)) != 1:
                return False
            keys[base] = [key for key, _ in store.scan(base, filter="KeyOnlyFilter() AND FirstKeyOnlyFilter()",
                                                       limit=REUSE_AT_MOST + 1)]
            if len(keys[base]) > REUSE_AT_MOST:
                return False
        for base, found in keys.items():
            store.delete_many(base, [(key, None) for key in found])
        return all(next(iter(store.scan(base, limit=1)), None) is None for base in TABLE_NAMES)

    def _run(self) -> None:
        while not self._stop.is_set():
            prefix = f"t_pool_{uuid.uuid4().hex[:10]}_"
            try:
                with Store(Settings(hbase=self._address, table_prefix=prefix)) as store:
                    store.create_tables()
                    if not self._families:
                        self._families = {base: store.families(base) for base in TABLE_NAMES}
            except Exception as exc:  # noqa: BLE001 - raised in the test that takes it
                self._dropper.drop_later(prefix)
                self._ready.put(exc)
                continue
            while not self._stop.is_set():
                try:
                    self._ready.put(prefix, timeout=0.5)
                    break
                except queue.Full:
                    continue
            else:
                self._dropper.drop_later(prefix)

    def finish(self) -> None:
        with self._closing:
            self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=600)
        while not self._ready.empty():
            left = self._ready.get_nowait()
            if isinstance(left, str):
                self._dropper.drop_later(left)
        while not self._emptied.empty():
            self._dropper.drop_later(self._emptied.get_nowait())


@pytest.fixture(scope="session")
def table_dropper(hbase_address: str) -> Iterator[TableDropper]:
    """The session's background dropper of finished tests' tables."""
    dropper = TableDropper(hbase_address)
    yield dropper
    dropper.finish()


@pytest.fixture(scope="session")
def table_pool(hbase_address: str, table_dropper: TableDropper) -> Iterator[TablePool]:
    """The session's background maker of tables for the tests that ask for `store`."""
    pool = TablePool(hbase_address, table_dropper)
    yield pool
    pool.finish()


@pytest.fixture
def table_prefix(request: pytest.FixtureRequest, table_dropper: TableDropper) -> Iterator[str]:
    """A table prefix for this test alone while it runs; afterwards (in the background) its tables are
    emptied for a later test or dropped.

    A test that asks for `store`, or is marked `tables`, gets a prefix whose
    tables exist and are empty (`TablePool`); any other gets a new one with
    no tables, as `init` tests need.
    """
    if "store" in request.fixturenames or request.node.get_closest_marker("tables") is not None:
        pool: TablePool = request.getfixturevalue("table_pool")
        prefix = pool.take()
        yield prefix
        table_dropper.recycle_later(prefix, pool)
    else:
        name = re.sub(r"[^A-Za-z0-9]+", "_", request.node.name)[:40]
        prefix = f"t_{name}_{uuid.uuid4().hex[:6]}_"
        yield prefix
        table_dropper.drop_later(prefix)


@pytest.fixture
def settings(hbase_address: str, table_prefix: str) -> Settings:
    """Settings pointing at the test HBase and this test's tables."""
    return Settings(hbase=hbase_address, table_prefix=table_prefix)


@pytest.fixture
def store(settings: Settings) -> Iterator[Store]:
    """A store on this test's prefix, with the tables created (by `TablePool`, ahead of the test)."""
    with Store(settings) as opened:
        opened.create_tables()  # all exist already: one round trip that checks it
        yield opened


def run_shell_file(path: Path, table_prefix: str = "") -> str:
    """Run an HBase shell script file through `scripts/hbase-local shell FILE`.

    Returns what it printed; raises AssertionError with the output when the
    shell exits non-zero, or when its class-data archive could not be made.
    """
    env = dict(os.environ, SITEMAPCRAWL_TABLE_PREFIX=table_prefix)
    done = subprocess.run(
        [str(HBASE_LOCAL), "shell", str(path)], capture_output=True, text=True, env=env, timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"hbase shell failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    assert_archive_not_failed("shell")
    return done.stdout


def assert_archive_not_failed(kind: str) -> None:
    """Fail when `scripts/hbase-local` could not make the class-data archive of `kind` (shell,
    thrift): it leaves the JVM's log as `cds/KIND.failed` and starts such JVMs without one."""
    failed = HBASE_LOCAL_LIB / "cds" / f"{kind}.failed"
    assert not failed.exists(), f"the {kind} class-data archive could not be made:\n{failed.read_text()[-2000:]}"


def hbase_shell(script: str, table_prefix: str = "") -> str:
    """Run HBase shell commands non-interactively; return what they printed."""
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"shell-{uuid.uuid4().hex}.rb"
    path.write_text(script + "\nexit\n", encoding="utf-8")
    try:
        return run_shell_file(path, table_prefix)
    finally:
        path.unlink()


PORT_BAND = 400
"""How many ports each test worker takes its servers' ports from (`free_port`)."""


def ephemeral_low() -> int:
    """The lowest port the OS hands out by itself (bind to 0, a connection's own end)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _worker_band() -> range:
    """This test worker's own ports: a band below the ephemeral range, one per xdist worker (gwN)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    top = ephemeral_low() - index * PORT_BAND
    assert top - PORT_BAND > 1024, f"no room for worker {worker}'s ports below {ephemeral_low()}"
    return range(top - PORT_BAND, top)


_turns = itertools.count(os.getpid())
"""This process's turn through its band (`free_port`): it starts at the pid, so a rerun soon after starts
elsewhere in the band."""


def free_port() -> int:
    """A TCP port free on loopback now, for a server a test starts (or a port nothing answers on).

    Taken in turn from this worker's own band, below the OS's ephemeral range. A port the OS picked
    (bind to 0) and released can be picked again, by another worker's probe or as a connection's own
    end, before the server meant for it binds it; and a stopped gateway's port handed to another
    worker's new ZooKeeper turns a test's "nothing answers here" into Thrift calls to that ZooKeeper
    (both seen in CI: a cluster's Thrift server that never bound its port). No other worker, and no
    port the OS hands out, is ever in this band; a port is reused only after the whole band.
    """
    band = _worker_band()
    for turn in itertools.islice(_turns, len(band)):
        port = band[turn % len(band)]
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise AssertionError(f"no free port in {band.start}-{band.stop - 1}")


QUICK_JVM_FLAGS = "-XX:TieredStopAtLevel=1"
"""The JVM flags of the servers tests start themselves (side gateways, instances of their own): the C1
compiler alone. They live seconds to minutes, so compiling less costs less than the slower code (a
Thrift gateway's start: 3.7 s of CPU against 6.2 s); the shared instance keeps the full JIT."""


def hbase_local(*args: str, env: dict[str, str] | None = None,
                timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run `scripts/hbase-local ARGS` (with `env`, or this process's environment; servers it starts get
    `QUICK_JVM_FLAGS` unless the environment names others); never raises on failure."""
    env = dict(os.environ if env is None else env)
    env.setdefault("HBASE_LOCAL_JAVA_OPTS", QUICK_JVM_FLAGS)
    return subprocess.run([str(HBASE_LOCAL), *args], capture_output=True, text=True, env=env, timeout=timeout,
                          stdin=subprocess.DEVNULL)


@contextmanager
def side_gateway(hbase_address: str, *flags: str) -> Iterator[int]:
    """A further Thrift1 gateway (`start-thrift PORT FLAGS`) to the local HBase; its port.

    Stopped by its PID afterwards. A test that restarts or breaks a gateway
    uses one of these, so tests running beside it keep theirs. Skips the test
    when `hbase_address` is not the instance scripts/hbase-local manages here.
    """
    if hbase_address != HBASE_LOCAL_ADDRESS:
        pytest.skip(f"a side gateway is started next to the local HBase of scripts/hbase-local "
                    f"({HBASE_LOCAL_ADDRESS}), not {hbase_address}")
    port = free_port()
    started = hbase_local("start-thrift", str(port), *flags)
    try:
        assert started.returncode == 0, started.stderr
        assert_archive_not_failed("thrift")
        yield port
    finally:
        hbase_local("stop-thrift", str(port), timeout=120)
