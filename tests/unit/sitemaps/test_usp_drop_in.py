"""The usp drop-in offline: real sitemaps served by an in-memory usp web client, and the packed pages.

The documents are read from `../shared/realworld-sitemaps/` (never copied;
skipped with a message when the folder is absent). Each is served at its own
first URL's host, listed by that host's robots.txt, so strict scope keeps
its entries; everything else answers 404.
"""

from __future__ import annotations

import contextlib
import gc
import gzip
import os
import pickle
import tempfile
import weakref
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from usp.objects.page import SitemapImage, SitemapNewsStory, SitemapPageChangeFrequency
from usp.objects.sitemap import (
    IndexRobotsTxtSitemap,
    IndexXMLSitemap,
    InvalidSitemap,
    PagesAtomSitemap,
    PagesRSSSitemap,
    PagesTextSitemap,
    PagesXMLSitemap,
)
from usp.web_client.abstract_client import (
    AbstractWebClient,
    AbstractWebClientResponse,
    AbstractWebClientSuccessResponse,
    WebClientErrorResponse,
)

from sitemapcrawl.errors import SitemapError
from sitemapcrawl.sitemaps import (
    ChangeFreq,
    Image,
    News,
    PageEntry,
    ParseReport,
    ScopeContext,
    SitemapKind,
    SitemapLimits,
    SitemapRef,
    parse_sitemap,
    sitemap_tree_for_homepage,
)
from sitemapcrawl.sitemaps.model import PageChunk
from sitemapcrawl.sitemaps.usp_pages import CHUNK_PAGES, PageSpool, pages_sitemap
from tests.unit.sitemaps.test_realworld_corpus import CASES, CORPUS, needs_corpus

KIND_CLASS = {"urlset": PagesXMLSitemap, "text": PagesTextSitemap, "rss": PagesRSSSitemap,
              "atom": PagesAtomSitemap, "index": IndexXMLSitemap}


class _Answer(AbstractWebClientSuccessResponse):
    def __init__(self, url: str, body: bytes) -> None:
        self._url, self._body = url, body

    def status_code(self) -> int:
        return 200

    def status_message(self) -> str:
        return "OK"

    def header(self, case_insensitive_name: str) -> str | None:
        return None

    def raw_data(self) -> bytes:
        return self._body

    def url(self) -> str:
        return self._url


class _Missing(WebClientErrorResponse):
    pass


class DictWebClient(AbstractWebClient):
    """A usp web client over a dict of URL -> body; anything else is `404 Not Found`."""

    def __init__(self, bodies: dict[str, bytes]) -> None:
        self.bodies = bodies
        self.asked: list[str] = []

    def set_max_response_data_length(self, max_response_data_length: int | None) -> None:
        return None

    def get(self, url: str) -> AbstractWebClientResponse:
        self.asked.append(url)
        if url in self.bodies:
            return _Answer(url, self.bodies[url])
        return _Missing("404 Not Found", retryable=False)


def _site_for(case: dict[str, Any]) -> tuple[str, str, DictWebClient]:
    """(homepage, sitemap URL, client): the document at its first entry's host, listed by robots.txt."""
    first = case["first_loc"] or "https://realworld.test/"
    parts = urlsplit(first)
    home = f"{parts.scheme}://{parts.netloc}/"
    url = home + Path(case["file"]).name
    robots = f"User-agent: *\nAllow: /\nSitemap: {url}\n".encode()
    return home, url, DictWebClient({home + "robots.txt": robots, url: (CORPUS / case["file"]).read_bytes()})


