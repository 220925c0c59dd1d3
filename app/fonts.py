"""The web fonts the dashboard serves itself, so its text renders on any machine.

Hindi suggestions need a Devanagari face; a minimal Linux box (CI, containers) has
only DejaVu, which has none, and shows a row of missing-glyph boxes. The font comes
from the ``fontpkg-noto-sans-devanagari`` package and is copied into ``app/static/``,
which Streamlit serves at ``/app/static/`` (``server.enableStaticServing``); the theme
in ``.streamlit/config.toml`` names it after Streamlit's own face, for Devanagari only.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

#: The CSS family name the theme and the search box ask for.
DEVANAGARI_FAMILY = "Noto Sans Devanagari"
#: The file the theme's ``[[theme.fontFaces]]`` points at (``app/static/<this>``).
DEVANAGARI_FILE = "NotoSansDevanagari.ttf"
STATIC_DIR = Path(__file__).resolve().parent / "static"


def _packaged_font() -> Path | None:
    """The variable-weight TTF inside the installed package, or None if not installed."""
    try:
        import fontpkg_noto_sans_devanagari as pkg
    except ImportError:
        return None
    files = sorted((pkg.ROOT / "files").glob("NotoSansDevanagari*.ttf"))
    return files[0] if files else None


def ensure_static_fonts(static_dir: Path = STATIC_DIR) -> Path | None:
    """Copy the Devanagari font into ``static_dir`` unless an identical copy is there.

    Returns the served file, or None when the package is missing or the folder is not
    writable (the page still works; Hindi then needs a system font).
    """
    source = _packaged_font()
    if source is None:
        return None
    target = static_dir / DEVANAGARI_FILE
    try:
        if target.is_file() and target.stat().st_size == source.stat().st_size:
            return target
        static_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=static_dir, suffix=".part", delete=False) as out:
            partial = Path(out.name)
        shutil.copyfile(source, partial)
        partial.replace(target)  # atomic: neither a request nor a second session sees half a font
    except OSError:
        return None
    return target
