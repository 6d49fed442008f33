"""Pytest fixtures for the loopback test web (`sitemapcrawl.testweb`).

- ``testweb``: one `TestWebServer` serving `small_web()` for the whole
  session (started on first use, stopped at the end).
- ``web``: the test module's own web (its module-level ``WEB``, a `Web`),
  served for the whole module.
- ``make_testweb``: a factory, ``make_testweb(web) -> TestWebServer``, that
  serves a custom description on its own port and stops it after the test.

Isolation: the session and module servers are shared, so every test that
asks for ``testweb`` or ``web`` gets it *reset* first (faults back to the description's,
revisions to 0, access log emptied) by the autouse fixture below. A test may
therefore call ``testweb.set_fault(...)``/``touch(...)`` freely; the next
test starts clean. Servers from ``make_testweb`` are private to one test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from sitemapcrawl.testweb import TestWebServer, Web, small_web


@pytest.fixture(scope="session")
def testweb() -> Iterator[TestWebServer]:
    """`small_web()` served on loopback for the whole session."""
    server = TestWebServer(small_web()).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def web(request: pytest.FixtureRequest) -> Iterator[TestWebServer]:
    """The module's `WEB` served on loopback for the module (one port, any free one)."""
    server = TestWebServer(request.module.WEB).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def _testweb_reset(request: pytest.FixtureRequest) -> None:
    """Reset the shared test webs before each test that uses them (only then:
    tests that ask for neither never start them)."""
    for name in ("testweb", "web"):
        if name in request.fixturenames:
            request.getfixturevalue(name).reset()


@pytest.fixture
def make_testweb() -> Iterator[Callable[[Web], TestWebServer]]:
    """A factory serving custom webs; each is stopped when the test ends."""
    servers: list[TestWebServer] = []

    def make(web: Web) -> TestWebServer:
        server = TestWebServer(web).start()
        servers.append(server)
        return server

    try:
        yield make
    finally:
        for server in servers:
            server.stop()
