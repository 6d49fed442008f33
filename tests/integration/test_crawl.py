"""Whole crawls of the loopback demo web in each mode, compared with the web's own truth."""

from __future__ import annotations

import dataclasses
import json
from collections import deque
from datetime import timedelta
from pathlib import Path

from typer.testing import CliRunner

from sitemapcrawl.cli.app import app
from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.crawl import CrawlOptions, CrawlResult, crawl
from sitemapcrawl.model.cells import decode, encode
from sitemapcrawl.model.schedule import CHANGEFREQ_SECONDS
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, FetchStatus, WebPage
from sitemapcrawl.modes import CrawlMode
from sitemapcrawl.report.text import build_report, sitemap_outcomes
from sitemapcrawl.storage import dueindex
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer, demo_web
from sitemapcrawl.testweb.truth import Truth
from sitemapcrawl.web import rowkeys, urls
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

AGENT = "sitemapcrawl-test/1.0"
TOKEN = "sitemapcrawl-test"


WEB = demo_web()  # served by the shared `web` fixture


def crawl_settings(settings: Settings, **changes: object) -> Settings:
    return dataclasses.replace(settings, user_agent=AGENT, delay=0.0, max_connections=4, **changes)  # type: ignore[arg-type]


def run(store: Store, settings: Settings, seeds: list[str], mode: CrawlMode, rounds: int = 6) -> CrawlResult:
    client = PoliteHttpClient.from_settings(settings)
    try:
        return crawl(store, client, UrlRules.from_settings(settings), [s + "\n" for s in seeds],
                     CrawlOptions(mode=mode, rounds=rounds))
    finally:
        client.close()


def table(store: Store) -> dict[str, WebPage]:
    rows = {}
    for key, cells in store.scan(WEBPAGE_TABLE):
        url = rowkeys.url_from_row_key(key.decode())
        rows[url] = decode(WebPage, url, cells)
    return rows


def canon(items: object) -> set[str]:
    return {urls.canonicalize(u) for u in items}  # type: ignore[attr-defined]


def same_site_within(truth: Truth, hops: int) -> set[str]:
    """URLs within `hops` links of their own site's seed, never leaving the site (radius 0)."""
    graph = truth.link_graph()
    found: set[str] = set()
    for seed in truth.seeds():
        host = urls.host_key(seed)
        distance = {seed: 0}
        queue = deque([seed])
        while queue:
            url = queue.popleft()
            if distance[url] >= hops:
                continue
            for nxt in graph.get(url, ()):
                if urls.host_key(nxt) == host and nxt not in distance:
                    distance[nxt] = distance[url] + 1
                    queue.append(nxt)
        found |= set(distance)
    return canon(found)


def fetched_urls(web: TestWebServer) -> set[str]:
    return canon(r.url for r in web.log.records() if not r.target.endswith("/robots.txt"))


def test_sitemap_only_fetches_exactly_the_sitemaps_and_their_pages(
        store: Store, settings: Settings, web: TestWebServer) -> None:
    truth = web.truth
    settings = crawl_settings(settings)
    result = run(store, settings, list(truth.seeds()), CrawlMode.SITEMAP_ONLY)
    assert result.stopped == "nothing due"

    sitemaps = canon(truth.discoverable_sitemaps())
    listed = canon(truth.sitemap_listed(in_scope_only=True))
    allowed = {u for u in listed if truth.is_allowed(TOKEN, u)}
    rows = table(store)
    assert {u for u, r in rows.items() if r.is_sitemap} == sitemaps
    assert {u for u, r in rows.items() if r.in_sitemap} == listed
    assert set(rows) == sitemaps | listed | canon(truth.seeds())
    assert fetched_urls(web) == sitemaps | allowed
    for url in listed:
        row = rows[url]
        expected = {s for s in sitemaps if url in canon(truth.listed_by(s))}
        assert set(row.inlinks or {}) == expected, url
        assert not row.outlinks
    # The schedule: next fetch = fetch time + the changefreq's interval (lastmods are older).
    for url in allowed:
        row = rows[url]
        assert row.status is FetchStatus.FETCHED and row.fetch_time is not None, url
        if row.changefreq is not None:
            assert row.next_fetch == row.fetch_time + timedelta(seconds=CHANGEFREQ_SECONDS[row.changefreq]), url

    # A second crawl continues: nothing is due, so no page is asked for again.
    web.log.clear()
    again = run(store, settings, [], CrawlMode.SITEMAP_ONLY)
    assert again.stopped == "nothing due" and fetched_urls(web) == set()
    # Make one page due: only it is fetched, and it answers 304.
    page = web.url("127.0.0.2", "/about.html")
    dueindex.write_pages(store, [(rowkeys.row_key(page).encode(), encode(WebPage(
        page, next_fetch=rows[page].fetch_time)))])
    third = run(store, settings, [], CrawlMode.SITEMAP_ONLY)
    assert fetched_urls(web) == {page} and len(third.rounds) == 1
    assert table(store)[page].status is FetchStatus.NOT_MODIFIED


