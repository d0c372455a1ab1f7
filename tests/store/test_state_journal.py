"""File state: atomic JSON, state fallback, control scoping, journal rotation and torn tails."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.loop_harness import run_script

from conway.prompt.memory import TRUNCATION_MARK
from conway.store.journal import Journal, journal_files, make_event, read_journal
from conway.store.state import StateStore, atomic_write_json, read_control, read_json, write_control


def test_atomic_write_leaves_no_temp_files(tmp_path):
    target = tmp_path / "x.json"
    for i in range(5):
        atomic_write_json(target, {"i": i})
    assert read_json(target) == {"i": 4}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_atomic_write_replaces_the_file_instead_of_rewriting_it(tmp_path):
    target = tmp_path / "x.json"
    atomic_write_json(target, {"i": 1})
    before = target.stat().st_ino
    with open(target, "rb") as reader:  # a reader that opened the old file keeps a whole old file
        atomic_write_json(target, {"i": 2})
        assert json.loads(reader.read()) == {"i": 1}
    assert target.stat().st_ino != before
    assert read_json(target) == {"i": 2}


def test_a_failing_fsync_leaves_the_old_file_intact(tmp_path, monkeypatch):
    import errno
    import os

    import pytest
    target = tmp_path / "x.json"
    atomic_write_json(target, {"i": 1})

    def broken_fsync(fd):  # the disk refuses at the OS boundary
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError):
        atomic_write_json(target, {"i": 2})
    monkeypatch.undo()
    assert read_json(target) == {"i": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_state_keeps_the_previous_copy_and_falls_back_when_corrupt(tmp_path):
    store = StateStore(tmp_path / "state.json", tmp_path / "state.previous.json")
    store.save({"step": 1})
    store.save({"step": 2})
    assert read_json(tmp_path / "state.previous.json") == {"step": 1}
    (tmp_path / "state.json").write_text('{"step": 3, "trunc')
    state, note = store.load()
    assert state == {"step": 1} and "corrupt" in note and "state.previous.json" in note


def test_a_corrupt_state_never_becomes_the_previous_copy(tmp_path):
    store = StateStore(tmp_path / "state.json", tmp_path / "state.previous.json")
    store.save({"step": 1})
    store.save({"step": 2})
    (tmp_path / "state.json").write_text('{"step": 3, "trunc')
    store.save({"step": 4})
    assert read_json(tmp_path / "state.previous.json") == {"step": 1}  # the good one, not the torn one
    assert read_json(tmp_path / "state.json") == {"step": 4}


def test_state_json_exists_at_every_instant_of_a_save(tmp_path):
    """A reader polling state.json during saves (what `conway pause` does) always finds it."""
    import threading
    store = StateStore(tmp_path / "state.json", tmp_path / "state.previous.json")
    store.save({"session": "s", "step": 0})
    stop = threading.Event()
    misses, reads = [], [0]

    def poll():
        while not stop.is_set():
            try:
                assert read_json(tmp_path / "state.json")["session"] == "s"
                reads[0] += 1
            except FileNotFoundError:
                misses.append(1)

    reader = threading.Thread(target=poll)
    reader.start()
    try:
        for i in range(1, 1500):
            store.save({"session": "s", "step": i}, durable=False)
    finally:
        stop.set()
        reader.join()
    assert reads[0] > 50 and misses == []
    assert read_json(tmp_path / "state.previous.json") == {"session": "s", "step": 1498}


def test_state_json_never_moves_away_during_a_save(tmp_path, monkeypatch):
    """Deterministic form of the above: at the moment the new copy lands, the old one is still in place."""
    import os
    store = StateStore(tmp_path / "state.json", tmp_path / "state.previous.json")
    store.save({"step": 1})
    seen = []
    real_replace = os.replace

    def watching_replace(src, dst):  # every rename the save does, and whether state.json was there
        seen.append((os.path.basename(dst), (tmp_path / "state.json").exists()))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", watching_replace)
    store.save({"step": 2})
    assert seen and all(present for _, present in seen), seen
    assert read_json(tmp_path / "state.previous.json") == {"step": 1}


def test_leftover_temp_files_of_a_killed_run_are_removed_at_the_next_start(conway_home):
    from conway.store.home import init_home, resolve_home
    init_home(resolve_home(None))
    leftovers = [".state.json.abc123.tmp", ".state.previous.json.99-ff.tmp", ".memory.md.x1.tmp",
                 ".memory.previous.md.y2.tmp"]
    for name in leftovers:
        (conway_home / name).write_text("half a write")
    (conway_home / ".control.json.z.tmp").write_text("another process's write")  # not the agent's own
    run = run_script([{"action": {"type": "wait"}}], overrides=["agent.max_steps=1"])
    assert not [n for n in leftovers if (conway_home / n).exists()]
    assert (conway_home / ".control.json.z.tmp").exists()
    rec = [p for p in run.payloads("recovery") if p["what"] == "temp files"]
    assert rec and all(n in rec[0]["detail"] for n in leftovers)


def test_corrupt_state_becomes_a_recovery_event_in_a_real_run(conway_home):
    run_script([{"action": {"type": "wait"}}], overrides=["agent.max_steps=1"])
    (conway_home / "state.json").write_text("{not json")
    run = run_script([{"action": {"type": "wait"}}], overrides=["agent.max_steps=1"])
    rec = run.payloads("recovery")
    assert rec and rec[0]["what"] == "state" and "corrupt" in rec[0]["detail"]
    assert read_json(conway_home / "state.json")["status"] == "stopped"


def test_control_requests_are_scoped_to_a_session(tmp_path):
    path = tmp_path / "control.json"
    write_control(path, "s1", "pause")
    assert read_control(path, "s1") == "pause"
    assert read_control(path, "s2") is None
    path.write_text("garbage")
    assert read_control(path, "s1") is None


def test_journal_rotates_by_size_and_caps_the_total(tmp_path):
    j = Journal(tmp_path, max_file_bytes=4096, max_total_bytes=16384, fsync="none")
    worst = 0
    for i in range(400):
        j.append(make_event("s", i, "observation", {"pad": "x" * 100}))
        worst = max(worst, sum(f.stat().st_size for f in journal_files(tmp_path)))
    j.close()
    files = journal_files(tmp_path)
    assert len(files) > 1
    assert all(f.stat().st_size <= 4096 for f in files)
    assert worst <= 16384  # the cap holds at every moment, the file being written included
    assert worst > 16384 - 2 * 4096  # and it is used, not undershot by far
    steps = [e["step"] for e in read_journal(tmp_path).events]
    assert steps == sorted(steps) and steps[-1] == 399  # the newest survive, in order


def test_the_journal_folder_with_its_reserve_stays_within_the_cap(tmp_path):
    # the soak's journal folder peaked at 327 KB on a 262 KB cap: the files kept to the cap, the 64 KiB
    # .reserve beside them did not count
    for cap, file_bytes in ((16384, 4096), (256 << 10, 32 << 10)):
        folder = tmp_path / str(cap)
        j = Journal(folder, max_file_bytes=file_bytes, max_total_bytes=cap, fsync="none")
        worst = 0
        for i in range(cap // 100):
            j.append(make_event("s", i, "observation", {"pad": "x" * 100}))
            worst = max(worst, sum(f.stat().st_size for f in folder.iterdir() if f.name != ".writer.lock"))
        j.close()
        assert (folder / ".reserve").stat().st_size == min(64 << 10, cap // 8)
        assert cap - 2 * file_bytes - cap // 8 < worst <= cap, (cap, worst)  # within it, and used


def test_journal_cap_holds_when_one_event_is_bigger_than_a_file(tmp_path):
    """A large tool output under small caps (found by scripts/reliability/prove_reliability.py soak)."""
    j = Journal(tmp_path, max_file_bytes=4096, max_total_bytes=16384, fsync="none")
    for i in range(200):
        pad = "y" * 6000 if i % 15 == 7 else "x" * 100
        j.append(make_event("s", i, "result", {"output": pad}))
        total = sum(f.stat().st_size for f in journal_files(tmp_path))
        assert total <= 16384, (i, total)
    j.close()
    assert read_journal(tmp_path).events[-1]["step"] == 199


def test_journal_cap_holds_when_a_new_run_reopens_the_current_file(tmp_path):
    j = Journal(tmp_path, max_file_bytes=4096, max_total_bytes=40000, fsync="none")
    for i in range(300):
        j.append(make_event("s", i, "observation", {"pad": "x" * 100}))
    j.close()
    j = Journal(tmp_path, max_file_bytes=4096, max_total_bytes=12288, fsync="none")  # the cap was lowered
    for i in range(300, 340):
        j.append(make_event("s", i, "observation", {"pad": "x" * 100}))
        assert sum(f.stat().st_size for f in journal_files(tmp_path)) <= 12288
    j.close()


def test_the_intent_is_synced_before_its_action_is_dispatched(conway_home, monkeypatch):
    """SIGKILL keeps unsynced data, so only the sync calls show the intent is on disk (OS boundary): an
    fsync or fdatasync of the journal file once its text reached the intent's end."""
    import os

    from conway.config import load_config
    from conway.policies.mock import MockPolicy, MockScript
    from conway.protocols import Tool, ToolResult
    from conway.session.app import RunRequest, run_agent
    from conway.store.home import init_home, resolve_home
    from conway.store.journal import journal_data, text_size
    from conway.tools.registry import Toolbox

    synced: list[tuple[str, int]] = []

    def recording(real):
        def sync(fd):
            real(fd)
            try:
                path = os.readlink(f"/proc/self/fd/{fd}")
                synced.append((path, text_size(Path(path))))
            except OSError:
                pass
        return sync

    class Checking(Tool):  # at dispatch time: the journal holding the intent has been synced up to its end
        name = "files"
        action_types = frozenset({"append_file"})
        seen: list[bool] = []

        def availability(self):
            return True, "ok"

        def run(self, action, screen=None):
            jfile = journal_files(conway_home / "journal")[-1]
            end = text_size(jfile)
            assert b'"kind":"intent"' in journal_data(jfile).splitlines()[-1]
            self.seen.append(any(path == str(jfile) and size >= end for path, size in synced))
            return ToolResult(ok=True, output="done")

    monkeypatch.setattr(os, "fsync", recording(os.fsync))
    monkeypatch.setattr(os, "fdatasync", recording(os.fdatasync))
    home = resolve_home(None)
    init_home(home)
    tool = Checking()
    policy = MockPolicy(MockScript.model_validate({"steps": [{"action": {"type": "append_file", "path": "a",
                                                                          "text": "b"}}]}))
    run_agent(home, load_config(home.config, ["agent.max_steps=1"]),
              RunRequest(single_session=False, policy=policy, toolbox=Toolbox([tool])), say=lambda _s: None)
    assert tool.seen == [True]


