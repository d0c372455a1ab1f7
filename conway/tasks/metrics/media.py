"""Metrics on an application's settings file (VLC's `vlcrc`, GIMP's `gimprc`/`sessionrc`), as OSWorld's vlc.py and
gimp.py read them.

The result is the path the `vlc_config` / `gimp_config_file` getter hands over. OSWorld reads these files with
plain substring tests, and so does this: a VLC key counts on any line that contains `key=`, a commented-out default
(`#qt-max-volume=125`) included, the last such line winning, else VLC's default. A file that is missing, not
UTF-8, or a value OSWorld's parsing chokes on scores 0 (OSWorld's function raises, which its runner counts as 0).
`is_vlc_playing` reads VLC's `status.xml` (the `vlc_playing_info` getter, conway/tasks/vlc_status.py).
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlparse
from xml.etree import ElementTree


def _text(path: Any) -> str | None:
    if not isinstance(path, (str, Path)):
        return None
    try:
        return Path(path).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _last_value(text: str, marker: str, default: str) -> str:
    """The text after the last `=` of the last line containing `marker`, stripped; `default` when none does."""
    value = default
    for line in text.split("\n"):
        if marker in line:
            value = line.split("=")[-1].strip()
    return value


def _as_text(expected: Any) -> Any:
    return str(expected) if isinstance(expected, int) else expected  # OSWorld turns an int rule into text only


def _vlc_setting(key: str, default: str) -> Callable[[Any, dict[str, Any]], float]:
    """A metric comparing VLC setting `key` (VLC's `default` when the file never names it) to the rule's
    `expected_<key with _ for ->`, as OSWorld's check_qt_bgcone, check_qt_max_volume ... in vlc.py."""
    rule_key = "expected_" + key.replace("-", "_")

    def metric(result: Any, rules: dict[str, Any]) -> float:
        text = _text(result)
        if text is None:
            return 0.0
        return float(_last_value(text, key + "=", default) == _as_text(rules[rule_key]))

    metric.__name__ = "check_" + key.replace("-", "_")
    return metric


def is_vlc_recordings_folder(result: Any, rules: dict[str, Any]) -> float:
    """The first uncommented line naming `input-record-path` sets `recording_file_path` (OSWorld's vlc.py)."""
    text = _text(result)
    if text is None:
        return 0.0
    for line in text.split("\n"):
        if line.startswith("#") or not line.strip():
            continue
        if "input-record-path" in line:
            return float(line.split("=")[-1].strip() == rules["recording_file_path"])
    return 0.0


def check_global_key_play_pause(result: Any, rules: dict[str, Any]) -> float:
    """`1` when the last line naming `global-key-play-pause=` gives it a key, `0` when empty or never named."""
    text = _text(result)
    if text is None:
        return 0.0
    state = "0"
    for line in text.split("\n"):
        if "global-key-play-pause=" in line:
            state = "0" if line.split("=")[-1].strip() == "" else "1"
    return float(state == _as_text(rules["expected_global_key_play_pause"]))


def _blackish(colours: str) -> bool:
    values = [int(x) for x in colours.split(";")]  # ValueError on a malformed list: OSWorld scores that 0
    return all(v < 100 for v in values[: len(values) // 3 * 3])  # every whole (r, g, b) triple under 100


def check_qt_slider_colours(result: Any, rules: dict[str, Any]) -> float:
    """VLC's slider colours (any line naming `qt-slider-colours`, the last winning) equal `expected_qt_slider_colours`
    (`type: match`) or are all dark, every channel under 100 (`type: blackish`)."""
    text = _text(result)
    if text is None:
        return 0.0
    colours = _last_value(text, "qt-slider-colours", "153;210;153;20;210;20;255;199;15;245;39;29")
    if rules["type"] == "match":
        return float(colours == rules["expected_qt_slider_colours"])
    if rules["type"] == "blackish":
        try:
            return float(_blackish(colours))
        except ValueError:
            return 0.0
    return 0.0  # OSWorld's function returns None for another type: not a pass


def _config_items(line: str) -> list[str]:
    return line.strip().lstrip("(").rstrip(")\n").split()


def check_config_status(result: Any, rules: dict[str, Any]) -> float:
    """Some line of GIMP's config (`(key ... value)`) has `key` first and `value` last; a two-item `key` list
    matches the first two words (OSWorld's check_config_status in gimp.py). No file scores 0."""
    text = _text(result)
    if text is None:
        return 0.0
    key, value = rules["key"], rules["value"]
    for line in io.StringIO(text, newline=None).readlines():  # OSWorld reads it in text mode: \r\n is \n
        if line.startswith("#") or line == "\n":
            continue
        items = _config_items(line)
        if not items:  # a blank line with spaces: OSWorld's items[0] raises, and the whole metric scores 0
            return 0.0
        if isinstance(key, str) and items[0] == key and items[-1] == value:
            return 1.0
        if isinstance(key, list) and len(key) == 2 and items[0] == key[0]:
            if len(items) < 2:  # OSWorld's items[1] raises: scored 0
                return 0.0
            if items[1] == key[1] and items[-1] == value:
                return 1.0
    return 0.0


def is_vlc_fullscreen(result: Any, expected: Any) -> float:
    """The window's size (`vm_window_size`) equals the screen's (`vm_screen_size`), as OSWorld's is_vlc_fullscreen;
    no window or no screen size scores 0."""
    if result is None or expected is None:
        return 0.0
    try:
        return float(result["width"] == expected["width"] and result["height"] == expected["height"])
    except (TypeError, KeyError):
        return 0.0


_VLC_SETTINGS = [_vlc_setting("qt-bgcone", "1"), _vlc_setting("qt-max-volume", "125"),
                 _vlc_setting("qt-minimal-view", "0"), _vlc_setting("one-instance-when-started-from-file", "1"),
                 _vlc_setting("play-and-exit", "0")]

FILE_FIELDS = ("filename", "title", "uri", "location", "name")
URL_PLACES = (*(f'information/category[@name="meta"]/info[@name="{n}"]'
                for n in ("url", "URI", "location", "title", "filename")),
              *(f'information/category[@name="Stream 0"]/info[@name="{n}"]' for n in ("Codec", "Type", "Language")))


def _first(tree: ElementTree.Element, places: Any) -> str | None:
    for place in places:
        element = tree.find(place)
        if element is not None and element.text:
            return element.text
    return None


def _file_matches(info: str, expected: str) -> bool:
    return os.path.basename(info) == expected or info.endswith(expected)


def _url_matches(info: str, expected: str) -> bool:
    if expected in info or info.endswith(expected):
        return True
    want = urlparse(expected)
    if info == os.path.basename(want.path):
        return True
    if "://" in info:
        have = urlparse(info)
        return want.netloc == have.netloc and want.path in have.path
    return False


def is_vlc_playing(actual_status_path: Any, rule: dict[str, Any]) -> float:
    """VLC's state is `playing` and its current item is the rule's `file_name` (by base name or ending) or `url`
    (contained, its file name, or the same host with the path inside), read from the places OSWorld reads, in its
    order. A missing or malformed status raises in OSWorld (scored 0); so it scores 0 here."""
    try:
        tree = ElementTree.fromstring(Path(actual_status_path).read_bytes().decode("utf-8"))
        if tree.find("state").text != "playing":  # type: ignore[union-attr]
            return 0.0
        if rule["type"] == "file_name":
            info = _first(tree, [f'information/category[@name="meta"]/info[@name="{n}"]' for n in FILE_FIELDS])
            return float(bool(info) and _file_matches(info, rule["file_name"]))  # type: ignore[arg-type]
        if rule["type"] == "url":
            info = _first(tree, URL_PLACES)
            return float(bool(info) and _url_matches(info, rule["url"]))  # type: ignore[arg-type]
        return 0.0
    except Exception:  # no file, not XML, no state: OSWorld raises, its runner counts 0
        return 0.0


METRICS = {f.__name__: f for f in (is_vlc_playing, *_VLC_SETTINGS, is_vlc_recordings_folder, check_global_key_play_pause,
                                   check_qt_slider_colours, check_config_status, is_vlc_fullscreen)}
