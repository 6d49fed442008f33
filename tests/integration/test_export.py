"""export: every row of a real crawl, in each format, read back and compared with the table."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from changing_crawl import AGENT, HOST, crawl_settings, run_crawl
from cli_helpers import cli, runner

from sitemapcrawl.cli.app import app
from sitemapcrawl.config import Settings
from sitemapcrawl.model.audit import audit_lists, reason
from sitemapcrawl.model.cells import decode
from sitemapcrawl.model.codec import format_time
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, WebPage
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import changing_web
from sitemapcrawl.web import rowkeys

INTS = ("http_code", "depth", "radius", "linked_from")
FLOATS = ("priority", "sitemap_quality")
TIMES = ("fetched_at", "next_fetch_at", "lastmod", "news_publication_date")


def the_table(store: Store) -> dict[str, dict[str, Any]]:
    """Every row, read whole and flattened here (not by the export code)."""
    rows = {}
    for key, cells in store.scan(WEBPAGE_TABLE):
        url = rowkeys.url_from_row_key(key.decode())
        rows[url] = decode(WebPage, url, cells)
    scores = {url: row.quality for url, row in rows.items() if row.is_sitemap and row.quality is not None}

    def when(moment: Any) -> str | None:
        return format_time(moment) if moment else None

    flat = {}
    for url, row in rows.items():
        listing = sorted(src for src, text in (row.inlinks or {}).items() if text.startswith("sitemap "))
        found = ("sitemap document" if row.is_sitemap else "seed" if row.seed else
                 "sitemap" if row.in_sitemap else "link")
        quality = [scores[s] for s in listing if s in scores]
        flat[url] = {
            "url": url, "host": HOST, "status": row.status.value if row.status else None,
            "http_code": row.http_code, "content_type": row.content_type or None, "fetched_at": when(row.fetch_time),
            "next_fetch_at": when(row.next_fetch), "discovered_via": found, "sitemaps": listing,
            "lastmod": when(row.lastmod), "changefreq": row.changefreq.value if row.changefreq else None,
            "priority": row.priority, "sitemap_quality": max(quality) if quality else None, "depth": row.depth,
            "radius": row.radius, "noindex": row.noindex, "canonical": row.canonical or None,
            "redirect_to": row.redirect_to or None, "linked_from": row.link_inlinks or 0,
            "x_robots_tag": next((line.split(": ", 1)[1] for line in row.robots or ()
                                  if line.startswith("X-Robots-Tag: ")), None),
            "hreflang": [dict(zip(("hreflang", "href"), line.split(" ", 1), strict=True))
                         for line in dict.fromkeys((*(row.hreflang or ()), *(row.sitemap_hreflang or ())))],
            "news_publication_date": row.news_date or None, "news_title": row.news_title or None,
            "images": row.images or 0, "videos": row.videos or 0,
            "lastmod_verdict": (row.lastmod_verdict or "ok") if row.lastmod or row.lastmod_verdict else None,
            # the audit's own definitions (model.audit), not the export's code
            "audit": [f"{name}: {reason(row, name)}" for name in audit_lists(row)],
        }
    return flat


def from_csv(text: str) -> dict[str, dict[str, Any]]:
    out = {}
    for record in csv.DictReader(io.StringIO(text)):
        row: dict[str, Any] = {k: (v if v != "" else None) for k, v in record.items()}
        for name in INTS:
            row[name] = int(row[name]) if row[name] is not None else None
        for name in FLOATS:
            row[name] = float(row[name]) if row[name] is not None else None
        row["noindex"] = {"true": True, "false": False, None: None}[row["noindex"]]
        row["sitemaps"] = row["sitemaps"].split(" ") if row["sitemaps"] else []
        row["images"], row["videos"] = int(row["images"]), int(row["videos"])
        row["hreflang"] = [dict(zip(("hreflang", "href"), pair.split("=", 1), strict=True))
                           for pair in (row["hreflang"] or "").split()]
        row["audit"] = row["audit"].split(" | ") if row["audit"] else []
        out[row["url"]] = row
    return out


def from_parquet(path: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for row in pq.read_table(path).to_pylist():
        for name in TIMES:
            row[name] = format_time(row[name]) if row[name] is not None else None
        out[row["url"]] = row
    return out


def test_export_round_trips_every_row_in_each_format_and_filters(
        store: Store, settings: Settings, make_testweb, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings = crawl_settings(settings)
    server = make_testweb(changing_web(1))
    run_crawl(store, settings, server)
    table = the_table(store)
    assert len(table) == 20  # 4 sitemaps, 16 pages
    assert any(r["sitemaps"] for r in table.values()) and any(r["sitemap_quality"] for r in table.values())
    assert any(r["noindex"] for r in table.values()) and any(r["redirect_to"] for r in table.values())

    to_stdout = cli(settings, "export")
    assert to_stdout.exit_code == 0, to_stdout.output
    back = from_csv(to_stdout.stdout)
    assert set(back) == set(table)
    assert [(u, k, back[u][k], v) for u, r in table.items() for k, v in r.items() if back[u][k] != v] == []
    assert f"export: {len(table)} rows written of {len(table)} read" in to_stdout.stderr
    assert to_stdout.stdout.splitlines()[0].split(",")[:5] == ["url", "host", "status", "http_code", "content_type"]
    for fmt in ("csv", "jsonl", "parquet"):
        path = tmp_path / f"urls.{fmt}"
        done = cli(settings, "export", "--format", fmt, "--output", str(path))
        assert done.exit_code == 0, done.output
        assert done.stdout == ""
        if fmt == "csv":
            back = from_csv(path.read_text(encoding="utf-8"))
        elif fmt == "jsonl":
            back = {r["url"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}
        else:
            back = from_parquet(path)
        assert back == table, fmt

    def urls_of(*args: str) -> set[str]:
        done = cli(settings, "export", "--format", "jsonl", *args)
        assert done.exit_code == 0, done.output
        return {json.loads(line)["url"] for line in done.stdout.splitlines()}

    truth = server.truth
    listed = truth.sitemap_listed()
    linked = {t for targets in truth.link_graph().values() for t in targets}
    assert urls_of("--in-sitemaps") == {u for u, r in table.items() if r["discovered_via"] != "link"} - {
        u for u, r in table.items() if r["discovered_via"] == "sitemap document"} - {truth.base_url(HOST)} | (
        {truth.base_url(HOST)} & listed)
    assert urls_of("--in-sitemaps") | urls_of("--not-in-sitemaps") == set(table)
    assert urls_of("--orphans") == listed - linked
    assert server.url(HOST, "/orphan.html") in urls_of("--orphans")
    assert urls_of("--unlisted") == set(truth.link_only()) == {server.url(HOST, "/linked-only.html")}
    assert urls_of("--status", "gone") == {server.url(HOST, "/broken.html"), server.url(HOST, "/gone.html")}
    assert urls_of("--host", HOST) == set(table) and urls_of("--host", "127.0.0.9") == set()

    nowhere = tmp_path / "nowhere.parquet"
    bad_host = cli(settings, "export", "--format", "parquet", "-o", str(nowhere), "--host", "bad host:1")
    assert bad_host.exit_code == 2 and len(bad_host.stderr.splitlines()) == 1 and not nowhere.exists()
    for bad, message in ((["--format", "xls"], "--format"), (["--status", "nope"], "--status"),
                         (["--orphans", "--unlisted"], "not both"), (["--orphans", "--in-sitemaps"], "--orphans")):
        done = cli(settings, "export", *bad)
        assert done.exit_code == 2 and message in done.stderr and "Traceback" not in done.output, bad


def test_parquet_without_pyarrow_says_how_to_get_it(settings: Settings, monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    done = cli(settings, "export", "--format", "parquet", "-o", str(tmp_path / "x.parquet"))
    assert done.exit_code == 2
    assert done.stderr.strip().splitlines() == [
        "sitemapcrawl: error: Parquet export needs pyarrow: pip install 'sitemapcrawl[parquet]' (or pip install "
        "pyarrow)"]


def test_sitemap_tree_entries_lists_every_url_without_hbase(make_testweb) -> None:  # type: ignore[no-untyped-def]
    server = make_testweb(changing_web(1))
    done = runner.invoke(app, ["--hbase", "127.0.0.1:1", "--user-agent", AGENT, "sitemap", "tree",
                               server.base_url(HOST), "--entries", "--jsonl"])
    assert done.exit_code == 0, done.output
    records = [json.loads(line) for line in done.stdout.splitlines()]
    truth = server.truth
    assert {r["loc"] for r in records} == set(truth.sitemap_listed())
    assert {(r["sitemap"], r["loc"]) for r in records} == {
        (sm, u) for sm, m in truth.sitemaps().items() if not m.index for u in truth.listed_by(sm)}
    news = next(r for r in records if r["loc"].endswith("/news/1.html") and r["sitemap"].endswith("news.xml"))
    assert news["priority"] == 0.8 and news["changefreq"] == "hourly" and news["lastmod"] == "2024-05-01T10:00:00Z"
    text = runner.invoke(app, ["--user-agent", AGENT, "sitemap", "tree", server.base_url(HOST), "--entries"])
    assert text.exit_code == 0 and text.stdout.startswith("KIND") and len(text.stdout.splitlines()) == len(records) + 1
