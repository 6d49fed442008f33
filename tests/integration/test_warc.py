"""`--warc DIR`: a crawl of the loopback web kept as WARC files an archive can ingest.

Through the CLI against the real HBase: warcio's own `check` and `index`
read every file; every fetched URL has exactly one response record whose
payload is the body the crawl saw (its signature); robots.txt and sitemaps
are recorded too; readdb names the file and offset of a row's capture, and
the record there is the page. `--workers 2` writes two file series and no
record twice; a fetch killed by SIGKILL loses no finished record.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import cli, cli_command
from hbase_fixtures import REPO
from warcio.archiveiterator import ArchiveIterator

from sitemapcrawl.config import Settings
from sitemapcrawl.model.cells import decode
from sitemapcrawl.model.webpage import WEBPAGE_TABLE, FetchStatus, WebPage
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer, bulk_web
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.http import PoliteHttpClient, conditional_headers
from sitemapcrawl.web.warc import WarcRecorder, warcinfo

AGENT = "TestBot/1.0 (+http://127.0.0.1/bot)"
WARCIO = str(Path(sys.executable).parent / "warcio")
WEB = bulk_web(3, 8, first_host="127.0.26.1")  # served by the shared `web` fixture


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every record of a WARC file: type, URL, offset, WARC headers, and the decoded body's MD5."""
    found = []
    with path.open("rb") as stream:
        iterator = ArchiveIterator(stream)
        for record in iterator:
            body = record.content_stream().read() if record.rec_type == "response" else b""
            found.append({"type": record.rec_type, "url": record.rec_headers.get_header("WARC-Target-URI"),
                          "offset": iterator.get_record_offset(), "headers": dict(record.rec_headers.headers),
                          "md5": hashlib.md5(body, usedforsecurity=False).hexdigest(), "file": path.name})
    return found


def all_records(folder: Path) -> list[dict[str, Any]]:
    return [r for path in sorted(folder.iterdir()) for r in read_records(path)]


def rows(store: Store) -> dict[str, WebPage]:
    urls = ((rowkeys.url_from_row_key(key.decode()), cells) for key, cells in store.scan(WEBPAGE_TABLE))
    return {url: decode(WebPage, url, cells) for url, cells in urls}


