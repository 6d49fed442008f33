"""The docs' command reference is every command's --help, rendered from the typer app."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import typer
from hbase_fixtures import REPO

from sitemapcrawl.cli.app import app
from sitemapcrawl.cli.reference_doc import COMMANDS, UPDATE, commands_reference, fill, main, stale_pages


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


def test_the_committed_generated_parts_are_what_the_code_says() -> None:
    stale = stale_pages(REPO / "docs")
    if stale:
        pytest.fail(f"{', '.join(f'docs/{p.name}' for p in stale)}: not what the CLI says; run "
                    f"`.venv/bin/{UPDATE}` to update", pytrace=False)


def test_the_reference_page_holds_the_reference_between_its_markers() -> None:
    page = (REPO / "docs" / "reference.md").read_text(encoding="utf-8")
    assert page.count(COMMANDS.start) == 1 and page.count(COMMANDS.end) == 1, "docs/reference.md lost a marker"
    inside = page.split(COMMANDS.start)[1].split(COMMANDS.end)[0]
    assert "## `sitemapcrawl crawl`" in inside and "Usage: sitemapcrawl crawl [OPTIONS] [FILE]" in inside


def test_the_check_names_a_stale_page_and_how_to_update_it(tmp_path: Path) -> None:
    page = tmp_path / "reference.md"
    page.write_text(f"# Reference\n\n{COMMANDS.start}\nold help\n{COMMANDS.end}\n\nAfter.\n", encoding="utf-8")
    (tmp_path / "other.md").write_text("No markers.\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "sitemapcrawl.cli.reference_doc", "--check", str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 1
    hint = f"{page}: its generated part differs from the code; run `{UPDATE}` to update it"
    assert done.stderr.splitlines() == [hint]
    assert "old help" in page.read_text(encoding="utf-8")  # --check writes nothing
    assert main([str(tmp_path)]) == 0
    text = page.read_text(encoding="utf-8")
    assert text.startswith(f"# Reference\n\n{COMMANDS.start}\n\n## `sitemapcrawl`\n") and text.endswith(
        f"```\n\n{COMMANDS.end}\n\nAfter.\n")
    assert "old help" not in text and stale_pages(tmp_path) == []


def test_a_start_marker_without_its_end_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="without its"):
        fill(f"{COMMANDS.start}\nno end\n")
    (tmp_path / "broken.md").write_text(f"{COMMANDS.start}\nno end\n", encoding="utf-8")
    assert main(["--check", str(tmp_path)]) == 2


def test_the_reference_does_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    before = commands_reference()
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert commands_reference() == before
    assert "\x1b[" not in before


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
