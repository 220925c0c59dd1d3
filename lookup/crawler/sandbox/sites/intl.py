"""The international host: a few pages in Japanese and in Hindi, and pages in legacy encodings.

A search engine that only knows English finds none of them: Japanese is written
without spaces between words (the index cuts it into character bigrams) and Hindi in
Devanagari, with its own stop words and stems. Each page declares its language in
``<html lang>``; the text is short original prose, the same every time.

Under ``/enc/`` the same kind of prose is served in the encodings a crawler meets on the
real web, each declared the way such pages often are (or not at all): Shift_JIS named
only in a ``<meta>``, windows-1252 with no declaration, windows-1252 bytes labelled
``iso-8859-1`` in the header, and UTF-16 with a byte-order mark and no label.
"""

from __future__ import annotations

from lookup.crawler.sandbox.sites.base import (
    ALLOW_ALL,
    NOT_FOUND,
    World,
    esc,
    html_response,
    page,
    text_response,
)
from lookup.crawler.sandbox.web import Request, Response

__all__ = ["ENCODED_PAGES", "INTL_PAGES", "IntlSite"]

#: path → (lang, title, paragraphs)
INTL_PAGES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "/ja/search.html": (
        "ja",
        "日本語の検索エンジン入門",
        (
            "日本語の文章には単語の間に空白がありません。",
            "そのため、検索エンジンは文字の二文字組、つまりバイグラムで索引を作ります。",
            "日本語の検索では、形態素解析を使う方法もよく知られています。",
        ),
    ),
    "/ja/trains.html": (
        "ja",
        "東京の電車",
        (
            "東京の電車はとても正確で、数分おきに駅に着きます。",
            "山手線は環状線で、新宿や渋谷などの主要な駅を結んでいます。",
            "朝の通勤時間はとても混雑します。",
        ),
    ),
    "/hi/language.html": (
        "hi",
        "हिन्दी भाषा का परिचय",
        (
            "हिन्दी भारत में सबसे अधिक बोली जाने वाली भाषा है।",
            "यह देवनागरी लिपि में लिखी जाती है।",
            "खोज इंजन हिन्दी शब्दों को उनके मूल रूप में बदलकर खोजते हैं।",
        ),
    ),
    "/hi/railways.html": (
        "hi",
        "भारतीय रेलवे",
        (
            "भारतीय रेलवे दुनिया के सबसे बड़े रेल नेटवर्कों में से एक है।",
            "हर दिन लाखों यात्री ट्रेनों से यात्रा करते हैं।",
            "स्टेशनों पर चाय बहुत लोकप्रिय है।",
        ),
    ),
}


#: path → (codec of the bytes, Content-Type header, whether a <meta charset> names it,
#: lang, title, text). The texts hold the letters each encoding gets wrong when misread.
ENCODED_PAGES: dict[str, tuple[str, str, bool, str, str, str]] = {
    "/enc/shift-jis.html": (
        "shift_jis",
        "text/html",
        True,
        "ja",
        "京都の古い寺",
        "京都には千年以上前に建てられた寺がたくさんあります。秋の紅葉はとても美しいです。",
    ),
    "/enc/cp1252.html": (
        "cp1252",
        "text/html",
        False,
        "fr",
        "Le café du coin",
        "Au café, le garçon apporte un crème brûlée et une tarte à l’oignon — très “naïf”.",
    ),
    "/enc/latin1-label.html": (
        "cp1252",
        "text/html; charset=iso-8859-1",
        False,
        "de",
        "Grüße aus München",
        "Die Straße in München ist schön; das Bier kostet 5 € – „prost“ sagen alle.",
    ),
    "/enc/utf16-bom.html": (
        "utf-16",
        "text/html",
        False,
        "es",
        "Mañana en la montaña",
        "El niño subió a la montaña por la mañana y vio un cóndor sobre el río.",
    ),
}


def encoded_page(path: str) -> Response | None:
    """The ``/enc/`` page at ``path`` as bytes in its encoding, or None."""
    found = ENCODED_PAGES.get(path)
    if found is None:
        return None
    codec, content_type, declared, lang, title, text = found
    meta = f'<meta charset="{codec}">' if declared else ""
    markup = (
        f'<!DOCTYPE html>\n<html lang="{lang}"><head>{meta}<title>{esc(title)}</title></head>\n'
        f'<body><a href="/">Home</a>\n<main>\n<h1>{esc(title)}</h1>\n<p>{esc(text)}</p>\n'
        "</main>\n</body></html>\n"
    )
    return Response(200, markup.encode(codec), content_type)


class IntlSite:
    """A front page in English linking to pages in Japanese and Hindi."""

    def __init__(self, world: World, key: str = "intl") -> None:
        self.world = world
        self.key = key

    def front(self) -> str:
        items = "".join(
            f'<li><a href="{esc(path)}" hreflang="{lang}">{esc(title)}</a></li>'
            for path, (lang, title, _) in INTL_PAGES.items()
        ) + "".join(
            f'<li><a href="{esc(path)}" hreflang="{lang}">{esc(title)}</a></li>'
            for path, (_, _, _, lang, title, _) in ENCODED_PAGES.items()
        )
        main = (
            "<h1>Pages in other languages</h1>\n"
            "<p>Short articles in Japanese and Hindi, for searching text that is not English,"
            " and a few pages in the legacy encodings older sites still serve."
            f"</p>\n<ul>{items}</ul>"
        )
        return page("Pages in other languages", main)

    def handle(self, req: Request) -> Response:
        if req.path == "/robots.txt":
            return text_response(ALLOW_ALL)
        if req.path in ("/", "/index.html"):
            return html_response(self.front())
        encoded = encoded_page(req.path)
        if encoded is not None:
            return encoded
        found = INTL_PAGES.get(req.path)
        if found is None:
            return NOT_FOUND
        lang, title, paragraphs = found
        main = f"<h1>{esc(title)}</h1>\n" + "\n".join(f"<p>{esc(p)}</p>" for p in paragraphs)
        return html_response(page(title, main, lang=lang))
