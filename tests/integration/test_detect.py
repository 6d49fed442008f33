"""detect against the real local HBase and the loopback test web."""

from __future__ import annotations

import functools
import json
from collections import Counter

import cli_helpers
from cli_helpers import runner
from hbase_fixtures import hbase_shell

from sitemapcrawl.cli.app import app
from sitemapcrawl.config import Settings
from sitemapcrawl.model.cells import decode
from sitemapcrawl.model.webpage import HOST_TABLE, HostRow, RobotsStatus
from sitemapcrawl.storage.hosts import origin_key
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer

AGENT = "sitemapcrawl-test/1.0 (+http://127.0.0.1/)"
SHOP, BLOG, DOCS, EDGE, DOWN, MOVED = (f"127.0.0.{i}" for i in range(2, 8))


# Every command here as this crawler, with a short politeness delay.
cli = functools.partial(cli_helpers.cli, user_agent=AGENT, env={"SITEMAPCRAWL_DELAY": "0.05"})


def sitemap_rows(settings: Settings, origin: str) -> dict[str, dict]:
    result = cli(settings, "readdb", "--prefix", origin + "/", "--jsonl")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    return {row["url"]: row for row in rows if row.get("s:sm")}


def host_row(store: Store, origin: str) -> HostRow:
    cells = store.row(HOST_TABLE, origin_key(origin))
    assert cells is not None, origin
    return decode(HostRow, origin, cells)


def test_detect_on_the_small_web(settings: Settings, store: Store, testweb: TestWebServer) -> None:
    truth = testweb.truth
    base = {host: testweb.base_url(host).rstrip("/") for host in (SHOP, BLOG, DOCS, EDGE, DOWN, MOVED)}
    seeds = "".join(f"{url}/\n" for url in base.values())
    assert cli(settings, "inject", "-", stdin=seeds).exit_code == 0

    result = cli(settings, "detect", "--probe-known-paths")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[-1].startswith("detect: hosts 6, ")

    # shop: three proper Sitemap lines (one cross-host), three malformed ones ignored.
    shop = host_row(store, base[SHOP])
    assert shop.robots_status is RobotsStatus.OK and shop.robots_http_code == 200
    assert set(shop.sitemaps or ()) == set(truth.robots_sitemaps(SHOP))
    assert set(sitemap_rows(settings, base[SHOP])) == {
        base[SHOP] + "/sitemap_index.xml", base[SHOP] + "/wrong-type-sitemap.xml"}
    cross = sitemap_rows(settings, base[BLOG])[base[BLOG] + "/sitemap-for-shop.xml"]
    assert cross["s:src"] == "robots" and cross["s:cs"] == [base[SHOP] + "/robots.txt"]
    assert cross["f:st"] == "unfetched"

    # blog: RSS and Atom; its own sitemaps, and the one it hosts for the shop.
    blog = host_row(store, base[BLOG])
    assert set(blog.sitemaps or ()) == set(truth.robots_sitemaps(BLOG))
    assert set(sitemap_rows(settings, base[BLOG])) == {
        base[BLOG] + "/rss.xml", base[BLOG] + "/feed.atom", base[BLOG] + "/sitemap-for-shop.xml"}

    # docs: no robots.txt (404: allow all); the gzipped index at /sitemap.xml found by probing.
    docs = host_row(store, base[DOCS])
    assert docs.robots_status is RobotsStatus.MISSING and docs.robots_http_code == 404
    probed = sitemap_rows(settings, base[DOCS])
    assert list(probed) == [base[DOCS] + "/sitemap.xml"] and probed[base[DOCS] + "/sitemap.xml"]["s:src"] == "probe"

    # edge: robots.txt over the 500 KB cap is truncated, not refused.
    edge = host_row(store, base[EDGE])
    assert edge.robots_status is RobotsStatus.OK and edge.robots_truncated is True
    assert set(edge.sitemaps or ()) == set(truth.robots_sitemaps(EDGE))
    assert len(edge.robots_text or "") <= Settings().max_robots_bytes

    # down: robots.txt answers 500: disallow all, retry in an hour, nothing injected.
    down = host_row(store, base[DOWN])
    assert down.robots_status is RobotsStatus.ERROR and down.robots_http_code == 500
    assert down.robots_retry_at is not None and down.robots_fetch_time is not None
    assert (down.robots_retry_at - down.robots_fetch_time).total_seconds() == 3600
    assert sitemap_rows(settings, base[DOWN]) == {}

    # moved: robots.txt redirects to the blog's; its sitemaps are cross-submissions.
    moved = host_row(store, base[MOVED])
    assert moved.robots_status is RobotsStatus.OK
    assert set(moved.sitemaps or ()) == set(truth.robots_sitemaps(MOVED))
    rss = sitemap_rows(settings, base[BLOG])[base[BLOG] + "/rss.xml"]
    assert rss["s:cs"] == [base[MOVED] + "/robots.txt"]

    # Every request carried our user agent; robots.txt was read once per host
    # (the blog's twice: the moved host's redirects to it).
    robots_hits = Counter(r.host for r in testweb.log.records() if r.target == "/robots.txt")
    assert robots_hits == {SHOP: 1, BLOG: 2, DOCS: 1, EDGE: 1, DOWN: 1, MOVED: 1}
    assert all(r.user_agent == AGENT for r in testweb.log.records())

    # Running it again finds nothing new and loses nothing.
    again = cli(settings, "detect")
    assert again.exit_code == 0 and ", new 0," in again.stderr.splitlines()[-1]
    assert cross == sitemap_rows(settings, base[BLOG])[base[BLOG] + "/sitemap-for-shop.xml"]

    table = settings.table_prefix + HOST_TABLE
    out = hbase_shell(f"scan '{table}', {{COLUMNS => ['r:st', 'r:hc']}}")
    assert "value=error" in out and "value=missing" in out and "6 row(s)" in out


