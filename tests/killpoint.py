"""Run the sitemapcrawl CLI and signal it at an exact point of one crawl phase (for kill tests).

    python tests/killpoint.py PHASE SIGNAL ROUND FETCHED -- CLI ARGS...

PHASE is generate, fetch, parse or updatedb; SIGNAL is KILL or INT; the
signal is sent to this very process right after the first write to the
`webpage` table that PHASE makes in its ROUND-th run (for fetch: after the
write that brings its written outcomes to FETCHED, with every page fetch
after the FETCHED-th held back, so no request is in flight unrecorded).
Sent from the thread that wrote (parse and updatedb write behind, on a
thread of their own: `sitemapcrawl.storage.overlap`); SIGKILL ends the process at
that write, SIGINT reaches the main thread at its next bytecode. Prints
`killpoint: PHASE` on stderr just before. With `KILLPOINT_HOLD=0` in the
environment, no page fetch is held back: requests go on while the outcomes
are written, so the signal meets some in flight and some fetched, not written.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from typing import Any

from sitemapcrawl.cli import app
from sitemapcrawl.fetcher.engine import Engine
from sitemapcrawl.fetcher.pacing import Pacing
from sitemapcrawl.jobs import fetch, generate, parse, updatedb
from sitemapcrawl.model.webpage import WEBPAGE_TABLE
from sitemapcrawl.storage.store import Store

# Each job's function in its own module, where its phase function (`generate_phase`, ...) calls it.
PHASES = {"generate": (generate, "generate"), "fetch": (fetch, "fetch"), "parse": (parse, "parse_batch"),
          "updatedb": (updatedb, "updatedb")}
HOLD = os.environ.get("KILLPOINT_HOLD", "1") != "0"


def main() -> None:
    phase, sig_name, round_text, fetched_text, dash, *args = sys.argv[1:]
    assert dash == "--" and phase in PHASES
    sig = signal.SIGKILL if sig_name == "KILL" else signal.SIGINT
    target_round, fetched = int(round_text), int(fetched_text)
    state: dict[str, Any] = {"phase": None, "entries": dict.fromkeys(PHASES, 0), "rows": 0, "requests": 0,
                             "fired": False}
    lock = threading.Lock()

    def armed() -> bool:
        return state["phase"] == phase and state["entries"][phase] == target_round and not state["fired"]

    for name, (module, attribute) in PHASES.items():
        original = getattr(module, attribute)

        def wrapper(*a: Any, _original: Any = original, _name: str = name, **k: Any) -> Any:
            state["phase"] = _name
            state["entries"][_name] += 1
            try:
                return _original(*a, **k)
            finally:
                state["phase"] = None

        setattr(module, attribute, wrapper)

    original_write = Store.write

    def write(self: Store, table: str, rows: Any) -> Any:
        result = original_write(self, table, rows)
        if table == WEBPAGE_TABLE and result.rows and armed():
            state["rows"] += result.rows
            if phase != "fetch" or state["rows"] >= fetched:
                state["fired"] = True
                print(f"killpoint: {phase}", file=sys.stderr, flush=True)
                os.kill(os.getpid(), sig)
        return result

    Store.write = write  # type: ignore[method-assign]

    # Page fetches after the FETCHED-th are held back before their request begins (before
    # `Pacing.begin`, which counts a begun request as in flight until it ends), and let go once the
    # signal has stopped the fetch: it refuses them then. Only page fetches count: each writes one
    # outcome row; a robots.txt request (a host first seen in this round) writes none, and counting
    # it would hold back a page whose outcome the signal waits for.
    original_fetch_page, original_stop = Engine.fetch_page, Pacing.stop
    stopped = threading.Event()

    async def fetch_page(self: Engine, *a: Any, **k: Any) -> None:
        if phase == "fetch" and armed():
            with lock:
                state["requests"] += 1
                over = HOLD and state["requests"] > fetched
            while over and not stopped.is_set():  # held back until the signal stops the fetch
                await asyncio.sleep(0.01)
        await original_fetch_page(self, *a, **k)

    def stop(self: Pacing) -> None:
        original_stop(self)
        if state["fired"]:  # every fetch stops (also the rounds before): only the signalled one lets go
            stopped.set()

    Engine.fetch_page = fetch_page  # type: ignore[method-assign]
    Pacing.stop = stop  # type: ignore[method-assign]
    sys.argv = ["sitemapcrawl", *args]
    app.main()


if __name__ == "__main__":
    main()
