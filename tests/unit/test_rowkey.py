"""Row keys: the reversed-host form, its exact inverse, and how keys sort."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sitemapcrawl.errors import InvalidUrlError, SitemapCrawlError
from sitemapcrawl.web.rowkeys import (
    domain_row_prefixes,
    host_row_prefix,
    origin_row_prefix,
    row_key,
    url_from_row_key,
    url_prefix_to_row_prefix,
)
from sitemapcrawl.web.urls import CanonicalRules, canonicalize

CASES = [
    # (url, key)
    ("http://www.example.com:8080/a?b", "com.example.www:http:8080/a?b"),
    ("http://www.example.com/a", "com.example.www:http/a"),
    ("https://example.com/", "com.example:https/"),
    ("http://localhost/", "localhost:http/"),
    # IPv4: natural order, not reversed.
    ("http://127.0.0.2:8080/robots.txt", "127.0.0.2:http:8080/robots.txt"),
    ("http://10.1.2.3/", "10.1.2.3:http/"),
    # IPv6: bracketed, as is.
    ("http://[::1]:8080/x", "[::1]:http:8080/x"),
    ("https://[2001:db8::1]/a/b", "[2001:db8::1]:https/a/b"),
    # IDN hosts are stored as punycode (the canonical form).
    ("http://xn--bcher-kva.example/", "example.xn--bcher-kva:http/"),
    # Query strings, and colons in paths and queries.
    ("http://a.example/p?x=1&y=2", "example.a:http/p?x=1&y=2"),
    ("http://a.example/wiki/Special:Random", "example.a:http/wiki/Special:Random"),
    ("http://a.example/a:8080/b", "example.a:http/a:8080/b"),
    ("http://a.example/?t=12:30", "example.a:http/?t=12:30"),
    ("http://a.example:81/x:y?z=:", "example.a:http:81/x:y?z=:"),
    # A path that looks like a port, and a query on the root.
    ("https://a.b.c.example/:443/", "example.c.b.a:https/:443/"),
    ("http://a.example/?q", "example.a:http/?q"),
]


@pytest.mark.parametrize(("url", "key"), CASES)
def test_row_key_examples(url: str, key: str) -> None:
    assert row_key(url) == key
    assert url_from_row_key(key) == url


def test_ipv4_is_not_reversed_but_a_numeric_name_with_more_labels_is() -> None:
    assert row_key("http://1.2.3.4/") == "1.2.3.4:http/"
    assert row_key("http://1.2.3.4.example/") == "example.4.3.2.1:http/"
    assert url_from_row_key("example.4.3.2.1:http/") == "http://1.2.3.4.example/"


def test_explicit_port_is_kept_so_the_key_stays_reversible() -> None:
    # Canonical URLs never carry a default port; a port that is there is kept.
    assert row_key("http://a.example:80/") == "example.a:http:80/"
    assert url_from_row_key("example.a:http:80/") == "http://a.example:80/"
    assert row_key("http://a.example/") != row_key("http://a.example:80/")


def test_http_and_https_keys_differ_and_do_not_prefix_each_other() -> None:
    http = row_key("http://a.example/")
    https = row_key("https://a.example/")
    assert http == "example.a:http/"
    assert not https.startswith(http)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("/relative/path", "not an absolute URL"),
        ("example.com/a", "not an absolute URL"),
        ("http:///a", "no host"),
        ("http://user:pw@a.example/", "userinfo"),
        ("http://a.example", "path does not start with '/'"),
        ("http://a.example?x", "path does not start with '/'"),
        ("http://a.example:port/", "bad scheme, host or port"),
        ("1http://a.example/", "bad scheme, host or port"),
        ("http://[::1/", "bad scheme, host or port"),
        ("", "not an absolute URL"),
    ],
)
def test_unkeyable_urls_raise_with_a_reason(url: str, reason: str) -> None:
    with pytest.raises(InvalidUrlError, match=reason) as info:
        row_key(url)
    assert isinstance(info.value, SitemapCrawlError)
    assert repr(url) in str(info.value)


@pytest.mark.parametrize(
    "key",
    ["", "com.example", "com.example:http", "com.example:http:80", "com.example/a", ":http/",
     "com.example:http:x/", "[::1:http/", "a@b:http/"],
)
def test_malformed_keys_raise(key: str) -> None:
    with pytest.raises(InvalidUrlError, match="not a row key"):
        url_from_row_key(key)


# --- prefixes -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host_or_url", "prefix"),
    [
        ("www.example.com", "com.example.www:"),
        ("WWW.Example.COM.", "com.example.www:"),
        ("https://www.example.com:8443/a", "com.example.www:"),
        ("Bücher.example", "example.xn--bcher-kva:"),
        ("127.0.0.2", "127.0.0.2:"),
        ("http://127.0.0.2:8080/", "127.0.0.2:"),
        ("::1", "[::1]:"),
        ("[::1]", "[::1]:"),
        ("localhost", "localhost:"),
    ],
)
def test_host_row_prefix(host_or_url: str, prefix: str) -> None:
    assert host_row_prefix(host_or_url) == prefix


def test_host_row_prefix_matches_that_host_only() -> None:
    prefix = host_row_prefix("www.example.com")
    mine = ["http://www.example.com/", "https://www.example.com:8443/x", "http://www.example.com/:a"]
    others = ["http://a.www.example.com/", "http://www.example.com.au/", "http://example.com/",
              "http://www.example.community/", "http://xwww.example.com/"]
    assert all(row_key(url).startswith(prefix) for url in mine)
    assert not any(row_key(url).startswith(prefix) for url in others)


def test_host_row_prefix_honours_strip_www() -> None:
    assert host_row_prefix("www.example.com", CanonicalRules(strip_www=True)) == "com.example:"


@pytest.mark.parametrize("bad", ["", "example.com:8080", "a b", "[::1", "http:///x"])
def test_host_row_prefix_refuses_bad_hosts(bad: str) -> None:
    with pytest.raises(InvalidUrlError):
        host_row_prefix(bad)


def test_origin_row_prefix_is_per_scheme_host_and_port() -> None:
    assert origin_row_prefix("http://www.example.com/x?y") == "com.example.www:http/"
    assert origin_row_prefix("HTTP://www.example.com:80/") == "com.example.www:http/"
    assert origin_row_prefix("http://www.example.com:8080/") == "com.example.www:http:8080/"
    assert origin_row_prefix("https://[::1]:8443/") == "[::1]:https:8443/"
    http = origin_row_prefix("http://a.example/")
    assert not row_key("https://a.example/").startswith(http)
    assert not row_key("http://a.example:8080/").startswith(http)
    assert row_key("http://a.example/deep/page?q").startswith(http)


def test_domain_row_prefixes_cover_the_domain_and_its_subdomains() -> None:
    prefixes = domain_row_prefixes("example.com")
    assert prefixes == ("com.example:", "com.example.")
    inside = ["http://example.com/", "http://www.example.com/", "https://a.b.example.com:81/"]
    outside = ["http://example.community/", "http://notexample.com/", "http://example.com0/"]
    assert all(row_key(url).startswith(prefixes) for url in inside)
    assert not any(row_key(url).startswith(prefixes) for url in outside)
    assert domain_row_prefixes("http://127.0.0.1:8080/") == ("127.0.0.1:",)
    assert domain_row_prefixes("[::1]") == ("[::1]:",)


@pytest.mark.parametrize(
    ("url_prefix", "row_prefix"),
    [
        ("http://example.com/blog/", "com.example:http/blog/"),
        ("HTTP://EXAMPLE.COM:80/blog/", "com.example:http/blog/"),
        ("http://example.com", "com.example:http/"),
        ("https://example.com:8443/a?b=", "com.example:https:8443/a?b="),
        ("http://example.com/caf%c3%a", "com.example:http/caf%C3%A"),
        ("http://example.com/caf%", "com.example:http/caf%"),
        ("http://example.com/%7euser/a b", "com.example:http/~user/a%20b"),
        ("http://example.com/x?", "com.example:http/x?"),
        ("http://127.0.0.2:8080/s", "127.0.0.2:http:8080/s"),
    ],
)
def test_url_prefix_to_row_prefix(url_prefix: str, row_prefix: str) -> None:
    assert url_prefix_to_row_prefix(url_prefix) == row_prefix


def test_url_prefix_to_row_prefix_refuses_what_has_no_host() -> None:
    with pytest.raises(InvalidUrlError):
        url_prefix_to_row_prefix("/blog/")


# --- properties ----------------------------------------------------------------

_LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
_NAME = st.lists(_LABEL, min_size=1, max_size=4).map(".".join).filter(
    lambda h: not h.replace(".", "").isdigit()
)
_IPV4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))
_IPV6 = st.sampled_from(["[::1]", "[2001:db8::1]", "[fe80::1:2]", "[::ffff:7f00:1]"])
_HOST = st.one_of(_NAME, _IPV4, _IPV6)
_PORT = st.one_of(st.just(""), st.integers(1, 65535).filter(lambda p: p not in (80, 443)).map(
    lambda p: f":{p}"
))
_PATH = st.from_regex(r"(/[A-Za-z0-9._~:@!$&'()*+,;=%-]{0,12}){1,4}(\?[A-Za-z0-9=&:/]{0,12})?",
                      fullmatch=True)


@st.composite
def _host_and_url(draw: st.DrawFn, host: st.SearchStrategy[str] = _HOST) -> tuple[str, str]:
    name = draw(host)
    scheme = draw(st.sampled_from(["http", "https"]))
    return name, f"{scheme}://{name}{draw(_PORT)}{draw(_PATH)}"


@settings(max_examples=300, deadline=None)
@given(_host_and_url())
def test_row_key_round_trips(host_url: tuple[str, str]) -> None:
    _, url = host_url
    key = row_key(url)
    assert url_from_row_key(key) == url
    assert row_key(url_from_row_key(key)) == key


@settings(max_examples=50, deadline=None)
@given(st.lists(_HOST, min_size=2, max_size=5, unique=True), st.data())
def test_keys_of_one_host_sort_together(hosts: list[str], data: st.DataObject) -> None:
    pairs = [data.draw(_host_and_url(st.sampled_from(hosts))) for _ in range(12)]
    host_of_key = {row_key(url): host for host, url in pairs}
    # In key order, each host appears in one unbroken run.
    finished: set[str] = set()
    current = None
    for key in sorted(host_of_key):
        host = host_of_key[key]
        if host != current:
            assert host not in finished, f"rows of {host} are split: {sorted(host_of_key)}"
            if current is not None:
                finished.add(current)
            current = host


_RAW_PATH = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"], exclude_characters="#"),
    max_size=20,
)


@settings(max_examples=200, deadline=None)
@given(_host_and_url(_NAME), _RAW_PATH, st.data())
def test_canonical_urls_round_trip_and_their_prefixes_match(
    host_url: tuple[str, str], extra: str, data: st.DataObject
) -> None:
    try:
        url = canonicalize(host_url[1] + extra)
    except InvalidUrlError:
        assume(False)
        return
    key = row_key(url)
    assert url_from_row_key(key) == url
    # Any prefix of a canonical URL that ends after the host names a prefix of its key.
    start = url.index("/", url.index("://") + 3)
    cut = data.draw(st.integers(start, len(url)))
    assert key.startswith(url_prefix_to_row_prefix(url[:cut]))