def test_mixed_adds_pages_reached_by_links_within_depth(store: Store, settings: Settings,
                                                        web: TestWebServer) -> None:
    truth = web.truth
    run(store, crawl_settings(settings), list(truth.seeds()), CrawlMode.MIXED)
    rows = table(store)
    sitemaps = canon(truth.discoverable_sitemaps())
    listed = canon(truth.sitemap_listed(in_scope_only=True))
    linked = same_site_within(truth, 2)
    assert set(rows) == sitemaps | listed | linked
    assert {u for u, r in rows.items() if r.in_sitemap} == listed
    expected_fetched = {u for u in sitemaps | listed | linked if truth.is_allowed(TOKEN, u)}
    assert fetched_urls(web) == expected_fetched
    cart = web.url("127.0.0.2", "/cart/")
    assert cart not in rows  # a nofollow link, and robots.txt says no
    link_only = linked - listed - sitemaps - canon(truth.seeds())
    assert link_only and all(rows[u].inlinks for u in link_only)


def test_links_only_never_touches_sitemaps(store: Store, settings: Settings, web: TestWebServer) -> None:
    truth = web.truth
    run(store, crawl_settings(settings), list(truth.seeds()), CrawlMode.LINKS_ONLY)
    rows = table(store)
    assert set(rows) == same_site_within(truth, 2)
    assert not any(r.is_sitemap or r.in_sitemap for r in rows.values())
    assert fetched_urls(web) == {u for u in rows if truth.is_allowed(TOKEN, u)}
    assert not fetched_urls(web) & canon(truth.sitemaps())


def test_blacklisted_sitemap_is_never_fetched_or_parsed(store: Store, settings: Settings, web: TestWebServer,
                                                        tmp_path: Path) -> None:
    truth = web.truth
    plants = web.url("127.0.0.2", "/sitemap-plants.xml")
    (tmp_path / "blacklist").write_text(plants + "\n")
    run(store, crawl_settings(settings, sitemap_blacklist=tmp_path / "blacklist"), list(truth.seeds()),
        CrawlMode.SITEMAP_ONLY)
    assert plants not in fetched_urls(web)
    rows = table(store)
    only_in_plants = canon(truth.listed_by(plants)) - canon(
        u for s in truth.sitemaps() if s != plants and not truth.sitemap(s).index for u in truth.listed_by(s))
    assert only_in_plants and not only_in_plants & set(rows)
    assert plants not in rows  # the index never made it a row
    index = rows[web.url("127.0.0.2", "/sitemap_index.xml")]
    assert "1 child sitemaps blacklisted" in (index.sitemap_problems or ())
    assert sitemap_outcomes(build_report(store)) == {"index": 1, "urlset": 1, "rss": 1}


