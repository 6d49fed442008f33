"""Canonical URLs: every rule on and off, link resolution, host and domain keys."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sitemapcrawl.config import Settings, load_settings
from sitemapcrawl.errors import InvalidUrlError
from sitemapcrawl.web.rowkeys import row_key, url_from_row_key
from sitemapcrawl.web.urls import (
    DEFAULT_RULES,
    CanonicalRules,
    canonical_in_full,
    canonicalize,
    host_key,
    origin,
    registered_domain_key,
    remove_dot_segments,
    resolve,
    robots_url,
)

OFF = CanonicalRules(
    lowercase=False,
    idn_to_punycode=False,
    strip_userinfo=True,
    strip_default_port=False,
    remove_fragment=False,
    resolve_dot_segments=False,
    normalize_percent=False,
    strip_session_ids=False,
    drop_empty_query=False,
    strip_www=False,
)


def only(**switches: Any) -> CanonicalRules:
    """The default rules with some switched."""
    return dataclasses.replace(DEFAULT_RULES, **switches)


# --- each rule, on and off -------------------------------------------------------

RULE_CASES = [
    # (switch, input, canonical with the switch on, with it off)
    ("lowercase", "HTTP://WWW.Example.COM/Path", "http://www.example.com/Path",
     "HTTP://WWW.Example.COM/Path"),
    ("idn_to_punycode", "http://bücher.example/", "http://xn--bcher-kva.example/",
     "http://bücher.example/"),
    ("strip_default_port", "http://a.example:80/", "http://a.example/", "http://a.example:80/"),
    ("strip_default_port", "https://a.example:443/", "https://a.example/",
     "https://a.example:443/"),
    ("remove_fragment", "http://a.example/p#top", "http://a.example/p", "http://a.example/p#top"),
    ("resolve_dot_segments", "http://a.example/a/./b/../c", "http://a.example/a/c",
     "http://a.example/a/./b/../c"),
    ("normalize_percent", "http://a.example/%7euser/%2fx%c3%a9", "http://a.example/~user/%2Fx%C3%A9",
     "http://a.example/%7euser/%2fx%c3%a9"),
    # Off, spaces and control characters are still escaped: they would not survive.
    ("normalize_percent", "http://a.example/a b/é\x7f", "http://a.example/a%20b/%C3%A9%7F",
     "http://a.example/a%20b/é%7F"),
    ("strip_session_ids", "http://a.example/x.jsp;jsessionid=0A1B?id=5&PHPSESSID=ff",
     "http://a.example/x.jsp?id=5", "http://a.example/x.jsp;jsessionid=0A1B?id=5&PHPSESSID=ff"),
    ("drop_empty_query", "http://a.example/p?&a=1&&b=2&", "http://a.example/p?a=1&b=2",
     "http://a.example/p?&a=1&&b=2&"),
    ("drop_empty_query", "http://a.example/p?", "http://a.example/p", "http://a.example/p?"),
    ("strip_www", "http://www.example.com/", "http://example.com/", "http://www.example.com/"),
]


@pytest.mark.parametrize(("switch", "url", "on", "off"), RULE_CASES)
def test_each_rule_on_and_off(switch: str, url: str, on: str, off: str) -> None:
    assert canonicalize(url, only(**{switch: True})) == on
    assert canonicalize(url, only(**{switch: False})) == off


def test_defaults_are_on_except_strip_www() -> None:
    flags = {f.name: getattr(DEFAULT_RULES, f.name) for f in dataclasses.fields(CanonicalRules)}
    flags.pop("session_id_names")
    assert flags.pop("strip_www") is False
    assert all(flags.values())


def test_userinfo_is_stripped_or_refused() -> None:
    url = "http://user:secret@a.example/x"
    assert canonicalize(url) == "http://a.example/x"
    with pytest.raises(InvalidUrlError, match="userinfo"):
        canonicalize(url, only(strip_userinfo=False))


def test_all_rules_off_still_makes_a_keyable_url() -> None:
    # What always happens: whitespace trimmed, empty path -> "/", trailing host dot dropped.
    assert canonicalize("  HTTP://Example.COM.:80?  \n", OFF) == "HTTP://Example.COM:80/?"
    assert url_from_row_key(row_key("HTTP://Example.COM:80/?")) == "HTTP://Example.COM:80/?"


def test_query_order_is_kept() -> None:
    assert canonicalize("http://a.example/?z=1&a=2&z=0") == "http://a.example/?z=1&a=2&z=0"


# --- session ids ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("http://a.example/a;jsessionid=ABC123", "http://a.example/a"),
        ("http://a.example/a;JSESSIONID=ABC;x=1/b", "http://a.example/a;x=1/b"),
        ("http://a.example/?ASPSESSIONIDQSCTDBAT=KJH&a=1", "http://a.example/?a=1"),
        ("http://a.example/?aspsessionid=1", "http://a.example/"),
        ("http://a.example/?CFID=1&CFTOKEN=2&page=3", "http://a.example/?page=3"),
        ("http://a.example/?sid=9&side=left", "http://a.example/?side=left"),
        ("http://a.example/?phpsessid", "http://a.example/"),
        ("http://a.example/?j%73essionid=1&a=b", "http://a.example/?a=b"),
        ("http://a.example/?xsid=1", "http://a.example/?xsid=1"),
        ("http://a.example/a/.;jsessionid=1/b", "http://a.example/a/b"),
    ],
)
def test_session_ids_in_path_and_query(url: str, canonical: str) -> None:
    assert canonicalize(url) == canonical


def test_session_id_names_are_configurable() -> None:
    rules = only(session_id_names=("token",))
    assert canonicalize("http://a.example/?token=1&sid=2", rules) == "http://a.example/?sid=2"
    assert canonicalize("http://a.example/?sid=2", only(session_id_names=())) == (
        "http://a.example/?sid=2"
    )


def test_stripping_a_session_id_keeps_empty_parameters_when_that_rule_is_off() -> None:
    rules = only(drop_empty_query=False)
    assert canonicalize("http://a.example/?a=1&&sid=2", rules) == "http://a.example/?a=1&"
    assert canonicalize("http://a.example/?sid=2", rules) == "http://a.example/"


# --- hosts and ports ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("http://127.0.0.1/", "http://127.0.0.1/"),
        ("http://127.1/", "http://127.0.0.1/"),
        ("http://0x7f.0.0.1/", "http://127.0.0.1/"),
        ("http://2130706433/", "http://127.0.0.1/"),
        ("http://0177.0.0.01/", "http://127.0.0.1/"),
        ("http://0x.0X0.0.0/", "http://0.0.0.0/"),
        ("http://4294967295/", "http://255.255.255.255/"),
        ("http://1.2.3.-4/", "http://1.2.3.-4/"),  # last label not a number: a name
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("http://[2001:DB8:0:0:0:0:0:1]/", "http://[2001:db8::1]/"),
        ("http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/"),
        ("http://Example.COM./", "http://example.com/"),
        ("http://ex%41mple.com/", "http://example.com/"),
        ("http://a_b.example/", "http://a_b.example/"),
        ("http://straße.de/", "http://xn--strae-oqa.de/"),
        ("http://例え。テスト/", "http://xn--r8jz45g.xn--zckzah/"),
        ("http://ＥＸＡＭＰＬＥ.com/", "http://example.com/"),
        ("http://i❤.ws/", "http://xn--i-7iq.ws/"),
        ("http://XN--BCHER-KVA.example/", "http://xn--bcher-kva.example/"),
        ("http://a.example:0080/", "http://a.example/"),
        ("http://a.example:/", "http://a.example/"),
        ("http://a.example:65535/", "http://a.example:65535/"),
        ("ftp://a.example:21/", "ftp://a.example:21/"),
    ],
)
def test_hosts_and_ports(url: str, canonical: str) -> None:
    assert canonicalize(url) == canonical


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("", "not an absolute URL"),
        ("/relative", "not an absolute URL"),
        ("example.com/page", "not an absolute URL"),
        ("mailto:someone@example.com", "not an absolute URL"),
        ("javascript:void(0)", "not an absolute URL"),
        ("http:/a.example/", "not an absolute URL"),
        ("http://", "no host"),
        ("http:///path", "no host"),
        ("http://:80/", "no host"),
        ("http://a b.example/", "bad host"),
        ("http://a..example/", "bad host"),
        ("http://a.example../", "bad host"),
        ("http://a<b>.example/", "bad host"),
        ("http://ex%zz.com/", "bad host"),
        ("http://1.2.3.256/", "bad IPv4 host"),
        ("http://1.2.3.4.5/", "bad IPv4 host"),
        ("http://example.123/", "bad IPv4 host"),
        ("http://-1.0.0.1/", "bad IPv4 host"),
        ("http://1_0.0.0.1/", "bad IPv4 host"),
        ("http://08.0.0.1/", "bad IPv4 host"),
        ("http://0x100.0.0.1/", "bad IPv4 host"),
        ("http://4294967296/", "bad IPv4 host"),
        ("http://[::1/", "bad IPv6 host"),
        ("http://[::1]x/", "bad IPv6 host"),
        ("http://[not:an:address]/", "bad IPv6 host"),
        ("http://[fe80::1%25eth0]/", "zone ids are not allowed"),
        ("http://a.example:0/", "bad port"),
        ("http://a.example:65536/", "bad port"),
        ("http://a.example:8o/", "bad port"),
        ("http://a.example:80:80/", "bad port"),
        ("http://" + "a" * 64 + ".example/", "too long"),
        ("http://" + "a." * 127 + "example/", "too long"),
    ],
)
def test_bad_urls_raise_with_a_reason(url: str, reason: str) -> None:
    with pytest.raises(InvalidUrlError, match=reason):
        canonicalize(url)


def test_strip_www_keeps_hosts_that_would_become_a_public_suffix() -> None:
    rules = only(strip_www=True)
    assert canonicalize("http://www.com/", rules) == "http://www.com/"
    assert canonicalize("http://www.co.uk/", rules) == "http://www.co.uk/"
    assert canonicalize("http://www.example.co.uk/", rules) == "http://example.co.uk/"
    assert canonicalize("http://www.www.example.com/", rules) == "http://example.com/"
    assert canonicalize("http://wwwx.example.com/", rules) == "http://wwwx.example.com/"


# --- messy URLs from the wild ---------------------------------------------------------

MESSY = [
    ("  http://example.com/page.html  ", "http://example.com/page.html"),
    ("\thttp://example.com/a\n/b\r\n", "http://example.com/a/b"),
    ("http://example.com", "http://example.com/"),
    ("http://example.com?q=1", "http://example.com/?q=1"),
    ("http://example.com#top", "http://example.com/"),
    ("HTTPS://Example.Com:443/Index.HTML", "https://example.com/Index.HTML"),
    ("http://example.com/a//b", "http://example.com/a//b"),
    ("http://example.com/../a", "http://example.com/a"),
    ("http://example.com/a/b/..", "http://example.com/a/"),
    ("http://example.com/%2e%2E/a", "http://example.com/a"),
    ("http://example.com/a%2fb", "http://example.com/a%2Fb"),
    ("http://example.com/100%", "http://example.com/100%25"),
    ("http://example.com/100%zz", "http://example.com/100%25zz"),
    ("http://example.com/search?q=a+b&x=%20", "http://example.com/search?q=a+b&x=%20"),
    ("http://example.com/search?q=a b", "http://example.com/search?q=a%20b"),
    ("http://example.com/?q=\"x\"<y>", "http://example.com/?q=%22x%22%3Cy%3E"),
    ("http://example.com/a?b?c", "http://example.com/a?b?c"),
    ("http://example.com/a?list[]=1&list[]=2", "http://example.com/a?list%5B%5D=1&list%5B%5D=2"),
    ("http://example.com/a|b^c`d{e}", "http://example.com/a%7Cb%5Ec%60d%7Be%7D"),
    ("http://example.com/a\\b", "http://example.com/a%5Cb"),
    ("http://example.com/wiki/Straße", "http://example.com/wiki/Stra%C3%9Fe"),
    ("http://example.com/wiki/Stra%c3%9fe", "http://example.com/wiki/Stra%C3%9Fe"),
    ("http://example.com/a#b#c", "http://example.com/a"),
    ("http://example.com/a;b=c;d", "http://example.com/a;b=c;d"),
    ("http://example.com/shop/item.jsp;jsessionid=8A2F77D8EE3B9C?cat=1",
     "http://example.com/shop/item.jsp?cat=1"),
    ("http://example.com/index.php?PHPSESSID=0123456789abcdef&page=2",
     "http://example.com/index.php?page=2"),
    ("http://example.com/?utm_source=x&&", "http://example.com/?utm_source=x"),
    ("http://user@example.com:8080/", "http://example.com:8080/"),
    ("http://a@b@example.com/", "http://example.com/"),
    ("http://example.com/@user", "http://example.com/@user"),
    ("http://example.com/a:b", "http://example.com/a:b"),
    ("http://example.com/redirect?to=http://other.example/x",
     "http://example.com/redirect?to=http://other.example/x"),
    ("http://WWW.EXAMPLE.COM/~User/", "http://www.example.com/~User/"),
    ("http://example.com/%7Euser/%41%42", "http://example.com/~user/AB"),
    ("http://example.com/caf\u00e9?\u00e9=\u00e9", "http://example.com/caf%C3%A9?%C3%A9=%C3%A9"),
    ("http://example.com/emoji/\U0001F600", "http://example.com/emoji/%F0%9F%98%80"),
    ("http://[::1]", "http://[::1]/"),
    ("http://127.0.0.2:8080", "http://127.0.0.2:8080/"),
]


@pytest.mark.parametrize(("url", "canonical"), MESSY)
def test_messy_real_world_urls(url: str, canonical: str) -> None:
    assert canonicalize(url) == canonical
    assert canonicalize(canonical) == canonical


# --- dot segments and link resolution (RFC 3986 section 5.4) -----------------------------

BASE = "http://a/b/c/d;p?q"
RFC_3986_EXAMPLES = [
    # 5.4.1 normal examples
    ("g", "http://a/b/c/g"),
    ("./g", "http://a/b/c/g"),
    ("g/", "http://a/b/c/g/"),
    ("/g", "http://a/g"),
    ("//g", "http://g/"),  # RFC: http://g -- an empty path becomes "/"
    ("?y", "http://a/b/c/d;p?y"),
    ("g?y", "http://a/b/c/g?y"),
    ("#s", "http://a/b/c/d;p?q#s"),
    ("g#s", "http://a/b/c/g#s"),
    ("g?y#s", "http://a/b/c/g?y#s"),
    (";x", "http://a/b/c/;x"),
    ("g;x", "http://a/b/c/g;x"),
    ("g;x?y#s", "http://a/b/c/g;x?y#s"),
    ("", "http://a/b/c/d;p?q"),
    (".", "http://a/b/c/"),
    ("./", "http://a/b/c/"),
    ("..", "http://a/b/"),
    ("../", "http://a/b/"),
    ("../g", "http://a/b/g"),
    ("../..", "http://a/"),
    ("../../", "http://a/"),
    ("../../g", "http://a/g"),
    # 5.4.2 abnormal examples
    ("../../../g", "http://a/g"),
    ("../../../../g", "http://a/g"),
    ("/./g", "http://a/g"),
    ("/../g", "http://a/g"),
    ("g.", "http://a/b/c/g."),
    (".g", "http://a/b/c/.g"),
    ("g..", "http://a/b/c/g.."),
    ("..g", "http://a/b/c/..g"),
    ("./../g", "http://a/b/g"),
    ("./g/.", "http://a/b/c/g/"),
    ("g/./h", "http://a/b/c/g/h"),
    ("g/../h", "http://a/b/c/h"),
    ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
    ("g;x=1/../y", "http://a/b/c/y"),
    ("g?y/./x", "http://a/b/c/g?y/./x"),
    ("g?y/../x", "http://a/b/c/g?y/../x"),
    ("g#s/./x", "http://a/b/c/g#s/./x"),
    ("g#s/../x", "http://a/b/c/g#s/../x"),
    ("http:g", "http://a/b/c/g"),  # the RFC's "backward compatible" reading
]


@pytest.mark.parametrize(("link", "target"), RFC_3986_EXAMPLES)
def test_resolve_rfc_3986_examples(link: str, target: str) -> None:
    assert resolve(BASE, link, only(remove_fragment=False)) == target


def test_resolve_canonicalises_and_drops_the_fragment() -> None:
    base = "http://example.com/dir/page.html"
    assert resolve(base, " Other%7e.html#x ") == "http://example.com/dir/Other~.html"
    assert resolve(base, "//CDN.Example.com:80/a") == "http://cdn.example.com/a"
    assert resolve(base, "https://Example.com/") == "https://example.com/"
    assert resolve("http://example.com", "a") == "http://example.com/a"
    assert resolve(base, "x;jsessionid=1") == "http://example.com/dir/x"


@pytest.mark.parametrize("link", ["mailto:a@example.com", "javascript:void(0)", "g:h",
                                  "tel:+123", "//", "http://bad host/"])
def test_resolve_refuses_links_without_a_usable_target(link: str) -> None:
    with pytest.raises(InvalidUrlError):
        resolve(BASE, link)


def test_resolve_refuses_a_relative_base() -> None:
    with pytest.raises(InvalidUrlError, match="not an absolute URL"):
        resolve("/b/c", "g")


@pytest.mark.parametrize(
    ("path", "resolved"),
    [
        ("/a/b/c/./../../g", "/a/g"),
        ("/mid/content=5/../6", "/mid/6"),
        ("/a//../b", "/a/b"),
        ("/..", "/"),
        ("/.", "/"),
        ("/a/..", "/"),
        ("/a/b/", "/a/b/"),
        ("/a/.b/..c/", "/a/.b/..c/"),
    ],
)
def test_remove_dot_segments(path: str, resolved: str) -> None:
    assert remove_dot_segments(path) == resolved


# --- origins, host keys, domain keys ------------------------------------------------------


def test_robots_url_and_origin_keep_scheme_host_and_port() -> None:
    assert robots_url("http://127.0.0.2:8080/a/b?c") == "http://127.0.0.2:8080/robots.txt"
    assert robots_url("https://User@Example.com:443/x") == "https://example.com/robots.txt"
    assert origin("http://[::1]:8080/x") == "http://[::1]:8080"


def test_host_key_is_the_canonical_host_without_port() -> None:
    assert host_key("http://WWW.Example.com:8080/a") == "www.example.com"
    assert host_key("https://www.example.com/") == "www.example.com"
    assert host_key("http://Bücher.example/") == "xn--bcher-kva.example"
    assert host_key("http://[::1]:81/") == "[::1]"
    assert host_key("http://www.example.com/", only(strip_www=True)) == "example.com"


@pytest.mark.parametrize(
    ("url", "domain"),
    [
        ("http://www.example.com/", "example.com"),
        ("http://a.b.example.co.uk/", "example.co.uk"),
        ("https://alice.github.io/", "alice.github.io"),
        ("http://example.com/", "example.com"),
        ("http://localhost:8080/", "localhost"),
        ("http://co.uk/", "co.uk"),
        ("http://127.0.0.2:8080/", "127.0.0.2"),
        ("http://[::1]/", "[::1]"),
        ("http://www.Bücher.example/", "xn--bcher-kva.example"),
        ("http://a.b.unknown-tld-xyz/", "b.unknown-tld-xyz"),
    ],
)
def test_registered_domain_key(url: str, domain: str) -> None:
    assert registered_domain_key(url) == domain


# --- settings -----------------------------------------------------------------------------


def test_rules_from_default_settings_are_the_default_rules() -> None:
    assert CanonicalRules.from_settings(Settings()) == DEFAULT_RULES


def test_rules_from_settings_follow_each_switch() -> None:
    loaded = load_settings(
        environ={"SITEMAPCRAWL_URL_STRIP_SESSION_IDS": "false", "SITEMAPCRAWL_STRIP_WWW": "1"},
        flags={"session_id_names": "sid,token", "url_remove_fragment": False},
    )
    rules = CanonicalRules.from_settings(loaded)
    assert rules == only(
        strip_session_ids=False,
        strip_www=True,
        remove_fragment=False,
        session_id_names=("sid", "token"),
    )


# --- properties ---------------------------------------------------------------------------

_SCHEME = st.sampled_from(["http", "HTTP", "https", "Https"])
_LABEL = st.one_of(
    st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9_-]{0,8}[A-Za-z0-9])?", fullmatch=True),
    st.text(st.characters(categories=["Ll", "Lu", "Lo"]), min_size=1, max_size=6),
)
_HOST = st.one_of(
    st.lists(_LABEL, min_size=1, max_size=4).map(".".join),
    st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t))),
    st.lists(st.from_regex(r"-?(0[xX])?[0-9a-fA-F_]{0,4}", fullmatch=True), min_size=1, max_size=5)
    .map(".".join),
    st.sampled_from(["[::1]", "[2001:DB8::1]", "127.1", "0x7f.0.0.1", "www.www.example.com"]),
)
_PORT = st.one_of(st.just(""), st.sampled_from([":80", ":443", ":8080", ":", ":0081"]))
_TOKENS = [*"/./../;=&?%#~:@+ ", "%2e", "%2F", "%7e", "%41", "%zz", ";jsessionid=1", "&sid=2", "&&"]
_PIECE = st.lists(
    st.one_of(
        st.sampled_from(_TOKENS),
        st.characters(codec="utf-8", exclude_categories=["Cs"]),
    ),
    max_size=12,
).map("".join)


@st.composite
def _raw_urls(draw: st.DrawFn) -> str:
    userinfo = draw(st.sampled_from(["", "user@", "u:p@"]))
    pieces = "".join(draw(st.lists(_PIECE, max_size=4)))
    return f"{draw(_SCHEME)}://{userinfo}{draw(_HOST)}{draw(_PORT)}/{pieces}"


_RULES = st.builds(
    CanonicalRules,
    lowercase=st.booleans(),
    idn_to_punycode=st.booleans(),
    strip_default_port=st.booleans(),
    remove_fragment=st.booleans(),
    resolve_dot_segments=st.booleans(),
    normalize_percent=st.booleans(),
    strip_session_ids=st.booleans(),
    drop_empty_query=st.booleans(),
    strip_www=st.booleans(),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_raw_urls())
def test_canonicalising_twice_changes_nothing_and_the_key_round_trips(url: str) -> None:
    try:
        canonical = canonicalize(url)
    except InvalidUrlError:
        assume(False)
        return
    assert canonical_in_full(canonical) == canonical  # every rule applied again, no shortcut
    assert canonical.isascii()
    assert url_from_row_key(row_key(canonical)) == canonical


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_raw_urls(), _RULES)
def test_every_rule_set_is_idempotent(url: str, rules: CanonicalRules) -> None:
    try:
        canonical = canonicalize(url, rules)
    except InvalidUrlError:
        assume(False)
        return
    assert canonical_in_full(canonical, rules) == canonical
    assert url_from_row_key(row_key(canonical)) == canonical


def _outcome(canonical: Any, url: str, rules: CanonicalRules) -> str:
    """The canonical URL, or the error's message."""
    try:
        return str(canonical(url, rules))
    except InvalidUrlError as exc:
        return f"error: {exc}"


