"""OSWorld's `check_mp3_meta` (others.py), written afresh: an MP3's ID3v2 text tags under mutagen's EasyID3 names
(`title`, `artist`, …; several values joined with ","), each matched against its `{method, ref}` rule
(`value_rules.rule_matches`); a tag that is not there is "".

The tags are read here by a small ID3v2.2/2.3/2.4 reader (text frames only, the standard's four encodings),
with no extra library. Where OSWorld's function raises, its runner counts 0, and so does this: no file, a
file without an ID3v2 tag (EasyID3 refuses it), a malformed tag, a rule OSWorld cannot apply.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from conway.tasks.metrics.value_rules import rule_matches

EASY = {"title": "TIT2", "artist": "TPE1", "album": "TALB", "albumartist": "TPE2", "composer": "TCOM",
        "genre": "TCON", "date": "TDRC", "tracknumber": "TRCK", "discnumber": "TPOS", "lyricist": "TEXT",
        "conductor": "TPE3", "arranger": "TPE4", "copyright": "TCOP", "organization": "TPUB", "bpm": "TBPM",
        "language": "TLAN", "length": "TLEN", "version": "TIT3", "encodedby": "TENC", "mood": "TMOO"}
"""EasyID3's names for the text frames (ID3v2.4 ids; a v2.3 `TYER` reads as `TDRC`, as mutagen upgrades it)."""
V22 = {"TT2": "TIT2", "TP1": "TPE1", "TAL": "TALB", "TP2": "TPE2", "TCM": "TCOM", "TCO": "TCON", "TYE": "TDRC",
       "TRK": "TRCK", "TPA": "TPOS", "TXT": "TEXT", "TP3": "TPE3", "TCR": "TCOP", "TPB": "TPUB", "TBP": "TBPM",
       "TLA": "TLAN", "TLE": "TLEN", "TT3": "TIT3", "TEN": "TENC"}
ENCODINGS = {0: ("latin-1", b"\x00"), 1: ("utf-16", b"\x00\x00"), 2: ("utf-16-be", b"\x00\x00"),
             3: ("utf-8", b"\x00")}


def _syncsafe(data: bytes) -> int:
    return (data[0] << 21) | (data[1] << 14) | (data[2] << 7) | data[3]


def _text(body: bytes) -> list[str]:
    codec, null = ENCODINGS[body[0]]
    raw, values, i = body[1:], [], 0
    step = len(null)
    parts: list[bytes] = []
    while i <= len(raw):  # split on the terminator at the encoding's width
        j = raw.find(null, i)
        while j != -1 and (j - i) % step:
            j = raw.find(null, j + 1)
        parts.append(raw[i:] if j == -1 else raw[i:j])
        if j == -1:
            break
        i = j + step
    values = [p.decode(codec) for p in parts]
    return [v for v in values if v] or [""]


def read_tags(path: str | Path) -> dict[str, list[str]]:
    """The ID3v2 text frames (by v2.4 id) of the file; ValueError when it has no ID3v2 tag."""
    data = Path(path).read_bytes()
    if len(data) < 10 or data[:3] != b"ID3":
        raise ValueError("no ID3v2 tag")
    major, flags, size = data[3], data[5], _syncsafe(data[6:10])
    tag, pos = data[10:10 + size], 0
    if flags & 0x40 and major >= 3:  # an extended header
        pos = _syncsafe(tag[:4]) if major == 4 else int.from_bytes(tag[:4], "big") + 4
    frames: dict[str, list[str]] = {}
    width = 3 if major == 2 else 4
    while pos + 2 * width + (0 if major == 2 else 2) <= len(tag) and tag[pos] != 0:
        frame = tag[pos:pos + width].decode("latin-1")
        raw_size = tag[pos + width:pos + 2 * width]
        length = int.from_bytes(raw_size, "big") if major < 4 else _syncsafe(raw_size)
        start = pos + 2 * width + (0 if major == 2 else 2)
        body = tag[start:start + length]
        frame = V22.get(frame, frame) if major == 2 else ("TDRC" if frame == "TYER" else frame)
        if frame.startswith("T") and body:
            frames.setdefault(frame, []).extend(_text(body))
        pos = start + length
    return frames


def check_mp3_meta(result: Any, meta: dict[str, dict[str, Any]]) -> float:
    """Every EasyID3 name of the rules holds a value (its values joined with ",") its rule matches."""
    if result is None:
        return 0.0
    try:
        frames = read_tags(result)
        for key, rule in meta.items():  # a name EasyID3 does not know, or a tag not there: "" (its `get`)
            if not rule_matches(",".join(frames.get(EASY.get(key, ""), [])), rule):
                return 0.0
        return 1.0
    except Exception:  # no file, no ID3v2 tag, a malformed frame, a rule OSWorld cannot apply: scored 0
        return 0.0


METRICS: dict[str, Callable[..., float]] = {"check_mp3_meta": check_mp3_meta}
