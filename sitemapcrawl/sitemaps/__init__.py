"""The sitemap engine: bytes and a URL in; entries, child sitemaps and problems out.

It knows nothing of HBase or the network, so jobs, tests and benchmarks use it
alone. Modules, one job each:

- `document`  `parse_sitemap` and `SitemapDocument`: the streaming pipeline.
- `sniff`     what the bytes are (gzip/zip magic, XML root, text), never the name.
- `decompress` gzip and zip, output capped by the byte limit (bombs cost nothing).
- `xml`       the safe lxml `iterparse` loop, urlset / index entries, extensions.
- `feeds`     RSS 2.0 and Atom 0.3 / 1.0 items as pages.
- `text`      plain-text sitemaps, one URL per line.
- `normalize` loc (IRI -> URI), lastmod (W3C -> UTC), changefreq, priority.
- `scope`     sitemap scope: vouching hosts, else the sitemaps.org folder rule.
- `limits`    the named limits and the byte cap.
- `discovery` the well-known sitemap paths (fetching is `sitemapcrawl.web.discover`).
- `tree`      walking a site's sitemaps and indexes (network behind a protocol).
- `render`    the text table and tree lines the CLI prints.
- `model`     the values and the error types.

Which library does what, and why:

- **lxml** parses every XML kind (urlset, index, RSS, Atom): its C `iterparse`
  streams the document in bounded memory, asked only for finished entry
  elements, with entities, DTDs and network access off. This is what makes the
  engine fast (close to a bare lxml loop) and safe.
- **ultimate-sitemap-parser** is the source of the list of well-known
  sitemap paths (`discovery.WELL_KNOWN_SITEMAP_PATHS`, kept in the project:
  usp's list is private) and is the reference the benchmark compares against. Its
  parsers are not used to read documents: they hold the whole document in
  memory as a string, fetch sub-sitemaps from inside the parser, take RSS dates
  as news dates rather than lastmod, and take the Atom `rel="self"` link rather
  than the alternate one; its web-client interface is mirrored (a small
  protocol, failures as values) by `sitemapcrawl.web.http.HttpClient`, which is
  what `tree` uses.
"""

from sitemapcrawl.sitemaps.document import SitemapDocument, parse_sitemap
from sitemapcrawl.sitemaps.limits import SitemapLimits
from sitemapcrawl.sitemaps.model import (
    Alternate,
    ChangeFreq,
    EmptySitemapError,
    Entry,
    Image,
    News,
    NotASitemapError,
    PageEntry,
    ParseReport,
    SitemapKind,
    SitemapRef,
    Video,
)
from sitemapcrawl.sitemaps.scope import ScopeContext

__all__ = [
    "Alternate",
    "ChangeFreq",
    "EmptySitemapError",
    "Entry",
    "Image",
    "News",
    "NotASitemapError",
    "PageEntry",
    "ParseReport",
    "ScopeContext",
    "SitemapDocument",
    "SitemapKind",
    "SitemapLimits",
    "SitemapRef",
    "Video",
    "parse_sitemap",
]