def test_blacklisted_sitemap_is_not_injected_and_a_row_records_why(
        settings: Settings, store: Store, testweb: TestWebServer, tmp_path) -> None:
    shop = testweb.base_url(SHOP).rstrip("/")
    blacklist = tmp_path / "blacklist.txt"
    blacklist.write_text(f"{shop}/wrong-type\n", encoding="utf-8")
    seeds = f"{shop}/\n{shop}/wrong-type-sitemap.xml\tsitemap=false\n"
    assert cli(settings, "inject", "-", stdin=seeds).exit_code == 0
    result = cli(settings, "--sitemap-blacklist", str(blacklist), "detect", "--host", shop)
    assert result.exit_code == 0, result.output
    assert "blacklisted 1" in result.stderr.splitlines()[-1]
    listed = cli(settings, "readdb", f"{shop}/wrong-type-sitemap.xml", "--json")
    row = json.loads(listed.stdout)
    assert "s:sm" not in row and "line 1" in row["s:bl"]
    assert set(sitemap_rows(settings, shop)) == {shop + "/sitemap_index.xml"}


def test_detect_needs_a_user_agent(settings: Settings, store: Store) -> None:
    result = runner.invoke(app, ["--hbase", settings.hbase, "--table-prefix", settings.table_prefix, "detect"],
                           env={"SITEMAPCRAWL_USER_AGENT": ""})
    assert result.exit_code == 2
    assert "user agent" in result.stderr and "--user-agent" in result.stderr


def test_detect_host_with_a_bare_host_name_checks_every_origin_the_table_knows(
        settings: Settings, store: Store, testweb: TestWebServer) -> None:
    shop = testweb.base_url(SHOP).rstrip("/")
    # Rows of the shop on the test web's port, and on a port where nothing listens.
    seeds = f"{shop}/\nhttp://{SHOP}:9/nothing-here\n"
    assert cli(settings, "inject", "-", stdin=seeds).exit_code == 0
    result = cli(settings, "detect", "--host", SHOP)
    assert result.exit_code == 0, result.output
    assert "detect: hosts 2, " in result.stderr.splitlines()[-1]
    assert host_row(store, shop).robots_status is RobotsStatus.OK
    assert host_row(store, f"http://{SHOP}:9").robots_status is RobotsStatus.ERROR
    # With a port, only that origin; an origin as given is checked as it is.
    one = cli(settings, "detect", "--host", f"{SHOP}:{testweb.port}")
    assert one.exit_code == 0 and "detect: hosts 1, " in one.stderr.splitlines()[-1]
    bad = cli(settings, "detect", "--host", "http://")
    assert bad.exit_code == 2 and "--host" in bad.stderr and bad.stderr.count("\n") == 1


def test_probing_is_off_by_default_as_in_sitemap_tree(settings: Settings, store: Store,
                                                      testweb: TestWebServer) -> None:
    docs = testweb.base_url(DOCS).rstrip("/")
    assert cli(settings, "inject", "-", stdin=f"{docs}/\n").exit_code == 0
    assert cli(settings, "detect", "--host", DOCS).exit_code == 0
    assert sitemap_rows(settings, docs) == {}
    tree = cli(settings, "sitemap", "tree", docs + "/")
    assert tree.exit_code == 1 and "no sitemap could be read" in tree.stderr
    assert cli(settings, "detect", "--host", DOCS, "--probe-known-paths").exit_code == 0
    assert list(sitemap_rows(settings, docs)) == [docs + "/sitemap.xml"]
    tree = cli(settings, "sitemap", "tree", docs + "/", "--probe-known-paths")
    assert tree.exit_code == 0 and tree.stdout.splitlines()[0].startswith(f"{docs}/sitemap.xml  [index, well-known]")
