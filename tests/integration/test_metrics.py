"""`serve`'s /metrics after a crawl of the loopback web: parsed back with prometheus_client's own text
parser, its values are those of `report --jsonl` on the same table; fourteen hosts with errors keep
the host label set at `TOP_HOSTS` + `other`; a scrape reads the host, history and batch tables only
(never a `webpage` row), and at most once per refresh."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import cli
from counting_store import CountingStore
from prometheus_client.parser import text_string_to_metric_families

from sitemapcrawl.batch import registry
from sitemapcrawl.config import Settings
from sitemapcrawl.model.webpage import BATCH_TABLE, HISTORY_TABLE, HOST_TABLE, WEBPAGE_TABLE
from sitemapcrawl.report.metrics import OTHER_HOSTS, TOP_HOSTS
from sitemapcrawl.report.serve import ServeOptions, make_server, server_url
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import Fault, TestWebServer, bulk_web

HOSTS = 14


@pytest.fixture
def crawled(store: Store, settings: Settings, make_testweb, tmp_path: Path) -> TestWebServer:  # type: ignore[no-untyped-def]
    """Fourteen hosts of three sitemap-listed pages, crawled in mixed mode (so the seeds are fetched,
    and counted); host i answers 404 for its first i % 3 + 1 pages (27 in all)."""
    server = make_testweb(bulk_web(HOSTS, 3, links=False, first_host="127.0.4.1"))
    for n, site in enumerate(server.web.sites):
        for page in range(n % 3 + 1):
            server.set_fault(server.url(site, f"/p/{page}.html"), Fault.NOT_FOUND)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{url}\n" for url in server.truth.seeds()))
    done = cli(settings, "crawl", str(seeds), "--mode", "mixed", "--delay", "0", "--rounds", "3",
               user_agent="sitemapcrawl-test/1.0")
    assert done.exit_code == 0, done.output
    return server


@pytest.fixture
def counting(settings: Settings) -> Iterator[tuple[CountingStore, str]]:
    """`serve` over a counting store, reading the tables at most once a minute, and its address."""
    with CountingStore(settings) as store:
        server = make_server(store, ServeOptions(port=0, refresh=60.0))
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        thread.start()
        try:
            yield store, server_url(server)
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=30)


def scrape(url: str) -> dict[str, dict[str, float]]:
    """/metrics parsed back: metric name -> its one label's value ('' when none) -> value."""
    with urllib.request.urlopen(url + "metrics", timeout=30) as answer:  # noqa: S310 - loopback only
        assert answer.status == 200 and answer.headers["Content-Type"].startswith("text/plain; version=")
        text = answer.read().decode("utf-8")
    parsed: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            assert len(sample.labels) <= 1, sample
            parsed.setdefault(sample.name, {})[next(iter(sample.labels.values()), "")] = sample.value
    return parsed


def test_metrics_equal_the_report_and_read_no_webpage_row(crawled: TestWebServer, settings: Settings,
                                                         store: Store, counting: tuple[CountingStore, str]) -> None:
    reader, url = counting
    report = cli(settings, "report", "--jsonl")
    assert report.exit_code == 0, report.output
    records = [json.loads(line) for line in report.stdout.splitlines()]
    totals = records[-1]
    hosts = [r for r in records if r["kind"] == "host"]
    sitemaps = [r for r in records if r["kind"] == "sitemap"]

    reader.reset()
    metrics = scrape(url)
    # One scan of each small table; not one webpage row read, not even by a get.
    assert reader.read(WEBPAGE_TABLE) == 0 and not reader.keys_got
    assert {call.table for call in reader.scans} == {HOST_TABLE, HISTORY_TABLE, BATCH_TABLE}
    assert reader.read(HOST_TABLE) >= HOSTS
    reader.reset()
    assert scrape(url) == metrics and not reader.scans  # within the refresh: the cached snapshot

    assert metrics["sitemapcrawl_rows"] == {"": totals["rows"]} and totals["rows"] == HOSTS * 5
    assert metrics["sitemapcrawl_hosts"] == {"": len(hosts)} and len(hosts) == HOSTS
    by_status = metrics["sitemapcrawl_rows_by_status"]
    assert {s: n for s, n in by_status.items() if n} == totals["by_status"] and totals["by_status"]["gone"] == 27
    by_discovery = metrics["sitemapcrawl_rows_by_discovery"]
    assert {s: n for s, n in by_discovery.items() if n} == totals["by_discovery"]

    # Fourteen hosts with errors: the ten with the most by name, the other four summed.
    ranked = sorted(hosts, key=lambda h: (-h["errors"], h["host"]))
    assert all(h["errors"] for h in hosts) and len(ranked) > TOP_HOSTS
    expected = {h["host"]: h["errors"] for h in ranked[:TOP_HOSTS]}
    expected[OTHER_HOSTS] = sum(h["errors"] for h in ranked[TOP_HOSTS:])
    assert metrics["sitemapcrawl_host_error_rows"] == expected and expected[OTHER_HOSTS] > 0

    states = Counter(s["state"] or "unscored" for s in sitemaps)
    assert {s: n for s, n in metrics["sitemapcrawl_sitemaps_by_state"].items() if n} == states
    assert sum(states.values()) == len(sitemaps) == HOSTS

    batches = registry.every_batch(store)
    assert metrics["sitemapcrawl_batches"]["finished"] == len(batches) >= 2
    assert metrics["sitemapcrawl_oldest_unfinished_batch_age_seconds"] == {"": 0.0}
    last = batches[-1]
    assert metrics["sitemapcrawl_last_batch_rows"] == {"fetch": last.selected, "parse": last.selected}
    fetch_seconds = metrics["sitemapcrawl_last_batch_duration_seconds"]["fetch"]
    assert fetch_seconds == (last.finished_at(registry.FETCH) - last.generated).total_seconds()  # type: ignore[operator]
    if fetch_seconds:
        assert metrics["sitemapcrawl_last_batch_pages_per_second"]["fetch"] == (last.selected or 0) / fetch_seconds
