"""`--video`: the session's screen recorded to a compressed video by ffmpeg's x11grab, beside the journal.

Fragmented MP4 (H.264, a few frames a second), so the file plays even when the recording was cut off (the run was
killed, the disk filled); bounded by ffmpeg's own size limit (`-fs`). Whatever goes wrong with the video (no
ffmpeg, no screen, a full disk) is said in one line and the run goes on without it.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable

VIDEO_FPS = 5
VIDEO_MAX_BYTES = 200 * 1024 * 1024
"""The largest video one session leaves (ffmpeg stops writing there; the run goes on)."""
FIRST_FRAME_WAIT_S = 5.0
"""How long the end of a session waits for ffmpeg's first frame (its start is slow on a loaded machine)."""


class ScreenVideo:
    def __init__(self, proc: subprocess.Popen[bytes], path: Path, say: Callable[[str], None]):
        self.proc = proc
        self.path = path
        self.say = say
        self.stopping = False
        self.tail: list[str] = []
        self.frames = 0
        """Frames ffmpeg has encoded so far (its progress report)."""
        self._watch = threading.Thread(target=self._watch_errors, name="conway-video", daemon=True)
        self._watch.start()
        self._progress = threading.Thread(target=self._watch_progress, name="conway-video-progress", daemon=True)
        self._progress.start()

    @classmethod
    def start(cls, display: str | None, path: Path, *, say: Callable[[str], None], fps: int = VIDEO_FPS,
              max_bytes: int = VIDEO_MAX_BYTES) -> "ScreenVideo | None":
        """ffmpeg recording `display` into `path`; None (said in one line) when it cannot start."""
        if not display:
            say("--video: no screen to record (the session has no display); the run goes on without a video")
            return None
        ffmpeg = shutil.which("ffmpeg")
        if ffmpeg is None:
            say("--video: ffmpeg is not installed (apt-get install ffmpeg); the run goes on without a video")
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            proc = subprocess.Popen(
                [ffmpeg, "-hide_banner", "-loglevel", "error", "-y", "-f", "x11grab", "-draw_mouse", "1",
                 "-framerate", str(fps), "-i", display, "-c:v", "libx264", "-preset", "ultrafast", "-crf", "30",
                 "-pix_fmt", "yuv420p", "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", "-g", str(2 * fps),
                 "-progress", "pipe:1", "-stats_period", "0.5",
                 "-movflags", "+frag_keyframe+empty_moov+default_base_moof", "-fs", str(max_bytes), "-f", "mp4",
                 str(path)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            say(f"--video: cannot start ffmpeg: {exc.strerror or exc}; the run goes on without a video")
            return None
        video = cls(proc, path, say)
        video.wait_first_frame()  # the video covers the session from its start, also where ffmpeg starts slowly
        return video

    def wait_first_frame(self) -> None:
        deadline = time.monotonic() + FIRST_FRAME_WAIT_S
        while self.frames == 0 and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)

    def _watch_errors(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").strip()
            if line:
                self.tail = (self.tail + [line])[-5:]
        code = self.proc.wait()
        if not self.stopping and code != 0:
            why = self.tail[-1] if self.tail else f"ffmpeg exited with code {code}"
            self.say(f"--video: the video stopped ({why}); the run goes on, {self.path} keeps what was recorded")

    def _watch_progress(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            if raw.startswith(b"frame="):
                try:
                    self.frames = int(raw[6:].strip() or 0)
                except ValueError:
                    pass

    def stop(self) -> None:
        """Ask ffmpeg to finish (q on its input) once it has a first frame (a short session on a loaded machine
        still leaves a playable video), then make sure it has finished."""
        self.stopping = True
        self.wait_first_frame()
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(b"q")
                self.proc.stdin.close()
            except (OSError, ValueError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._watch.join(2.0)
        self._progress.join(2.0)
