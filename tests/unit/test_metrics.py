"""`/metrics` (`report.metrics`): gauges from a counted snapshot and the batch registry, rendered by
prometheus_client and parsed back by its own text parser; the host label set stays bounded; without
prometheus_client `serve` answers 501 with what to install."""

from __future__ import annotations

import sys
import threading
import urllib.error
import urllib.request
from collections import Counter
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sitemapcrawl.batch.registry import BatchState
from sitemapcrawl.config import Settings
from sitemapcrawl.report.metrics import (
    INSTALL_HINT,
    OTHER_HOSTS,
    TOP_HOSTS,
    crawl_gauges,
    exposition,
    metrics_registry,
)
from sitemapcrawl.report.panels import Extras, SitemapQuality, Snapshot
from sitemapcrawl.report.serve import ServeOptions, make_server, server_url
from sitemapcrawl.report.text import HostSummary, Report, SitemapSummary
from sitemapcrawl.storage.store import Store

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def scrape(snapshot: Snapshot, batches: list[BatchState]) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """/metrics of a snapshot, parsed back: metric name -> (label pairs) -> value."""
    body, content_type = exposition(metrics_registry(lambda: crawl_gauges(snapshot, batches, NOW)))
    assert content_type.startswith("text/plain")
    parsed: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(body.decode("utf-8")):
        assert family.type == "gauge" and family.name.startswith("sitemapcrawl_"), family
        for sample in family.samples:
            parsed.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return parsed


def many_hosts(count: int) -> Snapshot:
    """`count` hosts, host i with i % 7 error rows (some none), and three sitemaps."""
    report = Report()
    for i in range(count):
        host = f"host{i:04d}.example"
        report.hosts[host] = HostSummary(host, rows=10, errors=i % 7, by_status=Counter(fetched=10 - i % 7,
                                                                                        gone=i % 7))
    report.totals.rows = 10 * count
    report.totals.by_status.update(fetched=sum(10 - i % 7 for i in range(count)), gone=sum(i % 7 for i in range(count)))
    report.totals.by_discovery.update(sitemap=7 * count, link=3 * count)
    extras = Extras(counted=True)
    for n, state in enumerate(("ok", "demoted", None)):
        url = f"http://host0000.example/s{n}.xml"
        report.sitemaps.append(SitemapSummary(url, "robots", "fetched", 200, "urlset", 1, 0, 0, 0, (), None, None))
        extras.quality[url] = SitemapQuality(0.5, state, {}, ())
    return Snapshot(NOW, report, extras)


def test_host_labels_stay_bounded_and_sum_to_every_error() -> None:
    snapshot = many_hosts(1000)
    errors = scrape(snapshot, [])["sitemapcrawl_host_error_rows"]
    hosts = {dict(labels)["host"]: value for labels, value in errors.items()}
    assert len(hosts) == TOP_HOSTS + 1 and OTHER_HOSTS in hosts
    # The most errors (6, at i % 7 == 6) come first, ties by name.
    assert sorted(h for h in hosts if h != OTHER_HOSTS) == [f"host{i:04d}.example" for i in range(6, 70, 7)]
    assert sum(hosts.values()) == sum(i % 7 for i in range(1000)) == 2997
    assert hosts[OTHER_HOSTS] == 2997 - 6 * TOP_HOSTS


def test_a_host_without_errors_is_not_named() -> None:
    snapshot = many_hosts(2)  # host0000 has no errors, host0001 one
    errors = scrape(snapshot, [])["sitemapcrawl_host_error_rows"]
    hosts = {dict(labels)["host"]: value for labels, value in errors.items()}
    assert hosts == {"host0001.example": 1.0, OTHER_HOSTS: 0.0}


def test_rows_statuses_sources_and_sitemap_states() -> None:
    parsed = scrape(many_hosts(14), [])
    assert parsed["sitemapcrawl_rows"] == {(): 140.0}
    assert parsed["sitemapcrawl_hosts"] == {(): 14.0}
    status = {dict(k)["status"]: v for k, v in parsed["sitemapcrawl_rows_by_status"].items()}
    assert status["gone"] == sum(i % 7 for i in range(14)) == 42 and status["fetched"] == 98 and status["retry"] == 0
    source = {dict(k)["source"]: v for k, v in parsed["sitemapcrawl_rows_by_discovery"].items()}
    assert source["sitemap"] == 98 and source["link"] == 42 and source["seed"] == 0
    states = {dict(k)["state"]: v for k, v in parsed["sitemapcrawl_sitemaps_by_state"].items()}
    assert states == {"ok": 1, "demoted": 1, "unscored": 1, "blacklisted": 0, "trusted": 0, "blocked": 0}
    assert parsed["sitemapcrawl_snapshot_timestamp_seconds"] == {(): NOW.timestamp()}


