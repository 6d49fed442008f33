"""Scope by vouching on a whole crawl of the loopback web (issue 10 §1), and one discovery path (§2).

`vouching_web` keeps its sitemaps in folders, as large sites do: what each
sitemap may list depends on who vouches for it (robots.txt, an index, the
user), not on its folder alone.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from datetime import UTC, datetime

import cli_helpers
from cli_helpers import runner

from sitemapcrawl.cli.app import app
from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.crawl import CrawlOptions, crawl
from sitemapcrawl.jobs.parse import parse_batch
from sitemapcrawl.model.cells import decode, encode
from sitemapcrawl.model.webpage import HOST_TABLE, WEBPAGE_TABLE, FetchStatus, HostRow, SitemapSource, WebPage
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.storage.hosts import origin_key
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer, vouching_web
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

AGENT = "sitemapcrawl-test/1.0"
VOUCHED, HOST, LINKED, INJECTED, MOVED = (f"127.0.0.{i}" for i in range(2, 7))


WEB = vouching_web()  # served by the shared `web` fixture


def table(store: Store) -> dict[str, WebPage]:
    rows = {}
    for key, cells in store.scan(WEBPAGE_TABLE):
        url = rowkeys.url_from_row_key(key.decode())
        rows[url] = decode(WebPage, url, cells)
    return rows


def listed_by(rows: dict[str, WebPage], sitemap: str) -> set[str]:
    """The URLs that carry an inlink cell of `sitemap`: what parse kept from it."""
    return {url for url, row in rows.items() if sitemap in (row.inlinks or {})}


# Every command here as this crawler, without a politeness delay.
cli = functools.partial(cli_helpers.cli, user_agent=AGENT, env={"SITEMAPCRAWL_DELAY": "0"})


def test_a_crawl_keeps_what_each_host_vouches_for(settings: Settings, store: Store, web: TestWebServer) -> None:
    u = web.url
    seeds = [f"{u(VOUCHED, '/')}\tradius=1", u(LINKED, "/"), f"{u(INJECTED, '/feeds/sitemap.xml')}\tsitemap=true",
             f"{u(MOVED, '/')}\tradius=1"]
    crawl_settings = dataclasses.replace(settings, user_agent=AGENT, delay=0.0, max_connections=4)
    client = PoliteHttpClient.from_settings(crawl_settings)
    try:
        crawl(store, client, UrlRules.from_settings(crawl_settings), [s + "\n" for s in seeds],
              CrawlOptions(mode=CrawlMode.MIXED, rounds=4))
    finally:
        client.close()
    rows = table(store)
    port = web.port
    v = f"{VOUCHED}:{port}"

    # robots.txt lists a root index; its children live in /sitemaps/ and list root pages: all kept.
    posts, pages = u(VOUCHED, "/sitemaps/posts.xml"), u(VOUCHED, "/sitemaps/pages.xml")
    assert listed_by(rows, posts) == {u(VOUCHED, "/blog/post-1.html"), u(VOUCHED, "/sitemaps/archive.html")}
    assert listed_by(rows, pages) == {u(VOUCHED, "/"), u(VOUCHED, "/about.html")}
    index_row = rows[u(VOUCHED, "/sitemap_index.xml")]
    assert index_row.vouched_by == (f"{v} 0",)
    for child in (posts, pages):
        assert rows[child].vouched_by == (f"{v} 1",) and rows[child].dropped_scope == 0, child
        assert f"vb={v}@1" in (rows[child].inlinks or {})[u(VOUCHED, "/sitemap_index.xml")]

    # A's robots.txt lists a sitemap on B: A's pages kept, B's only in the folder, C's not at all.
    cross = u(HOST, "/for-a/sitemap.xml")
    assert listed_by(rows, cross) == {u(VOUCHED, "/about.html"), u(VOUCHED, "/blog/post-1.html"),
                                      u(HOST, "/for-a/b-page.html")}
    cross_row = rows[cross]
    assert cross_row.vouched_by == (f"{v} 0",) and cross_row.dropped_scope == 2
    assert set(cross_row.sitemap_problems or ()) >= {
        "1 entries out of scope: folder (outside the sitemap's folder) dropped",
        "1 entries out of scope: host (a host that does not vouch for this sitemap) dropped"}

    # The same children reached only through a link from a page: the folder rule applies.
    linked = u(LINKED, "/sitemaps/posts.xml")
    assert rows[linked].sitemap_source is SitemapSource.LINK and rows[linked].vouched_by is None
    assert listed_by(rows, linked) == {u(LINKED, "/sitemaps/archive.html")}
    assert rows[linked].dropped_scope == 1
    assert any("out of scope: folder" in p for p in rows[linked].sitemap_problems or ())

    # An injected sitemap=true folder sitemap is vouched for by its host: root pages kept.
    feed = u(INJECTED, "/feeds/sitemap.xml")
    assert rows[feed].vouched_by == (f"{INJECTED}:{port} 0",)
    assert listed_by(rows, feed) == {u(INJECTED, "/"), u(INJECTED, "/about.html"), u(INJECTED, "/feeds/latest.html")}
    assert rows[feed].dropped_scope == 0

    # A sitemap that redirects within its host is vouched for as its source was.
    moved = u(MOVED, "/sitemaps/moved.xml")
    assert rows[moved].is_sitemap and rows[moved].sitemap_source is SitemapSource.REDIRECT
    assert rows[moved].vouched_by == (f"{MOVED}:{port} 0",)
    assert listed_by(rows, moved) == {u(MOVED, "/"), u(MOVED, "/about.html")}
    # One redirected to another registered domain: its source's vouchers, its own folder, nothing new.
    away = u(HOST, "/elsewhere/s.xml")
    assert rows[away].is_sitemap and rows[away].vouched_by == (f"{MOVED}:{port} 0",)
    assert listed_by(rows, away) == {u(MOVED, "/about.html"), u(HOST, "/elsewhere/x.html")}
    assert rows[away].dropped_scope == 1

    # The report says the drop reasons per sitemap.
    report = cli(settings, "report")
    assert report.exit_code == 0, report.output
    assert "out of scope: host" in report.stdout and "out of scope: folder" in report.stdout


def test_detect_and_sitemap_tree_find_the_same_sitemaps(settings: Settings, store: Store,
                                                         web: TestWebServer) -> None:
    home = web.url(VOUCHED, "/")
    injected = runner.invoke(app, ["--hbase", settings.hbase, "--table-prefix", settings.table_prefix,
                                   "inject", "-"], input=home + "\n")
    assert injected.exit_code == 0, injected.output
    detected = cli(settings, "detect", "--host", VOUCHED)
    assert detected.exit_code == 0, detected.output
    cells = store.row(HOST_TABLE, origin_key(home.rstrip("/")))
    assert cells is not None
    host_row = decode(HostRow, home.rstrip("/"), cells)

    tree = cli(settings, "sitemap", "tree", home, "--jsonl")
    assert tree.exit_code == 0, tree.output
    nodes = [json.loads(line) for line in tree.stdout.splitlines()]
    top = [node["url"] for node in nodes if node["depth"] == 0]
    assert top == list(host_row.sitemaps or ()) == [web.url(VOUCHED, "/sitemap_index.xml"),
                                                     web.url(HOST, "/for-a/sitemap.xml")]
    # The tree scopes as the crawl does: the folder children keep their root pages.
    by_url = {node["url"]: node for node in nodes}
    assert by_url[web.url(VOUCHED, "/sitemaps/pages.xml")]["urls"] == 2
    assert by_url[web.url(HOST, "/for-a/sitemap.xml")]["urls"] == 3
    assert (by_url[web.url(HOST, "/for-a/sitemap.xml")]["dropped_folder"],
            by_url[web.url(HOST, "/for-a/sitemap.xml")]["dropped_host"]) == (1, 1)


def test_sitemap_parse_keeps_the_folder_rule_unless_vouched_for(settings: Settings, web: TestWebServer) -> None:
    pages = web.url(VOUCHED, "/sitemaps/pages.xml")
    alone = cli(settings, "sitemap", "parse", pages, "--jsonl")
    assert alone.exit_code == 0 and alone.stdout == ""
    assert "2 entries out of scope: folder" in alone.stderr
    vouched = cli(settings, "sitemap", "parse", pages, "--jsonl", "--vouched-by", f"{VOUCHED}:{web.port}")
    assert vouched.exit_code == 0, vouched.output
    assert [json.loads(line)["loc"] for line in vouched.stdout.splitlines()] == [
        web.url(VOUCHED, "/"), web.url(VOUCHED, "/about.html")]
    wrong_port = cli(settings, "sitemap", "parse", pages, "--jsonl", "--vouched-by", VOUCHED)
    assert wrong_port.stdout == ""  # 127.0.0.2 on port 80 is another host
    bad = cli(settings, "sitemap", "parse", pages, "--vouched-by", "not a host/")
    assert bad.exit_code == 2 and bad.stderr.count("\n") == 1 and "--vouched-by" in bad.stderr


def test_leniency_warnings_reach_the_row_and_every_report(settings: Settings, store: Store, tmp_path) -> None:
    sitemap = "http://127.0.0.9:8000/sitemap.xml"
    body = (b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            b"<url><loc>http://127.0.0.9:8000/a</loc></url><url>http://127.0.0.9:8000/b</url></urlset>")
    row = WebPage(sitemap, status=FetchStatus.FETCHED, fetch_mark="b1", is_sitemap=True,
                  sitemap_source=SitemapSource.SEED, content=body, depth=1, radius=0)
    store.write(WEBPAGE_TABLE, [(rowkeys.row_key(sitemap).encode(), encode(row))])
    counts = parse_batch(store, UrlRules.from_settings(settings), "b1", clock=lambda: datetime(2025, 1, 1, tzinfo=UTC))
    assert counts.entries == 2 and counts.lenient == 1
    warning = "1 <url> element(s) without <loc>: the URL was read from the element's own text"
    cells = store.row(WEBPAGE_TABLE, rowkeys.row_key(sitemap).encode())
    assert cells is not None and decode(WebPage, sitemap, cells).sitemap_warnings == (warning,)

    text = cli(settings, "report")
    assert f"warning (read leniently): {warning}" in text.stdout
    jsonl = cli(settings, "report", "--jsonl")
    objects = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert [o["warnings"] for o in objects if o["kind"] == "sitemap"] == [[warning]]
    page = tmp_path / "report.html"
    html = cli(settings, "report", "--html", str(page))
    assert html.exit_code == 0, html.output
    assert "warning (read leniently): 1 &lt;url&gt; element(s) without &lt;loc&gt;" in page.read_text()
