"""The loopback test web, through real sockets: every sitemap format and
fault as served, the truth against what is served, conditional GET, the
access log, the program, and that stop() lets go of its port."""

from __future__ import annotations

import gzip
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections import deque
from collections.abc import Callable
from email.message import Message
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest

from sitemapcrawl.testweb import (
    Access,
    AccessLog,
    Entry,
    Fault,
    FaultSpec,
    Link,
    Page,
    PageRange,
    Resource,
    Robots,
    RobotsGroup,
    Site,
    Sitemap,
    SitemapFormat,
    TestWebServer,
    Truth,
    Web,
    bulk_web,
    demo_web,
    small_web,
)
from sitemapcrawl.testweb.__main__ import main as run_program
from sitemapcrawl.testweb.generate import OVER_URL_LIMIT, OVERSIZED_BYTES

MakeTestWeb = Callable[[Web], TestWebServer]
SHOP, BLOG, DOCS, EDGE, DOWN, MOVED = (f"127.0.0.{i}" for i in range(2, 8))
SM_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
ATOM_NS = "{http://www.w3.org/2005/Atom}"


# --- helpers --------------------------------------------------------------


def connect(url: str) -> http.client.HTTPConnection:
    """A keep-alive connection to the host and port of `url`."""
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)


def get(url: str, headers: dict[str, str] | None = None,
        method: str = "GET") -> tuple[int, Message, bytes]:
    """One request on a fresh connection; redirects are not followed."""
    parts = urlsplit(url)
    conn = connect(url)
    try:
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        conn.request(method, target, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.headers, resp.read()
    finally:
        conn.close()


def sitemap_locs(body: bytes, fmt: SitemapFormat, headers: Message) -> list[str]:
    """The URLs a served sitemap document lists, decoded with the stdlib."""
    if fmt is SitemapFormat.XML_GZ or headers.get("Content-Encoding") == "gzip":
        body = gzip.decompress(body)
    if fmt is SitemapFormat.TEXT:
        return [line for line in body.decode().splitlines() if line]
    root = ET.fromstring(body)
    if fmt is SitemapFormat.RSS:
        return [item.findtext("link") or "" for item in root.iter("item")]
    if fmt is SitemapFormat.ATOM:
        return [link.get("href", "") for link in root.iter(f"{ATOM_NS}link")]
    return [loc.text or "" for loc in root.iter(f"{SM_NS}loc")]


class _Links(HTMLParser):
    """hrefs of <a>, with rel, plus <base href> and <meta name=robots>."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self.base = ""
        self.meta_robots = ""
        self.canonical = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "a" and "href" in a:
            self.links.append((a["href"], a.get("rel", "")))
        elif tag == "base":
            self.base = a.get("href", "")
        elif tag == "meta" and a.get("name") == "robots":
            self.meta_robots = a.get("content", "")
        elif tag == "link" and a.get("rel") == "canonical":
            self.canonical = a.get("href", "")


def served_outlinks(url: str, body: bytes) -> list[str]:
    """What a polite crawler takes from a served page: hrefs resolved
    against <base href>, nofollow links and meta-nofollow pages dropped."""
    p = _Links()
    p.feed(body.decode())
    if "nofollow" in p.meta_robots:
        return []
    base = urljoin(url, p.base) if p.base else url
    out: list[str] = []
    for href, rel in p.links:
        target = urldefrag(urljoin(base, href)).url
        if "nofollow" not in rel and target.startswith("http") and target not in out:
            out.append(target)
    return out


# --- the description model ------------------------------------------------


def test_model_rejects_what_cannot_be_served() -> None:
    with pytest.raises(ValueError, match="127.0.0.0/8"):
        Site("10.0.0.1")
    with pytest.raises(ValueError, match="two resources"):
        Site("127.0.0.9", pages=(Page("/a"),), sitemaps=(Sitemap("/a"),))
    with pytest.raises(ValueError, match="share one host"):
        Web((Site("127.0.0.9"), Site("127.0.0.9")))
    with pytest.raises(ValueError, match="needs a target"):
        FaultSpec(Fault.REDIRECT)
    with pytest.raises(ValueError, match="size"):
        FaultSpec(Fault.OVERSIZED)
    with pytest.raises(ValueError, match="cannot be an index"):
        Sitemap("/feed", SitemapFormat.RSS, index=True)


def test_page_range_names_its_pages_and_nothing_else() -> None:
    r = PageRange("/p/", 10)
    assert [r.index(p) for p in ("/p/0.html", "/p/9.html")] == [0, 9]
    assert [r.index(p) for p in ("/p/10.html", "/p/01.html", "/p/x.html", "/q/1.html",
                                 "/p/1.htm")] == [None] * 5
    assert [lk.href for lk in r.page(0).links] == ["/p/1.html", "/p/2.html"]
    assert [lk.href for lk in r.page(4).links] == ["/p/9.html", "/p/5.html"]
    assert [lk.href for lk in r.page(9).links] == []
    assert PageRange("/p/", 3, cross_hosts=("127.0.0.9",)).page(1).links[-1].href == \
        "//127.0.0.9/p/1.html"


def test_bulk_web_is_lazy() -> None:
    web = bulk_web(20, 5000)
    assert len(web.sites) == 20
    assert all(len(s.pages) == 1 and s.ranges[0].count == 5000 for s in web.sites)
    assert web.sites[0].host == "127.0.1.1" and web.sites[-1].host == "127.0.1.20"
    page = web.sites[3].lookup("/p/4999.html")
    assert isinstance(page, Page) and page.title == "Host 3 page 4999"
    assert web.sites[3].lookup("/p/5000.html") is None
    assert len(Truth(web, 1).page_urls()) == 20 * 5001


# --- truth, from the description alone ------------------------------------


@pytest.fixture(scope="module")
def small_truth() -> Truth:
    """One Truth of small_web for the module: it keeps what it computed."""
    return Truth(small_web(), 8000)


def test_truth_resolves_links_with_base_href_and_drops_fragments(small_truth: Truth) -> None:
    t = small_truth
    shop = t.web.site(SHOP)
    docs_index = shop.lookup("/docs/index.html")
    assert isinstance(docs_index, Page)
    assert t.outlinks(shop, docs_index) == (t.url(SHOP, "/docs/v2/intro.html"),
                                            t.url(SHOP, "/docs/faq.html"))
    home = t.link_graph()[t.url(SHOP, "/")]
    assert t.url(SHOP, "/about.html") in home
    assert t.url(BLOG, "/") in home and "http://example.invalid/elsewhere" in home
    assert t.url(SHOP, "/nofollow-target.html") not in home


def test_truth_hops_nofollow_and_link_only(small_truth: Truth) -> None:
    t = small_truth
    hops = t.hops()
    assert hops[t.url(SHOP, "/")] == 0
    assert hops[t.url(SHOP, "/docs/v2/deep/2.html")] == 4
    assert hops[t.url(DOCS, "/ref/14.html")] == 4  # tree: 0 -> 1 or 2 -> ... -> 14
    assert t.url(SHOP, "/nofollow-target.html") not in hops
    assert t.url(SHOP, "/behind-meta.html") not in hops
    both = t.hops(follow_nofollow=True)
    assert both[t.url(SHOP, "/nofollow-target.html")] == 1
    assert both[t.url(SHOP, "/behind-meta.html")] == 2
    only = t.link_only()
    assert t.url(SHOP, "/link-only.html") in only
    assert t.url(SHOP, "/about.html") not in only  # also listed in sitemaps
    assert "http://example.invalid/elsewhere" not in only
    assert hops[t.url(SHOP, "/products/1.html")] == 2
    assert hops[t.url(SHOP, "/products/1.html")] == t.hops([t.url(SHOP, "/products/")])[
        t.url(SHOP, "/products/1.html")] + 1


def test_truth_sitemaps_indexes_and_scope(small_truth: Truth) -> None:
    t = small_truth
    index = t.url(SHOP, "/sitemap_index.xml")
    assert t.children(index)[:2] == (t.url(SHOP, "/sitemap-pages.xml"),
                                     t.url(SHOP, "/sitemap-products.xml.gz"))
    assert t.children(t.url(SHOP, "/sitemap-pages.xml")) == ()
    sub = t.url(SHOP, "/sub/sitemap.xml")
    assert [(e.url, e.in_scope) for e in t.entries(sub)] == [
        (t.url(SHOP, "/sub/a.html"), True), (t.url(SHOP, "/other.html"), False),
        (t.url(DOCS, "/"), False), ("http://example.invalid/ext.html", False)]
    assert t.listed_by(sub, in_scope_only=True) == (t.url(SHOP, "/sub/a.html"),)
    assert t.url(SHOP, "/missing-sitemap.xml") not in t.discoverable_sitemaps()
    assert t.url(DOCS, "/sitemap-ref.xml") not in t.discoverable_sitemaps()  # no robots.txt
    assert t.url(BLOG, "/sitemap-for-shop.xml") in t.discoverable_sitemaps()
    assert len(t.listed_by(t.url(EDGE, "/sitemap-over-limit.xml"))) == OVER_URL_LIMIT
    with pytest.raises(KeyError):
        t.sitemap(t.url(SHOP, "/about.html"))


def test_truth_robots_rules_and_faults(small_truth: Truth) -> None:
    t = small_truth
    allowed = {p: t.is_allowed("sitemapcrawl", t.url(SHOP, p)) for p in (
        "/", "/private/secret.html", "/private/open.html", "/docs/manual.pdf",
        "/docs/manual.pdf?x=1", "/robots.txt")}
    assert allowed == {"/": True, "/private/secret.html": False, "/private/open.html": True,
                       "/docs/manual.pdf": False, "/docs/manual.pdf?x=1": True,
                       "/robots.txt": True}
    assert not t.is_allowed("BadBot/2.0", t.url(SHOP, "/about.html"))
    assert t.is_allowed("sitemapcrawl", t.url(DOCS, "/anything"))  # robots.txt 404
    assert not t.is_allowed("sitemapcrawl", t.url(DOWN, "/"))  # robots.txt 500
    assert not t.is_allowed("sitemapcrawl", t.url(MOVED, "/drafts/x.html"))  # blog's rules
    assert t.is_allowed("sitemapcrawl", t.url(EDGE, "/"))  # huge robots.txt still has rules
    assert not t.is_allowed("sitemapcrawl", t.url(EDGE, "/nope/x"))
    assert t.crawl_delay(SHOP, "SlowBot") == 10 and t.crawl_delay(SHOP, "sitemapcrawl") is None
    assert t.robots_sitemaps(MOVED) == t.robots_sitemaps(BLOG)
    assert t.robots_sitemaps(DOCS) == ()
    assert t.robots_sitemaps(SHOP) == (t.url(SHOP, "/sitemap_index.xml"),
                                       t.url(SHOP, "/wrong-type-sitemap.xml"),
                                       t.url(BLOG, "/sitemap-for-shop.xml"))
    assert t.disallowed("sitemapcrawl") >= {t.url(SHOP, "/private/secret.html"),
                                            t.url(DOWN, "/"), t.url(BLOG, "/drafts/next.html")}


def test_truth_wildcards_and_longest_match() -> None:
    web = Web((Site("127.0.0.9", robots=Robots(groups=(
        RobotsGroup(("*",), disallow=("/a", "/*.php$", "/x*y"), allow=("/a/b", "/a/b/c$")),
        RobotsGroup(("exact",), disallow=("/only",)),
    ))),))
    t = Truth(web, 1)
    cases = {"/a": False, "/a/b": True, "/a/bc": True, "/a/x": False, "/q.php": False,
             "/q.php?x": True, "/xzzy": False, "/xz": True, "/only": True}
    assert {p: t.is_allowed("bot", t.url("127.0.0.9", p)) for p in cases} == cases
    assert t.is_allowed("exact", t.url("127.0.0.9", "/a"))  # its own group replaces '*'
    assert not t.is_allowed("Exact/1.0", t.url("127.0.0.9", "/only"))


# --- served formats against the truth -------------------------------------


_SMALL_SITEMAPS = [u for u, sm in Truth(small_web(), 0).sitemaps().items()
                   if sm.entry_count() < 1000]


@pytest.mark.parametrize("sitemap_url", _SMALL_SITEMAPS,
                         ids=[urlsplit(u).netloc.split(":")[0] + urlsplit(u).path
                              for u in _SMALL_SITEMAPS])
def test_each_sitemap_serves_what_the_truth_says(testweb: TestWebServer,
                                                 sitemap_url: str) -> None:
    url = testweb.url(urlsplit(sitemap_url).hostname or "", urlsplit(sitemap_url).path)
    sm = testweb.truth.sitemap(url)
    testweb.clear_fault(url)  # the oversized one: its listing is what is checked here
    status, headers, body = get(url)
    assert status == 200
    assert headers["ETag"] and headers["Last-Modified"]
    assert int(headers["Content-Length"]) == len(body)
    assert sitemap_locs(body, sm.format, headers) == list(testweb.truth.listed_by(url))


def test_sitemap_encodings_and_content_types(testweb: TestWebServer) -> None:
    def fetch(path: str, host: str = SHOP) -> tuple[Message, bytes]:
        status, headers, body = get(testweb.url(host, path))
        assert status == 200
        return headers, body

    h, b = fetch("/sitemap-products.xml.gz")
    assert h["Content-Type"] == "application/gzip" and h["Content-Encoding"] is None
    assert gzip.decompress(b).startswith(b"<?xml")
    h, b = fetch("/sitemap-encoded.xml")
    assert h["Content-Type"] == "application/xml" and h["Content-Encoding"] == "gzip"
    assert b[:2] == b"\x1f\x8b" and gzip.decompress(b).startswith(b"<?xml")
    h, b = fetch("/sitemap-plain.xml.gz")
    assert h["Content-Type"] == "application/xml" and b.startswith(b"<?xml")
    assert fetch("/sitemap.txt")[0]["Content-Type"].startswith("text/plain")
    assert fetch("/rss.xml", BLOG)[0]["Content-Type"] == "application/rss+xml"
    assert fetch("/feed.atom", BLOG)[0]["Content-Type"] == "application/atom+xml"
    h, b = fetch("/wrong-type-sitemap.xml")
    assert h["Content-Type"] == "text/html" and b.startswith(b"<?xml")


def test_sitemap_hints_are_written_as_described(testweb: TestWebServer) -> None:
    _, _, body = get(testweb.url(SHOP, "/sitemap-pages.xml"))
    urls = ET.fromstring(body).findall(f"{SM_NS}url")
    first, slow = urls[0], urls[6]
    assert [first.findtext(f"{SM_NS}{t}") for t in ("lastmod", "changefreq", "priority")] == [
        "2024-03-01", "daily", "1.0"]
    assert [slow.findtext(f"{SM_NS}{t}") for t in ("lastmod", "changefreq", "priority")] == [
        "not-a-date", "sometimes", "1.5"]
    assert urls[5].find(f"{SM_NS}lastmod") is None  # absent hints are left out
    _, _, rss = get(testweb.url(BLOG, "/rss.xml"))
    assert ET.fromstring(rss).findtext("channel/item/pubDate") == "Mon, 01 Apr 2024 12:00:00 +0000"


def test_sitemap_over_the_url_limit_is_streamed(testweb: TestWebServer) -> None:
    url = testweb.url(EDGE, "/sitemap-over-limit.xml")
    parts = urlsplit(url)
    conn = connect(url)
    try:
        conn.request("GET", parts.path)
        resp = conn.getresponse()
        length = int(resp.headers["Content-Length"])
        received, count, tail = 0, 0, b""
        while chunk := resp.read(256 * 1024):
            received += len(chunk)
            count += (tail + chunk).count(b"<url>") - tail.count(b"<url>")
            tail = chunk[-8:]
    finally:
        conn.close()
    assert received == length
    assert count == OVER_URL_LIMIT


def test_robots_txt_is_served_as_described(testweb: TestWebServer) -> None:
    robots_url = testweb.url(SHOP, "/robots.txt")
    status, headers, body = get(robots_url)
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    lines = body.decode().splitlines()
    sitemap_lines = [ln.removeprefix("Sitemap: ") for ln in lines if ln.startswith("Sitemap: ")]
    proper = [urljoin(robots_url, s) for s in sitemap_lines if s != "ht!tp:/ broken url"]
    assert proper == list(testweb.truth.robots_sitemaps(SHOP))
    assert "Sitemap: /wrong-type-sitemap.xml" in lines  # a relative line stays relative
    assert {"Sitemap:", "Sitmap: /typo.xml", "Sitemap /no-colon.xml"} <= set(lines)
    assert "Crawl-delay: 10" in lines and "Disallow: /*.pdf$" in lines
    assert get(testweb.url(DOCS, "/robots.txt"))[0] == 404
    assert get(testweb.url(DOWN, "/robots.txt"))[0] == 500
    status, headers, _ = get(testweb.url(MOVED, "/robots.txt"))
    assert status == 301 and headers["Location"] == testweb.url(BLOG, "/robots.txt")
    status, headers, body = get(testweb.url(EDGE, "/robots.txt"))
    assert status == 200 and len(body) == 600_000
    assert b"Disallow: /nope/" in body[:1000] and b"\n# padding" in body[-200:]


def test_pages_serve_their_head_tags(testweb: TestWebServer) -> None:
    _, _, body = get(testweb.url(SHOP, "/meta-nofollow.html"))
    p = _Links()
    p.feed(body.decode())
    assert p.meta_robots == "noindex, nofollow"
    _, _, body = get(testweb.url(SHOP, "/products/1.html?ref=list"))
    p = _Links()
    p.feed(body.decode())
    assert urljoin(testweb.url(SHOP, "/"), p.canonical) == testweb.url(SHOP, "/products/1.html")
    _, _, body = get(testweb.url(SHOP, "/"))
    assert (f'href="{testweb.url(BLOG, "/")}"').encode() in body
    assert b'rel="nofollow"' in body


def test_served_links_match_the_truth_graph(testweb: TestWebServer) -> None:
    """A breadth-first walk of the served pages finds exactly the truth's
    hops (restricted to the web; fault pages answer nothing to follow)."""
    truth = testweb.truth
    conns: dict[str, http.client.HTTPConnection] = {}
    dist: dict[str, int] = {}
    queue: deque[str] = deque()
    for seed in truth.seeds():
        dist[seed] = 0
        queue.append(seed)
    try:
        while queue:
            url = queue.popleft()
            parts = urlsplit(url)
            if truth.site_of(url) is None:
                continue
            conn = conns.setdefault(parts.netloc, connect(url))
            conn.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""))
            resp = conn.getresponse()
            body = resp.read()
            if resp.status != 200 or not resp.headers["Content-Type"].startswith("text/html"):
                continue
            for nxt in served_outlinks(url, body):
                if nxt not in dist:
                    dist[nxt] = dist[url] + 1
                    queue.append(nxt)
    finally:
        for conn in conns.values():
            conn.close()
    assert dist == truth.hops()
    assert len(dist) > 60


def test_discoverable_sitemaps_match_a_walk_from_robots(testweb: TestWebServer) -> None:
    truth = testweb.truth
    found: set[str] = set()
    todo = [u for s in truth.web.sites for u in truth.robots_sitemaps(s)]
    while todo:
        url = todo.pop()
        if url in found or truth.site_of(url) is None:
            continue
        status, headers, _ = get(url, method="HEAD")
        if status != 200:
            continue
        found.add(url)
        sm = truth.sitemap(url)
        if int(headers["Content-Length"]) < 1_000_000:
            todo.extend(sitemap_locs(get(url)[2], sm.format, headers) if sm.index else ())
    assert found == truth.discoverable_sitemaps()


# --- faults ---------------------------------------------------------------


def test_error_statuses(testweb: TestWebServer) -> None:
    assert get(testweb.url(SHOP, "/not-there.html"))[0] == 404
    assert get(testweb.url(SHOP, "/gone.html"))[0] == 410
    assert get(testweb.url(SHOP, "/broken.html"))[0] == 500
    testweb.set_fault(testweb.url(SHOP, "/about.html"), Fault.NOT_FOUND)
    status, headers, body = get(testweb.url(SHOP, "/about.html"))
    assert status == 404 and int(headers["Content-Length"]) == len(body) > 0
    testweb.clear_fault(testweb.url(SHOP, "/about.html"))
    assert get(testweb.url(SHOP, "/about.html"))[0] == 200
    testweb.clear_fault(testweb.url(SHOP, "/broken.html"))  # undoes a described fault too
    assert get(testweb.url(SHOP, "/broken.html"))[0] == 404  # nothing is described there


def test_redirects(testweb: TestWebServer) -> None:
    status, headers, body = get(testweb.url(SHOP, "/moved.html"))
    assert (status, headers["Location"], body) == (301, testweb.url(SHOP, "/about.html"), b"")
    status, headers, _ = get(testweb.url(SHOP, "/moved-away.html"))
    assert (status, headers["Location"]) == (302, testweb.url(BLOG, "/"))
    status, headers, _ = get(testweb.url(SHOP, "/loop.html"))
    assert (status, headers["Location"]) == (301, testweb.url(SHOP, "/loop.html"))
    testweb.set_fault(testweb.url(SHOP, "/a.html"),
                      FaultSpec(Fault.REDIRECT, target="/b.html", status=307))
    testweb.set_fault(testweb.url(SHOP, "/b.html"), FaultSpec(Fault.REDIRECT, target="/a.html"))
    status, headers, _ = get(testweb.url(SHOP, "/a.html"))
    assert (status, headers["Location"]) == (307, testweb.url(SHOP, "/b.html"))


def test_slow_and_trickled_answers(testweb: TestWebServer) -> None:
    status, _, body = get(testweb.url(SHOP, "/slow.html"))
    assert status == 200 and b"<h1>Slow</h1>" in body
    testweb.set_fault(testweb.url(SHOP, "/about.html"),
                      FaultSpec(Fault.TRICKLE, delay=0.05, chunk_size=100))
    status, headers, body = get(testweb.url(SHOP, "/about.html"))
    assert status == 200 and len(body) == int(headers["Content-Length"])
    slow, trickled = testweb.log.records()
    # Lower bounds only (timer granularity aside): the described 0.3 s delay,
    # and one 0.05 s pause between each pair of 100-byte pieces.
    assert slow.end - slow.start >= 0.25
    assert trickled.end - trickled.start >= 0.04 * (len(body) // 100)


def test_oversized_bodies_are_streamed_to_size(testweb: TestWebServer) -> None:
    url = testweb.url(SHOP, "/big.html")
    parts = urlsplit(url)
    conn = connect(url)
    try:
        conn.request("GET", parts.path)
        resp = conn.getresponse()
        assert int(resp.headers["Content-Length"]) == OVERSIZED_BYTES
        first = resp.read(1000)
        received = len(first)
        while chunk := resp.read(1 << 20):
            received += len(chunk)
    finally:
        conn.close()
    assert first.startswith(b"<!DOCTYPE html>") and received == OVERSIZED_BYTES
    # A gzipped sitemap grows where it hurts: after decompression.
    gz = testweb.url(SHOP, "/sitemap-products.xml.gz")
    testweb.set_fault(gz, FaultSpec(Fault.OVERSIZED, size=2_000_000))
    status, headers, body = get(gz)
    assert status == 200 and len(body) < 100_000
    plain = gzip.decompress(body)
    assert len(plain) == 2_000_000 and b"</urlset>" in plain[:2000]


def test_wrong_content_type(testweb: TestWebServer) -> None:
    status, headers, body = get(testweb.url(SHOP, "/wrong-type.html"))
    assert status == 200 and headers["Content-Type"] == "image/png"
    assert body.startswith(b"<!DOCTYPE html>")


def test_reset_and_close_without_answer(testweb: TestWebServer) -> None:
    with pytest.raises(ConnectionResetError):
        get(testweb.url(SHOP, "/reset.html"))
    with pytest.raises(http.client.RemoteDisconnected):
        get(testweb.url(SHOP, "/close.html"))
    assert [(r.target, r.status, r.size) for r in testweb.log.records()] == [
        ("/reset.html", 0, 0), ("/close.html", 0, 0)]


def test_head_answers_headers_only(testweb: TestWebServer) -> None:
    status, headers, body = get(testweb.url(SHOP, "/about.html"), method="HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) > 100


def test_set_fault_refuses_urls_outside_the_web(testweb: TestWebServer) -> None:
    with pytest.raises(KeyError, match="not a URL of this test web"):
        testweb.set_fault("http://127.0.0.99:1/x", Fault.GONE)


# --- conditional GET and revisions ----------------------------------------


@pytest.mark.parametrize("path", ["/about.html", "/sitemap-pages.xml", "/robots.txt"])
def test_conditional_get_and_touch(testweb: TestWebServer, path: str) -> None:
    url = testweb.url(SHOP, path)
    _, h0, b0 = get(url)
    etag, modified = h0["ETag"], h0["Last-Modified"]
    status, h, body = get(url, {"If-None-Match": etag})
    assert (status, body, h["ETag"]) == (304, b"", etag)
    assert get(url, {"If-None-Match": f'"other", W/{etag}'})[0] == 304
    assert get(url, {"If-None-Match": '"other"'})[0] == 200
    assert get(url, {"If-Modified-Since": modified})[0] == 304
    assert get(url, {"If-Modified-Since": "Sun, 31 Dec 2023 23:00:00 GMT"})[0] == 200
    assert testweb.touch(url) == 1
    status, h1, b1 = get(url, {"If-None-Match": etag, "If-Modified-Since": modified})
    assert status == 200 and h1["ETag"] != etag and b1 != b0
    assert get(url, {"If-Modified-Since": modified})[0] == 200
    assert get(url, {"If-None-Match": h1["ETag"]})[0] == 304


def test_reset_restores_the_description(testweb: TestWebServer) -> None:
    about = testweb.url(SHOP, "/about.html")
    _, h0, _ = get(about)
    testweb.touch(about)
    testweb.set_fault(about, Fault.SERVER_ERROR)
    testweb.clear_fault(testweb.url(SHOP, "/gone.html"))
    testweb.reset()
    assert len(testweb.log) == 0
    assert get(about)[1]["ETag"] == h0["ETag"]
    assert get(testweb.url(SHOP, "/gone.html"))[0] == 410


# --- the access log -------------------------------------------------------


def test_access_log_records_requests(testweb: TestWebServer) -> None:
    url = testweb.url(BLOG, "/posts/1.html?x=1")
    get(url, {"User-Agent": "sitemapcrawl-test/1", "If-None-Match": '"x"',
              "If-Modified-Since": "Mon, 01 Jan 2024 00:00:00 GMT"})
    get(testweb.url(BLOG, "/posts/2.html"))
    get(testweb.url(SHOP, "/nope"))
    first = testweb.log.records()[0]
    assert (first.host, first.port, first.method, first.target) == (
        BLOG, testweb.port, "GET", "/posts/1.html?x=1")
    assert (first.user_agent, first.if_none_match, first.if_modified_since) == (
        "sitemapcrawl-test/1", '"x"', "Mon, 01 Jan 2024 00:00:00 GMT")
    assert first.status == 404  # the query makes it another resource
    assert first.size > 0 and first.start <= first.end
    assert testweb.log.requests_per_host() == {BLOG: 2, SHOP: 1}
    assert testweb.log.paths(BLOG) == ["/posts/1.html?x=1", "/posts/2.html"]
    assert testweb.log.was_fetched(testweb.url(BLOG, "/posts/2.html"))
    assert not testweb.log.was_fetched(testweb.url(BLOG, "/posts/3.html"))
    assert testweb.log.count(url) == 1
    gap = testweb.log.min_gap(BLOG)
    assert gap is not None and gap >= 0
    assert testweb.log.max_concurrency(BLOG) == 1
    assert testweb.log.min_gap(SHOP) is None


def test_access_log_sees_concurrent_requests(testweb: TestWebServer) -> None:
    """Three answers too big for the socket buffers: once all three have
    sent their headers, none can have ended before its body is read."""
    url = testweb.url(SHOP, "/about.html")
    testweb.set_fault(url, FaultSpec(Fault.OVERSIZED, size=24_000_000))
    conns = [connect(url) for _ in range(3)]
    try:
        for c in conns:
            c.connect()
            assert c.sock is not None
            # A fixed receive buffer (no autotuning): the server's writes must block.
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            c.request("GET", "/about.html")
        responses = [c.getresponse() for c in conns]  # every request has started
        assert [len(r.read()) for r in responses] == [24_000_000] * 3
    finally:
        for c in conns:
            c.close()
    assert testweb.log.max_concurrency(SHOP) == 3
    assert (testweb.log.min_gap(SHOP) or 0) < 0


def test_access_log_queries_on_known_records() -> None:
    log = AccessLog()

    def rec(host: str, start: float, end: float) -> Access:
        return Access(host, 1, "GET", "/", "", "", "", 200, 0, start, end)

    for r in (rec("a", 0, 1), rec("a", 3, 4), rec("a", 4.5, 6), rec("a", 5, 5.5),
              rec("b", 0, 10), rec("b", 10, 11)):
        log.add(r)
    assert log.min_gap("a") == -1.0  # 5 starts while 4.5..6 runs
    assert log.max_concurrency("a") == 2
    assert log.min_gap("b") == 0.0 and log.max_concurrency("b") == 1
    log.clear()
    assert len(log) == 0 and log.requests_per_host() == {}


def test_access_log_is_thread_safe() -> None:
    log = AccessLog()

    def add_many(host: str) -> None:
        for i in range(2000):
            log.add(Access(host, 1, "GET", f"/{i}", "", "", "", 200, 0, i, i + 0.5))

    threads = [threading.Thread(target=add_many, args=(f"h{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert log.requests_per_host() == {f"h{i}": 2000 for i in range(4)}


# --- other webs -----------------------------------------------------------


def test_bulk_web_served(make_testweb: MakeTestWeb) -> None:
    server = make_testweb(bulk_web(3, 100, first_host="127.0.2.1"))
    sitemap = server.url("127.0.2.2", "/sitemap.xml")
    status, headers, body = get(sitemap)
    assert sitemap_locs(body, SitemapFormat.XML, headers) == list(server.truth.listed_by(sitemap))
    assert len(server.truth.listed_by(sitemap)) == 100
    _, _, page = get(server.url("127.0.2.2", "/p/7.html"))
    assert served_outlinks(server.url("127.0.2.2", "/p/7.html"), page) == list(
        server.truth.link_graph()[server.url("127.0.2.2", "/p/7.html")])
    assert server.truth.link_only() == {server.url(h, "/") for h in server.web.hosts}


def test_bulk_web_without_sitemaps_or_links() -> None:
    t = Truth(bulk_web(2, 10, sitemap_listed=False, links=False), 1)
    assert t.sitemaps() == {} and t.sitemap_listed() == frozenset()
    assert set(t.hops()) == set(t.seeds())


def test_demo_web_serves_its_sitemaps(make_testweb: MakeTestWeb) -> None:
    server = make_testweb(demo_web())
    found = server.truth.discoverable_sitemaps()
    assert len(found) == 4
    for url in found:
        assert get(url)[0] == 200
    listed = server.truth.sitemap_listed()
    assert all(get(u)[0] == 200 for u in listed)


def test_custom_web_with_fixed_port_and_relative_ref(make_testweb: MakeTestWeb) -> None:
    web = Web((Site("127.0.0.9", pages=(Page("/", "Home", (Link("a/b.html"),)),
                                        Page("/a/b.html", "B")),
                    sitemaps=(Sitemap("/s/map.txt", SitemapFormat.TEXT,
                                      entries=(Entry("page.html"),)),)),))
    server = make_testweb(web)
    assert server.base_urls() == [f"http://127.0.0.9:{server.port}/"]
    assert server.truth.listed_by(server.url("127.0.0.9", "/s/map.txt")) == (
        server.url("127.0.0.9", "/s/page.html"),)
    assert get(server.url("127.0.0.9", "/s/map.txt"))[2].decode().strip() == server.url(
        "127.0.0.9", "/s/page.html")
    assert server.truth.hops()[server.url("127.0.0.9", "/a/b.html")] == 1


# --- life cycle -----------------------------------------------------------


def test_stop_releases_the_port_and_its_threads() -> None:
    before = set(threading.enumerate())
    web = Web((Site("127.0.0.9", pages=(Page("/"),)), Site("127.0.0.10", pages=(Page("/"),))))
    server = TestWebServer(web).start()
    port = server.port
    idle = http.client.HTTPConnection("127.0.0.9", port, timeout=10)
    idle.request("GET", "/")
    assert idle.getresponse().read()  # a keep-alive connection left open
    server.stop()
    assert set(threading.enumerate()) <= before
    with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
        idle.request("GET", "/")
        idle.getresponse()
    idle.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.10", port), timeout=5)
    again = TestWebServer(web, port=port).start()  # the same port binds again
    try:
        assert get(again.url("127.0.0.10", "/"))[0] == 200
    finally:
        again.stop()


def test_a_taken_port_is_reported() -> None:
    with pytest.raises(ValueError, match="port must be"):
        TestWebServer(small_web(), port=70000)
    with socket.socket() as taken:
        taken.bind(("127.0.0.10", 0))
        taken.listen()
        port = taken.getsockname()[1]
        web = Web((Site("127.0.0.9"), Site("127.0.0.10")))
        with pytest.raises(OSError):
            TestWebServer(web, port=port).start()
    with socket.socket() as probe:  # the server bound on 127.0.0.9 was closed again
        probe.bind(("127.0.0.9", port))


def test_program_serves_until_sigterm(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sitemapcrawl.testweb", "serve", "--web", "demo",
         "--ready-file", str(ready)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(300):  # up to 30 s for the interpreter to start
            if ready.exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        urls = ready.read_text().split()
        assert len(urls) == 2
        assert get(urls[0] + "robots.txt")[0] == 200
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    lines = out.splitlines()
    assert lines[:2] == urls and lines[2].startswith("ready: 2 hosts on port ")


def test_program_reports_bad_arguments_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_program(["serve", "--port", "70000"]) == 1
    assert run_program(["truth", "--web", "bulk", "--hosts", "0"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "testweb: port must be 0-65535 (0: a free one): 70000",
        "testweb: bulk_web needs hosts >= 1 and pages_per_host >= 0: 0, 200"]


def test_program_prints_the_truth() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "sitemapcrawl.testweb", "truth", "--web", "demo", "--port",
         "1234"], capture_output=True, text=True, check=True, timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}).stdout
    data = json.loads(out)
    assert data == json.loads(json.dumps(Truth(demo_web(), 1234).to_json()))
    assert data["sites"][0]["base_url"] == "http://127.0.0.2:1234/"


def test_a_web_changes_between_crawls_with_new_validators_and_its_own_truth() -> None:
    from sitemapcrawl.testweb import changing_web

    with TestWebServer(changing_web(1)) as web:
        before = web.truth
        news = web.url("127.0.0.2", "/sitemap-news.xml")
        old = web.url("127.0.0.2", "/sitemap-old.xml")
        status, headers, body = get(news)
        etag, old_etag = headers["ETag"], get(old)[1]["ETag"]
        assert status == 200 and b"/news/1.html" in body and b"/news/4.html" not in body
        changed = web.change_web(changing_web(2))
        assert news in changed and web.url("127.0.0.2", "/sitemap_index.xml") in changed
        assert old not in changed and web.url("127.0.0.2", "/") in changed
        status, headers, body = get(news, {"If-None-Match": etag})
        assert status == 200 and headers["ETag"] != etag and b"/news/4.html" in body and b"/news/1.html" not in body
        assert get(old, {"If-None-Match": old_etag})[0] == 304  # unchanged: still 304
        kinds = {(c.url.rsplit("/", 1)[-1], c.kind) for c in web.truth.sitemap_changes(before)}
        assert ("4.html", "added") in kinds and ("1.html", "removed") in kinds and ("3.html", "priority") in kinds
        assert ("sitemap-old.xml", "removed") in kinds and len(kinds) == 9
        with pytest.raises(ValueError, match="same hosts"):
            web.change_web(small_web())


def test_a_static_web_serves_the_same_bytes_and_renders_each_body_once(testweb: TestWebServer) -> None:
    paths = ["/robots.txt", "/sitemap-products.xml.gz", "/sitemap-encoded.xml", "/sitemap-pages.xml"]
    def plain(body: bytes, port: int) -> bytes:  # the port appears in absolute URLs: compare without it
        return (gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body).replace(str(port).encode(), b"PORT")

    with TestWebServer(small_web(), static=True) as static:
        for path in paths:
            want = get(testweb.url(SHOP, path))
            first, second = get(static.url(SHOP, path)), get(static.url(SHOP, path))
            assert first[0] == second[0] == want[0] == 200
            assert first[2] == second[2] and first[1]["Content-Length"] == str(len(first[2]))
            assert plain(first[2], static.port) == plain(want[2], testweb.port)
        assert len(static._kept) == len(paths)  # one kept rendering per document, not one per request
        static.touch(static.url(SHOP, "/sitemap-pages.xml"))  # a new revision is rendered anew
        assert get(static.url(SHOP, "/sitemap-pages.xml"))[0] == 200 and len(static._kept) == len(paths) + 1


# --- what a page says about itself, bot challenges, basic auth (issue 46) ---

AUDIT_SITE = Site(
    "127.0.46.9", "audit",
    pages=(Page("/en.html", "EN", googlebot="noindex", alternates=(("de", "/de.html"), ("en", "/en.html")),
                headers=(("X-Robots-Tag", "googlebot: nofollow"), ("Link", '</en.html>; rel="canonical"'))),
           Page("/challenged.html")),
    resources=(Resource("/doc.pdf", headers=(("Link", '<//127.0.46.9/doc.html>; rel="canonical"'),)),),
    sitemaps=(Sitemap("/sitemap.xml", entries=(
        Entry("/en.html", alternates=(("de", "/de.html"),), news_date="2024-05-01T10:00:00Z", news_title="A & B",
              images=2, videos=1),
        Entry("/plain.html"))),),
    faults=(("/challenged.html", FaultSpec(Fault.CHALLENGE)),),
)


def test_pages_say_what_they_say_about_themselves_in_the_head_and_the_headers(make_testweb: MakeTestWeb) -> None:
    server = make_testweb(Web((AUDIT_SITE,), "audit"))
    status, headers, body = get(server.url(AUDIT_SITE, "/en.html"))
    assert status == 200 and headers["X-Robots-Tag"] == "googlebot: nofollow"
    assert headers["Link"] == '</en.html>; rel="canonical"'
    assert b'<meta name="googlebot" content="noindex">' in body
    assert b'<link rel="alternate" hreflang="de" href="/de.html">' in body
    status, headers, body = get(server.url(AUDIT_SITE, "/doc.pdf"))
    assert (status, headers["Content-Type"]) == (200, "application/pdf") and body.startswith(b"%PDF")
    assert headers["Link"] == f'<{server.url(AUDIT_SITE, "/doc.html")}>; rel="canonical"'


def test_a_challenge_answers_as_cloudflare_does(make_testweb: MakeTestWeb) -> None:
    server = make_testweb(Web((AUDIT_SITE,), "audit"))
    status, headers, body = get(server.url(AUDIT_SITE, "/challenged.html"))
    assert (status, headers["cf-mitigated"]) == (403, "challenge") and "cloudflare" in headers.get_all("Server")
    assert b"<title>Just a moment...</title>" in body


def test_a_sitemap_entry_carries_its_extensions(make_testweb: MakeTestWeb) -> None:
    from sitemapcrawl.sitemaps import parse_sitemap

    server = make_testweb(Web((AUDIT_SITE,), "audit"))
    url = server.url(AUDIT_SITE, "/sitemap.xml")
    status, _headers, body = get(url)
    entries = list(parse_sitemap(body, url))
    assert status == 200 and len(entries) == 2
    first = entries[0]
    assert [(a.hreflang, a.href) for a in first.alternates] == [("de", server.url(AUDIT_SITE, "/de.html"))]
    assert first.news is not None and first.news.title == "A & B"
    assert (len(first.images), len(first.videos)) == (2, 1)
    assert not (entries[1].alternates or entries[1].news or entries[1].images)


def test_a_site_behind_basic_auth_answers_401_without_it(make_testweb: MakeTestWeb) -> None:
    import base64

    site = Site("127.0.46.10", "locked", pages=(Page("/"),), basic_auth=("u", "p"))
    server = make_testweb(Web((site,), "locked"))
    status, headers, _ = get(server.url(site, "/"))
    assert (status, headers["WWW-Authenticate"]) == (401, 'Basic realm="testweb"')
    assert get(server.url(site, "/robots.txt"))[0] == 401
    login = {"Authorization": "Basic " + base64.b64encode(b"u:p").decode()}
    assert get(server.url(site, "/"), login)[0] == 200
