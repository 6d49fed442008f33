"""WARC/1.1 output: every exchange the HTTP client makes, kept as records an archive can ingest.

A `WarcRecorder` is handed to `PoliteHttpClient`, which gives it each
exchange as sent and received (`Exchange`), or hands it back unwritten
(`Unrecorded`) for the fetch to write with its outcome. Per exchange it
writes a `response` record (a `revisit` for a 304) and a `request` record
tied to it; each file begins with a `warcinfo` record. Every record is its
own gzip member, built in memory and written to the OS in one go, so a
killed process leaves every finished record readable; a write that fails (a
full disk) is cut back to the record before it, so the file always ends on a
whole record. Each process writes files of its own, as `NAME.open` (locked
while written), renamed when closed (at `warc_max_bytes` and at the end of
the run); a recorder made later in the same folder closes the `.open` files
of runs that died (`close_dead_files`). The records, their headers and the
file names: docs/warc.md. warcio (extra `warc`) is imported when a recorder
is made.

Cost: one write per exchange, a SHA-1 over each body; one lock per process.
At start, one read of each dead run's `.open` file.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import logging
import os
import re
import socket
import threading
import zlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from sitemapcrawl.clock import precise_now
from sitemapcrawl.config import Settings, effective
from sitemapcrawl.errors import UsageError
from sitemapcrawl.processes import pid_alive
from sitemapcrawl.web.access import parse_headers

__all__ = ["Capture", "Exchange", "Unrecorded", "WarcRecorder", "close_dead_files", "open_recorder", "redacted",
           "warcinfo", "whole_members"]

log = logging.getLogger(__name__)

#: What a file still being written ends with.
OPEN_SUFFIX = ".open"

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


@dataclass(frozen=True)
class Unrecorded:
    """An exchange the client did not write, for its caller to write with the outcome it gives (the fetch:
    the outcome reaches HBase with its record, never long after), and the capture a revisit refers to."""

    exchange: Exchange
    refers: Capture | None = None


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
        close_dead_files(folder)
        self.folder = folder
        self.max_bytes = max_bytes
        self._info = info
        started = precise_now().strftime("%Y%m%d%H%M%S%f")
        self._stem = f"{_safe(prefix)}-{started}-{_safe(socket.gethostname())}-{os.getpid()}"
        self._serial = 0
        self._lock = threading.Lock()
        self._file: io.FileIO | None = None
        self._name = ""
        self._size = 0
        self.files: list[str] = []
        """Names of the files this recorder finished (closed and renamed)."""
        self.records = 0

    def record(self, exchange: Exchange, refers: Capture | None = None) -> Capture:
        """Write one exchange (response or revisit, then request); return where its response record is.

        `refers`: the earlier capture of the same URL, which a 304's revisit record points to.
        Raises OSError when the file cannot be written (a full disk); the file is then cut back to the
        record before, and closed.
        """
        date = exchange.started.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        with self._lock:
            self._open()
            buffer = io.BytesIO()
            writer = self._writer_type(buffer, gzip=True, warc_version="1.1")
            response = self._response(writer, exchange, date, refers)
            response_id = response.rec_headers.get_header("WARC-Record-ID")
            request = self._request(writer, exchange, date, response_id)
            writer.write_record(response)
            writer.write_record(request)
            offset = self._size
            self._append(buffer.getvalue())  # both records in one write: the file ends on whole records
            self.records += 2
            capture = Capture(self._name, offset, response_id, date, revisit=response.rec_type == "revisit")
            if self._size >= self.max_bytes:
                self._close()
            return capture

    def close(self) -> None:
        """Close the current file (renamed without `.open`). Never raises: a file that cannot be renamed
        is said in one warning line (the next recorder in the folder closes it)."""
        with self._lock:
            try:
                self._close()
            except OSError as exc:
                log.warning("WARC file %s%s could not be closed: %s", self._name, OPEN_SUFFIX, exc.strerror or exc)
                self._file = None

    def _append(self, data: bytes) -> None:
        """Write `data` at the end of the open file; on OSError, cut the file back to where it was (it ends on
        a whole record), close it and raise."""
        assert self._file is not None
        view, start = memoryview(data), self._size
        try:
            while view:
                view = view[self._file.write(view) or 0:]
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self._file.fileno(), start)
            self._close()
            raise
        self._size += len(data)

    def _open(self) -> None:
        if self._file is not None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        self._name = f"{self._stem}-{self._serial:05d}.warc.gz"
        self._serial += 1
        self._file = open(self.folder / f"{self._name}{OPEN_SUFFIX}", "xb", buffering=0)  # noqa: SIM115 (_close)
        fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # alive: not a dead run's file
        self._size = 0
        buffer = io.BytesIO()
        writer = self._writer_type(buffer, gzip=True, warc_version="1.1")
        writer.write_record(writer.create_warcinfo_record(self._name, self._info))
        self._append(buffer.getvalue())
        self.records += 1

    def _close(self) -> None:
        """Close the file: renamed without `.open`, or removed when it holds no record at all."""
        file, self._file = self._file, None
        if file is None:
            return
        path = self.folder / f"{self._name}{OPEN_SUFFIX}"
        file.close()
        if self._size == 0:
            path.unlink(missing_ok=True)
            return
        os.replace(path, self.folder / self._name)
        self.files.append(self._name)

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


def whole_members(stream: BinaryIO, chunk: int = 1 << 20) -> tuple[int, int]:
    """(bytes, count) of the whole gzip members at the start of `stream`, up to the first torn or bad one.

    Each WARC record here is one gzip member, so this is where a file's last whole record ends.
    Cost: one read of the stream, decompressed a bounded piece at a time (the output is dropped).
    """
    end = count = 0
    offset = 0  # where `data` begins in the stream
    decoder = zlib.decompressobj(31)
    data = b""
    while True:
        if not data:
            data = stream.read(chunk)
            if not data:
                with contextlib.suppress(zlib.error):
                    decoder.flush()
                return (offset, count + 1) if decoder.eof and offset > end else (end, count)
        try:
            decoder.decompress(data, chunk)
        except zlib.error:
            return end, count
        if decoder.eof:
            offset += len(data) - len(decoder.unused_data)
            end, count = offset, count + 1
            data, decoder = decoder.unused_data, zlib.decompressobj(31)
        else:
            offset += len(data) - len(decoder.unconsumed_tail)
            data = decoder.unconsumed_tail


def close_dead_files(folder: Path) -> list[str]:
    """Close the `.open` files of runs that died in `folder`: each is cut after its last whole record and
    renamed without `.open` (removed if it holds none), so the rows that point into it name a file that
    exists; return their final names.

    A file is dead when no process holds its lock (a running recorder locks its file) and, when its name
    says it is this machine's, its process is gone. Several processes starting at once close each file
    once (the lock). One warning line per file closed. Never raises: a file that cannot be read is left.
    """
    closed = []
    host = _safe(socket.gethostname())
    for path in sorted(folder.glob(f"*.warc.gz{OPEN_SUFFIX}")):
        stem, _, pid = path.name.removesuffix(f".warc.gz{OPEN_SUFFIX}").rpartition("-")[0].rpartition("-")
        if stem.endswith(f"-{host}") and pid.isdigit() and pid_alive(int(pid)):
            continue
        try:
            with open(path, "r+b") as stream:
                try:
                    fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue  # held: a live run's
                if os.fstat(stream.fileno()).st_ino != os.stat(path).st_ino:
                    continue  # another process closed it meanwhile
                end, records = whole_members(stream)
                size = os.fstat(stream.fileno()).st_size
                stream.truncate(end)
                final = path.with_name(path.name.removesuffix(OPEN_SUFFIX))
                if records:
                    os.replace(path, final)
                    closed.append(final.name)
                else:
                    path.unlink()
        except OSError as exc:
            log.warning("WARC file %s, left by a run that died, could not be closed: %s", path.name,
                        exc.strerror or exc)
            continue
        log.warning("WARC file %s was left open by a run that died: %s (%d whole records%s)", path.name,
                    f"closed as {final.name}" if records else "removed", records,
                    f", a torn last record of {size - end} bytes cut" if size > end else "")
    return closed


def redacted(headers: tuple[tuple[str, str], ...],
             private: frozenset[str] = REDACTED_HEADERS) -> list[tuple[str, str]]:
    """Request headers as a record keeps them: the value of each named in `private` (lower case) replaced."""
    return [(name, REDACTED if name.lower() in private else value) for name, value in headers]


def warcinfo(settings: Settings) -> dict[str, str]:
    """The fields of a warcinfo record: the crawler, its version, the WARC format and the settings, as
    `config show` shows them (`config.effective`: header values and proxy passwords hidden)."""
    from sitemapcrawl import __version__

    info = {"software": f"sitemapcrawl/{__version__}", "format": "WARC File Format 1.1",
            "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
            "hostname": socket.gethostname(), "http-header-user-agent": settings.user_agent or "",
            "robots": "obey"}
    for name, value, _source in effective(settings):
        info[f"setting-{name}"] = str(value)
    return info


def open_recorder(settings: Settings) -> WarcRecorder | None:
    """The recorder the settings ask for (`warc_dir`), or None; UsageError without warcio."""
    if not settings.warc_dir:
        return None
    recorder = WarcRecorder(Path(settings.warc_dir), settings.warc_max_bytes, warcinfo(settings))
    # The `--header` values may be tokens: recorded as redacted, as the credentials are.
    recorder.redact = REDACTED_HEADERS | {name.lower() for name in parse_headers(settings.headers)}
    return recorder
