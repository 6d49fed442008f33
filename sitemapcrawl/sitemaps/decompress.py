"""Streaming decompression whose output is capped: a gzip bomb costs nothing.

`GzipReader` inflates gzip (several members too) chunk by chunk, never making
more than the chunk asked for (zlib's `max_length`), so the caller's byte cap
(`CappedReader`) bounds the work and memory of even a 1 GB bomb. A broken or
truncated stream ends the output early and sets `error`; it never raises.
`zip_member_names` / `open_zip_member` read zip archives (which need random
access, so the compressed archive is held in memory; its size is bounded by the
fetcher's body cap).
"""

from __future__ import annotations

import io
import zipfile
import zlib
from typing import IO

from sitemapcrawl.sitemaps.limits import ByteSource

_CHUNK = 64 * 1024
# Compressed input is fed in small slices: zlib drops a call's output when it
# meets corrupt data, so small slices keep nearly all the text before a break.
_IN_CHUNK = 1024
_GZIP_WBITS = 16 + zlib.MAX_WBITS
GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"


class GzipReader(io.RawIOBase):
    """Read the inflated bytes of a gzip stream, never more than asked for.

    `error` is None, or a short sentence when the compressed data was broken
    or cut off (the bytes inflated before the break were handed out).
    """

    def __init__(self, source: ByteSource) -> None:
        super().__init__()
        self._source = source
        self._inflater = zlib.decompressobj(_GZIP_WBITS)
        self._pending = b""
        self._done = False
        self._started = False
        self.compressed_read = 0
        self.error: str | None = None

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1, /) -> bytes:
        want = _CHUNK if size is None or size < 0 else max(size, 1)
        while not self._done:
            if not self._pending:
                self._pending = self._source.read(_IN_CHUNK)
                self.compressed_read += len(self._pending)
                if not self._pending:
                    self._done = True
                    if self._started:
                        self.error = (
                            f"gzip data cut off after {self.compressed_read:,} compressed bytes"
                        )
                    break
            self._started = True
            try:
                out = self._inflater.decompress(self._pending, want)
            except zlib.error as exc:
                self._fail(
                    f"gzip data broken after {self.compressed_read:,} compressed bytes: {exc}"
                )
                break
            self._pending = self._inflater.unconsumed_tail
            if self._inflater.eof:
                self._next_member()
            if out:
                return out
        return b""

    def _next_member(self) -> None:
        """After one gzip member ends: start the next one, or stop at trailing junk."""
        rest = self._inflater.unused_data
        self._inflater = zlib.decompressobj(_GZIP_WBITS)
        self._started = False
        self._pending = b""
        if rest.lstrip(b"\x00"):
            if rest.startswith(GZIP_MAGIC):
                self._pending = rest
            else:
                self._done = True  # junk after a complete member is ignored, as gzip(1) does

    def _fail(self, message: str) -> None:
        self._done = True
        self.error = message

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def inflate_deflate(data: bytes, limit: int) -> tuple[bytes, str | None]:
    """Inflate an HTTP `Content-Encoding: deflate` body (zlib-wrapped or raw).

    Returns the bytes (at most `limit` + 1, so the caller can see the cap was
    passed) and an error sentence or None. Never raises.
    """
    for wbits in (zlib.MAX_WBITS, -zlib.MAX_WBITS):
        inflater = zlib.decompressobj(wbits)
        try:
            return inflater.decompress(data, limit + 1), None
        except zlib.error as exc:
            error = str(exc)
    return b"", f"deflate data broken: {error}"


def zip_members(data: bytes) -> tuple[zipfile.ZipFile | None, list[str], str | None]:
    """Open a zip archive held in memory; return it, its file names, and an error.

    Directories and empty names are left out. Never raises: a broken archive
    gives (None, [], reason).
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        names = [info.filename for info in archive.infolist() if not info.is_dir()]
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        return None, [], f"zip archive broken: {exc}"
    return archive, names, None


class ZipMemberReader(io.RawIOBase):
    """Read one zip member; a broken member ends early with `error` set, never raises."""

    def __init__(self, archive: zipfile.ZipFile, name: str) -> None:
        super().__init__()
        self.error: str | None = None
        self._stream: IO[bytes] | None = None
        try:
            self._stream = archive.open(name)
        except (zipfile.BadZipFile, NotImplementedError, OSError, ValueError, RuntimeError) as exc:
            self.error = f"zip member {name!r} unreadable: {exc}"
        self._name = name

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1, /) -> bytes:
        if self._stream is None:
            return b""
        try:
            return self._stream.read(_CHUNK if size is None or size < 0 else size)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error, RuntimeError) as exc:
            self.error = f"zip member {self._name!r} broken: {exc}"
            self._stream = None
            return b""

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)
