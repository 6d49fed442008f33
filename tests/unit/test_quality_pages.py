"""The report panels and their HTML without HBase: query options, buckets, escaping, charts."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from memory_store import MemoryStore

from sitemapcrawl.errors import UsageError
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.webpage import HOST_TABLE, ChangeFreq, HostRow, QualityState, WebPage
from sitemapcrawl.report.html import bar_chart, page, render_panel
from sitemapcrawl.report.panels import (
    AUDIT_CAP,
    PANELS,
    Extras,
    SitemapQuality,
    Snapshot,
    add_extra,
    panel_data,
    panel_options,
    take_counted_snapshot,
)
from sitemapcrawl.report.serve import ServeOptions
from sitemapcrawl.report.text import Report, SitemapSummary
from sitemapcrawl.scoring import rowcounts
from sitemapcrawl.web import rowkeys

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
HOSTILE = "<script>alert(1)</script>"


def snapshot() -> Snapshot:
    report = Report()
    report.totals.rows = 3
    report.totals.by_status = Counter({"fetched": 2, "gone": 1})
    report.sitemaps = [
        SitemapSummary("http://a.test/good.xml", "robots", "fetched", 200, "urlset", 2, 0, 0, 0, (), None, None),
        SitemapSummary("http://a.test/bad.xml", "seed", "fetched", 200, "urlset", 9, 0, 0, 0, (HOSTILE,),
                       "quality 0.1 < 0.2: all gone", None),
        SitemapSummary("http://a.test/new.xml", "index", None, None, None, None, None, None, None, (), None, None),
    ]
    extras = Extras(quality={
        "http://a.test/good.xml": SitemapQuality(1.0, "ok", {"fetch": 1.0}, ()),
        "http://a.test/bad.xml": SitemapQuality(0.1, "blacklisted", {"fetch": 0.1}, ("9 of 9 failed",)),
    })
    return Snapshot(NOW, report, extras)


def test_panel_options_are_typed_or_refused_with_a_message() -> None:
    assert panel_options("sitemaps", {"limit": ["5"], "state": ["demoted"]}) == {
        "limit": 5, "state": QualityState.DEMOTED}
    assert panel_options("totals", {}) == {}
    for name, query, words in [
        ("sitemaps", {"limit": ["x"]}, "limit must be"), ("sitemaps", {"limit": ["999999999"]}, "limit must be"),
        ("sitemaps", {"state": ["good"]}, "state must be one of"), ("totals", {"limit": ["1"]}, "unknown parameter"),
        ("hosts", {"limit": ["1", "2"]}, "given 2 times"), ("sitemaps", {"limit": ["9" * 5_000]}, "limit must be"),
        ("hosts", {"limit": ["²"]}, "limit must be"), ("history", {"limit": ["٣"]}, "limit must be"),
    ]:
        with pytest.raises(UsageError, match=words):
            panel_options(name, query)


def test_sitemaps_panel_puts_the_worst_first_and_filters_by_state() -> None:
    data = panel_data(snapshot(), "sitemaps")
    assert [s["url"] for s in data["sitemaps"]] == [
        "http://a.test/bad.xml", "http://a.test/good.xml", "http://a.test/new.xml"]
    assert data["sitemaps"][2]["quality"] is None and data["count"] == 3
    only = panel_data(snapshot(), "sitemaps", {"state": QualityState.OK, "limit": 1})
    assert only["count"] == 1 and [s["url"] for s in only["sitemaps"]] == ["http://a.test/good.xml"]


def test_extras_bucket_lastmods_changefreqs_and_due_times() -> None:
    extras = Extras()
    rows = [
        WebPage("http://a.test/1", lastmod=NOW - timedelta(hours=2), changefreq=ChangeFreq.DAILY, next_fetch=NOW),
        WebPage("http://a.test/2", lastmod=NOW + timedelta(days=2), next_fetch=NOW + timedelta(minutes=5)),
        WebPage("http://a.test/3", lastmod=NOW - timedelta(days=400), next_fetch=NOW + timedelta(days=90)),
        WebPage("http://a.test/4"),
        WebPage("http://a.test/s.xml", is_sitemap=True, quality=0.5, quality_state=QualityState.DEMOTED,
                quality_fetch=0.5, next_fetch=NOW - timedelta(days=1)),
    ]
    for row in rows:
        add_extra(extras, row, NOW)
    assert extras.lastmod_age == {"< 1 day": 1, "future": 1, "older": 1, "no lastmod": 1}
    assert extras.changefreq == {"daily": 1, "none": 3}
    assert extras.due == {"due now": 2, "< 1 hour": 1, "later": 1, "never": 1}
    assert extras.quality["http://a.test/s.xml"].signals["fetch"] == 0.5


def test_every_value_from_the_table_is_escaped() -> None:
    html = page(snapshot())
    assert HOSTILE not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    chart = bar_chart([[HOSTILE, 3]], HOSTILE)
    assert "<script>" not in chart and chart.count("<rect") == 1
    for name in PANELS:
        assert "<script>" not in render_panel(snapshot(), name)


def test_bar_lengths_follow_the_values() -> None:
    chart = bar_chart([["a", 10], ["b", 5], ["c", 0]], "t", width=400)
    widths = [float(part.split('"')[0]) for part in chart.split('width="')[2:]]
    assert widths[0] == pytest.approx(2 * widths[1]) and widths[2] == 0.0


def test_serve_options_are_checked() -> None:
    ServeOptions().check()
    for bad in (ServeOptions(port=70000), ServeOptions(refresh=0.5), ServeOptions(refresh=4000)):
        with pytest.raises(UsageError):
            bad.check()


def test_the_counted_audit_shows_the_first_samples_in_key_order_of_many_origins() -> None:
    """`serve`'s audit lists, from the samples of more origins than a list shows: the first `AUDIT_CAP` in
    row-key order, with their reasons, however many origins hold samples."""
    class HostScan(MemoryStore):
        def require_tables(self, *_tables: str) -> None:
            pass

        def existing_tables(self) -> set[str]:
            return {HOST_TABLE}

        def scan(self, table: str, stop: bytes, columns: object = None) -> list[tuple[bytes, dict[bytes, bytes]]]:
            return [(key, cells) for key, cells in sorted(self.tables[table].items()) if key < stop]

    store = HostScan()
    every: list[str] = []
    for origin in (f"http://127.0.0.{n}" for n in range(2, 9)):
        listed = {f"{origin}/p/{n}.html": f"linked from no crawled page {n}" for n in range(AUDIT_CAP)}
        every += listed
        store.tables[HOST_TABLE][rowkeys.row_key(origin + "/")[:-1].encode()] = encode(
            HostRow("", audit_samples={"orphans": rowcounts.sample_text(listed)}))
    audit = take_counted_snapshot(store, NOW).extras.audit["orphans"]  # type: ignore[arg-type]
    first = sorted(every, key=rowkeys.row_key)[:AUDIT_CAP]
    assert audit.urls == first
    assert audit.reasons[first[-1]] == f"linked from no crawled page {first[-1].split('/')[-1][:-5]}"
