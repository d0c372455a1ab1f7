"""Exports rebuild each step's prompt with the host facts it saw (docs/architecture.md#host-facts): the loop
journals the part's text whenever it changes, a step record carries the text in effect at that step, and
`step_context` puts it back where the loop had it. A journal older than that record exports as before:
without the facts."""

from __future__ import annotations

import json

from helpers.loop_harness import ArchivingObserver

from conway.cli.main import main
from conway.config import load_config
from conway.experience.conversation import step_context
from conway.experience.steps import record_image
from conway.loop.control import SimulatedClock
from conway.policies.mock import MockPolicy, MockScript
from conway.prompt.parts import PartName
from conway.session.app import RunRequest, run_agent
from conway.store.home import Home, init_home
from conway.store.journal import read_journal
from conway.store.provenance import prompt_record
from scripts.demos.board_runs import bare_home

GIB = 2**30
NOT_REBUILT = (PartName.MEMORY, PartName.RECENT_STEPS, PartName.LATEST_RESULT, PartName.LEFT_OUT)
"""What the journal does not keep the text of (step_context's docstring): the rest is rebuilt exactly."""


def _run(home: Home, monkeypatch, steps: int) -> list:
    """A bare home's run whose free disk drops after the second look: the facts change mid-run."""
    disk = iter([37.2, 37.4, 2.1] + [2.1] * 20)  # the first two render alike (two significant figures)

    def gather(disk_of, programs):
        return {"os": "Testix 1 (x86_64)", "cpus": 4, "memory_bytes": 16 * GIB,
                "disk_free_bytes": next(disk) * GIB, "programs": ["git"]}

    monkeypatch.setattr("conway.prompt.host_facts.gather", gather)
    clock = SimulatedClock()
    sent = []
    decide = MockPolicy.decide

    def seen(self, ctx):  # what the loop sent, and a refresh's worth of time before the next cycle
        sent.append(ctx)
        clock.now += 120
        return decide(self, ctx)

    monkeypatch.setattr(MockPolicy, "decide", seen)
    policy = MockPolicy(MockScript.model_validate({"steps": [{"action": {"type": "list_dir", "path": "."}}] * steps}),
                        sleep=clock.sleep)
    run_agent(home, load_config(home.config, [f"agent.max_steps={steps}", "agent.host_facts_refresh_s=60"]),
              RunRequest(single_session=False, policy=policy, observer=ArchivingObserver(home.root), clock=clock),
              say=lambda s: None)
    return sent


def _bare(root) -> Home:
    home = Home(root=root)
    init_home(home)
    bare_home(home)
    return home


def _export(tmp_path, name: str) -> list[dict]:
    out = tmp_path / name
    assert main(["export", "--output", str(out)]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def _texts(parts) -> list[tuple[str, str]]:
    return [(p.name, p.text) for p in parts if p.name not in NOT_REBUILT]


def test_rebuilt_prompts_carry_the_host_facts_each_step_saw(conway_home, tmp_path, monkeypatch):
    home = _bare(conway_home)
    sent = _run(home, monkeypatch, 4)
    facts = [next(p.text for p in ctx.parts if p.name == PartName.HOST_FACTS) for ctx in sent]
    assert len(facts) == 4 and facts[0] == facts[1] != facts[2] == facts[3]  # changed mid-run, at step 3
    assert "- free disk (the home's filesystem): 37 GiB" in facts[0] and "2.1 GiB" in facts[2]
    journaled = [e for e in read_journal(home.journal_dir).events
                 if e["kind"] == "session" and e["payload"].get("event") == "host_facts"]
    assert [(e["step"], e["payload"]["text"]) for e in journaled] == [(1, facts[0]), (3, facts[2])]  # on change only

    records = _export(tmp_path, "traj.jsonl")
    assert [r["host_facts"] for r in records] == facts
    cfg = load_config(None, [])  # the export's config: its own host-facts settings do not matter
    for rec, ctx in zip(records, sent, strict=True):
        rebuilt = step_context(rec, record_image(rec, home.root), cfg)
        assert _texts(rebuilt.parts) == _texts(ctx.parts)  # the facts in their place, the stable part to the byte
    # the first step has no memory, recent steps or latest result yet: its whole prompt is the loop's
    first = step_context(records[0], record_image(records[0], home.root), cfg)
    assert prompt_record(first.parts)["prompt_sha256"] == records[0]["prompt"]["sha256"] == \
        prompt_record(sent[0].parts)["prompt_sha256"]


def test_a_journal_without_the_record_still_exports_without_the_facts(conway_home, tmp_path, monkeypatch):
    home = _bare(conway_home)
    sent = _run(home, monkeypatch, 2)
    for f in home.journal_dir.glob("*.jsonl"):  # as an older Conway wrote it
        lines = [ln for ln in f.read_text().splitlines() if '"event":"host_facts"' not in ln.replace(" ", "")]
        f.write_text("".join(ln + "\n" for ln in lines))
    assert not [e for e in read_journal(home.journal_dir).events if e["payload"].get("event") == "host_facts"]
    records = _export(tmp_path, "old.jsonl")
    assert len(records) == 2 and all("host_facts" not in r for r in records)
    rebuilt = step_context(records[0], record_image(records[0], home.root), load_config(None, []))
    assert PartName.HOST_FACTS not in [p.name for p in rebuilt.parts]  # as before the record: the facts absent
    assert _texts(rebuilt.parts) == [t for t in _texts(sent[0].parts) if t[0] != PartName.HOST_FACTS]


def test_no_record_while_the_part_is_off(conway_home, tmp_path, monkeypatch):
    home = _bare(conway_home)
    home.config.write_text("agent:\n  host_facts: []\n", encoding="utf-8")
    sent = _run(home, monkeypatch, 2)
    assert all(PartName.HOST_FACTS not in [p.name for p in ctx.parts] for ctx in sent)
    assert not [e for e in read_journal(home.journal_dir).events if e["payload"].get("event") == "host_facts"]
    records = _export(tmp_path, "off.jsonl")
    rebuilt = step_context(records[0], record_image(records[0], home.root), load_config(None, []))
    assert prompt_record(rebuilt.parts)["prompt_sha256"] == records[0]["prompt"]["sha256"]
