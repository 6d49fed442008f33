"""Several Thrift gateways to one HBase: which one a new connection uses, and which are down.

The `hbase` setting may name several gateways (`HOST:PORT,HOST:PORT`), all
in front of the same HBase. Each new pooled connection takes the next
gateway round-robin, starting at one chosen by the process id, so the
connections of many crawler processes spread over all of them. A gateway
whose connection fails on the wire is marked down: new connections skip it
until its back-off ends (30 s, doubling while it keeps failing, at most
5 minutes), then one connection tries it again. Going down is logged once,
as one warning line, and coming back once, at INFO. With one gateway
nothing is ever skipped (the store's retries wait for it, as before).
Cost: a lock and a few comparisons per new connection; no I/O.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sitemapcrawl.urlparts import host_port

log = logging.getLogger(__name__)

#: Seconds a gateway that stopped answering is skipped at first; doubles while it keeps failing.
FIRST_BACKOFF = 30.0
#: The longest a down gateway is skipped before it is tried again.
MAX_BACKOFF = 300.0


@dataclass
class Gateway:
    """One Thrift gateway: its address and, while it is down, when to try it again."""

    host: str
    port: int
    down_until: float = 0.0
    """Monotonic time before which new connections skip it (0: it is up)."""
    backoff: float = 0.0
    """The pause of its current down spell (0: it is up)."""

    @property
    def address(self) -> str:
        """`HOST:PORT`, IPv6 hosts in brackets, as the setting writes it."""
        return host_port(self.host, self.port)

    @property
    def up(self) -> bool:
        """Has it answered since its last failure (or never failed)?"""
        return self.backoff == 0.0


class Gateways:
    """The gateways of one store: round-robin for new connections, down ones skipped for a back-off.

    Thread-safe. `ticks` (monotonic seconds) is injectable for tests.
    """

    def __init__(self, addresses: Sequence[tuple[str, int]], ticks: Callable[[], float] = time.monotonic,
                 start: int | None = None) -> None:
        if not addresses:
            raise ValueError("no gateway addresses")
        self.all = [Gateway(host, port) for host, port in addresses]
        self._ticks = ticks
        self._lock = threading.Lock()
        # Start at a place given by the process id: processes that each open a few connections
        # (workers, split tasks) begin at different gateways instead of all on the first.
        self._next = (os.getpid() if start is None else start) % len(self.all)

    @property
    def several(self) -> bool:
        """More than one gateway: a failing one can be skipped."""
        return len(self.all) > 1

    def choose(self) -> Gateway:
        """The gateway for a new connection: the next one not skipped, round-robin.

        When every gateway is within its back-off, the one whose back-off
        ends first (better to try it than to fail without trying).
        """
        with self._lock:
            tick = self._ticks()
            count = len(self.all)
            for step in range(count):
                gateway = self.all[(self._next + step) % count]
                if gateway.down_until <= tick:
                    self._next = (self._next + step + 1) % count
                    return gateway
            return min(self.all, key=lambda g: g.down_until)

    def failed(self, gateway: Gateway, reason: str) -> None:
        """A connection to `gateway` failed on the wire: skip it for a back-off; warn once per down spell."""
        if not self.several:
            return
        with self._lock:
            tick = self._ticks()
            if tick < gateway.down_until:
                return  # a connection made before it went down: the same down spell
            went_down = gateway.up
            gateway.backoff = FIRST_BACKOFF if went_down else min(gateway.backoff * 2, MAX_BACKOFF)
            gateway.down_until = tick + gateway.backoff
            others_up = any(g.up for g in self.all if g is not gateway)
        if went_down:
            log.warning("HBase Thrift gateway %s stopped answering (%s); %s, trying it again in %.0fs",
                        gateway.address, reason, "using the others" if others_up else "no other answers",
                        gateway.backoff)

    def answered(self, gateway: Gateway) -> None:
        """A call through `gateway` succeeded: it is up again (said once, at INFO)."""
        if gateway.up:
            return
        with self._lock:
            if gateway.up:
                return
            gateway.backoff = gateway.down_until = 0.0
        log.info("HBase Thrift gateway %s answers again", gateway.address)

    def any_up(self) -> bool:
        """Is some gateway not within its back-off now (a retry can go there at once)?"""
        tick = self._ticks()
        return any(g.down_until <= tick for g in self.all)
