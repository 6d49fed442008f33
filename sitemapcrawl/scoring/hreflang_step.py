"""hreflang return links: which alternates of a page do not name it back, judged as updatedb counts the page.

The most common hreflang error: page A names B as its German version, and B
does not name A. A page's alternates come from its head and Link header
(`m:hl`, fetch) and from its sitemaps' `xhtml:link` (`s:hl`, updatedb's
merge); what each alternate names is read from its own row
(`model.audit.declared`). `HreflangStep.judge` runs in
`count_step.BatchCounting.take`, before a chunk of touched rows is counted:
it writes `m:hnr` (the alternates that do not name the page back, `LANG
URL` a line, empty once they all do) on the rows it changed, so the row
counts (`hreflang-no-return`) read it as a fact of the row. An alternate
nothing is known of yet (not fetched, no sitemap gives it alternates) is
not judged; the page is judged again the next time it is counted (fetched
again, or listed again). The chunk's own rows, as the merge leaves them,
are read before HBase (their puts are not written yet).

Cost: nothing for a chunk without alternates; otherwise one multi-get of
two columns for the alternates outside the chunk, and a put per row whose
verdict changed.
"""

from __future__ import annotations

from sitemapcrawl.errors import InvalidUrlError
from sitemapcrawl.model.audit import alternates, declared, missing_returns
from sitemapcrawl.model.cells import encode, with_fields
from sitemapcrawl.model.webpage import WebPage
from sitemapcrawl.storage.store import Store
from sitemapcrawl.storage.tables import Unreadable, read_pages
from sitemapcrawl.web import rowkeys

#: What the step reads of a touched row (and of its alternates' rows: the first two).
FIELDS = ("hreflang", "sitemap_hreflang", "hreflang_no_return")


class HreflangStep:
    """updatedb's judging of hreflang return links (see the module docstring)."""

    def __init__(self, store: Store, unreadable: Unreadable) -> None:
        self.store, self.unreadable = store, unreadable
        self.judged = self.changed = 0

    def judge(self, rows: list[tuple[bytes, WebPage]]) -> tuple[list[tuple[bytes, WebPage]],
                                                                list[tuple[bytes, dict[bytes, bytes]]]]:
        """`rows` (read with `FIELDS`) with their `hreflang_no_return` judged, and the puts of those that changed."""
        named = {key: alternates(row) for key, row in rows if row.hreflang or row.sitemap_hreflang
                 or row.hreflang_no_return}
        if not named:
            return rows, []
        minds: dict[str, frozenset[str] | None] = {row.url: declared(row) for _key, row in rows}
        self._read_minds({url for pairs in named.values() for _lang, url in pairs} - minds.keys(), minds)
        out: list[tuple[bytes, WebPage]] = []
        puts: list[tuple[bytes, dict[bytes, bytes]]] = []
        for key, row in rows:
            pairs = named.get(key)
            if pairs is None:
                out.append((key, row))
                continue
            self.judged += 1
            missing = missing_returns(row.url, pairs, minds)
            if missing != tuple(row.hreflang_no_return or ()):
                self.changed += 1
                puts.append((key, encode(WebPage(row.url, hreflang_no_return=missing))))
                row = with_fields(row, {"hreflang_no_return": missing})
            out.append((key, row))
        return out, puts

    def _read_minds(self, urls: set[str], minds: dict[str, frozenset[str] | None]) -> None:
        """What each of `urls` names as its alternates (one multi-get); a row missing or unreadable: unknown."""
        keys: dict[bytes, str] = {}
        for url in urls:
            try:
                keys[rowkeys.row_key(url).encode("utf-8")] = url
            except InvalidUrlError:
                continue
        if not keys:
            return
        for _key, row in read_pages(self.store, sorted(keys), list(FIELDS[:2]), "hreflang", self.unreadable).items():
            minds[row.url] = declared(row)
