"""Incremental sitemap quality against the real HBase: after every round, reruns and split updatedb runs,
the scores, states and weighted priorities equal what a full count says; a round reads only the
sitemaps it touched."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from changing_crawl import make_due
from counting_store import CountingStore, DyingStore, Killed

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.crawl import CrawlOptions, crawl
from sitemapcrawl.jobs.fetch import FetchOptions, fetch
from sitemapcrawl.jobs.generate import CrawlMode, GenerateOptions, generate
from sitemapcrawl.jobs.inject import inject
from sitemapcrawl.jobs.parse import parse_batch
from sitemapcrawl.jobs.updatedb import updatedb
from sitemapcrawl.model.cells import decode, encode
from sitemapcrawl.model.linkvalues import InlinkKind, parse_inlink
from sitemapcrawl.model.rank import sitemap_priority
from sitemapcrawl.model.splits import Split, bucket_of
from sitemapcrawl.model.webpage import HOST_TABLE, WEBPAGE_TABLE, HostRow, WebPage
from sitemapcrawl.report.panels import PANELS, panel_data, take_counted_snapshot, take_snapshot
from sitemapcrawl.scoring import count_step
from sitemapcrawl.scoring.evidence import Tally, contribution
from sitemapcrawl.scoring.quality import Pins, assess, sitemap_facts, weighted_priority
from sitemapcrawl.scoring.quality_step import policy_from_settings, score_sitemaps
from sitemapcrawl.storage import dueindex
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import (
    Entry,
    Fault,
    FaultSpec,
    PageRange,
    Robots,
    RobotsGroup,
    Site,
    Sitemap,
    TestWebServer,
    Web,
)
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

A, B = "127.0.0.2", "127.0.0.3"
AGENT = "sitemapcrawl-test/1.0"
QUALITY = ("quality", "quality_state", "quality_valid", "quality_fetch", "quality_lastmod", "quality_duplicates",
           "quality_errors", "quality_freshness", "quality_notes", "blacklisted")


def _day(days_ago: int) -> str:
    return (datetime.now(UTC) - timedelta(days=days_ago)).strftime("%Y-%m-%d")


def versioned_web(version: int) -> Web:
    """Host A: s1 (12 pages, 3 denied by robots.txt; v2 stops listing 4), s2 (6 pages of s1, one lastmod).
    Host B: s3 (10 pages). v2: on A one page gone, one redirected; on B one page 404."""
    kept = 12 if version == 1 else 8
    s1 = tuple(Entry(f"/a/{i}.html", lastmod=_day(2 + i), priority="0.8") for i in range(kept))
    s1 += tuple(Entry(f"/private/{i}.html", lastmod=_day(5), priority="0.3") for i in range(3))
    s2 = tuple(Entry(f"/a/{i}.html", lastmod=_day(9), priority="0.6") for i in range(6))
    s3 = tuple(Entry(f"/c/{i}.html", lastmod=_day(1 + i), priority="0.5") for i in range(10))
    faults_a: tuple[tuple[str, FaultSpec], ...] = ()
    faults_b: tuple[tuple[str, FaultSpec], ...] = ()
    if version == 2:
        faults_a = (("/a/1.html", FaultSpec(Fault.GONE)), ("/a/2.html", FaultSpec(Fault.REDIRECT, target="/a/3.html")))
        faults_b = (("/c/0.html", FaultSpec(Fault.NOT_FOUND)),)
    return Web((
        Site(A, name="a", robots=Robots(groups=(RobotsGroup(("*",), disallow=("/private/",)),)),
             ranges=(PageRange("/a/", 12, links=False), PageRange("/private/", 3, links=False)),
             sitemaps=(Sitemap("/s1.xml", entries=s1), Sitemap("/s2.xml", entries=s2)), faults=faults_a),
        Site(B, name="b", ranges=(PageRange("/c/", 10, links=False),),
             sitemaps=(Sitemap("/s3.xml", entries=s3),), faults=faults_b),
    ), name="incremental")


def sitemaps(server: TestWebServer) -> list[str]:
    return [server.url(A, "/s1.xml"), server.url(A, "/s2.xml"), server.url(B, "/s3.xml")]


def rows(store: Store) -> dict[str, WebPage]:
    out = {}
    for key, cells in store.scan(WEBPAGE_TABLE):
        url = rowkeys.url_from_row_key(key.decode())
        out[url] = decode(WebPage, url, cells)
    return out


def verdicts(table: dict[str, WebPage]) -> tuple[dict[str, tuple[object, ...]], dict[str, float | None]]:
    """What the table says: each sitemap's quality columns, each listed row's weighted priority."""
    scored = {url: tuple(getattr(row, name) for name in QUALITY) for url, row in table.items() if row.is_sitemap}
    weights = {url: sitemap_priority(row) for url, row in table.items()
               if any((link := parse_inlink(t)) is not None and link.kind is InlinkKind.SITEMAP
                      for t in (row.inlinks or {}).values())}
    return scored, weights


def full_count(table: dict[str, WebPage], settings: Settings, now: datetime) -> tuple[
        dict[str, tuple[object, ...]], dict[str, float | None]]:
    """The oracle: the quality formula over every listed row of the table, counted from scratch."""
    policy = policy_from_settings(UrlRules.from_settings(settings))
    tallies: dict[str, tuple[str, Tally]] = {url: ("", Tally()) for url, r in table.items() if r.is_sitemap}
    for row in table.values():
        for source, text in (row.inlinks or {}).items():
            link = parse_inlink(text)
            if link is None or link.kind not in (InlinkKind.SITEMAP, InlinkKind.INDEX) or source not in tallies:
                continue
            batch, stats = tallies[source]
            if link.batch < batch:
                continue
            if link.batch > batch:
                batch, stats = link.batch, Tally()
                tallies[source] = (batch, stats)
            stats.add(contribution(link.lastmod, row.status, row.fetch_time, row.prev_fetch_time,
                                   row.content_changed, now))
    scored: dict[str, tuple[object, ...]] = {}
    weights: dict[str, float] = {}
    for url, (_batch, stats) in tallies.items():
        v = assess(sitemap_facts(table[url]), stats.stats(), policy, Pins(), now)
        weights[url] = v.weight
        s = v.signals
        scored[url] = (v.score, v.state, s.valid, s.fetch, s.lastmod, s.duplicates, s.errors, s.freshness,
                       v.notes, v.reason)
    priorities: dict[str, float | None] = {}
    for url, row in table.items():
        listings = [(link.priority, weights.get(source, 1.0)) for source, text in (row.inlinks or {}).items()
                    if (link := parse_inlink(text)) is not None and link.kind is InlinkKind.SITEMAP]
        if listings:
            priorities[url] = weighted_priority(listings)
    return scored, priorities


def counted_panels_match_a_scan(settings: Settings) -> None:
    """serve's snapshot (counters, no `webpage` row read) shows what a scan of the table shows."""
    now = datetime.now(UTC).replace(microsecond=0)
    with CountingStore(settings) as counting:
        counted = take_counted_snapshot(counting, now)
        assert counting.read(WEBPAGE_TABLE) == 0 and all(call.table != WEBPAGE_TABLE for call in counting.scans)
        scanned = take_snapshot(counting, now)
    for name in PANELS:
        got, want = panel_data(counted, name), panel_data(scanned, name)
        if name == "totals":
            assert got.pop("source") != want.pop("source")
        if name == "freshness":
            assert got.pop("note") and got.pop("due") == [] and got.pop("lastmod_age") == []
            want.pop("due"), want.pop("lastmod_age")
        assert got == want, name


