"""Leases that mean it, a store that goes away mid-fetch, politeness across SIGKILL (issue 27, cases 4-6).

Every command runs through the CLI in a subprocess (a fetch must run while
another command acts on its batch), against the real HBase and the loopback
test web, whose access log is the judge: who was asked for what, and when.
A test that takes HBase away uses a Thrift gateway of its own
(`side_gateway`), never the shared one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cli_helpers import cli_command
from hbase_fixtures import REPO, hbase_local, side_gateway
from waiting import wait_for

from sitemapcrawl.config import Settings
from sitemapcrawl.model.cells import column_names, decode
from sitemapcrawl.model.webpage import HOST_TABLE, WEBPAGE_TABLE, HostRow, WebPage
from sitemapcrawl.storage.politeness import KeyState
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer, bulk_web
from sitemapcrawl.testweb.accesslog import Access
from sitemapcrawl.web import rowkeys

pytestmark = pytest.mark.tables  # every test needs tables; none tests making them

AGENT = "TestBot/1.0 (+http://127.0.0.1/bot)"
PAGES = 8
WEB = bulk_web(2, PAGES, sitemap_listed=False, links=False, first_host="127.0.9.1")


def environment(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", **extra)


def sc(settings: Settings, *args: str) -> list[str]:
    return cli_command(settings, "--user-agent", AGENT, *args)


def run(settings: Settings, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(sc(settings, *args), capture_output=True, text=True, env=environment(**env), timeout=240,
                          stdin=subprocess.DEVNULL)


def start(settings: Settings, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(sc(settings, *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=environment(**env), stdin=subprocess.DEVNULL)


def page_urls(web: TestWebServer) -> set[str]:
    return {f"{base.rstrip('/')}/p/{i}.html" for base in web.base_urls() for i in range(PAGES)}


def page_requests(web: TestWebServer) -> list[Access]:
    return [r for r in web.log.records() if r.status != 0 and r.target.startswith("/p/")]


def fetched_twice(web: TestWebServer) -> list[str]:
    return [url for url, n in Counter(r.url for r in page_requests(web)).items() if n > 1]


def prepare(settings: Settings, web: TestWebServer, tmp_path: Path, batch: str) -> None:
    """Tables, every page of both hosts injected, one batch generated."""
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{url}\n" for url in sorted(page_urls(web))), encoding="utf-8")
    for args in (("init",), ("inject", str(seeds)), ("generate", "--batch-id", batch)):
        done = run(settings, *args)
        assert done.returncode == 0, done.stderr


def fetch_times(settings: Settings) -> dict[str, datetime | None]:
    """URL -> the fetch time its row holds (None: never fetched)."""
    with Store(settings) as store:
        rows = store.scan(WEBPAGE_TABLE, columns=column_names(WebPage, ["fetch_time"]))
        return {url: decode(WebPage, url, cells, ["fetch_time"]).fetch_time
                for url, cells in ((rowkeys.url_from_row_key(key.decode()), cells) for key, cells in rows)}


def no_traceback(text: str) -> None:
    assert "Traceback" not in text, text


# ------------------------------------------------------------- case 4 ---


def test_release_refuses_a_batch_a_live_fetch_holds_and_nothing_is_fetched_twice(
        web: TestWebServer, settings: Settings, tmp_path: Path) -> None:
    prepare(settings, web, tmp_path, "b4")
    fetch = start(settings, "fetch", "--batch", "b4", "--delay", "1.0", "--max-connections", "2")
    wait_for(lambda: len(page_requests(web)) >= 3)

    refused = run(settings, "batches", "--release", "b4")

    assert refused.returncode == 1, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    assert f"pid {fetch.pid}" in lines[0] and "since 20" in lines[0] and "--force" in lines[0], lines[0]
    _, err = fetch.communicate(timeout=120)
    assert fetch.returncode == 0, err
    resumed = run(settings, "crawl", "--rounds", "2", "--delay", "0")
    assert resumed.returncode == 0, resumed.stderr
    assert len(page_requests(web)) == 2 * PAGES
    assert fetched_twice(web) == []


def test_a_forced_release_stops_the_old_holder_and_refuses_its_late_writes(
        web: TestWebServer, settings: Settings, tmp_path: Path) -> None:
    prepare(settings, web, tmp_path, "b4f")
    # 2 s between a host's requests: 16 pages take ~14 s, so the release (a CLI process of its own, slow on
    # a loaded machine) lands mid-fetch; at 1 s the fetch once ended before it did.
    fetch = start(settings, "fetch", "--batch", "b4f", "--delay", "2.0", "--max-connections", "2")
    wait_for(lambda: len(page_requests(web)) >= 3)

    released = run(settings, "batches", "--release", "b4f", "--force")
    released_at, released_wall = time.monotonic(), datetime.now(UTC)

    assert released.returncode == 0, released.stderr
    _, err = fetch.communicate(timeout=60)
    assert fetch.returncode == 1, err
    no_traceback(err)
    assert "was taken from this worker" in err.strip().splitlines()[-1], err
    # It stopped handing out URLs within seconds, and nothing it fetched later was written.
    assert [r.url for r in page_requests(web) if r.start > released_at + 3.0] == []
    late = [url for url, when in fetch_times(settings).items()
            if when is not None and when > released_wall + timedelta(seconds=1)]
    assert late == []


# ------------------------------------------------------------- case 5 ---


def test_a_store_gone_mid_fetch_stops_the_requests_and_the_rerun_fetches_only_what_was_lost(
        web: TestWebServer, settings: Settings, hbase_address: str, tmp_path: Path) -> None:
    prepare(settings, web, tmp_path, "b5")
    with side_gateway(hbase_address) as port:
        side = Settings(hbase=f"127.0.0.1:{port}", table_prefix=settings.table_prefix)
        fetch = start(side, "fetch", "--batch", "b5", "--delay", "0.4", "--max-connections", "2",
                      SITEMAPCRAWL_HBASE_RETRIES="3")
        wait_for(lambda: len(page_requests(web)) >= 4)
        stopped = hbase_local("stop-thrift", str(port), timeout=120)
        assert stopped.returncode == 0, stopped.stderr
        gone_at = time.monotonic()
        _, err = fetch.communicate(timeout=120)

    assert fetch.returncode == 2, err
    no_traceback(err)
    last = err.strip().splitlines()[-1]
    assert "fetch stopped, HBase failed" in last and "Could not connect" in last and "logs" in last, err
    assert [r.url for r in page_requests(web) if r.start > gone_at + 1.0] == []
    unconfirmed = int(last.split(" not confirmed (")[0].rsplit(", ", 1)[1])
    before = Counter(r.url for r in page_requests(web))

    rerun = run(settings, "fetch", "--batch", "b5", "--delay", "0")

    assert rerun.returncode == 0, rerun.stderr
    assert {r.url for r in page_requests(web)} == page_urls(web)
    twice = fetched_twice(web)
    # A write cut off by the failure may have landed (the page row put, say, before its due entry's
    # delete failed): such an outcome is unconfirmed yet not refetched, so the count is a bound.
    assert len(twice) <= unconfirmed and all(before[url] == 1 for url in twice)
    assert all(when is not None for when in fetch_times(settings).values())


def test_a_store_back_within_the_retry_budget_loses_nothing(
        web: TestWebServer, settings: Settings, hbase_address: str, tmp_path: Path) -> None:
    prepare(settings, web, tmp_path, "b5b")
    with side_gateway(hbase_address) as port:
        side = Settings(hbase=f"127.0.0.1:{port}", table_prefix=settings.table_prefix)
        fetch = start(side, "fetch", "--batch", "b5b", "--delay", "0.4", "--max-connections", "2",
                      SITEMAPCRAWL_HBASE_RETRIES="14")
        wait_for(lambda: len(page_requests(web)) >= 4)
        assert hbase_local("stop-thrift", str(port), timeout=120).returncode == 0
        gone_at = time.monotonic()
        time.sleep(2.0)
        during = [r.url for r in page_requests(web) if gone_at + 1.0 < r.start]
        restarted = hbase_local("start-thrift", str(port), timeout=120)
        assert restarted.returncode == 0, restarted.stderr
        _, err = fetch.communicate(timeout=180)

    assert fetch.returncode == 0, err
    no_traceback(err)
    assert during == []  # no request while nothing could be written
    assert {r.url for r in page_requests(web)} == page_urls(web)
    assert fetched_twice(web) == []
    assert all(when is not None for when in fetch_times(settings).values())


# ------------------------------------------------------------- case 6 ---


def stored_pages(settings: Settings) -> set[str]:
    """The URLs whose rows hold a fetch time: what a fetch wrote."""
    return {url for url, when in fetch_times(settings).items() if when is not None}


def stored_last_requests(settings: Settings) -> dict[str, datetime]:
    """Politeness key -> the latest a request to it may have ended, as the `host` table holds it: the end of
    its last request, or a reservation not released (what a rerun waits out)."""
    fields = ["last_request", "reserved_until"]
    with Store(settings) as store:
        rows = store.scan(HOST_TABLE, prefix=b"~", columns=column_names(HostRow, fields))
        found = {}
        for key, cells in rows:
            row = decode(HostRow, "", cells, fields)
            latest = KeyState(row.last_request, reserved_until=row.reserved_until).latest_end
            if latest is not None:
                found[key.decode().partition(":")[2]] = latest
        return found


def test_politeness_survives_sigkill(web: TestWebServer, settings: Settings, tmp_path: Path) -> None:
    prepare(settings, web, tmp_path, "b6")
    # A killed run's reservations are waited out (a request may have started just before the kill and run to
    # its deadline): a short deadline keeps the rerun's wait short.
    killed = start(settings, "fetch", "--batch", "b6", "--delay", "1.5", "--max-connections", "2",
                   SITEMAPCRAWL_HTTP_DEADLINE="4")
    wait_for(lambda: len(page_requests(web)) >= 3)
    # Killed within the delay once every answer so far is stored: "a SIGKILL loses no answer it had time to
    # write" (a fixed sleep was too short for the write on a loaded machine).
    wait_for(lambda: {r.url for r in page_requests(web)} <= stored_pages(settings))
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    by_killed = list(web.log.records())
    kept = stored_pages(settings)
    # An answer that came between the check and the kill was never written: the one page a rerun may fetch
    # again, at most one per host (one request in flight per host).
    lost = {r.url for r in page_requests(web)} - kept
    wall = time.time() - time.monotonic()  # the access log's clock (this process's) to wall time
    last_of = {host: max(r.end for r in by_killed if r.host == host) for host in {r.host for r in by_killed}}
    # What a rerun reads: each host's last request as the killed process recorded it before dying.
    stored = stored_last_requests(settings)
    for host, last in last_of.items():
        recorded = [when for key, when in stored.items() if key.startswith(host)]
        assert recorded and recorded[0].timestamp() >= wall + last - 0.005, (host, stored)

    rerun = run(settings, "fetch", "--batch", "b6", "--delay", "1.5", "--max-connections", "2",
                SITEMAPCRAWL_HTTP_DEADLINE="4")

    assert rerun.returncode == 0, rerun.stderr
    later = web.log.records()[len(by_killed):]
    for host, last in last_of.items():
        first = min(r.start for r in later if r.host == host)
        assert first - last >= 1.5, (host, first - last)
    assert len(lost) <= len(last_of), lost
    assert len(page_requests(web)) == 2 * PAGES + len(lost)
    assert set(fetched_twice(web)) == lost
    assert not kept & {r.url for r in later if r.status != 0 and r.target.startswith("/p/")}
