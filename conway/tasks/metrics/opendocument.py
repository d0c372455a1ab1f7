"""The paragraph texts of an OpenDocument text file (`.odt`), as OSWorld's `compare_docx_files` (docs.py) reads them.

OSWorld loads the file with odfpy and takes every `text:p` element it loaded, in
the order loaded: `content.xml` (the body: tables, frames, notes included), then
`styles.xml` (headers and footers), each only when the manifest lists it.
Headings (`text:h`) are not paragraphs there. `has_yellow_highlight` reads the same parts' automatic styles
for OSWorld's `check_highlighted_words`. A paragraph's text is its own text
and that of its direct `text:span` children, nothing deeper: a space written as
`text:s`, a tab, a line break, a link's text and a span inside a span are left
out. Read here with the standard library (odfpy is not a dependency), to the
same result.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from xml.etree import ElementTree

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_MANIFEST = "{urn:oasis:names:tc:opendocument:xmlns:manifest:1.0}"
_PARTS = ("content.xml", "styles.xml")  # the order odfpy loads them in (settings and meta hold no paragraphs)


def _paragraph_text(paragraph: ElementTree.Element) -> str:
    parts = [paragraph.text or ""]
    for child in paragraph:
        if child.tag == f"{_TEXT}span":
            parts.append(child.text or "")
            parts.extend(grandchild.tail or "" for grandchild in child)
        parts.append(child.tail or "")
    return "".join(parts)


def odt_paragraphs(path: Path) -> list[str]:
    """Every paragraph's text; raises (BadZipFile, KeyError, ParseError) for a file that is not an OpenDocument
    package, as odfpy's loader does."""
    return [_paragraph_text(p) for root in _roots(path) for p in root.iter(f"{_TEXT}p")]


def _roots(path: Path) -> list[ElementTree.Element]:
    """The parts odfpy loads, parsed, in its order."""
    with zipfile.ZipFile(path) as package:
        manifest = ElementTree.fromstring(package.read("META-INF/manifest.xml"))
        listed = {entry.get(f"{_MANIFEST}full-path") for entry in manifest.iter(f"{_MANIFEST}file-entry")}
        present = set(package.namelist())  # a part the manifest lists but the package lacks is skipped, as odfpy
        return [ElementTree.fromstring(package.read(part)) for part in _PARTS if part in listed and part in present]


_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_STYLE = "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}"
_FO = "{urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0}"


def has_yellow_highlight(path: Path) -> bool:
    """Whether a `text:span` uses an automatic style one of whose properties has the background colour `#ffff00`
    (OSWorld's `check_highlighted_words` reading with odfpy: the automatic styles of the parts it loads)."""
    roots = _roots(path)
    yellow = {style.get(f"{_STYLE}name") for root in roots for styles in root.iter(f"{_OFFICE}automatic-styles")
              for style in styles if any(p.get(f"{_FO}background-color") == "#ffff00" for p in style)}
    return any(span.get(f"{_TEXT}style-name") in yellow for root in roots for span in root.iter(f"{_TEXT}span")
               if span.get(f"{_TEXT}style-name"))
