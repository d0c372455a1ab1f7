"""Decision contexts exactly as the real loop builds them, from a mock-driven run.

    from scripts.bench.loop_contexts import loop_contexts
    ctxs = loop_contexts(30, Path("/tmp/home"))

Runs `conway.loop.cycle.Loop` (real journal, state, memory.md, tools, context
builder) on a fresh home with a scripted mock policy that records every
`DecisionContext` it is given. The home starts with a realistic memory (a
previous session's step log) so memory, the recent-steps window, the latest
result and the screenshot all change from cycle to cycle the way they do in a
real run. Used by `scripts/bench/bench_model.py --cycles N` and by the in-process
prompt-cache tests; nothing here talks to a model.
"""

from __future__ import annotations

import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from conway.config import load_config  # noqa: E402
from conway.loop.control import Clock  # noqa: E402
from conway.observe.synthetic import SyntheticObserver  # noqa: E402
from conway.policies.mock import MockPolicy, MockScript  # noqa: E402
from conway.protocols import DecisionContext  # noqa: E402
from conway.session.app import RunRequest, run_agent  # noqa: E402
from conway.store.home import Home, init_home  # noqa: E402

SCRIPT = [
    {"action": {"type": "list_dir", "path": "."}},
    {"action": {"type": "append_file", "path": "notes.md", "text": "- the editor shows the weekly report draft\n"}},
    {"action": {"type": "read_file", "path": "notes.md"}},
    {"action": {"type": "append_file", "path": "todo.md", "text": "- check the totals in the second table\n"}},
    {"action": {"type": "list_dir", "path": "."}},
    {"action": {"type": "read_file", "path": "todo.md"}},
]
"""What the mock does, over and over: direct tools whose results change as files grow."""


def previous_session_memory(chars: int = 6000) -> str:
    """A memory.md as a long run leaves it: a summary line, then one line per earlier step, about `chars` long.

    The default sits halfway between memory's compaction size (`memory.keep_chars`, 4,000) and its limit
    (`memory.max_chars`, 8,000): where a steady run's memory spends its time.
    """
    out = ["[memory summarised: the owner asked for the weekly report; drafts live in scratch/]"]
    i = 0
    while sum(len(line) + 1 for line in out) < chars:
        i += 1
        what = ("read_file(path='report.md')", "append_file(path='notes.md')", "click(x=412, y=288)",
                "type(text='totals checked')", "wait()")[i % 5]
        out.append(f"- step {i}: {what} → ok ({i * 37 % 900} bytes)")
    return "\n".join(out) + "\n"


class _NoSleepClock(Clock):
    def __init__(self) -> None:
        self.offset = 0.0

    def time(self) -> float:
        return time.time() + self.offset

    def monotonic(self) -> float:
        return time.monotonic() + self.offset

    def sleep(self, seconds: float) -> None:
        self.offset += seconds


class _Recorder(MockPolicy):
    """The mock policy, keeping every context it was asked to decide on."""

    def __init__(self, script: MockScript):
        super().__init__(script)
        self.contexts: list[DecisionContext] = []

    def decide(self, context: DecisionContext):
        self.contexts.append(context)
        return super().decide(context)


def loop_contexts(cycles: int, home_dir: Path, size: tuple[int, int] = (640, 400),
                  overrides: list[str] | None = None, memory: str | None = None) -> list[DecisionContext]:
    """`cycles` contexts from the real loop; the synthetic screen shows something new every cycle.

    `memory`: the memory.md the run starts with (default: `previous_session_memory()`).
    """
    home = Home(home_dir)
    init_home(home)
    home.memory.write_text(previous_session_memory() if memory is None else memory, encoding="utf-8")
    cfg = load_config(home.config, [f"agent.max_steps={cycles}", "agent.repetition_limit=1000000",
                                    *(overrides or [])])
    policy = _Recorder(MockScript.model_validate({"steps": SCRIPT, "repeat": True}))
    observer = SyntheticObserver(size, label_for_step=lambda step: f"weekly report · step {step}")
    run_agent(home, cfg, RunRequest(single_session=False, policy=policy, observer=observer, clock=_NoSleepClock(),
                                    quiet=True), say=lambda _s: None)
    return policy.contexts