def test_batches_by_stage_age_and_last_throughput() -> None:
    batches = [
        # Finished: fetched 600 rows in 120 s (from generate), parsed them in 30 s.
        BatchState("b1", datetime(2026, 12, 1, 10, 0, 0, tzinfo=UTC), 600, 2, "sitemap-only",
                   {"fetch.0/2": "2026-12-01T10:01:00Z", "fetch.1/2": "2026-12-01T10:02:00Z",
                    "parse": "2026-12-01T10:02:30Z", "update": "2026-12-01T10:03:00Z"}),
        # Newer, fetched in 50 s, not parsed yet: the last fetch, not the last parse.
        BatchState("b2", datetime(2026, 12, 1, 11, 0, 0, tzinfo=UTC), 100, 1, "sitemap-only",
                   {"fetch.0/1": "2026-12-01T11:00:50Z"}),
        # Newest, still fetching: the oldest unfinished is b2 (an hour old at NOW).
        BatchState("b3", datetime(2026, 12, 1, 11, 30, 0, tzinfo=UTC), 10, 1, "sitemap-only", {}),
        BatchState("b0", datetime(2026, 12, 1, 9, 0, 0, tzinfo=UTC), 5, 1, "sitemap-only", {"release": "x"}),
    ]
    parsed = scrape(many_hosts(1), batches)
    stages = {dict(k)["stage"]: v for k, v in parsed["sitemapcrawl_batches"].items()}
    assert stages == {"fetching": 1, "fetched": 1, "parsed": 0, "finished": 1, "released": 1}
    assert parsed["sitemapcrawl_oldest_unfinished_batch_age_seconds"] == {(): 3600.0}
    by_phase = {name: {dict(k)["phase"]: v for k, v in parsed[name].items()}
                for name in ("sitemapcrawl_last_batch_rows", "sitemapcrawl_last_batch_duration_seconds",
                             "sitemapcrawl_last_batch_pages_per_second")}
    assert by_phase["sitemapcrawl_last_batch_rows"] == {"fetch": 100, "parse": 600}
    assert by_phase["sitemapcrawl_last_batch_duration_seconds"] == {"fetch": 50, "parse": 30}
    assert by_phase["sitemapcrawl_last_batch_pages_per_second"] == {"fetch": 2, "parse": 20}


def test_no_batch_and_a_phase_under_a_second() -> None:
    parsed = scrape(many_hosts(1), [])
    assert parsed["sitemapcrawl_oldest_unfinished_batch_age_seconds"] == {(): 0.0}
    assert "sitemapcrawl_last_batch_rows" not in parsed
    quick = BatchState("q", NOW, 7, 1, "sitemap-only", {"fetch.0/1": "2026-12-01T12:00:00Z"})
    parsed = scrape(many_hosts(1), [quick])
    assert parsed["sitemapcrawl_last_batch_duration_seconds"] == {(("phase", "fetch"),): 0.0}
    assert "sitemapcrawl_last_batch_pages_per_second" not in parsed  # not a division by zero


def serve_unreachable() -> ThreadingHTTPServer:
    """`serve` (in a thread) over an address where no HBase answers."""
    server = make_server(Store(Settings(hbase="127.0.0.1:1")), ServeOptions(port=0))
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    return server


def test_an_hbase_that_does_not_answer_gets_503_and_a_query_400() -> None:
    server = serve_unreachable()
    try:
        for path, code in (("metrics", 503), ("metrics?x=1", 400)):
            with pytest.raises(urllib.error.HTTPError) as answer:
                urllib.request.urlopen(server_url(server) + path, timeout=30)  # noqa: S310 - loopback
            assert answer.value.code == code, path
        assert b"/metrics takes no parameters" in answer.value.read()
    finally:
        server.shutdown()
        server.server_close()


def test_without_prometheus_client_metrics_answers_501_and_the_rest_still_works(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "prometheus_client" or m.startswith("prometheus_client.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # `import` raises ImportError
    server = serve_unreachable()  # /metrics answers before any table is read
    try:
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(server_url(server) + "metrics", timeout=30)  # noqa: S310 - loopback
        assert answer.value.code == 501
        assert answer.value.read().decode() == f"501 Not Implemented: {INSTALL_HINT}\n"
        with urllib.request.urlopen(server_url(server) + "api", timeout=30) as listing:  # noqa: S310
            assert listing.status == 200
    finally:
        server.shutdown()
        server.server_close()
