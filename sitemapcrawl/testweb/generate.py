"""Ready-made test webs: `small_web` (every format and fault, for
integration tests), `demo_web` (for the README's demo), `vouching_web`
(sitemaps in folders: scope) and `bulk_web` (big and lazy, for benchmarks)."""

from __future__ import annotations

from ipaddress import IPv4Address

from sitemapcrawl.testweb.model import (
    ROBOTS_PATH,
    Entry,
    Fault,
    FaultSpec,
    Link,
    Page,
    PageRange,
    Robots,
    RobotsGroup,
    Site,
    Sitemap,
    SitemapFormat,
    Web,
)

#: URLs over the sitemaps.org limit of 50,000 per sitemap.
OVER_URL_LIMIT = 50_001
#: Bytes over the sitemaps.org limit of 50 MiB would be slow to serve in
#: tests; 11 MB is over the old 10 MB limit (read whole, reported as `over-10mb`).
OVERSIZED_BYTES = 11_000_000


def _hosts(first: str, n: int) -> list[str]:
    start = IPv4Address(first)
    hosts = [str(start + i) for i in range(n)]
    if not all(h.startswith("127.") for h in hosts):
        raise ValueError(f"{n} hosts from {first} leave 127.0.0.0/8")
    return hosts


def small_web() -> Web:
    """A varied web of six hosts, 127.0.0.2 to 127.0.0.7, for integration tests.

    - 127.0.0.2 "shop": robots.txt with groups, Allow/Disallow, wildcards,
      Sitemap lines absolute, relative and cross-host plus malformed ones; a
      sitemap index over XML, XML.gz, XML with Content-Encoding gzip, a .gz
      name holding plain XML and plain text children (and one missing
      child); out-of-scope entries; pages with nofollow links, meta robots,
      canonical and base href; faults 404/410/500/slow/trickle/redirects/
      loop/oversized/wrong type/reset/close.
    - 127.0.0.3 "blog": RSS and Atom sitemaps, a cross-host sitemap listing
      shop URLs, drafts disallowed.
    - 127.0.0.4 "docs": no robots.txt (404); a gzipped index at the
      well-known /sitemap.xml; a 30-page lazy page range.
    - 127.0.0.5 "edge": a huge robots.txt (over 500 KiB); a sitemap over the
      50,000-URL limit (generated lazily) and one with an 11 MB body.
    - 127.0.0.6 "down": robots.txt answers 500 (crawlers must stay away).
    - 127.0.0.7 "moved": robots.txt redirects to the blog's.
    """
    shop, blog, docs, edge, down, moved = _hosts("127.0.0.2", 6)
    shop_pages = (
        Page("/", "Shop home", (
            Link("/about.html#team", "About us"),
            Link("/products/", "Products"),
            Link("/private/secret.html", "Secret"),
            Link("/private/open.html", "Open part of private"),
            Link("/docs/manual.pdf", "Manual (PDF)"),
            Link("/docs/index.html", "Docs"),
            Link("/link-only.html", "Only linked"),
            Link("/nofollow-target.html", "Not followed", nofollow=True),
            Link("/meta-nofollow.html", "Meta nofollow"),
            Link("/moved.html", "Moved"),
            Link("/broken.html", "Broken"),
            Link(f"//{blog}/", "Our blog"),
            Link("http://example.invalid/elsewhere", "Outside"),
        )),
        Page("/about.html", "About the shop", (Link("/", "Home"),),
             text="A shop that sells nothing, politely."),
        Page("/products/", "Products", tuple(
            Link(f"/products/{i}.html", f"Product {i}") for i in range(1, 4)
        ) + (Link("/products/1.html?ref=list", "Product 1 again"),)),
        *(Page(f"/products/{i}.html", f"Product {i}", (Link("/products/", "All products"),),
               canonical=f"/products/{i}.html") for i in range(1, 4)),
        Page("/products/1.html?ref=list", "Product 1", canonical="/products/1.html"),
        Page("/private/secret.html", "Secret", (Link("/private/deeper.html", "Deeper"),)),
        Page("/private/deeper.html", "Deeper secret"),
        Page("/private/open.html", "Open", (Link("/", "Home"),)),
        Page("/docs/index.html", "Docs", (Link("intro.html", "Intro"), Link("../faq.html", "FAQ")),
             base_href="/docs/v2/"),
        Page("/docs/v2/intro.html", "Intro", (Link("/docs/v2/deep/1.html", "Deeper"),)),
        Page("/docs/v2/deep/1.html", "Deep 1", (Link("2.html", "Deeper still"),)),
        Page("/docs/v2/deep/2.html", "Deep 2"),
        Page("/docs/faq.html", "FAQ"),
        Page("/link-only.html", "Only reachable by links", (Link("/link-only-2.html", "Next"),)),
        Page("/link-only-2.html", "Also only by links"),
        Page("/nofollow-target.html", "Reached only by a nofollow link"),
        Page("/meta-nofollow.html", "Meta nofollow", (Link("/behind-meta.html", "Behind"),),
             meta_robots="noindex, nofollow"),
        Page("/behind-meta.html", "Behind a meta nofollow page"),
        Page("/sub/a.html", "Sub A"),
        Page("/other.html", "Other"),
        *(Page(p, p.strip("/").replace(".html", "").title()) for p in (
            "/slow.html", "/trickle.html", "/big.html", "/wrong-type.html")),
    )
    shop_sitemaps = (
        Sitemap("/sitemap_index.xml", index=True, entries=(
            Entry("/sitemap-pages.xml", lastmod="2024-03-01"),
            Entry(f"//{shop}/sitemap-products.xml.gz", lastmod="2024-03-02T10:00:00+00:00"),
            Entry("/sitemap-encoded.xml"),
            Entry("/sitemap-plain.xml.gz"),
            Entry("/sitemap.txt"),
            Entry("/missing-sitemap.xml"),
            Entry("/sub/sitemap.xml"),
        )),
        Sitemap("/sitemap-pages.xml", entries=(
            Entry("/", "2024-03-01", "daily", "1.0"),
            Entry("/about.html", "2024-01-15T08:30:00Z", "monthly", "0.5"),
            Entry("/private/secret.html", "2024-02-01", "weekly", "0.3"),
            Entry("/private/open.html"),
            Entry("/docs/manual.pdf", priority="0.2"),
            Entry("/gone.html", changefreq="never"),
            Entry("/slow.html", "not-a-date", "sometimes", "1.5"),
            Entry("/trickle.html", priority="high"),
            Entry("/moved.html"),
            Entry("/moved-away.html"),
            Entry("/loop.html"),
            Entry("/big.html"),
            Entry("/wrong-type.html"),
            Entry("/reset.html"),
            Entry("/close.html"),
            Entry("/not-there.html"),
            Entry("/meta-nofollow.html"),
            Entry("/docs/index.html"),
        )),
        Sitemap("/sitemap-products.xml.gz", SitemapFormat.XML_GZ, entries=tuple(
            Entry(f"/products/{i}.html", f"2024-02-{i:02d}", "weekly", f"0.{5 + i}")
            for i in range(1, 4))),
        Sitemap("/sitemap-encoded.xml", SitemapFormat.XML_GZ_ENCODED,
                entries=(Entry("/products/", changefreq="daily"),)),
        Sitemap("/sitemap-plain.xml.gz", SitemapFormat.GZ_NAME_PLAIN,
                entries=(Entry("/docs/v2/intro.html"),)),
        Sitemap("/sitemap.txt", SitemapFormat.TEXT,
                entries=(Entry("/docs/faq.html"), Entry("/about.html"))),
        Sitemap("/sub/sitemap.xml", entries=(
            Entry("/sub/a.html"),  # in scope
            Entry("/other.html"),  # outside the sitemap's folder
            Entry(f"//{docs}/"),  # another host
            Entry("http://example.invalid/ext.html"),  # outside the web
        )),
        Sitemap("/wrong-type-sitemap.xml", entries=(Entry("/about.html"),)),
    )
    shop_site = Site(
        shop, "shop", shop_pages,
        robots=Robots(
            groups=(
                RobotsGroup(("*",), disallow=("/private/", "/*.pdf$"),
                            allow=("/private/open.html",)),
                RobotsGroup(("BadBot",), disallow=("/",)),
                RobotsGroup(("SlowBot",), crawl_delay=10),
            ),
            sitemaps=(f"//{shop}/sitemap_index.xml", "/wrong-type-sitemap.xml",
                      f"//{blog}/sitemap-for-shop.xml"),
            extra_lines=("Sitemap:", "Sitmap: /typo.xml", "Sitemap /no-colon.xml",
                         "Sitemap: ht!tp:/ broken url", "Disalow: /typo-rule/"),
        ),
        sitemaps=shop_sitemaps,
        faults=(
            ("/broken.html", FaultSpec(Fault.SERVER_ERROR)),
            ("/gone.html", FaultSpec(Fault.GONE)),
            ("/slow.html", FaultSpec(Fault.SLOW, delay=0.3)),
            ("/trickle.html", FaultSpec(Fault.TRICKLE, delay=0.02, chunk_size=200)),
            ("/moved.html", FaultSpec(Fault.REDIRECT, target="/about.html")),
            ("/moved-away.html", FaultSpec(Fault.REDIRECT, target=f"//{blog}/", status=302)),
            ("/loop.html", FaultSpec(Fault.REDIRECT_LOOP)),
            ("/big.html", FaultSpec(Fault.OVERSIZED, size=OVERSIZED_BYTES)),
            ("/wrong-type.html", FaultSpec(Fault.WRONG_TYPE, content_type="image/png")),
            ("/wrong-type-sitemap.xml", FaultSpec(Fault.WRONG_TYPE, content_type="text/html")),
            ("/reset.html", FaultSpec(Fault.RESET)),
            ("/close.html", FaultSpec(Fault.CLOSE)),
        ),
    )

    posts = tuple(Page(f"/posts/{i}.html", f"Post {i}", (Link("/", "Blog home"),))
                  for i in range(1, 6))
    blog_site = Site(
        blog, "blog",
        (Page("/", "Blog", tuple(Link(p.path, p.title) for p in posts) + (
            Link("/drafts/next.html", "Next post"), Link(f"//{shop}/", "Shop"),
            Link(f"//{docs}/", "Docs"))),
         *posts,
         Page("/drafts/next.html", "Draft")),
        robots=Robots(groups=(RobotsGroup(("*",), disallow=("/drafts/",)),),
                      sitemaps=("/rss.xml", f"//{blog}/feed.atom")),
        sitemaps=(
            Sitemap("/rss.xml", SitemapFormat.RSS, entries=tuple(
                Entry(p.path, f"2024-04-0{i}T12:00:00+00:00") for i, p in enumerate(posts[:3], 1))),
            Sitemap("/feed.atom", SitemapFormat.ATOM, entries=tuple(
                Entry(p.path, f"2024-05-0{i}T12:00:00Z") for i, p in enumerate(posts[2:], 1))),
            Sitemap("/sitemap-for-shop.xml", entries=(
                Entry(f"//{shop}/about.html"), Entry(f"//{shop}/products/2.html"))),
        ),
    )

    ref = PageRange("/ref/", 30, title="Reference")
    docs_site = Site(
        docs, "docs",
        (Page("/", "Docs home", (Link("/ref/0.html", "Reference"), Link("/guide.html", "Guide"))),
         Page("/guide.html", "Guide", (Link(f"//{shop}/", "Shop"),))),
        ranges=(ref,),
        sitemaps=(
            Sitemap("/sitemap.xml", SitemapFormat.XML_GZ_ENCODED, index=True,
                    entries=(Entry("/sitemap-ref.xml"), Entry("/sitemap-guide.txt"))),
            Sitemap("/sitemap-ref.xml", ranges=(ref,)),
            Sitemap("/sitemap-guide.txt", SitemapFormat.TEXT, entries=(Entry("/guide.html"),)),
        ),
    )

    edge_site = Site(
        edge, "edge",
        (Page("/", "Edge cases"),),
        robots=Robots(groups=(RobotsGroup(("*",), disallow=("/nope/",)),),
                      sitemaps=("/sitemap-over-limit.xml", "/sitemap-big-body.xml")),
        sitemaps=(
            Sitemap("/sitemap-over-limit.xml",
                    ranges=(PageRange("/many/", OVER_URL_LIMIT, links=False),)),
            Sitemap("/sitemap-big-body.xml", entries=(Entry("/"),)),
        ),
        faults=(
            (ROBOTS_PATH, FaultSpec(Fault.OVERSIZED, size=600_000)),
            ("/sitemap-big-body.xml", FaultSpec(Fault.OVERSIZED, size=OVERSIZED_BYTES)),
        ),
    )

    down_site = Site(
        down, "down", (Page("/", "Down"),),
        robots=Robots(sitemaps=("/sitemap.xml",)),
        sitemaps=(Sitemap("/sitemap.xml", entries=(Entry("/"),)),),
        faults=((ROBOTS_PATH, FaultSpec(Fault.SERVER_ERROR)),),
    )

    moved_site = Site(
        moved, "moved", (Page("/", "Moved robots", (Link("/drafts/x.html", "Draft"),)),
                         Page("/drafts/x.html", "Draft")),
        faults=((ROBOTS_PATH, FaultSpec(Fault.REDIRECT, target=f"//{blog}/robots.txt")),),
    )
    return Web((shop_site, blog_site, docs_site, edge_site, down_site, moved_site), "small")


