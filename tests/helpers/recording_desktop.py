"""A desktop provider written for tests, named as the fake it is: the `local` desktop unchanged, that appends one
line per desktop built (`{"pid", "argv", "task", "in"}`: `in` says which process built it: the command's own,
a spawned pool worker, a Ray worker) to the file `$CONWAY_TEST_DESKTOP_LOG`. It proves that a
command builds its task desktop at the seam's one construction point (`conway.desktops.open_desktop`): only a
provider registered there can be chosen by `tasks.desktop`.

It is also the real try of "adding a provider": this module and one registration,

    conway.desktops.PROVIDERS["recording"] = "helpers.recording_desktop"

which `registration_dir` writes as a `sitecustomize` so that every process a command starts (the pool's spawned
workers, Ray's) has it too. Nothing else in Conway changes.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from conway.desktops.base import DesktopRequest, Provider
from conway.desktops.local import LocalDesktop, _runnable

LOG = "CONWAY_TEST_DESKTOP_LOG"

SITECUSTOMIZE = """\
try:  # the registration of the test provider (tests/helpers/recording_desktop.py) in every process
    import conway.desktops
    conway.desktops.PROVIDERS["recording"] = "helpers.recording_desktop"
except ImportError:
    pass
"""


class RecordingDesktop(LocalDesktop):
    provider = "recording"

    def __enter__(self) -> "RecordingDesktop":
        with open(os.environ[LOG], "a", encoding="utf-8") as f:
            f.write(json.dumps({"pid": os.getpid(), "argv": sys.argv, "task": self.task_id,
                                "in": _process_kind()}) + "\n")
        super().__enter__()
        return self


def _process_kind() -> str:
    import multiprocessing

    ray = sys.modules.get("ray")
    try:
        if ray is not None and ray.is_initialized() and ray._private.worker.global_worker.mode == ray.WORKER_MODE:
            return "ray worker"
    except AttributeError:  # another Ray's internals: said as such
        return "ray (unknown mode)"
    return "pool worker" if multiprocessing.parent_process() is not None else "command"


def _make(settings, request: DesktopRequest) -> RecordingDesktop:
    return RecordingDesktop(settings, request)


PROVIDER = Provider("recording", _make, _runnable, "tests: the local desktop, recording each one built")


def registration_dir(folder: Path) -> Path:
    """A folder holding the `sitecustomize` that registers this provider (put it first on PYTHONPATH)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    return folder


def built(log: Path) -> list[dict]:
    """The desktops the provider built, one record each."""
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.is_file() else []
