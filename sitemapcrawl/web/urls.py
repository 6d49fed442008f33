"""URLs: the canonical form, row keys, and host and registered-domain keys.

Pure logic: no network, no HBase. Every URL is canonicalised before it becomes
a row key, so one page has one row however it was spelled.

Canonical form
--------------
`canonicalize(url, rules)` applies a chain of rules, each a switch of
`CanonicalRules` (built once from the settings with `CanonicalRules.from_settings`):
lowercase scheme and host; IDN host to punycode; strip userinfo; strip default
ports; remove the fragment; normalise percent-encoding; resolve `.` and `..`
path segments; strip session ids from path and query; drop empty query
separators; optionally strip a leading `www.`. Some things always happen,
because a row key needs them: surrounding whitespace and embedded tabs and
newlines are removed, an empty path becomes `/`, a trailing dot of the host
is dropped, IP addresses are written in their standard form, and a host or
port that could not be asked for (bad characters, port 0 or above 65535) is
an `InvalidUrlError`.

Row keys
--------
The row key of `webpage` is the URL with its host reversed, as Nutch does::

    http://www.example.com:8080/a?b  ->  com.example.www:http:8080/a?b
    http://www.example.com/a         ->  com.example.www:http/a

A host's rows are contiguous (a prefix scan, see `host_row_prefix`) and the
rows of one registered domain sit side by side, so HBase regions split by
domain. `row_key` and `url_from_row_key` are exact inverses.

Host keys
---------
`host_key(url)` is the canonical host without the port: the unit of
politeness (one queue per host in the fetcher, caps per host in generate),
because two ports of one host name are one machine to be polite to. robots.txt
is per scheme, host and port: `robots_url(url)`. `registered_domain_key(url)`
is the host's registered domain (`www.example.co.uk` -> `example.co.uk`) from
the Public Suffix List shipped in the `publicsuffixlist` wheel (offline).
"""

from __future__ import annotations

import functools
import ipaddress
import re
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import idna
from publicsuffixlist import PublicSuffixList

from sitemapcrawl.config import DEFAULT_SESSION_ID_NAMES
from sitemapcrawl.errors import InvalidUrlError

if TYPE_CHECKING:
    from sitemapcrawl.config import Settings

# --- row keys -----------------------------------------------------------------

# scheme://host[:port]/rest -- the shape every canonical URL has. The host is a
# bracketed IPv6 literal or a run of characters that cannot end an authority.
_KEYABLE_URL = re.compile(
    r"([A-Za-z][A-Za-z0-9+.\-]*)://(\[[^\]/?#@]*\]|[^:/?#@\[\]]+)(?::([0-9]+))?(/.*)",
    re.DOTALL,
)
# The same four parts in key order: host:scheme[:port]/rest.
_ROW_KEY = re.compile(
    r"(\[[^\]/?#@]*\]|[^:/?#@\[\]]+):([A-Za-z][A-Za-z0-9+.\-]*)(?::([0-9]+))?(/.*)",
    re.DOTALL,
)
_IPV4_SHAPE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")


def _reverse_host(host: str) -> str:
    """Reverse the labels of a host name; IP literals stay as they are.

    IPv4 addresses keep their natural order: their most significant part is
    already first (`10.1.2.3` belongs to `10.0.0.0/8`), so one network's rows
    are contiguous as they are, while reversing would group by the last octet,
    which means nothing. An address whose labels are four numbers is left alone
    both ways, so the function is its own inverse. IPv6 literals (bracketed)
    have no labels to reverse.
    """
    if host.startswith("[") or _IPV4_SHAPE.fullmatch(host):
        return host
    return ".".join(reversed(host.split(".")))


def _unkeyable_reason(url: str) -> str:
    """Say why `url` does not have the shape `row_key` needs (error path only)."""
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme:
        return "not an absolute URL"
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if not authority:
        return "no host"
    if "@" in authority:
        return "has userinfo (canonicalize first)"
    if not rest[len(authority) :].startswith("/"):
        return "path does not start with '/' (canonicalize first)"
    return "bad scheme, host or port"


