"""WARC/1.1 output: every exchange the HTTP client makes, kept as records an archive can ingest.

A `WarcRecorder` is handed to `PoliteHttpClient`, which gives it each
exchange as sent and received (`Exchange`). Per exchange it writes a
`response` record (a `revisit` for a 304) and a `request` record tied to it;
each file begins with a `warcinfo` record. Every record is its own gzip
member, flushed to the OS at once, so a killed process leaves every finished
record readable; each process writes files of its own, as `NAME.open`,
renamed when closed (at `warc_max_bytes` and at the end of the run). The
records, their headers and the file names: docs/warc.md. warcio (extra
`warc`) is imported when a recorder is made.

Cost: one write and flush per record, a SHA-1 over each body; one lock per process.
"""

from __future__ import annotations

import dataclasses
import io
import os
import re
import socket
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sitemapcrawl.config import Settings
from sitemapcrawl.errors import UsageError

__all__ = ["Capture", "Exchange", "WarcRecorder", "open_recorder", "redacted", "warcinfo"]

#: Settings left out of the warcinfo record: a proxy URL may carry a password, a header a token.
_PRIVATE_SETTINGS = frozenset({"http_proxy", "https_proxy", "headers"})
#: Request headers whose values a request record never holds (netrc basic auth, cookies); `open_recorder`
#: adds the names of the `headers` setting.
REDACTED_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
REDACTED = "[redacted]"
#: The body is recorded without its chunked framing, so this header would misdescribe it.
_DROPPED_HEADERS = frozenset({"transfer-encoding"})
_SERVER_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"


@dataclass(frozen=True)
class Exchange:
    """One HTTP request and its answer, as sent and as received."""

    url: str
    started: datetime
    """UTC time the request was sent (the records' `WARC-Date`)."""
    request_line: str
    """`GET /path?query HTTP/1.1`."""
    request_headers: tuple[tuple[str, str], ...]
    protocol: str
    """`HTTP/1.1` (or `HTTP/1.0`) as the server answered."""
    status_line: str
    """`200 OK`."""
    response_headers: tuple[tuple[str, str], ...]
    body: bytes
    """The body as received: still content-coded (gzip...), without its chunked framing."""
    truncated: bool = False
    """The body was cut at the client's size cap (`WARC-Truncated: length`)."""
    peer: str | None = None
    """The server's IP address, when known."""


@dataclass(frozen=True)
class Capture:
    """Where one exchange's response (or revisit) record is: what a row keeps."""

    file: str
    """The file's final name (without `.open`), relative to the WARC folder."""
    offset: int
    """Byte offset of the record's gzip member in the file."""
    record_id: str
    """`WARC-Record-ID` of the record (`<urn:uuid:...>`)."""
    date: str
    """`WARC-Date` of the record."""
    revisit: bool = False


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-") or "host"


