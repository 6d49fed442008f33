"""Sitemap-only mode reads what has work (issue 45's crawl measure): parse and updatedb's spread pass read a
batch's sitemaps and the rows whose fetch redirected, never the pages, which that mode neither parses nor
spreads; the pages are still counted, a redirect is still followed (its target, fetched in the batch as a
hop, gets its redirect inlink), and a batch recorded before members said so is read whole as it was.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from counting_store import CountingStore

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.fetch import FetchOptions, fetch
from sitemapcrawl.jobs.generate import GenerateOptions, generate
from sitemapcrawl.jobs.inject import inject
from sitemapcrawl.jobs.parse import parse_batch
from sitemapcrawl.jobs.updatedb import updatedb
from sitemapcrawl.model.cells import column_names
from sitemapcrawl.model.linkvalues import InlinkKind, parse_inlink
from sitemapcrawl.model.webpage import BATCHROW_TABLE, WEBPAGE_TABLE, BatchRecord, FetchStatus
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, read_page
from sitemapcrawl.testweb import Entry, Fault, FaultSpec, Page, Robots, Site, Sitemap, TestWebServer, Web
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

HOST = "127.0.45.70"
PAGES = ("/a.html", "/b.html", "/c.html", "/moved.html")
SITE = Site(HOST, "reads", pages=(*(Page(path) for path in PAGES if path != "/moved.html"), Page("/new.html")),
            robots=Robots(sitemaps=("/sitemap.xml",)),
            sitemaps=(Sitemap("/sitemap.xml", entries=tuple(Entry(path) for path in PAGES)),),
            faults=(("/moved.html", FaultSpec(Fault.REDIRECT, target="/new.html")),))


def _round(store: Store, settings: Settings, client: PoliteHttpClient) -> tuple[str, CountingStore]:
    """Generate and fetch a sitemap-only batch; return it and a counting store for the phases after."""
    rules = UrlRules.from_settings(settings)
    batch = generate(store, rules, GenerateOptions(mode=CrawlMode.SITEMAP_ONLY)).batch_id
    assert batch is not None
    fetch(store, client, rules, FetchOptions(batch_id=batch))
    return batch, CountingStore(settings)


def _pages_fetched(store: Store, settings: Settings,
                   make_testweb: Callable[[Web], TestWebServer]) -> tuple[TestWebServer, UrlRules, str, CountingStore]:
    """The site's sitemap injected, fetched, parsed and merged, then its pages fetched: (the server, the rules,
    the pages' batch, a counting store for its parse and updatedb)."""
    server = make_testweb(Web((SITE,), "reads"))
    settings = dataclasses.replace(settings, user_agent="ReadsBot/1.0", delay=0.0, crawl_mode=CrawlMode.SITEMAP_ONLY)
    rules = UrlRules.from_settings(settings)
    client = PoliteHttpClient.from_settings(settings)
    try:
        inject(store, [server.url(HOST, "/sitemap.xml") + "\tsitemap=true"], rules)
        batch, _ = _round(store, settings, client)
        assert parse_batch(store, rules, batch, mode=CrawlMode.SITEMAP_ONLY).entries == len(PAGES)
        updatedb(store, rules, batch, mode=CrawlMode.SITEMAP_ONLY)
        batch, counting = _round(store, settings, client)  # the four pages, one of them redirecting
    finally:
        client.close()
    return server, rules, batch, counting


def test_pages_are_neither_read_by_parse_nor_by_spread_but_a_redirect_is_followed(
        store: Store, settings: Settings, make_testweb: Callable[[Web], TestWebServer]) -> None:
    server, rules, batch, counting = _pages_fetched(store, settings, make_testweb)
    moved, new = (rowkeys.row_key(server.url(HOST, path)).encode() for path in ("/moved.html", "/new.html"))
    with counting:
        parsed = parse_batch(counting, rules, batch, mode=CrawlMode.SITEMAP_ONLY)
        # The four pages and the redirect's target, fetched in the batch (a member too).
        assert parsed.rows == 1 and parsed.not_parsed == {"page (sitemap-only mode)": len(PAGES) + 1}
        assert counting.keys_got[WEBPAGE_TABLE] == [moved]  # the redirect alone was read
        counting.reset()
        updated = updatedb(counting, rules, batch, mode=CrawlMode.SITEMAP_ONLY)
        assert updated.redirects == 1 and updated.scheduled == len(PAGES) + 1
    target = read_page(store, new, ["inlinks", "status"], "test", Unreadable())
    assert target is not None and target.status is FetchStatus.FETCHED
    links = [parse_inlink(text) for text in (target.inlinks or {}).values()]
    assert [link.kind for link in links if link is not None] == [InlinkKind.REDIRECT]


def test_a_batch_recorded_before_members_said_what_has_work_is_read_whole(
        store: Store, settings: Settings, make_testweb: Callable[[Web], TestWebServer]) -> None:
    _, rules, batch, counting = _pages_fetched(store, settings, make_testweb)
    # As an older version recorded members: no `r:w` cell.
    records = [key for key, _ in store.scan(BATCHROW_TABLE, prefix=batch.encode() + b"|m|")]
    assert len(records) == len(PAGES) + 1  # with the redirect's target
    store.delete_many(BATCHROW_TABLE, [(key, column_names(BatchRecord, ["work"])) for key in records])
    with counting:
        parsed = parse_batch(counting, rules, batch, mode=CrawlMode.SITEMAP_ONLY)
        assert parsed.rows == len(records) and parsed.not_parsed == {"page (sitemap-only mode)": len(records)}
        assert counting.got[WEBPAGE_TABLE] == len(records)