_PORTS = st.sampled_from(["", ":80", ":443", ":8080", ":08080", ":0", ":65535", ":65536", ":99999", ":"])
_PLAIN_PATHS = st.lists(st.sampled_from([*"abcXYZ019-._~!$&'()*+,=:@/", "/.", ";", "%41", "?", "#", "é", " "]),
                        max_size=20).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_raw_urls(), st.builds("{}://{}{}/{}".format, st.sampled_from(["http", "https", "HTTP"]), _HOST,
                                        _PORTS, _PLAIN_PATHS)), _RULES)
def test_the_shortcut_for_canonical_urls_agrees_with_every_rule(url: str, rules: CanonicalRules) -> None:
    """`canonicalize` returns an already canonical URL as it is, without the rules: same result (or the same
    error) as applying them all, for any URL and any rule set."""
    assert _outcome(canonicalize, url, rules) == _outcome(canonical_in_full, url, rules)


@pytest.mark.parametrize("url", [
    "https://www.example.com/news/design/top-pasta-cheap-pasta-pasta",
    "http://example.com/",
    "http://a.example/a:b@c/d~e_f.g-h!$&'()*+,=",
    "http://127.0.0.1:8080/blog/2026/a-long-slug",
])
def test_canonical_urls_are_returned_as_they_are(url: str) -> None:
    assert canonicalize(url) == canonical_in_full(url) == url


@settings(max_examples=200, deadline=None)
@given(_raw_urls(), _PIECE)
def test_resolve_gives_canonical_urls(base: str, link: str) -> None:
    try:
        target = resolve(base, link)
    except InvalidUrlError:
        assume(False)
        return
    assert canonicalize(target) == target


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_raw_urls(), _PLAIN_PATHS, _RULES)
def test_the_shortcut_for_root_relative_links_agrees_with_the_merge(base: str, path: str,
                                                                    rules: CanonicalRules) -> None:
    """A root-relative link is resolved as `canonicalize` of the base's origin and the path (a page's common
    link): the same URL, or the same refusal, as the RFC merge gives it (`/.` in front sends a link through
    the merge, and the merge removes it again)."""
    link = "/" + path.lstrip("/")
    shortcut = _outcome(lambda text, r: resolve(base, text, r), link, rules)
    merged = _outcome(lambda text, r: resolve(base, "/." + text, r), link, rules)
    # A refusal names the URL as each path spelled it: only whether it was refused must agree.
    assert shortcut == merged or (shortcut.startswith("error: ") and merged.startswith("error: "))
