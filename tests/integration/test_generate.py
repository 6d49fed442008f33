"""generate against the real HBase: what is due, caps, modes, marks, fetch splits."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.generate import GenerateOptions, fetch_split_of, generate
from sitemapcrawl.model.cells import column_names, decode, encode
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, FetchStatus, WebPage
from sitemapcrawl.modes import CountMode, CrawlMode
from sitemapcrawl.storage.store import Store
from sitemapcrawl.web import rowkeys, urls
from sitemapcrawl.web.rules import UrlRules

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
PAST = NOW - timedelta(hours=1)


def put(store: Store, *rows: WebPage) -> None:
    store.write(WEBPAGE_TABLE, [(rowkeys.row_key(r.url).encode(), encode(r)) for r in rows])


def page(url: str, **fields: object) -> WebPage:
    base = WebPage(url, status=FetchStatus.UNFETCHED, next_fetch=PAST, score=1.0, depth=2, radius=0)
    return dataclasses.replace(base, **fields)  # type: ignore[arg-type]


def marks(store: Store, url: str) -> WebPage:
    cells = store.row(WEBPAGE_TABLE, rowkeys.row_key(url).encode(),
                      columns=column_names(WebPage, ["generate_mark", "batch_id", "fetch_split", "blacklisted"]))
    return decode(WebPage, url, cells or {})


def test_due_rows_are_stamped_once_with_batch_and_partition(store: Store, settings: Settings) -> None:
    due = [f"http://127.0.0.{h}:8000/{i}.html" for h in (2, 3, 4) for i in range(4)]
    put(store, *(page(u) for u in due))
    put(store, page("http://127.0.0.2:8000/later.html", next_fetch=NOW + timedelta(days=1)),
        WebPage("http://127.0.0.2:8000/no-schedule.html", status=FetchStatus.UNFETCHED))
    rules = UrlRules.from_settings(settings)

    counts = generate(store, rules, GenerateOptions(fetch_splits=2), clock=lambda: NOW)

    assert counts.batch_id and counts.selected == 12 and counts.due == 12
    assert sum(counts.by_fetch_split.values()) == 12
    assert counts.by_host == {"127.0.0.2": 4, "127.0.0.3": 4, "127.0.0.4": 4}
    for url in due:
        row = marks(store, url)
        assert row.generate_mark == counts.batch_id == row.batch_id
        assert row.fetch_split == fetch_split_of(urls.host_key(url), 2)
    assert marks(store, "http://127.0.0.2:8000/later.html").generate_mark is None
    assert marks(store, "http://127.0.0.2:8000/no-schedule.html").generate_mark is None

    again = generate(store, rules, GenerateOptions(fetch_splits=2), clock=lambda: NOW)
    assert again.batch_id is None and again.selected == 0
    assert again.skipped == {"in an unfinished batch": 12}


def test_caps_modes_constraints_and_blacklist(store: Store, settings: Settings, tmp_path: Path) -> None:
    blacklist = tmp_path / "blacklist.txt"
    blacklist.write_text("re:/old-sitemap\\.xml$\n", encoding="utf-8")
    settings = dataclasses.replace(settings, sitemap_blacklist=blacklist)
    shop = [page(f"http://127.0.0.2:8000/p{i}.html", priority=0.1 * i) for i in range(6)]
    put(store, *shop,
        page("http://127.0.0.3:8000/a.html", score=5.0),
        page("http://127.0.0.3:8000/deep.html", depth=-1),
        page("http://127.0.0.3:8000/sitemap.xml", is_sitemap=True),
        page("http://127.0.0.3:8000/old-sitemap.xml", is_sitemap=True),
        page("http://127.0.0.3:8000/listed.html", in_sitemap=True))
    rules = UrlRules.from_settings(settings)

    links = generate(store, rules, GenerateOptions(max_per_host=2, mode=CrawlMode.LINKS_ONLY,
                                                   batch_id="links-1"), clock=lambda: NOW)
    chosen = {u for u in [r.url for r in shop] if marks(store, u).generate_mark == "links-1"}
    # the two best shop pages by priority, plus 127.0.0.3's best two pages
    assert chosen == {"http://127.0.0.2:8000/p5.html", "http://127.0.0.2:8000/p4.html"}
    assert marks(store, "http://127.0.0.3:8000/a.html").generate_mark == "links-1"
    assert marks(store, "http://127.0.0.3:8000/listed.html").generate_mark == "links-1"
    assert links.skipped["not in links-only mode"] == 2
    assert links.skipped["past depth/radius"] == 1
    assert links.skipped["over max per host"] == 4
    assert links.selected == 4

    # no topN: generate meets every due sitemap, so it blacklists the old one (it reads in rank order and
    # stops at topN, so a blacklisted sitemap ranked below the batch is blacklisted by a later round)
    sitemaps = generate(store, rules, GenerateOptions(mode=CrawlMode.SITEMAP_ONLY, batch_id="sm-1"), clock=lambda: NOW)
    assert sitemaps.selected == 1
    assert marks(store, "http://127.0.0.3:8000/sitemap.xml").generate_mark == "sm-1"
    old = marks(store, "http://127.0.0.3:8000/old-sitemap.xml")
    assert old.generate_mark is None and old.blacklisted and "old-sitemap" in old.blacklisted
    assert sitemaps.newly_blacklisted == 1


def test_top_n_spreads_over_hosts_and_domain_counting(store: Store, settings: Settings) -> None:
    put(store, *(page(f"http://127.0.0.{h}:8000/{i}.html") for h in range(2, 6) for i in range(10)))
    rules = UrlRules.from_settings(settings)
    counts = generate(store, rules, GenerateOptions(top_n=8, batch_id="b1"), clock=lambda: NOW)
    assert counts.selected == 8
    assert len(counts.by_host) > 1  # equal scores: the jitter interleaves hosts
    counts = generate(store, rules, GenerateOptions(max_per_host=3, count_mode=CountMode.DOMAIN,
                                                    batch_id="b2"), clock=lambda: NOW)
    # every IP is its own registered domain: 3 of the 10 left on each of 4 hosts at most
    assert all(n <= 3 for n in counts.by_host.values()) and counts.selected > 0


def test_rows_rescheduled_by_their_fetch_are_free_again(store: Store, settings: Settings) -> None:
    url = "http://127.0.0.2:8000/retry.html"
    put(store, page(url, status=FetchStatus.RETRY, generate_mark="old", fetch_mark="old",
                    fetch_time=NOW - timedelta(hours=3), next_fetch=NOW - timedelta(hours=2)),
        page("http://127.0.0.2:8000/fetched.html", status=FetchStatus.FETCHED, generate_mark="old",
             fetch_mark="old", fetch_time=NOW - timedelta(hours=3), next_fetch=NOW - timedelta(days=3)),
        page("http://127.0.0.2:8000/merged.html", generate_mark="old", update_mark="old"))
    counts = generate(store, UrlRules.from_settings(settings), GenerateOptions(batch_id="new"), clock=lambda: NOW)
    assert counts.selected == 2
    assert marks(store, url).generate_mark == "new"
    assert marks(store, "http://127.0.0.2:8000/merged.html").generate_mark == "new"
    assert marks(store, "http://127.0.0.2:8000/fetched.html").generate_mark == "old"
