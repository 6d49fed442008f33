"""sitemapcrawl: an HBase-backed, sitemap-focused web crawler."""

__version__ = "0.1.0"
