"""Politeness that holds across jobs, processes and restarts; Retry-After; slow-down; the proxy;
and fetch's facts turned into next fetch times by updatedb, outcome by outcome.

Gaps are measured from the test server's own access log: its `start` is when
a request's headers had been read, its `end` just before the last bytes of
the answer went out, so a gap it sees is never longer than the one the
crawler kept.
"""

from __future__ import annotations

import dataclasses
import http.client
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from fetch_helpers import AGENT, PAST, add_rows, due, read, run_fetch
from waiting import wait_for

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.crawl import CrawlOptions, crawl
from sitemapcrawl.jobs.detect import detect
from sitemapcrawl.jobs.generate import GenerateOptions, generate
from sitemapcrawl.jobs.readdb import collect_stats
from sitemapcrawl.jobs.updatedb import updatedb
from sitemapcrawl.model.cells import decode
from sitemapcrawl.model.webpage import HOST_TABLE, FetchStatus, HostRow, WebPage
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.storage.politeness import QueueBy, Resolver, state_key
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import Fault, FaultSpec, Page, Robots, RobotsGroup, Site, TestWebServer, Web
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

SLACK = 0.005  # the server's clock reads, not ours


def politeness_web() -> Web:
    """A plain shop, a blog with Crawl-delay 1, a host whose robots.txt fails, one asking 5 s."""
    pages = tuple(Page(f"/p{i}.html", f"Page {i}") for i in range(8))
    shop = Site("127.0.0.2", "shop", pages + (Page("/busy.html"), Page("/e500.html"), Page("/big.html")),
                faults=(("/busy.html", FaultSpec(Fault.SLOW_DOWN, status=503, retry_after="2")),
                        ("/e500.html", FaultSpec(Fault.SERVER_ERROR)),
                        ("/gone.html", FaultSpec(Fault.GONE)),
                        ("/old.html", FaultSpec(Fault.REDIRECT, target="/p0.html")),
                        ("/big.html", FaultSpec(Fault.OVERSIZED, size=200_000))),
                robots=Robots(groups=(RobotsGroup(("*",), disallow=("/private/",)),)))
    blog = Site("127.0.0.3", "blog", tuple(Page(f"/b{i}.html", f"Post {i}") for i in range(8)),
                robots=Robots(groups=(RobotsGroup(("*",), crawl_delay=1.0),)))
    down = Site("127.0.0.4", "down", (Page("/d.html"),), faults=(("/robots.txt", FaultSpec(Fault.SERVER_ERROR)),))
    sleepy = Site("127.0.0.5", "sleepy", (Page("/s.html"),),
                  robots=Robots(groups=(RobotsGroup(("*",), crawl_delay=5.0),)))
    return Web((shop, blog, down, sleepy), "politeness-test")


@pytest.fixture
def site(make_testweb: Callable[[Web], TestWebServer]) -> TestWebServer:
    return make_testweb(politeness_web())


@pytest.fixture
def polite(settings: Settings) -> Settings:
    return dataclasses.replace(settings, user_agent=AGENT, delay=0.05, http_read_timeout=2.0,
                               fetch_retry_interval=60, max_fetch_retries=3, robots_retry_interval=120)


def make_batch(store: Store, settings: Settings, batch_id: str, **options: object) -> None:
    counts = generate(store, UrlRules.from_settings(settings), GenerateOptions(batch_id=batch_id, **options))
    assert counts.selected > 0


def gaps(site: TestWebServer, host: str) -> list[float]:
    records = sorted(site.log.records(host), key=lambda r: r.start)
    return [later.start - earlier.end for earlier, later in zip(records, records[1:], strict=False)]


# ------------------------------------------------------- across jobs ---


