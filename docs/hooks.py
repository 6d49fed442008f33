"""MkDocs hook: the home page is README.md (the front page), its links into docs/ made relative.

The command reference and the settings table are not filled here: they are
committed in their pages (`python -m sitemapcrawl.cli.reference_doc` writes
them, the tests check them). mkdocs.yml names this file under `hooks:`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[1] / "README.md"


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """The README for the home page; every other page as it is."""
    if page.file.src_uri == "index.md":
        return README.read_text(encoding="utf-8").replace("](docs/", "](")
    return markdown
