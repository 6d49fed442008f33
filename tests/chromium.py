"""Headless Chromium for tests, driven over the DevTools protocol on a pipe (stdlib only).

`Chromium` starts `/usr/bin/chromium` (Debian's `chromium` package, installed
by `.ci/run`) with `--remote-debugging-pipe`: commands go to its fd 3 and
answers and events come from its fd 4, one JSON message per NUL-terminated
chunk (bash wires the pipes to fds 3 and 4: dash cannot name fds above 9).
No port, no websocket package. A test that needs it fails (never skips) when
Chromium is missing, since CI installs it.

    with Chromium(tmp_path) as browser:
        tab = browser.open(url)
        text = tab.text(); tab.screenshot(tmp_path / "page.png"); assert tab.console_errors() == []
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--remote-debugging-pipe", "--window-size=1280,1600",
)
TIMEOUT = 60.0


class Chromium:
    """One headless browser with a fresh profile under `workdir`; stopped on exit."""

    def __init__(self, workdir: Path) -> None:
        if not CHROMIUM.exists():
            pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium)")
        self._profile = workdir / "chromium-profile"
        self._profile.mkdir(parents=True, exist_ok=True)
        self._next_id = 0
        self._answers: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._log = (workdir / "chromium.log").open("wb")

    def __enter__(self) -> Chromium:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        command = " ".join([str(CHROMIUM), *FLAGS, f"--user-data-dir={self._profile}", "about:blank"])
        self._process = subprocess.Popen(
            ["/bin/bash", "-c", f"exec {command} 3<&{to_browser_r} 4>&{from_browser_w}"],
            pass_fds=(to_browser_r, from_browser_w), stdin=subprocess.DEVNULL, stdout=self._log,
            stderr=self._log)
        os.close(to_browser_r)
        os.close(from_browser_w)
        threading.Thread(target=self._read, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        process = self._process
        if process is not None:
            # A browser that already died cannot answer; waiting below is what matters.
            with contextlib.suppress(AssertionError, OSError):
                self.call("Browser.close", timeout=10)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)
        os.close(self._to_browser)
        self._log.close()

    def _read(self) -> None:
        buffer = b""
        while True:
            chunk = os.read(self._from_browser, 65536)
            if not chunk:
                break
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            with self._changed:
                for raw in messages:
                    message = json.loads(raw)
                    if "id" in message:
                        self._answers[message["id"]] = message
                    else:
                        self.events.append(message)
                self._changed.notify_all()
        os.close(self._from_browser)

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = TIMEOUT) -> dict[str, Any]:
        """Send one command and wait for its answer; AssertionError on an error answer or a timeout."""
        with self._lock:
            self._next_id += 1
            number = self._next_id
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._changed:
            while number not in self._answers:
                left = deadline - time.monotonic()
                assert left > 0, f"Chromium did not answer {method} in {timeout}s"
                self._changed.wait(left)
            answer = self._answers.pop(number)
        assert "error" not in answer, f"{method}: {answer['error']}"
        return dict(answer.get("result", {}))

    def wait_event(self, method: str, session: str, since: int, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The first event `method` of `session` at index >= `since` in `events`."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for event in self.events[since:]:
                    if event.get("method") == method and event.get("sessionId") == session:
                        return event
                left = deadline - time.monotonic()
                assert left > 0, f"no {method} event in {timeout}s"
                self._changed.wait(left)

    def open(self, url: str) -> Tab:
        """A new tab with console and log reporting on, loaded with `url` (waits for the load event)."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable", session=session)
        tab = Tab(self, session)
        tab.navigate(url)
        return tab


class Tab:
    """One page of the browser (a DevTools session)."""

    def __init__(self, browser: Chromium, session: str) -> None:
        self.browser = browser
        self.session = session

    def navigate(self, url: str) -> None:
        """Load `url` and wait for its load event."""
        since = len(self.browser.events)
        answer = self.browser.call("Page.navigate", {"url": url}, self.session)
        assert not answer.get("errorText"), f"navigate {url}: {answer.get('errorText')}"
        self.browser.wait_event("Page.loadEventFired", self.session, since)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        answer = self.browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                        "awaitPromise": True}, self.session)
        assert "exceptionDetails" not in answer, answer["exceptionDetails"]
        return answer["result"].get("value")

    def text(self) -> str:
        """What a person reads on the page."""
        return str(self.evaluate("document.body.innerText"))

    def screenshot(self, path: Path) -> Path:
        """A full-page PNG of the page, written to `path`."""
        data = self.browser.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True},
                                 self.session)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries (failed loads) of this tab so far."""
        found = []
        for event in list(self.browser.events):
            if event.get("sessionId") != self.session:
                continue
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append("console: " + " ".join(str(a.get("value", a.get("description")))
                                                     for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                found.append("exception: " + str(params.get("exceptionDetails", {}).get("text")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                found.append(f"log: {entry.get('text')} {entry.get('url', '')}")
        return found
