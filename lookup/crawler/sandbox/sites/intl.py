"""The international host: a few pages in Japanese and in Hindi.

A search engine that only knows English finds none of them: Japanese is written
without spaces between words (the index cuts it into character bigrams) and Hindi in
Devanagari, with its own stop words and stems. Each page declares its language in
``<html lang>``; the text is short original prose, the same every time.
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

__all__ = ["INTL_PAGES", "IntlSite"]

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


class IntlSite:
    """A front page in English linking to pages in Japanese and Hindi."""

    def __init__(self, world: World, key: str = "intl") -> None:
        self.world = world
        self.key = key

    def front(self) -> str:
        items = "".join(
            f'<li><a href="{esc(path)}" hreflang="{lang}">{esc(title)}</a></li>'
            for path, (lang, title, _) in INTL_PAGES.items()
        )
        main = (
            "<h1>Pages in other languages</h1>\n"
            "<p>Short articles in Japanese and Hindi, for searching text that is not English."
            f"</p>\n<ul>{items}</ul>"
        )
        return page("Pages in other languages", main)

    def handle(self, req: Request) -> Response:
        if req.path == "/robots.txt":
            return text_response(ALLOW_ALL)
        if req.path in ("/", "/index.html"):
            return html_response(self.front())
        found = INTL_PAGES.get(req.path)
        if found is None:
            return NOT_FOUND
        lang, title, paragraphs = found
        main = f"<h1>{esc(title)}</h1>\n" + "\n".join(f"<p>{esc(p)}</p>" for p in paragraphs)
        return html_response(page(title, main, lang=lang))