def test_a_fetch_started_right_after_another_waits_out_the_delay(site: TestWebServer, store: Store,
                                                                 polite: Settings) -> None:
    settings = dataclasses.replace(polite, delay=1.0)
    shop = [site.url("127.0.0.2", f"/p{i}.html") for i in range(3)]
    blog = [site.url("127.0.0.3", f"/b{i}.html") for i in range(3)]
    add_rows(store, *(due(u) for u in shop + blog))
    make_batch(store, settings, "bb")
    # The first run stops handing out URLs before the delay after robots.txt is over:
    # it makes only the robots.txt requests, and its successor starts at once.
    first = run_fetch(store, settings, "bb", time_limit=0.3)
    assert first.stopped and first.done == 0 and first.robots_fetched == 2
    second = run_fetch(store, settings, "bb")
    assert second.done == 6 and second.stopped is None
    for host, delay in (("127.0.0.2", 1.0), ("127.0.0.3", 1.0)):
        assert len(site.log.records(host)) == 4
        assert min(gaps(site, host)) >= delay - SLACK, (host, gaps(site, host))
    # the state is on the host table, by politeness key
    cells = store.row(HOST_TABLE, state_key("127.0.0.2", QueueBy.HOST))
    assert cells is not None
    state = decode(HostRow, "127.0.0.2", cells)
    assert state.last_request is not None and state.slow_delay == 0.0
    assert timedelta(0) <= datetime.now(UTC) - state.last_request < timedelta(seconds=30)
    assert collect_stats(store).host_rows == 2  # the origins; politeness rows are not counted as hosts


def test_three_crawl_rounds_keep_the_crawl_delay(site: TestWebServer, store: Store, polite: Settings) -> None:
    blog = [site.url("127.0.0.3", f"/b{i}.html") for i in range(6)]
    client = PoliteHttpClient.from_settings(polite)
    try:
        result = crawl(store, client, UrlRules.from_settings(polite), [u + "\n" for u in blog],
                       CrawlOptions(mode=CrawlMode.MIXED, rounds=3, top_n=2))
    finally:
        client.close()
    assert len(result.rounds) == 3 and all(r.fetch.done >= 1 for r in result.rounds)
    records = site.log.records("127.0.0.3")
    assert records[0].target == "/robots.txt"  # by detect, before the rounds
    assert len(records) >= 4
    # Crawl-delay 1 between detect and round 1 and between every round, not only within one fetch.
    assert min(gaps(site, "127.0.0.3")) >= 1.0 - SLACK, gaps(site, "127.0.0.3")


@pytest.fixture
def cli_env(polite: Settings) -> Iterator[dict[str, str]]:
    yield dict(os.environ, SITEMAPCRAWL_HBASE=polite.hbase, SITEMAPCRAWL_TABLE_PREFIX=polite.table_prefix,
               SITEMAPCRAWL_USER_AGENT=AGENT, PYTHONPATH=os.environ.get("PYTHONPATH", ""))


