"""`scripts/hbase-local start --regionservers N`: a cluster-shaped HBase of its own.

Starts a separate instance (its own folder and ports, the shared jars) with
two RegionServers, pre-splits a table over them, kills the RegionServer of
one region while rows are written, and checks that every row arrives and
the region moved. Stops everything it started by PID. About two minutes;
`-m "not cluster"` leaves it out.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hbase_fixtures import HBASE_LOCAL, HBASE_LOCAL_LIB, REPO, free_port, hbase_local

from sitemapcrawl.config import Settings
from sitemapcrawl.model.webpage import WEBPAGE_TABLE
from sitemapcrawl.storage.store import Store

pytestmark = pytest.mark.cluster


def _local(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return hbase_local(*args, env=env, timeout=timeout)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], str]]:
    """(environment for scripts/hbase-local, Thrift address) of a 2-RegionServer instance."""
    lib = HBASE_LOCAL_LIB.resolve()
    if not (lib / ".complete").exists():
        pytest.skip("no HBase jars yet (scripts/hbase-local start fetches them)")
    home = tmp_path_factory.mktemp("hbase-cluster")
    thrift = free_port()
    env = dict(os.environ, HBASE_LOCAL_DIR=str(home), HBASE_LOCAL_LIB=str(lib),
               HBASE_LOCAL_THRIFT_PORT=str(thrift), HBASE_LOCAL_ZK_PORT=str(free_port()),
               HBASE_LOCAL_ZK_SESSION_MS="10000")
    started = _local(env, "start", "--regionservers", "2", timeout=400)
    try:
        assert started.returncode == 0, started.stderr + _tail(home / "logs")
        yield env, f"127.0.0.1:{thrift}"
    finally:
        _local(env, "stop", "--wipe", timeout=400)


def _tail(logs: Path) -> str:
    files = sorted([*logs.glob("*.log"), *logs.glob("*.out")])
    return "".join(f"\n--- {p.name}\n" + p.read_text(errors="replace")[-2000:] for p in files)


def _servers(env: dict[str, str]) -> dict[str, str]:
    """RegionServer name (rs1...) -> "HOST:PORT" it serves as, from `status`."""
    status = _local(env, "status").stdout
    return {name: f"{host}:{port}" for name, host, port in
            re.findall(r"^(rs\d+): running \(pid \d+\), serving as ([^,\s]+),(\d+)$", status, re.MULTILINE)}


def test_status_names_the_processes_and_refuses_a_second_mode(cluster: tuple[dict[str, str], str]) -> None:
    env, _address = cluster
    status = _local(env, "status")
    assert status.returncode == 0, status.stdout
    assert "mode: cluster 2" in status.stdout and "zookeeper: running" in status.stdout
    assert set(_servers(env)) == {"rs1", "rs2"}
    again = _local(env, "start")
    assert again.returncode != 0 and "stop it first" in again.stderr
    bad = _local(env, "stop-regionserver", "3")
    assert bad.returncode != 0 and "1..2" in bad.stderr


def test_a_regionserver_killed_under_load_loses_no_row(cluster: tuple[dict[str, str], str], tmp_path: Path) -> None:
    env, address = cluster
    prefix = "load_"
    script = tmp_path / "t.hbase"
    script.write_text(f"create '{prefix}webpage', {{NAME => 'f', VERSIONS => 1}}, SPLITS => ['m']\nexit\n")
    made = _local(env, "shell", str(script))
    assert made.returncode == 0, made.stdout + made.stderr
    settings = Settings(hbase=address, table_prefix=prefix, hbase_retries=40, hbase_batch_size=500)
    with Store(settings) as store:
        regions = store.regions(WEBPAGE_TABLE)
        assert [start for start, _end, _server in regions] == [b"", b"m"]
        victim_address = regions[1][2]
        victim = next(name for name, served in _servers(env).items() if served == victim_address)

        rows = 60_000
        killing, killed = threading.Event(), threading.Event()

        def kill_when_writing() -> None:
            time.sleep(1.0)
            killing.set()
            _local(env, "stop-regionserver", victim.removeprefix("rs"), "--kill")
            killed.set()

        killer = threading.Thread(target=kill_when_writing)
        killer.start()
        written = store.write(WEBPAGE_TABLE, ((f"{'az'[n % 2]}{n:06d}".encode(), {b"f:n": str(n).encode()})
                                              for n in range(rows)))
        assert killing.is_set(), "the write ended before the kill: the test proved nothing"
        killer.join()
        assert killed.is_set() and written.rows == rows
        assert sum(1 for _ in store.scan(WEBPAGE_TABLE, columns=[b"f:n"])) == rows
        after = store.regions(WEBPAGE_TABLE)
        assert after[1][2] != victim_address, "the killed RegionServer's region did not move"
        assert store.row(WEBPAGE_TABLE, b"z000001") == {b"f:n": b"1"}
    assert victim not in _servers(env)
    back = _local(env, "start-regionserver", victim.removeprefix("rs"))
    assert back.returncode == 0, back.stderr
    assert victim in _servers(env) or _wait_serving(env, victim)


def _wait_serving(env: dict[str, str], name: str, seconds: float = 120) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if name in _servers(env):
            return True
        time.sleep(2)
    return False


def test_a_regionserver_stopped_during_updatedb_loses_nothing(
        cluster: tuple[dict[str, str], str], tmp_path: Path, store: Store, settings: Settings) -> None:
    """updatedb in two splits on a pre-split table; the RegionServer of one region is killed at its
    third write. The table ends as an uninterrupted run on the shared HBase leaves it."""
    from split_helpers import START, prepare_batch, split_settings, table

    from sitemapcrawl.batch import registry
    from sitemapcrawl.jobs.generate import CrawlMode
    from sitemapcrawl.jobs.updatedb import updatedb
    from sitemapcrawl.model.splits import Split
    from sitemapcrawl.testweb import TestWebServer
    from sitemapcrawl.testweb.generate import bulk_web
    from sitemapcrawl.web.rules import UrlRules

    env, address = cluster
    web = TestWebServer(bulk_web(8, 15, first_host="127.0.12.1")).start()
    try:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(f"{u}\n" for u in web.base_urls()), encoding="utf-8")
        expected_settings = split_settings(settings)
        web.reset()
        batch = prepare_batch(store, expected_settings, web)
        updatedb(store, UrlRules.from_settings(expected_settings), batch, mode=CrawlMode.MIXED, clock=lambda: START)
        expected = table(store)

        # Leases outlive the RegionServer's recovery (tens of seconds): the other split waits, never gives up.
        on_cluster = dataclasses.replace(expected_settings, hbase=address, table_prefix="upd_", hbase_retries=40,
                                         lease_seconds=120.0)
        made = subprocess.run([sys.executable, "-m", "sitemapcrawl", "--hbase", address, "--table-prefix", "upd_",
                               "init", "--split-from-seeds", str(seeds), "--regions", "4",
                               "--hbase-shell", f"{HBASE_LOCAL} shell"], capture_output=True, text=True,
                              env=dict(env, PYTHONPATH=str(REPO)), timeout=300)
        assert made.returncode == 0, made.stderr
        with Store(on_cluster) as crawl_store, Store(on_cluster) as other:
            web.reset()
            prepare_batch(crawl_store, on_cluster, web)
            regions = crawl_store.regions(WEBPAGE_TABLE)
            assert len(regions) >= 3 and len({server for _s, _e, server in regions}) == 2
            victim_address = regions[-1][2]
            victim = next(name for name, served in _servers(env).items() if served == victim_address)
            writes, original = [0], crawl_store.write

            def write(table_name: str, rows: object) -> object:
                result = original(table_name, rows)  # type: ignore[arg-type]
                if table_name == WEBPAGE_TABLE:
                    writes[0] += 1
                    if writes[0] == 3:
                        _local(env, "stop-regionserver", victim.removeprefix("rs"), "--kill")
                return result

            crawl_store.write = write  # type: ignore[method-assign]
            rules = UrlRules.from_settings(on_cluster)
            results: list[object] = []

            def run(part: Split, on: Store) -> None:
                results.append(updatedb(on, rules, batch, mode=CrawlMode.MIXED, clock=lambda: START, split=part))

            threads = [threading.Thread(target=run, args=(Split(k, 2), s))
                       for k, s in ((0, crawl_store), (1, other))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=300)
            assert writes[0] > 3 and len(results) == 2, "the kill did not land inside updatedb"
            assert victim not in _servers(env)
            state = registry.read_batch(crawl_store, batch)
            assert state is not None and state.finished
            assert table(crawl_store) == expected
            crawl_store.drop_tables()
    finally:
        web.stop()
        if "victim" in locals():
            _local(env, "start-regionserver", victim.removeprefix("rs"))
