"""The docs' generated reference: every command's `--help`, and the settings table.

The MkDocs hook (`docs/hooks.py`) calls `fill` on every page as the site is
built, so the command reference is what `--help` prints and the settings
table what `Settings` declares: neither can drift from the code. A page asks
for a part by holding its marker line (`COMMANDS_MARKER`, `SETTINGS_MARKER`).

Cost: one in-process `--help` per command (typer's test runner, no
subprocess), a fraction of a second for the whole tree.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.testing import CliRunner

from sitemapcrawl.cli.app import app
from sitemapcrawl.cli.settings_doc import settings_table

COMMANDS_MARKER = "<!-- generated: command reference -->"
SETTINGS_MARKER = "<!-- generated: settings table -->"
# Click wraps help at the terminal's width less 2, and at most at 78 columns
# (its max_content_width, 80, less 2): what a terminal 80 or more wide shows.
HELP_WIDTH = 78


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
    """What `sitemapcrawl PATH --help` prints on a terminal of 80 columns or more."""
    result = CliRunner().invoke(app, [*path, "--help"], prog_name="sitemapcrawl", terminal_width=HELP_WIDTH)
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
    """`markdown` with each marker line replaced by the part it asks for; other text untouched."""
    if COMMANDS_MARKER in markdown:
        markdown = markdown.replace(COMMANDS_MARKER, commands_reference())
    if SETTINGS_MARKER in markdown:
        markdown = markdown.replace(SETTINGS_MARKER, settings_table())
    return markdown
