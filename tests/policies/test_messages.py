"""Messages that point the right way (issue 10, item 9): a typo is an unknown key with the closest names,
`report` says what a JSONL file is and which command reads it, `status` shows the step being decided and
labels each coordinate pair, and a vision-check whose answers pile onto one point says "clustered"."""

from __future__ import annotations

import json

import pytest

from conway.cli.main import main


@pytest.mark.parametrize("override,expected", [
    ("policy.max_token=100", "override policy.max_token: unknown key (did you mean policy.max_tokens"),
    ("agent.max_step=3", "override agent.max_step: unknown key (did you mean agent.max_steps"),
    ("context.budget=9", "override context.budget: unknown key (did you mean context.budget_tokens"),
])
def test_a_typo_is_an_unknown_key_with_the_closest_names_not_a_secret(override, expected, capsys):
    assert main(["config", override]) == 1
    err = capsys.readouterr().err
    assert expected in err and "secret" not in err and "Traceback" not in err


def test_an_unknown_section_lists_what_is_there(capsys):
    assert main(["config", "polcy.kind=mock"]) == 1
    assert "override polcy.kind: unknown key (did you mean policy?)" in capsys.readouterr().err


def test_a_secret_named_unknown_key_is_refused_as_a_secret_with_the_hint(capsys):
    # not a typo: policy.api_key is where people try to put a key; refuse it as one and point the right way
    assert main(["config", "policy.api_key=abc"]) == 1
    err = capsys.readouterr().err
    assert "refusing secret-looking override(s): policy.api_key" in err
    assert "did you mean policy.api_key_env?" in err and "Traceback" not in err


def test_a_real_secret_is_still_refused(capsys):
    assert main(["config", "policy.endpoint=sk-abcdefghijklmnopqrstuvwxyz012345"]) == 1
    assert "secret" in capsys.readouterr().err


def test_report_names_a_trajectory_and_the_command_that_reads_it(tmp_path, capsys):
    traj = tmp_path / "traj.jsonl"
    traj.write_text(json.dumps({"format": "conway-traj/1", "session": "s", "step": 1}) + "\n"
                    + json.dumps({"format": "conway-traj/1", "session": "s", "step": 2}) + "\n")
    assert main(["report", str(traj)]) == 1
    err = capsys.readouterr().err
    assert "is a conway-traj/1 trajectory (JSON lines from `conway export`)" in err
    assert "conway replay --trajectory FILE" in err and "not UTF-8 JSON" not in err


def test_report_names_a_journal_and_a_cases_file(tmp_path, capsys):
    journal = tmp_path / "journal.jsonl"
    journal.write_text(json.dumps({"session": "s", "step": 0, "kind": "session", "ts": "x", "payload": {}}) + "\n")
    assert main(["report", str(journal)]) == 1
    assert "is a Conway journal" in capsys.readouterr().err
    cases = tmp_path / "v.cases.jsonl"
    cases.write_text(json.dumps({"index": 0, "hit": True}) + "\n")
    assert main(["report", str(cases)]) == 1
    assert "per-case file" in capsys.readouterr().err


def test_status_shows_the_step_being_decided(initialized_home):
    from conway.session.app import status_report
    from conway.store.home import resolve_home
    from conway.store.journal import Journal, make_event
    from conway.store.state import InstanceLock, StateStore

    home = resolve_home(None)
    lock = InstanceLock(home.lock)
    lock.acquire()
    try:
        StateStore(home.state, home.state_previous).save({"session": "s1", "status": "running", "step": 0,
                                                          "pid": 1})
        journal = Journal(home.journal_dir, 1 << 20, 1 << 24, "none")
        journal.append(make_event("s1", 1, "observation", {"source": "screen"}, now=1.0))
        journal.close()
        report = status_report(home)
    finally:
        lock.release()
    assert report["step"] == 1 and report["phase"] == "deciding"


def test_status_labels_model_screen_and_input_coordinates(initialized_home, capsys):
    from conway.store.home import resolve_home
    from conway.store.journal import Journal, make_event

    home = resolve_home(None)
    journal = Journal(home.journal_dir, 1 << 20, 1 << 24, "none")
    journal.append(make_event("s1", 1, "decision", {
        "actions": [{"type": "click", "x": 640.0, "y": 400.0, "button": "left"}], "raw_text": "{}",
        "sent_size": [644, 392], "captured_size": [1280, 800], "convention": "absolute"}, now=1.0))
    journal.append(make_event("s1", 1, "result", {
        "action": {"type": "click", "x": 640.0, "y": 400.0}, "ok": True, "output": "did click",
        "data": {"input": [320, 200]}}, now=2.0))
    journal.close()
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert "click at model (322, 196) → screen (640, 400)" in out
    assert "click at screen (640, 400) → input (320, 200)" in out


def test_seven_of_twelve_answers_on_one_point_is_clustered():
    from conway.evals.vision_check import miss_pattern

    centres = [(100, 80), (500, 300), (300, 120), (600, 50), (50, 350), (420, 220), (250, 250), (330, 60),
               (560, 330), (90, 200), (460, 90), (200, 370)]
    records = []
    for i, (x, y) in enumerate(centres):
        pred = [320, 200] if i < 7 else [x + 40 * (i % 3) - 40, y + 35 * (i % 2) - 20]
        records.append({"predicted": pred, "hit": False,
                        "target": {"centre": [x, y], "box": [x - 10, y - 10, x + 10, y + 10]}})
    verdict = miss_pattern(records)["verdict"]
    assert verdict.startswith("clustered: 7 of 12 answers are the same point (320, 200)")
