"""`conway status` while a run goes on: what it says of the session in flight and of the ones before it."""

from __future__ import annotations

import shutil

import pytest
from helpers.loop_harness import run_script

from conway.config import load_config
from conway.loop.control import SimulatedClock
from conway.policies.mock import MockPolicy, MockScript
from conway.session.app import RunRequest, render_status, run_agent, status_report
from conway.store.home import resolve_home
from conway.tools.files import FileTools
from conway.tools.registry import Toolbox


def test_status_during_a_run_says_which_events_are_an_earlier_sessions(conway_home):
    earlier = run_script([{"action": {"type": "wait"}}], overrides=["agent.max_steps=1"]).session
    home = resolve_home(None)
    seen: list[str] = []

    class LookingFiles(FileTools):  # while the new session's first action runs: what `status` prints
        def run(self, action, screen=None):
            seen.append(render_status(status_report(home)))
            return super().run(action, screen)

    append = {"action": {"type": "append_file", "path": "a.txt", "text": "x"}}
    policy = MockPolicy(MockScript.model_validate({"steps": [append]}))
    _, session = run_agent(home, load_config(home.config, ["agent.max_steps=1"]),
                           RunRequest(single_session=False, policy=policy, clock=SimulatedClock(),
                                      toolbox=Toolbox([LookingFiles(home.scratch)])), say=lambda s: None)
    lines = seen[0].splitlines()
    events = lines[lines.index("last events:") + 1:]
    assert events[0] == f"  earlier session {earlier}:"
    mine = events.index(f"  this session {session}:")
    assert 1 < mine < len(events) - 1 and "intent" in events[-1]
    assert any("max-steps budget (1) reached" in line for line in events[1:mine])  # the earlier run's end


@pytest.mark.parametrize("entry, made", [("journal", "file"), ("state.json", "folder")])
def test_status_of_a_home_with_a_file_where_a_folder_belongs_says_so(initialized_home, capsys, entry, made):
    from conway.cli.main import main
    path = initialized_home / entry
    if path.is_dir():
        shutil.rmtree(path)
    if made == "file":
        path.write_text("not a folder\n")
    else:
        path.mkdir()
    assert main(["status"]) == 1
    out, err = capsys.readouterr()
    assert f"{path} is a {made}, but Conway keeps its {entry}" in err and "session:" not in out
