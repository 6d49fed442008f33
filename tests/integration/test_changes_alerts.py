"""Alerts for CI (issue 46): `changes --fail-on-removed 30` exits 0 after an unchanged recrawl and 1, naming the
sitemap, after it shrank from 10 to 4 entries; `--fail-on-error` exits 1 once a sitemap that parsed before fails."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from changing_crawl import make_due
from cli_helpers import cli

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.crawl import CrawlOptions, crawl
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import Entry, Fault, Robots, Site, Sitemap, TestWebServer, Web
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

HOST = "127.0.46.20"


def site(entries: int) -> Web:
    listed = tuple(Entry(f"/p/{n}.html") for n in range(entries))
    return Web((Site(HOST, "alerts", robots=Robots(sitemaps=("/sitemap.xml",)),
                     sitemaps=(Sitemap("/sitemap.xml", entries=listed),)),), "alerts")


def recrawl(store: Store, settings: Settings, server: TestWebServer, first: bool = False) -> None:
    if not first:
        make_due(store, sitemaps_only=True)
    client = PoliteHttpClient.from_settings(settings)
    try:
        crawl(store, client, UrlRules.from_settings(settings), [server.base_url(HOST) + "\n"] if first else [],
              CrawlOptions(mode=CrawlMode.SITEMAP_ONLY, rounds=2 if first else 1, documents_only=True))
    finally:
        client.close()


def test_fail_on_removed_and_fail_on_error_for_a_nightly_job(
        store: Store, settings: Settings, make_testweb: Callable[[Web], TestWebServer]) -> None:
    settings = dataclasses.replace(settings, user_agent="sitemapcrawl-test/1.0", delay=0.0)
    server = make_testweb(site(10))
    sitemap = server.url(HOST, "/sitemap.xml")
    recrawl(store, settings, server, first=True)
    server.touch(sitemap)  # a new revision, the same 10 entries: read and compared again
    recrawl(store, settings, server)
    unchanged = cli(settings, "changes", "--fail-on-removed", "30", "--fail-on-error")
    assert unchanged.exit_code == 0, unchanged.output
    assert "alert" not in unchanged.stderr and "(2 parses, 1 first)" in unchanged.stdout

    server.change_web(site(4))
    recrawl(store, settings, server)
    shrunk = cli(settings, "changes", "--fail-on-removed", "30")
    assert shrunk.exit_code == 1, shrunk.output
    assert f"changes: alert: {sitemap}: lost 60% of its entries (10 -> 4)" in shrunk.stderr
    assert shrunk.stderr.strip().splitlines()[-1] == (
        f"sitemapcrawl: error: changes: {sitemap}: lost 60% of its entries (10 -> 4)")
    assert cli(settings, "changes", "--fail-on-removed", "60").exit_code == 0  # 60% is not more than 60
    assert cli(settings, "changes", "--fail-on-error").exit_code == 0  # it shrank, it did not fail

    server.set_fault(sitemap, Fault.SERVER_ERROR)
    recrawl(store, settings, server)
    failing = cli(settings, "changes", "--fail-on-error")
    assert failing.exit_code == 1, failing.output
    assert f"changes: alert: {sitemap}: fetch retry (HTTP 500): HTTP 500" in failing.stderr
    assert "Traceback" not in failing.output
