"""Sitemap change tracking: two crawls of a site whose sitemaps changed in between."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from changing_crawl import HOST, crawl_settings, make_due, normalized, run_crawl
from cli_helpers import cli

from sitemapcrawl.config import Settings
from sitemapcrawl.model.audit import listing_count
from sitemapcrawl.model.cells import decode
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, FetchStatus, WebPage
from sitemapcrawl.storage.history import histories
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import changing_web
from sitemapcrawl.web import rowkeys


def row(store: Store, url: str) -> WebPage:
    cells = store.row(WEBPAGE_TABLE, rowkeys.row_key(url).encode())
    assert cells, url
    return decode(WebPage, url, cells)


def test_two_crawls_record_exactly_the_changes_and_new_urls_go_first(
        store: Store, settings: Settings, make_testweb) -> None:  # type: ignore[no-untyped-def]
    settings = crawl_settings(settings)
    server = make_testweb(changing_web(1))
    run_crawl(store, settings, server)
    before = server.truth
    first = cli(settings, "changes", "--jsonl")
    assert first.exit_code == 0, first.output
    assert first.stdout == ""  # first parses are baselines: nothing to compare with

    server.change_web(changing_web(2))
    expected = {normalized(c) for c in server.truth.sitemap_changes(before)}
    assert len(expected) == 9
    assert make_due(store, sitemaps_only=True) == 4
    started = datetime.now(UTC).replace(microsecond=0)
    run_crawl(store, settings, server, rounds=1)  # re-reads the sitemaps, nothing else is due

    done = cli(settings, "changes", "--jsonl")
    assert done.exit_code == 0, done.output
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert {(r["sitemap"], r["url"], r["change"], r["old"], r["new"]) for r in records} == expected
    assert len(records) == len(expected)
    assert all(r["at"] >= started.strftime("%Y-%m-%dT%H:%M:%SZ") for r in records)
    assert "9 changes from 7 parses of 4 sitemaps" in done.stderr  # old.xml answered 304: one parse

    # Narrowed by sitemap, by host and by time; text grouped with counts first.
    news = server.url(HOST, "/sitemap-news.xml")
    text = cli(settings, "changes", "--sitemap", news)
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert lines[0] == f"{news}: 2 added, 1 removed, 1 lastmod, 0 changefreq, 1 priority (2 parses, 1 first)"
    assert any("lastmod" in line and "2024-05-02T10:00:00Z -> 2024-06-15T10:00:00Z" in line for line in lines)
    assert len(lines) == 6
    assert cli(settings, "changes", "--host", "127.0.0.9", "--jsonl").stdout == ""
    assert len(cli(settings, "changes", "--host", HOST, "--jsonl").stdout.splitlines()) == 9
    assert cli(settings, "changes", "--since", "2999-01-01", "--jsonl").stdout == ""
    bad = cli(settings, "changes", "--since", "yesterday")
    assert bad.exit_code == 2 and "--since" in bad.stderr and "Traceback" not in bad.output

    # Membership: a removed URL loses the sitemap's cell; one no sitemap lists is no longer "in sitemaps".
    retired = row(store, server.url(HOST, "/retired.html"))
    pages = server.url(HOST, "/sitemap-pages.xml")
    assert retired.in_sitemap is False and listing_count(retired) == 0
    assert pages not in (retired.inlinks or {})
    news1 = row(store, server.url(HOST, "/news/1.html"))
    assert news1.in_sitemap is True and listing_count(news1) == 1
    assert news not in (news1.inlinks or {}) and pages in (news1.inlinks or {})
    assert row(store, server.url(HOST, "/sitemap-old.xml")).inlinks in (None, {})
    assert row(store, news).sitemap_entries == 4
    history = {h.sitemap: h for h in histories(store)}
    assert [p.entries for p in history[news].parses] == [3, 4]
    assert [p.entries for p in history[pages].parses] == [11, 10]
    assert history[news].parses[0].statuses  # the quality step wrote the listed URLs' statuses

    # The boost: with every row due and room for two URLs, the two new articles go first.
    new = {server.url(HOST, "/news/4.html"), server.url(HOST, "/news/5.html")}
    assert all(row(store, u).new_in_sitemap and row(store, u).status is FetchStatus.UNFETCHED for u in new)
    assert make_due(store, sitemaps_only=False) > 10
    server.log.clear()
    result = run_crawl(store, settings, server, rounds=1, top_n=2)
    assert result.rounds[0].generate.selected == 2
    assert set(server.log.urls()) - {server.url(HOST, "/robots.txt")} == new
    assert all(row(store, u).status is FetchStatus.FETCHED for u in new)
