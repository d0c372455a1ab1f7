"""VLC's and GIMP's settings-file metrics on generated files, each with OSWorld's score (its vlc.py, gimp.py)."""

from __future__ import annotations

import pytest

from conway.tasks.metrics import METRICS
from conway.tasks.metrics.media import check_config_status, check_global_key_play_pause, check_qt_slider_colours

VLCRC = "[qt] # Qt interface\n\n# Maximum volume (integer)\n#qt-max-volume=125\n\n# Show background cone\n#qt-bgcone=1\n"


def _file(tmp_path, text: str | bytes, name: str = "vlcrc"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


@pytest.mark.parametrize(("func", "key", "default", "changed"), [
    ("check_qt_bgcone", "qt-bgcone", 1, 0), ("check_qt_max_volume", "qt-max-volume", 125, 200),
    ("check_qt_minimal_view", "qt-minimal-view", 0, 1), ("check_play_and_exit", "play-and-exit", 0, 1),
    ("check_one_instance_when_started_from_file", "one-instance-when-started-from-file", 1, 0)])
def test_a_vlc_setting_equal_changed_default_missing(tmp_path, func, key, default, changed):
    metric, rule = METRICS[func], "expected_" + key.replace("-", "_")
    set_file = _file(tmp_path, f"#{key}={default}\n{key}={changed}\n")
    assert metric(set_file, {rule: changed}) == 1.0
    assert metric(set_file, {rule: str(changed)}) == 1.0  # an int rule is compared as text
    assert metric(set_file, {rule: default}) == 0.0
    assert metric(_file(tmp_path, "[qt]\n", "empty"), {rule: default}) == 1.0  # never named: VLC's default
    assert metric(str(tmp_path / "none"), {rule: default}) == 0.0  # OSWorld's open raises: 0
    assert metric(None, {rule: default}) == 0.0
    assert metric(_file(tmp_path, b"\xff\xfe" + f"{key}={changed}".encode(), "bad"), {rule: changed}) == 0.0


def test_a_commented_default_counts_as_osworld_reads_it(tmp_path):
    assert METRICS["check_qt_max_volume"](_file(tmp_path, VLCRC), {"expected_qt_max_volume": 125}) == 1.0
    assert METRICS["check_qt_bgcone"](_file(tmp_path, VLCRC + "qt-bgcone=0\n"), {"expected_qt_bgcone": 0}) == 1.0


def test_is_vlc_recordings_folder(tmp_path):
    rules = {"recording_file_path": "/home/user/Desktop"}
    metric = METRICS["is_vlc_recordings_folder"]
    assert metric(_file(tmp_path, "#input-record-path=\ninput-record-path=/home/user/Desktop\n"), rules) == 1.0
    assert metric(_file(tmp_path, "input-record-path=/home/user/Videos\n"), rules) == 0.0
    assert metric(_file(tmp_path, "#input-record-path=/home/user/Desktop\n"), rules) == 0.0  # commented: not set
    assert metric(_file(tmp_path, ""), rules) == 0.0
    assert metric(str(tmp_path / "none"), rules) == 0.0


def test_check_global_key_play_pause(tmp_path):
    assert check_global_key_play_pause(_file(tmp_path, "global-key-play-pause=Ctrl+p\n"),
                                       {"expected_global_key_play_pause": 1}) == 1.0
    assert check_global_key_play_pause(_file(tmp_path, "#global-key-play-pause=\n"),
                                       {"expected_global_key_play_pause": 1}) == 0.0
    assert check_global_key_play_pause(_file(tmp_path, "[core]\n"), {"expected_global_key_play_pause": 0}) == 1.0


def test_check_qt_slider_colours(tmp_path):
    dark = _file(tmp_path, "qt-slider-colours=0;0;0;20;20;20;99;99;99;1;2;3\n", "dark")
    assert check_qt_slider_colours(dark, {"type": "blackish"}) == 1.0
    assert check_qt_slider_colours(_file(tmp_path, "[qt]\n"), {"type": "blackish"}) == 0.0  # VLC's default colours
    assert check_qt_slider_colours(_file(tmp_path, "qt-slider-colours=0;x;0\n", "bad"), {"type": "blackish"}) == 0.0
    assert check_qt_slider_colours(dark, {"type": "match",
                                          "expected_qt_slider_colours": "0;0;0;20;20;20;99;99;99;1;2;3"}) == 1.0
    assert check_qt_slider_colours(dark, {"type": "other"}) == 0.0


def test_check_config_status(tmp_path):
    gimprc = _file(tmp_path, '# GIMP gimprc\n\n(theme "Light")\n(undo-levels 100)\n(default-grid\n    (xspacing 10))\n',
                   "gimprc")
    assert check_config_status(gimprc, {"key": "theme", "value": '"Light"'}) == 1.0
    assert check_config_status(gimprc, {"key": "undo-levels", "value": "100"}) == 1.0
    assert check_config_status(gimprc, {"key": "undo-levels", "value": "5"}) == 0.0
    assert check_config_status(gimprc, {"key": ["default-grid", "xspacing"], "value": "10"}) == 0.0
    assert check_config_status(_file(tmp_path, "(size 10 20)\n", "s"), {"key": ["size", "10"], "value": "20"}) == 1.0
    assert check_config_status(_file(tmp_path, "", "e"), {"key": "theme", "value": '"Light"'}) == 0.0
    assert check_config_status(None, {"key": "theme", "value": '"Light"'}) == 0.0
    # a line of spaces makes OSWorld's items[0] raise before a later match: the metric scores 0
    assert check_config_status(_file(tmp_path, '  \n(theme "Light")\n', "sp"), {"key": "theme", "value": '"Light"'}) == 0.0
