"""Several Thrift gateways: a crawl through two, one stopped mid-crawl, loses no row and warns once.

Both gateways are the test's own (`side_gateway`), in front of the shared
local HBase; the one stopped is the one the crawl is talking to at that
moment (read from /proc: the crawler's sockets), so the stop cannot miss. The
crawler is held still (SIGSTOP) while its gateway stops, so however fast it is,
the stop lands mid-crawl, and it meets the dead gateway when it goes on.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

from cli_helpers import cli_command
from hbase_fixtures import hbase_local, side_gateway

from sitemapcrawl.config import Settings
from sitemapcrawl.model.cells import decode
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, WebPage
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer, bulk_web
from sitemapcrawl.web import rowkeys

WEB = bulk_web(hosts=4, pages_per_host=30, links=False)  # served by the shared `web` fixture
AGENT = "sitemapcrawl-test/1.0"


def crawl_args(seeds: Path) -> list[str]:
    return ["--user-agent", AGENT, "crawl", str(seeds), "--mode", "sitemap-only", "--delay", "0.05",
            "--rounds", "8", "--topN", "40"]


def statuses(settings: Settings) -> dict[str, str]:
    with Store(settings) as store:
        return {rowkeys.url_from_row_key(key.decode()): str(decode(WebPage, "", cells).status)
                for key, cells in store.scan(WEBPAGE_TABLE)}


def connections_to(pid: int, ports: set[int]) -> Counter[int]:
    """Established TCP connections of process `pid` to loopback `ports`, by port (from /proc)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found: Counter[int] = Counter()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        port = int(fields[2].rsplit(":", 1)[1], 16)
        if fields[3] == "01" and fields[9] in inodes and port in ports:  # 01: ESTABLISHED
            found[port] += 1
    return found


def crawl_through(two: Settings, seeds: Path, log: Path, ports: set[int]) -> tuple[str, int]:
    """Crawl through the gateways at `ports`; stop the one the crawler talks to once round 1 is done, the
    crawler held still meanwhile.

    Returns the crawl's stderr and the port stopped."""
    with log.open("w") as err:
        crawler = subprocess.Popen(cli_command(two, *crawl_args(seeds)), stdout=subprocess.DEVNULL,
                                   stderr=err, text=True)
        try:
            deadline = time.monotonic() + 120
            while "round 1:" not in log.read_text() or not connections_to(crawler.pid, ports):
                assert crawler.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "the crawl never got going"
                time.sleep(0.1)
            os.kill(crawler.pid, signal.SIGSTOP)
            try:
                used = connections_to(crawler.pid, ports).most_common(1)[0][0]
                assert crawler.poll() is None, "the crawl ended before the stop: it proved nothing"
                assert hbase_local("stop-thrift", str(used)).returncode == 0
            finally:
                os.kill(crawler.pid, signal.SIGCONT)
            assert crawler.wait(600) == 0, log.read_text()
        finally:
            if crawler.poll() is None:
                crawler.kill()
    return log.read_text(), used


def test_a_gateway_stopped_mid_crawl_loses_no_row_and_warns_once(settings: Settings, web: TestWebServer,
                                                                   tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{s}\n" for s in web.truth.seeds()))
    one = dataclasses.replace(settings, table_prefix=settings.table_prefix + "one_")
    # The one-gateway crawl (through the shared gateway) runs while the two gateways start.
    alone = subprocess.Popen(cli_command(one, *crawl_args(seeds)), stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        with side_gateway(settings.hbase) as first, side_gateway(settings.hbase) as second:
            _out, err = alone.communicate(timeout=600)
            assert alone.returncode == 0, err
            expected = statuses(one)
            assert len(expected) > 120
            two = dataclasses.replace(settings, hbase=f"127.0.0.1:{first},127.0.0.1:{second}")
            stderr, used = crawl_through(two, seeds, tmp_path / "crawl.err", {first, second})
    finally:
        alone.kill()
        with Store(one) as store:
            store.drop_tables()
    warnings = [line for line in stderr.splitlines() if "stopped answering" in line]
    assert len(warnings) == 1, stderr
    assert f"127.0.0.1:{used} stopped answering" in warnings[0] and "using the others" in warnings[0]
    assert "stopped: nothing due" in stderr
    assert statuses(settings) == expected  # read through the shared gateway: the two are gone
