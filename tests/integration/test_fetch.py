"""fetch against the real HBase and the loopback test web.

Politeness is measured from the test server's own access log: its `start`
is when a request's headers had been read, its `end` just before the last
bytes of the answer went out, so a gap it sees is never longer than the one
the fetcher kept.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from fetch_helpers import AGENT, PAST, add_rows, due, read, run_fetch
from waiting import wait_for

from sitemapcrawl.clock import Clock, utc_now
from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.fetch import FetchCounts
from sitemapcrawl.jobs.generate import GenerateOptions, generate
from sitemapcrawl.jobs.updatedb import updatedb
from sitemapcrawl.model.cells import decode
from sitemapcrawl.model.webpage import HOST_TABLE, FetchStatus, HostRow, RobotsStatus, WebPage
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.storage.hosts import origin_key
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import (
    Fault,
    FaultSpec,
    Page,
    PageRange,
    Robots,
    RobotsGroup,
    Site,
    Sitemap,
    TestWebServer,
    Web,
)
from sitemapcrawl.web.rules import UrlRules


def fetch_web() -> Web:
    """Two sites: a shop with every kind of answer, and a blog with a crawl delay."""
    shop_pages = tuple(Page(f"/p{i}.html", f"Page {i}") for i in range(6)) + (
        Page("/new.html", "New"), Page("/private/x.html", "Private"), Page("/e500.html"),
        Page("/slow.html"), Page("/big.html"))
    shop = Site(
        "127.0.0.2", "shop", shop_pages, ranges=(PageRange("/p/", 50, links=False),),
        robots=Robots(groups=(RobotsGroup(("*",), disallow=("/private/",)),)),
        sitemaps=(Sitemap("/sitemap.xml", ranges=(PageRange("/p/", 50, links=False),)),),
        faults=(("/old.html", FaultSpec(Fault.REDIRECT, target="/new.html")),
                ("/away.html", FaultSpec(Fault.REDIRECT, target="//127.0.0.3/landing.html")),
                ("/loop.html", FaultSpec(Fault.REDIRECT_LOOP)),
                ("/e500.html", FaultSpec(Fault.SERVER_ERROR)),
                ("/slow.html", FaultSpec(Fault.SLOW, delay=3.0)),
                ("/gone.html", FaultSpec(Fault.GONE)),
                ("/big.html", FaultSpec(Fault.OVERSIZED, size=300_000))),
    )
    blog = Site("127.0.0.3", "blog", tuple(Page(f"/b{i}.html", f"Post {i}") for i in range(4))
                + (Page("/landing.html", "Landing"),),
                robots=Robots(groups=(RobotsGroup(("*",), crawl_delay=0.4),)))
    return Web((shop, blog), "fetch-test")


@pytest.fixture
def site(make_testweb: Callable[[Web], TestWebServer]) -> TestWebServer:
    return make_testweb(fetch_web())


@pytest.fixture
def fetch_settings(settings: Settings) -> Settings:
    return dataclasses.replace(settings, user_agent=AGENT, delay=0.05, http_read_timeout=1.0,
                               fetch_retry_interval=60, max_fetch_retries=2)


def batch(store: Store, settings: Settings, batch_id: str, fetch_splits: int = 1,
          clock: Clock = utc_now) -> None:
    counts = generate(store, UrlRules.from_settings(settings),
                      GenerateOptions(batch_id=batch_id, fetch_splits=fetch_splits), clock=clock)
    assert counts.selected > 0


def merge(store: Store, settings: Settings, batch_id: str) -> None:
    updatedb(store, UrlRules.from_settings(settings), batch_id, mode=CrawlMode.MIXED)


def test_outcomes_politeness_and_user_agent(site: TestWebServer, store: Store, fetch_settings: Settings) -> None:
    settings = dataclasses.replace(fetch_settings, delay=0.3)
    pages = [site.url("127.0.0.2", f"/p{i}.html") for i in range(6)]
    add_rows(store, *(due(u) for u in pages),
             due(site.url("127.0.0.2", "/sitemap.xml"), is_sitemap=True,
                 lastmod=datetime(2030, 1, 1, tzinfo=UTC)),
             due(site.url("127.0.0.2", "/private/x.html")), due(site.url("127.0.0.2", "/gone.html")),
             due(site.url("127.0.0.2", "/e500.html")))
    batch(store, settings, "b1")
    counts = run_fetch(store, settings, "b1")

    assert counts.total == 10 and counts.done == 10 and counts.stopped is None
    assert counts.by_status == {"fetched": 7, "blocked_robots": 1, "gone": 1, "retry": 1}
    records = site.log.records("127.0.0.2")
    assert {r.user_agent for r in records} == {AGENT}
    assert records[0].target == "/robots.txt"
    assert not site.log.was_fetched(site.url("127.0.0.2", "/private/x.html"))
    gap = site.log.min_gap("127.0.0.2")
    assert gap is not None and gap >= 0.3
    assert site.log.max_concurrency("127.0.0.2") == 1
    # a sitemap's <lastmod> is never sent as If-Modified-Since
    assert all(not r.if_modified_since and not r.if_none_match for r in records)

    page = read(store, pages[0])
    assert (page.status, page.http_code, page.fetch_mark) == (FetchStatus.FETCHED, 200, "b1")
    assert page.etag and page.last_modified and page.signature and page.content_changed
    assert page.content is None and page.truncated is False and page.retries == 0
    sitemap = read(store, site.url("127.0.0.2", "/sitemap.xml"))
    assert sitemap.status is FetchStatus.FETCHED and sitemap.content and b"<urlset" in sitemap.content
    assert read(store, site.url("127.0.0.2", "/private/x.html")).status is FetchStatus.BLOCKED_ROBOTS
    gone = read(store, site.url("127.0.0.2", "/gone.html"))
    assert (gone.status, gone.http_code) == (FetchStatus.GONE, 410)
    failed = read(store, site.url("127.0.0.2", "/e500.html"))
    assert (failed.status, failed.retries, failed.error) == (FetchStatus.RETRY, 1, "HTTP 500")
    # fetch records facts; the next fetch time is the schedule's, written by updatedb (issue 10)
    assert failed.next_fetch == PAST
    merge(store, settings, "b1")
    failed = read(store, site.url("127.0.0.2", "/e500.html"))
    assert failed.next_fetch is not None and failed.fetch_time is not None
    assert failed.next_fetch - failed.fetch_time == timedelta(seconds=60)

    host = decode(HostRow, "x", store.row(HOST_TABLE, origin_key(site.base_url("127.0.0.2")[:-1])) or {})
    assert host.robots_status is RobotsStatus.OK and "Disallow: /private/" in (host.robots_text or "")

    # resumable: the same batch again fetches nothing
    site.log.clear()
    again = run_fetch(store, settings, "b1")
    assert again.total == 0 and again.already_done == 10 and len(site.log) == 0


def test_crawl_delay_is_honoured_and_deferred_over_the_cap(site: TestWebServer, store: Store,
                                                           fetch_settings: Settings) -> None:
    posts = [site.url("127.0.0.3", f"/b{i}.html") for i in range(4)]
    add_rows(store, *(due(u) for u in posts))
    batch(store, fetch_settings, "cd")
    run_fetch(store, fetch_settings, "cd")
    gap = site.log.min_gap("127.0.0.3")
    assert gap is not None and gap >= 0.4  # robots.txt says 0.4 s, the setting 0.05 s
    assert all(read(store, u).status is FetchStatus.FETCHED for u in posts)

    site.log.clear()
    capped = dataclasses.replace(fetch_settings, max_crawl_delay=0.2, robots_max_age=0)
    add_rows(store, *(due(u, generate_mark="cd", update_mark="cd") for u in posts))
    batch(store, capped, "cd2")
    counts = run_fetch(store, capped, "cd2")
    assert counts.by_status == {"deferred": 4}
    assert site.log.paths("127.0.0.3") == ["/robots.txt"]
    merge(store, capped, "cd2")
    row = read(store, posts[0])
    assert row.status is FetchStatus.DEFERRED and "Crawl-delay" in (row.error or "")
    assert row.next_fetch is not None and row.fetch_time is not None and row.next_fetch > row.fetch_time


def test_threads_per_host(site: TestWebServer, store: Store, fetch_settings: Settings) -> None:
    pages = [site.url("127.0.0.2", f"/p{i}.html") for i in range(6)]
    for i in range(6):
        site.set_fault(pages[i], FaultSpec(Fault.SLOW, delay=0.4))
    add_rows(store, *(due(u) for u in pages))
    batch(store, fetch_settings, "tph")
    run_fetch(store, fetch_settings, "tph", connections=6, threads_per_host=2)
    assert site.log.max_concurrency("127.0.0.2") == 2
    assert all(read(store, u).status is FetchStatus.FETCHED for u in pages)


def test_redirects_same_host_other_host_and_loops(site: TestWebServer, store: Store,
                                                  fetch_settings: Settings) -> None:
    old, new = site.url("127.0.0.2", "/old.html"), site.url("127.0.0.2", "/new.html")
    away, landing = site.url("127.0.0.2", "/away.html"), site.url("127.0.0.3", "/landing.html")
    loop = site.url("127.0.0.2", "/loop.html")
    add_rows(store, due(old), due(away), due(loop))
    batch(store, fetch_settings, "rd")
    counts = run_fetch(store, fetch_settings, "rd")

    moved = read(store, old)
    assert (moved.status, moved.http_code, moved.redirect_to) == (FetchStatus.REDIRECT, 301, new)
    target = read(store, new)
    assert (target.status, target.generate_mark, target.fetch_mark) == (FetchStatus.FETCHED, "rd", "rd")
    assert target.score == 1.0 and target.depth == 2
    assert site.log.count(new) == 1

    elsewhere = read(store, away)
    assert (elsewhere.status, elsewhere.redirect_to) == (FetchStatus.REDIRECT, landing)
    fresh = read(store, landing)
    assert fresh.status is FetchStatus.UNFETCHED and fresh.generate_mark is None and fresh.next_fetch
    assert not site.log.was_fetched(landing)

    looped = read(store, loop)
    assert looped.status is FetchStatus.REDIRECT and looped.error == "redirect loop"
    assert site.log.count(loop) == 1
    assert counts.redirects_followed == 1 and counts.new_rows == 2


def test_conditional_get_gives_not_modified(site: TestWebServer, store: Store, fetch_settings: Settings) -> None:
    page = site.url("127.0.0.2", "/p1.html")
    add_rows(store, due(page))
    batch(store, fetch_settings, "c1")
    run_fetch(store, fetch_settings, "c1")
    first = read(store, page)
    # as updatedb would: merged, due again
    add_rows(store, WebPage(page, update_mark="c1", next_fetch=PAST))
    batch(store, fetch_settings, "c2")
    run_fetch(store, fetch_settings, "c2")
    second = read(store, page)
    assert second.status is FetchStatus.NOT_MODIFIED and second.http_code == 304
    assert second.etag == first.etag and second.prev_fetch_time == first.fetch_time
    asked = [r for r in site.log.records("127.0.0.2") if r.target == "/p1.html"]
    assert [r.if_none_match for r in asked] == ["", first.etag]
    assert asked[1].if_modified_since == first.last_modified


def test_timeouts_and_500s_are_retried_then_gone(site: TestWebServer, store: Store,
                                                 fetch_settings: Settings) -> None:
    slow, failing = site.url("127.0.0.2", "/slow.html"), site.url("127.0.0.2", "/e500.html")
    add_rows(store, due(slow), due(failing))
    batch(store, fetch_settings, "r1")
    run_fetch(store, fetch_settings, "r1")
    timed_out = read(store, slow)
    assert (timed_out.status, timed_out.retries, timed_out.error) == (FetchStatus.RETRY, 1, "timed out")
    # the retry is rescheduled by updatedb (the schedule): generate takes it again once due
    merge(store, fetch_settings, "r1")
    later = max(read(store, u).next_fetch or PAST for u in (slow, failing)) + timedelta(seconds=1)
    batch(store, fetch_settings, "r2", clock=lambda: later)
    run_fetch(store, fetch_settings, "r2")
    for url in (slow, failing):
        row = read(store, url)
        assert (row.status, row.retries) == (FetchStatus.GONE, 2)
    # the server logs a slow answer when it is written, after the client gave up
    wait_for(lambda: site.log.count(slow) >= 2, 10, "the slow page's second answer was never logged")
    assert site.log.count(slow) == 2 and site.log.count(failing) == 2


def test_truncated_and_too_large_bodies(site: TestWebServer, store: Store, fetch_settings: Settings) -> None:
    big, sitemap = site.url("127.0.0.2", "/big.html"), site.url("127.0.0.2", "/sitemap.xml")
    site.set_fault(sitemap, FaultSpec(Fault.OVERSIZED, size=200_000))
    settings = dataclasses.replace(fetch_settings, max_content_bytes=100_000, max_cell_bytes=1_500)
    add_rows(store, due(big), due(sitemap, is_sitemap=True))
    batch(store, settings, "big")
    run_fetch(store, settings, "big", store_content=False)
    page = read(store, big)
    assert (page.status, page.truncated, page.content) == (FetchStatus.FETCHED, True, None)
    too_large = read(store, sitemap)
    assert too_large.status is FetchStatus.TOO_LARGE and too_large.content is None
    assert "cell limit" in (too_large.error or "")


def test_two_partitions_in_parallel_fetch_each_url_once(site: TestWebServer, store: Store,
                                                        fetch_settings: Settings) -> None:
    pages = [site.url("127.0.0.2", f"/p{i}.html") for i in range(6)] + [
        site.url("127.0.0.3", f"/b{i}.html") for i in range(4)]
    add_rows(store, *(due(u) for u in pages))
    batch(store, fetch_settings, "par", fetch_splits=2)
    results: list[FetchCounts] = []

    def worker(k: int) -> None:
        with Store(fetch_settings) as own:
            results.append(run_fetch(own, fetch_settings, "par", fetch_split=(k, 2)))

    threads = [threading.Thread(target=worker, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sum(r.done for r in results) == 10
    assert sum(r.total for r in results) == 10
    fetched = [r.url for r in site.log.records() if r.target != "/robots.txt"]
    assert sorted(fetched) == sorted(pages)  # each exactly once
    assert all(read(store, u).fetch_mark == "par" for u in pages)


def test_time_limit_and_min_throughput_leave_the_rest(site: TestWebServer, store: Store,
                                                      fetch_settings: Settings) -> None:
    pages = [site.url("127.0.0.2", f"/p/{i}.html") for i in range(30)]
    settings = dataclasses.replace(fetch_settings, delay=0.2)
    add_rows(store, *(due(u) for u in pages))
    batch(store, settings, "tl")
    counts = run_fetch(store, settings, "tl", time_limit=0.5)
    assert counts.stopped and "time limit" in counts.stopped
    assert 0 < counts.done < 30 and counts.left == 30 - counts.done
    untouched = [u for u in pages if read(store, u).fetch_mark is None]
    assert len(untouched) == 30 - counts.done

    slow = run_fetch(store, settings, "tl", min_throughput=1000.0, warmup=0.0, throughput_window=0.5)
    assert slow.stopped and "throughput" in slow.stopped and slow.already_done == counts.done
    assert slow.done < slow.total


@pytest.fixture
def cli_env(fetch_settings: Settings) -> Iterator[dict[str, str]]:
    env = dict(os.environ, SITEMAPCRAWL_HBASE=fetch_settings.hbase,
               SITEMAPCRAWL_TABLE_PREFIX=fetch_settings.table_prefix, SITEMAPCRAWL_USER_AGENT=AGENT)
    yield env


def test_ctrl_c_stops_cleanly_and_the_batch_resumes(site: TestWebServer, store: Store,
                                                   fetch_settings: Settings, cli_env: dict[str, str]) -> None:
    pages = [site.url("127.0.0.2", f"/p/{i}.html") for i in range(20)]
    add_rows(store, *(due(u) for u in pages))
    batch(store, fetch_settings, "cc")
    command = [sys.executable, "-m", "sitemapcrawl", "-q", "fetch", "--batch", "cc", "--delay", "0.2"]
    process = subprocess.Popen(command, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: len(site.log.records("127.0.0.2")) >= 5, 60, "the fetch made fewer than 5 requests")
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    done = [u for u in pages if read(store, u).fetch_mark == "cc"]
    fetched_before = {r.url for r in site.log.records() if r.target != "/robots.txt"}
    assert 0 < len(done) < 20
    assert set(done) <= fetched_before

    finish = subprocess.run(command[:4] + ["fetch", "--batch", "cc", "--delay", "0"], env=cli_env,
                            capture_output=True, text=True, timeout=120)
    assert finish.returncode == 0, finish.stderr
    assert all(read(store, u).fetch_mark == "cc" for u in pages)
    for url in done:
        assert site.log.count(url) == 1  # what was written is never fetched again