def demo_web() -> Web:
    """Two friendly sites for the README's demo: a garden shop (127.0.0.2)
    with a sitemap index, and its blog (127.0.0.3) with an RSS feed."""
    shop, blog = _hosts("127.0.0.2", 2)
    plants = ("tomato", "basil", "lavender", "rosemary", "sunflower", "fern", "mint", "thyme")
    plant_pages = tuple(
        Page(f"/plants/{p}.html", f"{p.title()} seedlings",
             (Link("/plants/", "All plants"), Link(f"//{blog}/posts/growing-{p}.html",
                                                   f"How to grow {p}")),
             text=f"Healthy {p} seedlings, grown without peat.")
        for p in plants)
    shop_site = Site(
        shop, "Greenleaf Garden Supplies",
        (Page("/", "Greenleaf Garden Supplies", (
            Link("/plants/", "Plants"), Link("/tools/", "Tools"), Link("/about.html", "About"),
            Link("/contact.html", "Contact"), Link("/cart/", "Cart", nofollow=True),
            Link(f"//{blog}/", "Our blog"))),
         Page("/plants/", "Plants", tuple(Link(p.path, p.title) for p in plant_pages)),
         *plant_pages,
         Page("/tools/", "Tools", tuple(Link(f"/tools/{t}.html", t.title())
                                        for t in ("trowel", "shears", "hose"))),
         *(Page(f"/tools/{t}.html", t.title(), (Link("/tools/", "All tools"),))
           for t in ("trowel", "shears", "hose")),
         Page("/about.html", "About us", text="A family nursery since 1987."),
         Page("/contact.html", "Contact", text="Write to us; we answer within a day."),
         Page("/cart/", "Your cart", meta_robots="noindex, nofollow")),
        robots=Robots(groups=(RobotsGroup(("*",), disallow=("/cart/",)),),
                      sitemaps=(f"//{shop}/sitemap_index.xml",)),
        sitemaps=(
            Sitemap("/sitemap_index.xml", index=True, entries=(
                Entry("/sitemap-plants.xml", "2024-06-01"), Entry("/sitemap-pages.xml.gz"))),
            Sitemap("/sitemap-plants.xml", entries=tuple(
                Entry(p.path, f"2024-05-{i + 10:02d}", "weekly", "0.8")
                for i, p in enumerate(plant_pages)) + (Entry("/plants/", "2024-06-01", "daily",
                                                             "0.9"),)),
            Sitemap("/sitemap-pages.xml.gz", SitemapFormat.XML_GZ, entries=(
                Entry("/", "2024-06-01", "daily", "1.0"),
                Entry("/about.html", "2023-11-20", "yearly", "0.3"),
                Entry("/contact.html", "2023-11-20", "yearly", "0.3"))),
        ),
    )
    posts = tuple(Page(f"/posts/growing-{p}.html", f"Growing {p}",
                       (Link("/", "Blog"), Link(f"//{shop}/plants/{p}.html", f"Buy {p}")),
                       text=f"Sow {p} in spring, in light soil.") for p in plants)
    blog_site = Site(
        blog, "Greenleaf Blog",
        (Page("/", "Greenleaf Blog", tuple(Link(p.path, p.title) for p in posts)), *posts),
        robots=Robots(groups=(RobotsGroup(("*",), crawl_delay=0.5),), sitemaps=("/feed.rss",)),
        sitemaps=(Sitemap("/feed.rss", SitemapFormat.RSS, entries=tuple(
            Entry(p.path, f"2024-0{1 + i % 6}-15T09:00:00+00:00")
            for i, p in enumerate(posts))),),
    )
    return Web((shop_site, blog_site), "demo")


