"""usp conformance: ultimate-sitemap-parser's own tree tests, run against our `sitemap_tree_for_homepage`.

Run: .venv/bin/python benchmarks/usp_conformance.py --usp-tests DIR

DIR is a checkout of usp's repository (tag 1.8.1) holding `tests/tree/`, e.g.
`git -C USP_REPO archive 1.8.1 tests | tar x -C DIR`. Needs `requests_mock`
in the venv (`pip install requests_mock`): usp's tests mock their sites with
it; `test_opts.py` needs `pytest-mock` too. Our client does not use requests,
so the plugin starts a loopback HTTP proxy that asks requests (which the
test's mock answers) for each URL our client sends it, and points our client
at it (`SITEMAPCRAWL_HTTP_PROXY`): our client, pacing and engine run whole.
The driver also runs the same tests with usp's own function and prints both
wall times: ours may take at most 5x usp's (issue 45).
Not part of CI (CI is offline, and usp's tests are not in its sdist); this
project holds no copy of usp's tests.

This file is also the pytest plugin (`-p usp_conformance`): before the test
modules are collected it puts `sitemapcrawl.sitemaps.sitemap_tree_for_homepage`
in the place of `usp.tree.sitemap_tree_for_homepage`, so every
`from usp.tree import sitemap_tree_for_homepage` gets ours; it records each
test's outcome. The driver prints passed / failed per test, marks the
failures that are documented differences (docs/usp.md, `EXPECTED` here), and
exits 1 if any other test failed. Our client's delay is set to 0
(`SITEMAPCRAWL_DELAY=0`): the mocked sites are not real hosts to spare.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import bench_parser, target_line

#: Tests whose failure is a documented difference (docs/usp.md), with the difference.
_OPTS = "tests/tree/test_opts.py::TestTreeOpts::"
_INTERNALS = ("not run: mocks usp's internal SitemapFetcher class, which our engine does not use "
              "(ours would fetch example.org for real)")
EXPECTED: dict[str, str] = {
    "tests/tree/test_basic.py::TestTreeBasic::test_sitemap_tree_for_homepage":
        "an unknown changefreq is read as absent (None), usp reads it as `always`",
    "tests/tree/test_save.py::TestTreeSave::test_page_to_dict":
        "an unknown changefreq is read as absent (None), usp reads it as `always`",
    "tests/tree/test_basic.py::TestTreeBasic::test_sitemap_tree_for_homepage_gzip":
        "the tree matches; the test counts usp's own log records (we report problems in our words)",
    "tests/tree/test_edges.py::TestTreeEdgeCases::test_sitemap_no_ns":
        "the tree matches; the test reads usp's own log text",
    "tests/tree/test_rss_atom.py::TestTreeRssAtom::test_sitemap_tree_for_homepage_rss_atom":
        "a feed item's date is the page's last_modified, not a news story with the item title",
    "tests/tree/test_save.py::TestTreeSave::test_pickle":
        "reads usp's private temp-file path: ours are in one unnamed temporary file per tree (pickling works)",
    "tests/tree/test_security.py::TestTreeSecurity::test_billion_laughs_attack":
        "a DOCTYPE is read with entities off (entries kept), usp refuses the whole document",
    **{_OPTS + name: _INTERNALS for name in (
        "test_extra_known_paths", "test_normalize_homepage_url_default_enabled",
        "test_normalize_homepage_url_disabled", "test_normalize_homepage_url_with_extra_known_paths",
        "test_skip_robots_txt")},
}

_RESULTS_ENV = "USP_CONFORMANCE_RESULTS"


# ---------------------------------------------------------------- plugin --


def pytest_configure(config: Any) -> None:
    """Put ours in the place of usp's before any test module imports it, and our client behind the proxy."""
    import usp.tree

    from sitemapcrawl.sitemaps import sitemap_tree_for_homepage

    usp.tree.sitemap_tree_for_homepage = sitemap_tree_for_homepage  # type: ignore[assignment]
    os.environ["SITEMAPCRAWL_HTTP_PROXY"] = f"http://127.0.0.1:{_start_mock_proxy()}"


