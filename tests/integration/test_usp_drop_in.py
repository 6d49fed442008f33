"""The usp drop-in on the loopback test web: our tree, and usp's own function on the same server.

`sitemapcrawl.sitemaps.sitemap_tree_for_homepage` with our polite client
(delay 0) and with usp's `RequestsWebClient`; `usp.tree.sitemap_tree_for_homepage`
itself on the same hosts. The docs host (no robots.txt, a gzipped index at
the well-known /sitemap.xml) gives the same tree both ways; the shop host
shows the documented differences (scope, unknown changefreq).
"""

from __future__ import annotations

from datetime import UTC
from decimal import Decimal

import pytest
from usp.objects.page import SitemapPage, SitemapPageChangeFrequency
from usp.objects.sitemap import (
    AbstractSitemap,
    IndexRobotsTxtSitemap,
    IndexWebsiteSitemap,
    IndexXMLSitemap,
    InvalidSitemap,
    PagesTextSitemap,
    PagesXMLSitemap,
)
from usp.tree import sitemap_tree_for_homepage as usp_sitemap_tree_for_homepage
from usp.web_client.requests_client import RequestsWebClient

from sitemapcrawl.sitemaps import sitemap_tree_for_homepage
from sitemapcrawl.testweb import TestWebServer


def _fields(page: SitemapPage) -> tuple[object, ...]:
    """A page's fields, a lastmod without a time zone read as UTC (ours are always aware: docs/usp.md)."""
    lastmod = page.last_modified
    if lastmod is not None and lastmod.tzinfo is None:
        lastmod = lastmod.replace(tzinfo=UTC)
    return (page.url, page.priority, lastmod, page.change_frequency, page.news_story, page.images,
            page.alternates)


def assert_same_tree(ours: AbstractSitemap, theirs: AbstractSitemap) -> None:
    """The same sitemaps (class, URL, order) with the same pages, up to the lastmod time zone."""
    pairs = list(zip([ours, *ours.all_sitemaps()], [theirs, *theirs.all_sitemaps()], strict=True))
    for mine, usps in pairs:
        assert isinstance(mine, type(usps)) and mine.url == usps.url
        assert [_fields(p) for p in mine.pages] == [_fields(p) for p in usps.pages]


@pytest.fixture(autouse=True)
def _no_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SITEMAPCRAWL_DELAY", "0")


def test_docs_host_gives_usps_own_tree(testweb: TestWebServer) -> None:
    home = testweb.base_url("127.0.0.4")
    ours = sitemap_tree_for_homepage(home)
    theirs = usp_sitemap_tree_for_homepage(home)
    assert_same_tree(ours, theirs)
    assert isinstance(ours, IndexWebsiteSitemap)
    [index] = ours.sub_sitemaps  # robots.txt is a 404: only the well-known /sitemap.xml
    assert isinstance(index, IndexXMLSitemap) and index.url == home + "sitemap.xml"
    ref, guide = index.sub_sitemaps
    assert isinstance(ref, PagesXMLSitemap) and len(ref.pages) == 30
    assert isinstance(guide, PagesTextSitemap) and [p.url for p in guide.pages] == [home + "guide.html"]
    assert len(list(ours.all_pages())) == 31


def test_a_usp_web_client_is_used_as_given(testweb: TestWebServer) -> None:
    home = testweb.base_url("127.0.0.4")
    client = RequestsWebClient()
    assert_same_tree(sitemap_tree_for_homepage(home, web_client=client), usp_sitemap_tree_for_homepage(home))


def test_shop_tree_shape_and_its_documented_differences(testweb: TestWebServer) -> None:
    home = testweb.base_url("127.0.0.2")
    ours = sitemap_tree_for_homepage(home, use_known_paths=False)
    theirs = usp_sitemap_tree_for_homepage(home, use_known_paths=False)
    [robots] = ours.sub_sitemaps
    assert isinstance(robots, IndexRobotsTxtSitemap) and robots.url == home + "robots.txt"
    index = next(s for s in robots.sub_sitemaps if s.url == home + "sitemap_index.xml")
    assert isinstance(index, IndexXMLSitemap)
    by_url = {s.url: s for s in index.sub_sitemaps}
    missing = by_url[home + "missing-sitemap.xml"]
    assert isinstance(missing, InvalidSitemap)
    assert missing.reason == f"Unable to fetch sitemap from {home}missing-sitemap.xml: 404 Not Found"
    assert isinstance(by_url[home + "sitemap.txt"], PagesTextSitemap)
    # The same sitemaps, in the same order, as usp finds.
    assert [s.url for s in ours.all_sitemaps()] == [s.url for s in theirs.all_sitemaps()]
    # Scope: the entry on another host (the docs host) and outside the web are dropped; usp keeps them.
    sub = {p.url for p in by_url[home + "sub/sitemap.xml"].pages}
    their_index = next(s for s in theirs.sub_sitemaps[0].sub_sitemaps if s.url == index.url)
    their_sub = {p.url for s in their_index.sub_sitemaps if s.url == home + "sub/sitemap.xml" for p in s.pages}
    assert sub == {home + "sub/a.html", home + "other.html"}
    assert their_sub - sub == {testweb.base_url("127.0.0.4"), "http://example.invalid/ext.html"}
    # An unknown changefreq is absent for us, `always` for usp; a bad priority is 0.5 for both.
    [ours_slow] = [p for p in ours.all_pages() if p.url == home + "slow.html"]
    [theirs_slow] = [p for p in theirs.all_pages() if p.url == home + "slow.html"]
    assert ours_slow.change_frequency is None
    assert theirs_slow.change_frequency is SitemapPageChangeFrequency.ALWAYS
    assert ours_slow.priority == theirs_slow.priority == Decimal("0.5")
