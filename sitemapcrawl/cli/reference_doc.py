"""The docs' generated parts: every command's `--help`, and the settings table, committed and kept current.

A page holds a generated part between its two marker lines (`COMMANDS`,
`SETTINGS`: start and end), committed, so a reader of the repository sees
it. `python -m sitemapcrawl.cli.reference_doc` rewrites every page of docs/
whose part differs from what the code says; with `--check` it rewrites
nothing and exits 1, one line per stale page (the test suite runs the same
check: tests/unit/test_reference_doc.py). The text is the same on every
machine: help at 80 columns, no colours.

Cost: one in-process `--help` per command (typer's test runner, no
subprocess), a fraction of a second for the whole tree.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

from sitemapcrawl.cli.app import app
from sitemapcrawl.cli.settings_doc import settings_table

# Click wraps help at the terminal's width less 2, and at most at 78 columns
# (its max_content_width, 80, less 2): what a terminal 80 or more wide shows.
HELP_WIDTH = 78
DOCS = Path(__file__).resolve().parents[2] / "docs"
UPDATE = "python -m sitemapcrawl.cli.reference_doc"
"""The command that rewrites the generated parts (what a stale page's hint says to run)."""


@dataclass(frozen=True)
class Part:
    """A generated part of a page: its marker lines and what goes between them."""

    name: str

    @property
    def start(self) -> str:
        return f"<!-- generated: {self.name} -->"

    @property
    def end(self) -> str:
        return f"<!-- end of generated: {self.name} -->"


COMMANDS = Part("command reference")
SETTINGS = Part("settings table")


def command_paths() -> list[list[str]]:
    """The root, then every group and command depth first, in the order `--help` lists them."""
    paths: list[list[str]] = []

    def walk(command: Any, path: list[str]) -> None:
        paths.append(path)
        for name, child in getattr(command, "commands", {}).items():
            if not child.hidden:
                walk(child, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


def help_text(path: list[str]) -> str:
    """What `sitemapcrawl PATH --help` prints on a terminal of 80 columns or more (no colours)."""
    result = CliRunner().invoke(app, [*path, "--help"], prog_name="sitemapcrawl", terminal_width=HELP_WIDTH,
                                color=False)
    if result.exit_code != 0:
        raise RuntimeError(f"sitemapcrawl {' '.join(path)} --help failed: {result.output}")
    return result.stdout


def commands_reference() -> str:
    """Markdown: one section per command, its help as printed."""
    sections = []
    for path in command_paths():
        name = " ".join(["sitemapcrawl", *path])
        sections.append(f"## `{name}`\n\n```text\n{help_text(path).rstrip()}\n```\n")
    return "\n".join(sections)


def fill(markdown: str) -> str:
    """`markdown` with what lies between each part's markers made what the code says; other text untouched.

    ValueError for a start marker without its end marker after it.
    """
    for part, render in ((COMMANDS, commands_reference), (SETTINGS, settings_table)):
        begin = markdown.find(part.start)
        if begin < 0:
            continue
        end = markdown.find(part.end, begin)
        if end < 0:
            raise ValueError(f"{part.start} without its {part.end} after it")
        head = markdown[:begin + len(part.start)]
        markdown = f"{head}\n\n{render().rstrip()}\n\n{markdown[end:]}"
    return markdown


def stale_pages(docs: Path = DOCS, write: bool = False) -> list[Path]:
    """The pages of `docs` whose generated parts differ from what the code says; `write`: rewrite them.

    ValueError, naming the page, for a start marker without its end marker.
    """
    stale = []
    for page in sorted(docs.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        try:
            current = fill(text)
        except ValueError as exc:
            raise ValueError(f"{page}: {exc}") from None
        if current != text:
            stale.append(page)
            if write:
                page.write_text(current, encoding="utf-8")
    return stale


def main(argv: list[str]) -> int:
    """`[--check] [DOCS_DIR]`: rewrite the stale pages (exit 0), or with --check name them (exit 1);
    exit 2 for a page whose markers are broken."""
    check = "--check" in argv
    folders = [arg for arg in argv if arg != "--check"]
    try:
        stale = stale_pages(Path(folders[0]) if folders else DOCS, write=not check)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for page in stale:
        if check:
            print(f"{page}: its generated part differs from the code; run `{UPDATE}` to update it", file=sys.stderr)
        else:
            print(f"rewrote {page}", file=sys.stderr)
    return 1 if check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
