"""The one seam to happybase: every use of it that reaches past its public API.

happybase takes a connection's transport class from a module table by name,
and its `buffered` one has thriftpy2's 4 KiB buffers; the store wants 256 KiB
(`TRANSPORT_BUFFER`). So `connect` gives each connection the wide transport
itself, before its first socket, and `Pool` (happybase's pool, which makes its
connections by name) holds them; nothing of happybase's is written to. The
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
from collections.abc import Iterator, Sequence

import happybase
from thriftpy2.thrift import TException
from thriftpy2.transport.buffered import TCyBufferedTransport

# Loaded by `import happybase` (thriftpy2.load registers it as a module): the Thrift types of HBase's API.
from Hbase_thrift import BatchMutation, Mutation  # isort: skip

__all__ = ["TRANSPORT_BUFFER", "BatchMutation", "Mutation", "Pool", "check_and_put", "connect", "mutate_rows"]

#: The buffers of the `buffered` transport: 256 KiB each way, not thriftpy2's 4 KiB, so a 1,000-row put
#: (~700 KB) leaves in three socket writes instead of 175. Each socket call lets go of the GIL, and
#: getting it back waits for the thread computing meanwhile to yield it (up to 5 ms): with 4 KiB
#: buffers, updatedb's writer and reader threads spent most of their time waiting for it.
TRANSPORT_BUFFER = 256 * 1024
WIDE_BUFFERED = functools.partial(TCyBufferedTransport, buf_size=TRANSPORT_BUFFER)


def connect(host: str, port: int, timeout: int | None, transport: str, protocol: str) -> happybase.Connection:
    """A happybase connection, not yet open; `buffered` gets the wide buffers. No network.

    happybase checks the transport and protocol names (ValueError for one it
    does not know). Its client is rebuilt from `_transport_class`, also when
    its pool replaces a tainted connection, so the wide buffers stay.
    """
    connection = happybase.Connection(host=host, port=port, timeout=timeout, autoconnect=False,
                                      transport=transport, protocol=protocol)
    if transport == "buffered":
        connection._transport_class = WIDE_BUFFERED
        connection._refresh_thrift_client()
    return connection


class Pool:
    """A thread-safe pool of `size` connections, as `happybase.ConnectionPool` keeps them.

    A thread takes a connection for the outermost `connection()` block and
    nested blocks get the same one; a Thrift or socket error inside a block
    replaces the connection's client (the error goes on). The first
    connection opens at once, so an unreachable address fails here.
    """

    def __init__(self, size: int, host: str, port: int, timeout: int | None, transport: str,
                 protocol: str) -> None:
        self._idle: queue.LifoQueue[happybase.Connection] = queue.LifoQueue(maxsize=size)
        self._held = threading.local()
        for _ in range(size):
            self._idle.put(connect(host, port, timeout, transport, protocol))
        with self.connection():
            pass

    @contextlib.contextmanager
    def connection(self) -> Iterator[happybase.Connection]:
        """The calling thread's connection, open, for the length of the block."""
        connection: happybase.Connection | None = getattr(self._held, "current", None)
        outermost = connection is None
        if connection is None:
            connection = self._idle.get()
            self._held.current = connection
        try:
            connection.open()
            yield connection
        except (OSError, TException):
            # As happybase's pool does: the socket may hold half a reply, so the next call gets a new one.
            connection._refresh_thrift_client()
            connection.open()
            raise
        finally:
            if outermost:
                del self._held.current
                self._idle.put(connection)

    def close(self) -> None:
        """Close the idle connections (one a thread holds is closed when it is next returned and closed)."""
        while True:
            try:
                connection = self._idle.get_nowait()
            except queue.Empty:
                break
            connection.close()


def mutate_rows(connection: happybase.Connection, table: bytes, rows: Sequence[BatchMutation]) -> None:
    """HBase's mutateRows: the call happybase's `Batch.send` makes, with mutations the caller built."""
    connection.client.mutateRows(table, rows, {})


def check_and_put(connection: happybase.Connection, table: bytes, key: bytes, column: bytes,
                  expected: bytes | None, value: bytes) -> bool:
    """HBase's checkAndPut (happybase has none): put `value` if the cell holds `expected` (None: is absent)."""
    return bool(connection.client.checkAndPut(table, key, column, expected, Mutation(column=column, value=value), {}))
