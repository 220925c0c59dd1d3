"""Parsing pages: main text without chrome, links, canonical, robots directives."""

from __future__ import annotations

from lookup.crawler.parse import RobotsDirectives, parse_html, parse_robots_directives
from lookup.crawler.sandbox.sites import MALFORMED


def test_main_text_leaves_out_the_chrome() -> None:
    html = (
        "<html><head><title> A  page </title></head><body><header>Site</header>"
        "<nav>Menu</nav><main>Hello&nbsp;<b>world</b><script>var x</script>"
        "<aside>ad</aside><p>Para</p></main><footer>(c)</footer></body></html>"
    )
    page = parse_html(html)
    assert page.title == "A page"
    assert page.text == "Hello world Para"


def test_body_is_used_when_there_is_no_main() -> None:
    page = parse_html("<body><nav>x</nav><p>Only   this</p><style>p{}</style></body>")
    assert page.text == "Only this"


def test_links_canonical_and_base() -> None:
    html = (
        '<head><link rel="canonical" href="/real"><base href="/dir/"></head>'
        '<a href="a.html">a</a><a href="b" rel="nofollow sponsored">b</a><area href="c">'
    )
    page = parse_html(html)
    assert page.links == ["a.html", "c"]
    assert page.canonical == "/real" and page.base_url == "/dir/"


def test_meta_robots_for_everyone_or_for_us() -> None:
    page = parse_html('<meta name="ROBOTS" content="NoIndex"><a href="x">x</a>')
    assert page.robots == RobotsDirectives(noindex=True) and page.links == ["x"]
    page = parse_html('<meta name="lookupbot" content="nofollow"><a href="x">x</a>')
    assert page.robots.nofollow and page.links == []
    page = parse_html('<meta name="otherbot" content="none"><a href="x">x</a>')
    assert page.robots == RobotsDirectives()


def test_x_robots_tag_values() -> None:
    assert parse_robots_directives("noindex, nofollow", "lookupbot") == RobotsDirectives(True, True)
    assert parse_robots_directives("none", "lookupbot") == RobotsDirectives(True, True)
    assert parse_robots_directives("otherbot: noindex", "lookupbot") == RobotsDirectives()
    assert parse_robots_directives("LookupBot: noindex", "lookupbot").noindex
    assert parse_robots_directives("unavailable_after: 2030-01-01", "lookupbot") == (
        RobotsDirectives()
    )


def test_malformed_html_does_not_break_the_parser() -> None:
    page = parse_html(MALFORMED)
    hrefs = [h.strip() for h in page.links]
    for target in ("/target-1.html", "/target-2.html", "/target-3.html", "/target-4.html",
                   "/target-5.html"):  # fmt: skip
        assert target in hrefs
    assert "/scripted.html" not in " ".join(hrefs) and "/commented.html" not in hrefs
    assert "broken in many ways" in page.text
