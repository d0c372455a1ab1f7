"""What a run cost: totals are the sums of the journaled decisions, per session and per model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conway.experience.costs import costs_of, render_record, session_cost
from conway.session.app import render_status, status_report
from conway.store.home import Home
from conway.store.journal import make_event, read_journal

DATA = Path(__file__).resolve().parents[1] / "data" / "export" / "home"


def _decision(session: str, step: int, t: float, model: str, prompt: int, cached: int, gen: int, s: float,
              **extra) -> dict:
    payload = {"model_id": model, "usage": {"prompt_tokens": prompt, "cached_tokens": cached,
                                            "completion_tokens": gen}, "latency_s": s, **extra}
    return make_event(session, step, "decision", payload, now=t)


def test_the_recorded_sessions_totals_are_the_sums_of_its_decisions():
    events = read_journal(DATA / "journal").events
    decisions = [e for e in events if e["kind"] == "decision"]
    assert decisions, "the recorded home holds decisions"
    costs = costs_of(events)
    for session, cost in costs.items():
        mine = [e["payload"] for e in decisions if e["session"] == session]
        total = cost.total
        assert total.decisions == len(mine)
        assert total.prompt_tokens == sum((p.get("usage") or {}).get("prompt_tokens", 0) for p in mine)
        assert total.generated_tokens == sum((p.get("usage") or {}).get("completion_tokens", 0) for p in mine)
        assert abs(total.model_s - sum(p.get("latency_s") or 0 for p in mine)) < 1e-9
        times = [e["t"] for e in events if e["session"] == session]
        assert cost.wall_s == max(times) - min(times)


def test_per_model_counts_discarded_decisions_and_ignores_junk():
    events = [make_event("s1", 0, "session", {"event": "start"}, now=100.0),
              _decision("s1", 1, 101.0, "a", 1000, 900, 20, 0.5),
              _decision("s1", 2, 102.0, "b", 500, 0, 10, 0.25, discarded=True),
              make_event("s1", 3, "decision", {"model_id": "a", "usage": {"prompt_tokens": "many"},
                                               "latency_s": -3}, now=103.0),
              _decision("s2", 1, 200.0, "a", 7, 0, 1, 0.1)]
    cost = costs_of(events)["s1"]
    assert cost.by_model["a"].decisions == 2 and cost.by_model["a"].prompt_tokens == 1000
    assert cost.by_model["a"].cached_tokens == 900 and cost.by_model["a"].model_s == 0.5
    assert cost.by_model["b"].discarded == 1 and cost.total.generated_tokens == 30
    assert cost.wall_s == 3.0
    line = render_record(cost.record())
    assert "3 decision(s)" in line and "1,500 prompt tokens, 900 of them cached" in line and "(a, b)" in line


def test_status_says_what_the_session_cost_reading_only_its_own_events(tmp_path):
    home = Home(tmp_path / "home")
    shutil.copytree(DATA, home.root)
    events = read_journal(home.journal_dir).events
    session = [e["session"] for e in events if e["kind"] == "decision"][-1]
    (home.root / "state.json").write_text(json.dumps({"session": session, "status": "stopped"}))
    report = status_report(home)
    expected = costs_of(events)[session].record()
    assert report["cost"] == expected == session_cost(home.journal_dir, session).record()
    assert "cost:     " in render_status(report)


def test_a_memory_summary_counts_its_tokens_and_time_apart_from_decisions():
    summary = make_event("s1", 3, "memory", {"event": "compacted", "outcome": "summarised", "model_id": "m",
                                             "duration_s": 2.5, "usage": {"prompt_tokens": 900,
                                                                          "completion_tokens": 120}}, now=12.0)
    truncation = make_event("s1", 4, "memory", {"event": "compacted", "outcome": "truncated",
                                                "reason": "memory.summarise=false"}, now=13.0)
    events = [_decision("s1", 1, 10.0, "m", 100, 0, 10, 1.0), summary, truncation]
    total = costs_of(events)["s1"].total
    assert (total.decisions, total.summaries) == (1, 1)
    assert (total.prompt_tokens, total.generated_tokens, total.model_s) == (1000, 130, 3.5)
    assert "1 decision(s) and 1 memory summary, 1,000 prompt tokens" in render_record(costs_of(events)["s1"].record())