def test_events_carry_the_versioned_schema(tmp_path):
    ev = make_event("sess", 3, "intent", {"a": 1}, now=0)
    assert ev["schema"] == "conway-event/1" and ev["session"] == "sess" and ev["step"] == 3
    assert ev["ts"].startswith("1970-01-01T00:00:00")
    import pytest
    with pytest.raises(ValueError):
        make_event("s", 1, "gossip", {})


def test_a_torn_last_line_is_skipped_and_reported(conway_home):
    run_script([{"action": {"type": "wait"}}], overrides=["agent.max_steps=1"])
    last = journal_files(conway_home / "journal")[-1]
    with open(last, "ab") as fh:
        fh.write(b'{"schema":"conway-event/1","kind":"res')  # the process died mid-line
    run = run_script([{"action": {"type": "wait"}}], overrides=["agent.max_steps=1"])
    rec = [p for p in run.payloads("recovery") if p["what"] == "journal"]
    assert rec and "torn" in rec[0]["detail"]
    read = read_journal(conway_home / "journal")
    assert len(read.skipped) == 1 and read.skipped[0].startswith(last.name + ":")
    # every event of both runs is still there and parses; only the torn fragment was skipped
    ends = [e["payload"]["event"] for e in read.events if e["kind"] == "session"]
    assert ends.count("start") == 2 and ends.count("end") == 2
    assert all(e["schema"] == "conway-event/1" for e in read.events)