@needs_corpus
@pytest.mark.parametrize("case", CASES, ids=[Path(case["file"]).name for case in CASES])
def test_real_sitemaps_as_usp_objects(case: dict[str, Any]) -> None:
    home, url, client = _site_for(case)
    tree = sitemap_tree_for_homepage(home, web_client=client, use_known_paths=False)
    [robots] = tree.sub_sitemaps
    assert isinstance(robots, IndexRobotsTxtSitemap) and robots.url == home + "robots.txt"
    [sitemap] = robots.sub_sitemaps
    if case["kind"] == "invalid":
        # Not a sitemap: InvalidSitemap with a reason, or (broken XML read as far as it goes) no pages.
        assert (isinstance(sitemap, InvalidSitemap) and sitemap.reason) or sitemap.pages == []
        return
    assert isinstance(sitemap, KIND_CLASS[case["kind"]])
    if case["kind"] == "index":
        children = sitemap.sub_sitemaps
        # Every child is asked for (404 here) and shows as an InvalidSitemap saying so.
        assert all(isinstance(child, InvalidSitemap) and "404 Not Found" in child.reason for child in children)
        if case["sitemaps"] is not None:
            assert len(children) <= case["sitemaps"]
        return
    pages = sitemap.pages
    assert pages and pages[0].url == case["first_loc"]
    if case["urls"] is not None:
        # Strict scope may drop entries on other hosts than the first one; never more than listed.
        assert len(pages) <= case["urls"]


@needs_corpus
def test_news_and_images_become_usps_objects() -> None:
    [news_case] = [c for c in CASES if c["file"].endswith("advertools-nytimes-news-sitemap.xml")]
    home, _url, client = _site_for(news_case)
    pages = list(sitemap_tree_for_homepage(home, web_client=client, use_known_paths=False).all_pages())
    assert len(pages) == 6
    assert all(isinstance(page.news_story, SitemapNewsStory) and page.news_story.title for page in pages)
    assert all(page.news_story.publish_date.tzinfo is not None for page in pages)  # type: ignore[union-attr]
    images = [image for page in pages for image in page.images or ()]
    assert images and all(isinstance(image, SitemapImage) and image.loc == image.loc.strip() for image in images)


def test_a_failing_robots_txt_leaves_only_the_found_well_known_sitemaps() -> None:
    body = b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://a.test/x</loc></url></urlset>'
    client = DictWebClient({"http://a.test/sitemap_news.xml": body})
    tree = sitemap_tree_for_homepage("http://a.test/deep/page.html", web_client=client)
    assert tree.url == "http://a.test/"
    [found] = tree.sub_sitemaps
    assert isinstance(found, PagesXMLSitemap) and [p.url for p in found.pages] == ["http://a.test/x"]
    assert client.asked[0] == "http://a.test/robots.txt"


def test_not_an_http_url_is_refused() -> None:
    with pytest.raises(SitemapError, match="not a HTTP"):
        sitemap_tree_for_homepage("ftp://a.test/", web_client=DictWebClient({}))


def test_packed_pages_round_trip_and_pickle_to_usps_own_class() -> None:
    when = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    entries = [
        PageEntry("http://a.test/1", when, ChangeFreq.WEEKLY, 0.8,
                  images=(Image("http://a.test/i.png", caption="c", title="t"),),
                  news=News("Pub", "en", when, "Title")),
        PageEntry("http://a.test/2"),
    ]
    sitemap = pages_sitemap(SitemapKind.URLSET, "http://a.test/s.xml", entries)
    first, second = sitemap.pages
    assert (first.url, first.priority, first.last_modified) == ("http://a.test/1", Decimal("0.8"), when)
    assert first.change_frequency is SitemapPageChangeFrequency.WEEKLY
    assert first.news_story == SitemapNewsStory("Title", when, "Pub", "en")
    assert first.images == [SitemapImage("http://a.test/i.png", caption="c", title="t")]
    assert (second.priority, second.last_modified, second.images) == (Decimal("0.5"), None, None)
    loaded = pickle.loads(pickle.dumps(sitemap))
    assert type(loaded) is PagesXMLSitemap and loaded == sitemap and repr(loaded) == repr(sitemap)