def test_the_client_keeps_a_content_coded_body_as_received_and_a_304_as_a_revisit(
        testweb: TestWebServer, tmp_path: Path) -> None:
    site = next(s for s in testweb.web.sites if any(m.path == "/sitemap-encoded.xml" for m in s.sitemaps))
    url = testweb.url(site, "/sitemap-encoded.xml")
    recorder = WarcRecorder(tmp_path, 10_000_000, warcinfo(Settings(user_agent=AGENT)))
    client = PoliteHttpClient(AGENT, delay=0.0, recorder=recorder)
    try:  # fetch_one hands each exchange back, and its caller writes it (as fetcher.write does)
        first = client.submit(client.aio.fetch_one(url)).result()
        assert first.unrecorded is not None
        captured = recorder.record(first.unrecorded.exchange)
        again = client.submit(client.aio.fetch_one(url, headers=conditional_headers(first.headers.get("etag"), None),
                                                   refers=captured)).result()
        assert again.unrecorded is not None and again.unrecorded.refers == captured
        revisited = recorder.record(again.unrecorded.exchange, again.unrecorded.refers)
    finally:
        client.close()
    assert first.status == 200 and first.body.startswith(b"<?xml")  # the caller gets it decoded
    assert again.status == 304
    assert revisited.revisit and not captured.revisit
    records = read_both(tmp_path / captured.file)
    response = next(r for r in records if r[0].rec_type == "response")[0]
    assert response.http_headers.get_header("Content-Encoding") == "gzip"
    raw, decoded = next(r[1:] for r in records if r[0].rec_type == "response")
    assert raw.startswith(b"\x1f\x8b") and decoded == first.body  # stored as it came: gzip
    digest = "sha1:" + base64.b32encode(hashlib.sha1(raw).digest()).decode()
    assert response.rec_headers.get_header("WARC-Payload-Digest") == digest
    revisit = next(r for r in records if r[0].rec_type == "revisit")[0]
    assert revisit.rec_headers.get_header("WARC-Refers-To") == captured.record_id
    assert revisit.rec_headers.get_header("WARC-Profile").endswith("/revisit/server-not-modified")
    checked = subprocess.run([WARCIO, "check", str(tmp_path / captured.file)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout


def read_both(path: Path) -> list[tuple[Any, bytes, bytes]]:
    """(record, payload as stored, payload decoded) of each record of a WARC file (read twice)."""
    with path.open("rb") as stream:
        raw = [(record, record.raw_stream.read()) for record in ArchiveIterator(stream)]
    with path.open("rb") as stream:
        decoded = [record.content_stream().read() for record in ArchiveIterator(stream)]
    return [(record, stored, plain) for (record, stored), plain in zip(raw, decoded, strict=True)]


def test_a_crawl_kept_as_warc_passes_warcio_and_matches_the_table(
        settings: Settings, store: Store, web: TestWebServer, tmp_path: Path) -> None:
    folder = tmp_path / "warc"
    seeds = "".join(f"{url}\n" for url in web.base_urls())
    result = cli(settings, "crawl", "-", "--rounds", "3", "--delay", "0", "--warc", str(folder),
                 stdin=seeds, user_agent=AGENT)
    assert result.exit_code == 0, result.stderr
    files = sorted(folder.iterdir())
    assert files and all(f.name.endswith(".warc.gz") for f in files)  # every file closed and renamed
    checked = subprocess.run([WARCIO, "check", "-v", *map(str, files)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    index = subprocess.run([WARCIO, "index", "-f", "warc-type,warc-target-uri,offset", *map(str, files)],
                           capture_output=True, text=True, check=True)
    indexed = [json.loads(line) for line in index.stdout.splitlines()]
    records = all_records(folder)
    assert len(indexed) == len(records)
    assert all(r["type"] == "warcinfo" for r in records if r["offset"] == 0)

    responses = Counter(r["url"] for r in records if r["type"] in ("response", "revisit"))
    table = rows(store)
    fetched = {url: page for url, page in table.items() if page.status is FetchStatus.FETCHED}
    assert len(fetched) > 10
    by_url = {r["url"]: r for r in records if r["type"] == "response"}
    for url, page in fetched.items():
        assert responses[url] == 1, url  # exactly one capture of each fetched URL
        record = by_url[url]
        assert record["md5"] == page.signature, url  # the payload, decoded, is the body the crawl saw
        assert (page.warc_file, page.warc_offset) == (record["file"], record["offset"])
        assert page.warc_record == record["headers"]["WARC-Record-ID"]
    assert any(url.endswith("/robots.txt") for url in responses)  # robots.txt fetches are kept too
    sitemaps = [url for url, page in fetched.items() if page.is_sitemap]
    assert sitemaps and all(responses[url] == 1 for url in sitemaps)
    requests = Counter(r["headers"]["WARC-Concurrent-To"] for r in records if r["type"] == "request")
    assert all(requests[r["headers"]["WARC-Record-ID"]] == 1 for r in records if r["type"] == "response")

    # readdb names the file and the offset; the record found there is the page.
    url = next(u for u, page in fetched.items() if not page.is_sitemap)
    shown = cli(settings, "readdb", url, "--json")
    assert shown.exit_code == 0, shown.stderr
    cells = json.loads(shown.stdout)
    with (folder / cells["f:wf"]).open("rb") as stream:
        stream.seek(int(cells["f:wo"]))
        record = next(iter(ArchiveIterator(stream)))
        assert record.rec_headers.get_header("WARC-Target-URI") == url
        body = record.content_stream().read()
    assert hashlib.md5(body, usedforsecurity=False).hexdigest() == fetched[url].signature
    assert b"<html" in body.lower()


def test_two_workers_write_two_series_and_no_record_twice(
        settings: Settings, store: Store, web: TestWebServer, tmp_path: Path) -> None:
    folder = tmp_path / "warc"
    seeds = "".join(f"{url}\n" for url in web.base_urls())
    result = cli(settings, "crawl", "-", "--rounds", "3", "--delay", "0", "--workers", "2", "--warc", str(folder),
                 stdin=seeds, user_agent=AGENT)
    assert result.exit_code == 0, result.stderr
    records = all_records(folder)
    ids = [r["headers"]["WARC-Record-ID"] for r in records]
    assert len(ids) == len(set(ids))
    pages = [r for r in records if r["type"] == "response" and not r["url"].endswith("/robots.txt")]
    assert Counter(r["url"] for r in pages).most_common(1)[0][1] == 1  # no page recorded twice
    series = {r["file"].rsplit("-", 1)[0] for r in pages}
    assert len(series) == 2  # one series per fetch worker (the parent's detect writes its own)
    fetched = [p for p in rows(store).values() if p.status is FetchStatus.FETCHED]
    assert len(pages) == len(fetched)


@pytest.mark.parametrize("hold", ["1", "0"], ids=["nothing-in-flight", "requests-going-on"])
def test_a_fetch_killed_mid_file_loses_no_finished_record_and_its_rerun_records_each_url_once(
        settings: Settings, store: Store, web: TestWebServer, tmp_path: Path, hold: str) -> None:
    # Killed right after a write of outcomes in round 2: with `hold` 0 the requests go on meanwhile, so some
    # pages are fetched and not written. Their records are written with their outcomes, never before: the
    # rerun fetches them again and each URL ends with one response record (issue 47, item 5).
    folder = tmp_path / "warc"
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{url}\n" for url in web.base_urls()), encoding="utf-8")
    command = cli_command(settings, "--user-agent", AGENT, "-q", "crawl", str(seeds), "--rounds", "3",
                          "--delay", "0", "--max-connections", "4", "--warc", str(folder))[3:]
    env = dict(os.environ, PYTHONPATH=str(REPO), SITEMAPCRAWL_HBASE_BATCH_SIZE="4", KILLPOINT_HOLD=hold)
    web.reset()
    killed = subprocess.run([sys.executable, str(REPO / "tests" / "killpoint.py"), "fetch", "KILL", "2", "5", "--",
                             *command], env=env, capture_output=True, text=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    left_open = list(folder.glob("*.open"))
    assert left_open  # the killed process never closed its file
    checked = subprocess.run([WARCIO, "check", *map(str, left_open)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr  # every record in it is whole
    records = {(r["file"].removesuffix(".open"), r["offset"]): r for r in all_records(folder)}
    written = [p for p in rows(store).values() if p.warc_file is not None]
    assert len(written) >= 5
    for page in written:  # every outcome HBase holds points at a whole record of its body
        record = records[(page.warc_file, page.warc_offset)]
        assert record["url"] == page.url
        if page.status is FetchStatus.FETCHED:
            assert record["md5"] == page.signature
    rerun = subprocess.run(command_of([arg for arg in command if arg != "-q"]), env=env, capture_output=True,
                           text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert list(folder.glob("*.open")) == []  # the dead run's file was closed by the rerun
    assert all(f"{path.name}.open was left open by a run that died: closed as {path.name}" in rerun.stderr
               for path in (Path(p.name.removesuffix(".open")) for p in left_open))
    checked = subprocess.run([WARCIO, "check", *map(str, folder.iterdir())], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    records = {(r["file"], r["offset"]): r for r in all_records(folder)}
    pages = Counter(r["url"] for r in records.values()
                    if r["type"] == "response" and not r["url"].endswith("/robots.txt"))
    fetched = {url for url, n in fetches(web).items() if n}
    assert set(pages) == {url for url in fetched if not url.endswith("/robots.txt")}
    assert max(pages.values()) == 1  # every page once: none recorded by the killed run and fetched again
    for page in rows(store).values():  # every row's pointer names a file that exists, at its own record
        if page.warc_file is not None:
            assert records[(page.warc_file, page.warc_offset)]["url"] == page.url


def command_of(cli_args: list[str]) -> list[str]:
    """The CLI arguments (after `python -m sitemapcrawl`) as a command, run without the killpoint."""
    return [sys.executable, "-m", "sitemapcrawl", *cli_args]


def fetches(web: TestWebServer) -> Counter[str]:
    """How often the loopback web answered each URL."""
    return Counter(r.url for r in web.log.records() if r.status != 0)


def limited_file_size(limit: int) -> None:
    """In the child before exec: files it writes stop at `limit` bytes (EFBIG; Python ignores SIGXFSZ)."""
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@contextlib.contextmanager
def nearly_full_disk(folder: Path, free: int) -> Iterator[Path]:
    """A 4 MB tmpfs mounted on `folder`, filled but for about `free` bytes; skips the test if it cannot mount."""
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)], capture_output=True,
                             check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        (folder / "filler").write_bytes(bytes(4 * 1024 * 1024 - free))
        yield folder / "warc"
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.parametrize("full", ["file-size-limit", "tmpfs"])
def test_a_full_disk_is_one_line_and_leaves_whole_records_and_no_open_file(
        settings: Settings, store: Store, web: TestWebServer, tmp_path: Path, full: str) -> None:
    # Issue 47, item 6: close() raised at exit (a traceback) and left a .open file with a torn last record.
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{url}\n" for url in web.base_urls()), encoding="utf-8")
    with contextlib.ExitStack() as stack:
        if full == "tmpfs":
            folder, limit = stack.enter_context(nearly_full_disk(tmp_path / "disk", 24 * 1024)), None
        else:
            folder, limit = tmp_path / "warc", 20_000
        command = cli_command(settings, "--user-agent", AGENT, "-q", "crawl", str(seeds), "--rounds", "3",
                              "--delay", "0", "--warc", str(folder))
        web.reset()
        stopped = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False,
                                 preexec_fn=None if limit is None else functools.partial(limited_file_size, limit))
        assert stopped.returncode == 1, stopped.stderr
        lines = stopped.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in stopped.stderr, stopped.stderr
        assert lines[0].startswith("sitemapcrawl: error: fetch stopped: the WARC file cannot be written: ")
        assert "fetched outcomes not written (their rows stay due: the rerun fetches them again)" in lines[0]
        assert list(folder.glob("*.open")) == []
        checked = subprocess.run([WARCIO, "check", *map(str, folder.iterdir())], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout + checked.stderr  # every file ends on a whole record
        records = {(r["file"], r["offset"]): r for r in all_records(folder)}
        for page in rows(store).values():  # what HBase holds points at records that exist
            if page.warc_file is not None:
                assert records[(page.warc_file, page.warc_offset)]["url"] == page.url
        if full == "tmpfs":
            (folder.parent / "filler").unlink()  # room again: the rerun finishes the batch
        rerun = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
        assert rerun.returncode == 0, rerun.stderr
        pages = Counter(r["url"] for r in all_records(folder)
                        if r["type"] == "response" and not r["url"].endswith("/robots.txt"))
        assert pages and max(pages.values()) == 1  # what was not archived was fetched again, once
