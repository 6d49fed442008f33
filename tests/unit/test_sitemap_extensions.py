"""What sitemap entries say beyond their hints (model.entries), the lastmod verdict (model.lastmod), and how
updatedb's merge writes both on a row."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from sitemapcrawl.jobs.updatedb import merge_row
from sitemapcrawl.model.entries import NewsCount, UniformLastmods, extension_fields, merged_extensions
from sitemapcrawl.model.lastmod import UNIFORM_MIN, LastmodVerdict, lastmod_verdict, verdict_after_fetch, verdict_cell
from sitemapcrawl.model.linkvalues import Inlink, InlinkKind, format_inlink
from sitemapcrawl.model.schedule import SchedulePolicy
from sitemapcrawl.model.webpage import FetchStatus, WebPage
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.sitemaps.model import Alternate, Image, News, PageEntry, ProblemKind, Video

NOW = datetime(2026, 5, 10, 12, tzinfo=UTC)
DAY = timedelta(days=1)


def canonical(url: str) -> str | None:
    return None if "bad" in url else url.lower()


def test_an_entry_without_extensions_gives_nothing_and_one_with_them_its_fields() -> None:
    news = NewsCount()
    assert extension_fields(PageEntry("http://a.test/"), NOW, canonical, news) is None
    entry = PageEntry("http://a.test/en", images=(Image("i1"), Image("i2")), videos=(Video(title="v"),),
                      news=News(publication_date=NOW - 3 * DAY, title="Old news"),
                      alternates=(Alternate("DE", "http://A.test/de"), Alternate("fr", "http://bad/"),
                                  Alternate("de", "http://a.test/DE"), Alternate("", "http://a.test/x")))
    assert extension_fields(entry, NOW, canonical, news) == {
        "images": 2, "videos": 1, "news_date": NOW - 3 * DAY, "news_stale": True, "anchor": "Old news",
        "alternates": (("de", "http://a.test/de"),)}
    fresh = PageEntry("http://a.test/new", news=News(publication_date=NOW - DAY, title="New"))
    assert extension_fields(fresh, NOW, canonical, news)["news_stale"] is False  # type: ignore[index]
    assert (news.entries, news.stale) == (2, 1)
    assert [kind for kind, _n, _text in news.problems()] == [ProblemKind.NEWS_STALE]


def test_a_news_sitemap_over_1000_entries_is_a_problem_of_its_own() -> None:
    news = NewsCount()
    for _ in range(1_003):
        news.add(False)
    assert [(kind, n) for kind, n, _text in news.problems()] == [(ProblemKind.NEWS_OVER_LIMIT, 3)]


def test_uniform_lastmods_hold_the_entries_only_while_every_one_carries_the_same() -> None:
    same = UniformLastmods()
    assert [same.add(NOW, (n,)) for n in range(UNIFORM_MIN)] == [[]] * UNIFORM_MIN
    assert same.uniform and same.held == [(n,) for n in range(UNIFORM_MIN)]
    differ = UniformLastmods()
    assert differ.add(NOW, (0,)) == []
    assert differ.add(NOW - DAY, (1,)) == [(0,), (1,)]  # let go: written as they are
    assert differ.add(NOW, (2,)) == [(2,)]
    assert not differ.uniform and differ.held is None
    missing = UniformLastmods()
    for n in range(UNIFORM_MIN):
        missing.add(None if n == 2 else NOW, (n,))
    assert not missing.uniform
    few = UniformLastmods()
    few.add(NOW, (0,))
    assert not few.uniform


@pytest.mark.parametrize(("lastmod", "uniform", "fetched", "before", "changed", "verdict"), [
    (None, False, None, None, None, None),
    (NOW - DAY, True, None, None, None, LastmodVerdict.UNIFORM),
    (NOW + 3 * DAY, False, None, None, None, LastmodVerdict.FUTURE),
    (NOW + DAY / 2, False, None, None, None, LastmodVerdict.OK),  # within a day's slack
    # The body stayed the same since day -10, the lastmod claims day -2: moved with no change.
    (NOW - 2 * DAY, False, NOW, NOW - 5 * DAY, NOW - 10 * DAY, LastmodVerdict.MOVED),
    # The body changed between day -5 and now; the lastmod is day -20: it stayed.
    (NOW - 20 * DAY, False, NOW, NOW - 5 * DAY, NOW, LastmodVerdict.STAYED),
    (NOW - 4 * DAY, False, NOW, NOW - 5 * DAY, NOW, LastmodVerdict.OK),
])
def test_the_lastmod_verdict(lastmod: datetime | None, uniform: bool, fetched: datetime | None,
                             before: datetime | None, changed: datetime | None,
                             verdict: LastmodVerdict | None) -> None:
    assert lastmod_verdict(lastmod, uniform, fetched, before, changed, NOW) == verdict


def test_only_a_suspect_verdict_costs_a_cell_and_the_merge_owns_uniform_and_future() -> None:
    assert verdict_cell(LastmodVerdict.OK, None) == {} and verdict_cell(None, "") == {}
    assert verdict_cell(LastmodVerdict.FUTURE, None) == {"lastmod_verdict": "future"}
    assert verdict_cell(LastmodVerdict.OK, "future") == {"lastmod_verdict": ""}
    assert verdict_after_fetch(NOW - DAY, "uniform", NOW, None, NOW, NOW) == {}
    assert verdict_after_fetch(NOW - 2 * DAY, None, NOW, NOW - 5 * DAY, NOW - 10 * DAY, NOW) == {
        "lastmod_verdict": "moved-same-content"}


def sitemap_cell(**fields: object) -> str:
    return format_inlink(Inlink(InlinkKind.SITEMAP, 1, 0, "b1", **fields))


def merged(inlinks: dict[str, str], **row: object) -> WebPage:
    base = WebPage("http://a.test/en", inlinks=inlinks, status=FetchStatus.FETCHED, fetch_time=NOW - DAY,
                   prev_fetch_time=None, content_changed=NOW - DAY, lastmod=None, lastmod_verdict=None,
                   images=None, videos=None, news_date=None, news_title=None, news_stale=None, sitemap_hreflang=None)
    return merge_row(replace(base, **row), "b2", CrawlMode.SITEMAP_ONLY, SchedulePolicy(), NOW)


def test_the_merge_writes_the_extensions_of_every_sitemap_listing_a_url() -> None:
    row = merged({
        "http://a.test/news.xml": sitemap_cell(images=1, news_date=NOW - 3 * DAY, news_stale=True, anchor="Old"),
        "http://a.test/pages.xml": sitemap_cell(images=3, alternates=(("de", "http://a.test/de"),)),
        "http://a.test/more.xml": sitemap_cell(news_date=NOW - 2 * DAY, anchor="Newer"),
    })
    assert (row.images, row.videos, row.sitemap_hreflang) == (3, None, ("de http://a.test/de",))
    assert (row.news_date, row.news_title, row.news_stale) == ("2026-05-08T12:00:00Z", "Newer", None)
    # A URL that left its news sitemap loses what it said (written empty, not left stale).
    left = merged({"http://a.test/pages.xml": sitemap_cell()}, news_date="2026-05-07T12:00:00Z", news_title="Old",
                  news_stale=True, images=2)
    assert (left.news_date, left.news_title, left.news_stale, left.images) == ("", "", False, 0)
    assert merged_extensions([], WebPage("x", images=None, videos=None, news_date=None, news_title=None,
                                         news_stale=None, sitemap_hreflang=None)) == {}


def test_the_merge_judges_the_lastmod_its_sitemaps_claim() -> None:
    future = merged({"http://a.test/s.xml": sitemap_cell(lastmod=NOW + 30 * DAY)})
    assert future.lastmod is None and future.lastmod_verdict == "future"  # not merged, but judged
    uniform = merged({"http://a.test/s.xml": sitemap_cell(lastmod=NOW - DAY, uniform=True)})
    assert uniform.lastmod_verdict == "uniform"
    honest = merged({"http://a.test/s.xml": sitemap_cell(lastmod=NOW - DAY)}, lastmod_verdict="uniform")
    assert honest.lastmod_verdict == ""  # cleared: its sitemap gives several dates now
