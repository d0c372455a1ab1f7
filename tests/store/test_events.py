"""Typed journal payloads (`conway.store.events`): read records round-trip to the byte, writers' records
give the payloads the loop has always written, and readers never fail on odd events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conway.store import events
from conway.store.events import (
    Acceptance,
    Decision,
    Finish,
    Intent,
    Recovery,
    SessionEnd,
    SessionGoals,
    SessionHostFacts,
    SessionStart,
)
from conway.store.journal import read_journal

RECORDED = Path(__file__).parents[1] / "data" / "export" / "home" / "journal"
RECORDS = (Intent, Decision, Finish, Recovery, SessionStart, SessionGoals, SessionHostFacts, SessionEnd, Acceptance)


def _line(payload: dict) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def test_every_typed_event_of_a_recorded_journal_round_trips_to_the_byte():
    seen = set()
    for ev in read_journal(RECORDED).events:
        for cls in RECORDS:
            record = cls.of(ev)
            if record is not None:
                seen.add(cls.__name__)
                assert _line(record.to_payload()) == _line(ev["payload"])
    assert {"SessionStart", "Decision", "Intent", "Finish", "SessionEnd"} <= seen


def test_the_recorded_journal_reads_as_typed_records():
    evs = read_journal(RECORDED).events
    start = next(r for r in map(SessionStart.of, evs) if r)
    assert start.model_id == "fake-vlm" and start.mode == "continuous" and "wait" in start.tools
    intents = [r for r in map(Intent.of, evs) if r]
    assert intents and all(i.action["type"] == i.summary.split("(")[0] for i in intents)
    decision = next(r for r in map(Decision.of, evs) if r)
    assert decision.model_id == "fake-vlm" and "usage" in decision.extra and decision.discarded is None


def test_writers_records_give_the_payloads_the_loop_wrote():
    assert Intent({"type": "wait"}, "wait()").to_payload() == {"action": {"type": "wait"}, "summary": "wait()"}
    end = SessionEnd("stop requested", 3, 2, {"timeout": 1}).to_payload()
    assert list(end) == ["event", "reason", "steps", "valid_decisions", "model_errors"] and end["event"] == "end"
    start = SessionStart("m", "rev", "digest", "session", False, ["wait"]).to_payload()
    assert list(start) == ["event", "model_id", "harness_revision", "config_digest", "mode", "dry_run", "tools",
                           "deviations", "served_by"]
    assert start["served_by"] is None  # no model asked (what served one: test_served_by.py)
    assert start["deviations"] is None  # not a trained family's session: nothing to differ from
    finish = Finish(type="finish", status="DONE", message="ok", declared_by="model", note="n").to_payload()
    assert list(finish) == ["type", "status", "message", "declared_by", "note"]
    assert list(Acceptance({"status": "DONE"}, True, [], 1, 0, True, None).to_payload()) == [
        "event", "declared", "verified", "criteria", "verified_passed", "verified_failed", "executed", "report"]
    assert Recovery("state", "x").to_payload() == {"what": "state", "detail": "x"}


def test_a_session_event_is_its_own_records_only():
    ev = {"kind": "session", "payload": {"event": "goals", "text": "do it", "chars": 5}}
    assert SessionGoals.of(ev).text == "do it"
    assert SessionStart.of(ev) is None and SessionEnd.of(ev) is None and Intent.of(ev) is None
    assert SessionHostFacts.of(ev) is None
    facts = {"kind": "session", "payload": SessionHostFacts("- CPUs: 4").to_payload()}
    assert facts["payload"] == {"event": "host_facts", "text": "- CPUs: 4"}
    assert SessionHostFacts.of(facts).text == "- CPUs: 4" and SessionGoals.of(facts) is None


@pytest.mark.parametrize("event", [None, {}, {"kind": "intent"}, {"kind": "intent", "payload": None},
                                   {"kind": "intent", "payload": [1, 2]}])
def test_odd_events_read_as_empty_records_or_none(event):
    record = Intent.of(event)
    assert record is None or (record.action is None and record.summary is None)


def test_a_read_record_keeps_unknown_keys_and_their_order():
    payload = {"zeta": 1, "action": {"type": "shell"}, "summary": "shell(…)", "alpha": [2]}
    record = Intent.from_payload(payload)
    assert record.extra == {"zeta": 1, "alpha": [2]}
    assert _line(record.to_payload()) == _line(payload)
    record.summary = "changed"
    assert record.to_payload()["summary"] == "changed" and list(record.to_payload()) == list(payload)


def test_old_journals_named_the_revision_revision():
    old = SessionStart.of({"kind": "session", "payload": {"event": "start", "revision": "abc"}})
    assert old.revision == "abc" and events.SessionStart.from_payload({}).revision is None
