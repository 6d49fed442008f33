"""Choosing among several Thrift gateways: round-robin, a failed one skipped for a back-off, one warning."""

from __future__ import annotations

import logging

import pytest

from sitemapcrawl.storage.gateways import FIRST_BACKOFF, MAX_BACKOFF, Gateways


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def ports(gateways: Gateways, n: int) -> list[int]:
    return [gateways.choose().port for _ in range(n)]


def test_new_connections_go_round_robin_from_the_start_the_process_id_gives() -> None:
    addresses = [("a", 1), ("b", 2), ("c", 3)]
    assert ports(Gateways(addresses, start=0), 5) == [1, 2, 3, 1, 2]
    assert ports(Gateways(addresses, start=4), 3) == [2, 3, 1]  # 4 % 3: a second process starts elsewhere


def test_a_failed_gateway_is_skipped_until_its_backoff_ends_and_warned_about_once(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    gateways = Gateways([("a", 1), ("b", 2)], ticks=clock, start=0)
    down = gateways.all[1]
    with caplog.at_level(logging.INFO, logger="sitemapcrawl.storage.gateways"):
        gateways.failed(down, "TTransportException: closed")
        gateways.failed(down, "TTransportException: closed")  # a second connection of the same spell
        assert ports(gateways, 4) == [1, 1, 1, 1]
        assert gateways.any_up()
        clock.now += FIRST_BACKOFF
        assert 2 in ports(gateways, 2)  # tried again after the back-off
        gateways.failed(down, "still closed")  # fails again: a longer back-off, no second warning
        assert down.backoff == 2 * FIRST_BACKOFF
        clock.now += FIRST_BACKOFF
        assert ports(gateways, 3) == [1, 1, 1]
        clock.now += FIRST_BACKOFF
        gateways.answered(down)
        gateways.answered(down)
        assert down.up and sorted(ports(gateways, 2)) == [1, 2]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["HBase Thrift gateway b:2 stopped answering (TTransportException: closed); using the "
                        "others, trying it again in 30s"]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == [
        "HBase Thrift gateway b:2 answers again"]


def test_the_backoff_is_capped_and_with_all_down_the_soonest_is_tried() -> None:
    clock = Clock()
    gateways = Gateways([("a", 1), ("b", 2)], ticks=clock, start=0)
    a, b = gateways.all
    for _ in range(10):
        clock.now = max(a.down_until, clock.now)
        gateways.failed(a, "x")
    assert a.backoff == MAX_BACKOFF
    gateways.failed(b, "x")
    assert not gateways.any_up()
    assert gateways.choose() is b  # its back-off ends first


def test_one_gateway_is_never_skipped(caplog: pytest.LogCaptureFixture) -> None:
    gateways = Gateways([("only", 9090)], ticks=Clock())
    gateways.failed(gateways.all[0], "gone")
    assert gateways.all[0].up and gateways.any_up() and ports(gateways, 2) == [9090, 9090]
    assert not caplog.records  # the store's retries say what happens, as before


def test_ipv6_gateways_are_written_as_the_setting_writes_them() -> None:
    assert Gateways([("::1", 9090)]).all[0].address == "[::1]:9090"