def _start_mock_proxy() -> int:
    """A loopback HTTP proxy (a daemon thread) that fetches each URL through requests, which the running
    test's `requests_mock` answers; a URL the mock does not know gets the connection closed (no answer),
    as a site that is not there. Returns its port."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import requests

    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms delayed-ACK stall

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            """Quiet."""

        def do_GET(self) -> None:  # noqa: N802
            asked = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "proxy-connection")}
            try:
                answer = requests.get(self.path, headers=asked, allow_redirects=False, timeout=30)
            except Exception:  # noqa: BLE001 - the mock's "no such address" and friends: no answer at all
                self.close_connection = True
                return
            body = answer.content
            self.send_response(answer.status_code, answer.reason)
            for name, value in answer.headers.items():
                if name.lower() not in ("content-length", "content-encoding", "transfer-encoding", "connection"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Forward)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return int(server.server_address[1])


def pytest_runtest_setup(item: Any) -> None:
    """Skip the tests that mock usp's internals: without usp's fetcher, ours would go to the internet."""
    import pytest

    if "mock_fetcher" in getattr(item, "fixturenames", ()):
        pytest.skip(_INTERNALS)


def pytest_runtest_logreport(report: Any) -> None:
    """Record each test's outcome (the call phase, or a failed setup)."""
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        line = {"test": report.nodeid, "outcome": report.outcome,
                "message": str(report.longrepr).splitlines()[-1] if report.failed else ""}
        with open(os.environ[_RESULTS_ENV], "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")


# ---------------------------------------------------------------- driver --


def run(usp_tests: Path) -> int:
    if not (usp_tests / "tests" / "tree").is_dir():
        print(f"usp_conformance: {usp_tests}/tests/tree not found (extract usp 1.8.1's tests there)",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="usp_conformance_") as tmp:
        results = Path(tmp) / "results.jsonl"
        results.touch()
        env = {**os.environ, _RESULTS_ENV: str(results),
               "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), str(usp_tests)])}
        env.pop("SITEMAPCRAWL_DELAY", None)  # our drop-in's own pacing, as a user gets it
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                   "--rootdir", str(usp_tests), "tests/tree"]
        started = time.perf_counter()
        subprocess.run([*command, "-p", "usp_conformance"], cwd=usp_tests, env=env, stdout=subprocess.DEVNULL,
                       check=False)
        ours_seconds = time.perf_counter() - started
        outcomes = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
        started = time.perf_counter()
        theirs = subprocess.run(command, cwd=usp_tests, env={k: v for k, v in env.items() if k != _RESULTS_ENV},
                                capture_output=True, text=True, check=False)
        usp_seconds = time.perf_counter() - started
    unexpected = 0
    for item in outcomes:
        name = item["test"]
        if item["outcome"] == "passed":
            print(f"passed   {name}")
        elif name in EXPECTED:
            print(f"{item['outcome']:<8} {name}  [expected: {EXPECTED[name]}]")
        else:
            unexpected += 1
            print(f"FAILED   {name}  {item['message'][:160]}")
    passed = sum(item["outcome"] == "passed" for item in outcomes)
    documented = sum(item["outcome"] != "passed" and item["test"] in EXPECTED for item in outcomes)
    print(f"\n{len(outcomes)} tests: {passed} passed, {documented} failed as documented, "
          f"{unexpected} failed otherwise (expected: documented differences, docs/usp.md)")
    said = (theirs.stdout.strip().splitlines() or ["?"])[-1]
    print(f"wall time, pytest start to exit: ours {ours_seconds:.1f} s, usp's own {usp_seconds:.1f} s ({said})")
    print(target_line("ours over usp's own", ours_seconds / usp_seconds, 5.0))
    return 1 if unexpected or not outcomes else 0


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--usp-tests", type=Path, required=True, help="usp checkout holding tests/tree")
    args = parser.parse_args()
    sys.exit(run(args.usp_tests.resolve()))


if __name__ == "__main__":
    main()
