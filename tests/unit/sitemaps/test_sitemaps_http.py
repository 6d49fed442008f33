"""The polite HTTP client on loopback: bodies, caps, redirects, errors, pacing, gzip labels."""

from __future__ import annotations

import gzip
import time

import pytest
from hbase_fixtures import free_port
from sitemap_testing import Reply, corpus, locs, serve

from sitemapcrawl.config import Settings
from sitemapcrawl.errors import UsageError
from sitemapcrawl.sitemaps import parse_sitemap
from sitemapcrawl.web.http import PoliteHttpClient

UA = "sitemapcrawl-tests/1.0 (+http://127.0.0.1/)"


def client(**kwargs) -> PoliteHttpClient:
    return PoliteHttpClient(UA, **{"delay": 0.0, **kwargs})


def test_get_returns_body_status_and_lower_case_headers():
    with serve({"/a": Reply(b"hello", headers={"X-Thing": "yes"})}) as web:
        response = client().get(web.base + "/a")
    assert (response.status, response.body, response.error) == (200, b"hello", None)
    assert response.headers["x-thing"] == "yes"
    assert response.url == web.base + "/a"
    assert not response.truncated
    assert web.headers[0]["user-agent"] == UA


def test_body_is_cut_at_max_bytes():
    with serve({"/big": Reply(b"x" * 100_000)}) as web:
        response = client().get(web.base + "/big", max_bytes=1000)
    assert response.truncated
    assert response.body == b"x" * 1000


def test_redirects_are_followed_and_recorded():
    routes = {
        "/old": Reply(status=301, headers={"Location": "/older"}),
        "/older": Reply(status=302, headers={"Location": "/new"}),
        "/new": Reply(b"here"),
    }
    with serve(routes) as web:
        response = client().get(web.base + "/old")
    assert response.body == b"here"
    assert response.url == web.base + "/new"
    assert response.redirects == (web.base + "/old", web.base + "/older")


def test_redirect_loop_is_an_error_value():
    with serve({"/loop": Reply(status=302, headers={"Location": "/loop"})}) as web:
        response = client(max_redirects=3).get(web.base + "/loop")
    assert response.status is None
    assert "redirects" in (response.error or "")


def test_connection_refused_is_an_error_value():
    response = client().get(f"http://127.0.0.1:{free_port()}/")
    assert response.status is None
    assert response.error


def test_http_error_status_is_returned_not_raised():
    with serve({}) as web:
        response = client().get(web.base + "/missing")
    assert response.status == 404
    assert response.error is None


def test_requests_to_one_host_are_spaced_by_the_delay():
    with serve({"/a": Reply(b"1"), "/b": Reply(b"2")}) as web:
        polite = client(delay=0.3)
        started = time.monotonic()
        polite.get(web.base + "/a")
        polite.get(web.base + "/b")
        elapsed = time.monotonic() - started
    assert elapsed >= 0.3


def test_user_agent_is_required():
    with pytest.raises(UsageError):
        PoliteHttpClient("  ")
    with pytest.raises(UsageError, match="SITEMAPCRAWL_USER_AGENT"):
        PoliteHttpClient.from_settings(Settings())


@pytest.mark.parametrize(
    "body, headers",
    [
        (gzip.compress(corpus("urlset_nons.xml")), {"Content-Type": "application/x-gzip"}),
        (gzip.compress(corpus("urlset_nons.xml")), {"Content-Type": "text/html"}),
        (gzip.compress(corpus("urlset_nons.xml")), {"Content-Encoding": "gzip"}),
        (gzip.compress(gzip.compress(corpus("urlset_nons.xml"))), {"Content-Encoding": "gzip"}),
        (corpus("urlset_nons.xml"), {"Content-Type": "application/x-gzip"}),
    ],
    ids=["gzip-file", "gzip-mislabelled", "content-encoding", "both", "gz-name-plain"],
)
def test_gzip_sitemap_reads_whatever_the_server_says(body, headers):
    with serve({"/sitemap.xml.gz": Reply(body, headers=headers)}) as web:
        response = client().get(web.base + "/sitemap.xml.gz")
    document = parse_sitemap(response.body, "http://www.example.com/sitemap.xml.gz")
    assert locs(list(document)) == [
        "http://www.example.com/plain-a",
        "http://www.example.com/plain-b",
    ]