def check(store: Store, settings: Settings) -> dict[str, WebPage]:
    table = rows(store)
    now = datetime.now(UTC).replace(microsecond=0)
    assert verdicts(table) == full_count(table, settings, now)
    counted_panels_match_a_scan(settings)
    return table


def evidence_cells(table: dict[str, WebPage]) -> dict[str, tuple[object, ...]]:
    return {url: (row.quality_evidence, dict(row.quality_evidence_cells or {}), row.quality_contributions)
            for url, row in table.items() if row.quality_evidence or row.quality_contributions}


def round_by_hand(store: Store, settings: Settings, splits: list[Split], update_store: Store | None = None) -> str:
    """generate, fetch, parse, then updatedb once per split (sitemap-only); the batch id."""
    batch = phases_by_hand(store, settings)
    for split in splits:
        updatedb(update_store or store, UrlRules.from_settings(settings), batch, mode=CrawlMode.SITEMAP_ONLY,
                 split=split)
    return batch


def phases_by_hand(store: Store, settings: Settings) -> str:
    """generate, fetch and parse one batch (sitemap-only); its id."""
    rules = UrlRules.from_settings(settings)
    generated = generate(store, rules, GenerateOptions(mode=CrawlMode.SITEMAP_ONLY))
    assert generated.batch_id is not None
    client = PoliteHttpClient.from_settings(settings)
    try:
        fetch(store, client, rules, FetchOptions.from_settings(settings, generated.batch_id, store_content=False))
    finally:
        client.close()
    parse_batch(store, rules, generated.batch_id, mode=CrawlMode.SITEMAP_ONLY)
    return generated.batch_id


