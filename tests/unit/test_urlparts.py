"""The URL facts every floor shares: default ports, a URL's (scheme, host, port), `host:port` text."""

from __future__ import annotations

import pytest

from sitemapcrawl.config import Settings
from sitemapcrawl.sitemaps.scope import vouch_host
from sitemapcrawl.storage.gateways import Gateway
from sitemapcrawl.urlparts import DEFAULT_PORTS, HTTP_SCHEMES, credentials_hidden, host_port, origin_parts, port_of
from sitemapcrawl.web.urls import canonicalize


def test_the_schemes_crawled_and_their_default_ports() -> None:
    assert dict(DEFAULT_PORTS) == {"http": 80, "https": 443}
    assert HTTP_SCHEMES == ("http", "https")
    assert Settings().allowed_schemes == HTTP_SCHEMES
    with pytest.raises(TypeError):
        DEFAULT_PORTS["ftp"] = 21  # type: ignore[index]  # one copy, read-only


def test_the_default_port_is_the_same_fact_for_the_engine_and_the_web_side() -> None:
    for scheme, port in DEFAULT_PORTS.items():
        assert canonicalize(f"{scheme}://Example.com:{port}/a") == f"{scheme}://example.com/a"
        assert vouch_host(f"{scheme}://Example.com:{port}/a") == "example.com"
    assert canonicalize("http://example.com:443/") == "http://example.com:443/"
    assert vouch_host("http://example.com:443/") == "example.com:443"


@pytest.mark.parametrize(("url", "port"), [
    ("http://example.com/", 80),
    ("https://example.com/", 443),
    ("HTTPS://example.com/", 443),
    ("http://example.com:8080/", 8080),
    ("http://[::1]:8700", 8700),
    ("ftp://example.com/", None),
    ("ftp://example.com:2121/", 2121),
])
def test_port_of_is_the_port_asked_on(url: str, port: int | None) -> None:
    assert port_of(url) == port


def test_port_of_refuses_a_bad_port() -> None:
    with pytest.raises(ValueError):
        port_of("http://example.com:99999/")


@pytest.mark.parametrize(("url", "parts"), [
    ("HTTP://WWW.Example.com/x", ("http", "www.example.com", 80)),
    ("  https://example.com:443/  ", ("https", "example.com", 443)),
    ("https://user:pw@example.com:8443/a?b#c", ("https", "example.com", 8443)),
    ("http://[2001:DB8::1]:8080/", ("http", "2001:db8::1", 8080)),
    ("http://127.0.0.2:8700/", ("http", "127.0.0.2", 8700)),
    ("ftp://example.com/", None),
    ("mailto:someone@example.com", None),
    ("/relative/path", None),
    ("http:///no-host", None),
    ("http://exa mple.com/", None),
    ("http://example.com:bad/", None),
    ("http://example.com:99999/", None),
    ("http://[::1/", None),
])
def test_origin_parts(url: str, parts: tuple[str, str, int] | None) -> None:
    assert origin_parts(url) == parts


@pytest.mark.parametrize(("host", "port", "text"), [
    ("example.com", None, "example.com"),
    ("example.com", 8080, "example.com:8080"),
    ("127.0.0.1", 9090, "127.0.0.1:9090"),
    ("::1", 9090, "[::1]:9090"),
    ("2001:db8::1", None, "[2001:db8::1]"),
])
def test_host_port_brackets_ipv6(host: str, port: int | None, text: str) -> None:
    assert host_port(host, port) == text


def test_a_gateway_address_is_written_as_the_setting_writes_it() -> None:
    assert Gateway("::1", 9090).address == "[::1]:9090"
    assert Gateway("127.0.0.1", 9090).address == Settings().hbase


def test_credentials_hidden_covers_a_password_a_lone_user_name_and_the_query() -> None:
    assert credentials_hidden("http://u:secret@proxy:3128", "X") == "http://u:X@proxy:3128"
    assert credentials_hidden("http://APIKEY@proxy:8080/", "X") == "http://X@proxy:8080/"
    assert credentials_hidden("http://proxy:8080/?token=abc&b=1", "X") == "http://proxy:8080/?X"
    assert credentials_hidden("https://proxy.example:443", "X") == "https://proxy.example:443"
