"""Row keys of `webpage`: the URL with its host reversed, as Nutch does, and key prefixes.

    http://www.example.com:8080/a?b  ->  com.example.www:http:8080/a?b
    http://www.example.com/a         ->  com.example.www:http/a

A host's rows are contiguous (a prefix scan, see `host_row_prefix`) and the
rows of one registered domain sit side by side, so HBase regions split by
domain. `row_key` and `url_from_row_key` are exact inverses; `row_key` takes
a canonical URL (`urls.canonicalize` first). Pure: no network, no HBase.
Cost: one regex match and a split per key.
"""

from __future__ import annotations

import functools
import re

from sitemapcrawl.errors import InvalidUrlError
from sitemapcrawl.web.hostnames import is_ip_literal
from sitemapcrawl.web.urls import DEFAULT_RULES, CanonicalRules, canonical_host, canonicalize_prefix, origin

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


@functools.lru_cache(maxsize=4096)
def _reverse_host(host: str) -> str:
    """Reverse the labels of a host name; IP literals stay as they are.

    IPv4 addresses keep their natural order: their most significant part is
    already first (`10.1.2.3` belongs to `10.0.0.0/8`), so one network's rows
    are contiguous as they are, while reversing would group by the last octet,
    which means nothing. An address whose labels are four numbers is left alone
    both ways, so the function is its own inverse. IPv6 literals (bracketed)
    have no labels to reverse. The last few thousand hosts are remembered: keys are made and read host
    by host, a million times in an inventory.
    """
    if is_ip_literal(host):
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


def origin_of_key(key: bytes) -> bytes:
    """The origin part of a `webpage` row key (`host:scheme[:port]`, the key up to its path): the key of the
    origin's `host` row. No check: a key that holds no `/` is returned whole."""
    return key.partition(b"/")[0]


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
    if reversed_host == host and is_ip_literal(host):
        return (host + ":",)
    return (reversed_host + ":", reversed_host + ".")


def url_prefix_to_row_prefix(prefix: str, rules: CanonicalRules = DEFAULT_RULES) -> str:
    """The row-key prefix of all URLs starting with a URL prefix (`readdb --prefix`).

    `http://example.com/blog/` -> `com.example:http/blog/`. The prefix is
    canonicalised first (`canonicalize_prefix`), so `HTTP://EXAMPLE.COM:80/blog/`
    gives the same. Raises InvalidUrlError for a prefix without a usable host.
    """
    return row_key(canonicalize_prefix(prefix, rules))