def test_memory_compaction_in_a_run_is_journaled():
    """The mock has no model to ask: memory.md is truncated, marked, and the journal says why."""
    steps = [{"action": {"type": "list_dir", "path": "."}}] * 30
    run = run_script(steps, overrides=["agent.max_steps=30", "memory.max_chars=600", "memory.keep_chars=300"])
    compacted = [p for p in run.payloads("memory") if p["event"] == "compacted"]
    assert compacted and all(p["outcome"] == "truncated" and "no summariser" in p["reason"] for p in compacted)
    assert not [p for p in run.payloads("memory") if p["event"] == "request"]
    text = run.home.memory.read_text()
    assert text.startswith(TRUNCATION_MARK) and len(text) <= 600 and text.startswith(compacted[-1]["memory"])


def test_context_budget_drops_old_steps_and_marks_it():
    from conway.prompt.budget import build_parts
    from conway.prompt.parts import StepNote
    recent = [StepNote(i, f"click(x={i}, y=1)", "ok " + "z" * 80) for i in range(1, 51)]  # oldest first
    parts, dropped = build_parts(constitution="C" * 100, goals="G" * 100, memory="", action_space="A",
                                 latest="the latest result", recent=recent, budget_tokens=500,
                                 chars_per_token=3.5)
    names = [p.name for p in parts]
    assert names[:4] == ["constitution.md", "action space", "untrusted data", "goals.md"]
    assert "left out" in names and names[-1] == "latest result"
    assert dropped and "older step(s)" in dropped[0]
    steps_text = next(p.text for p in parts if p.name.startswith("recent"))
    assert "step 50" in steps_text and "step 1:" not in steps_text  # newest kept
    assert sum(len(p.text) for p in parts) <= 500 * 3.5 + 200


