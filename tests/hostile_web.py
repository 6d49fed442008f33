"""A hostile loopback HTTP server for reliability tests: slow, drip, endless, broken, escaping answers.

`HostileServer(routes).start()` listens on 127.0.0.1 (any free port) and
answers each path with one behaviour, written straight to the socket so the
test controls every byte:

- `ok`: a 200 with a small HTML body (or `body`, `content_type` given);
- `drip`: headers at once, then the body one byte every `interval` seconds;
- `drip_head`: the status line and headers one byte every `interval` seconds;
- `stall`: read the request and never answer (until the server stops);
- `endless`: a chunked 200 that never ends (fast);
- `broken`: bytes that are not HTTP, then close;
- `escape`: a 200 whose Content-Type and body carry terminal escapes
  (`ESC ] 0 ; ... BEL` retitles a terminal, `ESC [ 2 J` clears it);
- `reset`: read the request, then close with a TCP reset.

The access log records each request's path and whether the answer was sent
completely (`Hit.complete`): a request the client abandoned is not a fetch.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

#: A title-setting OSC sequence and a clear-screen CSI: what must never reach a terminal raw.
TERMINAL_ESCAPES = "\x1b]0;pwned\x07\x1b[2J"


@dataclass(frozen=True)
class Route:
    """What one path answers."""

    behaviour: str = "ok"
    body: bytes = b"<html><body><p>hello</p></body></html>"
    content_type: str = "text/html; charset=utf-8"
    interval: float = 1.0
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    """More header lines, sent as given (`Retry-After`, `Content-Encoding`...)."""


@dataclass(frozen=True)
class Hit:
    """One request as the server saw it."""

    path: str
    complete: bool
    at: float = 0.0
    """`time.monotonic()` when the request had been read."""


@dataclass
class HostileServer:
    """A threaded socket server answering paths with `Route` behaviours (see the module docstring)."""

    routes: dict[str, Route]
    host: str = "127.0.0.1"
    hits: list[Hit] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((self.host, 0))
        self._sock.listen(64)
        self.port: int = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def url(self, path: str) -> str:
        """The absolute URL of `path` on this server."""
        return f"http://{self.host}:{self.port}{path}"

    def start(self) -> HostileServer:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._sock.close()

    def __enter__(self) -> HostileServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def count(self, path: str, complete_only: bool = True) -> int:
        """Requests for `path` (answered completely, unless `complete_only` is False)."""
        with self._lock:
            return sum(1 for h in self.hits if h.path == path and (h.complete or not complete_only))

    def _accept(self) -> None:
        accept_forever(self._sock, self._serve, self._stop)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(120)
            while not self._stop.is_set():
                request = b""
                try:
                    while b"\r\n\r\n" not in request:
                        data = conn.recv(4096)
                        if not data:
                            return
                        request += data
                except OSError:
                    return
                path = request.split(b" ", 2)[1].decode("latin-1") if request.count(b" ") >= 2 else "/"
                at = time.monotonic()
                route = self.routes.get(path, Route(status=404, body=b"not here"))
                try:
                    complete = self._answer(conn, route)
                except OSError:
                    complete = False
                with self._lock:
                    self.hits.append(Hit(path, complete, at))
                if not complete or route.behaviour in ("broken", "reset"):
                    return

    def _answer(self, conn: socket.socket, route: Route) -> bool:
        kind = route.behaviour
        if kind == "stall":
            self._stop.wait()
            return False
        if kind == "broken":
            conn.sendall(b"\x00\xffTHIS IS NOT HTTP\r\n\r\n")
            return True
        if kind == "reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return True
        content_type = route.content_type
        body = route.body
        if kind == "escape":
            content_type = f"text/html{TERMINAL_ESCAPES}"
            body = f"<html><title>x{TERMINAL_ESCAPES}</title></html>".encode()
        if kind == "endless":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = b"x" * 65536
            while not self._stop.is_set():
                conn.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            return False
        more = "".join(f"{name}: {value}\r\n" for name, value in route.headers)
        head = (f"HTTP/1.1 {route.status} X\r\nContent-Type: {content_type}\r\n{more}"
                f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1")
        if kind == "drip_head":
            return self._drip(conn, head + body, route.interval)
        conn.sendall(head)
        if kind == "drip":
            return self._drip(conn, body, route.interval)
        conn.sendall(body)
        return True

    def _drip(self, conn: socket.socket, data: bytes, interval: float) -> bool:
        for i in range(len(data)):
            if self._stop.wait(interval if i else 0):
                return False
            conn.sendall(data[i : i + 1])
        return True


def accept_forever(server: socket.socket, handle: Callable[[socket.socket], None],
                   stop: threading.Event | None = None) -> None:
    """Hand each connection `server` accepts to `handle` on a thread of its own, until the socket is closed
    (or `stop` is set)."""
    while stop is None or not stop.is_set():
        try:
            conn, _ = server.accept()
        except OSError:
            return
        threading.Thread(target=handle, args=(conn,), daemon=True).start()
