"""What HBase's errors mean: retry, or one line for the user.

What the server reports is classified (`classify`): a missing table or
namespace, an invalid table name, a key too long, a missing family, access
denied, or a request the server could not process at all
(`TApplicationException`) is permanent and fails at once with one line
(`StoreRejectedError` or `TableMissingError`); wire errors (`WIRE_ERRORS`)
and the rest are retried by the store. Server messages arrive as bytes
(thriftpy2) and carry Java stack traces: `server_message` turns them into
one short line, so formatting an error never fails. Checks made before a
request (table prefix, key length) live here too; so does the advice of a
store that gave up (`how_to_reach`: the local HBase's logs, or what to check
on another one). No I/O.
"""

from __future__ import annotations

import os
import re
import socket

from thriftpy2.thrift import TApplicationException, TException
from thriftpy2.transport import TTransportException

from sitemapcrawl.config import HBASE_HOST, HBASE_THRIFT_PORT, Settings
from sitemapcrawl.errors import StoreRejectedError, UsageError

#: Errors of the wire: retried after reconnecting.
WIRE_ERRORS = (TTransportException, socket.error, EOFError, BrokenPipeError, ConnectionError)

HOW_TO_START = "start the local one with: scripts/hbase-local start"


#: HBase's longest row key (Short.MAX_VALUE bytes).
MAX_KEY_BYTES = 32_767
#: A table name HBase accepts: [namespace:]qualifier, letters, digits, '_', '-', '.'.
_TABLE_NAME = re.compile(r"(?:[A-Za-z0-9_]+:)?[A-Za-z0-9_][A-Za-z0-9_.-]*")
#: Java exceptions in a server message that no retry can cure, and what to tell the user.
_PERMANENT = (
    ("TableNotFoundException", "table missing"),
    ("NamespaceNotFoundException", "namespace missing"),
    ("NoSuchColumnFamilyException", "column family missing (a table from another version?)"),
    ("AccessDeniedException", "access denied"),
    ("IllegalArgumentException", "invalid request"),
    ("TableExistsException", "table exists"),
)
# Not DoNotRetryIOException as such: the Thrift server wraps passing trouble in it too
# ("Zookeeper GET could not be completed in 10000 ms"), and that is worth a retry.


def server_message(exc: BaseException, limit: int = 300) -> str:
    """One short line for any error, Thrift ones included; never raises.

    thriftpy2 exceptions carry `message` as bytes (and `str()` of them then
    fails); HBase adds a Java stack trace. The first line is kept, decoded
    with replacement, control characters escaped and cut at `limit`.
    """
    raw = getattr(exc, "message", None)
    if isinstance(raw, bytes):
        text = raw.decode("utf-8", "replace")
    elif isinstance(raw, str):
        text = raw
    else:
        try:
            text = str(exc)
        except Exception:  # noqa: BLE001 - a broken __str__ must not hide the error
            text = ""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "") or type(exc).__name__
    line = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in line)
    return line if len(line) <= limit else line[: limit - 3] + "..."


def classify(exc: BaseException) -> str | None:
    """What the server's error means: a short permanent reason, or None (retry it).

    Wire errors (a closed socket, a timeout, a restarting server) and server
    errors not known to be permanent are retried; a request the server could
    not process (`TApplicationException`: HBase's answer to an invalid table
    name or a key too long) and the exceptions in `_PERMANENT` are not.
    """
    if isinstance(exc, WIRE_ERRORS):
        return None
    if isinstance(exc, TApplicationException):
        return f"the server could not process the request ({server_message(exc)})"
    if isinstance(exc, TException):
        message = server_message(exc, limit=2000)
        if type(exc).__name__ == "IllegalArgument":
            return f"invalid request: {server_message(exc)}"
        for java_name, reason in _PERMANENT:
            if java_name in message:
                return reason
    return None


def check_table_prefix(prefix: str) -> None:
    """UsageError unless `prefix` + a base name is a valid HBase table name."""
    if prefix and not _TABLE_NAME.fullmatch(prefix + "webpage"):
        shown = server_message(ValueError(prefix), limit=80)
        raise UsageError(f"table prefix {shown!r}: an HBase table name is [namespace:]name of letters, "
                         "digits, '_', '-' and '.'")


