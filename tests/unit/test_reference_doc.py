"""The docs' command reference is every command's --help, rendered from the typer app."""

from __future__ import annotations

import subprocess
import sys

import typer
from hbase_fixtures import REPO

from sitemapcrawl.cli.app import app
from sitemapcrawl.cli.reference_doc import COMMANDS_MARKER, commands_reference, fill


def every_path() -> list[tuple[list[str], bool]]:
    """The root, every group and every command of the typer app, each with whether it is a command."""
    paths: list[tuple[list[str], bool]] = []

    def walk(command, path: list[str]) -> None:  # type: ignore[no-untyped-def]
        children = getattr(command, "commands", {})
        paths.append((path, not children))
        for name, child in children.items():
            walk(child, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


def test_the_reference_page_asks_for_the_generated_reference() -> None:
    page = (REPO / "docs" / "reference.md").read_text(encoding="utf-8")
    assert page.count(COMMANDS_MARKER) == 1, "docs/reference.md lost the marker the docs hook fills"
    assert COMMANDS_MARKER not in fill(page)


def test_every_command_and_group_is_in_the_reference_with_an_example() -> None:
    reference = commands_reference()
    sections = reference.split("\n## ")
    paths = every_path()
    assert len(sections) == len(paths)
    for path, is_command in paths:
        name = " ".join(["sitemapcrawl", *path])
        section = next((s for s in sections if s.lstrip("# ").startswith(f"`{name}`")), None)
        assert section is not None, f"{name} is missing from the reference"
        assert f"Usage: {name} " in section
        if is_command:
            assert "Example:" in section, f"{name}: no example in the reference"


def test_the_reference_is_what_the_installed_command_prints() -> None:
    done = subprocess.run([sys.executable, "-m", "sitemapcrawl", "sitemap", "parse", "--help"],
                          capture_output=True, text=True, env={"COLUMNS": "80", "PATH": ""})
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip() in commands_reference()
