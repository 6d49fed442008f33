"""Every file of this repository named in the code's text and in the docs exists: a move leaves no stale path.

Read: every module of `sitemapcrawl/` (docstrings and comments alike),
docs/*.md, README.md and benchmarks/README.md. Checked, by pattern:

- a path with a slash ending in a file type of the repository (`.py`,
  `.md`, `.toml`, `.tsv`, `.hbase`, `.yml`, `.sh`), such as
  `jobs/fetch.py`, `sitemapcrawl/web/robots.py` or
  `benchmarks/results/2026-12-01-usp-tree.md`: it must exist under one of
  `BASES` or beside the file naming it (docs link `../README.md`). A token
  that follows `:`, `@` or a word character is a URL or a host, not a path;
- a bare name in backquotes with one of those types (`webpage.py`,
  `columns.tsv`): some file of the repository has that name;
- a dotted name `sitemapcrawl.x.y`: it imports, and names an attribute of
  the module it reaches.

Exempt: `NOT_OURS` (files of other projects and of the user), and the move
history of docs/layout.md ("The moves": its old column names paths that are
gone on purpose).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BASES = [REPO, REPO / "sitemapcrawl", REPO / "tests", REPO / "benchmarks", REPO / "docs"]
TYPES = r"py|md|toml|tsv|hbase|yml|sh"
SLASHED = re.compile(rf"(?<![\w./~$:@-])((?:\.\./)*(?:[\w.-]+/)+[\w.-]*\w\.(?:{TYPES}))(?![\w/])")
BARE = re.compile(rf"`([\w-]+\.(?:{TYPES}))`")
DOTTED = re.compile(r"(?<![\w.])sitemapcrawl(?:\.[A-Za-z_]\w*)+")

#: Names that are not files of this repository, and why.
NOT_OURS = {
    "usp/tree.py": "ultimate-sitemap-parser's module, the source of the well-known sitemap paths",
    "settings.hbase": "the setting `hbase` as an attribute, not a file",
    "prometheus.yml": "the user's Prometheus configuration (docs/commands.md, serve)",
}
#: Where a history names old paths on purpose: (file, the heading whose section is exempt).
HISTORY = {"docs/layout.md": "## The moves"}


def read_texts() -> Iterator[tuple[str, str]]:
    """(path from the repository root, text) of every file read; a history section is blanked out."""
    files = [*sorted((REPO / "sitemapcrawl").rglob("*.py")), *sorted((REPO / "docs").glob("*.md")),
             REPO / "README.md", REPO / "benchmarks" / "README.md"]
    for file in files:
        name = file.relative_to(REPO).as_posix()
        text = file.read_text(encoding="utf-8")
        heading = HISTORY.get(name)
        if heading is not None:
            assert heading in text, f"{name}: the exempt history '{heading}' is gone; update HISTORY"
            start = text.index(heading)
            end = text.find("\n## ", start + len(heading))
            text = text[:start] + "\n" * text.count("\n", start, end if end >= 0 else len(text)) + (
                text[end:] if end >= 0 else "")
        yield name, text


def where(text: str, match: re.Match[str]) -> int:
    return text.count("\n", 0, match.start()) + 1


def file_names() -> set[str]:
    skip = {".git", ".venv", "__pycache__", "site", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
    return {path.name for path in REPO.rglob("*") if not skip & set(path.relative_to(REPO).parts)}


def resolves(dotted: str) -> bool:
    """`sitemapcrawl.a.b.c`: the longest module prefix imports and the rest are its attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        path = REPO.joinpath(*parts[:cut])
        if path.with_suffix(".py").exists() or (path / "__init__.py").exists():
            found: object = importlib.import_module(".".join(parts[:cut]))
            for attribute in parts[cut:]:
                if not hasattr(found, attribute):
                    return False
                found = getattr(found, attribute)
            return True
    return False


def test_every_path_named_exists() -> None:
    stale = []
    for name, text in read_texts():
        here = (REPO / name).parent
        for match in SLASHED.finditer(text):
            token = match.group(1)
            if token not in NOT_OURS and not any((base / token).exists() for base in (*BASES, here)):
                stale.append(f"{name}:{where(text, match)}: {token}")
    assert not stale, "paths that name no file (moved? give the path it has now):\n" + "\n".join(stale)


def test_every_file_name_named_exists() -> None:
    names = file_names()
    stale = [f"{name}:{where(text, match)}: {match.group(1)}" for name, text in read_texts()
             for match in BARE.finditer(text) if match.group(1) not in names | NOT_OURS.keys()]
    assert not stale, "file names that no file of the repository has:\n" + "\n".join(stale)


def test_every_dotted_module_name_resolves() -> None:
    stale = [f"{name}:{where(text, match)}: {match.group(0)}" for name, text in read_texts()
             for match in DOTTED.finditer(text) if not resolves(match.group(0))]
    assert not stale, "module names that do not import (moved? renamed?):\n" + "\n".join(stale)


def test_the_patterns_catch_what_they_should() -> None:
    assert SLASHED.findall("see jobs/batches.py and `sitemapcrawl/web/robots.py`.") == [
        "jobs/batches.py", "sitemapcrawl/web/robots.py"]
    assert SLASHED.findall("http://127.0.0.1:8000/a/b.py user@host/x.md") == []
    assert BARE.findall("the row model (`webpage.py`) and columns.tsv") == ["webpage.py"]
    assert not resolves("sitemapcrawl.jobs.batches") and resolves("sitemapcrawl.model.splits.BUCKETS")