def bulk_web(hosts: int, pages_per_host: int, sitemap_listed: bool = True, links: bool = True,
             first_host: str = "127.0.1.1", crawl_delay: float | None = None, heads: int = 0) -> Web:
    """A big web for benchmarks: `hosts` sites from `first_host` on, each
    with a home page and `pages_per_host` lazily built pages ``/p/{i}.html``.

    With `sitemap_listed`, robots.txt names ``/sitemap.xml`` listing every
    page (one sitemap, so over 50,000 pages it is over the limit); with
    `links`, the home page links to page 0, pages form a binary tree (plus a
    next link) and each page links to its twin on the next host; `crawl_delay`
    goes into robots.txt; `heads` > 0 gives every page a realistic head with
    that many hreflang alternates (`PageRange.heads`). Cost: a few objects per
    host; pages and sitemap bodies are built on request.
    """
    if hosts < 1 or pages_per_host < 0:
        raise ValueError(f"bulk_web needs hosts >= 1 and pages_per_host >= 0: "
                         f"{hosts}, {pages_per_host}")
    names = _hosts(first_host, hosts)
    sites = []
    for n, host in enumerate(names):
        twin = (names[(n + 1) % hosts],) if links and hosts > 1 else ()
        pages = PageRange("/p/", pages_per_host, links=links, cross_hosts=twin,
                          title=f"Host {n} page", heads=heads)
        home = Page("/", f"Host {n}", (Link("/p/0.html", "Start"),) if links else ())
        sites.append(Site(
            host, f"bulk-{n}", (home,), ranges=(pages,),
            robots=Robots(groups=(RobotsGroup(("*",), disallow=("/no-such-area/",), crawl_delay=crawl_delay),),
                          sitemaps=("/sitemap.xml",) if sitemap_listed else ()),
            sitemaps=(Sitemap("/sitemap.xml", ranges=(pages,)),) if sitemap_listed else (),
        ))
    return Web(tuple(sites), f"bulk-{hosts}x{pages_per_host}")


