"""A standalone HBase of its own, stalled, hung and crashed (issue 27, cases 12 and 13).

Starts a separate standalone instance (its own folder and ports, the shared
jars) and: pauses all its JVMs with SIGSTOP for 45 s under a crawl of the
loopback test web, which must finish with every row; pauses it past a short
`hbase_call_timeout`, where a command must fail within that bound with one
line naming the log; and fakes an abort (an abort line, then SIGKILL), which
`status` must name before `start` starts it afresh. Signals go only to the
PIDs in the instance's own PID files. About three minutes; marked `cluster`
(`-m "not cluster"` leaves it out).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hbase_fixtures import HBASE_LOCAL_LIB, REPO, free_port, hbase_local

from sitemapcrawl.config import Settings
from sitemapcrawl.model.cells import decode
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, FetchStatus, WebPage
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer
from sitemapcrawl.testweb.generate import bulk_web
from sitemapcrawl.web import rowkeys

pytestmark = pytest.mark.cluster

AGENT = "Bot/1.0 (+https://example.org/bot)"
HOSTS, PAGES = 3, 120


class Instance:
    """A standalone HBase started by scripts/hbase-local in `home`, and how to reach and signal it."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.port = free_port()
        self.env = dict(os.environ, HBASE_LOCAL_DIR=str(home), HBASE_LOCAL_LIB=str(HBASE_LOCAL_LIB.resolve()),
                        HBASE_LOCAL_THRIFT_PORT=str(self.port), HBASE_LOCAL_ZK_PORT=str(free_port()),
                        PYTHONPATH=str(REPO))
        self.env.pop("HBASE_LOCAL_ZK_SESSION_MS", None)  # the standalone default is under test
        self.address = f"127.0.0.1:{self.port}"

    def local(self, *args: str, timeout: float = 400) -> subprocess.CompletedProcess[str]:
        return hbase_local(*args, env=self.env, timeout=timeout)

    def pids(self) -> list[int]:
        return [int(path.read_text()) for path in sorted((self.home / "run").glob("*.pid"))]

    def signal_all(self, signum: signal.Signals) -> None:
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):  # a JVM a test killed
                os.kill(pid, signum)

    def cli(self, *args: str, timeout: float = 600, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sitemapcrawl", "--hbase", self.address, "--table-prefix",
                               "stall_", "--user-agent", AGENT, *args], capture_output=True, text=True,
                              env=dict(self.env, **env), timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Instance]:
    if not (HBASE_LOCAL_LIB / ".complete").exists():
        pytest.skip("no HBase jars yet (scripts/hbase-local start fetches them)")
    made = Instance(tmp_path_factory.mktemp("hbase-stall"))
    started = made.local("start")
    try:
        assert started.returncode == 0, started.stderr
        yield made
    finally:
        made.signal_all(signal.SIGCONT)  # a failed test must not leave a paused JVM behind
        made.local("stop", "--wipe")


def test_standalone_rides_out_a_45s_stall_under_a_crawl(instance: Instance, tmp_path: Path) -> None:
    site = instance.home / "conf" / "hbase-site.xml"
    assert "<name>zookeeper.session.timeout.localHBaseCluster</name><value>90000</value>" in site.read_text()
    web = TestWebServer(bulk_web(HOSTS, PAGES, links=False, first_host="127.0.27.1")).start()
    try:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(f"{url}\n" for url in web.base_urls()), encoding="utf-8")
        assert instance.cli("init").returncode == 0
        crawl = subprocess.Popen(
            [sys.executable, "-m", "sitemapcrawl", "--hbase", instance.address, "--table-prefix", "stall_",
             "--user-agent", AGENT, "crawl", str(seeds), "--mode", "sitemap-only", "--delay", "0.1"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=instance.env)
        try:
            deadline = time.monotonic() + 120
            while not any("/p/" in r.target for r in web.log.records()):
                assert crawl.poll() is None and time.monotonic() < deadline, "the crawl never reached the pages"
                time.sleep(0.2)
            instance.signal_all(signal.SIGSTOP)
            time.sleep(45)
            assert crawl.poll() is None, "the crawl ended during the pause: the test proved nothing"
            instance.signal_all(signal.SIGCONT)
            _out, err = crawl.communicate(timeout=600)
        finally:
            crawl.kill()
        assert crawl.returncode == 0, err
    finally:
        web.stop()
    status = instance.local("status")
    assert status.returncode == 0 and "master: running" in status.stdout, status.stdout
    pages = {f"{base}p/{n}.html" for base in web.base_urls() for n in range(PAGES)}
    with Store(Settings(hbase=instance.address, table_prefix="stall_")) as store:
        rows = {url: decode(WebPage, url, cells) for url, cells in
                ((rowkeys.url_from_row_key(key.decode()), cells) for key, cells in store.scan(WEBPAGE_TABLE))}
    assert {url for url, row in rows.items() if row.status is FetchStatus.FETCHED} >= pages
    asked = Counter(r.url for r in web.log.records() if "/p/" in r.target)
    assert set(asked) == pages and max(asked.values()) == 1, asked.most_common(3)


def test_a_hung_store_fails_a_command_within_the_call_timeout(instance: Instance) -> None:
    instance.signal_all(signal.SIGSTOP)
    try:
        began = time.monotonic()
        done = instance.cli("readdb", "--stats", timeout=120, SITEMAPCRAWL_HBASE_TIMEOUT_MS="1500",
                            SITEMAPCRAWL_HBASE_CALL_TIMEOUT="4", SITEMAPCRAWL_HBASE_RETRIES="100")
        took = time.monotonic() - began
    finally:
        instance.signal_all(signal.SIGCONT)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "HBase at " + instance.address in lines[0] and f"{instance.home}/logs/master.log" in lines[0]
    # 4 s of retries, the last call's 1.5 s and Python's start; far from 100 attempts of 1.5 s.
    assert took < 20, took


def test_status_names_an_abort_and_start_recovers(instance: Instance) -> None:
    log = instance.home / "logs" / "master.log"
    banner = "2026-12-01T00:00:00,000 ERROR [main] regionserver.HRegionServer: ***** ABORTING region server " \
             "127.0.0.1,1,1: test abort *****\n"
    with log.open("a", encoding="utf-8") as out:
        out.write(banner)
    unhealthy = instance.local("status")
    assert unhealthy.returncode == 1 and "master: unhealthy" in unhealthy.stdout and "test abort" in unhealthy.stdout
    master = int((instance.home / "run" / "master.pid").read_text())
    thrift = int((instance.home / "run" / "thrift.pid").read_text())
    os.kill(master, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{master}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    died = instance.local("status")
    assert died.returncode == 1, died.stdout
    assert "master: died:" in died.stdout and "test abort" in died.stdout and str(log) in died.stdout
    again = instance.local("start")
    assert again.returncode == 0, again.stderr
    assert "master had died" in again.stderr and "HBase is up" in again.stderr
    assert int((instance.home / "run" / "thrift.pid").read_text()) != thrift, "the orphaned Thrift was kept"
    healthy = instance.local("status")
    assert healthy.returncode == 0 and "thrift: answering" in healthy.stdout, healthy.stdout
