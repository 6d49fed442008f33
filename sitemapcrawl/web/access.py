"""Access to sites that need it: extra request headers, and per-host basic auth from a netrc file.

Staging sites sit behind basic auth, and some sites want a header (a token,
a language). `RequestAccess.from_settings` reads the settings' `headers` and
`netrc` once; the HTTP client asks it for each request's headers
(`headers_for`): the extra headers, and `Authorization: Basic ...` when the
netrc file names the URL's host as a `machine` (or has a `default`), as
curl, wget and requests read it. A redirect to another host gets that
host's credentials or none. The credentials stay in this object: no row,
log line or `repr` holds them, and `web.warc` redacts the Authorization
header of the request records.

Cost: nothing without headers or a netrc file (`from_settings` gives None);
one read of the netrc file; per request, a dict copy, and with a netrc file
a dict lookup by host.
"""

from __future__ import annotations

import base64
import netrc
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from sitemapcrawl.config import Settings
from sitemapcrawl.errors import UsageError

__all__ = ["RequestAccess", "parse_headers"]


def parse_headers(lines: tuple[str, ...]) -> dict[str, str]:
    """`Name: value` lines (the `headers` setting, checked when it was loaded) as a dict, in order."""
    parsed: dict[str, str] = {}
    for line in lines:
        name, _, value = line.partition(":")
        parsed[name.strip()] = value.strip()
    return parsed


def _basic(login: str, password: str) -> str:
    """The value of an `Authorization` header for HTTP basic auth (RFC 7617, UTF-8)."""
    return "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode("ascii")


def _read_netrc(path: Path) -> netrc.netrc:
    """The parsed netrc file; UsageError in one line that names the file and line, never a token of it."""
    try:
        return netrc.netrc(str(path))
    except FileNotFoundError:
        raise UsageError(f"netrc file not found: {path}") from None
    except netrc.NetrcParseError as exc:
        # The parser's message may quote a token (a password): only the line number is said.
        raise UsageError(f"netrc file {path}: not readable as a netrc file (line {exc.lineno})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"netrc file {path}: {getattr(exc, 'strerror', None) or type(exc).__name__}") from None


class RequestAccess:
    """The extra headers and the netrc credentials of one command (see the module docstring)."""

    def __init__(self, headers: Mapping[str, str] | None = None, credentials: netrc.netrc | None = None) -> None:
        self._headers = dict(headers or {})
        self._credentials = credentials
        self._by_host: dict[str, dict[str, str]] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> RequestAccess | None:
        """The access the settings ask for; None when they ask for none (no headers, no netrc file): the
        client then adds nothing. UsageError for a netrc file that cannot be read."""
        if not settings.headers and settings.netrc is None:
            return None
        credentials = _read_netrc(settings.netrc) if settings.netrc is not None else None
        return cls(parse_headers(settings.headers), credentials)

    def __repr__(self) -> str:
        """Names only: a repr may reach a log line."""
        return (f"RequestAccess(headers={sorted(self._headers)}, "
                f"netrc={'yes' if self._credentials is not None else 'no'})")

    def headers_for(self, url: str) -> dict[str, str]:
        """The headers every request to `url` carries beyond the client's own (a new dict: the caller's)."""
        if self._credentials is None:
            return dict(self._headers)  # the same for every host: nothing to look up
        try:
            host = (urlsplit(url).hostname or "").lower()
        except ValueError:
            host = ""
        found = self._by_host.get(host)
        if found is None:
            found = dict(self._headers)
            login = self._credentials.authenticators(host) if host else None
            if login is not None:
                user, _account, password = login
                found["Authorization"] = _basic(user or "", password or "")
            self._by_host[host] = found
        return dict(found)
