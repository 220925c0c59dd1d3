"""app/fonts.py puts the packaged Devanagari font where Streamlit serves it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import fonts  # app/fonts.py; dashboard_testing (loaded by conftest) puts app/ on sys.path

ROOT = Path(__file__).resolve().parents[2]


def test_the_font_is_copied_once_and_the_theme_points_at_it(tmp_path: Path) -> None:
    served = fonts.ensure_static_fonts(tmp_path / "static")
    assert served == tmp_path / "static" / fonts.DEVANAGARI_FILE
    assert served.read_bytes()[:4] == b"\x00\x01\x00\x00"  # a TrueType font
    mtime = served.stat().st_mtime_ns
    assert fonts.ensure_static_fonts(tmp_path / "static") == served
    assert served.stat().st_mtime_ns == mtime  # already there: not copied again
    assert [p.name for p in (tmp_path / "static").iterdir()] == [fonts.DEVANAGARI_FILE]

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["enableStaticServing"] is True
    (face,) = config["theme"]["fontFaces"]
    assert face["family"] == fonts.DEVANAGARI_FAMILY
    assert face["url"] == f"app/static/{fonts.DEVANAGARI_FILE}"
    assert fonts.DEVANAGARI_FAMILY in config["theme"]["font"]
