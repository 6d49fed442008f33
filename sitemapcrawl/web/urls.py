"""URLs: the canonical form, origins, and host and registered-domain keys.

Every URL is canonicalised before it becomes a row key (`rowkeys`), so one
page has one row however it was spelled. `canonicalize(url, rules)` applies
the switches of `CanonicalRules` (built once with `from_settings`): lowercase
scheme and host, IDN to punycode, no userinfo, default port or fragment,
normalised percent-encoding, resolved dot segments, session ids and empty
query separators removed, optionally no leading `www.`. Whitespace is
trimmed, an empty path becomes `/`, and a host or port that could not be
asked for is an `InvalidUrlError` (hosts: `hostnames`). `host_key` (host
without port) is the unit of politeness; robots.txt is per origin
(`robots_url`); `registered_domain_key` is one site. Pure: no network, no HBase.
Cost: hosts are cached; a URL already canonical (most sitemap entries) costs one
regex match, any other a split, a few regex passes and a join.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from sitemapcrawl.config import DEFAULT_SESSION_ID_NAMES
from sitemapcrawl.errors import InvalidUrlError
from sitemapcrawl.urlparts import DEFAULT_PORTS
from sitemapcrawl.web.hostnames import canonical_hostname, canonical_port, registered_domain

if TYPE_CHECKING:
    from sitemapcrawl.config import Settings

# --- canonical form -------------------------------------------------------------

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



def _host_by_rules(raw: str, rules: CanonicalRules) -> str:
    return canonical_hostname(raw, rules.lowercase, rules.idn_to_punycode, rules.strip_www)


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
    port = canonical_port(parts.port, url)
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
    plain = _PLAIN_URL.fullmatch(url)
    if plain is not None and "/." not in plain[4] and _plain_port(plain[1], plain[3], rules):
        host = plain[2]
        try:
            if _host_by_rules(host, rules) == host:
                return url
        except InvalidUrlError:
            pass  # the full path below says why, naming the URL
    return canonical_in_full(url, rules)


def _plain_port(scheme: str, port: str | None, rules: CanonicalRules) -> bool:
    """Is the shortcut's port (None: no port) one the rules keep as written: 1-65535 without leading zeros,
    and not the scheme's default when default ports are stripped?"""
    if port is None:
        return True
    number = int(port)
    return number <= 65535 and not (rules.strip_default_port and DEFAULT_PORTS[scheme] == number)


def canonical_in_full(url: str, rules: CanonicalRules = DEFAULT_RULES) -> str:
    """What `canonicalize` returns, worked out by applying every rule (no shortcut for a URL already canonical)."""
    return _canonical_parts(_split(url), url, rules)


# A URL no rule changes, whatever the rules (given its host and port are canonical already): http(s), a host
# without userinfo, a port written without leading zeros (checked by `_plain_port`), a path of characters a
# path may hold as they are, without `%` escapes, `;` parameters (session ids) or `/.` (dot segments), no
# query, no fragment. Most sitemap entries are spelled so; they skip the split, the regex passes and the join
# (a million entries took ~8% of an inventory's parse).
_PLAIN_URL = re.compile(
    r"(https?)://([^/?#@:\[\]\x00-\x20\x7f-\U0010ffff]+)(?::([1-9][0-9]{0,4}))?(/[A-Za-z0-9\-._~!$&'()*+,=:@/]*)")


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
    base_parts = _split_base(base)
    link = link.strip(_C0_AND_SPACE)
    if "\t" in link or "\n" in link or "\r" in link:
        link = link.translate(_DROP_INSIDE)
    if link[:1] == "/" and link[1:2] != "/" and "/." not in link and "#" not in link and "?" not in link:
        # A root-relative path (most links of a page): the base's origin and the path, as `canonicalize`
        # spells them (its shortcut for a plain URL: no split, no join); the same URL the merge below gives.
        return canonicalize(_origin_text(base_parts) + link, rules)
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


@functools.lru_cache(maxsize=256)
def _split_base(base: str) -> _Parts:
    """`_split` of a page URL that links resolve against: a page's links share it (one split a page)."""
    return _split(base)


def _origin_text(parts: _Parts) -> str:
    """`scheme://[userinfo@]host[:port]` of split parts, as they were written."""
    userinfo = f"{parts.userinfo}@" if parts.userinfo is not None else ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{userinfo}{parts.host}{port}"


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


def registered_domain_key(url: str, rules: CanonicalRules = DEFAULT_RULES) -> str:
    """The registered domain of a URL's host (public suffix plus one label): one site.

    `http://www.example.co.uk/` -> `example.co.uk`; `https://a.b.github.io/` ->
    `b.github.io` (the list's private section counts: those are separate sites).
    An IP address is its own registered domain, and so is a host that is a
    public suffix itself or has no dot (`localhost`). Offline: the list ships in
    the `publicsuffixlist` wheel and is read once (~40 ms); answers are cached.
    Raises InvalidUrlError for a URL without a usable host.
    """
    return registered_domain(host_key(url, rules))


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