def test_crawl_and_report_commands(store: Store, settings: Settings, web: TestWebServer, tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{s}\n" for s in web.truth.seeds()))
    common = ["--hbase", settings.hbase, "--table-prefix", settings.table_prefix, "--user-agent", AGENT]
    runner = CliRunner()
    done = runner.invoke(app, [*common, "crawl", str(seeds), "--mode", "sitemap-only", "--delay", "0",
                               "--rounds", "5"])
    assert done.exit_code == 0, done.output
    assert "round 1: batch" in done.stderr and "stopped: nothing due" in done.stderr
    assert "crawl: found via:" in done.stderr and "crawl: sitemaps index 1, rss 1, urlset 2" in done.stderr
    assert done.stdout == ""
    text = runner.invoke(app, [*common, "report"])
    assert text.exit_code == 0 and "sitemaps:" in text.stdout and "hosts:" in text.stdout
    objects = [json.loads(line) for line in runner.invoke(app, [*common, "report", "--jsonl"]).stdout.splitlines()]
    kinds = [o["kind"] for o in objects]
    assert kinds.count("host") == 2 and kinds.count("sitemap") == 4 and kinds[-1] == "totals"
    totals = objects[-1]
    assert totals["rows"] == len(table(store)) and totals["by_status"].get("fetched", 0) > 10
    missing = runner.invoke(app, [*common, "crawl", str(tmp_path / "nope.txt")])
    assert missing.exit_code == 2 and "cannot read seeds" in missing.stderr


def test_log_format_json_makes_every_stderr_line_a_json_object(store: Store, settings: Settings,
                                                                web: TestWebServer, tmp_path: Path) -> None:
    # Issue 47, logs for log shippers: with -v the crawl says a lot (its own INFO lines, round lines,
    # the workers' lines relayed): all of it one JSON object a line, on stderr and in --log-file.
    import subprocess

    from cli_helpers import cli_command

    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{s}\n" for s in web.truth.seeds()), encoding="utf-8")
    log = tmp_path / "crawl.log"
    done = subprocess.run(cli_command(settings, "--log-format", "json", "-v", "--log-file", str(log),
                                      "--user-agent", AGENT, "crawl", str(seeds), "--mode", "sitemap-only",
                                      "--delay", "0", "--rounds", "3", "--workers", "2"),
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    records = [json.loads(line) for line in lines]  # every line parses
    assert len(records) > 5 and all(isinstance(r, dict) and r["level"] and r["message"] for r in records)
    assert all(r["time"].endswith("Z") and r["logger"] and r["command"] == "crawl" for r in records)
    rounds = [r for r in records if r["message"].startswith("round 1: batch ")]
    assert rounds and rounds[0]["logger"] == "sitemapcrawl.cli" and rounds[0]["level"] == "INFO"
    batch = rounds[0]["message"].split()[3].rstrip(":")
    assert any(r.get("batch") == batch and r["logger"] == "sitemapcrawl.jobs.crawl" for r in records)
    assert all(isinstance(json.loads(line), dict) for line in log.read_text(encoding="utf-8").splitlines())
    # A phase's workers (not quiet here) speak JSON too: relayed with their split, their batch known.
    parsed = subprocess.run(cli_command(settings, "--log-format", "json", "-v", "--user-agent", AGENT,
                                        "parse", "--batch", batch, "--workers", "2"),
                            capture_output=True, text=True, timeout=600, check=False)
    assert parsed.returncode == 0, parsed.stderr
    records = [json.loads(line) for line in parsed.stderr.splitlines()]
    relayed = [r for r in records if r.get("split") in ("0/2", "1/2")]
    assert {r["split"] for r in relayed} == {"0/2", "1/2"}
    assert all(r["batch"] == batch and r["command"] == "parse" for r in relayed)
    failed = subprocess.run(cli_command(settings, "--log-format", "json", "crawl", str(tmp_path / "none.txt")),
                            capture_output=True, text=True, timeout=120, check=False)
    (error,) = [json.loads(line) for line in failed.stderr.splitlines()]
    assert failed.returncode == 2 and error["level"] == "ERROR"
    assert error["message"].startswith("sitemapcrawl: error: cannot read seeds")
