"""One process, one X server after another under the same display name (a task suite's disposable desktops):
each new GUI tool reaches its own server, never the connection pyautogui kept to the one that is gone."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers.desktop_fixtures import REPO, need

pytestmark = pytest.mark.desktop

SCRIPT = r"""
import json, sys
from conway.actions import parse_action
from conway.tools.gui import GuiTool
from conway.machine.xvfb import start_xvfb

seen = []
for size in ((640, 480), (800, 600)):
    server = start_xvfb(*size)
    tool = GuiTool(display=server.display)
    ok, how = tool.availability()
    done = tool.run(parse_action({"type": "move", "x": 20, "y": 30}))
    seen.append({"display": server.display, "ok": ok, "how": how, "moved": done.ok, "error": done.error})
    server.stop()
print(json.dumps(seen))
"""


def test_a_new_tool_reaches_the_new_server_of_a_reused_display_name() -> None:
    need("Xvfb", "xvfb")
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    first, second = json.loads(done.stdout.strip().splitlines()[-1])
    assert first["ok"] and first["moved"], first
    assert second["ok"] and second["moved"], second  # before: a broken pipe, or a hang on the dead connection
    assert "800x600" in second["how"]  # it is the second server it talks to