def first_crawl(store: Store, settings: Settings, server: TestWebServer) -> None:
    client = PoliteHttpClient.from_settings(settings)
    seeds = [f"{url}\tsitemap=true\n" for url in sitemaps(server)]
    try:
        result = crawl(store, client, UrlRules.from_settings(settings), seeds,
                       CrawlOptions(mode=CrawlMode.SITEMAP_ONLY, rounds=2))
    finally:
        client.close()
    assert [r.fetch.done for r in result.rounds] == [3, 25]  # blocked by robots.txt counts as done
    # Round 1 parsed the sitemaps, every URL new: each sitemap weighs 1 as assumed, so the priorities stay
    # as listed (no s:wp written) and no sitemap's rows were read again. Round 2 fetched them: s1 (3 denied)
    # weighs otherwise.
    first, second = (r.update.quality for r in result.rounds)
    assert first is not None and second is not None
    assert (first.sitemaps, first.reweighed_sitemaps, first.reweighted) == (3, 0, 0)  # 25 listed rows, as listed
    assert second.reweighed_sitemaps >= 1


@pytest.fixture
def fast(settings: Settings) -> Settings:
    return dataclasses.replace(settings, user_agent=AGENT, delay=0.0, max_connections=4)


def test_incremental_quality_equals_a_full_count_over_rounds_reruns_and_splits(
        store: Store, fast: Settings, make_testweb) -> None:  # type: ignore[no-untyped-def]
    assert Split(0, 2).holds(f"{A}:http:1/".encode()) and Split(1, 2).holds(f"{B}:http:1/".encode())
    server = make_testweb(versioned_web(1))
    first_crawl(store, fast, server)
    table = check(store, fast)
    s1, s2, s3 = sitemaps(server)
    assert table[s2].quality_state is not None and table[s2].quality_lastmod == 0.0  # one lastmod for all
    assert table[server.url(A, "/private/0.html")].status.value == "blocked_robots"  # type: ignore[union-attr]

    # Version 2: gone, redirected and 404 pages, s1 stops listing four; everything due again.
    server.change_web(versioned_web(2))
    make_due(store, sitemaps_only=False)
    batch = round_by_hand(store, fast, [Split()])
    table = check(store, fast)
    assert table[server.url(A, "/a/1.html")].status.value == "gone"  # type: ignore[union-attr]
    assert table[server.url(A, "/a/2.html")].status.value == "redirect"  # type: ignore[union-attr]
    assert s1 not in (table[server.url(A, "/a/10.html")].inlinks or {})
    assert table[s1].quality_notes, "s1 should have notes (gone, redirected, denied)"

    # A rerun of updatedb changes no verdict, no counter, no weight.
    before = evidence_cells(table)
    updatedb(store, UrlRules.from_settings(fast), batch, mode=CrawlMode.SITEMAP_ONLY)
    again = check(store, fast)
    assert evidence_cells(again) == before
    assert verdicts(again) == verdicts(table)

    # A round whose updatedb runs as two splits side by side (one host each), then the second again.
    make_due(store, sitemaps_only=False)
    server.set_fault(server.url(B, "/c/1.html"), Fault.GONE)
    batch = phases_by_hand(store, fast)
    rules = UrlRules.from_settings(fast)
    halves = [Split(0, 2), Split(1, 2)]
    with Store(fast) as first, Store(fast) as second, ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda half, on: updatedb(on, rules, batch, mode=CrawlMode.SITEMAP_ONLY, split=half),
                             halves, (first, second)))
    assert all(counts.quality is not None and not counts.quality.full for counts in done)
    updatedb(store, rules, batch, mode=CrawlMode.SITEMAP_ONLY, split=Split(1, 2))
    table = check(store, fast)
    assert table[server.url(B, "/c/1.html")].status.value == "gone"  # type: ignore[union-attr]
    cells = table[s3].quality_evidence_cells or {}
    assert {name.rpartition(".")[2] for name in cells} <= {f"{bucket_of(f'{B}:'.encode()):03d}"}
    assert any(line.startswith("through=") for line in table[s3].quality_evidence or ())

    # A worker killed mid-pass (after its rows' s:qc, before its evidence cells; then after its rows'
    # m:hc, before its count cells), then run again: the same as an uninterrupted run.
    for table_name, prefix in ((WEBPAGE_TABLE, b"s:ev."), (HOST_TABLE, b"n:c.")):
        make_due(store, sitemaps_only=False)
        server.set_fault(server.url(B, "/c/2.html"), Fault.GONE if prefix == b"s:ev." else Fault.NOT_FOUND)
        batch = phases_by_hand(store, fast)
        with DyingStore(fast, table=table_name, column_prefix=prefix) as dying, pytest.raises(Killed):
            updatedb(dying, UrlRules.from_settings(fast), batch, mode=CrawlMode.SITEMAP_ONLY)
        assert dying.died
        updatedb(store, UrlRules.from_settings(fast), batch, mode=CrawlMode.SITEMAP_ONLY)
        table = check(store, fast)

    # The full rescore (the repair) agrees: it writes the same verdicts and no new weight.
    counts = score_sitemaps(store, UrlRules.from_settings(fast), datetime.now(UTC).replace(microsecond=0))
    assert counts.reweighted == 0
    assert verdicts(rows(store)) == verdicts(table)
    # ...and the incremental step goes on from the base it rebuilt.
    make_due(store, sitemaps_only=False)
    round_by_hand(store, fast, [Split()])
    check(store, fast)


