"""The benchmarks' 100-URL round (`one_round`) and the loopback folder server its figure 4 fetches from.

The round reads generate's read counts from its summary line, so the pattern
must match the line generate prints; the folder server must answer the pages
a generated sitemap lists (figure 4 fetches them) and still serve its files.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from harness import Run, serve_folder  # noqa: E402
from one_round import READ_LINE, TableRounds, report_table_rounds  # noqa: E402

from sitemapcrawl.jobs.generate import GenerateCounts  # noqa: E402


def test_the_read_counts_come_from_the_line_generate_prints() -> None:
    result = GenerateCounts(batch_id="20261203000000-abcd", due=1_000_000, selected=100)
    result.index.entries, result.index.rows = 128, 100
    found = READ_LINE.search(result.summary())
    assert found is not None and found.groups() == ("100", "128", "100")


def fetch(url: str) -> tuple[int, str, bytes]:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return answer.status, answer.headers["Content-Type"], answer.read()


def test_a_folder_served_with_pages_answers_any_other_path_with_a_page(tmp_path: Path) -> None:
    (tmp_path / "robots.txt").write_text("User-agent: *\nAllow: /\n")
    with serve_folder(tmp_path, pages=True) as base:
        assert fetch(base + "/robots.txt")[2] == b"User-agent: *\nAllow: /\n"
        status, kind, body = fetch(base + "/blog/2019/cake-coffee-guide")
        assert status == 200 and kind.startswith("text/html")
        assert b"<title>/blog/2019/cake-coffee-guide</title>" in body


def test_a_folder_served_without_pages_answers_404_for_other_paths(tmp_path: Path) -> None:
    with serve_folder(tmp_path) as base, pytest.raises(urllib.error.HTTPError) as error:
        fetch(base + "/blog/missing")
    assert error.value.code == 404


def run(seconds: float) -> Run:
    return Run(seconds, 50.0, seconds, "", "")


def test_the_report_sets_the_large_round_against_the_small_and_reads_against_the_batch() -> None:
    small = TableRounds(1_000, "p1_", 2.0, {p: run(0.5) for p in ("generate", "fetch", "parse", "updatedb")},
                      selected=100, entries_read=128, rows_read=100)
    large = TableRounds(1_000_000, "p2_", 90.0, {p: run(0.6) for p in ("generate", "fetch", "parse", "updatedb")},
                      selected=100, entries_read=400, rows_read=100)
    lines = report_table_rounds([small, large], setup="inventory s")
    assert lines[0].startswith("| due | inventory s |")
    assert "| 1,000,000 | 90.0 | 0.60 | 0.60 | 0.60 | 0.60 | 2.40 | 1.20x | 400 | 100 | 100 | 5.00x |" in lines
    assert any("round at 1,000,000 due / 1,000: 1.20x" in line and line.endswith("-> met") for line in lines)
    assert any("generate's reads at 1,000,000 due / batch: 5.00x" in line and "MISSED" in line for line in lines)



def test_a_phase_summary_is_its_last_non_blank_line_cut_to_width() -> None:
    finished = Run(1.0, 50.0, 1.0, "", "fetch: created table x\nfetch: batch b: 100 of 100 done\n\n")
    assert finished.last_line() == "fetch: batch b: 100 of 100 done"
    assert finished.last_line(12) == "fetch: batch"
    assert Run(1.0, 50.0, 1.0, "", "").last_line() == ""