def _open_temporary_files() -> int:
    """This process's open files in the temporary folder: not all its descriptors, which the
    worker's background threads (the table pool's sockets) open and close at any time."""
    folder = tempfile.gettempdir() + os.sep
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed since the listing
            count += os.readlink(f"/proc/self/fd/{fd}").startswith(folder)
    return count


def test_pages_spill_in_chunks_read_back_whole_or_chunk_by_chunk_and_the_file_closes_with_the_tree() -> None:
    fds_before = _open_temporary_files()
    when = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
    count = CHUNK_PAGES * 2 + 7
    entries = [PageEntry(f"http://a.test/{n}", when if n % 3 else None, None, 0.1 if n % 2 else None)
               for n in range(count)]
    entries.insert(5, SitemapRef("http://a.test/not-a-page.xml"))  # skipped: only pages are kept
    spool = PageSpool()
    first = pages_sitemap(SitemapKind.URLSET, "http://a.test/1.xml", entries, spool)
    second = pages_sitemap(SitemapKind.TEXT, "http://a.test/2.txt", [PageEntry("http://a.test/t")], spool)
    assert _open_temporary_files() == fds_before + 1  # one file for the whole tree
    urls = [page.url for page in first.all_pages()]
    assert urls == [page.url for page in first.pages] == [f"http://a.test/{n}" for n in range(count)]
    assert [(p.last_modified, p.priority) for p in first.pages[:3]] == [
        (None, Decimal("0.5")), (when, Decimal("0.1")), (when, Decimal("0.5"))]
    assert [page.url for page in second.pages] == ["http://a.test/t"]
    gone = weakref.ref(spool)
    del spool, first, second
    gc.collect()
    assert gone() is None and _open_temporary_files() == fds_before


@pytest.mark.parametrize("lastmods", [
    [datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC), datetime(1969, 12, 31, tzinfo=UTC)],
    [datetime(2024, 5, 6, 7, 8, 9, 1, tzinfo=UTC), datetime(2024, 5, 6, tzinfo=UTC)],  # a fraction: as text
    [datetime(2024, 5, 6, tzinfo=UTC), None],
])
def test_lastmods_come_back_exactly_with_their_time_zone(lastmods: list[datetime | None]) -> None:
    entries = [PageEntry(f"http://a.test/{n}", when) for n, when in enumerate(lastmods)]
    pages = pages_sitemap(SitemapKind.URLSET, "http://a.test/s.xml", entries).pages
    assert [page.last_modified for page in pages] == lastmods
    assert [None if p.last_modified is None else p.last_modified.isoformat() for p in pages] == [
        None if when is None else when.isoformat() for when in lastmods]


def _entries_and_report(data: bytes, url: str, chunk_pages: int, limits: SitemapLimits | None = None,
                        strict: bool = True) -> tuple[list[Any], ParseReport]:
    """A document's entries and report, read entry by entry (`chunk_pages` 0) or as page chunks."""
    document = parse_sitemap(data, url, limits=limits, scope=ScopeContext(strict=strict))
    if not chunk_pages:
        return list(document), document.report
    items = list(document.page_chunks(chunk_pages))
    assert all(len(item) <= chunk_pages for item in items if isinstance(item, PageChunk))
    entries = [entry for item in items for entry in (chunk_entries(item) if isinstance(item, PageChunk) else [item])]
    return entries, document.report


def chunk_entries(chunk: PageChunk) -> list[PageEntry]:
    """A chunk's pages as the `PageEntry` values the document yields one by one."""
    columns = zip(chunk.locs, chunk.lastmods, chunk.changefreqs, chunk.priorities, strict=True)
    return [PageEntry(loc, None if lastmod is None else datetime.fromisoformat(lastmod), changefreq, priority,
                      *chunk.extensions.get(number, ()))
            for number, (loc, lastmod, changefreq, priority) in enumerate(columns)]


