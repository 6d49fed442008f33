"""The one seam to happybase: every use of it that reaches past its public API.

happybase takes a connection's transport class from a module table by name,
and its `buffered` one has thriftpy2's 4 KiB buffers; the store wants 256 KiB
(`TRANSPORT_BUFFER`). So `connect` gives each connection the wide transport
itself, before its first socket, and `Pool` (happybase's pool, which makes its
connections by name) holds them, each to a gateway `gateways` chooses;
nothing of happybase's is written to. Every transport reads its socket
through `_BoundedReads`, so a length a gateway announces is bounded where it
enters (`MAX_REPLY_READ`), and thriftpy2's errors for a reply that is not
HBase's are named here (`BAD_REPLIES`). The
store's own Thrift calls (`mutate_rows`, `check_and_put`) use the connection's
client and the `Hbase_thrift` types that `import happybase` loads.
tests/unit/test_happybase_seam.py pins every name used here, so a happybase
release that changes one fails that test, not a crawl.
Cost: none per call beyond happybase's own.
"""

from __future__ import annotations

import contextlib
import functools
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import happybase
from thriftpy2.protocol.cybin import ProtocolError  # type: ignore[attr-defined]  # a C extension
from thriftpy2.protocol.exc import TProtocolException
from thriftpy2.thrift import TException
from thriftpy2.transport import TSocket, TTransportException
from thriftpy2.transport.buffered import TCyBufferedTransport

from sitemapcrawl.storage.failures import WIRE_ERRORS, server_message
from sitemapcrawl.storage.gateways import Gateway, Gateways

# Loaded by `import happybase` (thriftpy2.load registers it as a module): the Thrift types of HBase's API.
from Hbase_thrift import BatchMutation, Mutation  # isort: skip

__all__ = ["BAD_REPLIES", "GATEWAY_FAILURES", "MAX_REPLY_READ", "TRANSPORT_BUFFER", "BatchMutation", "Mutation", "Pool",
           "ReplyTooLong", "check_and_put", "connect", "discard", "mutate_rows"]

#: The buffers of the `buffered` transport: 256 KiB each way, not thriftpy2's 4 KiB, so a 1,000-row put
#: (~700 KB) leaves in three socket writes instead of 175. Each socket call lets go of the GIL, and
#: getting it back waits for the thread computing meanwhile to yield it (up to 5 ms): with 4 KiB
#: buffers, updatedb's writer and reader threads spent most of their time waiting for it.
TRANSPORT_BUFFER = 256 * 1024
WIDE_BUFFERED = functools.partial(TCyBufferedTransport, buf_size=TRANSPORT_BUFFER)

#: Most bytes one read of a reply may ask of the socket. thriftpy2's transports grow their buffer to a
#: length the reply announces (a string's, a frame's) and then read that much: a length beyond this (a
#: gateway answering garbage, or announcing 2 GiB) is refused there, as a wire error, before any of it is
#: read. HBase keeps a cell under `hbase.client.keyvalue.maxsize` (10 MB by default).
MAX_REPLY_READ = 512 * 1024 * 1024

#: What a reply that is not HBase's Thrift raises in thriftpy2's decoders: a bad version or type
#: (ProtocolError, TProtocolException), a negative length (SystemError from the C decoder), a length its
#: buffers cannot grow to (MemoryError), nesting past the depth limit (RecursionError). Like a wire error,
#: the gateway is skipped and the call tried again elsewhere.
class ReplyTooLong(TTransportException):
    """A reply announced a length over MAX_REPLY_READ."""


BAD_REPLIES: tuple[type[BaseException], ...] = (ReplyTooLong, ProtocolError, TProtocolException, SystemError,
                                                 MemoryError, RecursionError, OverflowError)
#: A broken wire or a reply that is not HBase's: either way the gateway is skipped and the call tried again.
GATEWAY_FAILURES: tuple[type[BaseException], ...] = WIRE_ERRORS + BAD_REPLIES


class _BoundedReads:
    """A connection's socket whose reads refuse more than MAX_REPLY_READ bytes at once (see there)."""

    def __init__(self, socket: TSocket) -> None:
        self._socket = socket

    def read(self, size: int) -> bytes:
        if size > MAX_REPLY_READ:
            raise ReplyTooLong(TTransportException.UNKNOWN, f"the reply announced {size:,} bytes, over "
                                                            f"{MAX_REPLY_READ:,}")
        return bytes(self._socket.read(size))

    def __getattr__(self, name: str) -> object:
        return getattr(self._socket, name)  # open, close, write, flush, is_open, sock...


