"""Host names: the canonical form of the host part of a URL, and registered domains.

Lowercase, IDN to punycode (UTS #46, as browsers map), a trailing dot
dropped, IPv4 in any form browsers accept written as a dotted quad, IPv6 in
its compressed form, a leading `www.` stripped when asked; a host or port
that could not be asked for is an `InvalidUrlError`. Registered domains come
from the Public Suffix List shipped in the `publicsuffixlist` wheel (offline).
Pure: no network, no HBase; `urls` applies it to whole URLs.
Cost: cached per host (hosts repeat); the suffix list is read once (~40 ms).
"""

from __future__ import annotations

import functools
import ipaddress
import re
import urllib.parse

import idna
from publicsuffixlist import PublicSuffixList

from sitemapcrawl.errors import InvalidUrlError

# Four numbers: an IPv4 address once canonical (`canonical_hostname` writes every IPv4 so).
_IPV4_SHAPE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")

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
def canonical_hostname(raw: str, lowercase: bool, idn: bool, strip_www: bool) -> str:
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


def canonical_port(raw: str, url: str) -> int | None:
    """The port as a number (None when the URL has none); InvalidUrlError if unusable."""
    if not raw:
        return None
    if not raw.isdigit() or not raw.isascii() or not 0 < int(raw) <= 65535:
        raise InvalidUrlError(f"bad port {raw!r} in {url!r}")
    return int(raw)


def _unquote(text: str) -> str:
    """Decode %XX escapes as UTF-8 (bad bytes become U+FFFD, which no host accepts)."""
    return urllib.parse.unquote(text, errors="replace")


def is_ip_literal(host: str) -> bool:
    """Whether a canonical host is an IP address (a bracketed IPv6, or four numbers): it has no labels."""
    return host.startswith("[") or _IPV4_SHAPE.fullmatch(host) is not None


@functools.lru_cache(maxsize=65_536)
def registered_domain(host: str) -> str:
    """The registered domain of a canonical host (public suffix plus one label); an IP is its own. Cached."""
    if is_ip_literal(host):
        return host
    return _public_suffixes().privatesuffix(host) or host
