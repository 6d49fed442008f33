"""inject against the real local HBase: seeds with quirks become exact rows."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from cli_helpers import cli
from hbase_fixtures import hbase_shell

from sitemapcrawl.config import Settings
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, FetchStatus, WebPage
from sitemapcrawl.storage.store import Store
from sitemapcrawl.web.rowkeys import row_key

SEEDS = """\
# a comment, then a blank line

http://Example.com/\tdepth=3\tscore=2.5
HTTP://example.com:80/about.html#team
http://example.com/about.html\tdepth=1\tradius=2
not a url
http://example.com/x\tdepth=-1
http://example.com/y\tcolor=red
http://example.com/z\tdepth
ftp://example.com/file
http://example.com/private/secret.html
http://blog.example/rss.xml\tsitemap=true
http://docs.example/\tsitemaps=http://docs.example/sitemap.xml http://docs.example/news.xml.gz\tfetchInterval=600
http://bad.example/sitemap.xml\tsitemap=true
http://fetched.example/old\tscore=0.1\tdepth=1
"""


def row(settings: Settings, url: str) -> dict:
    result = cli(settings, "readdb", url, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_seed_quirks_become_exact_rows(settings: Settings, store: Store, tmp_path: Path) -> None:
    (tmp_path / "filter.txt").write_text("-/private/\n+.\n", encoding="utf-8")
    (tmp_path / "blacklist.txt").write_text("bad.example\n", encoding="utf-8")
    before = datetime.now(UTC).replace(microsecond=0)
    existing = WebPage("http://fetched.example/old", status=FetchStatus.FETCHED, http_code=200, depth=5,
                       radius=0, score=9.0, fetch_time=datetime(2026, 1, 1, tzinfo=UTC))
    store.write(WEBPAGE_TABLE, [(row_key(existing.url).encode(), encode(existing))])

    result = cli(settings, "--url-filter", str(tmp_path / "filter.txt"),
                 "--sitemap-blacklist", str(tmp_path / "blacklist.txt"), "inject", "-", stdin=SEEDS)
    assert result.exit_code == 0, result.output
    messages = result.stderr.splitlines()
    assert any(m.startswith("line 6: not a URL:") for m in messages)
    assert any(m.startswith("line 7: bad metadata: depth='-1'") for m in messages)
    assert any(m.startswith("line 8: bad metadata: unknown key 'color'") for m in messages)
    assert any(m.startswith("line 9: bad metadata:") for m in messages)
    assert any(m.startswith("line 10: filtered:") for m in messages)
    assert any(m.startswith("line 11: filtered:") for m in messages)
    assert any(m.startswith("line 14: blacklisted:") and "bad.example" in m for m in messages)
    assert messages[-1] == (
        "inject: read 13, injected 6, updated 1, sitemap rows 3, rejected 7 "
        "(3 bad metadata, 1 blacklisted, 2 filtered, 1 not a URL)")

    home = row(settings, "http://example.com/")
    assert home["key"] == "com.example:http/"
    assert home["f:st"] == "unfetched" and home["m:dp"] == 3 and home["m:sc"] == 2.5
    assert home["m:sd"] is True and home["m:ra"] == 0
    assert home["f:nft"] >= before.strftime("%Y-%m-%dT%H:%M:%SZ") and home["k:inj"] == home["f:nft"]
    assert "s:sm" not in home

    about = row(settings, "http://example.com/about.html")  # two spellings, one row
    assert about["m:dp"] == 2 and about["m:ra"] == 2  # the most generous of each mention

    rss = row(settings, "http://blog.example/rss.xml")
    assert rss["s:sm"] is True and rss["s:src"] == "seed" and rss["m:sd"] is True

    docs = row(settings, "http://docs.example/")
    assert "s:sm" not in docs and docs["f:fi"] == 600
    for sitemap in ("http://docs.example/sitemap.xml", "http://docs.example/news.xml.gz"):
        listed = row(settings, sitemap)
        assert listed["s:sm"] is True and listed["s:src"] == "seed" and "m:sd" not in listed
        assert listed["m:dp"] == 2  # the seed's (default) depth

    old = row(settings, "http://fetched.example/old")
    assert old["f:st"] == "fetched" and old["f:hc"] == 200 and old["f:ft"] == "2026-01-01T00:00:00Z"
    assert old["m:dp"] == 5 and old["m:sc"] == 9.0 and old["m:sd"] is True

    for absent in ("http://bad.example/sitemap.xml", "http://example.com/private/secret.html",
                   "http://example.com/x"):
        assert cli(settings, "readdb", absent).exit_code == 1

    again = cli(settings, "inject", "--overwrite-score", "-", stdin="http://fetched.example/old\tscore=0.1\n")
    assert again.exit_code == 0 and "injected 0, updated 1" in again.stderr
    assert row(settings, "http://fetched.example/old")["m:sc"] == 0.1
    assert row(settings, "http://fetched.example/old")["f:st"] == "fetched"


def test_inject_from_file_and_shell_inspection(settings: Settings, store: Store, tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"http://h{i % 7}.example/p{i}\n" for i in range(2500)), encoding="utf-8")
    result = cli(settings, "inject", str(seeds))
    assert result.exit_code == 0, result.output
    assert "read 2500, injected 2500, updated 0" in result.stderr
    table = settings.table_prefix + WEBPAGE_TABLE
    out = hbase_shell(f"count '{table}'\nget '{table}', 'example.h3:http/p3', 'f:st'")
    assert "2500 row(s)" in out and "value=unfetched" in out


def test_missing_seed_file_is_a_usage_error(settings: Settings, store: Store) -> None:
    result = cli(settings, "inject", "/nonexistent/seeds.txt")
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("sitemapcrawl: error: cannot read seeds /nonexistent/seeds.txt")
