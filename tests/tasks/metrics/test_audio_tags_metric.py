"""`check_mp3_meta` on generated MP3 tags (ID3v2.3 and v2.4 frames written by the standard's layout), each scored
as OSWorld's function (EasyID3, `_match_value_to_rule`) scores it, a raise counted 0."""

from __future__ import annotations

from conway.tasks.metrics import METRICS

AUDIO = b"\xff\xfb\x90\x64" + b"\x00" * 64  # an MPEG frame header and silence


def syncsafe(n: int) -> bytes:
    return bytes([(n >> 21) & 0x7F, (n >> 14) & 0x7F, (n >> 7) & 0x7F, n & 0x7F])


def tagged(path, frames: dict[str, str], major: int = 4, encoding: int = 3) -> str:
    codec = {0: "latin-1", 1: "utf-16", 3: "utf-8"}[encoding]
    body = b""
    for fid, text in frames.items():
        data = bytes([encoding]) + text.encode(codec)
        size = syncsafe(len(data)) if major == 4 else len(data).to_bytes(4, "big")
        body += fid.encode() + size + b"\x00\x00" + data
    path.write_bytes(b"ID3" + bytes([major, 0, 0]) + syncsafe(len(body)) + body + AUDIO)
    return str(path)


RULES = {"title": {"method": "eq", "ref": "Missing You"}, "artist": {"method": "eq", "ref": "Cheng Xiang"}}


def test_equal_changed_and_encodings(tmp_path):
    meta = METRICS["check_mp3_meta"]
    assert meta(tagged(tmp_path / "a.mp3", {"TIT2": "Missing You", "TPE1": "Cheng Xiang"}), RULES) == 1.0
    assert meta(tagged(tmp_path / "b.mp3", {"TIT2": "Missing You", "TPE1": "Cheng Xiang"}, major=3, encoding=1),
                RULES) == 1.0
    assert meta(tagged(tmp_path / "c.mp3", {"TIT2": "Missing You", "TPE1": "Chen Xiang"}), RULES) == 0.0
    assert meta(tagged(tmp_path / "d.mp3", {"TIT2": "Missing You"}), RULES) == 0.0  # no artist: ""
    # several values (v2.4 separates them with a null) are joined with ","
    two = tagged(tmp_path / "e.mp3", {"TPE1": "A\x00B"})
    assert meta(two, {"artist": {"method": "eq", "ref": "A,B"}}) == 1.0
    assert meta(two, {"artist": {"method": "re", "ref": "^A"}, "nonsense": {"method": "eq", "ref": ""}}) == 1.0


def test_missing_untagged_and_malformed(tmp_path):
    meta = METRICS["check_mp3_meta"]
    assert meta(None, RULES) == 0.0
    assert meta(str(tmp_path / "none.mp3"), RULES) == 0.0
    (tmp_path / "plain.mp3").write_bytes(AUDIO)  # no ID3v2 tag: EasyID3 raises
    assert meta(str(tmp_path / "plain.mp3"), RULES) == 0.0
    (tmp_path / "empty.mp3").write_bytes(b"")
    assert meta(str(tmp_path / "empty.mp3"), RULES) == 0.0
    bad = tagged(tmp_path / "bad.mp3", {"TIT2": "x"})
    data = bytearray(open(bad, "rb").read())
    data[20] = 9  # an encoding byte the standard does not have
    open(bad, "wb").write(bytes(data))
    assert meta(bad, {"title": {"method": "eq", "ref": "x"}}) == 0.0
    ok = tagged(tmp_path / "ok.mp3", {"TIT2": "x"})
    assert meta(ok, {"title": {"method": "unknown", "ref": "x"}}) == 0.0  # OSWorld has no answer: raises