class WarcRecorder:
    """Writes exchanges as WARC records into a series of rotating files (see the module docstring)."""

    redact: frozenset[str] = REDACTED_HEADERS
    """Request headers (lower case) whose values the request records hold as `[redacted]`."""

    def __init__(self, folder: Path, max_bytes: int, info: dict[str, str], prefix: str = "sitemapcrawl") -> None:
        """A recorder writing into `folder` (made if missing); UsageError without warcio or a writable folder."""
        try:
            from warcio.statusandheaders import StatusAndHeaders
            from warcio.warcwriter import WARCWriter
        except ImportError:
            raise UsageError("WARC output needs warcio: pip install 'sitemapcrawl[warc]'") from None
        self._headers_type = StatusAndHeaders
        self._writer_type = WARCWriter
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"WARC folder {folder}: {exc.strerror or exc}") from None
        if not os.access(folder, os.W_OK | os.X_OK):
            raise UsageError(f"WARC folder {folder}: not writable")
        self.folder = folder
        self.max_bytes = max_bytes
        self._info = info
        started = datetime.now(UTC).strftime("%Y%m%d%H%M%S%f")
        self._stem = f"{_safe(prefix)}-{started}-{_safe(socket.gethostname())}-{os.getpid()}"
        self._serial = 0
        self._lock = threading.Lock()
        self._file: io.BufferedWriter | None = None
        self._writer: Any = None
        self._name = ""
        self.files: list[str] = []
        """Names of the files this recorder finished (closed and renamed)."""
        self.records = 0

    def record(self, exchange: Exchange, refers: Capture | None = None) -> Capture:
        """Write one exchange (response or revisit, then request); return where its response record is.

        `refers`: the earlier capture of the same URL, which a 304's revisit record points to.
        Raises OSError when the file cannot be written (the client then counts the request as failed).
        """
        date = exchange.started.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        with self._lock:
            writer = self._open()
            response = self._response(writer, exchange, date, refers)
            response_id = response.rec_headers.get_header("WARC-Record-ID")
            request = self._request(writer, exchange, date, response_id)
            assert self._file is not None
            offset = self._file.tell()
            for record in (response, request):
                writer.write_record(record)
                self._file.flush()  # each finished record reaches the OS: a SIGKILL cannot lose it
            self.records += 2
            capture = Capture(self._name, offset, response_id, date, revisit=response.rec_type == "revisit")
            if self._file.tell() >= self.max_bytes:
                self._close()
            return capture

    def close(self) -> None:
        """Close the current file (renamed without `.open`)."""
        with self._lock:
            self._close()

    def _open(self) -> Any:
        if self._writer is not None:
            return self._writer
        self.folder.mkdir(parents=True, exist_ok=True)
        self._name = f"{self._stem}-{self._serial:05d}.warc.gz"
        self._serial += 1
        self._file = open(self.folder / f"{self._name}.open", "xb")  # noqa: SIM115 (closed by _close)
        self._writer = self._writer_type(self._file, gzip=True, warc_version="1.1")
        self._writer.write_record(self._writer.create_warcinfo_record(self._name, self._info))
        self._file.flush()
        self.records += 1
        return self._writer

    def _close(self) -> None:
        if self._file is None:
            return
        self._file.close()
        os.replace(self.folder / f"{self._name}.open", self.folder / self._name)
        self.files.append(self._name)
        self._file, self._writer = None, None

    def _response(self, writer: Any, exchange: Exchange, date: str, refers: Capture | None) -> Any:
        headers = [(k, v) for k, v in exchange.response_headers if k.lower() not in _DROPPED_HEADERS]
        http = self._headers_type(exchange.status_line, headers, protocol=exchange.protocol)
        warc: dict[str, str] = {"WARC-Date": date}
        if exchange.peer:
            warc["WARC-IP-Address"] = exchange.peer
        if exchange.truncated:
            warc["WARC-Truncated"] = "length"
        if exchange.status_line.startswith("304"):
            warc["WARC-Profile"] = _SERVER_NOT_MODIFIED
            if refers is not None:
                warc.update({"WARC-Refers-To": refers.record_id, "WARC-Refers-To-Target-URI": exchange.url,
                             "WARC-Refers-To-Date": refers.date})
            return writer.create_warc_record(exchange.url, "revisit", http_headers=http, warc_headers_dict=warc)
        return writer.create_warc_record(exchange.url, "response", payload=io.BytesIO(exchange.body),
                                         length=len(exchange.body), http_headers=http, warc_headers_dict=warc)

    def _request(self, writer: Any, exchange: Exchange, date: str, response_id: str) -> Any:
        http = self._headers_type(exchange.request_line, redacted(exchange.request_headers, self.redact),
                                  is_http_request=True)
        return writer.create_warc_record(exchange.url, "request", http_headers=http,
                                         warc_headers_dict={"WARC-Date": date, "WARC-Concurrent-To": response_id})


def redacted(headers: tuple[tuple[str, str], ...],
             private: frozenset[str] = REDACTED_HEADERS) -> list[tuple[str, str]]:
    """Request headers as a record keeps them: the value of each named in `private` (lower case) replaced."""
    return [(name, REDACTED if name.lower() in private else value) for name, value in headers]


def warcinfo(settings: Settings) -> dict[str, str]:
    """The fields of a warcinfo record: the crawler, its version, the WARC format and the settings."""
    from sitemapcrawl import __version__

    info = {"software": f"sitemapcrawl/{__version__}", "format": "WARC File Format 1.1",
            "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
            "hostname": socket.gethostname(), "http-header-user-agent": settings.user_agent or "",
            "robots": "obey"}
    for field in dataclasses.fields(settings):
        if field.name not in _PRIVATE_SETTINGS:
            info[f"setting-{field.name}"] = str(getattr(settings, field.name))
    return info


def open_recorder(settings: Settings) -> WarcRecorder | None:
    """The recorder the settings ask for (`warc_dir`), or None; UsageError without warcio."""
    if not settings.warc_dir:
        return None
    recorder = WarcRecorder(Path(settings.warc_dir), settings.warc_max_bytes, warcinfo(settings))
    # The `--header` values may be tokens: recorded as redacted, as the credentials are.
    recorder.redact = REDACTED_HEADERS | {line.partition(":")[0].strip().lower() for line in settings.headers}
    return recorder
