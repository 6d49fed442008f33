"""parse and updatedb against the real HBase, on bodies served by the loopback test web.

Rows are built as fetch leaves them (status, fetch mark, body in c:raw); the
results are compared with the test web's own truth.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from counting_store import CountingStore

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.parse import parse_batch
from sitemapcrawl.jobs.updatedb import updatedb
from sitemapcrawl.model.cells import decode, encode
from sitemapcrawl.model.codec import parse_time
from sitemapcrawl.model.linkvalues import InlinkKind, parse_inlink
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, ChangeFreq, FetchStatus, SitemapSource, WebPage
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer
from sitemapcrawl.web import rowkeys, urls
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.pagesays import page_says
from sitemapcrawl.web.rules import UrlRules

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
FETCHED = NOW - timedelta(minutes=10)


def fetch_body(url: str) -> tuple[int | None, bytes, str]:
    client = PoliteHttpClient.from_settings(Settings(user_agent="sitemapcrawl-test/1.0", delay=0.0))
    try:
        response = client.get(url)
    finally:
        client.close()
    return response.status, response.body, response.headers.get("content-type", "")


def fetched_row(url: str, batch: str, **fields: object) -> WebPage:
    """A row as fetch leaves it, with the body the test web serves."""
    status, body, content_type = fetch_body(url)
    says = page_says(url, {"content-type": content_type}, body, user_agent="sitemapcrawl-test/1.0")
    base = WebPage(url, status=FetchStatus.FETCHED if status == 200 else FetchStatus.GONE, http_code=status,
                   fetch_time=FETCHED, fetch_mark=batch, generate_mark=batch, content_type=content_type,
                   content=body if status == 200 else None, depth=2, radius=0, score=1.0,
                   fetch_interval=30 * 86400, noindex=says.noindex, nofollow=says.nofollow)
    return dataclasses.replace(base, **fields)  # type: ignore[arg-type]


def put(store: Store, *rows: WebPage) -> None:
    store.write(WEBPAGE_TABLE, [(rowkeys.row_key(r.url).encode(), encode(r)) for r in rows])


def read(store: Store, url: str) -> WebPage | None:
    cells = store.row(WEBPAGE_TABLE, rowkeys.row_key(url).encode())
    return decode(WebPage, url, cells) if cells else None


def all_rows(store: Store) -> dict[str, WebPage]:
    out = {}
    for key, cells in store.scan(WEBPAGE_TABLE):
        url = rowkeys.url_from_row_key(key.decode())
        out[url] = decode(WebPage, url, cells)
    return out


def test_index_then_children_give_the_webs_listed_urls_with_their_sitemaps(
        store: Store, settings: Settings, testweb: TestWebServer, tmp_path: Path) -> None:
    truth = testweb.truth
    index = testweb.url("127.0.0.2", "/sitemap_index.xml")
    blacklisted = testweb.url("127.0.0.2", "/sitemap.txt")
    (tmp_path / "blacklist").write_text(blacklisted + "\n")
    settings = dataclasses.replace(settings, sitemap_blacklist=tmp_path / "blacklist")
    rules = UrlRules.from_settings(settings)
    put(store, fetched_row(index, "b1", is_sitemap=True, sitemap_source=SitemapSource.ROBOTS))

    first = parse_batch(store, rules, "b1", mode=CrawlMode.SITEMAP_ONLY, clock=lambda: NOW)
    assert first.sitemaps == 1 and first.children == len(truth.children(index)) - 1
    row = read(store, index)
    assert row is not None and row.sitemap_type == "index" and row.sitemap_entries == first.children
    assert row.parse_mark == "b1" and row.parse_time == NOW
    assert "1 child sitemaps blacklisted" in (row.sitemap_problems or ())
    assert not row.outlinks  # a sitemap has no outlinks

    update = updatedb(store, rules, "b1", mode=CrawlMode.SITEMAP_ONLY, clock=lambda: NOW)
    children = set(truth.children(index)) - {blacklisted}
    assert update.new_rows == len(children) and update.scheduled == 1
    for child in children:
        child_row = read(store, child)
        assert child_row is not None and child_row.is_sitemap and child_row.sitemap_source is SitemapSource.INDEX
        assert (child_row.status, child_row.next_fetch, child_row.depth, child_row.radius) == (
            FetchStatus.UNFETCHED, NOW, 1, 0)
        assert set(child_row.inlinks or {}) == {index}
    pages_row = read(store, testweb.url("127.0.0.2", "/sitemap-pages.xml"))
    assert pages_row is not None and pages_row.lastmod == parse_time("2024-03-01T00:00:00Z")
    assert read(store, blacklisted) is None
    index_row = read(store, index)
    assert index_row is not None and index_row.update_mark == "b1"
    assert index_row.next_fetch == FETCHED + timedelta(days=30)

    # Batch 2: every child as fetch would leave it (the missing one is gone).
    put(store, *(fetched_row(child, "b2", depth=1) for child in children))
    second = parse_batch(store, rules, "b2", mode=CrawlMode.SITEMAP_ONLY, clock=lambda: NOW)
    missing = testweb.url("127.0.0.2", "/missing-sitemap.xml")
    assert second.sitemaps == len(children) - 1 and second.not_parsed == {"sitemap gone": 1}
    updatedb(store, rules, "b2", mode=CrawlMode.SITEMAP_ONLY, clock=lambda: NOW)

    expected: dict[str, set[str]] = {}
    for child in children - {missing}:
        for entry in truth.entries(child):
            if entry.in_scope:
                expected.setdefault(urls.canonicalize(entry.url), set()).add(child)
    rows = all_rows(store)
    found = {url: set(row.inlinks or {}) for url, row in rows.items() if row.in_sitemap}
    assert found == expected
    sub = read(store, testweb.url("127.0.0.2", "/sub/sitemap.xml"))
    assert sub is not None and sub.dropped_scope == 3 and sub.sitemap_entries == 1
    # Two sitemaps list about.html: both inlinks kept, the hints of the one that has them.
    about = rows[testweb.url("127.0.0.2", "/about.html")]
    assert about.priority == 0.5 and about.changefreq is ChangeFreq.MONTHLY
    assert about.lastmod == parse_time("2024-01-15T08:30:00Z")
    product = rows[testweb.url("127.0.0.2", "/products/2.html")]
    assert (product.priority, product.changefreq, product.depth, product.radius) == (0.7, ChangeFreq.WEEKLY, 0, 0)
    slow = rows[testweb.url("127.0.0.2", "/slow.html")]
    assert (slow.priority, slow.changefreq, slow.lastmod) == (None, None, None)  # invalid hints dropped
    assert all(row.status is FetchStatus.UNFETCHED and row.next_fetch == NOW
               for url, row in rows.items() if url in expected)


def test_entries_past_depth_and_radius_get_no_row(store: Store, settings: Settings,
                                                  testweb: TestWebServer) -> None:
    rules = UrlRules.from_settings(settings)
    sitemap = testweb.url("127.0.0.2", "/sitemap-products.xml.gz")
    put(store, fetched_row(sitemap, "b1", is_sitemap=True, depth=0, radius=0))
    counts = parse_batch(store, rules, "b1", clock=lambda: NOW)
    listed = testweb.truth.listed_by(sitemap)
    assert counts.entries == 0 and counts.dropped_depth == len(listed) == 3
    assert set(all_rows(store)) == {sitemap}
    row = read(store, sitemap)
    assert row is not None and "3 entries past depth/radius not kept" in (row.sitemap_problems or ())


def test_over_the_url_limit_is_recorded(store: Store, settings: Settings, testweb: TestWebServer) -> None:
    settings = dataclasses.replace(settings, max_sitemap_urls=10)
    rules = UrlRules.from_settings(settings)
    sitemap = testweb.url("127.0.0.4", "/sitemap-ref.xml")
    put(store, fetched_row(sitemap, "b1", is_sitemap=True))
    counts = parse_batch(store, rules, "b1", clock=lambda: NOW)
    row = read(store, sitemap)
    assert row is not None and (row.sitemap_entries, row.dropped_limit) == (10, 20)
    assert counts.dropped_limit == 20 and any("URL limit" in p for p in row.sitemap_problems or ())


def test_blacklisted_and_broken_sitemaps(store: Store, settings: Settings, testweb: TestWebServer,
                                         tmp_path: Path) -> None:
    (tmp_path / "blacklist").write_text("127.0.0.3\n")
    rules = UrlRules.from_settings(dataclasses.replace(settings, sitemap_blacklist=tmp_path / "blacklist"))
    feed = testweb.url("127.0.0.3", "/rss.xml")
    page = testweb.url("127.0.0.2", "/about.html")
    put(store, fetched_row(feed, "b1", is_sitemap=True), fetched_row(page, "b1", is_sitemap=True))
    counts = parse_batch(store, rules, "b1", mode=CrawlMode.SITEMAP_ONLY, clock=lambda: NOW)
    assert (counts.blacklisted, counts.sitemap_errors, counts.entries) == (1, 1, 0)
    feed_row, page_row = read(store, feed), read(store, page)
    assert feed_row is not None and feed_row.blacklisted and feed_row.sitemap_type is None
    assert page_row is not None and page_row.sitemap_problems
    assert "not read as a sitemap" in page_row.sitemap_problems[0]
    assert set(all_rows(store)) == {feed, page}


def test_html_outlinks_become_rows_within_depth_and_radius(store: Store, settings: Settings,
                                                           testweb: TestWebServer) -> None:
    rules = UrlRules.from_settings(settings)
    truth = testweb.truth
    home = testweb.url("127.0.0.2", "/")
    meta = testweb.url("127.0.0.2", "/meta-nofollow.html")
    docs = testweb.url("127.0.0.2", "/docs/index.html")
    put(store, fetched_row(home, "b1", depth=2, radius=1), fetched_row(meta, "b1"), fetched_row(docs, "b1"))
    counts = parse_batch(store, rules, "b1", mode=CrawlMode.MIXED, clock=lambda: NOW)
    assert counts.pages == 3

    shop = truth.web.site("127.0.0.2")
    expected = [urls.canonicalize(u) for u in truth.outlinks(shop, shop.lookup("/"))]  # type: ignore[arg-type]
    home_row = read(store, home)
    assert home_row is not None and set(home_row.outlinks or {}) == set(expected) and len(expected) == 12
    meta_row = read(store, meta)
    assert meta_row is not None and meta_row.nofollow and meta_row.noindex and not meta_row.outlinks
    docs_row = read(store, docs)
    assert docs_row is not None and set(docs_row.outlinks or {}) == {
        urls.canonicalize(u) for u in truth.outlinks(shop, shop.lookup("/docs/index.html"))}  # type: ignore[arg-type]

    update = updatedb(store, rules, "b1", mode=CrawlMode.MIXED, clock=lambda: NOW)
    rows = all_rows(store)
    share = 1.0 / len(expected)
    for target in expected:
        row = rows[target]
        link = parse_inlink((row.inlinks or {})[home])
        assert link is not None and link.kind is InlinkKind.LINK
        same_site = urls.host_key(target) == "127.0.0.2"
        if target in (docs, meta):  # rows of their own (depth 2, radius 0): the larger of each kept
            assert (row.depth, row.radius, row.score) == (2, 1, pytest.approx(1.0 + share)), target
            continue
        assert (row.depth, row.radius) == ((1, 1) if same_site else (0, 0)), target
        assert row.score == pytest.approx(share) and row.status is FetchStatus.UNFETCHED, target
    # The docs page (depth 2, radius 0) links within its site only.
    assert update.past_depth == 0
    # Rerunning changes nothing: scores are not added twice.
    again = updatedb(store, rules, "b1", mode=CrawlMode.MIXED, clock=lambda: NOW)
    assert again.merged == 0 and again.already_merged == update.merged and again.scheduled == 0
    assert all_rows(store)[expected[0]].score == pytest.approx(share)


def test_radius_zero_keeps_links_inside_the_site(store: Store, settings: Settings,
                                                 testweb: TestWebServer) -> None:
    rules = UrlRules.from_settings(settings)
    home = testweb.url("127.0.0.2", "/")
    put(store, fetched_row(home, "b1", depth=2, radius=0))
    parse_batch(store, rules, "b1", mode=CrawlMode.LINKS_ONLY, clock=lambda: NOW)
    update = updatedb(store, rules, "b1", mode=CrawlMode.LINKS_ONLY, clock=lambda: NOW)
    hosts = {urls.host_key(url) for url in all_rows(store)}
    assert hosts == {"127.0.0.2"} and update.past_depth == 2  # the blog and example.invalid


def test_sitemap_only_mode_follows_no_html_links(store: Store, settings: Settings,
                                                 testweb: TestWebServer) -> None:
    rules = UrlRules.from_settings(settings)
    home = testweb.url("127.0.0.2", "/")
    put(store, fetched_row(home, "b1"))
    counts = parse_batch(store, rules, "b1", mode=CrawlMode.SITEMAP_ONLY, clock=lambda: NOW)
    assert counts.pages == 0 and counts.not_parsed == {"page (sitemap-only mode)": 1}
    updatedb(store, rules, "b1", mode=CrawlMode.SITEMAP_ONLY, clock=lambda: NOW)
    assert set(all_rows(store)) == {home}
    assert parse_batch(store, rules, "b1", mode=CrawlMode.SITEMAP_ONLY, clock=lambda: NOW).already_parsed == 1


def test_a_reparsed_page_keeps_only_its_current_outlinks(store: Store, settings: Settings) -> None:
    url = "http://reparse.example/page.html"
    html = b'<html><body><a href="/kept.html">kept</a> <a href="/new.html">new</a></body></html>'
    old = WebPage(url, status=FetchStatus.FETCHED, http_code=200, fetch_time=FETCHED, fetch_mark="b2",
                  generate_mark="b2", parse_mark="b1", content_type="text/html", content=html, depth=2, radius=0,
                  outlinks={"http://reparse.example/kept.html": "link\tkept",
                            "http://reparse.example/gone.html": "link\tgone"})
    key = rowkeys.row_key(url).encode()
    store.write(WEBPAGE_TABLE, [(key, encode(old))])
    counts = parse_batch(store, UrlRules.from_settings(settings), "b2", mode=CrawlMode.MIXED, clock=lambda: NOW)
    assert counts.pages == 1
    row = decode(WebPage, url, store.row(WEBPAGE_TABLE, key) or {})
    assert set(row.outlinks or {}) == {"http://reparse.example/kept.html", "http://reparse.example/new.html"}
    assert row.parse_mark == "b2"


def test_reparsed_pages_lose_their_stale_outlinks_in_one_delete_per_chunk(store: Store, settings: Settings) -> None:
    settings = dataclasses.replace(settings, hbase_batch_size=3)
    base = "http://reparse.example"
    html = b'<html><body><a href="/kept.html">kept</a></body></html>'
    pages = {
        "a": {f"{base}/kept.html": "link\tkept", f"{base}/gone-a.html": "link\tgone"},
        "b": {f"{base}/gone-b.html": "link\tgone"},
        "c": {f"{base}/kept.html": "link\tkept"},  # nothing stale
        "d": {f"{base}/gone-d1.html": "a", f"{base}/gone-d2.html": "a"},
    }
    rows = [WebPage(f"{base}/{name}.html", status=FetchStatus.FETCHED, http_code=200, fetch_time=FETCHED,
                    fetch_mark="b2", generate_mark="b2", parse_mark="b1", content_type="text/html", content=html,
                    depth=2, radius=0, outlinks=outlinks) for name, outlinks in pages.items()]
    rows.append(WebPage(f"{base}/first.html", status=FetchStatus.FETCHED, http_code=200, fetch_time=FETCHED,
                        fetch_mark="b2", generate_mark="b2", content_type="text/html", content=html, depth=2,
                        radius=0))
    put(store, *rows)
    with CountingStore(settings) as counting:
        counts = parse_batch(counting, UrlRules.from_settings(settings), "b2", mode=CrawlMode.MIXED, clock=lambda: NOW)
        assert counts.pages == 5
        # Five rows in chunks of three: one multi-get and one batched delete per chunk with re-parsed pages.
        assert counting.multi_gets == 2 and counting.delete_batches == [2, 1]
    for name in (*pages, "first"):
        row = read(store, f"{base}/{name}.html")
        assert row is not None and set(row.outlinks or {}) == {f"{base}/kept.html"}, name
        assert row.parse_mark == "b2"
