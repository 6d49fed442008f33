"""The latency web: many sites from one event loop, every answer late, keep-alive, 304s, an access log."""

from __future__ import annotations

import http.client
import time

from sitemapcrawl.testweb.generate import bulk_web
from sitemapcrawl.testweb.latency import LatencyWebServer


def test_every_site_answers_late_on_its_own_address_and_keeps_the_connection() -> None:
    web = bulk_web(3, 2, links=False, first_host="127.4.0.1", crawl_delay=1.5)
    with LatencyWebServer(web, latency=0.2) as server:
        assert server.base_urls()[0] == f"http://127.4.0.1:{server.port}/"
        connection = http.client.HTTPConnection("127.4.0.2", server.port, timeout=10)
        connection.request("GET", "/robots.txt")
        robots = connection.getresponse()
        body = robots.read().decode()
        assert robots.status == 200 and "Crawl-delay: 1.5" in body and "Sitemap: /sitemap.xml" in body
        connection.request("GET", "/p/1.html")  # the same connection: kept alive
        page = connection.getresponse()
        etag = page.getheader("ETag")
        assert page.status == 200 and b"Host 1 page" in page.read() and etag
        connection.request("GET", "/p/1.html", headers={"If-None-Match": etag})
        again = connection.getresponse()
        assert again.status == 304 and again.read() == b""
        connection.request("GET", "/nothing")
        missing = connection.getresponse()
        assert missing.status == 404
        missing.read()
        connection.close()
        time.sleep(0.05)
        records = server.log.records()
        assert [(r.host, r.target, r.status) for r in records] == [
            ("127.4.0.2", "/robots.txt", 200), ("127.4.0.2", "/p/1.html", 200), ("127.4.0.2", "/p/1.html", 304),
            ("127.4.0.2", "/nothing", 404)]
        assert all(r.end - r.start >= 0.19 for r in records)  # each answer waited its latency


def test_a_client_that_goes_away_before_the_answer_is_logged_without_one() -> None:
    with LatencyWebServer(bulk_web(1, 1, links=False, first_host="127.4.1.1"), latency=0.5) as server:
        connection = http.client.HTTPConnection("127.4.1.1", server.port, timeout=10)
        connection.request("GET", "/p/0.html")
        connection.close()  # before the answer
        deadline = time.monotonic() + 5
        while not server.log.records() and time.monotonic() < deadline:
            time.sleep(0.05)
        [record] = server.log.records()
        assert record.status == 0 and record.target == "/p/0.html"
