"""A 10 MB answer that is refused is journaled as a bounded head and tail with its size and sha256, so garbage
cannot push earlier history out of the journal's cap; an accepted answer is journaled whole."""

from __future__ import annotations

import hashlib

from helpers.loop_harness import run_script


def test_a_refused_10_mb_answer_is_journaled_bounded(conway_home):
    raw = "HEAD " + "x" * 10_000_000 + " TAIL"
    run = run_script([{"raw": raw}, {"action": {"type": "list_dir", "path": "."}}],
                     overrides=["agent.max_steps=2"])
    decisions = [e["payload"] for e in run.events if e["kind"] == "decision"]
    refused, accepted = decisions[0], decisions[1]
    assert refused["raw_text"].startswith("HEAD ") and refused["raw_text"].endswith(" TAIL")
    assert len(refused["raw_text"]) < 10_000
    assert refused["raw_text_cut"] == {"chars": len(raw), "sha256": hashlib.sha256(raw.encode()).hexdigest()}
    assert "raw_text_cut" not in accepted and accepted["raw_text"] == '{"type": "list_dir", "path": "."}'
    assert sum(p.stat().st_size for p in run.home.journal_dir.glob("*.jsonl")) < 1_000_000
