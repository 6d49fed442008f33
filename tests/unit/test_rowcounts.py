"""Row counts and audit samples for serve (sitemapcrawl/scoring/rowcounts.py), and their arithmetic over reruns."""

from __future__ import annotations

from datetime import UTC, datetime

from sitemapcrawl.model.webpage import FetchStatus, QualityState, WebPage
from sitemapcrawl.report.text import Report, SitemapSummary, add_row
from sitemapcrawl.scoring import evidence, rowcounts
from sitemapcrawl.scoring.evidence import Base, Tally, judge
from sitemapcrawl.sitemaps.model import ChangeFreq

T = datetime(2026, 5, 3, tzinfo=UTC)
B1, B2 = "20260101000000-aaaa", "20260102000000-bbbb"
ORIGIN = "127.0.0.2:http:8000"


def page(path: str, **values: object) -> WebPage:
    return WebPage(f"http://127.0.0.2:8000{path}", **values)  # type: ignore[arg-type]


ROWS = [
    page("/s.xml", is_sitemap=True, status=FetchStatus.FETCHED, fetch_time=T),
    page("/a", in_sitemap=True, status=FetchStatus.GONE, http_code=404, lastmod=T, fetch_time=T,
         changefreq=ChangeFreq.DAILY, sitemaps_listing=2),
    page("/b", in_sitemap=True, status=FetchStatus.BLOCKED_ROBOTS, lastmod=T),
    page("/c", status=FetchStatus.FETCHED, link_inlinks=3, fetch_time=T),
    page("/d", seed=True, status=FetchStatus.UNFETCHED),
]


def test_a_row_tally_pins_what_one_row_counts() -> None:
    assert rowcounts.row_tally(ROWS[1]).counts == {
        "rows": 1, "st.gone": 1, "via.sitemap": 1, "in_sitemaps": 1, "errors": 1, "a.http-error": 1,
        "a.orphans": 1, "a.multi-listed": 1, "fresh.fresh": 1, "lm.2026-05": 1, "cf.daily": 1}
    assert rowcounts.row_tally(ROWS[0]).counts == {"rows": 1, "st.fetched": 1, "via.sitemap+document": 1,
                                                   "sitemaps": 1}


def test_summed_tallies_are_the_reports_counts() -> None:
    report = Report()
    total = Tally()
    for row in ROWS:
        add_row(report, row)
        total.add(rowcounts.row_tally(row))
    counts = total.counts
    host = report.hosts["127.0.0.2"]
    assert counts["rows"] == host.rows == report.totals.rows == 5
    assert dict(host.by_status) == {"fetched": 2, "gone": 1, "blocked_robots": 1, "unfetched": 1}
    assert dict(report.totals.by_discovery) == {"sitemap document": 1, "sitemap": 2, "link": 1, "seed": 1}
    assert (host.sitemaps, host.in_sitemaps, host.via_links, host.errors, host.robots_denied) == (1, 2, 1, 1, 1)
    assert rowcounts.named(counts, "st.") == dict(report.totals.by_status) == dict(host.by_status)
    assert rowcounts.named(counts, "via.") == dict(report.totals.by_discovery)
    assert rowcounts.named(counts, "fresh.") == dict(report.totals.freshness)
    assert (counts["sitemaps"], counts["in_sitemaps"], counts["errors"], counts["robots_denied"],
            counts.get("via.link", 0)) == (host.sitemaps, host.in_sitemaps, host.errors, host.robots_denied,
                                           host.via_links)
    assert rowcounts.named(counts, "a.") == {"http-error": 1, "blocked": 1, "orphans": 2, "multi-listed": 1,
                                             "unlisted": 1}
    assert rowcounts.named(counts, "fresh.") == {"fresh": 1, "never fetched": 1}


