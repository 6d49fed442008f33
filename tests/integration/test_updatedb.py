"""updatedb against the real HBase: the batch's schedule, marks that free rows, the CLI, the shell."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hbase_fixtures import hbase_shell
from typer.testing import CliRunner

from sitemapcrawl.cli.app import app
from sitemapcrawl.config import Settings
from sitemapcrawl.jobs.updatedb import updatedb
from sitemapcrawl.model.cells import decode, encode
from sitemapcrawl.model.linkvalues import Inlink, InlinkKind, format_inlink
from sitemapcrawl.model.marks import held_by
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, ChangeFreq, FetchStatus, SitemapSource, WebPage
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
FETCHED = NOW - timedelta(minutes=10)
runner = CliRunner()


def put(store: Store, *rows: WebPage) -> None:
    store.write(WEBPAGE_TABLE, [(rowkeys.row_key(r.url).encode(), encode(r)) for r in rows])


def read(store: Store, url: str) -> WebPage:
    return decode(WebPage, url, store.row(WEBPAGE_TABLE, rowkeys.row_key(url).encode()) or {})


def done(url: str, batch: str = "b1", **fields: object) -> WebPage:
    values: dict[str, object] = {"status": FetchStatus.FETCHED, "fetch_time": FETCHED, "fetch_mark": batch,
                                 "generate_mark": batch, "fetch_interval": 10 * 86400, "parse_mark": batch}
    values.update(fields)
    return WebPage(url, **values)  # type: ignore[arg-type]


def test_the_batch_gets_its_schedule_and_is_freed(store: Store, settings: Settings) -> None:
    base = "http://127.0.0.2:8000"
    put(store,
        done(f"{base}/daily", changefreq=ChangeFreq.DAILY, in_sitemap=True),
        done(f"{base}/touched", changefreq=ChangeFreq.WEEKLY, lastmod=FETCHED + timedelta(minutes=1)),
        done(f"{base}/future", changefreq=ChangeFreq.WEEKLY, lastmod=NOW + timedelta(days=9)),
        done(f"{base}/gone", status=FetchStatus.GONE, next_fetch=FETCHED),
        done(f"{base}/never", changefreq=ChangeFreq.NEVER),
        done(f"{base}/retry", status=FetchStatus.RETRY, retries=2),
        done(f"{base}/same", status=FetchStatus.NOT_MODIFIED, prev_fetch_time=FETCHED - timedelta(days=10)),
        done(f"{base}/changed", prev_fetch_time=FETCHED - timedelta(days=10), content_changed=FETCHED),
        WebPage(f"{base}/not-fetched", status=FetchStatus.UNFETCHED, generate_mark="b1", next_fetch=FETCHED))
    rules = UrlRules.from_settings(settings)

    counts = updatedb(store, rules, "b1", clock=lambda: NOW)

    assert counts.scheduled == 8 and counts.not_rescheduled == 2
    expected = {
        "daily": FETCHED + timedelta(days=1), "touched": NOW, "future": FETCHED + timedelta(days=7),
        "gone": None, "never": None, "retry": FETCHED + timedelta(hours=2),
        "same": FETCHED + timedelta(days=14), "changed": FETCHED + timedelta(days=8),
    }
    for name, next_fetch in expected.items():
        row = read(store, f"{base}/{name}")
        assert row.next_fetch == next_fetch, name
        assert row.update_mark == "b1" and held_by(row) is None, name
    waiting = read(store, f"{base}/not-fetched")
    assert waiting.update_mark is None and held_by(waiting) == "b1"  # fetch --batch b1 can still finish it
    again = updatedb(store, rules, "b1", clock=lambda: NOW)
    assert again.scheduled == 0 and again.already_updated == 8


def test_parse_and_updatedb_commands(store: Store, settings: Settings, testweb: TestWebServer) -> None:
    feed = testweb.url("127.0.0.3", "/rss.xml")
    client = PoliteHttpClient.from_settings(Settings(user_agent="sitemapcrawl-test/1.0", delay=0.0))
    try:
        body = client.get(feed).body
    finally:
        client.close()
    put(store, done(feed, "b9", is_sitemap=True, sitemap_source=SitemapSource.ROBOTS, content=body,
                    parse_mark=None, depth=2, radius=0))
    common = ["--hbase", settings.hbase, "--table-prefix", settings.table_prefix]
    parsed = runner.invoke(app, [*common, "parse", "--batch", "b9", "--mode", "sitemap-only"])
    assert parsed.exit_code == 0, parsed.output
    assert f"{feed}: rss, 3 entries" in parsed.stderr and "parse: batch b9: rows 1" in parsed.stderr
    merged = runner.invoke(app, [*common, "updatedb", "--batch", "b9"])
    assert merged.exit_code == 0, merged.output
    assert "merged 3 rows (new 3)" in merged.stderr and parsed.stdout == merged.stdout == ""
    for url in testweb.truth.listed_by(feed):
        row = read(store, url)
        assert row.in_sitemap and row.status is FetchStatus.UNFETCHED and set(row.inlinks or {}) == {feed}
    nothing = runner.invoke(app, [*common, "updatedb", "--batch", "nope"])
    assert nothing.exit_code == 2 and "no batch 'nope'" in nothing.stderr  # a typo: one line, no lease left
    bad = runner.invoke(app, [*common, "parse", "--batch", "b9", "--mode", "everything"])
    assert bad.exit_code == 2 and "'everything' is not one of 'sitemap-only', 'mixed', 'links-only'" in bad.stderr


def test_merged_inlinks_read_in_the_hbase_shell(store: Store, settings: Settings) -> None:
    page = "http://shell.example/p.html"
    hints = Inlink(InlinkKind.SITEMAP, 1, 0, "b1", priority=0.8, changefreq=ChangeFreq.DAILY,
                   lastmod=datetime(2024, 3, 1, tzinfo=UTC))
    put(store, WebPage(page, inlinks={"http://shell.example/sitemap.xml": format_inlink(hints)},
                       discover_mark="b1"))
    updatedb(store, UrlRules.from_settings(settings), "b1", clock=lambda: NOW)
    table = settings.table_prefix + WEBPAGE_TABLE
    out = hbase_shell(f"get '{table}', 'example.shell:http/p.html'")
    assert "il:http://shell.example/sitemap.xml timestamp=" in out
    assert "value=sitemap pr=0.8 cf=daily lm=2024-03-01T00:00:00Z dp=1 ra=0 b=b1" in out
    assert "s:pr timestamp=" in out and "value=0.8" in out and "value=unfetched" in out
    # A first listing's merge is one a rerun repeats exactly: no merge mark (`Mark.MERGE`).
    assert "k:dsc timestamp=" in out and "k:mrg" not in out
