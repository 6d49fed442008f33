"""Reliability logic without a network or HBase: escaping, error classification, bad seeds, leases, batches."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from Hbase_thrift import IllegalArgument
from Hbase_thrift import IOError as HbaseIOError
from hypothesis import given
from hypothesis import strategies as st
from thriftpy2.thrift import TApplicationException
from thriftpy2.transport import TTransportException

from sitemapcrawl.batch.leases import Holder
from sitemapcrawl.batch.registry import BatchState
from sitemapcrawl.config import Settings
from sitemapcrawl.errors import UsageError
from sitemapcrawl.jobs.inject import DETAIL_LIMIT, InjectCounts, Rejected, seed_lines
from sitemapcrawl.report.serve import ServeOptions, make_server
from sitemapcrawl.safetext import printable, printable_json
from sitemapcrawl.storage.failures import MAX_KEY_BYTES, check_key, check_table_prefix, classify, server_message
from sitemapcrawl.storage.store import Store
from sitemapcrawl.web.rules import UrlRules
from sitemapcrawl.web.urlfilters import SitemapBlacklist, UrlFilter
from sitemapcrawl.web.urls import DEFAULT_RULES

RULES = UrlRules(Settings(), DEFAULT_RULES, UrlFilter.from_lines(["+."]), SitemapBlacklist.from_lines([]))
TITLE = "\x1b]0;pwned\x07"

# ------------------------------------------------------------- printing ---


def test_printable_escapes_terminal_controls() -> None:
    shown = printable(f"text/html{TITLE}\x1b[2J\x9b31m\u202etxt\r\n")
    assert shown == "text/html\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202etxt\\x0d\\x0a"
    assert printable("a\tb\nc", keep_newlines=True) == "a\tb\nc"
    assert printable("plain URL http://example.com/é") == "plain URL http://example.com/é"


#: What `printable` escapes, as its docstring and the module's say: C0 controls but tab, DEL, C1
#: controls, line and paragraph separators, bidi controls. JSON escapes C0 itself.
UNSAFE = frozenset([*map(chr, range(0x00, 0x09)), *map(chr, range(0x0a, 0x20)), *map(chr, range(0x7f, 0xa0)),
                    "\u2028", "\u2029", *map(chr, range(0x202a, 0x202f)), *map(chr, range(0x2066, 0x206a))])
UNSAFE_IN_JSON = frozenset(c for c in UNSAFE if ord(c) >= 0x7f)
TEXT = st.text(alphabet=st.one_of(st.characters(), st.sampled_from(sorted(UNSAFE))))


def escaped(text: str, keep_newlines: bool = False) -> str:
    return "".join(c if c not in UNSAFE or (keep_newlines and c == "\n")
                   else f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" for c in text)


@given(TEXT)
def test_printable_escapes_exactly_the_unsafe_characters(text: str) -> None:
    # Its fast path (text Python calls printable is returned as it is) must agree with the escaping.
    assert printable(text) == escaped(text)
    assert printable(text, keep_newlines=True) == escaped(text, keep_newlines=True)


@given(TEXT)
def test_printable_json_reads_back_and_leaves_nothing_unsafe_raw(text: str) -> None:
    shown = printable_json({"t": text})
    assert json.loads(shown) == {"t": text}
    assert not UNSAFE_IN_JSON & set(shown)


def test_printable_caps_long_text() -> None:
    shown = printable("x" * 100_000, limit=200)
    assert shown == "x" * 200 + "... (99800 more characters)"


def test_printable_json_escapes_what_json_leaves_raw() -> None:
    text = printable_json({"ct": f"a{TITLE}\x9b"})
    assert "\x1b" not in text and "\x9b" not in text and "\x07" not in text
    assert json.loads(text) == {"ct": f"a{TITLE}\x9b"}


# ------------------------------------------------------- HBase errors ---


def test_server_messages_in_bytes_become_one_short_line() -> None:
    error = HbaseIOError(message=b"org.apache.hadoop.hbase.TableNotFoundException: x\n\tat org.Foo(Foo.java:1)")
    assert server_message(error) == "org.apache.hadoop.hbase.TableNotFoundException: x"
    assert server_message(HbaseIOError(message=b"\xff\x1b]0;x\x07" + b"y" * 1000), limit=50).endswith("...")
    assert "\x1b" not in server_message(HbaseIOError(message=b"\x1b]0;x\x07"))

    class Broken(Exception):
        def __str__(self) -> str:
            return 42  # type: ignore[return-value]

    assert server_message(Broken()) == "Broken"


@pytest.mark.parametrize(
    ("error", "permanent"),
    [
        (TTransportException(message="closed"), None),
        (ConnectionResetError(), None),
        (HbaseIOError(message=b"org.apache.hadoop.hbase.NotServingRegionException: busy"), None),
        (HbaseIOError(message=b"org.apache.hadoop.hbase.DoNotRetryIOException: Zookeeper GET could not be "
                              b"completed in 10000 ms\n\tat org.apache..."), None),
        (HbaseIOError(message=b"org.apache.hadoop.hbase.TableNotFoundException: t"), "table missing"),
        (HbaseIOError(message=b"org.apache.hadoop.hbase.NamespaceNotFoundException: n"), "namespace missing"),
        (HbaseIOError(message=b"org.apache.hadoop.hbase.security.AccessDeniedException: no"), "access denied"),
        (HbaseIOError(message=b"RetriesExhausted: NoSuchColumnFamilyException: zz"),
         "column family missing (a table from another version?)"),
        (TApplicationException(6, b"Internal error processing getRowWithColumns"),
         "the server could not process the request (Internal error processing getRowWithColumns)"),
    ],
)
def test_classify_retries_the_wire_and_fails_permanent_errors(error: Exception, permanent: str | None) -> None:
    assert classify(error) == permanent


def test_illegal_argument_is_permanent() -> None:
    assert classify(IllegalArgument(message=b"bad column")) == "invalid request: bad column"


def test_table_prefix_and_key_are_checked_before_any_round_trip() -> None:
    check_table_prefix("demo_")
    check_table_prefix("ns:demo_")
    for bad in ("bad name!", "a/b", "-x", "\x1b]0;x\x07"):
        with pytest.raises(UsageError, match="table prefix"):
            Store(Settings(table_prefix=bad))
    check_key(b"k" * MAX_KEY_BYTES, "read")
    with pytest.raises(Exception, match="over HBase's limit of 32,767 bytes"):
        check_key(b"k" * 100_000, "read")


# ---------------------------------------------------------------- seeds ---

BAD_SEEDS = [
    ("http://example.com/\tscore=nan", "bad metadata", "score='nan' is not a finite number"),
    ("http://example.com/\tscore=inf", "bad metadata", "score='inf' is not a finite number"),
    ("http://example.com/\tscore=-Infinity", "bad metadata", "score='-Infinity' is not a finite number"),
    ("http://example.com/\tscore=1e999", "bad metadata", "score='1e999' is not a finite number"),
    ("http://example.com/\tdepth=nan", "bad metadata", "depth='nan' is not a number"),
    ("http://example.com/\tfetchInterval=1e999", "bad metadata", "fetchInterval='1e999' is not a number"),
    (b"http://example.com/caf\xe9".decode("utf-8", "surrogateescape"), "not UTF-8",
     "byte 0xe9 at column 23 is not UTF-8"),
    (b"\xff\xfehttp://example.com/".decode("utf-8", "surrogateescape"), "not UTF-8",
     "byte 0xff at column 1 is not UTF-8"),
]


@pytest.mark.parametrize(("line", "reason", "detail"), BAD_SEEDS)
def test_bad_seeds_are_refused_with_the_line_number(line: str, reason: str, detail: str) -> None:
    rejected: list[Rejected] = []
    good = list(seed_lines(["http://example.com/ok", line, "http://example.com/ok2"], RULES, InjectCounts(),
                           rejected.append))
    assert [seed.url for seed in good] == ["http://example.com/ok", "http://example.com/ok2"]
    assert [(r.line, r.reason) for r in rejected] == [(2, reason)]
    assert detail in rejected[0].detail


def test_a_huge_bad_line_is_quoted_briefly() -> None:
    rejected: list[Rejected] = []
    list(seed_lines([f"http://example.com/\tscore={'9' * 100_000}x"], RULES, InjectCounts(), rejected.append))
    (one,) = rejected
    assert len(one.detail) < DETAIL_LIMIT + 40
    assert one.detail.endswith("more characters)")


# --------------------------------------------------------------- leases ---


def test_lease_holder_round_trips_and_knows_a_dead_local_process() -> None:
    until = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    holder = Holder("otherhost:12:abc", until)
    assert holder.text() == b"worker=otherhost:12:abc until=2026-01-02T03:04:05Z"
    assert Holder.parse(holder.text()) == holder
    assert Holder.parse(b"garbage") is None and Holder.parse(None) is None
    assert not holder.gone()  # another machine: only its expiry frees it
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)
    dead = Holder(f"{socket.gethostname()}:{finished.stdout.strip()}:x", until)
    assert dead.gone()
    assert not Holder(f"{socket.gethostname()}:{os.getppid()}:x", until).gone()


def test_batch_state_names_its_phase() -> None:
    made = datetime(2026, 1, 1, tzinfo=UTC)
    state = BatchState("b1", made, 10, 2, "mixed", {"fetch.0/2": "t"})
    assert state.fetch_split_names == ["fetch.0/2", "fetch.1/2"]
    assert state.phase() == "fetching (1 of 2 fetch splits done)" and not state.finished
    assert BatchState("b1", made, 10, 2, "mixed", {"fetch.0/2": "t", "fetch.1/2": "t"}).phase() == (
        "fetched, not parsed")
    assert BatchState("b1", made, 10, 1, None, {"fetch.0/1": "t", "parse": "t"}).phase() == "parsed, not updated"
    assert BatchState("b1", made, 10, 1, None, {"update": "t"}).finished
    assert BatchState("b1", made, 10, 1, None, {"release": "t"}).phase() == "released"
    line = BatchState("b1", made, 10, 1, "mixed", {}, {"parse": "worker=h:1:a until=x"}).line()
    assert line.startswith("b1\tfetching (0 of 1 fetch splits done)\tgenerated 2026-01-01T00:00:00Z\trows 10")
    assert "parse held by worker=h:1:a" in line


# ---------------------------------------------------------------- serve ---


def test_serve_logs_a_client_gone_away_as_one_debug_line(capsys: pytest.CaptureFixture[str]) -> None:
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger("sitemapcrawl.report.serve")
    handler, level = Keep(), logger.level
    logger.addHandler(handler)  # directly: a CLI run in this process may have stopped propagation
    logger.setLevel(logging.DEBUG)
    server = make_server(Store(Settings()), ServeOptions(port=0))
    try:
        try:
            raise BrokenPipeError(32, "Broken pipe")
        except BrokenPipeError:
            server.handle_error(None, ("127.0.0.9", 5555))
        try:
            raise ValueError("odd")
        except ValueError:
            server.handle_error(None, ("127.0.0.9", 5556))
    finally:
        server.server_close()
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert "Traceback" not in capsys.readouterr().err  # socketserver's default would print one
    assert [(r.levelno, r.getMessage()) for r in records] == [
        (logging.DEBUG, "serve: client 127.0.0.9 went away (BrokenPipeError)"),
        (logging.WARNING, "serve: request from 127.0.0.9 failed: ValueError: odd"),
    ]
