"""The usp drop-in paces as usp's users expect, reads each URL once, and stops at its budget (issues 45, 47).

Our client fetches a tree one request at a time per host, back to back
unless robots.txt asks for a Crawl-delay or the caller for a `delay`; a
sitemap listed again is the same object, not a second fetch; a tree reads at
most `tree_max_documents` documents. On a loopback server whose access log
keeps when each request came.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hostile_web import HostileServer, Route
from usp.objects.sitemap import IndexRobotsTxtSitemap, IndexXMLSitemap, InvalidSitemap, PagesXMLSitemap

from sitemapcrawl.sitemaps import sitemap_tree_for_homepage

XML = "application/xml"


def urlset(server: HostileServer, *paths: str) -> bytes:
    entries = "".join(f"<url><loc>{server.url(p)}</loc></url>" for p in paths)
    return f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'.encode()


def index(server: HostileServer, *paths: str) -> bytes:
    entries = "".join(f"<sitemap><loc>{server.url(p)}</loc></sitemap>" for p in paths)
    return f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</sitemapindex>'.encode()


@pytest.fixture
def site(monkeypatch: pytest.MonkeyPatch) -> Iterator[HostileServer]:
    monkeypatch.delenv("SITEMAPCRAWL_DELAY", raising=False)
    monkeypatch.setenv("SITEMAPCRAWL_USER_AGENT", "UspPacing/1.0")
    server = HostileServer({}).start()
    children = [f"/child-{n}.xml" for n in range(4)]
    server.routes.update({
        "/robots.txt": Route(body=f"User-agent: *\nAllow: /\nSitemap: {server.url('/index.xml')}\n".encode(),
                             content_type="text/plain"),
        "/index.xml": Route(body=index(server, *children), content_type=XML),
        **{child: Route(body=urlset(server, f"/page-{n}.html"), content_type=XML)
           for n, child in enumerate(children)},
    })
    yield server
    server.stop()


def gaps(server: HostileServer) -> list[float]:
    times = sorted(hit.at for hit in server.hits)
    return [later - earlier for earlier, later in zip(times, times[1:], strict=False)]


def test_without_a_delay_a_tree_is_fetched_back_to_back_one_request_at_a_time(site: HostileServer) -> None:
    tree = sitemap_tree_for_homepage(site.url("/"), use_known_paths=False)
    assert len(list(tree.all_pages())) == 4 and len(site.hits) == 6  # robots.txt, the index, four children
    # The crawl's default delay (1 s) would space them a second apart; usp fetches them back to back.
    assert max(gaps(site)) < 0.5, gaps(site)


def test_a_robots_txt_crawl_delay_is_honoured(site: HostileServer) -> None:
    site.routes["/robots.txt"] = Route(
        body=f"User-agent: *\nCrawl-delay: 0.4\nSitemap: {site.url('/index.xml')}\n".encode(),
        content_type="text/plain")
    sitemap_tree_for_homepage(site.url("/"), use_known_paths=False)
    assert len(site.hits) == 6 and min(gaps(site)) >= 0.38, gaps(site)


def test_an_explicit_delay_paces_the_tree(site: HostileServer) -> None:
    sitemap_tree_for_homepage(site.url("/"), use_known_paths=False, delay=0.3)
    assert len(site.hits) == 6 and min(gaps(site)) >= 0.28, gaps(site)


def test_an_index_naming_one_child_5000_times_fetches_it_once(site: HostileServer) -> None:
    site.routes["/index.xml"] = Route(body=index(site, *["/child-0.xml"] * 5000), content_type=XML)
    tree = sitemap_tree_for_homepage(site.url("/"), use_known_paths=False)
    assert site.count("/child-0.xml") == 1
    [robots] = tree.sub_sitemaps
    assert isinstance(robots, IndexRobotsTxtSitemap)
    [listed] = robots.sub_sitemaps
    assert isinstance(listed, IndexXMLSitemap) and len(listed.sub_sitemaps) == 5000
    assert all(child is listed.sub_sitemaps[0] for child in listed.sub_sitemaps)  # the one object, shared
    assert isinstance(listed.sub_sitemaps[0], PagesXMLSitemap)


def test_a_tree_reads_at_most_its_budget_of_documents(site: HostileServer, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = "".join(f"Sitemap: {site.url(f'/many-{n}.xml')}\n" for n in range(200))
    site.routes["/robots.txt"] = Route(body=lines.encode(), content_type="text/plain")
    site.routes.update({f"/many-{n}.xml": Route(body=urlset(site, f"/p{n}.html"), content_type=XML)
                        for n in range(200)})
    monkeypatch.setenv("SITEMAPCRAWL_TREE_MAX_DOCUMENTS", "10")
    tree = sitemap_tree_for_homepage(site.url("/"), use_known_paths=False)
    assert len(site.hits) == 10  # robots.txt and nine sitemaps
    [robots] = tree.sub_sitemaps
    read = [s for s in robots.sub_sitemaps if not isinstance(s, InvalidSitemap)]
    unread = [s for s in robots.sub_sitemaps if isinstance(s, InvalidSitemap)]
    assert len(read) == 9 and len(unread) == 191
    assert "tree_max_documents" in unread[0].reason
