"""Link cell formats, the depth/radius hop, and updatedb's pure merge and spread."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.updatedb import MERGE_FIELDS, FirstListings, UpdateCounts, merge_row, spread_cells
from sitemapcrawl.model.audit import is_multi_listed, listing_count
from sitemapcrawl.model.cells import decode, encode, overlaid
from sitemapcrawl.model.linkvalues import (
    Inlink,
    InlinkKind,
    Outlink,
    OutlinkKind,
    format_inlink,
    format_outlink,
    hop,
    parse_inlink,
    parse_outlink,
)
from sitemapcrawl.model.schedule import DAY, SchedulePolicy, schedule
from sitemapcrawl.model.webpage import ChangeFreq, FetchStatus, SitemapSource, WebPage
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.web.rules import UrlRules

NOW = datetime(2025, 6, 1, tzinfo=UTC)
POLICY = SchedulePolicy()
A = "http://127.0.0.2/sitemap-a.xml"
B = "http://127.0.0.2/sitemap-b.xml"


def test_inlink_text_round_trips_and_reads_like_the_docs() -> None:
    link = Inlink(InlinkKind.SITEMAP, 1, 0, "b1", priority=0.8, changefreq=ChangeFreq.DAILY,
                  lastmod=datetime(2024, 3, 1, tzinfo=UTC))
    text = format_inlink(link)
    assert text == "sitemap pr=0.8 cf=daily lm=2024-03-01T00:00:00Z dp=1 ra=0 b=b1"
    assert parse_inlink(text) == link
    anchored = Inlink(InlinkKind.LINK, 0, 2, "b2", score=0.25, sitemap_candidate=True, anchor="About  us\n")
    assert parse_inlink(format_inlink(anchored)) == Inlink(InlinkKind.LINK, 0, 2, "b2", score=0.25,
                                                           sitemap_candidate=True, anchor="About us")


def test_unreadable_cells_give_none() -> None:
    for text in ("", "anchor text", "sitemap dp=x", "sitemap lm=2024", "link cf=sometimes"):
        assert parse_inlink(text) is None, text
    assert parse_outlink("b\tx") is None
    assert parse_outlink(format_outlink(Outlink(OutlinkKind.SITEMAP, "Map"))) == Outlink(OutlinkKind.SITEMAP, "Map")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_parse_inlink_never_raises(text: str) -> None:
    parsed = parse_inlink(text)
    assert parsed is None or isinstance(parsed, Inlink)


def test_hop() -> None:
    assert hop(2, 1, same_domain=True) == (1, 1)
    assert hop(0, 1, same_domain=True) == (0, 0)
    assert hop(3, 1, same_domain=False) == (0, 0)
    assert hop(3, 0, same_domain=False) == (0, -1)


def listed(url: str, *links: tuple[str, Inlink], **values: object) -> WebPage:
    return WebPage(url, inlinks={source: format_inlink(link) for source, link in links}, **values)  # type: ignore[arg-type]


def test_two_sitemaps_merge_highest_priority_latest_lastmod_eagerest_changefreq() -> None:
    early, late = datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 5, 1, tzinfo=UTC)
    row = listed("http://127.0.0.2/p.html",
                 (A, Inlink(InlinkKind.SITEMAP, 1, 0, "b", priority=0.3, changefreq=ChangeFreq.DAILY,
                            lastmod=late)),
                 (B, Inlink(InlinkKind.SITEMAP, 0, 0, "b", priority=0.9, changefreq=ChangeFreq.WEEKLY,
                            lastmod=early)))
    merged = merge_row(row, "b", CrawlMode.SITEMAP_ONLY, POLICY, NOW)
    assert (merged.priority, merged.lastmod, merged.changefreq) == (0.9, late, ChangeFreq.DAILY)
    assert merged.in_sitemap and (merged.depth, merged.radius) == (1, 0)
    assert merged.status is FetchStatus.UNFETCHED and merged.next_fetch == NOW
    assert merged.score == 0.0 and merged.merge_mark is None  # no link score: a rerun repeats it exactly
    # No interval cell on a new row: the schedule derives the changefreq's, before and after its first fetch.
    assert merged.fetch_interval is None
    assert schedule(overlaid(row, merged), POLICY, NOW, just_fetched=False).interval == DAY
    fetched = replace(overlaid(row, merged), status=FetchStatus.FETCHED, fetch_time=NOW)
    assert schedule(fetched, POLICY, NOW, just_fetched=True).interval == DAY
    assert merged.is_sitemap is None


def test_counts_absence_already_says_are_not_written() -> None:
    once = listed("http://127.0.0.2/p.html", (A, Inlink(InlinkKind.SITEMAP, 0, 0, "b", priority=0.5)))
    merged = merge_row(once, "b", CrawlMode.SITEMAP_ONLY, POLICY, NOW)
    assert merged.sitemaps_listing is None and merged.link_inlinks is None  # one sitemap, no link: no cell
    assert listing_count(overlaid(once, merged)) == 1 and not is_multi_listed(overlaid(once, merged))
    twice = listed("http://127.0.0.2/p.html", (A, Inlink(InlinkKind.SITEMAP, 0, 0, "b")),
                   (B, Inlink(InlinkKind.SITEMAP, 0, 0, "b")),
                   ("http://127.0.0.3/", Inlink(InlinkKind.LINK, 0, 0, "b")))
    merged = merge_row(twice, "b", CrawlMode.MIXED, POLICY, NOW)
    assert (merged.sitemaps_listing, merged.link_inlinks) == (2, 1)
    # A stored count that no longer holds is corrected, even to what absence would say.
    dropped = listed("http://127.0.0.2/p.html", (A, Inlink(InlinkKind.SITEMAP, 0, 0, "b")),
                     sitemaps_listing=2, link_inlinks=3, in_sitemap=True, status=FetchStatus.UNFETCHED)
    merged = merge_row(dropped, "b", CrawlMode.MIXED, POLICY, NOW)
    assert (merged.sitemaps_listing, merged.link_inlinks) == (1, 0)
    unlisted = WebPage("http://127.0.0.2/q.html", in_sitemap=True, inlinks={}, status=FetchStatus.UNFETCHED)
    merged = merge_row(unlisted, "b", CrawlMode.MIXED, POLICY, NOW)
    assert merged.in_sitemap is False and merged.sitemaps_listing is None
    assert listing_count(overlaid(unlisted, merged)) == 0


def test_future_lastmod_is_ignored() -> None:
    row = listed("http://127.0.0.2/p.html",
                 (A, Inlink(InlinkKind.SITEMAP, 0, 0, "b", lastmod=NOW + timedelta(days=1))))
    assert merge_row(row, "b", CrawlMode.MIXED, POLICY, NOW).lastmod is None


def test_existing_row_keeps_what_it_knows() -> None:
    fetched = NOW - timedelta(days=2)
    row = listed("http://127.0.0.2/p.html",
                 (A, Inlink(InlinkKind.SITEMAP, 0, 0, "b", changefreq=ChangeFreq.HOURLY,
                            lastmod=NOW - timedelta(days=1))),
                 ("http://127.0.0.3/", Inlink(InlinkKind.LINK, 0, 1, "b", score=0.5)),
                 ("http://127.0.0.4/", Inlink(InlinkKind.LINK, 0, 3, "older", score=7.0)),
                 status=FetchStatus.FETCHED, fetch_time=fetched, score=2.0, depth=3, radius=0,
                 fetch_interval=30 * DAY, sitemap_source=SitemapSource.ROBOTS, is_sitemap=True)
    merged = merge_row(row, "b", CrawlMode.MIXED, POLICY, NOW)
    assert merged.status is None  # fetch state untouched
    assert (merged.depth, merged.radius) == (3, 3)
    assert merged.score == 2.5  # only this batch's links add
    assert merged.next_fetch == NOW  # lastmod newer than the fetch
    assert merged.fetch_interval == 3600
    assert merged.sitemap_source is None and merged.is_sitemap is None


def test_index_children_and_candidates_become_sitemaps() -> None:
    child = listed("http://127.0.0.2/child.xml", (A, Inlink(InlinkKind.INDEX, 1, 0, "b")))
    merged = merge_row(child, "b", CrawlMode.SITEMAP_ONLY, POLICY, NOW)
    assert merged.is_sitemap and merged.sitemap_source is SitemapSource.INDEX and not merged.in_sitemap
    candidate = listed("http://127.0.0.2/x.xml", ("http://127.0.0.2/", Inlink(
        InlinkKind.LINK, 1, 0, "b", score=1.0, sitemap_candidate=True)))
    assert merge_row(candidate, "b", CrawlMode.MIXED, POLICY, NOW).sitemap_source is SitemapSource.LINK
    assert merge_row(candidate, "b", CrawlMode.LINKS_ONLY, POLICY, NOW).is_sitemap is None
    demoted = listed("http://127.0.0.2/x.xml", ("http://127.0.0.2/", Inlink(
        InlinkKind.LINK, 1, 0, "b", sitemap_candidate=True)), is_sitemap=False, status=FetchStatus.FETCHED)
    assert merge_row(demoted, "b", CrawlMode.MIXED, POLICY, NOW).is_sitemap is None


def test_spread_divides_the_score_and_stops_at_the_radius() -> None:
    rules = UrlRules.from_settings(Settings())
    page = WebPage("http://127.0.0.2/", status=FetchStatus.FETCHED, score=1.0, depth=1, radius=0, outlinks={
        "http://127.0.0.2/a.html": "a\tA", "http://127.0.0.3/": "a\tB", "http://127.0.0.2/m.xml": "sitemap",
        "http://127.0.0.2/bad": "junk"})
    counts = UpdateCounts()
    puts = {key.decode(): cells for key, cells in spread_cells(page, "b", rules, CrawlMode.MIXED, counts)}
    assert set(puts) == {"127.0.0.2:http/a.html", "127.0.0.2:http/m.xml"}
    assert counts.past_depth == 1 and counts.links == 2
    target = decode(WebPage, "http://127.0.0.2/a.html", puts["127.0.0.2:http/a.html"])
    link = parse_inlink((target.inlinks or {})["http://127.0.0.2/"])
    assert link == Inlink(InlinkKind.LINK, 0, 0, "b", score=0.25, anchor="A")
    assert target.discover_mark == "b"
    candidate = decode(WebPage, "http://127.0.0.2/m.xml", puts["127.0.0.2:http/m.xml"])
    assert parse_inlink((candidate.inlinks or {})["http://127.0.0.2/"]).sitemap_candidate  # type: ignore[union-attr]


def test_redirect_passes_the_sources_own_depth() -> None:
    rules = UrlRules.from_settings(Settings())
    row = WebPage("http://127.0.0.2/old", status=FetchStatus.REDIRECT, redirect_to="http://127.0.0.3/new",
                  depth=0, radius=0)
    puts = list(spread_cells(row, "b", rules, CrawlMode.MIXED, UpdateCounts()))
    assert len(puts) == 1
    target = decode(WebPage, "http://127.0.0.3/new", puts[0][1])
    assert parse_inlink((target.inlinks or {})["http://127.0.0.2/old"]) == Inlink(InlinkKind.REDIRECT, 0, 0, "b")


_TEXTS = [format_inlink(Inlink(InlinkKind.SITEMAP, depth, 0, "b", priority=priority, changefreq=freq,
                               lastmod=datetime(2024, month, 1, tzinfo=UTC)))
          for depth in (0, 2) for priority in (None, 0.3) for freq in (None, ChangeFreq.DAILY) for month in (1, 5)]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_TEXTS), st.sampled_from([(), (A, B), (A,)]),
                          st.sampled_from([{}, {b"f:st": b"fetched"}, {b"m:sc": b"2.5"}, {b"s:in": b"1"}])),
                min_size=1, max_size=30),
       st.sampled_from(list(CrawlMode)))
def test_first_listings_merge_as_merge_row_does_row_by_row(rows: list[tuple[str, tuple[str, ...], dict[bytes, bytes]]],
                                                            mode: CrawlMode) -> None:
    """updatedb works out the merge of a row holding one inlink once per inlink text: every row, whatever
    else it holds (other inlinks, a status, a score), gets what `merge_row` gives it alone, and keeps its URL."""
    alike = FirstListings("b", mode, POLICY, NOW)
    for number, (text, sources, more) in enumerate(rows):
        url = f"http://127.0.0.2/p{number}.html"
        cells = {b"il:" + source.encode(): text.encode() for source in (sources or (A,))} | more
        row = decode(WebPage, url, cells, MERGE_FIELDS)
        expected = merge_row(row, "b", mode, POLICY, NOW)
        after, put, kind = alike.merge(row)
        assert kind == (text if len(sources) < 2 and not more else None)  # alike: one inlink, nothing else
        if kind is not None:
            assert after is None  # a row merged alike is made only when asked for
            after = alike.merged(row, kind)
        assert put == encode(expected) and after is not None
        assert after == overlaid(row, expected) and after.url == url and type(after) is type(row)
        put.clear()  # the caller's to change: the next row alike still gets its cells


_LINK_TEXTS = [format_inlink(Inlink(InlinkKind.LINK, 1, 0, batch, score=score))
               for batch in ("b", "older") for score in (0.0, 0.5)]
_FETCHED = datetime(2025, 5, 1, tzinfo=UTC)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*_TEXTS, *_LINK_TEXTS]), min_size=1, max_size=4),
       st.sampled_from([{}, {b"f:st": b"unfetched"}, {b"f:st": b"fetched", b"f:ft": b"2025-05-01T00:00:00Z"},
                        {b"m:sc": b"2.5", b"s:in": b"1"}, {b"f:st": b"fetched", b"k:fch": b"b"}]),
       st.sampled_from(list(CrawlMode)))
def test_a_merge_without_its_mark_gives_the_same_cells_when_repeated(texts: list[str], more: dict[bytes, bytes],
                                                                       mode: CrawlMode) -> None:
    """`k:mrg` is written only where a rerun must not merge again (link score added, a fetched row planned
    from the time): any other merge, run again on the row it left, later, writes the same values."""
    row = decode(WebPage, "http://127.0.0.2/p.html",
                 {f"il:http://127.0.0.{number + 2}/source".encode(): text.encode() for number, text in enumerate(texts)}
                 | more, MERGE_FIELDS)
    first = merge_row(row, "b", mode, POLICY, NOW)
    gained = any((link := parse_inlink(text)) is not None and link.batch == "b" and link.score for text in texts)
    if first.merge_mark is not None:
        assert first.merge_mark == "b"
        return
    assert not gained
    merged = overlaid(row, first)
    again = merge_row(merged, "b", mode, POLICY, NOW + timedelta(hours=5))
    assert overlaid(merged, again) == merged