def check_key(key: bytes, what: str) -> None:
    """StoreRejectedError for a row key HBase refuses (empty is allowed for scans only)."""
    if len(key) > MAX_KEY_BYTES:
        raise StoreRejectedError(f"{what}: row key of {len(key):,} bytes is over HBase's limit of "
                                 f"{MAX_KEY_BYTES:,} bytes")


def local_hbase_logs(settings: Settings) -> str | None:
    """The log folder of the HBase scripts/hbase-local runs, when `settings.hbase` is its address; else None.

    The address and folder are the script's own variables (HBASE_LOCAL_HOST,
    HBASE_LOCAL_THRIFT_PORT, HBASE_LOCAL_DIR; the address defaults to the
    setting's, `config.HBASE_HOST` and `HBASE_THRIFT_PORT`): they say where
    the local HBase is, not how sitemapcrawl behaves, so they are read here,
    for this message only. Without HBASE_LOCAL_DIR the folder is
    relative to the checkout the script ran from.
    """
    local = (f"{os.environ.get('HBASE_LOCAL_HOST') or HBASE_HOST}:"
             f"{os.environ.get('HBASE_LOCAL_THRIFT_PORT') or HBASE_THRIFT_PORT}")
    if settings.hbase not in (local, Settings().hbase):
        return None
    home = os.environ.get("HBASE_LOCAL_DIR") or ".hbase-local"
    return os.path.join(home, "logs")


def how_to_reach(settings: Settings) -> str:
    """What to do when HBase does not answer: the local one's status and logs, or what to check on another."""
    logs = local_hbase_logs(settings)
    if logs is not None:
        return (f"is it running? {HOW_TO_START}; if it runs, `scripts/hbase-local status` says why it does not "
                f"answer (logs: {logs}/master.log, {logs}/thrift.log)")
    return (f"is its Thrift1 gateway running there, with transport {settings.hbase_transport} and protocol "
            f"{settings.hbase_protocol} (settings hbase_transport, hbase_protocol)? If it runs, read the logs of "
            "its Thrift server and RegionServers for an abort or OutOfMemoryError")


def as_text(value: bytes | str) -> str:
    """A server string as text: thriftpy2 hands them over as bytes (decoded with replacement)."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def first_line(exc: BaseException, limit: int = 300) -> str:
    """`server_message` with Java's exception wrapping stripped, for messages shown to an operator."""
    line = server_message(exc, limit=100_000)
    while True:  # "org...DoNotRetryIOException: org...DoNotRetryIOException: java.lang.X: why" -> "java.lang.X: why"
        head, sep, rest = line.partition(": ")
        if not (sep and head.startswith("org.apache.hadoop.hbase.") and rest):
            break
        line = rest
    return line if len(line) <= limit else line[: limit - 3] + "..."


def create_refusal(exc: TException, name: str, address: str) -> StoreRejectedError | None:
    """The one-line error for a table creation the cluster refused for good, or None (retry it).

    A missing namespace (Thrift1 cannot create one), a compression the
    cluster cannot use (its table sanity check) and an invalid argument are
    permanent; anything else may be passing trouble.
    """
    message = as_text(getattr(exc, "message", b"") or b"")
    line = first_line(exc)
    namespace = name.partition(":")[0]
    if "NamespaceNotFoundException" in message:
        return StoreRejectedError(
            f"create table {name}: namespace {namespace!r} does not exist in HBase at {address}; Thrift1 cannot "
            f"create it: run `create_namespace '{namespace}'` in the HBase shell, or set hbase_shell and run init")
    if "sanity checks" in message or "compression" in message.lower():
        return StoreRejectedError(f"create table {name}: HBase at {address} refused it: {line}; "
                                  "choose another --compression (gz needs no native library) or ask its operator")
    if type(exc).__name__ == "IllegalArgument":
        return StoreRejectedError(f"create table {name}: HBase at {address} refused it: {line}; "
                                  "check the table prefix (letters, digits, '_', '-', '.'; `ns:` for a namespace)")
    if "AccessDeniedException" in message:
        return StoreRejectedError(f"create table {name}: HBase at {address} denied it: {line}; "
                                  "ask its operator for CREATE rights, or to run `init --print-schema` as admin")
    return None
