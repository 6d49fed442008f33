"""A loopback test web: virtual hosts on 127.0.0.x, built from a small description, with faults and truth.

Stand-alone (stdlib only; of sitemapcrawl it imports only `clock`, which
imports nothing): tests, the README demo and the benchmarks crawl it instead
of the internet.

    from sitemapcrawl.testweb import TestWebServer, small_web, Fault
    with TestWebServer(small_web()) as web:
        url = web.url("127.0.0.2", "/sitemap_index.xml")
        web.set_fault(url, Fault.SERVER_ERROR)
        web.truth.listed_by(url); web.log.max_concurrency("127.0.0.2")

Modules: `model` (the description), `render` (bodies), `truth` (what the
description implies), `server` (serving, faults, revisions, access log),
`accesslog` (what was requested, when), `latency` (thousands of slow
sites from one event loop, for the benchmarks), `generate` (ready-made webs;
`changing_web` changes between crawls), `__main__` (`python -m sitemapcrawl.testweb`).
"""

from sitemapcrawl.testweb.accesslog import Access, AccessLog
from sitemapcrawl.testweb.generate import bulk_web, changing_web, demo_web, small_web, vouching_web
from sitemapcrawl.testweb.model import (
    Entry,
    Fault,
    FaultSpec,
    Link,
    Page,
    PageRange,
    Resource,
    Robots,
    RobotsGroup,
    Site,
    Sitemap,
    SitemapFormat,
    Web,
)
from sitemapcrawl.testweb.server import TestWebServer
from sitemapcrawl.testweb.truth import ListedEntry, SitemapChange, Truth

__all__ = [
    "Access",
    "AccessLog",
    "Entry",
    "Fault",
    "FaultSpec",
    "Link",
    "ListedEntry",
    "Page",
    "PageRange",
    "Resource",
    "Robots",
    "RobotsGroup",
    "Site",
    "Sitemap",
    "SitemapChange",
    "SitemapFormat",
    "TestWebServer",
    "Truth",
    "Web",
    "bulk_web",
    "changing_web",
    "demo_web",
    "small_web",
    "vouching_web",
]

#: What other packages may use of this one, module by module (tests/unit/test_layout.py refuses any other
#: name): a module or a name not here is this package's own.
FACE: dict[str, tuple[str, ...]] = {}