def vouching_web() -> Web:
    """Sitemaps kept in folders, as large sites keep them (issue 10's scope rule).

    - 127.0.0.2 ("vouched"): robots.txt lists a root index whose children live
      in `/sitemaps/` and list pages all over the host; it also lists a
      sitemap on 127.0.0.3 (a cross-submission).
    - 127.0.0.3 ("host"): serves `/for-a/sitemap.xml`, which lists pages of
      127.0.0.2, its own pages inside and outside `/for-a/`, and a page of
      127.0.0.4.
    - 127.0.0.4 ("linked"): the same folder children, reached only through a
      link on its home page (robots.txt names no sitemap).
    - 127.0.0.5 ("injected"): a folder sitemap `/feeds/sitemap.xml` listing
      root pages, meant to be injected with `sitemap=true`.
    - 127.0.0.6 ("moved"): robots.txt lists two sitemaps that redirect: one
      into `/sitemaps/` on the same host, one to `/elsewhere/` on 127.0.0.3.
    """
    vouched, host, linked, injected, moved = _hosts("127.0.0.2", 5)
    pages = (Page("/", "Home"), Page("/about.html", "About"), Page("/blog/post-1.html", "Post 1"),
             Page("/sitemaps/archive.html", "Archive"))
    children = (
        Sitemap("/sitemaps/posts.xml", entries=(Entry("/blog/post-1.html", "2024-05-01"),
                                                Entry("/sitemaps/archive.html"))),
        Sitemap("/sitemaps/pages.xml", entries=(Entry("/"), Entry("/about.html"))),
    )
    everyone = (RobotsGroup(("*",)),)
    vouched_site = Site(
        vouched, "vouched", pages,
        robots=Robots(groups=everyone, sitemaps=("/sitemap_index.xml", f"//{host}/for-a/sitemap.xml")),
        sitemaps=(Sitemap("/sitemap_index.xml", index=True,
                          entries=tuple(Entry(child.path) for child in children)), *children),
    )
    host_site = Site(
        host, "host", (Page("/", "Host"), Page("/for-a/b-page.html", "In the folder"),
                       Page("/b-root.html", "Outside the folder")),
        robots=Robots(groups=everyone),
        sitemaps=(Sitemap("/for-a/sitemap.xml", entries=(
            Entry(f"//{vouched}/about.html"), Entry(f"//{vouched}/blog/post-1.html"),
            Entry("/for-a/b-page.html"), Entry("/b-root.html"), Entry(f"//{linked}/about.html"))),
                  Sitemap("/elsewhere/s.xml", entries=(
                      Entry(f"//{moved}/about.html"), Entry("/elsewhere/x.html"), Entry("/b-root.html")))),
    )
    linked_site = Site(
        linked, "linked",
        (Page("/", "Home", (Link("/sitemaps/posts.xml", "Posts sitemap"), Link("/about.html", "About"))),
         *pages[1:]),
        robots=Robots(groups=everyone),
        sitemaps=children,
    )
    injected_site = Site(
        injected, "injected", (*pages, Page("/feeds/latest.html", "Latest")),
        robots=Robots(groups=everyone),
        sitemaps=(Sitemap("/feeds/sitemap.xml", entries=(
            Entry("/"), Entry("/about.html"), Entry("/feeds/latest.html"))),),
    )
    moved_site = Site(
        moved, "moved", pages,
        robots=Robots(groups=everyone, sitemaps=("/old-sitemap.xml", "/away-sitemap.xml")),
        sitemaps=(Sitemap("/sitemaps/moved.xml", entries=(Entry("/"), Entry("/about.html"))),),
        faults=(("/old-sitemap.xml", FaultSpec(Fault.REDIRECT, target="/sitemaps/moved.xml")),
                ("/away-sitemap.xml", FaultSpec(Fault.REDIRECT, target=f"//{host}/elsewhere/s.xml"))),
    )
    return Web((vouched_site, host_site, linked_site, injected_site, moved_site), "vouching")


