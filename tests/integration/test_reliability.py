"""What the crawler promises under hostile servers, concurrent workers and HBase refusals (real HBase, loopback).

The kill tests are in test_resume.py.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import cli_helpers
import pytest
from cli_helpers import runner
from fetch_helpers import AGENT, add_rows, due, read, run_fetch
from hostile_web import HostileServer, Route

from sitemapcrawl.batch.leases import Holder
from sitemapcrawl.cli.app import app
from sitemapcrawl.config import Settings
from sitemapcrawl.errors import StoreRejectedError
from sitemapcrawl.jobs.generate import GenerateOptions, generate
from sitemapcrawl.model.cells import encode
from sitemapcrawl.model.webpage import BATCH_TABLE, FetchStatus, WebPage, batch_cell
from sitemapcrawl.storage import dueindex
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import PageRange, Robots, RobotsGroup, Site, TestWebServer, Web
from sitemapcrawl.web import rowkeys
from sitemapcrawl.web.http import PoliteHttpClient
from sitemapcrawl.web.rules import UrlRules

ROBOTS = Route(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")


def sitemap_of(*paths: str, port: int) -> bytes:
    entries = "".join(f"<url><loc>http://127.0.0.1:{port}{p}</loc></url>" for p in paths)
    return f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'.encode()


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    server = HostileServer({"/robots.txt": ROBOTS}).start()
    server.routes.update({
        "/ok": Route(), "/drip": Route("drip", body=b"x" * 200, interval=0.5),
        "/drip-head": Route("drip_head", interval=0.5), "/stall": Route("stall"), "/endless": Route("endless"),
        "/broken": Route("broken"), "/escape": Route("escape"), "/reset": Route("reset"),
        "/drip-sitemap.xml": Route("drip", body=sitemap_of("/ok", port=server.port), interval=0.3,
                                   content_type="application/xml"),
    })
    yield server
    server.stop()


@pytest.fixture
def fetch_settings(settings: Settings) -> Settings:
    return dataclasses.replace(settings, user_agent=AGENT, delay=0.0, http_deadline=1.5, http_read_timeout=5.0,
                               fetch_retry_interval=60, max_fetch_retries=3)


def add_due(store: Store, *page_urls: str) -> None:
    add_rows(store, *(due(u, depth=1) for u in page_urls))


def make_batch(store: Store, settings: Settings, batch_id: str) -> int:
    return generate(store, UrlRules.from_settings(settings), GenerateOptions(batch_id=batch_id)).selected


cli = functools.partial(cli_helpers.cli, user_agent=AGENT)  # every command here as this crawler


# ------------------------------------------------------------ deadlines ---


@pytest.mark.parametrize("path", ["/drip", "/drip-head", "/stall"])
def test_a_drip_or_a_stall_ends_at_the_deadline(hostile: HostileServer, path: str) -> None:
    client = PoliteHttpClient(AGENT, delay=0, read_timeout=5.0, deadline=1.5)
    started = time.monotonic()
    response = client.get(hostile.url(path))
    took = time.monotonic() - started
    client.close()
    assert response.status is None and response.error == "no complete answer within the deadline of 1.5 s"
    assert 1.4 < took < 4.0


def test_endless_broken_reset_and_escaping_answers(hostile: HostileServer) -> None:
    client = PoliteHttpClient(AGENT, delay=0, deadline=5.0, max_bytes=200_000)
    endless = client.get(hostile.url("/endless"))
    assert endless.status == 200 and endless.truncated and len(endless.body) == 200_000
    assert client.get(hostile.url("/broken")).error is not None
    assert client.get(hostile.url("/reset")).error is not None
    escape = client.get(hostile.url("/escape"))
    assert escape.status == 200 and "\x1b]0;" in escape.headers["content-type"]  # stored as sent...
    assert client.get(hostile.url("/ok")).status == 200  # the pool survives all of it
    client.close()


def test_get_into_writes_the_body_to_the_sink_emptied_first_and_capped(hostile: HostileServer, tmp_path) -> None:  # type: ignore[no-untyped-def]
    client = PoliteHttpClient(AGENT, delay=0, deadline=5.0, max_bytes=200_000)
    with open(tmp_path / "body", "w+b") as sink:
        endless = client.get_into(hostile.url("/endless"), sink)
        assert endless.status == 200 and endless.truncated and endless.body == b""
        assert sink.tell() == 200_000
        ok = client.get_into(hostile.url("/ok"), sink)
        sink.seek(0)
        assert ok.status == 200 and not ok.truncated and sink.read() == Route().body
    client.close()


def test_fetch_retries_drips_and_readdb_escapes_what_servers_sent(hostile: HostileServer, store: Store,
                                                                  fetch_settings: Settings) -> None:
    pages = [hostile.url(p) for p in ("/ok", "/drip", "/drip-head", "/stall", "/broken", "/escape")]
    add_due(store, *pages)
    make_batch(store, fetch_settings, "hb")
    counts = run_fetch(store, fetch_settings, "hb", connections=8)
    assert counts.done == len(pages) and not counts.stopped
    for path in ("/drip", "/drip-head", "/stall"):
        row = read(store, hostile.url(path))
        assert row.status is FetchStatus.RETRY and row.retries == 1
        assert row.error == "no complete answer within the deadline of 1.5 s"
    assert read(store, hostile.url("/ok")).status is FetchStatus.FETCHED
    assert read(store, hostile.url("/broken")).status is FetchStatus.RETRY

    shown = cli(fetch_settings, "readdb", hostile.url("/escape"))
    assert shown.exit_code == 0, shown.output
    assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout
    assert "text/html\\x1b]0;pwned\\x07\\x1b[2J" in shown.stdout
    as_json = cli(fetch_settings, "readdb", hostile.url("/escape"), "--json")
    assert "\x1b" not in as_json.stdout and "\\u001b]0;pwned" in as_json.stdout


def test_an_unexpected_error_on_one_url_is_its_recorded_failure_and_the_fetch_goes_on(
        hostile: HostileServer, store: Store, fetch_settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 47, item 2's class: an error no code expected (there, an OverflowError from one header) in one
    # URL's fetch hung the whole fetch. It must end that URL's attempt as a failure on its row, no more.
    from sitemapcrawl.fetcher import engine

    real = engine.outcome_row

    def outcome_row(item: object, response: object, *args: object) -> object:
        if getattr(item, "url", "").endswith("/escape"):
            raise OverflowError("date value out of range")
        return real(item, response, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "outcome_row", outcome_row)
    pages = [hostile.url(p) for p in ("/ok", "/escape", "/broken")]
    add_due(store, *pages)
    make_batch(store, fetch_settings, "hu")
    counts = run_fetch(store, fetch_settings, "hu")
    assert counts.done == len(pages) and not counts.stopped and counts.left == 0
    failed = read(store, hostile.url("/escape"))
    assert failed.status is FetchStatus.RETRY and failed.retries == 1
    assert failed.error == "unexpected error: OverflowError"
    assert read(store, hostile.url("/ok")).status is FetchStatus.FETCHED


def test_time_limit_abandons_requests_in_flight(hostile: HostileServer, store: Store,
                                                fetch_settings: Settings) -> None:
    settings = dataclasses.replace(fetch_settings, http_deadline=60.0)
    stalls = [hostile.url(f"/stall?{i}") for i in range(3)]
    hostile.routes.update({f"/stall?{i}": Route("stall") for i in range(3)})
    add_due(store, hostile.url("/ok"), *stalls)
    make_batch(store, settings, "tl")
    started = time.monotonic()
    counts = run_fetch(store, settings, "tl", connections=4, threads_per_host=4, time_limit=1.0)
    took = time.monotonic() - started
    assert counts.stopped == "time limit of 1 s"
    assert took < 1.0 + 2.0 + 3.0  # the limit, ABANDON_AFTER, slack for a loaded machine; not the 60 s deadline
    assert read(store, hostile.url("/ok")).fetch_mark == "tl"
    for url in stalls:  # abandoned: untouched, still in the batch, still due
        row = read(store, url)
        assert row.fetch_mark is None and row.status is FetchStatus.UNFETCHED and row.generate_mark == "tl"


def test_a_dripping_robots_txt_ends_at_the_deadline(hostile: HostileServer, store: Store,
                                                    fetch_settings: Settings) -> None:
    hostile.routes["/robots.txt"] = Route("drip", body=b"User-agent: *\nAllow: /\n", interval=0.5)
    add_due(store, hostile.url("/ok"))
    make_batch(store, fetch_settings, "rb")
    started = time.monotonic()
    counts = run_fetch(store, fetch_settings, "rb")
    assert time.monotonic() - started < 10
    row = read(store, hostile.url("/ok"))
    assert counts.done == 1 and row.status is FetchStatus.DEFERRED and "robots.txt" in (row.error or "")


def test_sitemap_parse_and_tree_end_at_the_deadline(hostile: HostileServer) -> None:
    env = {"SITEMAPCRAWL_HTTP_DEADLINE": "1.5"}
    url = hostile.url("/drip-sitemap.xml")
    parsed = runner.invoke(app, ["--user-agent", AGENT, "sitemap", "parse", url], env=env)
    assert parsed.exit_code == 1
    assert parsed.stderr.strip() == (f"sitemapcrawl: error: {url}: no complete answer within the deadline "
                                     "of 1.5 s")
    tree = runner.invoke(app, ["--user-agent", AGENT, "sitemap", "tree", url], env=env)
    assert tree.exit_code != 0 and "Traceback" not in tree.output
    assert "deadline" in tree.output


# ------------------------------------------------------ one worker per share ---


def small_web() -> Web:
    pages = PageRange("/p/", 12, links=False)
    return Web((Site("127.0.0.2", "one", (), ranges=(pages,),
                     robots=Robots(groups=(RobotsGroup(("*",), disallow=()),))),), "lease-test")


@pytest.fixture
def site(make_testweb) -> TestWebServer:  # type: ignore[no-untyped-def]
    return make_testweb(small_web())


@pytest.fixture
def cli_env(fetch_settings: Settings) -> dict[str, str]:
    return dict(os.environ, SITEMAPCRAWL_HBASE=fetch_settings.hbase,
                SITEMAPCRAWL_TABLE_PREFIX=fetch_settings.table_prefix, SITEMAPCRAWL_USER_AGENT=AGENT)


def test_two_workers_on_one_share_fetch_each_url_once(site: TestWebServer, store: Store,
                                                       fetch_settings: Settings, cli_env: dict[str, str]) -> None:
    pages = [site.url("127.0.0.2", f"/p/{i}.html") for i in range(12)]
    add_due(store, *pages)
    make_batch(store, fetch_settings, "two")
    # 12 URLs 0.5 s apart: the first worker is still at work long after the second has started.
    command = [sys.executable, "-m", "sitemapcrawl", "fetch", "--batch", "two", "--delay", "0.5"]
    first = subprocess.Popen(command, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second = subprocess.Popen(command, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = [(p.wait(timeout=120), p.communicate()[1]) for p in (first, second)]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 1], results
    loser = next(err for code, err in results if code == 1)
    (line,) = loser.strip().splitlines()
    assert line.startswith("sitemapcrawl: error: batch two fetch.0/1 is held by worker ")
    assert line.endswith("; rerun with --wait to take it over when that lease expires")
    fetched = sorted(r.url for r in site.log.records() if r.target != "/robots.txt")
    assert fetched == sorted(pages)  # each exactly once
    assert all(read(store, u).fetch_mark == "two" for u in pages)


def test_wait_takes_over_an_expired_lease_and_a_dead_holder_at_once(
        site: TestWebServer, store: Store, fetch_settings: Settings, cli_env: dict[str, str]) -> None:
    pages = [site.url("127.0.0.2", f"/p/{i}.html") for i in range(4)]
    add_due(store, *pages)
    make_batch(store, fetch_settings, "w")
    column = batch_cell("l", "fetch.0/1")
    until = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=10)
    store.write(BATCH_TABLE, [(b"w", {column: Holder("elsewhere:77:abc", until).text()})])
    command = [sys.executable, "-m", "sitemapcrawl", "fetch", "--batch", "w", "--delay", "0"]

    refused = subprocess.run(command, env=cli_env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1
    assert "batch w fetch.0/1 is held by worker elsewhere:77:abc (host elsewhere, pid 77)" in refused.stderr
    assert "lease refreshed until " in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert len(site.log) == 0

    waited = subprocess.run([*command, "--wait"], env=cli_env, capture_output=True, text=True, timeout=60)
    assert waited.returncode == 0, waited.stderr
    assert "waiting" in waited.stderr
    assert datetime.now(UTC) >= until
    assert all(read(store, u).fetch_mark == "w" for u in pages)
    released = Holder.parse((store.row(BATCH_TABLE, b"w", [column]) or {}).get(column))
    assert released is not None and released.until <= datetime.now(UTC)

    # A holder on this machine whose process is gone is taken over without waiting.
    add_due(store, site.url("127.0.0.2", "/p/5.html"))
    make_batch(store, fetch_settings, "dead")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    far = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)
    store.write(BATCH_TABLE, [(b"dead", {column: Holder(f"{socket.gethostname()}:{gone}:x", far).text()})])
    taken = subprocess.run([sys.executable, "-m", "sitemapcrawl", "fetch", "--batch", "dead"], env=cli_env,
                           capture_output=True, text=True, timeout=60)
    assert taken.returncode == 0, taken.stderr
    assert "took over from worker" in taken.stderr


def test_check_and_put_lets_exactly_one_of_many_win(store: Store) -> None:
    column = batch_cell("l", "parse")
    wins = [store.check_and_put(BATCH_TABLE, b"race", column, None, f"w{i}".encode()) for i in range(5)]
    assert wins == [True, False, False, False, False]
    assert store.check_and_put(BATCH_TABLE, b"race", column, b"w0", b"w9")
    assert not store.check_and_put(BATCH_TABLE, b"race", column, b"w0", b"w8")


# --------------------------------------------------------- HBase errors ---


def test_permanent_hbase_errors_fail_at_once_with_one_line(settings: Settings, store: Store) -> None:
    bad_prefix = runner.invoke(app, ["--hbase", settings.hbase, "--table-prefix", "bad name!", "readdb",
                                     "--stats"])
    assert bad_prefix.exit_code == 2
    assert bad_prefix.stderr.startswith("sitemapcrawl: error: table prefix 'bad name!': an HBase table name")
    assert len(bad_prefix.stderr.strip().splitlines()) == 1

    long_url = "http://example.com/" + "a" * 100_000
    too_long = cli(settings, "readdb", long_url)
    assert too_long.exit_code == 2, too_long.output
    (line,) = too_long.stderr.strip().splitlines()
    assert "over HBase's limit of 32,767 bytes" in line and len(line) < 300

    missing_ns = runner.invoke(app, ["--hbase", settings.hbase, "--table-prefix", "nosuchns:x_", "readdb",
                                     "--stats"])
    assert missing_ns.exit_code == 2
    (line,) = missing_ns.stderr.strip().splitlines()
    assert "missing in HBase" in line and "Traceback" not in missing_ns.output

    # What the server itself refuses (no client-side check in the way) is not retried either.
    before = store.retries
    with pytest.raises(StoreRejectedError, match="could not process the request"):
        store._call("read", lambda c: c.table(b"bad name!").row(b"r"))
    assert store.retries == before


# -------------------------------------------------------------- batches ---


def test_batches_lists_warns_resumes_and_releases(site: TestWebServer, store: Store,
                                                  fetch_settings: Settings) -> None:
    pages = [site.url("127.0.0.2", f"/p/{i}.html") for i in range(7)]
    now = datetime.now(UTC).replace(microsecond=0)
    old = now - timedelta(days=10)
    rows = [WebPage(u, status=FetchStatus.UNFETCHED, next_fetch=old - timedelta(hours=1), score=1.0, depth=1,
                    radius=0) for u in pages[:3]]
    dueindex.write_pages(store, [(rowkeys.row_key(r.url).encode(), encode(r)) for r in rows])
    rules = UrlRules.from_settings(fetch_settings)
    assert generate(store, rules, GenerateOptions(batch_id="old"), clock=lambda: old).selected == 3
    add_due(store, *pages[3:6])
    assert make_batch(store, fetch_settings, "fresh") == 3

    listed = cli(fetch_settings, "batches")
    assert listed.exit_code == 0, listed.output
    lines = listed.stdout.strip().splitlines()
    assert [line.split("\t")[:2] for line in lines] == [["old", "fetching (0 of 1 fetch splits done)"],
                                                       ["fresh", "fetching (0 of 1 fetch splits done)"]]
    assert "finish one with --resume ID" in listed.stderr

    add_due(store, pages[6])
    generated = cli(fetch_settings, "generate")
    assert generated.exit_code == 0, generated.output
    assert "3 due rows are held by unfinished batch fresh" in generated.stderr
    assert "`sitemapcrawl batches --resume old` finishes it" in generated.stderr
    newest = generated.stdout.strip()

    resumed = cli(fetch_settings, "batches", "--resume", "fresh")
    assert resumed.exit_code == 0, resumed.output
    assert all(read(store, u).fetch_mark == "fresh" for u in pages[3:6])
    assert [line.split("\t")[0] for line in cli(fetch_settings, "batches").stdout.splitlines()] == ["old", newest]

    crawled = cli(fetch_settings, "crawl", "--rounds", "1", "--delay", "0")
    assert crawled.exit_code == 0, crawled.output
    assert (f"crawl: batch old: released, 3 rows freed: generated {old.strftime('%Y-%m-%dT%H:%M:%SZ')}, "
            "longer ago than batch_max_age (604800 s), so it will not be finished") in crawled.stderr
    assert f"crawl: batch {newest}: resuming, left unfinished by an earlier run (fetching (0 of 1" in crawled.stderr
    assert read(store, pages[6]).fetch_mark == newest
    assert all(read(store, u).status is FetchStatus.FETCHED for u in pages)  # the released rows, in a new batch
    assert cli(fetch_settings, "batches").stdout == ""

    unknown = cli(fetch_settings, "batches", "--release", "nosuch")
    assert unknown.exit_code == 2
    assert unknown.stderr.strip() == ("sitemapcrawl: error: batch 'nosuch' is not in the batch registry; "
                                      "`sitemapcrawl batches` lists them")


# ---------------------------------------------------------------- seeds ---


def test_inject_refuses_bad_seeds_by_line_and_keeps_the_rest(settings: Settings, store: Store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes(b"http://example.com/a\n"
                      b"http://example.com/caf\xe9\n"
                      b"http://example.com/b\tscore=nan\n"
                      b"http://example.com/c\tscore=inf\n"
                      b"http://example.com/" + b"\x1b]0;x\x07" + b"z" * 100_000 + b"\tscore=oops\n"
                      b"http://example.com/d\tscore=2\n")
    for source, given in ((str(seeds), None), ("-", seeds.read_bytes())):
        done = runner.invoke(app, ["--hbase", settings.hbase, "--table-prefix", settings.table_prefix, "inject",
                                   source], input=given)
        assert done.exit_code == 0, done.output
        lines = done.stderr.splitlines()
        assert lines[0] == ("line 2: not UTF-8: byte 0xe9 at column 23 is not UTF-8; the line is refused, "
                            "not guessed at")
        assert lines[1] == "line 3: bad metadata: score='nan' is not a finite number"
        assert lines[2] == "line 4: bad metadata: score='inf' is not a finite number"
        assert lines[3].startswith("line 5: ") and len(lines[3]) < 400 and "\x1b" not in lines[3]
        assert "inject: read 6, injected" in lines[-1] and "rejected 4" in lines[-1]
    for url in ("http://example.com/a", "http://example.com/d"):
        assert read(store, url).status is FetchStatus.UNFETCHED
    assert read(store, "http://example.com/caf%C3%A9").status is None  # never guessed into another URL