def test_processes_back_to_back_and_a_restart_after_ctrl_c(site: TestWebServer, store: Store, polite: Settings,
                                                          cli_env: dict[str, str]) -> None:
    shop = [site.url("127.0.0.2", f"/p{i}.html") for i in range(5)]
    blog = [site.url("127.0.0.3", f"/b{i}.html") for i in range(3)]
    add_rows(store, *(due(u) for u in shop + blog))
    make_batch(store, polite, "cc")
    base = [sys.executable, "-m", "sitemapcrawl", "-q", "fetch", "--batch", "cc", "--delay", "1.2"]
    # 1: a process that stops on its time limit, 2: one started right after it, stopped by Ctrl-C
    # once it made a request, 3: the restart that finishes the batch.
    first = subprocess.run([*base, "--time-limit", "0.5"], env=cli_env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    seen = len(site.log)
    second = subprocess.Popen(base, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: len(site.log) >= seen + 2, 60, "the second process made fewer than 2 requests")
        second.send_signal(signal.SIGINT)
        _out, err = second.communicate(timeout=60)
    finally:
        if second.poll() is None:
            second.kill()
    assert second.returncode == 130, err
    third = subprocess.run(base, env=cli_env, capture_output=True, text=True, timeout=120)
    assert third.returncode == 0, third.stderr
    assert all(read(store, u).fetch_mark == "cc" for u in shop + blog)
    for host, delay in (("127.0.0.2", 1.2), ("127.0.0.3", 1.2)):
        assert min(gaps(site, host)) >= delay - SLACK, (host, gaps(site, host),
                                                        [(r.target, r.start, r.end) for r in site.log.records(host)],
                                                        second.returncode, err, third.stderr)


class _SlowPage(BaseHTTPRequestHandler):
    """Every path at once but `slow_path`, which answers only after `hold` seconds (cut short by `release`)."""

    protocol_version = "HTTP/1.1"
    slow_path = "/slow.html"
    hold = 1.0
    started = threading.Event()
    release = threading.Event()
    ended: list[datetime] = []
    """The wall time just before each slow answer's last bytes went out."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = b"User-agent: *\nDisallow:\n" if self.path == "/robots.txt" else b"slow"
        slow = self.path == type(self).slow_path
        if slow:
            type(self).started.set()
            type(self).release.wait(type(self).hold)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if slow:
            type(self).ended.append(datetime.now(UTC))
        try:
            self.wfile.write(body)
        except OSError:
            self.close_connection = True  # the client is gone (a request it abandoned)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def slow_site() -> Iterator[str]:
    _SlowPage.started, _SlowPage.release, _SlowPage.ended = threading.Event(), threading.Event(), []
    _SlowPage.slow_path = "/slow.html"
    server = ThreadingHTTPServer(("127.0.0.6", 0), _SlowPage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.6:{server.server_address[1]}"
    finally:
        _SlowPage.release.set()
        server.shutdown()
        server.server_close()


def _interrupt_during_the_slow_request(store: Store, polite: Settings, env: dict[str, str], base: str,
                                       command: list[str] | None = None, answer_after: float | None = None,
                                       presses: int = 1,
                                       ) -> tuple[subprocess.CompletedProcess[str], datetime, datetime]:
    """Fetch `base`/slow.html in a process (or run `command`), Ctrl-C it while the slow path is answering;
    (run, Ctrl-C, exit) wall times.

    With `answer_after`, the slow path answers that many seconds after the
    (last) Ctrl-C (not `hold` after the request began), so a loaded machine
    that is slow to start the process or to deliver the signal cannot eat the
    grace. `presses`: Ctrl-C that many times, 0.2 s apart.
    """
    if command is None:
        add_rows(store, due(base + "/slow.html"))
        make_batch(store, polite, "sl")
        command = [sys.executable, "-m", "sitemapcrawl", "-q", "fetch", "--batch", "sl", "--delay", "0.1"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert _SlowPage.started.wait(60), "the slow page was never asked for"
        time.sleep(0.1)  # the request is surely in flight, well before its answer
        interrupted = datetime.now(UTC)
        process.send_signal(signal.SIGINT)
        for _ in range(presses - 1):
            time.sleep(0.2)
            process.send_signal(signal.SIGINT)
        if answer_after is not None:
            time.sleep(answer_after)
            _SlowPage.release.set()
        out, err = process.communicate(timeout=60)
        exited = datetime.now(UTC)
    finally:
        if process.poll() is None:
            process.kill()
    return subprocess.CompletedProcess(command, process.returncode, out, err), interrupted, exited


def _stored_end(store: Store, host: str) -> datetime:
    cells = store.row(HOST_TABLE, state_key(host, QueueBy.HOST))
    assert cells is not None
    last = decode(HostRow, host, cells).last_request
    assert last is not None
    return last


def test_ctrl_c_during_a_request_waits_for_it_and_records_its_end(slow_site: str, store: Store, polite: Settings,
                                                                  cli_env: dict[str, str]) -> None:
    _SlowPage.hold = 30.0  # answered 0.3 s after the Ctrl-C: well within the grace it gives (ABANDON_AFTER)
    run, _interrupted, _exited = _interrupt_during_the_slow_request(store, polite, cli_env, slow_site,
                                                                    answer_after=0.3)
    assert run.returncode == 130, run.stderr
    assert len(_SlowPage.ended) == 1
    # the stored end is the request's own end (after the server's last write): not the robots.txt before
    # it, nor the deadline an abandoned request is recorded at (http_deadline, 60 s)
    assert _SlowPage.ended[0] <= _stored_end(store, "127.0.0.6") < _SlowPage.ended[0] + timedelta(seconds=10)
    assert read(store, slow_site + "/slow.html").fetch_mark == "sl", run.stderr  # its outcome was written too


def test_ctrl_c_abandoning_a_request_records_it_until_its_deadline(slow_site: str, store: Store, polite: Settings,
                                                                   cli_env: dict[str, str]) -> None:
    _SlowPage.hold = 30.0  # outlives the grace: abandoned
    env = dict(cli_env, SITEMAPCRAWL_HTTP_DEADLINE="8")
    run, interrupted, exited = _interrupt_during_the_slow_request(store, polite, env, slow_site)
    assert run.returncode == 130, run.stderr
    assert exited - interrupted < timedelta(seconds=8)  # did not wait for the answer
    # recorded as lasting until its deadline: past the moment the process (and its socket) was gone
    stored = _stored_end(store, "127.0.0.6")
    assert exited <= stored <= interrupted + timedelta(seconds=8)
    assert read(store, slow_site + "/slow.html").fetch_mark is None  # not fetched: fetched again by a later run


def test_a_time_limit_abandoning_a_request_records_it_until_its_deadline(slow_site: str, store: Store,
                                                                          polite: Settings) -> None:
    _SlowPage.hold = 30.0
    settings = dataclasses.replace(polite, delay=0.1, http_deadline=8.0, http_read_timeout=20.0)
    add_rows(store, due(slow_site + "/slow.html"))
    make_batch(store, settings, "tl")
    counts = run_fetch(store, settings, "tl", time_limit=0.5)
    returned = datetime.now(UTC)
    assert _SlowPage.started.is_set() and counts.stopped and counts.done == 0
    stored = _stored_end(store, "127.0.0.6")
    # abandoned 2 s after the time limit, still running: recorded until its deadline, not at robots.txt's end
    assert returned < stored <= returned + timedelta(seconds=8)
    assert read(store, slow_site + "/slow.html").fetch_mark is None


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_during_detect_waits_for_its_request_and_records_it(slow_site: str, store: Store, polite: Settings,
                                                                    cli_env: dict[str, str], presses: int) -> None:
    # A second Ctrl-C does not end the wait either: the next run must know when the request ended.
    _SlowPage.slow_path, _SlowPage.hold = "/robots.txt", 30.0
    command = [sys.executable, "-m", "sitemapcrawl", "-q", "detect", "--host", slow_site]
    run, _interrupted, _exited = _interrupt_during_the_slow_request(store, polite, cli_env, slow_site, command,
                                                                    answer_after=0.3, presses=presses)
    assert run.returncode == 130, run.stderr
    assert len(_SlowPage.ended) == 1
    assert _SlowPage.ended[0] <= _stored_end(store, "127.0.0.6") < _SlowPage.ended[0] + timedelta(seconds=10)


def test_detect_waits_out_a_fetch_and_records_its_request(site: TestWebServer, store: Store,
                                                         polite: Settings) -> None:
    settings = dataclasses.replace(polite, delay=1.0)
    page = site.url("127.0.0.2", "/p0.html")
    add_rows(store, due(page))
    make_batch(store, settings, "dt")
    run_fetch(store, settings, "dt")
    client = PoliteHttpClient.from_settings(settings)
    try:
        detect(store, client, UrlRules.from_settings(settings), hosts=[site.base_url("127.0.0.2")])
        run_fetch(store, settings, "dt")  # nothing left: no request
        add_rows(store, due(site.url("127.0.0.2", "/p1.html")))
        make_batch(store, settings, "dt2")
        run_fetch(store, settings, "dt2")
    finally:
        client.close()
    assert site.log.paths("127.0.0.2") == ["/robots.txt", "/p0.html", "/robots.txt", "/p1.html"]
    assert min(gaps(site, "127.0.0.2")) >= 1.0 - SLACK, gaps(site, "127.0.0.2")


# ------------------------------------------------- Retry-After, slow-down ---


def test_retry_after_holds_the_host_and_503_slows_it_down(site: TestWebServer, store: Store,
                                                          polite: Settings) -> None:
    settings = dataclasses.replace(polite, delay=0.1)
    busy = site.url("127.0.0.2", "/busy.html")
    pages = [site.url("127.0.0.2", f"/p{i}.html") for i in range(3)]
    add_rows(store, due(busy), *(due(u) for u in pages))
    make_batch(store, settings, "ra")
    run_fetch(store, settings, "ra")
    paths = site.log.paths("127.0.0.2")
    assert paths == ["/robots.txt", "/busy.html", "/p0.html", "/p1.html", "/p2.html"]
    after = gaps(site, "127.0.0.2")
    assert after[1] >= 2.0 - SLACK  # Retry-After: 2, for the whole host
    # the 503 doubled the delay (to 1 s at least); each success takes a quarter off
    assert after[2] >= 0.75 - SLACK and after[3] >= 0.5625 - SLACK
    assert after[2] < 2.0
    state = decode(HostRow, "k", store.row(HOST_TABLE, state_key("127.0.0.2", QueueBy.HOST)) or {})
    assert state.slow_delay is not None and 0.1 < state.slow_delay < 0.6
    row = read(store, busy)
    assert (row.status, row.http_code, row.retries) == (FetchStatus.RETRY, 503, 1)
    assert row.retry_at is not None and row.fetch_time is not None
    assert row.retry_at - row.fetch_time == timedelta(seconds=2)


def test_retry_after_is_capped_and_holds_into_the_next_run(site: TestWebServer, store: Store,
                                                          polite: Settings) -> None:
    settings = dataclasses.replace(polite, delay=0.05, max_crawl_delay=1.5)
    busy = site.url("127.0.0.2", "/busy.html")
    site.set_fault(busy, FaultSpec(Fault.SLOW_DOWN, status=429, retry_after="Fri, 31 Dec 2100 23:59:59 GMT"))
    add_rows(store, due(busy))
    make_batch(store, settings, "cap")
    run_fetch(store, settings, "cap")
    page = site.url("127.0.0.2", "/p0.html")
    add_rows(store, due(page))
    make_batch(store, settings, "cap2")
    run_fetch(store, settings, "cap2")  # a new run: the pause is read from the table
    assert site.log.paths("127.0.0.2") == ["/robots.txt", "/busy.html", "/p0.html"]
    gap = gaps(site, "127.0.0.2")[1]
    assert 1.5 - SLACK <= gap < 5.0  # capped at max_crawl_delay, not the year 2100


# ------------------------------------------------------------ fetch splits ---


def test_with_queue_by_ip_hosts_sharing_an_ip_share_a_partition(store: Store, polite: Settings) -> None:
    names = ["http://localhost:8000/a", "http://127.0.0.1:8000/b"]
    ip = Resolver()("localhost")
    if ip != "127.0.0.1":
        pytest.skip(f"localhost resolves to {ip} here, not 127.0.0.1")
    add_rows(store, *(due(u) for u in names))
    # by host name (the default) they are two keys: crc32 mod 8 gives 3 and 0
    generate(store, UrlRules.from_settings(polite), GenerateOptions(batch_id="hn", fetch_splits=8))
    assert [read(store, u).fetch_split for u in names] == [3, 0]
    add_rows(store, *(WebPage(u, update_mark="hn", next_fetch=PAST) for u in names))
    by_ip = dataclasses.replace(polite, queue_by=QueueBy.IP)
    counts = generate(store, UrlRules.from_settings(by_ip), GenerateOptions(batch_id="ip", fetch_splits=8))
    assert counts.selected == 2
    assert [read(store, u).fetch_split for u in names] == [0, 0]  # one IP, one fetch split
    # and the option wins over the setting
    add_rows(store, *(WebPage(u, update_mark="ip", next_fetch=PAST) for u in names))
    generate(store, UrlRules.from_settings(polite),
             GenerateOptions(batch_id="ip2", fetch_splits=8, queue_by=QueueBy.IP))
    assert [read(store, u).fetch_split for u in names] == [0, 0]


# ------------------------------------------------------------- the proxy ---


class _Proxy(BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        type(self).seen.append(self.path)
        target = urlsplit(self.path)
        upstream = http.client.HTTPConnection(target.hostname or "", target.port or 80, timeout=5)
        upstream.request("GET", target.path or "/", headers={"User-Agent": self.headers.get("User-Agent", "")})
        answer = upstream.getresponse()
        body = answer.read()
        self.send_response(answer.status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Via", "test-proxy")
        self.end_headers()
        self.wfile.write(body)
        upstream.close()

    def log_message(self, *args: object) -> None:
        pass


def test_requests_go_through_the_configured_proxy_only(site: TestWebServer, polite: Settings,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Proxy.seen = []
    page = site.url("127.0.0.2", "/p1.html")
    try:
        proxied = dataclasses.replace(polite, http_proxy=f"http://127.0.0.1:{server.server_address[1]}")
        client = PoliteHttpClient.from_settings(proxied)
        response = client.get(page)
        client.close()
        assert response.status == 200 and response.headers.get("via") == "test-proxy"
        assert _Proxy.seen == [page] and site.log.count(page) == 1
        # default: no proxy, and the environment's is ignored
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{server.server_address[1]}")
        direct = PoliteHttpClient.from_settings(polite)
        assert direct.get(page).headers.get("via") is None
        direct.close()
        assert _Proxy.seen == [page]
    finally:
        server.shutdown()
        server.server_close()


def test_a_bad_proxy_setting_is_a_usage_error(polite: Settings) -> None:
    from sitemapcrawl.errors import UsageError

    with pytest.raises(UsageError, match="https_proxy"):
        PoliteHttpClient.from_settings(dataclasses.replace(polite, https_proxy="proxy:3128"))


# ------------------------------------------ facts, then the schedule ---


def test_fetch_records_facts_and_updatedb_sets_each_next_fetch(site: TestWebServer, store: Store,
                                                               polite: Settings) -> None:
    settings = dataclasses.replace(polite, max_crawl_delay=2.0, max_cell_bytes=1_500,
                                   default_fetch_interval=10 * 86_400, deferred_interval=86_400)
    site.set_fault(site.url("127.0.0.2", "/busy.html"), FaultSpec(Fault.SLOW_DOWN, status=503, retry_after="7200"))
    cases = {
        "fetched": site.url("127.0.0.2", "/p0.html"),
        "gone": site.url("127.0.0.2", "/gone.html"),
        "redirect": site.url("127.0.0.2", "/old.html"),
        "retry": site.url("127.0.0.2", "/e500.html"),
        "retry-after": site.url("127.0.0.2", "/busy.html"),
        "blocked": site.url("127.0.0.2", "/private/x.html"),
        "too-large": site.url("127.0.0.2", "/big.html"),  # a sitemap row: its body is always kept
        "robots-failing": site.url("127.0.0.4", "/d.html"),
        "over-the-cap": site.url("127.0.0.5", "/s.html"),
    }
    add_rows(store, *(due(u, fetch_interval=10 * 86_400, is_sitemap=name == "too-large") for name, u in cases.items()))
    make_batch(store, settings, "fx")
    run_fetch(store, settings, "fx", store_content=False)
    after_fetch = {name: read(store, url) for name, url in cases.items()}
    assert all(row.next_fetch == PAST for row in after_fetch.values())  # fetch decides no next fetch time
    updatedb(store, UrlRules.from_settings(settings), "fx", mode=CrawlMode.MIXED)
    rows = {name: read(store, url) for name, url in cases.items()}
    status = {name: row.status for name, row in rows.items()}
    assert status == {
        "fetched": FetchStatus.FETCHED, "gone": FetchStatus.GONE, "redirect": FetchStatus.REDIRECT,
        "retry": FetchStatus.RETRY, "retry-after": FetchStatus.RETRY, "blocked": FetchStatus.BLOCKED_ROBOTS,
        "too-large": FetchStatus.TOO_LARGE, "robots-failing": FetchStatus.DEFERRED,
        "over-the-cap": FetchStatus.DEFERRED}

    def wait(name: str) -> timedelta | None:
        row = rows[name]
        assert row.fetch_time is not None
        return None if row.next_fetch is None else row.next_fetch - row.fetch_time

    interval = timedelta(days=10)
    assert wait("fetched") == interval and wait("redirect") == interval
    assert wait("blocked") == interval and wait("too-large") == interval
    assert wait("gone") is None
    assert wait("retry") == timedelta(seconds=60)  # fetch_retry_interval x 2^0
    assert wait("retry-after") == timedelta(seconds=7200)  # the server asked for longer
    robots_row = decode(HostRow, "o", store.row(HOST_TABLE, rowkeys.row_key(site.base_url("127.0.0.4"))[:-1].encode())
                        or {})
    assert rows["robots-failing"].next_fetch == robots_row.robots_retry_at  # robots.txt's retry time, not 24 h
    assert wait("robots-failing") is not None and wait("robots-failing") <= timedelta(seconds=121)
    assert wait("over-the-cap") == timedelta(days=1)  # deferred_interval

    # not modified: fetched again, a 304; the adaptive interval grows by adaptive_inc_rate (0.4)
    add_rows(store, WebPage(cases["fetched"], next_fetch=PAST))
    make_batch(store, settings, "fx2")
    run_fetch(store, settings, "fx2")
    assert read(store, cases["fetched"]).next_fetch == PAST
    updatedb(store, UrlRules.from_settings(settings), "fx2", mode=CrawlMode.MIXED)
    again = read(store, cases["fetched"])
    assert again.status is FetchStatus.NOT_MODIFIED and again.fetch_time is not None
    assert again.next_fetch == again.fetch_time + timedelta(days=14) and again.fetch_interval == 14 * 86_400
