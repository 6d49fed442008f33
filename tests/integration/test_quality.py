"""Sitemap quality on the loopback web: a clean sitemap, one full of 404s, one with fake lastmods,
one over the limits, crawled for real; then the ranking generate makes of them, and the pins."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

import pytest
from quality_web import crawl_quality_web, quality_settings, quality_web, sitemap_urls

from sitemapcrawl.config import Settings
from sitemapcrawl.errors import UsageError
from sitemapcrawl.jobs.generate import GenerateOptions, generate
from sitemapcrawl.model.cells import decode, encode
from sitemapcrawl.model.linkvalues import parse_inlink
from sitemapcrawl.model.rank import rank, sitemap_priority
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, FetchStatus, QualityState, WebPage
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.report.text import build_report
from sitemapcrawl.scoring.quality import is_quality_reason
from sitemapcrawl.scoring.quality_step import score_sitemaps
from sitemapcrawl.storage import dueindex
from sitemapcrawl.storage.store import Store
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.rules import UrlRules


def table(store: Store) -> dict[str, tuple[bytes, WebPage]]:
    rows = {}
    for key, cells in store.scan(WEBPAGE_TABLE):
        url = rowkeys.url_from_row_key(key.decode())
        rows[url] = (key, decode(WebPage, url, cells))
    return rows


def listed_by(rows: dict[str, tuple[bytes, WebPage]], sitemap: str) -> dict[str, tuple[bytes, WebPage]]:
    return {url: kr for url, kr in rows.items() if sitemap in (kr[1].inlinks or {})}


def test_the_ranking_orders_the_sitemaps_as_a_person_would_and_the_worst_is_blacklisted(
        store: Store, settings: Settings, make_testweb) -> None:  # type: ignore[no-untyped-def]
    server = make_testweb(quality_web())
    settings = quality_settings(settings)
    result = crawl_quality_web(store, settings, server)
    assert [r.fetch.done for r in result.rounds] == [4, 50]  # four sitemaps, then every kept entry (10 + 10 + 10 + 20)
    sm = sitemap_urls(server)
    rows = table(store)
    sitemap = {name: rows[url][1] for name, url in sm.items()}

    scores = {name: row.quality for name, row in sitemap.items()}
    assert None not in scores.values(), scores
    assert scores["clean"] == 1.0
    assert scores["clean"] > scores["big"] > scores["fake"] > scores["broken"], scores
    assert {name: row.quality_state for name, row in sitemap.items()} == {
        "clean": QualityState.OK, "big": QualityState.DEMOTED, "fake": QualityState.DEMOTED,
        "broken": QualityState.BLACKLISTED}
    # Each verdict says why, signal by signal.
    assert sitemap["broken"].quality_fetch is not None and sitemap["broken"].quality_fetch < 0.2
    assert sitemap["broken"].blacklisted and is_quality_reason(sitemap["broken"].blacklisted)
    assert "10 of 10 fetched entries failed (gone 10" in sitemap["broken"].blacklisted
    assert sitemap["fake"].quality_lastmod == 0.0 and sitemap["fake"].quality_fetch == 1.0
    assert any("share one lastmod" in note for note in sitemap["fake"].quality_notes or ())
    assert sitemap["big"].quality_errors == 0.5 and sitemap["big"].dropped_limit == 10
    assert sitemap["clean"].quality_notes == () or sitemap["clean"].quality_notes is None
    for name in ("clean", "big", "fake"):
        assert sitemap[name].blacklisted is None, name

    # `report --jsonl` carries what the HTML report shows per sitemap: score, state, six signals, notes.
    lines = [json.loads(line) for line in build_report(store).json_lines()]
    reported = {line["url"]: line for line in lines if line["kind"] == "sitemap"}
    for name, url in sm.items():
        line, row = reported[url], sitemap[name]
        assert line["quality"] == row.quality and line["state"] == row.quality_state.value, name
        assert line["signals"] == {"valid": row.quality_valid, "fetch": row.quality_fetch,
                                   "lastmod": row.quality_lastmod, "duplicates": row.quality_duplicates,
                                   "errors": row.quality_errors, "freshness": row.quality_freshness}, name
        assert line["notes"] == list(row.quality_notes or ()), name
    assert reported[sm["broken"]]["state"] == "blacklisted" and reported[sm["broken"]]["signals"]["fetch"] < 0.2
    assert any("share one lastmod" in note for note in reported[sm["fake"]]["notes"])

    # Pages: the sitemap priority (0.8 everywhere) weighted by quality; the link score untouched.
    weighted = {}
    for name, url in sm.items():
        pages = listed_by(rows, url)
        assert pages, name
        values = {sitemap_priority(page) for _, page in pages.values()}
        assert len(values) == 1, (name, values)
        weighted[name] = values.pop()
        assert all(page.priority == 0.8 and page.score == 0.0 for _, page in pages.values()), name
    assert weighted["clean"] == 0.8 > weighted["big"] > weighted["fake"] > weighted["broken"] == 0.0
    # A weight of 1 leaves the priority as it is: no `s:wp` is stored for it; every other weight is.
    assert all(page.weighted_priority is None for _, page in listed_by(rows, sm["clean"]).values())
    assert all(page.weighted_priority is not None for _, page in listed_by(rows, sm["fake"]).values())
    best = {name: max(rank(page, key) for key, page in listed_by(rows, url).values()) for name, url in sm.items()}
    worst = {name: min(rank(page, key) for key, page in listed_by(rows, url).values()) for name, url in sm.items()}
    assert worst["clean"] > best["big"] and worst["big"] > best["fake"] and worst["fake"] > best["broken"]

    # generate's fetch list, every page due again: the clean sitemap's pages first.
    rules = UrlRules.from_settings(settings)
    now = datetime.now(UTC).replace(microsecond=0)
    pages = [(key, page) for url, (key, page) in rows.items() if page.in_sitemap]
    dueindex.write_pages(store, [(key, encode(WebPage(page.url, next_fetch=now))) for key, page in pages])
    counts = generate(store, rules, GenerateOptions(top_n=10, mode=CrawlMode.SITEMAP_ONLY), clock=lambda: now)
    chosen = {url for url, (_, page) in table(store).items() if page.generate_mark == counts.batch_id}
    assert chosen == set(listed_by(rows, sm["clean"]))

    # The blacklisted sitemap is not generated again.
    assert rows[sm["broken"]][1].status is FetchStatus.FETCHED
    dueindex.write_pages(store, [(rows[sm["broken"]][0], encode(WebPage(sm["broken"], next_fetch=now)))])
    again = generate(store, rules, GenerateOptions(mode=CrawlMode.SITEMAP_ONLY, batch_id="again"), clock=lambda: now)
    assert again.skipped["blacklisted sitemap"] >= 1
    assert table(store)[sm["broken"]][1].generate_mark != "again"


def test_pins_win_and_a_quality_blacklisting_is_undone(store: Store, settings: Settings,
                                                        make_testweb) -> None:  # type: ignore[no-untyped-def]
    server = make_testweb(quality_web())
    settings = quality_settings(settings)
    crawl_quality_web(store, settings, server)
    sm = sitemap_urls(server)
    assert table(store)[sm["broken"]][1].quality_state is QualityState.BLACKLISTED

    pinned = dataclasses.replace(settings, sitemap_trusted=(sm["broken"],), sitemap_blocked=(sm["clean"],))
    now = datetime.now(UTC).replace(microsecond=0)
    counts = score_sitemaps(store, UrlRules.from_settings(pinned), now)
    assert counts.by_state == {"trusted": 1, "blocked": 1, "demoted": 2} and counts.cleared == 1
    rows = table(store)
    broken, clean = rows[sm["broken"]][1], rows[sm["clean"]][1]
    assert broken.quality_state is QualityState.TRUSTED and broken.blacklisted is None
    assert broken.quality is not None and broken.quality < 0.2  # the score still shows the truth
    assert clean.quality_state is QualityState.BLOCKED and clean.blacklisted is not None
    assert "pinned" in clean.blacklisted
    for _, page in listed_by(rows, sm["broken"]).values():
        assert page.weighted_priority == 0.8
    for _, page in listed_by(rows, sm["clean"]).values():
        assert page.weighted_priority == 0.0

    # Without the pins the verdicts come back; a rerun with nothing new writes no priority.
    score_sitemaps(store, UrlRules.from_settings(settings), now)
    rerun = score_sitemaps(store, UrlRules.from_settings(settings), now)
    assert rerun.reweighted == 0 and rerun.by_state == {"ok": 1, "demoted": 2, "blacklisted": 1}
    assert table(store)[sm["clean"]][1].blacklisted is None


def test_a_blacklist_file_reason_is_never_cleared(store: Store, settings: Settings) -> None:
    url = "http://file.test/sitemap.xml"
    key = rowkeys.row_key(url).encode()
    dueindex.write_pages(store, [(key, encode(WebPage(url, is_sitemap=True, blacklisted="host file.test")))])
    trusting = dataclasses.replace(settings, sitemap_trusted=(url,))
    score_sitemaps(store, UrlRules.from_settings(trusting), datetime.now(UTC))
    row = table(store)[url][1]
    assert row.blacklisted == "host file.test" and row.quality_state is QualityState.BLACKLISTED


def test_only_the_latest_parse_of_a_sitemap_counts(store: Store, settings: Settings) -> None:
    sitemap = "http://late.test/sitemap.xml"
    now = datetime.now(UTC).replace(microsecond=0)
    old = "sitemap pr=0.5 dp=0 ra=0 b=20250101000000-aaaa"
    new = "sitemap pr=0.5 dp=0 ra=0 b=20250201000000-bbbb"
    rows = [WebPage(sitemap, is_sitemap=True, sitemap_type="urlset", sitemap_entries=2, parse_time=now)]
    rows += [WebPage(f"http://late.test/gone{i}", in_sitemap=True, status=FetchStatus.GONE, fetch_time=now,
                     inlinks={sitemap: old}) for i in range(6)]
    rows += [WebPage(f"http://late.test/ok{i}", in_sitemap=True, status=FetchStatus.FETCHED, fetch_time=now,
                     inlinks={sitemap: new}) for i in range(2)]
    assert all(parse_inlink(text) for row in rows for text in (row.inlinks or {}).values())
    dueindex.write_pages(store, [(rowkeys.row_key(r.url).encode(), encode(r)) for r in rows])
    counts = score_sitemaps(store, UrlRules.from_settings(settings), now)
    assert counts.listed_rows == 9  # the sitemap row itself is read too (it may be an index's child)
    row = table(store)[sitemap][1]
    assert row.quality == 1.0 and row.quality_duplicates == 1.0 and row.quality_state is QualityState.OK


def test_bad_thresholds_and_pins_are_usage_errors(store: Store, settings: Settings) -> None:
    now = datetime.now(UTC)
    swapped = dataclasses.replace(settings, sitemap_demote_below=0.1, sitemap_blacklist_below=0.5)
    with pytest.raises(UsageError, match="sitemap_blacklist_below"):
        score_sitemaps(store, UrlRules.from_settings(swapped), now)
    bad_pin = dataclasses.replace(settings, sitemap_trusted=("not a url",))
    with pytest.raises(UsageError, match="sitemap_trusted"):
        score_sitemaps(store, UrlRules.from_settings(bad_pin), now)


def test_a_change_the_sitemaps_lastmod_does_not_show_makes_it_less_trusted(
        store: Store, settings: Settings, make_testweb) -> None:  # type: ignore[no-untyped-def]
    server = make_testweb(quality_web())
    settings = quality_settings(settings)
    crawl_quality_web(store, settings, server)
    sm = sitemap_urls(server)
    assert table(store)[sm["clean"]][1].quality == 1.0
    # The clean sitemap's pages change; the sitemap still says they last changed days ago.
    pages = listed_by(table(store), sm["clean"])
    now = datetime.now(UTC).replace(microsecond=0)
    for url in pages:
        server.touch(url)
    dueindex.write_pages(store, [(key, encode(WebPage(url, next_fetch=now))) for url, (key, _) in pages.items()])

    again = crawl_quality_web(store, settings, server, rounds=1)
    assert again.rounds[0].fetch.done == len(pages) == 10
    rows = table(store)
    for url in pages:
        page = rows[url][1]
        assert page.content_changed == page.fetch_time and page.prev_fetch_time is not None, url
    clean = rows[sm["clean"]][1]
    assert clean.quality_lastmod is not None and clean.quality_lastmod < 0.2
    assert any("older than a change 10" in note for note in clean.quality_notes or ())
    assert clean.quality_state is QualityState.DEMOTED and clean.blacklisted is None
