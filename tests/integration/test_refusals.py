"""Bad values the checks let through before issue 47 (item 7 and 9): one line and exit 2, or fail-over.

Through the command line against the real HBase: `--warc ''` is refused (an
unset `$DIR` must not lose the archive silently); a crawl whose seed file is
missing creates no table; a Dask address that is none is refused at once,
before any connection; a Thrift gateway that answers random bytes, or
announces a 2 GiB string, is one line (alone) or skipped for the next
gateway (in a list), never a ProtocolError or MemoryError traceback. The
`--split auto` variables (`²`, `٣`, 5,000 digits) are tests/unit/test_taskindex.py's.
"""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import cli, cli_command, one_error_line
from hostile_web import accept_forever

from sitemapcrawl.config import Settings
from sitemapcrawl.model.webpage import WEBPAGE_TABLE
from sitemapcrawl.storage.store import Store
from sitemapcrawl.testweb import TestWebServer, bulk_web

AGENT = "Bot/1.0 (+https://example.org/bot)"
WEB = bulk_web(2, 4, first_host="127.0.47.1")  # served by the shared `web` fixture


@pytest.mark.parametrize("command", [["crawl"], ["fetch", "--batch", "b1"], ["detect"]])
def test_an_empty_warc_folder_is_refused(settings: Settings, command: list[str]) -> None:
    done = cli(settings, *command, "--warc", "", user_agent=AGENT)
    assert done.exit_code == 2
    line = one_error_line(done.stderr)
    assert "--warc" in line and "an empty folder name (an unset variable?)" in line


def test_a_crawl_whose_seed_file_is_missing_creates_no_table(settings: Settings, tmp_path: Path) -> None:
    done = cli(settings, "crawl", str(tmp_path / "missing.txt"), user_agent=AGENT)
    assert done.exit_code == 2
    assert one_error_line(done.stderr).startswith("sitemapcrawl: error: cannot read seeds")
    with Store(settings) as store:
        assert store.existing_tables() == []
    no_agent = cli(settings, "crawl")
    assert no_agent.exit_code == 2 and "a user agent is required" in one_error_line(no_agent.stderr)
    with Store(settings) as store:
        assert store.existing_tables() == []


@pytest.mark.parametrize("address", ["foo://127.0.0.1:8786", "tcp://[::1", "inproc://x", "tcp://host:99999",
                                     "tcp://", "tcp://a b:1"])
def test_a_dask_address_that_is_none_is_refused_before_connecting(settings: Settings, address: str) -> None:
    for args in (["crawl", "--dask", address], ["parse", "--batch", "b1", "--dask", address]):
        # Subprocesses with a timeout: a check that connected first would take Dask's 10-20 s, or hang.
        done = subprocess.run(cli_command(settings, "--user-agent", AGENT, *args), capture_output=True,
                              text=True, timeout=60, check=False)
        assert done.returncode == 2
        assert one_error_line(done.stderr).startswith(f"sitemapcrawl: error: --dask {address.strip()!r}")


class GarbageGateway:
    """A TCP server on loopback that answers every Thrift call with `reply` (random bytes, or a header)."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.calls = 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        accept_forever(self._server, self._answer)

    def _answer(self, client: socket.socket) -> None:
        with client:
            try:
                while client.recv(65536):
                    self.calls += 1
                    client.sendall(self.reply)
            except OSError:
                pass

    def close(self) -> None:
        self._server.close()


RANDOM = os.urandom(4096)
#: A reply header (version 1, REPLY) whose method name is announced as 2 GiB - 1 bytes long.
TWO_GIB_NAME = struct.pack("!ii", -2147418110, 2**31 - 1) + b"x" * 64
#: ... and one of 700 MB, which the transport can allocate: refused before it is read.
BIG_NAME = struct.pack("!ii", -2147418110, 700_000_000) + b"x" * 64


@pytest.fixture(params=[RANDOM, TWO_GIB_NAME, BIG_NAME], ids=["random", "2GiB", "700MB"])
def garbage(request: pytest.FixtureRequest) -> Iterator[GarbageGateway]:
    gateway = GarbageGateway(request.param)
    try:
        yield gateway
    finally:
        gateway.close()


def test_a_gateway_answering_garbage_alone_is_one_line(garbage: GarbageGateway) -> None:
    done = subprocess.run(cli_command(Settings(hbase=garbage.address, table_prefix="t_garbage_"), "init"),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and garbage.calls
    line = one_error_line(done.stderr)
    assert line.startswith(f"sitemapcrawl: error: HBase at {garbage.address} answered with what is not HBase's "
                           "Thrift1"), line
    assert "transport buffered and protocol binary" in line


def test_a_gateway_answering_garbage_is_skipped_for_the_next(garbage: GarbageGateway, settings: Settings,
                                                              store: Store, web: TestWebServer,
                                                              tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{url}\n" for url in web.base_urls()), encoding="utf-8")
    two = Settings(hbase=f"{garbage.address},{settings.hbase}", table_prefix=settings.table_prefix)
    done = subprocess.run(cli_command(two, "--user-agent", AGENT, "crawl", str(seeds), "--delay", "0",
                                      "--rounds", "3"), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and garbage.calls
    skipped = [line for line in done.stderr.splitlines() if f"gateway {garbage.address} stopped answering" in line]
    assert len(skipped) == 1  # one warning line for the process, then the other gateway
    urls = {key for key, _ in store.scan(WEBPAGE_TABLE)}
    assert len(urls) >= 2 * 4