def test_a_round_reads_only_the_sitemaps_it_touched(
        store: Store, fast: Settings, make_testweb) -> None:  # type: ignore[no-untyped-def]
    server = make_testweb(versioned_web(1))
    first_crawl(store, fast, server)
    s1, s2, s3 = sitemaps(server)
    # Only host B's pages are due: the round touches s3 and no sitemap of host A.
    pages = [url for url in rows(store) if url.startswith(server.base_url(B)) and "/c/" in url]
    due = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
    dueindex.write_pages(store, [(rowkeys.row_key(url).encode(), encode(WebPage(url, next_fetch=due)))
                                 for url in pages])
    server.set_fault(server.url(B, "/c/4.html"), Fault.GONE)
    with CountingStore(fast) as counting:
        round_by_hand(store, fast, [Split()], update_store=counting)
    # No scan of webpage: every row read is asked for by key (the batch's records, then multi-gets).
    assert counting.whole_table_scans(WEBPAGE_TABLE) == [] and counting.scanned[WEBPAGE_TABLE] == 0
    read = {rowkeys.url_from_row_key(key.decode()) for key in counting.keys_got.get(WEBPAGE_TABLE, [])}
    assert {url for url in read if url in (s1, s2, s3)} == {s3}
    assert not any(url.startswith(server.base_url(A)) for url in read), sorted(read)
    # The batch's 10 pages (read by the passes and the counting steps) and s3, nothing more.
    assert read == set(pages) | {s3}
    table = check(store, fast)
    assert table[server.url(B, "/c/4.html")].status.value == "gone"  # type: ignore[union-attr]


def test_a_table_crawled_before_the_counters_gets_them_from_one_full_count(
        store: Store, fast: Settings, make_testweb) -> None:  # type: ignore[no-untyped-def]
    server = make_testweb(versioned_web(1))
    first_crawl(store, fast, server)
    # As a version without counters left it: not one counter cell, no `~counters` row.
    deletes = []
    for url, row in rows(store).items():
        held = WebPage(url, quality_evidence=row.quality_evidence, quality_contributions=row.quality_contributions,
                       counted=row.counted, quality_evidence_cells=row.quality_evidence_cells)
        deletes.append((rowkeys.row_key(url).encode(), list(encode(held))))
    store.delete_many(WEBPAGE_TABLE, deletes)
    host_deletes: list[tuple[bytes, list[bytes] | None]] = [(count_step.BUILT_KEY, None)]
    for key, cells in store.scan(HOST_TABLE):
        if not key.startswith(b"~"):
            host = decode(HostRow, "", cells)
            host_deletes.append((key, list(encode(HostRow("", counts=host.counts, count_cells=host.count_cells,
                                                          audit_samples=host.audit_samples,
                                                          sitemap_summaries=host.sitemap_summaries)))))
    store.delete_many(HOST_TABLE, host_deletes)
    assert not count_step.counters_built(store)
    server.change_web(versioned_web(2))
    make_due(store, sitemaps_only=False)
    batch = phases_by_hand(store, fast)
    updated = updatedb(store, UrlRules.from_settings(fast), batch, mode=CrawlMode.SITEMAP_ONLY)
    assert updated.quality is not None and updated.quality.full  # the one full count
    assert count_step.counters_built(store)
    check(store, fast)
    make_due(store, sitemaps_only=False)
    again = round_by_hand(store, fast, [Split()])
    assert again
    check(store, fast)


