"""The engine against 38 real sitemaps from public repositories' test fixtures.

The documents and their expected counts live beside the clone, in
`../shared/realworld-sitemaps/` (`expected.jsonl`: kind, page and child-sitemap
counts, first and last entry, and where each count comes from; licences in its
README). They are read from there, never copied into the project; when the
folder is absent the test is skipped with a message saying where it looked.

Scope is off (`strict=False`): the counts include off-host URLs on purpose
(see the corpus README), and scope has its own tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sitemapcrawl.errors import SitemapError
from sitemapcrawl.sitemaps import PageEntry, SitemapKind, SitemapRef, parse_sitemap
from sitemapcrawl.sitemaps.model import LINK_FROM_GUID
from sitemapcrawl.sitemaps.scope import ScopeContext

REPO_ROOT = Path(__file__).resolve().parents[3]
CORPUS = REPO_ROOT.parent / "shared" / "realworld-sitemaps"
EXPECTED = CORPUS / "expected.jsonl"


def _cases() -> list[dict[str, Any]]:
    if not EXPECTED.is_file():
        return []
    return [json.loads(line) for line in EXPECTED.read_text(encoding="utf-8").splitlines() if line.strip()]


CASES = _cases()
needs_corpus = pytest.mark.skipif(
    not CASES, reason=f"real-world sitemap corpus not found at {CORPUS} (it sits beside the clone in CI)"
)


def _read(case: dict[str, Any]) -> tuple[str | None, list[PageEntry], list[SitemapRef], Any]:
    """(kind or None when not read as a sitemap, pages, child sitemaps, report or error text)."""
    data = (CORPUS / case["file"]).read_bytes()
    url = "http://realworld.test/" + Path(case["file"]).name
    try:
        document = parse_sitemap(data, url, scope=ScopeContext(strict=False))
    except SitemapError as exc:
        return None, [], [], str(exc)
    entries = list(document)
    pages = [entry for entry in entries if isinstance(entry, PageEntry)]
    children = [entry for entry in entries if isinstance(entry, SitemapRef)]
    return document.kind.value, pages, children, document.report


@needs_corpus
def test_the_corpus_is_complete():
    assert len(CASES) == 38
    assert all((CORPUS / case["file"]).is_file() for case in CASES)


@needs_corpus
@pytest.mark.parametrize("case", CASES, ids=[Path(case["file"]).name for case in CASES])
def test_counts_and_first_entry(case: dict[str, Any]):
    kind, pages, children, report = _read(case)
    if case["kind"] == "invalid":
        # No entries, a reported error, no crash.
        assert pages == [] and children == []
        assert kind is None or report.problems, "an invalid document must say why"
        return
    assert kind == case["kind"]
    entries: list[PageEntry] | list[SitemapRef] = children if kind == SitemapKind.INDEX.value else pages
    if case["urls"] is not None:
        assert len(pages) == case["urls"]
    if case["sitemaps"] is not None:
        assert len(children) == case["sitemaps"]
    if case["first_loc"] is not None:
        assert entries[0].loc == case["first_loc"]
    if case["last_loc"] is not None and (case["urls"] is not None and case["sitemaps"] is not None):
        assert entries[-1].loc == case["last_loc"]


@needs_corpus
def test_the_guid_only_rss_item_is_read_and_warned_about():
    case = next(case for case in CASES if case["file"].endswith("cc-rss-feed.rss"))
    kind, pages, _children, report = _read(case)
    assert kind == "rss" and len(pages) == 4
    assert report.warnings == (LINK_FROM_GUID.format(n=1),)
