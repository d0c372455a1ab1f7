"""compare_audios and compare_videos on sound and video files made here (NumPy samples, OpenCV frames, ffmpeg for
MP3), scored by the real libraries as OSWorld's vlc.py scores them."""

from __future__ import annotations

import shutil
import subprocess
import wave

import numpy as np
import pytest
from helpers.extras import need_extra

from conway.tasks.metrics import METRICS

need_extra("tasks", "librosa")
need_extra("tasks", "cv2")
RATE = 22050


def _wav(path, samples, rate=RATE):
    data = (np.clip(samples, -1, 1) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(data.tobytes())
    return str(path)


def _melody(notes, seconds=0.4, rate=RATE):
    t = np.arange(int(seconds * rate)) / rate
    return np.concatenate([0.5 * np.sin(2 * np.pi * f * t) for f in notes])


def test_the_same_sound_scores_1_and_a_different_one_less(tmp_path):
    tune = _melody([262, 330, 392, 523])
    a, b = _wav(tmp_path / "a.wav", tune), _wav(tmp_path / "b.wav", tune)
    assert METRICS["compare_audios"](a, b) == pytest.approx(1.0)
    noise = _wav(tmp_path / "n.wav", np.random.default_rng(0).uniform(-0.5, 0.5, tune.size))
    other = METRICS["compare_audios"](a, noise)
    assert 0.0 < other < 0.9  # a soft score, as OSWorld's: the task files compare it to nothing, it is the score


def test_a_sound_resampled_and_cut_to_mp3_stays_close(tmp_path):
    """An agent's extracted track is an MP3 of the gold at another rate: librosa loads both at 22 050 Hz."""
    if shutil.which("ffmpeg") is None:
        pytest.fail("ffmpeg is installed by scripts/test.sh")
    tune = _melody([440, 494, 523, 587, 659], rate=44100)
    gold = _wav(tmp_path / "gold.wav", tune, rate=44100)
    mp3 = tmp_path / "got.mp3"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", gold, "-ar", "32000", str(mp3)], check=True)
    assert METRICS["compare_audios"](str(mp3), gold) > 0.9


def test_missing_empty_and_corrupt_files_score_as_osworld(tmp_path):
    good = _wav(tmp_path / "good.wav", _melody([300, 400]))
    empty = _wav(tmp_path / "empty.wav", np.zeros(0))
    junk = tmp_path / "junk.mp3"
    junk.write_bytes(b"not a sound at all")
    assert METRICS["compare_audios"](None, good) == 0.0  # a result that is not there
    assert METRICS["compare_audios"](good, empty) == 0.0  # one bad side
    assert METRICS["compare_audios"](str(junk), good) == 0.0
    assert METRICS["compare_audios"](empty, str(junk)) == 1.0  # both bad: OSWorld counts them alike


def _video(path, frames, fps=10):
    import cv2
    h, w = frames[0].shape[:2]
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, (w, h))
    for frame in frames:
        out.write(frame)
    out.release()
    return str(path)


def _frames(n, flip=False):
    frames = []
    for i in range(n):
        frame = np.zeros((96, 128, 3), np.uint8)
        frame[:40, :, :] = (40 + 5 * i, 200, 90)  # a bright top band: upside down it is at the bottom
        frame[60:, 10 + i:50 + i, :] = 255
        frames.append(frame[::-1].copy() if flip else frame)
    return frames


def test_compare_videos_same_flipped_and_shorter(tmp_path):
    a = _video(tmp_path / "a.mp4", _frames(20))
    b = _video(tmp_path / "b.mp4", _frames(20))
    assert METRICS["compare_videos"](a, b) == 1.0
    flipped = _video(tmp_path / "f.mp4", _frames(20, flip=True))
    assert METRICS["compare_videos"](flipped, a) == 0.0  # the task: turn it the right way up
    short = _video(tmp_path / "s.mp4", _frames(12))
    assert METRICS["compare_videos"](short, a) == 0.0  # one ended first: not the same length
    assert METRICS["compare_videos"](short, a, max_frames_to_check=10) == 1.0  # within the frames checked
    assert METRICS["compare_videos"](None, a) == 0.0
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"nothing")
    assert METRICS["compare_videos"](str(junk), a) == 0.0
    assert METRICS["compare_videos"](str(junk), str(junk)) == 1.0  # neither opens: both "ended", as OSWorld reads it


def test_a_sound_added_to_a_slide_is_scored_through_the_getter(tmp_path):
    """libreoffice_impress/c59742c0's evaluator, as OSWorld's task file writes it: the sound the first slide holds
    (`audio_in_slide`) against the Desktop's MP3 (`vm_file`), by compare_audios; a deck without it scores 0."""
    import zipfile
    from pathlib import Path

    import pptx
    from helpers.task_env import TestTaskEnv

    from conway.tasks.evaluate import evaluate
    from conway.tasks.task import parse_osworld
    home = tmp_path / "home"
    (home / "Desktop").mkdir(parents=True)
    mp3 = home / "Desktop" / "Baseball.mp3"
    wav = _wav(tmp_path / "b.wav", _melody([392, 440, 494]))
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", wav, str(mp3)], check=True)
    deck = home / "Desktop" / "Mady_and_Mia_Baseball.pptx"
    prs = pptx.Presentation()
    prs.slides.add_slide(prs.slide_layouts[6])
    prs.save(deck)
    task = parse_osworld({"id": "c59742c0", "instruction": "x", "evaluator": {
        "func": "compare_audios",
        "result": {"type": "audio_in_slide", "ppt_file_path": "/home/user/Desktop/Mady_and_Mia_Baseball.pptx",
                   "slide_index": 0, "dest": "Baseball.mp3"},
        "expected": {"type": "vm_file", "path": "/home/user/Desktop/Baseball.mp3", "dest": "gold.mp3"}}},
        Path("t.json"))
    env = TestTaskEnv(home=home, task_id="c59742c0", cache_dir=tmp_path / "cache")
    assert evaluate(task, env, declared_fail=False).score == 0.0  # nothing inserted yet
    with zipfile.ZipFile(deck) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    link = (b'<Relationship Id="rIdA" Target="../media/media1.mp3" '
            b'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/audio"/>')
    rels = "ppt/slides/_rels/slide1.xml.rels"
    parts[rels] = parts[rels].replace(b"</Relationships>", link + b"</Relationships>")
    parts["ppt/media/media1.mp3"] = mp3.read_bytes()
    with zipfile.ZipFile(deck, "w") as z:
        for n, data in parts.items():
            z.writestr(n, data)
    assert evaluate(task, env, declared_fail=False).score == pytest.approx(1.0)