def changing_web(version: int = 1) -> Web:
    """A news site (127.0.0.2) whose sitemaps change from `version` 1 to 2, with an audit's
    worth of faults; serve version 1, crawl, `TestWebServer.change_web(changing_web(2))`,
    crawl again. `Truth.sitemap_changes` says what moved.

    Both versions: robots.txt disallows /blocked/ and names the index. The pages
    sitemap lists a 404 (/broken.html), a 410 (/gone.html), a redirect
    (/moved.html -> /about.html), a robots-blocked page (/blocked/secret.html),
    a noindex page (/noindex.html), a page naming another canonical
    (/dup.html -> /about.html), an orphan no page links to (/orphan.html) and
    /news/1.html, which the news sitemap lists too (listed twice). The home
    page links to /linked-only.html, which no sitemap lists (unlisted).

    From 1 to 2: the news sitemap adds /news/4.html and /news/5.html, drops
    /news/1.html (still in the pages sitemap), moves the lastmod of
    /news/2.html and the priority of /news/3.html; the pages sitemap drops
    /retired.html and changes the changefreq of /about.html; the index drops
    /sitemap-old.xml (still served, unchanged) and moves the news sitemap's
    lastmod.
    """
    if version not in (1, 2):
        raise ValueError(f"changing_web has versions 1 and 2, not {version}")
    v2 = version == 2
    news_ids = (2, 3, 4, 5) if v2 else (1, 2, 3)
    all_news = tuple(Page(f"/news/{i}.html", f"News {i}", (Link("/", "Home"),)) for i in range(1, 6))
    home_links = (Link("/about.html", "About"), *(Link(f"/news/{i}.html", f"News {i}") for i in news_ids),
                  Link("/linked-only.html", "Only linked"), Link("/moved.html", "Moved"),
                  Link("/noindex.html", "Noindex"), Link("/dup.html", "Duplicate"), Link("/broken.html", "Broken"),
                  Link("/blocked/secret.html", "Secret"))
    pages = (
        Page("/", "News home", home_links),
        Page("/about.html", "About"),
        Page("/linked-only.html", "Reached by links only"),
        Page("/noindex.html", "Not for indexes", meta_robots="noindex"),
        Page("/dup.html", "A duplicate", canonical="/about.html"),
        Page("/orphan.html", "Linked from nowhere"),
        Page("/retired.html", "Retired"),
        Page("/blocked/secret.html", "Secret"),
        *all_news,
        *(Page(f"/old/{i}.html", f"Old {i}") for i in (1, 2)),
    )
    news = tuple(Entry(
        f"/news/{i}.html",
        lastmod="2024-06-15T10:00:00Z" if (v2 and i == 2) else f"2024-05-0{i}T10:00:00Z",
        changefreq="hourly",
        priority="0.5" if (v2 and i == 3) else "0.8") for i in news_ids)
    listed_pages = (
        Entry("/", "2024-05-01", "daily", "1.0"),
        Entry("/about.html", "2024-01-15", "weekly" if v2 else "monthly", "0.5"),
        Entry("/broken.html"), Entry("/gone.html"), Entry("/moved.html"), Entry("/blocked/secret.html"),
        Entry("/noindex.html"), Entry("/dup.html"), Entry("/orphan.html"), Entry("/news/1.html"),
        *(() if v2 else (Entry("/retired.html", "2023-02-01"),)),
    )
    children = (
        Entry("/sitemap-news.xml", lastmod="2024-06-15" if v2 else "2024-05-03"),
        Entry("/sitemap-pages.xml"),
        *(() if v2 else (Entry("/sitemap-old.xml"),)),
    )
    site = Site(
        "127.0.0.2", "news", pages,
        robots=Robots(groups=(RobotsGroup(("*",), disallow=("/blocked/",)),),
                      sitemaps=("//127.0.0.2/sitemap_index.xml",)),
        sitemaps=(
            Sitemap("/sitemap_index.xml", index=True, entries=children),
            Sitemap("/sitemap-news.xml", entries=news),
            Sitemap("/sitemap-pages.xml", entries=listed_pages),
            Sitemap("/sitemap-old.xml", entries=(Entry("/old/1.html", "2022-01-01"), Entry("/old/2.html"))),
        ),
        faults=(
            ("/broken.html", FaultSpec(Fault.NOT_FOUND)),
            ("/gone.html", FaultSpec(Fault.GONE)),
            ("/moved.html", FaultSpec(Fault.REDIRECT, target="/about.html")),
        ),
    )
    return Web((site,), f"changing-v{version}")
