"""OSWorld's `background_image_in_slide` getter: the picture a slide of a .pptx has as its background, as a file;
and its `audio_in_slide`: the sound a slide holds (or links), as a file.

The slide (`slide_index`, from 0) names its background picture by relationship id (`p:bgPr//a:blip/@r:embed`);
its relationship's target is a part of the package (extracted into a fresh folder of its own) or, for a
linked picture, a `file://` path on the task's machine (handed over where it lies). None when the slide, its
background picture or the relationship is not there, as OSWorld's getter.
"""

from __future__ import annotations

import posixpath
import tempfile
import zipfile
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from conway.tasks.env import TaskEnv

P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
RELS = "{http://schemas.openxmlformats.org/package/2006/relationships}"


def _background_id(package: zipfile.ZipFile, slide: str) -> str | None:
    root = ElementTree.fromstring(package.read(slide))
    for background in root.iter(P + "bgPr"):
        for blip in background.iter(A + "blip"):
            if R + "embed" in blip.attrib:
                return blip.attrib[R + "embed"]
    return None


def background_image_in_slide(env: TaskEnv, config: dict[str, Any]) -> str | None:
    deck = env.host_path(str(config["ppt_file_path"]))
    number = int(config["slide_index"]) + 1
    slide, rels = f"ppt/slides/slide{number}.xml", f"ppt/slides/_rels/slide{number}.xml.rels"
    with zipfile.ZipFile(deck) as package:
        names = set(package.namelist())
        image_id = _background_id(package, slide) if slide in names else None
        if image_id is None or rels not in names:
            return None
        for rel in ElementTree.fromstring(package.read(rels)).iter(RELS + "Relationship"):
            if "image" not in rel.get("Type", "") or rel.get("Id") != image_id:
                continue
            return _target_file(env, package, rel.get("Target", ""), "the background picture")
    return None


def _target_file(env: TaskEnv, package: zipfile.ZipFile, target: str, what: str) -> str | None:
    """The file a slide's relationship names: a part of the package (`../media/x.mp3`), extracted into a fresh
    folder of its own, or a `file://` path on the task's machine (None when it is not there); any other form
    raises, as OSWorld's getters do."""
    if target.startswith(".."):
        part = posixpath.normpath(posixpath.join("ppt/slides", target))
        return package.extract(part, Path(tempfile.mkdtemp(prefix="conway-slide-")))
    if not target.startswith("file://"):
        raise ValueError(f"{what}'s target {target!r} is neither a part nor a file:// path")
    host = env.host_path(target[len("file://"):])
    return str(host) if host.is_file() else None


def audio_in_slide(env: TaskEnv, config: dict[str, Any]) -> str | None:
    """The first relationship of slide `slide_index` (from 0) whose type names audio, as OSWorld's getter picks
    it: a part of the package (extracted), or a linked `file://` path on the task's machine (None when that file
    is not there). None when the slide has no relationships or none is audio; a target of another form raises,
    as OSWorld's assertion does (scored 0)."""
    deck = env.host_path(str(config["ppt_file_path"]))
    rels = f"ppt/slides/_rels/slide{int(config['slide_index']) + 1}.xml.rels"
    with zipfile.ZipFile(deck) as package:
        if rels not in package.namelist():
            return None
        for rel in ElementTree.fromstring(package.read(rels)).iter(RELS + "Relationship"):
            if "audio" in rel.attrib["Type"]:
                return _target_file(env, package, rel.attrib["Target"], "the slide's audio")
    return None


GETTERS = {"background_image_in_slide": background_image_in_slide, "audio_in_slide": audio_in_slide}
