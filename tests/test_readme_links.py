"""The README's relative links lead somewhere in a fresh clone (issue 24, item 14: it
linked ``../shared/DESIGN.md``, a file outside the repository)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_relative_link_of_the_readme_is_a_file_of_the_repository() -> None:
    text = (ROOT / "README.md").read_text("utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    relative = [t.split("#", 1)[0] for t in targets if not re.match(r"[a-z]+:|#", t)]
    assert relative, "the README links nothing?"
    missing = [t for t in relative if not (ROOT / t).resolve().is_relative_to(ROOT)
               or not (ROOT / t).exists()]  # fmt: skip
    assert missing == []
