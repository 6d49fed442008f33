"""`serve`: the live monitoring page in headless Chromium while a crawl runs in another process;
the JSON endpoints, refusals (400, 404, 405), no secrets, and a clean stop on Ctrl-C."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from chromium import Chromium
from cli_helpers import cli_command
from quality_web import URL_LIMIT, quality_web, sitemap_urls

from sitemapcrawl.config import Settings
from sitemapcrawl.report.panels import PANELS
from sitemapcrawl.report.serve import ServeOptions, make_server, server_url
from sitemapcrawl.storage.store import Store

SECRET = "s3cr3t-agent-token"


def get(url: str, method: str = "GET") -> tuple[int, str, str]:
    """(status, content type, body) of one request; HTTP errors are answers too."""
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - loopback only
            return answer.status, answer.headers.get("content-type", ""), answer.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("content-type", ""), error.read().decode("utf-8")


@pytest.fixture
def monitor(settings: Settings) -> Iterator[str]:
    """`serve` on a free loopback port, refreshing every second, in a thread of this process."""
    with Store(dataclasses.replace(settings, user_agent=SECRET)) as store:
        server = make_server(store, ServeOptions(port=0, refresh=1.0))
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        thread.start()
        try:
            yield server_url(server)
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=30)


def test_the_page_follows_a_crawl_in_another_process(store: Store, settings: Settings, monitor: str,
                                                      make_testweb, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = make_testweb(quality_web())
    sm = sitemap_urls(server)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{url}\tsitemap=true\n" for url in sm.values()))
    env = dict(os.environ, SITEMAPCRAWL_MAX_SITEMAP_URLS=str(URL_LIMIT), SITEMAPCRAWL_USER_AGENT=SECRET)
    log = (tmp_path / "crawl.log").open("w")
    crawler: subprocess.Popen[bytes] | None = None
    try:
        with Chromium(tmp_path) as browser:
            # The page is open before the crawl starts (opening it after raced the crawl's first round).
            tab = browser.open(monitor + "?refresh=1")
            first_rows = int(tab.evaluate("document.querySelector('#totals .card b').textContent"))
            crawler = subprocess.Popen(cli_command(settings, "crawl", str(seeds), "--mode", "sitemap-only",
                                                   "--rounds", "2", "--delay", "0.1"),
                                       env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            deadline = time.monotonic() + 120
            while "blacklisted" not in tab.evaluate("document.getElementById('sitemaps').innerText"):
                assert time.monotonic() < deadline, "the page never showed the crawl's end"
                assert crawler.poll() in (None, 0), (tmp_path / "crawl.log").read_text()
                time.sleep(0.5)
            assert crawler.wait(timeout=120) == 0, (tmp_path / "crawl.log").read_text()
            # Refreshes after the crawl ended show the final table in every panel.
            while "54\nrows" not in (shown := tab.text()) or "crawl delay" not in shown:
                assert time.monotonic() < deadline, shown
                time.sleep(0.5)
            status = tab.evaluate("document.getElementById('live-status').textContent")
            tab.screenshot(tmp_path / "serve.png")
            assert tab.console_errors() == []
        assert first_rows == 0, first_rows
        assert status.startswith("live: updated"), status
        assert "54\nrows" in shown and "crawl delay 0.01s" in shown
        for url in sm.values():
            assert url in shown
        assert (tmp_path / "serve.png").stat().st_size > 10_000

        # One JSON endpoint per panel, with the same facts.
        code, kind, body = get(monitor + "api")
        assert code == 200 and kind.startswith("application/json")
        assert json.loads(body) == {"panels": [f"/api/{name}" for name in PANELS]}
        answers = {}
        for name in PANELS:
            code, kind, body = get(f"{monitor}api/{name}")
            assert code == 200 and kind.startswith("application/json"), (name, body)
            answers[name] = json.loads(body)
        assert answers["totals"]["rows"] == 54 and answers["totals"]["sitemaps"] == 4
        worst = answers["sitemaps"]["sitemaps"][0]
        assert worst["url"] == sm["broken"] and worst["state"] == "blacklisted" and worst["signals"]["fetch"] < 0.2
        code, _, body = get(f"{monitor}api/sitemaps?state=demoted&limit=1")
        assert code == 200 and json.loads(body)["count"] == 2 and len(json.loads(body)["sitemaps"]) == 1
        bodies = [body for _, _, body in (get(monitor), get(monitor + "fragment/hosts"))]
        bodies += [json.dumps(answer) for answer in answers.values()]
        for text in bodies:
            assert SECRET not in text and settings.hbase not in text and settings.table_prefix not in text
    finally:
        if crawler is not None and crawler.poll() is None:
            crawler.kill()
            crawler.wait(timeout=30)
        log.close()


@pytest.mark.parametrize(("path", "code", "words"), [
    ("api/sitemaps?limit=abc", 400, "limit must be a whole number"),
    ("api/sitemaps?limit=0", 400, "limit must be a whole number"),
    ("api/sitemaps?limit=" + "9" * 4_301, 400, "limit must be a whole number"),
    ("api/sitemaps?state=great", 400, "state must be one of"),
    ("api/hosts?state=ok", 400, "unknown parameter 'state'"),
    ("api/totals?x=1", 400, "unknown parameter 'x'"),
    ("api/sitemaps?limit=1&limit=2", 400, "given 2 times"),
    ("?refresh=0.1", 400, "refresh must be from 1"),
    ("?refresh=soon", 400, "refresh must be a number"),
    ("fragment/sitemaps?limit=-1", 400, "limit must be a whole number"),
    ("api/nothing", 404, "no such page"),
    ("secrets", 404, "no such page"),
])
def test_bad_requests_get_a_status_and_a_message(monitor: str, path: str, code: int, words: str) -> None:
    # Refused before any table is read: no tables needed.
    status, kind, body = get(monitor + path)
    assert status == code and words in body, (status, body)
    if path.startswith("api"):
        assert kind.startswith("application/json") and words in json.loads(body)["error"]


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "HEAD"])
def test_only_get_is_served(monitor: str, method: str) -> None:
    status, _, _ = get(monitor + "api/totals", method=method)
    assert status == 405


def test_serve_binds_loopback_by_default_and_stops_cleanly_on_ctrl_c(store: Store, settings: Settings) -> None:
    assert ServeOptions().bind == "127.0.0.1"
    process = subprocess.Popen(cli_command(settings, "serve", "--port", "0"), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert line.startswith("serve: http://127.0.0.1:"), line
        url = line.split()[1]
        code, _, body = get(url + "api/totals")
        assert code == 200 and json.loads(body)["rows"] == 0
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)
    assert process.returncode == 0 and out == "" and "serve: stopped" in err and "Traceback" not in err
    refused = subprocess.run(cli_command(settings, "serve", "--refresh", "0"), capture_output=True, text=True,
                             timeout=60, stdin=subprocess.DEVNULL)
    assert refused.returncode == 2 and "--refresh" in refused.stderr


def handler_threads() -> int:
    """Threads of this process handling a request of a `serve` server (socketserver names them so)."""
    return sum(1 for thread in threading.enumerate() if "process_request_thread" in thread.name)


def test_half_sent_requests_hold_no_thread_for_ever(settings: Settings) -> None:
    # Issue 47, item 8: 190 half-sent requests each held a thread for ever. Now each has request_timeout
    # seconds to send its request, whatever it trickles, and at most max_handlers are handled at once.
    import socket

    options = ServeOptions(port=0, refresh=1.0, request_timeout=2.0, max_handlers=8)
    with Store(settings) as store:
        server = make_server(store, options)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        thread.start()
        host, port = server.server_address[0], server.server_port
        clients: list[socket.socket] = []
        try:
            for _ in range(190):
                client = socket.create_connection((str(host), port), timeout=30)
                client.sendall(b"GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # no blank line: never finished
                clients.append(client)
            assert handler_threads() <= options.max_handlers
            # Every one of them is closed by the server (EOF, or a 503 first for those beyond the threads).
            busy = 0
            for client in clients:
                answer = b""
                while chunk := client.recv(4096):  # blocks until the server closes it; the timeout bounds it
                    answer += chunk
                assert answer == b"" or answer.startswith(b"HTTP/1.0 503 Service Unavailable"), answer[:80]
                busy += answer != b""
            assert busy  # those beyond the threads were answered at once
            deadline = time.monotonic() + 30
            while handler_threads() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert handler_threads() == 0
            # A request trickled a byte at a time, faster than any read times out, is closed at the deadline.
            dripping = socket.create_connection((str(host), port), timeout=30)
            clients.append(dripping)
            with pytest.raises(OSError):
                for byte in b"GET /api HTTP/1.1\r\nX-Slow: " + b"a" * 400:
                    dripping.sendall(bytes([byte]))
                    time.sleep(0.05)
            code, _, body = get(server_url(server) + "api")
            assert code == 200 and "/api/totals" in body
        finally:
            for client in clients:
                client.close()
            server.shutdown()
            server.server_close()
            thread.join(timeout=30)
