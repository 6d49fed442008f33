"""`hbase_fixtures.free_port`: each test worker's ports come from its own band, below the OS's ephemeral range."""

from __future__ import annotations

import socket

import pytest
from hbase_fixtures import PORT_BAND, ephemeral_low, free_port


def test_each_worker_has_its_own_band_below_the_ephemeral_range(monkeypatch: pytest.MonkeyPatch) -> None:
    low = ephemeral_low()
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    first = free_port()
    assert low - PORT_BAND <= first < low
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw2")
    third = free_port()
    assert low - 3 * PORT_BAND <= third < low - 2 * PORT_BAND


def test_a_port_in_use_is_passed_over_and_the_next_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    port = free_port()
    with socket.create_server(("127.0.0.1", port)):
        ports = {free_port() for _ in range(PORT_BAND - 1)}  # one turn round the band, less the port taken
    assert port not in ports
    assert len(ports) > 1
