"""The dashboard draws no emoji (issue 24, item 18): on a machine without an emoji font —
a minimal Linux box, a container — ✅ and ❌ came out as empty boxes. Status marks are
words, badges or Streamlit's own Material icons (a font the dashboard serves itself).

A check of the dashboard's source: every string a page could draw, read from the syntax
tree (comments are not drawn), holds no character that is shown as an emoji by default.
The browser tab's icon (``page_icon``) is the one exception: the browser draws it, not the
page, and a Material icon there would be fetched from the internet.
"""

from __future__ import annotations

import ast
from pathlib import Path

from dashboard_testing import APP_DIR

from tests.sourcetree import parse_file

#: Characters below U+1F000 that are drawn as emoji by default (Unicode's
#: Emoji_Presentation), plus the variation selector that turns text into emoji.
BMP_EMOJI = set(
    "⌚⌛⏩⏪⏫⏬⏰⏳◽◾☔☕♈♉♊♋♌♍♎♏♐♑♒♓♿⚓⚡⚪⚫⚽⚾⛄⛅⛎⛔⛪⛲⛳⛵⛺⛽✅✊✋✨❌❎❓❔❕❗➕➖➗➰➿⬛⬜⭐⭕\ufe0f"
)


def _emoji(text: str) -> list[str]:
    return [ch for ch in text if ord(ch) >= 0x1F000 or ch in BMP_EMOJI]


def _drawn_strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string constant, except the browser tab's icon."""
    tree = parse_file(path)
    icons = {
        id(kw.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for kw in node.keywords
        if kw.arg == "page_icon"
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in icons
    ]


def test_no_page_draws_an_emoji() -> None:
    found = [
        f"{path.relative_to(APP_DIR)}:{line}: {''.join(_emoji(text))}"
        for path in sorted(APP_DIR.rglob("*.py"))
        for line, text in _drawn_strings(path)
        if _emoji(text)
    ]
    assert not found, found


def test_the_check_sees_an_emoji() -> None:
    assert _emoji("Snowflake ✅, UUIDv4 ❌ 🔎") == ["✅", "❌", "🔎"]
    assert not _emoji("★ 4.5 · ▲ up, ▼ down · :green-badge[in order] · :material/check:")