def row_key(url: str) -> str:
    """Return the row key of a canonical URL: its host reversed, then scheme, port, path.

    `http://www.example.com:8080/a?b` gives `com.example.www:http:8080/a?b`;
    `http://www.example.com/a` (no port in the URL) gives `com.example.www:http/a`.
    IPv4 hosts keep their natural order (`127.0.0.1:http/`), IPv6 hosts keep
    their brackets (`[::1]:http:8080/x`). This does not canonicalise: call
    `canonicalize` first, so that spellings of one page share one key. Canonical
    URLs never carry a default port, so their keys have no port part; a port
    written in the URL is kept, which keeps the function reversible for every
    URL it accepts. Cost: one regex match and a split, no allocation beyond the
    key.

    Raises InvalidUrlError for a URL that is not `scheme://host[:port]/...`
    (relative, no host, userinfo, empty path): such a URL has no key.
    """
    match = _KEYABLE_URL.fullmatch(url)
    if match is None:
        raise InvalidUrlError(f"cannot key URL {url!r}: {_unkeyable_reason(url)}")
    scheme, host, port, rest = match.groups()
    port_part = ":" + port if port is not None else ""
    return f"{_reverse_host(host)}:{scheme}{port_part}{rest}"


def url_from_row_key(key: str) -> str:
    """Return the URL a row key was made from: the exact inverse of `row_key`.

    Cost: one regex match and a split. Raises InvalidUrlError for a string that
    is not `host:scheme[:port]/...` (not a row key of `webpage`).
    """
    match = _ROW_KEY.fullmatch(key)
    if match is None:
        raise InvalidUrlError(f"not a row key: {key!r}")
    host, scheme, port, rest = match.groups()
    port_part = ":" + port if port is not None else ""
    return f"{scheme}://{_reverse_host(host)}{port_part}{rest}"


# --- canonical form -------------------------------------------------------------

DEFAULT_PORTS = {"http": 80, "https": 443}

# Session-id names that are prefixes of a family: classic ASP appends eight
# random letters (ASPSESSIONIDQSCTDBAT), so the name alone never matches.
_PREFIX_FAMILIES = frozenset({"aspsessionid"})


