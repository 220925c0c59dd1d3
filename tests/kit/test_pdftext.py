"""PDF text and title (issue 28 item 14), checked against pdfminer.six as the oracle.

The documents are written byte by byte by the sandbox's :func:`pdf_document` (objects,
a content stream, a cross-reference table) — a different writer from the reader under
test — with random lines of text; pdfminer.six, an independent PDF text extractor, must
read the same words. Then the title rules and the files a crawler meets that hold no
text: damaged, cut short, encrypted, image-only.
"""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pdfminer.high_level import extract_text

from lookup.crawler.sandbox.sites.press import pdf_document
from lookup.kit.pdftext import MAX_TEXT_CHARS, PdfError, is_pdf, pdf_text

_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789éüß",
                min_size=1, max_size=10)  # fmt: skip
_line = st.lists(_word, min_size=1, max_size=8).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(_line, min_size=1, max_size=12), title=st.one_of(st.none(), _line))
def test_the_text_is_what_pdfminer_reads(lines: list[str], title: str | None) -> None:
    body = pdf_document(title, lines)
    doc = pdf_text(body)
    oracle = extract_text(io.BytesIO(body)).split()
    assert doc.text.split() == oracle == " ".join(lines).split()
    assert doc.pages == 1
    if title is not None:
        assert (doc.title, doc.title_source) == (title, "metadata")
    else:
        assert (doc.title, doc.title_source) == (lines[0], "first-line")


def test_a_title_in_any_script_and_escaped_text() -> None:
    doc = pdf_text(pdf_document("港の年次報告 — Hafen", ["(brackets) and a back\\slash", "café"]))
    assert doc.title == "港の年次報告 — Hafen"
    assert doc.text == "(brackets) and a back\\slash café"


@pytest.mark.parametrize("placeholder", ["Untitled", "Microsoft Word - draft7.docx", "scan.pdf"])
def test_a_placeholder_metadata_title_gives_way_to_the_first_line(placeholder: str) -> None:
    doc = pdf_text(pdf_document(placeholder, ["Tide tables for the estuary", "More text"]))
    assert (doc.title, doc.title_source) == ("Tide tables for the estuary", "first-line")


def test_damaged_files_say_why() -> None:
    whole = pdf_document("T", ["Some text here"])
    for body, why in [
        (whole[: len(whole) // 3], "not a readable PDF"),
        (b"%PDF-1.4\n1 0 obj<<>>endobj\n%%EOF\n", "not a readable PDF"),
        (b"<html>not a pdf</html>", "not a readable PDF"),
        (pdf_document("Only a picture", []), "no text layer"),
    ]:
        with pytest.raises(PdfError, match=why):
            pdf_text(body)


def test_an_encrypted_document_without_an_empty_password() -> None:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_document("S", ["Secret words"]))))
    writer.encrypt(user_password="opensesame", algorithm="RC4-128")
    locked = io.BytesIO()
    writer.write(locked)
    with pytest.raises(PdfError, match="encrypted"):
        pdf_text(locked.getvalue())
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_document("S", ["Open words"]))))
    writer.encrypt(user_password="", owner_password="owner", algorithm="RC4-128")
    opened = io.BytesIO()
    writer.write(opened)
    assert pdf_text(opened.getvalue()).text == "Open words"  # readable by anyone


def test_the_text_is_capped() -> None:
    lines = [f"line {i} " + "word " * 30 for i in range(900)]
    assert len(pdf_text(pdf_document(None, lines)).text) == MAX_TEXT_CHARS


def test_is_pdf_by_type_or_by_signature() -> None:
    assert is_pdf(b"", "application/pdf") and is_pdf(b"", "Application/PDF; x=y")
    assert not is_pdf(b"%PDF-1.4", "text/html")  # a declared type is believed
    assert is_pdf(b"\n%PDF-1.7\n", None) and is_pdf(b"%PDF-1.4", "")
    assert not is_pdf(b"<html>", None)
