"""fetch on a web of many slow hosts (issue 45): every host at once, each at its own pace, nothing twice.

Served by `testweb.latency.LatencyWebServer` (one event loop, each host on
its own address, every answer late, robots.txt with a Crawl-delay), as the
latency benchmark does at 2,000 hosts. The access log judges the fetch: each
page asked once, robots.txt once per host, no two requests to a host closer
than its delay (end to start), and several hosts in flight at once. The
politeness rows left behind hold each host's last request and no live
reservation.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterator

import pytest
from fetch_helpers import AGENT, add_rows, due, read, run_fetch

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.generate import GenerateOptions, generate
from sitemapcrawl.model.cells import column_names, decode
from sitemapcrawl.model.webpage import HOST_TABLE, FetchStatus, HostRow
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb.generate import bulk_web
from sitemapcrawl.testweb.latency import LatencyWebServer
from sitemapcrawl.web.rules import UrlRules

HOSTS, PAGES, LATENCY, CRAWL_DELAY = 120, 3, 0.05, 0.3


@pytest.fixture(scope="module")
def latency_web() -> Iterator[LatencyWebServer]:
    with LatencyWebServer(bulk_web(HOSTS, PAGES, links=False, first_host="127.3.0.1", crawl_delay=CRAWL_DELAY),
                          latency=LATENCY) as server:
        yield server


def test_many_slow_hosts_at_once_each_at_its_pace_each_page_once(latency_web: LatencyWebServer, store: Store,
                                                                 settings: Settings) -> None:
    settings = dataclasses.replace(settings, user_agent=AGENT, delay=0.0, max_connections=40)
    pages = [f"{base}p/{i}.html" for base in latency_web.base_urls() for i in range(PAGES)]
    add_rows(store, *(due(url) for url in pages))
    assert generate(store, UrlRules.from_settings(settings), GenerateOptions(batch_id="mh")).selected == len(pages)
    counts = run_fetch(store, settings, "mh")

    assert counts.done == len(pages) and counts.by_status == {"fetched": len(pages)} and not counts.stopped
    assert all(read(store, url).status is FetchStatus.FETCHED for url in pages)
    records = [r for r in latency_web.log.records() if r.user_agent == AGENT]
    asked: dict[str, int] = defaultdict(int)
    by_host: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in records:
        asked[r.url] += 1
        by_host[r.host].append((r.start, r.end))
    assert sorted(url for url in asked if "/p/" in url) == sorted(pages)
    assert max(asked.values()) == 1  # each page once, robots.txt once per host
    assert sum(1 for url in asked if url.endswith("/robots.txt")) == HOSTS
    for spans in by_host.values():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert start - end >= CRAWL_DELAY - 0.005  # the Crawl-delay, end to start
    # Hosts ran side by side: at some moment many requests were in flight, though never two to one host.
    events = sorted([(r.start, 1) for r in records] + [(r.end, -1) for r in records])
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    assert most >= 20
    assert max(latency_web.log.max_concurrency(host) for host in by_host) == 1


def test_the_politeness_rows_keep_each_hosts_last_request_and_no_live_reservation(
        latency_web: LatencyWebServer, store: Store, settings: Settings) -> None:
    settings = dataclasses.replace(settings, user_agent=AGENT, delay=0.0)
    hosts = latency_web.base_urls()[:10]
    add_rows(store, *(due(f"{base}p/0.html") for base in hosts))
    generate(store, UrlRules.from_settings(settings), GenerateOptions(batch_id="mr"))
    run_fetch(store, settings, "mr")
    fields = ["last_request", "reserved_until"]
    rows = [decode(HostRow, "", cells, fields)
            for _, cells in store.scan(HOST_TABLE, prefix=b"~host:", columns=column_names(HostRow, fields))]
    assert len(rows) == 10
    for row in rows:  # released: the reservation is back at the last request's end
        assert row.last_request is not None and row.reserved_until == row.last_request