@dataclass(frozen=True)
class CanonicalRules:
    """Which canonicalisation rules run; every one is on by default except `strip_www`.

    Build it once (`from_settings`) and pass it to every call; it is hashable,
    so the compiled patterns it needs are cached per rule set.
    """

    lowercase: bool = True
    """Lowercase the scheme and the host."""
    idn_to_punycode: bool = True
    """Write internationalised host names as punycode (`bücher.de` -> `xn--bcher-kva.de`)."""
    strip_userinfo: bool = True
    """Drop `user:password@`; when off, a URL with userinfo is an InvalidUrlError,
    because a row key has no place for it."""
    strip_default_port: bool = True
    """Drop `:80` from http and `:443` from https URLs."""
    remove_fragment: bool = True
    """Drop `#fragment`: it is never sent to the server."""
    resolve_dot_segments: bool = True
    """Resolve `.` and `..` path segments (RFC 3986 section 5.2.4)."""
    normalize_percent: bool = True
    """Decode escaped unreserved characters, uppercase escapes, escape what must be."""
    strip_session_ids: bool = True
    """Remove session ids: `;name=...` in the path and `name=...` in the query."""
    session_id_names: tuple[str, ...] = DEFAULT_SESSION_ID_NAMES
    """Names matched case-insensitively; `aspsessionid` also matches ASPSESSIONIDxxxx."""
    drop_empty_query: bool = True
    """Drop empty query parameters (`&&`, a leading or trailing `&`) and a bare `?`."""
    strip_www: bool = False
    """Strip a leading `www.` (off by default: it changes which server is asked)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> CanonicalRules:
        """The rules the settings switch on and off. No I/O."""
        return cls(
            lowercase=settings.url_lowercase,
            idn_to_punycode=settings.url_idn_to_punycode,
            strip_userinfo=settings.url_strip_userinfo,
            strip_default_port=settings.url_strip_default_port,
            remove_fragment=settings.url_remove_fragment,
            resolve_dot_segments=settings.url_resolve_dot_segments,
            normalize_percent=settings.url_normalize_percent,
            strip_session_ids=settings.url_strip_session_ids,
            session_id_names=settings.session_id_names,
            drop_empty_query=settings.url_drop_empty_query,
            strip_www=settings.strip_www,
        )


DEFAULT_RULES = CanonicalRules()


class _Parts(NamedTuple):
    """A URL split into its parts; `query` and `fragment` are None when absent."""

    scheme: str
    userinfo: str | None
    host: str
    port: str
    path: str
    query: str | None
    fragment: str | None


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
# What whitespace and control characters a URL may be wrapped in (WHATWG strips
# them), and the ones it drops from inside (tab, CR, LF: wrapped lines).
_C0_AND_SPACE = "".join(chr(c) for c in range(0x21))
_DROP_INSIDE = str.maketrans("", "", "\t\n\r")


def _split(url: str) -> _Parts:
    """Split an absolute `scheme://authority...` URL; InvalidUrlError otherwise."""
    url = url.strip(_C0_AND_SPACE)
    if "\t" in url or "\n" in url or "\r" in url:
        url = url.translate(_DROP_INSIDE)
    scheme, sep, rest = url.partition("://")
    if not sep or not _SCHEME.fullmatch(scheme):
        raise InvalidUrlError(f"not an absolute URL: {url!r}")
    rest, hash_sign, fragment = rest.partition("#")
    rest, question, query = rest.partition("?")
    slash = rest.find("/")
    authority, path = (rest, "") if slash < 0 else (rest[:slash], rest[slash:])
    userinfo, at_sign, hostport = authority.rpartition("@")
    if hostport.startswith("["):
        close = hostport.find("]")
        host, port_part = hostport[: close + 1], hostport[close + 1 :]
        if close < 0 or (port_part and not port_part.startswith(":")):
            raise InvalidUrlError(f"bad IPv6 host in {url!r}")
        port = port_part[1:]
    else:
        host, _, port = hostport.partition(":")
    if not host:
        raise InvalidUrlError(f"no host in {url!r}")
    return _Parts(
        scheme,
        userinfo if at_sign else None,
        host,
        port,
        path,
        query if question else None,
        fragment if hash_sign else None,
    )


# --- hosts

_ASCII_HOST = re.compile(r"[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*")
_NUMERIC_LABEL = re.compile(r"0[xX][0-9A-Fa-f]*|[0-9]+")
_MAX_HOST_LENGTH = 253
_MAX_LABEL_LENGTH = 63


def _ipv4(host: str) -> str | None:
    """Parse an IPv4 address the way browsers do (WHATWG); None if it is not one.

    Browsers accept `127.1`, `0x7f.0.0.1` and `017700000001`, so links and
    seeds do too; all become dotted-quad decimal, the one form a row key uses.
    """
    parts = host.split(".")
    if len(parts) > 4:
        return None
    numbers = []
    for part in parts:
        if not _NUMERIC_LABEL.fullmatch(part):  # int() would also take "-1" and "1_0"
            return None
        if part[:2] in ("0x", "0X"):
            digits, base = part[2:] or "0", 16
        elif len(part) > 1 and part.startswith("0"):
            digits, base = part[1:], 8
        else:
            digits, base = part, 10
        try:
            numbers.append(int(digits, base))
        except ValueError:  # 8 or 9 in an octal part
            return None
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        return None
    value = numbers[-1]
    for index, number in enumerate(numbers[:-1]):
        value += number << (8 * (3 - index))
    return str(ipaddress.IPv4Address(value))


@functools.lru_cache(maxsize=1)
def _public_suffixes() -> PublicSuffixList:
    """The Public Suffix List from the wheel: read once (~40 ms), no network."""
    return PublicSuffixList()


def _is_public_suffix(host: str) -> bool:
    return _public_suffixes().publicsuffix(host) == host


@functools.lru_cache(maxsize=65_536)
def _canonical_host(raw: str, lowercase: bool, idn: bool, strip_www: bool) -> str:
    """The canonical form of a host as written in a URL; cached, hosts repeat a lot.

    Raises InvalidUrlError for a host that cannot name a server.
    """
    if raw.startswith("["):
        if not raw.endswith("]"):
            raise InvalidUrlError(f"bad IPv6 host {raw!r}")
        inner = raw[1:-1]
        try:
            address = ipaddress.IPv6Address(inner)
        except ValueError:
            raise InvalidUrlError(f"bad IPv6 host {raw!r}") from None
        if address.scope_id is not None:
            raise InvalidUrlError(f"IPv6 zone ids are not allowed: {raw!r}")
        return f"[{address.compressed}]"
    host = raw
    if "%" in host:
        host = _unquote(host)
    if host.endswith(".") and len(host) > 1:
        host = host[:-1]
    if not host.isascii():
        if idn:
            host = _to_punycode(host)
        elif lowercase:
            host = host.lower()
        _check_unicode_host(raw, host)
    else:
        if lowercase:
            host = host.lower()
        if not _ASCII_HOST.fullmatch(host):
            raise InvalidUrlError(f"bad host {raw!r}")
    last_label = host.rpartition(".")[2]
    if _NUMERIC_LABEL.fullmatch(last_label):
        address4 = _ipv4(host)
        if address4 is None:
            raise InvalidUrlError(f"bad IPv4 host {raw!r}")
        return address4
    if len(host) > _MAX_HOST_LENGTH or any(
        len(label) > _MAX_LABEL_LENGTH for label in host.split(".")
    ):
        raise InvalidUrlError(f"host name too long: {raw!r}")
    # A loop, so that canonicalising twice changes nothing (`www.www.a.example`).
    while strip_www and host[:4].lower() == "www." and not _is_public_suffix(host[4:]):
        host = host[4:]
    return host


def _host_by_rules(raw: str, rules: CanonicalRules) -> str:
    return _canonical_host(raw, rules.lowercase, rules.idn_to_punycode, rules.strip_www)


def _to_punycode(host: str) -> str:
    """Map a Unicode host as browsers do (UTS #46, non-transitional) and punycode it.

    Labels that IDNA 2008 would refuse to register (emoji, joiners) are still
    encoded, as browsers do: the aim is one stable spelling, not registry rules.
    """
    try:
        mapped = idna.uts46_remap(host, std3_rules=False, transitional=False)
    except idna.IDNAError:
        raise InvalidUrlError(f"bad international host {host!r}") from None
    labels = []
    for label in mapped.split("."):
        if label.isascii():
            labels.append(label)
        else:
            labels.append("xn--" + label.encode("punycode").decode("ascii"))
    return ".".join(labels)


def _check_unicode_host(raw: str, host: str) -> None:
    """Refuse hosts with characters no host name can hold (when kept as Unicode)."""
    for label in host.split("."):
        if not label or any(
            (ch.isascii() and not (ch.isalnum() or ch in "-_"))
            or (not ch.isascii() and (ch.isspace() or not ch.isprintable()))
            for ch in label
        ):
            raise InvalidUrlError(f"bad host {raw!r}")


def _canonical_port(raw: str, url: str) -> int | None:
    """The port as a number (None when the URL has none); InvalidUrlError if unusable."""
    if not raw:
        return None
    if not raw.isdigit() or not raw.isascii() or not 0 < int(raw) <= 65535:
        raise InvalidUrlError(f"bad port {raw!r} in {url!r}")
    return int(raw)


# --- percent-encoding

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# An escape, or a character a path may not hold as it is (RFC 3986 pchar / "/").
_PATH_FIX = re.compile(r"%[0-9A-Fa-f]{2}|[^A-Za-z0-9\-._~!$&'()*+,;=:@/]")
# The same for a query or a fragment, which may also hold "?".
_QUERY_FIX = re.compile(r"%[0-9A-Fa-f]{2}|[^A-Za-z0-9\-._~!$&'()*+,;=:@/?]")


def _fix_escape(match: re.Match[str]) -> str:
    text = match.group()
    if len(text) == 3:  # an escape (a lone character is one long)
        char = chr(int(text[1:], 16))
        return char if char in _UNRESERVED else text.upper()
    return "".join(f"%{byte:02X}" for byte in text.encode("utf-8", "surrogatepass"))


# With `normalize_percent` off, only what would break the URL is escaped:
# spaces and control characters (they would be trimmed or split lines).
_CONTROLS = re.compile(r"[\x00-\x20\x7f]")


def _escapers(rules: CanonicalRules) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The (path, query-or-fragment) patterns `_normalize_percent` uses under `rules`."""
    return (_PATH_FIX, _QUERY_FIX) if rules.normalize_percent else (_CONTROLS, _CONTROLS)


def _normalize_percent(text: str, pattern: re.Pattern[str]) -> str:
    """RFC 3986 section 6.2.2.2 plus escaping of what may not appear unescaped.

    A `%` that starts no escape becomes `%25`; non-ASCII text is escaped as UTF-8.
    """
    return pattern.sub(_fix_escape, text)


def _unquote(text: str) -> str:
    """Decode %XX escapes as UTF-8 (bad bytes become U+FFFD, which no host accepts)."""
    return urllib.parse.unquote(text, errors="replace")


# --- paths and queries


def remove_dot_segments(path: str) -> str:
    """Resolve `.` and `..` segments of an absolute path (RFC 3986 section 5.2.4).

    `/a/b/../c/./d` -> `/a/c/d`; `..` above the root stays at the root. A path
    without `/.` is returned as it is (the common case costs one search).
    """
    if "/." not in path:
        return path
    segments = path.split("/")
    output: list[str] = []
    last = len(segments) - 1
    for index, segment in enumerate(segments[1:], start=1):
        if segment == "..":
            if output:
                output.pop()
            if index == last:
                output.append("")
        elif segment == ".":
            if index == last:
                output.append("")
        else:
            output.append(segment)
    return "/" + "/".join(output)


@functools.lru_cache(maxsize=16)
def _session_patterns(names: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(matrix parameter in a path, query parameter name) patterns for these names."""
    alternatives = "|".join(
        re.escape(name) + ("[A-Za-z]*" if name.lower() in _PREFIX_FAMILIES else "")
        for name in names
    )
    matrix = re.compile(rf";(?:{alternatives})=[^;/]*", re.IGNORECASE)
    name = re.compile(rf"(?:{alternatives})", re.IGNORECASE)
    return matrix, name


def _clean_query(query: str, rules: CanonicalRules) -> str | None:
    """Drop session-id and empty parameters; None when nothing is left to send.

    The order of the parameters is kept: servers may read `a=1&a=2` as a
    list or `?page=2&sort=x` by position, so sorting would change what is asked.
    """
    params = query.split("&")
    kept = params
    if rules.strip_session_ids and rules.session_id_names:
        name_pattern = _session_patterns(rules.session_id_names)[1]
        kept = [p for p in params if not name_pattern.fullmatch(p.partition("=")[0])]
    if rules.drop_empty_query:
        kept = [p for p in kept if p]
    if not kept and (rules.drop_empty_query or len(kept) != len(params)):
        return None
    return "&".join(kept)


def _canonical_parts(parts: _Parts, url: str, rules: CanonicalRules) -> str:
    scheme = parts.scheme.lower() if rules.lowercase else parts.scheme
    if parts.userinfo is not None and not rules.strip_userinfo:
        raise InvalidUrlError(f"URL has userinfo: {url!r}")
    try:
        host = _host_by_rules(parts.host, rules)
    except InvalidUrlError as exc:
        raise InvalidUrlError(f"{exc} in {url!r}") from None
    port = _canonical_port(parts.port, url)
    if port is not None and rules.strip_default_port and DEFAULT_PORTS.get(scheme.lower()) == port:
        port = None
    path = parts.path or "/"
    path_fix, query_fix = _escapers(rules)
    path = _normalize_percent(path, path_fix)
    # Session ids go before dot segments: `/a/.;jsessionid=1/b` leaves a `.`.
    if rules.strip_session_ids and ";" in path and rules.session_id_names:
        path = _session_patterns(rules.session_id_names)[0].sub("", path)
    if rules.resolve_dot_segments:
        path = remove_dot_segments(path)
    query = parts.query
    if query is not None:
        query = _normalize_percent(query, query_fix)
        query = _clean_query(query, rules)
    fragment = None if rules.remove_fragment else parts.fragment
    if fragment is not None:
        fragment = _normalize_percent(fragment, query_fix)
    return "".join(
        (
            scheme,
            "://",
            host,
            "" if port is None else f":{port}",
            path,
            "" if query is None else "?" + query,
            "" if fragment is None else "#" + fragment,
        )
    )


def canonicalize(url: str, rules: CanonicalRules = DEFAULT_RULES) -> str:
    """Return the canonical form of an absolute URL: the spelling its row key is made of.

    Applies the rules switched on in `rules` (see `CanonicalRules`); the query
    keeps its parameter order. Canonicalising a canonical URL changes nothing.
    Cost: a few string operations and regex passes; the host part is cached,
    so a million URLs over a few thousand hosts take seconds.

    Raises InvalidUrlError (a short reason, naming the URL) for what is not an
    absolute `scheme://host...` URL (relative, `mailto:`, `javascript:`), and for
    bad hosts and ports. The scheme is not checked against a list: that is the
    URL filter's job (`sitemapcrawl.web.urlfilters`).
    """
    return _canonical_parts(_split(url), url, rules)


_HAS_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")


def resolve(base: str, link: str, rules: CanonicalRules = DEFAULT_RULES) -> str:
    """Resolve `link` (as found in a page) against `base` and canonicalise the result.

    Follows RFC 3986 section 5.2, which resolves the dot segments of a merged
    path even when the `resolve_dot_segments` rule is off (the merge needs
    it), with two leniencies of browsers: surrounding whitespace and embedded
    tabs and newlines are ignored, and `http:page` with the base's own scheme
    is relative (the RFC's "backward compatible" reading). Cost: as
    `canonicalize`.

    Raises InvalidUrlError when the result is not an absolute http-like URL
    (`mailto:`, `javascript:`, a bad host) or `base` is not absolute.
    """
    base_parts = _split(base)
    link = link.strip(_C0_AND_SPACE)
    if "\t" in link or "\n" in link or "\r" in link:
        link = link.translate(_DROP_INSIDE)
    scheme_match = _HAS_SCHEME.match(link)
    if scheme_match is not None:
        rest = link[scheme_match.end() :]
        if rest.startswith("//") or scheme_match.group(1).lower() != base_parts.scheme.lower():
            return canonicalize(link, rules)
        link = rest
    if link.startswith("//"):
        return canonicalize(f"{base_parts.scheme}:{link}", rules)
    ref, hash_sign, fragment = link.partition("#")
    ref_path, question, ref_query = ref.partition("?")
    if ref_path:
        if not ref_path.startswith("/"):
            base_path = base_parts.path or "/"
            ref_path = base_path[: base_path.rfind("/") + 1] + ref_path
        path = remove_dot_segments(ref_path)
        query = ref_query if question else None
    else:
        path = base_parts.path
        query = ref_query if question else base_parts.query
    target = _Parts(
        base_parts.scheme,
        base_parts.userinfo,
        base_parts.host,
        base_parts.port,
        path,
        query,
        fragment if hash_sign else None,
    )
    return _canonical_parts(target, link, rules)


# --- origins, host keys, domain keys ---------------------------------------------


def origin(url: str, rules: CanonicalRules = DEFAULT_RULES) -> str:
    """`scheme://host[:port]` of a URL, canonical (no default port, no userinfo).

    Raises InvalidUrlError as `canonicalize` does.
    """
    parts = _split(url)
    bare = parts._replace(userinfo=None, path="/", query=None, fragment=None)
    return _canonical_parts(bare, url, rules)[:-1]


def robots_url(url: str, rules: CanonicalRules = DEFAULT_RULES) -> str:
    """The robots.txt URL governing `url`: robots.txt is per scheme, host and port.

    `http://127.0.0.2:8080/a/b` -> `http://127.0.0.2:8080/robots.txt`.
    """
    return origin(url, rules) + "/robots.txt"


def host_key(url: str, rules: CanonicalRules = DEFAULT_RULES) -> str:
    """The canonical host of a URL, without the port: the unit of politeness.

    Two ports of one host name are one machine, so the fetcher queues them
    together and generate caps them together. `http://WWW.Example.com:8080/`
    -> `www.example.com`; IPv6 keeps its brackets. Cached per host; raises
    InvalidUrlError for a URL without a usable host.
    """
    return _host_by_rules(_split(url).host, rules)


@functools.lru_cache(maxsize=65_536)
def _registered_domain(host: str) -> str:
    if host.startswith("[") or _IPV4_SHAPE.fullmatch(host):
        return host
    return _public_suffixes().privatesuffix(host) or host


def registered_domain_key(url: str, rules: CanonicalRules = DEFAULT_RULES) -> str:
    """The registered domain of a URL's host (public suffix plus one label): one site.

    `http://www.example.co.uk/` -> `example.co.uk`; `https://a.b.github.io/` ->
    `b.github.io` (the list's private section counts: those are separate sites).
    An IP address is its own registered domain, and so is a host that is a
    public suffix itself or has no dot (`localhost`). Offline: the list ships in
    the `publicsuffixlist` wheel and is read once (~40 ms); answers are cached.
    Raises InvalidUrlError for a URL without a usable host.
    """
    return _registered_domain(host_key(url, rules))


def canonical_host(host_or_url: str, rules: CanonicalRules = DEFAULT_RULES) -> str:
    """The canonical form of a bare host name (`Bücher.Example.`), or of a URL's host.

    IPv6 may be given with or without brackets and comes back bracketed. Cached
    per host. Raises InvalidUrlError for a bad host, or a host with a port
    (give a URL for that).
    """
    if "://" in host_or_url:
        return host_key(host_or_url, rules)
    host = host_or_url.strip()
    if host.count(":") >= 2 and not host.startswith("["):
        host = f"[{host}]"
    elif ":" in host and not host.startswith("["):
        raise InvalidUrlError(f"give a host without a port, or a URL: {host_or_url!r}")
    if not host:
        raise InvalidUrlError("empty host")
    return _host_by_rules(host, rules)


# --- row-key prefixes -------------------------------------------------------------


def host_row_prefix(host_or_url: str, rules: CanonicalRules = DEFAULT_RULES) -> str:
    """The row-key prefix of every row of one host, all schemes and ports: `com.example.www:`.

    Takes a host name (`www.example.com`, `Bücher.example`, `127.0.0.1`,
    `[::1]`) or a URL (its host is used). The prefix ends with `:`, which no
    host contains, so it matches that host only, never `www.example.com.au`
    nor subdomains such as `a.www.example.com`; for a domain with its
    subdomains use `domain_row_prefixes`, for one scheme and port
    `origin_row_prefix`. Raises InvalidUrlError for a bad host, or a host with
    a port (give a URL for that).
    """
    return _reverse_host(canonical_host(host_or_url, rules)) + ":"


def origin_row_prefix(url: str, rules: CanonicalRules = DEFAULT_RULES) -> str:
    """The row-key prefix of every row of one scheme, host and port (one robots.txt).

    `http://www.example.com/x` -> `com.example.www:http/`,
    `http://www.example.com:8080/` -> `com.example.www:http:8080/`. The prefix
    ends with `/`: without it, `...:http` would also match `...:https` rows.
    """
    return row_key(origin(url, rules) + "/")


def domain_row_prefixes(domain: str, rules: CanonicalRules = DEFAULT_RULES) -> tuple[str, ...]:
    """The row-key prefixes covering a domain and all its subdomains; scan each.

    `example.com` -> (`com.example:`, `com.example.`): the first holds the rows
    of `example.com` itself, the second those of `www.example.com`,
    `a.b.example.com` and so on. The two ranges are not adjacent (`com.example0`
    sorts between them), hence two prefixes, not one. An IP address has no
    subdomains and gives one prefix. Takes what `host_row_prefix` takes.
    """
    host = canonical_host(domain, rules)
    reversed_host = _reverse_host(host)
    if reversed_host == host and (host.startswith("[") or _IPV4_SHAPE.fullmatch(host)):
        return (host + ":",)
    return (reversed_host + ":", reversed_host + ".")


_TRAILING_PARTIAL_ESCAPE = re.compile(r"%[0-9A-Fa-f]?\Z")


def canonicalize_prefix(prefix: str, rules: CanonicalRules = DEFAULT_RULES) -> str:
    """Canonicalise a URL prefix such as `HTTP://Example.com/Blog/` for comparing with URLs.

    The scheme, host and port are canonicalised and taken as complete (a
    prefix cannot stop inside a host name: `http://exa` means host `exa`); an
    empty path becomes `/`. The rest is text: only its percent-encoding is
    normalised (a trailing partial escape such as `%C` is kept), so dot
    segments, session ids and empty query parameters are left as written.
    Raises InvalidUrlError for what `canonicalize` refuses.
    """
    parts = _split(prefix)
    text = parts.path or "/"
    if parts.query is not None:
        text += "?" + parts.query
    tail = ""
    if rules.normalize_percent:
        partial = _TRAILING_PARTIAL_ESCAPE.search(text)
        if partial is not None:
            tail = partial.group().upper()
            text = text[: partial.start()]
    path_fix, query_fix = _escapers(rules)
    path, question, query = text.partition("?")
    text = _normalize_percent(path, path_fix)
    if question:
        text += "?" + _normalize_percent(query, query_fix)
    return origin(prefix, rules) + text + tail


def url_prefix_to_row_prefix(prefix: str, rules: CanonicalRules = DEFAULT_RULES) -> str:
    """The row-key prefix of all URLs starting with a URL prefix (`readdb --prefix`).

    `http://example.com/blog/` -> `com.example:http/blog/`. The prefix is
    canonicalised first (`canonicalize_prefix`), so `HTTP://EXAMPLE.COM:80/blog/`
    gives the same. Raises InvalidUrlError for a prefix without a usable host.
    """
    return row_key(canonicalize_prefix(prefix, rules))