def test_a_dropped_accessibility_snapshot_is_marked_as_left_out():
    from conway.prompt.budget import build_parts
    kw = dict(constitution="C" * 100, goals="G" * 100, memory="", action_space="A", latest=None, recent=[],
              budget_tokens=500, chars_per_token=3.5)
    parts, dropped = build_parts(accessibility="button 'OK'\n" * 1000, **kw)
    names = [p.name for p in parts]
    assert "accessibility snapshot" not in names and "accessibility snapshot" in dropped
    assert "accessibility snapshot" in next(p.text for p in parts if p.name == "left out")
    parts, dropped = build_parts(accessibility="button 'OK'", **kw)  # one that fits is sent, nothing marked
    assert "accessibility snapshot" in [p.name for p in parts] and dropped == []


def test_constitution_and_goals_survive_a_tiny_budget():
    from conway.prompt.budget import build_parts
    parts, _ = build_parts(constitution="identity " * 500, goals="goal " * 500, memory="m" * 5000,
                           action_space="A", latest=None, recent=[], budget_tokens=300, chars_per_token=3.5)
    names = [p.name for p in parts]
    assert "constitution.md" in names and "goals.md" in names
    assert "cut" in next(p.text for p in parts if p.name == "goals.md")
    assert "memory.md" in " ".join(p.text for p in parts if p.name == "left out")


def test_export_groups_steps_excludes_dry_runs_and_has_no_image_bytes(conway_home, tmp_path):
    from conway.cli.main import main
    run_script([{"action": {"type": "append_file", "path": "n.txt", "text": "x"}},
                {"action": {"type": "finish", "status": "DONE", "message": "ok"}}], overrides=["agent.max_steps=2"])
    run_script([{"action": {"type": "append_file", "path": "n.txt", "text": "x"}}], dry_run=True,
               overrides=["agent.max_steps=1"])
    out = tmp_path / "traj.jsonl"
    assert main(["export", "--output", str(out)]) == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(recs) == 2 and all(r["format"] == "conway-traj/1" for r in recs)
    assert all(r["labels"]["success"] == "unknown" for r in recs)
    assert recs[1]["finish"]["declared_by"] == "model"
    text = out.read_text()
    assert "iVBORw0KGgo" not in text and "/9j/" not in text  # no base64 PNG or JPEG anywhere
    assert "\\x89PNG" not in text and "image/png;base64" not in text and "image/jpeg;base64" not in text
    assert recs[0]["observation"]["sha256"]
    out2 = tmp_path / "all.jsonl"
    assert main(["export", "--output", str(out2), "--include-dry-runs"]) == 0
    assert len(out2.read_text().splitlines()) == 3
