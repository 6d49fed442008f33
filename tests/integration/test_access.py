"""Access to sites that need it (issue 46): a crawl of a host behind basic auth with `--netrc`, a header on
every request, and no credential kept anywhere: not in a cell of any table, not in a WARC byte, not in
`config show`, not on stderr."""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import cli

from sitemapcrawl.config import Settings
from sitemapcrawl.model.cells import decode
from sitemapcrawl.model.webpage import TABLE_NAMES, WEBPAGE_TABLE, FetchStatus, WebPage
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import Entry, Page, Robots, Site, Sitemap, TestWebServer, Web
from sitemapcrawl.web import rowkeys

AGENT = "TestBot/1.0 (+http://127.0.0.1/bot)"
HOST = "127.0.46.2"
USER, PASSWORD = "staging", "s3cret-Pa55word"
PAGES = tuple(Page(f"/p/{n}.html", f"Page {n}") for n in range(6))
SITE = Site(HOST, "staging", pages=(Page("/", "Home"), *PAGES), robots=Robots(sitemaps=("/sitemap.xml",)),
            sitemaps=(Sitemap("/sitemap.xml", entries=tuple(Entry(p.path) for p in PAGES)),),
            basic_auth=(USER, PASSWORD))


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_crawl_behind_basic_auth_with_netrc_fetches_every_page_and_keeps_no_credential(
        workers: str, store: Store, settings: Settings, make_testweb: Callable[[Web], TestWebServer],
        tmp_path: Path) -> None:
    # With --workers 2 the phases run in worker processes: they get the settings (--netrc, --header) as
    # the crawl resolved them, on their stdin, never in their command line.
    server = make_testweb(Web((SITE,), "staging"))
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine {HOST}\n  login {USER}\n  password {PASSWORD}\n", encoding="utf-8")
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(server.base_url(SITE) + "\n", encoding="utf-8")
    warc = tmp_path / "warc"

    done = cli(settings, "-v", "crawl", str(seeds), "--mode", "sitemap-only", "--rounds", "3", "--netrc", str(netrc),
               "--header", "X-Staging-Token: t0k3n", "--warc", str(warc), "--workers", workers, user_agent=AGENT)
    assert done.exit_code == 0, done.output

    # Every request was let in (robots.txt, the sitemap, every page).
    answered = server.log.records()
    assert answered and {r.status for r in answered} == {200}
    listed = {server.url(SITE, p.path) for p in PAGES}
    assert listed <= {r.url for r in answered}
    rows = {rowkeys.url_from_row_key(key.decode()): decode(WebPage, "", cells)
            for key, cells in store.scan(WEBPAGE_TABLE)}
    assert {url for url in listed if rows[url].status is FetchStatus.FETCHED} == listed

    # No credential in any cell of any table, nor in any WARC byte, nor on stderr.
    secrets = (PASSWORD.encode(), base64.b64encode(f"{USER}:{PASSWORD}".encode()), b"t0k3n")
    for table in TABLE_NAMES:
        for key, cells in store.scan(table):
            for value in [key, *cells, *cells.values()]:
                assert not any(secret in value for secret in secrets), (table, key)
    files = sorted(warc.iterdir())
    assert files
    for path in files:
        data = gzip.decompress(path.read_bytes())
        # Each request record says the header and the credentials went out, and holds neither's value.
        assert data.count(b"WARC-Type: request") == data.count(b"Authorization: [redacted]")
        assert data.count(b"WARC-Type: request") == data.count(b"X-Staging-Token: [redacted]") > 0
        assert not any(secret in data for secret in secrets), path
    assert not any(secret.decode() in done.output for secret in secrets)

    shown = cli(settings, "--config", str(_config(tmp_path, netrc)), "config", "show", "--json")
    assert shown.exit_code == 0, shown.output
    values = json.loads(shown.stdout)
    assert values["headers"]["value"] == ["X-Staging-Token: (hidden)"]
    assert values["netrc"]["value"] == str(netrc)
    assert not any(secret.decode() in shown.stdout for secret in secrets)


def test_without_credentials_the_host_answers_401_and_a_bad_netrc_is_one_line(
        store: Store, settings: Settings, make_testweb: Callable[[Web], TestWebServer], tmp_path: Path) -> None:
    server = make_testweb(Web((SITE,), "staging"))
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(server.base_url(SITE) + "\n", encoding="utf-8")
    done = cli(settings, "crawl", str(seeds), "--mode", "sitemap-only", "--rounds", "1", user_agent=AGENT)
    assert done.exit_code == 0, done.output
    assert {r.status for r in server.log.records()} == {401}

    bad = tmp_path / "bad-netrc"
    bad.write_text(f"login {USER} password {PASSWORD}\n", encoding="utf-8")  # no machine: refused
    refused = cli(settings, "crawl", str(seeds), "--netrc", str(bad), user_agent=AGENT)
    assert refused.exit_code == 2
    assert refused.stderr.strip().startswith("sitemapcrawl: error: netrc file ")
    assert PASSWORD not in refused.output and "Traceback" not in refused.output


def _config(folder: Path, netrc: Path) -> Path:
    path = folder / "crawl.toml"
    path.write_text(f'headers = ["X-Staging-Token: t0k3n"]\nnetrc = "{netrc}"\n', encoding="utf-8")
    return path
