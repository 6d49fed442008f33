"""What `sitemapcrawl/storage/_happybase.py` relies on in happybase: a release that changes it fails here.

The seam reaches past happybase's public API in three places: a
connection's `_transport_class` and `_refresh_thrift_client` (to give it
256 KiB buffers), its Thrift `client` (mutateRows, checkAndPut), and the
`Hbase_thrift` module `import happybase` loads. Each is pinned below on
happybase itself (the seam is private to `storage`, so it is not imported
here); the store's behaviour over it is tests/integration/test_store.py's.
"""

from __future__ import annotations

import functools
import inspect
import sys

import happybase
import happybase.connection
import happybase.pool
import pytest
from thriftpy2.transport.buffered import TCyBufferedTransport

import sitemapcrawl.storage.store  # noqa: F401 - imported for what it must not do (see below)

WIDE = 256 * 1024


def connect(transport: str, protocol: str = "binary") -> happybase.Connection:
    """What the seam's `connect` does: a happybase connection, its transport class swapped before any socket."""
    connection = happybase.Connection(host="127.0.0.1", port=9, timeout=1000, autoconnect=False,
                                      transport=transport, protocol=protocol)
    if transport == "buffered":
        connection._transport_class = functools.partial(TCyBufferedTransport, buf_size=WIDE)
        connection._refresh_thrift_client()
    return connection


def field_names(thrift_type: type) -> list[str]:
    return [spec[1] for _, spec in sorted(thrift_type.thrift_spec.items())]  # type: ignore[attr-defined]


def test_the_pool_and_the_connection_keep_the_shape_the_seams_pool_copies() -> None:
    pool = inspect.getsource(happybase.pool.ConnectionPool)
    # The seam's Pool behaves as happybase's: LIFO (with one gateway), one connection per thread, refresh on a
    # wire error.
    assert "queue.LifoQueue" in pool and "threading.local()" in pool and "except (TException, socket.error)" in pool
    for method in ("open", "close", "table", "create_table", "delete_table", "tables"):
        assert callable(getattr(happybase.Connection, method))


def test_the_connection_takes_the_arguments_the_seam_passes() -> None:
    parameters = inspect.signature(happybase.Connection.__init__).parameters
    assert {"host", "port", "timeout", "autoconnect", "transport", "protocol"} <= set(parameters)


def test_a_connection_builds_its_client_from_its_transport_class() -> None:
    # happybase's Connection.__init__ looks the class up by name and _refresh_thrift_client builds from it.
    source = inspect.getsource(happybase.Connection)
    assert "self._transport_class = THRIFT_TRANSPORTS[transport]" in source
    refresh = inspect.getsource(happybase.Connection._refresh_thrift_client)
    assert "self.transport = self._transport_class(socket)" in refresh and "self.client = TClient(" in refresh
    # ...and its pool replaces a tainted connection's client with the same method.
    assert "connection._refresh_thrift_client()" in inspect.getsource(happybase.pool.ConnectionPool.connection)


def test_buffered_connections_get_wide_buffers_without_touching_happybase() -> None:
    connection = connect("buffered")
    assert isinstance(connection.transport, TCyBufferedTransport)
    connection._refresh_thrift_client()  # as the pool does after a wire error: still the wide class
    assert isinstance(connection.transport, TCyBufferedTransport)
    assert connection._transport_class.keywords == {"buf_size": WIDE}  # type: ignore[attr-defined]
    # Importing the store (above) registered nothing in happybase's table.
    assert set(happybase.connection.THRIFT_TRANSPORTS) == {"buffered", "framed"}


def test_other_transports_are_happybases_own() -> None:
    connection = connect("framed", "compact")
    assert connection._transport_class is happybase.connection.THRIFT_TRANSPORTS["framed"]
    with pytest.raises(ValueError, match="transport"):
        connect("carrier-pigeon")


def test_the_thrift_types_and_calls_are_the_ones_the_store_sends() -> None:
    thrift = sys.modules["Hbase_thrift"]  # loaded by `import happybase`
    assert field_names(thrift.Mutation) == ["isDelete", "column", "value", "writeToWAL"]
    assert field_names(thrift.BatchMutation) == ["row", "mutations"]
    assert field_names(thrift.Hbase.mutateRows_args) == ["tableName", "rowBatches", "attributes"]
    assert field_names(thrift.Hbase.checkAndPut_args) == ["tableName", "row", "column", "value", "mput", "attributes"]
    assert {"mutateRows", "checkAndPut"} <= set(thrift.Hbase.thrift_services)
    assert hasattr(connect("buffered"), "client")


def test_a_closed_buffered_transport_keeps_what_it_read_so_a_cut_call_needs_new_objects() -> None:
    # Why `discard` (a call cut short by Ctrl-C) refreshes the client and does not only close it: the
    # buffered transport keeps the bytes it read past the caller's request across close(), and the next
    # call on the reopened socket would read that half reply as its own ("Missing result").
    import socket

    from thriftpy2.transport import TSocket

    server, peer = socket.socketpair()
    later, later_peer = socket.socketpair()
    try:
        wire = TSocket()
        wire.sock = server
        transport = TCyBufferedTransport(wire, buf_size=WIDE)
        peer.sendall(b"half a reply, then the rest")
        assert transport.read(4) == b"half"
        transport.close()
        wire.sock = later  # reopened
        later_peer.sendall(b"the next reply")
        assert transport.read(8) == b" a reply"  # the old bytes, not the new
    finally:
        for end in (server, peer, later, later_peer):
            end.close()
    connection = connect("buffered")
    old = (connection.transport, connection.client)
    connection._refresh_thrift_client()
    assert connection.transport is not old[0] and connection.client is not old[1]



class _Feed:
    """A socket that answers with `data` once, then ends; notes the sizes it is asked for."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.asked: list[int] = []

    def read(self, size: int) -> bytes:
        self.asked.append(size)
        if not self.data:
            raise EOFError
        data, self.data = self.data, b""
        return data


def test_the_transports_ask_the_socket_for_an_announced_length_in_one_read() -> None:
    # Why the seam bounds lengths in the socket's `read`: the buffered transport grows its buffer to a
    # string length the reply announces, the framed one to a frame size, and each asks its socket (a
    # Python object) for that much at once, before any of it has arrived.
    import struct

    from thriftpy2.protocol import TBinaryProtocol
    from thriftpy2.transport import TCyFramedTransport

    name_of_300_mb = _Feed(struct.pack("!ii", -2147418110, 300_000_000))
    with pytest.raises(EOFError):
        TBinaryProtocol(TCyBufferedTransport(name_of_300_mb, buf_size=WIDE)).read_message_begin()
    assert max(name_of_300_mb.asked) >= 300_000_000
    frame_of_300_mb = _Feed(struct.pack("!i", 300_000_000))
    with pytest.raises(EOFError):
        TBinaryProtocol(TCyFramedTransport(frame_of_300_mb)).read_message_begin()
    assert max(frame_of_300_mb.asked) >= 300_000_000


def test_the_decoders_errors_for_garbage_are_importable_where_the_seam_takes_them() -> None:
    from thriftpy2.protocol.cybin import ProtocolError
    from thriftpy2.protocol.exc import TProtocolException
    from thriftpy2.transport import TTransportException

    assert issubclass(ProtocolError, Exception) and issubclass(TProtocolException, Exception)
    assert TTransportException.UNKNOWN == 0
