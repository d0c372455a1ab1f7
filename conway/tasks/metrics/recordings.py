"""OSWorld's sound and video comparisons (`compare_audios`, `compare_videos` in its vlc.py), written afresh on the
libraries OSWorld computes them with, so a score here is the number OSWorld's runner gets for the same files.

`compare_audios(a, b)`: each file decoded by librosa as OSWorld loads it (mono, resampled to 22 050 Hz), 20
MFCCs per frame (librosa's defaults), each coefficient's row scaled to a peak of 1 over time, the two sequences
aligned by FastDTW with the cosine distance between frames; the score is exp(-distance / path length). A file
librosa cannot decode, or one with no samples, is "bad": two bad files score 1 (OSWorld counts them alike), one
bad file 0. No path on either side scores 0.

`compare_videos(a, b, max_frames_to_check=100, threshold=5)`: the first frames of both, read in step by OpenCV;
a frame pair mismatches when their perceptual hashes (imagehash's 64-bit pHash of the RGB frame) differ in more
than `threshold` bits, and more than `threshold` mismatches score 0. When either video runs out of frames the
score is 1 only if both did at once (same length); checking `max_frames_to_check` pairs without failing scores 1.
A video OpenCV cannot open reads as one with no frames, as in OSWorld.

The libraries (librosa, fastdtw, SciPy, OpenCV, ImageHash) come with the `tasks` extra and are imported on first
use (`inputs.library`).
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any

from PIL import Image

from conway.tasks.metrics.inputs import library

SAMPLE_RATE = 22050
"""librosa.load's default rate, at which OSWorld loads both files (it passes no `sr`)."""


def _samples(path: Any) -> Any:
    """The file's mono samples at 22 050 Hz, or None where librosa cannot read it (OSWorld logs and goes on)."""
    librosa = library("librosa")
    try:
        with warnings.catch_warnings():  # librosa warns as it falls back from soundfile to audioread (an MP3)
            warnings.simplefilter("ignore")
            samples, _ = librosa.load(os.fspath(path), sr=SAMPLE_RATE)
    except Exception:  # librosa and its decoders (soundfile, audioread) raise many kinds for one cause
        return None
    return samples


def _mfcc(samples: Any) -> Any:
    librosa = library("librosa")
    return librosa.util.normalize(librosa.feature.mfcc(y=samples, sr=SAMPLE_RATE), axis=1)


def compare_audios(result: Any, expected: Any) -> float:
    if not result or not expected:
        return 0.0
    first, second = _samples(result), _samples(expected)
    first_bad, second_bad = first is None or first.shape[0] == 0, second is None or second.shape[0] == 0
    if first_bad or second_bad:
        return 1.0 if first_bad and second_bad else 0.0
    try:
        a, b = _mfcc(first), _mfcc(second)
    except Exception:  # OSWorld catches a failed feature extraction and scores 0
        return 0.0
    cosine = library("scipy.spatial.distance").cosine
    distance, path = library("fastdtw").fastdtw(a.T, b.T, dist=cosine)
    return math.exp(-distance / len(path)) if path else 0.0


def _phash(frame: Any) -> Any:
    cv2 = library("cv2")
    return library("imagehash").phash(Image.fromarray(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)))


def compare_videos(result: Any, expected: Any, max_frames_to_check: int = 100, threshold: int = 5) -> float:
    if not result or not expected:
        return 0.0
    cv2 = library("cv2")
    first, second = cv2.VideoCapture(os.fspath(result)), cv2.VideoCapture(os.fspath(expected))
    try:
        mismatches = 0
        for _ in range(int(max_frames_to_check)):
            read_first, frame_first = first.read()
            read_second, frame_second = second.read()
            if not read_first or not read_second:
                return 1.0 if read_first == read_second else 0.0
            if _phash(frame_first) - _phash(frame_second) > threshold:
                mismatches += 1
                if mismatches > threshold:
                    return 0.0
        return 1.0
    finally:
        first.release()
        second.release()


METRICS = {"compare_audios": compare_audios, "compare_videos": compare_videos}
