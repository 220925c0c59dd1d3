"""The junk host: oversize (sized and chunked), binary served as HTML, non-HTML, malformed HTML."""

from __future__ import annotations

import random
import re
from typing import Any

from lookup.crawler.sandbox.sites.base import (
    ALLOW_ALL,
    NOT_FOUND,
    World,
    esc,
    html_response,
    page,
    text_response,
    zen_lines,
)
from lookup.crawler.sandbox.web import Request, Response

__all__ = ["MALFORMED", "JunkSite"]


MALFORMED = """<html><head><title>Broken <b>page</title>
<body><div><p>This page is broken in many ways. <a href="/target-1.html">valid link
<a href="http://[::1">bad ipv6</a> <a href="javascript:alert(1)">js</a>
<a href="mailto:someone@sandbox.test">mail</a> <a href="  /target-2.html  ">spaces</a>
<table><tr><td>cell<td>cell two</table></div></div></span>
<a href='/target-3.html'>single quotes</a> <a href=/target-4.html>no quotes</a>
<script>document.write("<a href='/scripted.html'>x</a>")</script>
<!-- <a href="/commented.html">commented out</a> -->
<a href="http://junk.sandbox.test:99999/x">bad port</a> <a href="">empty</a> <a>no href</a>
&nbsp;&amp &lt; &#xZZ; text after entities <p><p><p><li>orphan item
<a href="/target-5.html"><div>block in link</div></a>
"""


class JunkSite:
    """Answers a crawler must survive: too big, not HTML, mislabelled or broken."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.zen = zen_lines()

    def handle(self, req: Request) -> Response:
        p = req.path
        c = self.world.config
        if p == "/robots.txt":
            return text_response(ALLOW_ALL)
        if p == "/":
            links = [
                "/huge.html", "/huge-chunked.html", "/binary.html", "/image.png",
                "/report.pdf", "/broken.html",
                "/latin1.html", "/empty.html", "/no-type.html",
            ]  # fmt: skip
            items = "".join(f'<li><a href="{u}">{u}</a></li>' for u in links)
            return html_response(page("Junk", f"<h1>Junk</h1><ul>{items}</ul>"))
        if p in ("/huge.html", "/huge-chunked.html"):
            chunk = (("<p>" + " ".join(self.zen) + "</p>\n") * 8).encode()
            count = c.oversize_bytes // len(chunk) + 1
            return Response(200, stream=(chunk, count), chunked=p == "/huge-chunked.html")
        if p == "/binary.html":
            rng = random.Random(c.seed)
            return Response(200, bytes(rng.getrandbits(8) for _ in range(4096)))
        if p == "/image.png":
            png = bytes.fromhex(
                "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                "1f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f1b5a60000000049454e44ae426082"
            )
            return Response(200, png, "image/png")
        if p == "/report.pdf":
            pdf = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<<>>endobj\n%%EOF\n"
            return Response(200, pdf, "application/pdf")
        if p == "/broken.html":
            return html_response(MALFORMED)
        if p == "/latin1.html":
            main = "<h1>Caf\xe9 cr\xe8me br\xfbl\xe9e</h1><p>" + self.zen[2] + "</p>"
            body = page("Caf\xe9", main)
            return Response(200, body.encode("latin-1"), "text/html; charset=utf-8")
        if p == "/empty.html":
            return html_response("")
        if p == "/no-type.html":
            main = f"<h1>No content type</h1><p>{esc(self.zen[4])}</p>"
            return Response(200, page("No type", main).encode(), None)
        m = re.fullmatch(r"/target-(\d)\.html", p)
        if m:
            main = f"<h1>Target {m.group(1)}</h1><p>{esc(self.zen[int(m.group(1)) + 13])}</p>"
            return html_response(page("Target", main))
        return NOT_FOUND

    def manifest(self) -> dict[str, Any]:
        u = lambda path: self.world.url("junk", path)  # noqa: E731
        return {
            "oversize": [u("/huge.html"), u("/huge-chunked.html")],
            "binary_as_html": u("/binary.html"),
            "non_html": [u("/image.png")],
            "damaged_pdf": u("/report.pdf"),  # a PDF page that is no readable PDF
            "malformed": u("/broken.html"),
            "malformed_links": [u(f"/target-{i}.html") for i in range(1, 6)],
            "never_linked": [u("/scripted.html"), u("/commented.html")],
        }
