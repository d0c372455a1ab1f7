"""Drive the real loop in-process with a scripted mock and an injectable clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conway.config import load_config
from conway.loop.control import SimulatedClock
from conway.observe.synthetic import SyntheticObserver
from conway.policies.mock import MockPolicy, MockScript
from conway.session.app import RunRequest, run_agent
from conway.store.home import init_home, resolve_home
from conway.store.journal import read_journal


@dataclass
class Run:
    home: Any
    outcome: Any
    session: str
    events: list[dict] = field(default_factory=list)
    clock: SimulatedClock | None = None
    policy: MockPolicy | None = None
    lines: list[str] = field(default_factory=list)

    def kinds(self) -> list[str]:
        return [e["kind"] for e in self.events if e["kind"] != "observation"]

    def payloads(self, kind: str) -> list[dict]:
        return [e["payload"] for e in self.events if e["kind"] == kind]


def run_script(steps: list[dict], *, overrides: list[str] | None = None, observer=None, dry_run: bool = False,
               single: bool = False, clock: SimulatedClock | None = None, policy_sleep=None, task: str | None = None,
               repeat: bool = False) -> Run:
    home = resolve_home(None)
    from conway.store.home import init_home
    init_home(home)
    cfg = load_config(home.config, overrides or [])
    clock = clock or SimulatedClock()
    script = MockScript.model_validate({"steps": steps, "repeat": repeat})
    policy = MockPolicy(script, sleep=policy_sleep or clock.sleep)
    lines: list[str] = []
    outcome, session = run_agent(home, cfg, RunRequest(single_session=single, dry_run=dry_run, task=task,
                                                       policy=policy, observer=observer or SyntheticObserver(),
                                                       clock=clock), say=lines.append)
    events = [e for e in read_journal(home.journal_dir).events if e["session"] == session]
    return Run(home=home, outcome=outcome, session=session, events=events, clock=clock, policy=policy, lines=lines)


class ChangingObserver(SyntheticObserver):
    """A synthetic screen whose content changes on the steps listed (a real observer, scripted scene)."""

    def __init__(self, change_on: set[int]):
        scene = {"n": 0}

        def label(step: int) -> str:
            if step in change_on:
                scene["n"] += 1
            return f"scene {scene['n']}"

        super().__init__(label_for_step=label)


def home_path(run: Run) -> Path:
    return run.home.root


def run_against(fake: Any, steps: int, *extra: str, timeout_s: float = 0.5):
    """The generic policy against a scripted HTTP fixture for `steps` decisions, on a fake clock.

    Returns (outcome, this session's events, clock, printed lines).
    """
    home = resolve_home(None)
    init_home(home)
    cfg = load_config(home.config, ["policy=generic", f"policy.endpoint={fake.base_url}", "observe.source=synthetic",
                                    f"agent.max_steps={steps}", "policy.structured_output=none",
                                    f"policy.request_timeout_s={timeout_s:g}", *extra])
    clock = SimulatedClock()
    lines: list[str] = []
    outcome, session = run_agent(home, cfg, RunRequest(single_session=False, clock=clock), say=lines.append)
    events = [e for e in read_journal(home.journal_dir).events if e["session"] == session]
    return outcome, events, clock, lines


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The payloads of the events of one kind."""
    return [e["payload"] for e in events if e["kind"] == kind]


class ArchivingObserver(SyntheticObserver):
    """The synthetic screen, each screenshot archived in the home as the screen observer does."""

    def __init__(self, home):
        super().__init__()
        self.home = home

    def observe(self):
        obs = super().observe()
        path = self.home / "screenshots" / f"shot-{obs.content_hash[:12]}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(obs.png)
        obs.screenshot_path = str(path.relative_to(self.home))
        return obs
