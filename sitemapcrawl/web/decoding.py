"""HTTP Content-Encoding undone with a cap on every layer: a compression bomb costs what the cap allows.

`BodyDecoder(content_encoding, limit)` takes the body as it arrives and
gives back the decoded bytes, never more than `limit` in all, whatever the
chain of codings (`gzip, gzip` is a bomb's favourite): each layer inflates
at most a slice at a time (zlib's `max_length`) and hands it to the next, so
no layer holds more than a slice of what it could make. gzip (several
members too) and deflate (zlib-wrapped, or raw as some servers send it) are
decoded; an unknown coding leaves the body as it came, as browsers and
requests do. Broken data raises `DecodeError`. No I/O.
"""

from __future__ import annotations

import zlib

__all__ = ["ACCEPT_ENCODING", "BodyDecoder", "DecodeError"]

#: What a request says it can take: exactly the codings `BodyDecoder` undoes.
ACCEPT_ENCODING = "gzip, deflate"
#: The most one layer makes in one call.
_SLICE = 64 * 1024
_KNOWN = {"gzip", "x-gzip", "deflate"}


class DecodeError(ValueError):
    """The body is not what its Content-Encoding says."""


class _Layer:
    """One coding undone, a slice at a time."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self.gzip = coding in ("gzip", "x-gzip")
        self.inflater = zlib.decompressobj(16 + zlib.MAX_WBITS if self.gzip else zlib.MAX_WBITS)
        self.pending = b""
        self.started = False
        """Output came: the coding is settled."""
        self.before_output = b""
        """The input read before any output (given again to raw deflate when the zlib wrapper is missing)."""
        self.raw_deflate = False
        self.later_member = False
        """A gzip member after the first is being read: trailing garbage there ends the body quietly."""

    def push(self, data: bytes) -> None:
        self.pending += data

    def pull(self) -> bytes:
        """At most `_SLICE` bytes of output from what was pushed (b"" when it needs more input)."""
        out = b""
        while not out and self.pending:
            data, self.pending = self.pending, b""
            try:
                out = self.inflater.decompress(data, _SLICE)
            except zlib.error as exc:
                if self.later_member:
                    return b""  # bytes after the last gzip member (as urllib3 and browsers, ignored)
                if not self.gzip and not self.started and not self.raw_deflate:
                    # "deflate" sent without the zlib wrapper: start again as raw deflate.
                    self.raw_deflate = True
                    self.inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                    self.pending, self.before_output = self.before_output + data, b""
                    continue
                raise DecodeError(f"cannot decode {self.coding} body: {exc}") from exc
            if not self.started:
                if out:
                    self.started, self.before_output = True, b""
                elif not self.raw_deflate and len(self.before_output) < _SLICE:
                    self.before_output += data
            if not self.inflater.eof:
                self.pending = self.inflater.unconsumed_tail
                continue
            # At the end of a stream the input left is in unused_data (unconsumed_tail may repeat it).
            rest, self.pending = self.inflater.unused_data, b""
            if self.gzip and rest.lstrip(b"\0"):
                # Another gzip member follows (padding zeros are not one).
                self.inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
                self.pending = rest
                self.later_member = True
        return out


class BodyDecoder:
    """Decode a body chunk by chunk, at most `limit` bytes in all (see the module docstring)."""

    def __init__(self, content_encoding: str, limit: int) -> None:
        codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        # The last coding applied is the first to undo; any unknown one leaves the body as it is.
        self._layers = [] if any(c not in _KNOWN for c in codings) else [_Layer(c) for c in reversed(codings)]
        self._left = limit
        self.truncated = False
        """The decoded body reached `limit`: what came after it was dropped."""

    @property
    def identity(self) -> bool:
        """Is the body passed on as it came?"""
        return not self._layers

    def feed(self, chunk: bytes) -> bytes:
        """The decoded bytes `chunk` completes (at most what is left of the limit); DecodeError if broken."""
        if self.truncated:
            return b""
        if not self._layers:
            return self._keep(chunk)
        self._layers[0].push(chunk)
        return self._drain()

    def _drain(self) -> bytes:
        out: list[bytes] = []
        depth = len(self._layers)
        while not self.truncated:
            # The deepest layer with output to give, its output pushed one layer down; the last layer's is kept.
            for index in range(depth - 1, -1, -1):
                piece = self._layers[index].pull() if self._layers[index].pending else b""
                if piece:
                    if index == depth - 1:
                        out.append(self._keep(piece))
                    else:
                        self._layers[index + 1].push(piece)
                    break
            else:
                break
        return b"".join(out)

    def _keep(self, piece: bytes) -> bytes:
        if len(piece) >= self._left:
            piece = piece[: self._left]
            self.truncated = True
        self._left -= len(piece)
        return piece
