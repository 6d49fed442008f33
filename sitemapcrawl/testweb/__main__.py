"""``python -m sitemapcrawl.testweb``: serve a test web, or print its truth.

    python -m sitemapcrawl.testweb serve --web demo [--port P] [--ready-file F]
    python -m sitemapcrawl.testweb serve --web bulk --hosts 50 --pages 200
    python -m sitemapcrawl.testweb serve --web bulk --hosts 2000 --pages 5 --first-host 127.1.0.1 \
        --latency 0.3 --crawl-delay 1 --access-log FILE
    python -m sitemapcrawl.testweb truth --web small --port P

`serve` prints each host's base URL on stdout, one a line, then a line
starting ``ready``, and serves until SIGTERM or SIGINT; with `--ready-file`
it also writes the base URLs to that file (atomically) once serving, so
scripts can wait for the file. With `--latency S` one event loop serves every
host (`latency.LatencyWebServer`), each answer S seconds late; with
`--access-log FILE` the access log is written there as JSON lines when it
stops (start and end in wall-clock seconds). `truth` prints the truth of the web as it
would be served on `--port` as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from types import FrameType

from sitemapcrawl.clock import precise_now
from sitemapcrawl.testweb.generate import bulk_web, demo_web, small_web
from sitemapcrawl.testweb.latency import LatencyWebServer
from sitemapcrawl.testweb.model import Web
from sitemapcrawl.testweb.server import TestWebServer
from sitemapcrawl.testweb.truth import Truth


def _web(args: argparse.Namespace) -> Web:
    if args.web == "bulk":
        return bulk_web(args.hosts, args.pages, first_host=args.first_host, crawl_delay=args.crawl_delay,
                        heads=args.heads)
    return small_web() if args.web == "small" else demo_web()


def _serve(args: argparse.Namespace) -> int:
    # Bad arguments fail before signals.
    server: TestWebServer | LatencyWebServer = (
        TestWebServer(_web(args), port=args.port) if args.latency is None
        else LatencyWebServer(_web(args), args.latency, port=args.port))
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with server:
        urls = server.base_urls()
        print("\n".join(urls), flush=True)
        if args.ready_file:
            tmp = f"{args.ready_file}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write("\n".join(urls) + "\n")
            os.replace(tmp, args.ready_file)
        print(f"ready: {len(urls)} hosts on port {server.port}", flush=True)
        while not stop.wait(0.5):
            pass
    if args.access_log:
        _write_log(server, args.access_log)
    return 0


def _write_log(server: TestWebServer | LatencyWebServer, path: str) -> None:
    """The access log as JSON lines, monotonic times turned to wall-clock seconds."""
    wall = precise_now().timestamp() - time.monotonic()
    with open(path, "w", encoding="utf-8") as f:
        for r in server.log.records():
            f.write(json.dumps({"host": r.host, "target": r.target, "status": r.status, "agent": r.user_agent,
                                "start": wall + r.start, "end": wall + r.end}) + "\n")


def _truth(args: argparse.Namespace) -> int:
    json.dump(Truth(_web(args), args.port).to_json(args.agent), sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse `argv` and run `serve` or `truth`; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m sitemapcrawl.testweb",
                                     description="The loopback test web of sitemapcrawl.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (("serve", "serve a test web until SIGTERM/SIGINT"),
                            ("truth", "print what a test web holds, as JSON")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--web", choices=("demo", "small", "bulk"), default="demo")
        p.add_argument("--hosts", type=int, default=50, help="bulk: number of hosts")
        p.add_argument("--pages", type=int, default=200, help="bulk: pages per host")
        p.add_argument("--first-host", default="127.0.1.1", help="bulk: the address of the first host")
        p.add_argument("--crawl-delay", type=float, help="bulk: robots.txt Crawl-delay")
        p.add_argument("--heads", type=int, default=0,
                       help="bulk: realistic page heads with this many hreflang alternates (0: plain pages)")
    sub.choices["serve"].add_argument("--port", type=int, default=0,
                                      help="port on every host (default: a free one)")
    sub.choices["serve"].add_argument("--ready-file", help="write the base URLs here when ready")
    sub.choices["serve"].add_argument("--latency", type=float,
                                      help="serve from one event loop, each answer this many seconds late")
    sub.choices["serve"].add_argument("--access-log", help="write the access log here (JSON lines) at the end")
    sub.choices["truth"].add_argument("--port", type=int, default=8000,
                                      help="the port the web is served on")
    sub.choices["truth"].add_argument("--agent", default="sitemapcrawl",
                                      help="robots.txt product token for 'disallowed'")
    args = parser.parse_args(argv)
    try:
        return _serve(args) if args.command == "serve" else _truth(args)
    except (OSError, ValueError) as exc:
        print(f"testweb: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
