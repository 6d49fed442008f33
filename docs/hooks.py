"""MkDocs hook: fill the generated parts of the pages from the code as the site is built.

The home page is README.md (the front page, its links into docs/ made
relative); the command reference is every command's `--help` and the
settings table is `Settings` rendered (`sitemapcrawl.cli.reference_doc`),
so the docs cannot drift from the code. mkdocs.yml names this file under
`hooks:`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sitemapcrawl.cli.reference_doc import fill

README = Path(__file__).resolve().parents[1] / "README.md"


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """The README for the home page; every page's marker lines replaced by what they ask for."""
    if page.file.src_uri == "index.md":
        return README.read_text(encoding="utf-8").replace("](docs/", "](")
    return fill(markdown)
