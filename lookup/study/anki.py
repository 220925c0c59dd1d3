"""The bank's concept questions and flashcards as an Anki deck (``genanki``).

One note per item: the prompt on the front, the key points and the source on the back,
tagged by system, level and kind. Note and deck ids are derived from stable names, so
exporting again updates the learner's notes in Anki instead of duplicating them.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Iterable
from pathlib import Path

import genanki

from lookup.study.bank import SYSTEMS, Item, bank

EXPORTED_KINDS = ("concept", "flashcard")


def _stable_id(name: str) -> int:
    """A positive 31-bit id from ``name`` (genanki wants fixed model and deck ids)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big") & 0x7FFFFFFF


_MODEL = genanki.Model(
    _stable_id("lookup-workbench study card v1"),
    "Lookup Workbench study card",
    fields=[{"name": "Id"}, {"name": "Prompt"}, {"name": "KeyPoints"}, {"name": "Source"}],
    templates=[
        {
            "name": "Card 1",
            "qfmt": "{{Prompt}}",
            "afmt": "{{FrontSide}}<hr id=answer>{{KeyPoints}}<p class=src>{{Source}}</p>",
        }
    ],
    css=(
        ".card{font-family:sans-serif;font-size:18px;text-align:left}"
        " .src{color:#777;font-size:13px}"
    ),
)


class _Note(genanki.Note):
    @property
    def guid(self) -> str:  # stable per item id: re-imports update the note
        return genanki.guid_for(self.fields[0])


def note_for(item: Item) -> genanki.Note:
    """The Anki note of one item."""
    points = "<ul>" + "".join(f"<li>{html.escape(k.text)}</li>" for k in item.key_points) + "</ul>"
    source = html.escape(f"Design notes, text {item.source.file}: {item.source.section}")
    tags = [
        f"system::{item.system}",
        f"level::{item.level}",
        f"kind::{item.kind}",
        f"topic::{item.topic.replace(' ', '_')}",
    ]
    return _Note(
        model=_MODEL, fields=[item.id, html.escape(item.prompt), points, source], tags=tags
    )


def export_apkg(path: str | Path, items: Iterable[Item] | None = None) -> int:
    """Write the deck to ``path``; returns the number of notes written."""
    chosen = [
        i for i in (items if items is not None else bank().values()) if i.kind in EXPORTED_KINDS
    ]
    deck = genanki.Deck(
        _stable_id("lookup-workbench study deck"), "Lookup Workbench — system design"
    )
    for item in sorted(chosen, key=lambda i: (list(SYSTEMS).index(i.system), i.id)):
        deck.add_note(note_for(item))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    genanki.Package(deck).write_to_file(str(path))
    return len(chosen)