def test_counts_over_a_rerun_and_a_change_of_status() -> None:
    row = ROWS[3]
    lines, d1 = judge([], {ORIGIN: ("rows", rowcounts.row_tally(row))}, B1)
    gone = WebPage(row.url, status=FetchStatus.GONE, link_inlinks=3, fetch_time=T)
    lines2, d2 = judge(lines, {ORIGIN: ("rows", rowcounts.row_tally(gone))}, B2)
    _again, d2b = judge(lines2, {ORIGIN: ("rows", rowcounts.row_tally(gone))}, B2)
    assert d2[ORIGIN]["rows"].counts == d2b[ORIGIN]["rows"].counts == {
        "st.fetched": -1, "st.gone": 1, "errors": 1}
    cells = {evidence.cell_name(b, 18): "\n".join(evidence.groups_text(d[ORIGIN])) for b, d in ((B1, d1), (B2, d2))}
    _group, tally = evidence.latest(evidence.evidence(Base(count="rows"), cells), "rows")
    assert tally.counts == rowcounts.row_tally(gone).counts


def test_audit_samples_add_remove_and_cap() -> None:
    changes = {"orphans": {f"http://a/{i:03d}": (True, "linked from no crawled page") for i in range(60)}}
    samples = rowcounts.apply_samples({}, changes)
    assert len(samples["orphans"]) == rowcounts.SAMPLE_CAP and min(samples["orphans"]) == "http://a/000"
    assert rowcounts.apply_samples(samples, changes) == {}  # a rerun changes nothing
    after = rowcounts.apply_samples(samples, {"orphans": {"http://a/000": (False, ""), "http://a/059": (True, "")}})
    assert "http://a/000" not in after["orphans"] and "http://a/059" in after["orphans"]
    assert rowcounts.apply_samples({"noindex": {"http://a/1": "meta robots: noindex"}},
                                   {"noindex": {"http://a/1": (False, "")}}) == {"noindex": {}}
    # A sampled URL still on its list takes its new reason.
    moved = rowcounts.apply_samples({"lastmod-suspect": {"http://a/1": "lastmod in the future"}},
                                    {"lastmod-suspect": {"http://a/1": (True, "its sitemap\tgives  one")}})
    assert moved == {"lastmod-suspect": {"http://a/1": "its sitemap gives one"}}


def test_audit_samples_are_url_tab_reason_lines() -> None:
    text = rowcounts.sample_text({"http://a/2": "", "http://a/1": "HTTP 404"})
    assert text == "http://a/1\tHTTP 404\nhttp://a/2"
    assert rowcounts.read_samples({"http-error": text}) == {"http-error": {"http://a/1": "HTTP 404", "http://a/2": ""}}
    assert rowcounts.read_samples({"orphans": "http://a/1\nhttp://a/2\n"}) == {  # as older versions wrote them
        "orphans": {"http://a/1": "", "http://a/2": ""}}


def test_a_sitemap_summary_round_trips() -> None:
    row = page("/s.xml", is_sitemap=True, status=FetchStatus.FETCHED, sitemap_type="urlset", sitemap_entries=3,
               sitemap_problems=("URL limit: kept 3",), quality=0.5, quality_state=QualityState.DEMOTED,
               quality_fetch=0.4, quality_notes=("a note",))
    value = rowcounts.read_summary(rowcounts.summary(row))
    assert value["url"] == row.url and value["state"] == "demoted" and value["signals"]["fetch"] == 0.4
    assert value["problems"] == ("URL limit: kept 3",) and value["notes"] == ("a note",)
    summary = SitemapSummary(**value)  # the report's record, field for field
    assert summary.entries == 3 and summary.quality == 0.5 and summary.type == "urlset"


def test_sample_changes_hold_a_bounded_set_and_give_what_all_changes_give() -> None:
    stored = {"orphans": {f"http://a/{n:04d}": "old" for n in range(0, 100, 2)}}  # 50 sampled, even numbers
    every: rowcounts.Noted = {"orphans": {}}
    bounded = rowcounts.SampleChanges(stored)
    for n in range(5000, 0, -1):  # a batch far larger than the cap, in no particular order
        url, on = f"http://a/{n:04d}", n % 7 != 0
        why = "new" if n % 3 == 0 else "old"
        every["orphans"][url] = (on, why)
        bounded.note("orphans", url, on, why)
    assert sum(len(listed) for listed in bounded.changes.values()) <= 5 * rowcounts.SAMPLE_CAP
    assert rowcounts.apply_samples(stored, bounded.changes) == rowcounts.apply_samples(stored, every)
    assert len(rowcounts.apply_samples(stored, every)["orphans"]) == rowcounts.SAMPLE_CAP
