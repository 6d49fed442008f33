"""`crawl --sitemaps-only-docs`: an inventory that fetches sitemap documents alone."""

from __future__ import annotations

from typer.testing import CliRunner

from sitemapcrawl.cli.app import app
from sitemapcrawl.config import Settings
from sitemapcrawl.model.cells import decode
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, FetchStatus, WebPage
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer, demo_web
from sitemapcrawl.web import rowkeys, urls

runner = CliRunner()


def test_inventory_records_every_listed_url_and_fetches_only_sitemaps(
        settings: Settings, store: Store, make_testweb) -> None:  # type: ignore[no-untyped-def]
    web: TestWebServer = make_testweb(demo_web())
    truth = web.truth
    seeds = "".join(url + "\n" for url in truth.seeds())
    result = runner.invoke(app, [
        "--hbase", settings.hbase, "--table-prefix", settings.table_prefix, "--user-agent", "inventory-test/1.0",
        "crawl", "-", "--sitemaps-only-docs", "--delay", "0", "--rounds", "5"], input=seeds)
    assert result.exit_code == 0, result.output

    rows = {}
    for key, cells in store.scan(WEBPAGE_TABLE):
        url = rowkeys.url_from_row_key(key.decode())
        rows[url] = decode(WebPage, url, cells)
    sitemaps = {urls.canonicalize(u) for u in truth.discoverable_sitemaps()}
    listed = {urls.canonicalize(u) for u in truth.sitemap_listed(in_scope_only=True)}
    assert listed - set(rows) == set()  # every listed URL has a row...
    for url in listed:
        row = rows[url]
        assert row.in_sitemap and row.status is FetchStatus.UNFETCHED, url  # ...never fetched
    for url in sitemaps:
        assert rows[url].status is FetchStatus.FETCHED, url
    fetched = {urls.canonicalize(u) for u in web.log.urls()}
    assert fetched - sitemaps == {urls.canonicalize(b + "robots.txt") for b in web.base_urls()}


def test_inventory_needs_sitemap_only_mode(settings: Settings, store: Store) -> None:
    result = runner.invoke(app, [
        "--hbase", settings.hbase, "--table-prefix", settings.table_prefix, "--user-agent", "x/1",
        "crawl", "--sitemaps-only-docs", "--mode", "mixed"])
    assert result.exit_code == 2 and "--sitemaps-only-docs goes with --mode sitemap-only" in result.stderr