_EDGES = (
    '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
    ' xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">'
    '<url><loc>http://a.test/1</loc><lastmod>2024-05-06T07:08:09+00:00</lastmod>'
    '<changefreq>weekly</changefreq><priority>0.3</priority></url>'
    '<url><loc>http://a.test/2</loc><lastmod>2024-05-06</lastmod><priority>1.0</priority></url>'
    '<url><loc>http://a.test/3</loc><lastmod>2024-05-06T07:08:09.25+02:00</lastmod></url>'
    '<url><loc>http://a.test/4</loc><lastmod>not a date</lastmod><changefreq> Daily </changefreq></url>'
    '<url><loc>http://a.test/5</loc><image:image><image:loc>http://a.test/i.png</image:loc></image:image></url>'
    '<url><loc>http://other.test/6</loc></url>'
    '<url><loc>not a url</loc></url>'
    '<url>http://a.test/7</url>'
    '<url><loc>http://a.test/%7E8</loc><priority>x</priority></url>'
    '<url><loc>http://a.test/9</loc></url>'
    '<url><loc>http://a.test/10</loc></url>'
    '<url><loc>http://a.test/cut-off</loc>'
)


@pytest.mark.parametrize("chunk_pages", [1, 2, 250])
@pytest.mark.parametrize("max_urls", [3, 50_000])
def test_page_chunks_hold_the_same_pages_and_report_as_entries(chunk_pages: int, max_urls: int) -> None:
    data, url, limits = _EDGES.encode(), "http://a.test/sitemap.xml", SitemapLimits(max_urls=max_urls)
    one_by_one, report = _entries_and_report(data, url, 0, limits)
    chunked, chunked_report = _entries_and_report(data, url, chunk_pages, limits)
    assert chunked == one_by_one and chunked_report == report
    assert len(one_by_one) == min(max_urls, 9) and report.truncated  # the cut-off entry is not read
    tzinfos = [None if entry.lastmod is None else entry.lastmod.tzinfo for entry in chunked]
    assert tzinfos == [None if entry.lastmod is None else entry.lastmod.tzinfo for entry in one_by_one]


@needs_corpus
@pytest.mark.parametrize("case", CASES, ids=[Path(case["file"]).name for case in CASES])
def test_page_chunks_of_real_sitemaps_hold_the_same_pages_and_report(case: dict[str, Any]) -> None:
    data, url = (CORPUS / case["file"]).read_bytes(), "http://realworld.test/" + Path(case["file"]).name
    try:
        expected = _entries_and_report(data, url, 0, strict=False)
    except SitemapError:
        return  # not a sitemap: nothing to chunk
    assert _entries_and_report(data, url, 7, strict=False) == expected


def test_page_chunks_only_before_the_document_is_read() -> None:
    document = parse_sitemap(_EDGES.encode(), "http://a.test/sitemap.xml")
    next(iter(document))
    with pytest.raises(ValueError, match="already being read"):
        document.page_chunks(10)


@pytest.mark.parametrize("damage", ["cut", "garbled"])
def test_page_chunks_of_a_broken_gzip_hold_the_pages_read_before_the_break(damage: str) -> None:
    body = ('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">' + "".join(
        f"<url><loc>http://a.test/{n}</loc><lastmod>2024-01-0{1 + n % 9}T00:00:00Z</lastmod></url>"
        for n in range(5000)) + "</urlset>").encode()
    data = bytearray(gzip.compress(body))
    middle = len(data) // 2
    if damage == "cut":
        data = data[:middle]
    else:
        data[middle:middle + 50] = bytes(byte ^ 0x5A for byte in data[middle:middle + 50])
    one_by_one = _entries_and_report(bytes(data), "http://a.test/s.xml.gz", 0)
    assert 0 < len(one_by_one[0]) < 5000 and one_by_one[1].problems
    assert _entries_and_report(bytes(data), "http://a.test/s.xml.gz", 250) == one_by_one
