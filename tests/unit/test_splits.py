"""Splits: every row key in exactly one split, a host's keys together, K/N parsing."""

import pytest

from sitemapcrawl.errors import UsageError
from sitemapcrawl.model.splits import BUCKETS, Split, bucket_of


def _keys() -> list[bytes]:
    return [f"com.host{h}:http/page{p}".encode() for h in range(300) for p in range(3)]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, BUCKETS])
def test_splits_cover_every_key_once(count: int) -> None:
    splits = [Split(k, count) for k in range(count)]
    for key in _keys():
        assert sum(split.holds(key) for split in splits) == 1
    assert sorted(b for s in splits for b in s.buckets()) == list(range(BUCKETS))


def test_a_hosts_keys_share_a_bucket() -> None:
    assert bucket_of(b"com.example:http/a") == bucket_of(b"com.example:https/b?c") == bucket_of(b"com.example")


def test_many_hosts_spread_evenly_over_two_splits() -> None:
    held = sum(Split(0, 2).holds(f"com.host{h}:http/".encode()) for h in range(2000))
    assert 850 < held < 1150


@pytest.mark.parametrize("text,expected", [("0/1", Split(0, 1)), ("3/4", Split(3, 4)), (" 1/2", Split(1, 2))])
def test_parse(text: str, expected: Split) -> None:
    assert Split.parse(text) == expected
    assert Split.parse(expected.text()) == expected


@pytest.mark.parametrize("text", ["", "1", "4/4", "-1/2", "a/b", "0/0", f"0/{BUCKETS + 1}"])
def test_parse_refuses(text: str) -> None:
    with pytest.raises(UsageError, match="--split"):
        Split.parse(text)


def test_whole() -> None:
    assert Split().whole and not Split(0, 2).whole
