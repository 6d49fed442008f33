"""The URL facts that the sitemap engine, the web side and the settings share.

The schemes crawled and their default ports, a URL's (scheme, host, port)
with the default filled in, `host:port` as an address writes it, and a URL
shown with its credentials hidden. They sit
on a floor of their own below `sitemaps/` and `config`, because `sitemaps/`
may not import `web/`, and each copy of "http is 80" is a copy that drifts.
Canonical URLs (what a row key is made of) stay in `web.urls`. Stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from urllib.parse import urlsplit

#: The schemes sitemapcrawl fetches, each with the port a URL of it asks on when it names none.
DEFAULT_PORTS: Mapping[str, int] = MappingProxyType({"http": 80, "https": 443})
#: The schemes sitemapcrawl fetches: `http`, `https` (the keys of `DEFAULT_PORTS`).
HTTP_SCHEMES: tuple[str, ...] = tuple(DEFAULT_PORTS)


def port_of(url: str) -> int | None:
    """The port `url` asks on: the one it names, else its scheme's default; None for another scheme with none.

    `https://example.com/` -> 443; `http://example.com:8080/` -> 8080. ValueError for a port
    that is not a number up to 65535 (as `urlsplit`). No I/O.
    """
    parts = urlsplit(url)
    return parts.port or DEFAULT_PORTS.get(parts.scheme.lower())


def origin_parts(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) URL: scheme and host in lower case, the default port filled in.

    `HTTP://WWW.Example.com/x` -> ("http", "www.example.com", 80); an IPv6 host without its
    brackets. None for another scheme, no host, a host with spaces or control characters, or
    a bad port. Not the canonical form (no IDN, no dotted-quad IPv4): that is `web.urls`.
    """
    try:
        parts = urlsplit(url.strip())
        scheme, host, port = parts.scheme.lower(), parts.hostname, parts.port
    except (ValueError, UnicodeError):
        return None
    if scheme not in DEFAULT_PORTS or not host or not host.isprintable() or " " in host:
        return None
    return scheme, host.lower(), port or DEFAULT_PORTS[scheme]


def host_port(host: str, port: int | None = None) -> str:
    """`host:port` as a URL or an address writes it: an IPv6 host in brackets; `host` alone when `port` is None.

    ("::1", 9090) -> `[::1]:9090`; ("example.com", None) -> `example.com`.
    """
    shown = f"[{host}]" if ":" in host else host
    return shown if port is None else f"{shown}:{port}"


def credentials_hidden(url: str, mark: str) -> str:
    """`url` as shown where it is kept (`config show`, a WARC file's warcinfo), with `mark` for what may
    be a credential: a password (`user:MARK@`), a user name standing alone (an API key: `MARK@`), and
    the query string (`?MARK`)."""
    shown = re.sub(r"(//[^/@:]*:)[^/@]*@", rf"\g<1>{mark}@", url)
    shown = re.sub(r"//[^/@:]+@", f"//{mark}@", shown)
    return re.sub(r"\?.*", f"?{mark}", shown, flags=re.S)
