"""`conway run` on a real X display: the policy finds a button in the screenshot and the app confirms the click."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import run_cli

from conway.store.journal import read_journal

pytestmark = [pytest.mark.desktop, pytest.mark.slow]


def test_run_clicks_a_button_found_in_the_screenshot(initialized_home, tk_app, desktop, tmp_path):
    script = tmp_path / "look-and-click.yaml"
    script.write_text(yaml.safe_dump([{"thought": "the magenta button", "click_color": "#ff00ff"}]))
    mark = len(tk_app.log.events())
    r = run_cli("run", "--mock-script", str(script), "--max-steps", "1", "observe.source=screen",
                "tools.gui_pause_s=0", env={"DISPLAY": desktop.display})
    assert r.returncode == 0, r.stderr + r.stdout
    event = tk_app.log.wait_for(mark, lambda e: e.get("event") == "click" and e.get("widget") == "button",
                                what="the button click")
    assert event
    events = read_journal(initialized_home / "journal").events
    obs = next(e["payload"] for e in events if e["kind"] == "observation")
    assert obs["source"] == "screen" and obs["captured_size"] == list(desktop.size)
    intent = next(e["payload"] for e in events if e["kind"] == "intent")
    assert intent["action"]["type"] == "click"
    result = next(e["payload"] for e in events if e["kind"] == "result" and "action" in e["payload"])
    assert result["ok"] is True, json.dumps(result)


def test_observe_mode_captures_and_plans_without_clicking(initialized_home, tk_app, desktop, tmp_path):
    script = tmp_path / "look.yaml"
    script.write_text(yaml.safe_dump([{"click_color": "#ff00ff"}]))
    mark = len(tk_app.log.events())
    r = run_cli("run", "--observe", "--mock-script", str(script), "--max-steps", "1", "observe.source=screen",
                env={"DISPLAY": desktop.display})
    assert r.returncode == 0, r.stderr
    events = read_journal(initialized_home / "journal").events
    assert not [e for e in events if e["kind"] == "intent"]
    planned = next(e["payload"] for e in events if e["kind"] == "result")
    assert planned["dry_run"] is True and planned["action"]["type"] == "click"
    assert not [e for e in tk_app.log.events()[mark:] if e.get("event") == "click"]
    shots = list((initialized_home / "screenshots").glob("*"))
    assert shots, "observe mode archives the real screenshot"
    out = tmp_path / "t.jsonl"
    r = run_cli("export", "--output", str(out))
    # dry runs are left out by default, so nothing is left to export: refused in one line, no file written
    assert r.returncode == 1 and "nothing to export" in r.stderr and not out.exists(), r.stderr