def listed_web(version: int) -> Web:
    """Host A, pages listed and never fetched. v1: s1 lists /p/0-5. v2: /p/0 has another lastmod (another
    month), /p/1 another changefreq, /p/2 is no longer listed, a new s2 lists /p/3 too, /p/4 is unchanged."""
    entries = {i: Entry(f"/p/{i}.html", lastmod=_day(3 + i), changefreq="weekly", priority="0.5") for i in range(6)}
    if version == 2:
        entries[0] = dataclasses.replace(entries[0], lastmod=_day(45))
        entries[1] = dataclasses.replace(entries[1], changefreq="monthly")
        del entries[2]
    second = (Sitemap("/s2.xml", entries=(entries[3],)),) if version == 2 else ()
    return Web((Site(A, name="a", ranges=(PageRange("/p/", 6, links=False),),
                     sitemaps=(Sitemap("/s1.xml", entries=tuple(entries.values())), *second)),), name="listed")


def test_rows_as_first_listed_store_s_fl_for_their_ledgers_and_count_as_a_full_count_later(
        store: Store, fast: Settings, make_testweb) -> None:  # type: ignore[no-untyped-def]
    server = make_testweb(listed_web(1))
    rules = UrlRules.from_settings(fast)
    client = PoliteHttpClient.from_settings(fast)
    try:
        crawl(store, client, rules, [f"{server.url(A, '/s1.xml')}\tsitemap=true\n"],
              CrawlOptions(mode=CrawlMode.SITEMAP_ONLY, rounds=2, documents_only=True))
    finally:
        client.close()
    pages = [server.url(A, f"/p/{i}.html") for i in range(6)]
    raw = {url: store.row(WEBPAGE_TABLE, rowkeys.row_key(url).encode()) or {} for url in pages}
    for url, cells in raw.items():  # listed once, unfetched: s:fl stands for both ledgers
        assert b"s:fl" in cells and b"m:hc" not in cells and b"s:qc" not in cells, (url, sorted(cells))
        batch, _tab, sitemap = cells[b"s:fl"].decode().partition("\t")
        assert sitemap == server.url(A, "/s1.xml") and batch
    table = check(store, fast)
    assert all(table[url].status.value == "unfetched" for url in pages)  # type: ignore[union-attr]

    # v2 re-lists them with other hints, drops one, lists one twice: each judged row writes its ledgers.
    server.change_web(listed_web(2))
    inject(store, [f"{server.url(A, '/s2.xml')}\tsitemap=true\n"], rules)
    make_due(store, sitemaps_only=True)
    batch = phases_by_hand(store, fast)
    # updatedb killed after its rows were written, before its count cells; then run again, rerun, split.
    with DyingStore(fast, table=HOST_TABLE, column_prefix=b"n:c.") as dying, pytest.raises(Killed):
        updatedb(dying, rules, batch, mode=CrawlMode.SITEMAP_ONLY)
    updatedb(store, rules, batch, mode=CrawlMode.SITEMAP_ONLY)
    table = check(store, fast)
    cells = {url: store.row(WEBPAGE_TABLE, rowkeys.row_key(url).encode()) or {} for url in pages}
    assert b"m:hc" in cells[pages[0]] and b"s:qc" in cells[pages[0]]  # another month, another date
    assert b"m:hc" in cells[pages[3]]  # listed twice now
    assert table[pages[3]].sitemaps_listing == 2
    updatedb(store, rules, batch, mode=CrawlMode.SITEMAP_ONLY)
    check(store, fast)
    with Store(fast) as first, Store(fast) as second, ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda half, on: updatedb(on, rules, batch, mode=CrawlMode.SITEMAP_ONLY, split=half),
                      [Split(0, 2), Split(1, 2)], (first, second)))
    check(store, fast)

    # A row first listed in v1 and untouched since (/p/5) becomes a seed: its count moves from sitemap to
    # seed at the next judging; then every page is fetched.
    inject(store, [pages[5] + "\n"], rules)
    make_due(store, sitemaps_only=False)
    round_by_hand(store, fast, [Split()])
    table = check(store, fast)
    assert table[pages[5]].status.value in ("fetched", "not_modified")  # type: ignore[union-attr]
    assert table[pages[5]].seed
    # The full repairs agree with what the increments left.
    count_step.recount(store)
    score_sitemaps(store, rules, datetime.now(UTC).replace(microsecond=0))
    check(store, fast)
