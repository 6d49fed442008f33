"""Content-Encoding undone with a cap on every layer (`web.decoding.BodyDecoder`), bombs included."""

from __future__ import annotations

import gzip
import zlib

import pytest

from sitemapcrawl.web.decoding import ACCEPT_ENCODING, BodyDecoder, DecodeError

PLAIN = b"<url><loc>http://example.com/a</loc></url>\n" * 5000


def decoded(encoding: str, body: bytes, limit: int = 10**9, step: int = 1000) -> tuple[bytes, bool]:
    decoder = BodyDecoder(encoding, limit)
    out = b"".join(decoder.feed(body[i:i + step]) for i in range(0, len(body), step))
    return out, decoder.truncated


@pytest.mark.parametrize("step", [1, 7, 1000, 10**7])
@pytest.mark.parametrize(("encoding", "body"), [
    ("gzip", gzip.compress(PLAIN)),
    ("x-gzip", gzip.compress(PLAIN)),
    ("deflate", zlib.compress(PLAIN)),
    ("deflate", zlib.compress(PLAIN)[2:-4]),  # raw deflate, as some servers send it
    ("gzip, gzip", gzip.compress(gzip.compress(PLAIN))),
    ("gzip, identity", gzip.compress(PLAIN)),
    ("", PLAIN),
    ("identity", PLAIN),
])
def test_every_coding_and_chain_gives_the_plain_body_whatever_the_chunks(encoding: str, body: bytes,
                                                                        step: int) -> None:
    assert decoded(encoding, body, step=step) == (PLAIN, False)


def test_several_gzip_members_and_what_follows_the_last() -> None:
    members = gzip.compress(PLAIN) + gzip.compress(PLAIN)
    assert decoded("gzip", members)[0] == PLAIN * 2
    assert decoded("gzip", gzip.compress(PLAIN) + b"\0\0\0\0")[0] == PLAIN  # padding
    assert decoded("gzip", gzip.compress(PLAIN) + b"trailing junk")[0] == PLAIN  # ignored, as urllib3 does


def test_an_unknown_coding_leaves_the_body_as_it_came() -> None:
    assert decoded("br", b"\x8b\x01\x80abc") == (b"\x8b\x01\x80abc", False)
    assert decoded("gzip, zstd", b"whatever") == (b"whatever", False)


def test_broken_data_raises_decode_error() -> None:
    with pytest.raises(DecodeError, match="gzip"):
        decoded("gzip", b"this is not gzip at all")
    with pytest.raises(DecodeError, match="gzip"):
        decoded("gzip", gzip.compress(PLAIN)[:50] + b"\xff" * 100)


@pytest.mark.parametrize("encoding", ["gzip", "gzip, gzip", "deflate, gzip"])
def test_a_bomb_stops_at_the_cap_in_every_layer(encoding: str) -> None:
    zeros = b"\0" * 50_000_000
    body = zeros
    for coding in (c.strip() for c in encoding.split(",")):
        body = gzip.compress(body) if coding == "gzip" else zlib.compress(body)
    assert len(body) < 100_000
    out, truncated = decoded(encoding, body, limit=1_000_000, step=8192)
    assert truncated and len(out) == 1_000_000


def test_the_cap_counts_decoded_bytes_and_identity_bodies_too() -> None:
    assert decoded("", PLAIN, limit=100) == (PLAIN[:100], True)
    assert decoded("gzip", gzip.compress(PLAIN), limit=len(PLAIN)) == (PLAIN, True)
    assert decoded("gzip", gzip.compress(PLAIN), limit=len(PLAIN) + 1) == (PLAIN, False)


def test_the_request_offers_exactly_what_is_decoded() -> None:
    assert ACCEPT_ENCODING == "gzip, deflate"