def connect(host: str, port: int, timeout: int | None, transport: str, protocol: str) -> happybase.Connection:
    """A happybase connection, not yet open; `buffered` gets the wide buffers, and every transport reads
    through `_BoundedReads`. No network.

    happybase checks the transport and protocol names (ValueError for one it
    does not know). Its client is rebuilt from `_transport_class`, also when
    its pool replaces a tainted connection, so both stay.
    """
    connection = happybase.Connection(host=host, port=port, timeout=timeout, autoconnect=False,
                                      transport=transport, protocol=protocol)
    made = WIDE_BUFFERED if transport == "buffered" else connection._transport_class
    connection._transport_class = functools.partial(_bounded, made)
    connection._refresh_thrift_client()
    return connection


def _bounded(transport_class: Callable[[object], object], socket: TSocket) -> object:
    """`transport_class` over `socket` read through `_BoundedReads`."""
    return transport_class(_BoundedReads(socket))


class Pool:
    """A thread-safe pool of `size` connections, as `happybase.ConnectionPool` keeps them, over `gateways`.

    Each connection is made to the gateway `gateways.choose()` gives (round-robin,
    down ones skipped); with several gateways the idle connections are taken
    in turn, with one the last used first. A thread takes a connection for the outermost
    `connection()` block and nested blocks get the same one. A wire error
    inside a block, or a reply that is not HBase's Thrift (`BAD_REPLIES`),
    marks that connection's gateway as failed and replaces the connection by
    one to the next gateway (with one gateway: a fresh client to it); the
    error goes on, for the store to retry. A Thrift error the
    server sent refreshes the client (the socket may hold half a reply).
    No network until the first block opens its connection.
    """

    def __init__(self, size: int, gateways: Gateways, timeout: int | None, transport: str,
                 protocol: str) -> None:
        self._gateways = gateways
        self._connect = functools.partial(connect, timeout=timeout, transport=transport, protocol=protocol)
        # One gateway: the last connection used is taken again (as happybase's pool does), so a process that
        # calls one at a time keeps one socket. Several: connections are taken in turn, so the calls spread
        # over every gateway, and one that stopped answering is met (and skipped, said once) within `size`
        # calls rather than whenever its idle connection comes up again.
        self._idle: queue.Queue[_Pooled] = (queue.Queue if gateways.several else queue.LifoQueue)(maxsize=size)
        self._held = threading.local()
        for _ in range(size):
            self._idle.put(self._new())

    def _new(self) -> _Pooled:
        gateway = self._gateways.choose()
        return _Pooled(gateway, self._connect(gateway.host, gateway.port))

    @contextlib.contextmanager
    def connection(self) -> Iterator[happybase.Connection]:
        """The calling thread's connection, open, for the length of the block."""
        pooled: _Pooled | None = getattr(self._held, "current", None)
        outermost = pooled is None
        if pooled is None:
            pooled = self._idle.get()
            self._held.current = pooled
        try:
            pooled.connection.open()
            yield pooled.connection
            if outermost:
                self._gateways.answered(pooled.gateway)
        except GATEWAY_FAILURES as exc:
            if not outermost:
                raise
            # The gateway may be gone: the next call of this slot goes to the next one.
            pooled.connection.close()
            self._gateways.failed(pooled.gateway, f"{type(exc).__name__}: {server_message(exc, limit=160)}")
            replaced = self._new()
            pooled.gateway, pooled.connection = replaced.gateway, replaced.connection
            raise
        except TException:
            # As happybase's pool does: the socket may hold half a reply, so the next call gets a new one.
            pooled.connection._refresh_thrift_client()
            raise
        finally:
            if outermost:
                del self._held.current
                self._idle.put(pooled)

    def close(self) -> None:
        """Close the idle connections (one a thread holds is closed when it is next returned and closed)."""
        while True:
            try:
                pooled = self._idle.get_nowait()
            except queue.Empty:
                break
            pooled.connection.close()


@dataclass
class _Pooled:
    """A pooled connection and the gateway it goes to (both replaced after a wire error)."""

    gateway: Gateway
    connection: happybase.Connection


def discard(connection: happybase.Connection) -> None:
    """Close a connection whose call was cut short and give it new transport objects.

    A reply may be on the way, or half read into the transport's buffer: the
    buffered transport keeps what it read across `close` and `open`, so only
    fresh objects (as the pool makes after a Thrift error) are sure to start clean.
    """
    connection.close()
    connection._refresh_thrift_client()


def mutate_rows(connection: happybase.Connection, table: bytes, rows: Sequence[BatchMutation]) -> None:
    """HBase's mutateRows: the call happybase's `Batch.send` makes, with mutations the caller built."""
    connection.client.mutateRows(table, rows, {})


def check_and_put(connection: happybase.Connection, table: bytes, key: bytes, column: bytes,
                  expected: bytes | None, value: bytes) -> bool:
    """HBase's checkAndPut (happybase has none): put `value` if the cell holds `expected` (None: is absent)."""
    return bool(connection.client.checkAndPut(table, key, column, expected, Mutation(column=column, value=value), {}))
