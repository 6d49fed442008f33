"""Bot challenges and WAF blocks told from HTTP errors (web.challenge), and what fetch records of one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import MappingProxyType

import pytest

from sitemapcrawl.config import Settings
from sitemapcrawl.fetcher.model import FetchItem
from sitemapcrawl.fetcher.outcomes import outcome_row
from sitemapcrawl.model.audit import blocked_by_site, problems
from sitemapcrawl.model.schedule import SchedulePolicy, schedule
from sitemapcrawl.model.webpage import FetchStatus, WebPage
from sitemapcrawl.testweb.render import CHALLENGE_PAGE
from sitemapcrawl.web.challenge import challenge_of
from sitemapcrawl.web.http import HttpResponse

NOW = datetime(2026, 5, 1, 12, tzinfo=UTC)
AKAMAI = (b"<HTML><HEAD><TITLE>Access Denied</TITLE></HEAD><BODY><H1>Access Denied</H1>You don't have permission "
          b"to access this server.<P>Reference&#32;&#35;18&#46;4f1e2b17&#46;1700000000</BODY></HTML>")


@pytest.mark.parametrize(("status", "headers", "body", "vendor"), [
    (403, {"cf-mitigated": "challenge", "server": "cloudflare"}, CHALLENGE_PAGE, "cloudflare"),
    (503, {"server": "cloudflare"}, b"<title>Just a moment...</title>", "cloudflare"),
    (403, {"server": "cloudflare"}, b"<title>Attention Required! | Cloudflare</title>", "cloudflare"),
    (403, {"server": "AkamaiGHost"}, AKAMAI, "akamai"),
    (403, {"x-amzn-waf-action": "captcha"}, b"", "aws-waf"),
    (403, {"x-datadome": "protected"}, b"", "datadome"),
    (403, {}, b'<script src="https://geo.captcha-delivery.com/captcha/?initialCid=x"></script>', "datadome"),
    (403, {}, b'<div id="px-captcha"></div><script>window._pxAppId="PXabc"</script>', "perimeterx"),
    (403, {"x-sucuri-id": "18015"}, b"", "sucuri"),
    (403, {"server": "Sucuri/Cloudproxy"}, b"<title>Sucuri WebSite Firewall - Access Denied</title>", "sucuri"),
    (429, {"server": "cloudflare", "retry-after": "60"}, b"<title>Just a moment...</title>", "cloudflare"),
])
def test_each_known_defence_is_named(status: int, headers: dict[str, str], body: bytes, vendor: str) -> None:
    assert challenge_of(status, headers, body) == vendor


@pytest.mark.parametrize(("status", "headers", "body"), [
    (403, {}, b"<h1>Forbidden</h1>"),  # the site's own 403
    (403, {"server": "cloudflare"}, b"<h1>403 Forbidden</h1><hr><center>nginx</center>"),  # behind Cloudflare, its own
    (403, {"server": "AkamaiGHost"}, b"<h1>Forbidden</h1>"),
    (404, {"cf-mitigated": "challenge"}, CHALLENGE_PAGE),  # not an answer a defence gives instead of the page
    (200, {"server": "cloudflare"}, CHALLENGE_PAGE),
    (500, {"x-sucuri-id": "1"}, b""),
    (None, {}, b""),
])
def test_an_error_of_the_site_itself_is_no_challenge(status: int | None, headers: dict[str, str],
                                                     body: bytes) -> None:
    assert challenge_of(status, headers, body) is None


def test_a_challenged_page_is_deferred_not_an_http_error_and_asked_again_later() -> None:
    item = FetchItem("http://h.test/a", b"test.h:http/a", "http://h.test", "h.test", "h.test", retries=1)
    answer = HttpResponse("http://h.test/a", 403, MappingProxyType({"cf-mitigated": "challenge"}), CHALLENGE_PAGE)
    row = outcome_row(item, answer, NOW, Settings(user_agent="T/1"), store_content=False)
    assert (row.status, row.http_code, row.blocked_by) == (FetchStatus.DEFERRED, 403, "cloudflare")
    assert row.retries is None and "bot defence (cloudflare)" in (row.error or "")  # no failure counted
    assert row.retry_at is None
    asked = HttpResponse("http://h.test/a", 429, MappingProxyType({"server": "cloudflare", "retry-after": "60"}),
                         b"<title>Just a moment...</title>")
    waited = outcome_row(item, asked, NOW, Settings(user_agent="T/1"), store_content=False)
    assert waited.status is FetchStatus.DEFERRED and waited.retry_at == NOW + timedelta(seconds=60)
    listed = WebPage(row.url, status=row.status, http_code=row.http_code, blocked_by=row.blocked_by, in_sitemap=True,
                     is_sitemap=None, noindex=None, canonical=None)
    assert blocked_by_site(listed) and "http-error" not in problems(listed)
    plain = outcome_row(item, HttpResponse("http://h.test/a", 403, MappingProxyType({}), b"no"), NOW,
                        Settings(user_agent="T/1"), store_content=False)
    assert plain.status is FetchStatus.GONE and plain.blocked_by is None
    planned = schedule(WebPage(row.url, status=row.status, fetch_time=NOW, prev_fetch_time=None, fetch_interval=None,
                               retries=1, retry_at=None, content_changed=None, changefreq=None, lastmod=None),
                       SchedulePolicy(deferred_interval=86_400), NOW, just_fetched=True)
    assert planned.next_fetch == datetime(2026, 5, 2, 12, tzinfo=UTC)
