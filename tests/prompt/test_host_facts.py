"""The host-facts part (docs/architecture.md#host-facts): in the stable part, refreshed when the facts change,
coarse enough that a prompt cache keeps its prefix between refreshes, configurable and off with `[]`."""

from __future__ import annotations

from dataclasses import replace

from helpers.prompt_frames import parse, sent_prompt

from conway.cli.main import main
from conway.config import load_config
from conway.loop.control import SimulatedClock
from conway.observe.synthetic import SyntheticObserver
from conway.policies.mock import MockPolicy, MockScript
from conway.prompt.decision import ContextBuilder
from conway.prompt.host_facts import HostFacts, coarse_bytes, gather
from conway.prompt.memory import Memory
from conway.prompt.parts import PartName
from conway.session.app import RunRequest, run_agent
from conway.store.home import init_home, resolve_home
from conway.tools.registry import Toolbox

GIB = 2**30


class Facts:
    """The facts source a test controls (the real gatherer is `gather`, checked below)."""

    def __init__(self) -> None:
        self.now = {"os": "Testix 1 (x86_64)", "cpus": 4, "memory_bytes": 15.6 * GIB, "disk_free_bytes": 37.2 * GIB,
                    "programs": ["git", "python3"]}
        self.calls = 0

    def __call__(self) -> dict:
        self.calls += 1
        return dict(self.now)


def _builder(overrides: list[str]) -> tuple[ContextBuilder, Facts, SimulatedClock]:
    home = resolve_home(None)
    init_home(home)
    cfg = load_config(home.config, overrides)
    clock, facts = SimulatedClock(), Facts()
    host = HostFacts(cfg.agent, home.root, clock.monotonic, source=facts)
    builder = ContextBuilder(home, cfg, Toolbox([]), MockPolicy(MockScript(steps=[])),
                             Memory(home.memory, home.memory_previous), clock.monotonic, host)
    return builder, facts, clock


def _prompt_facts(builder: ContextBuilder, obs, step: int) -> str | None:
    """The host facts as the generic policy sends them, read back from the rendered prompt."""
    text, _ = sent_prompt(builder.build("Write the report.", obs, step), "generic")
    return next((body for frame, name, body in parse(text) if name == PartName.HOST_FACTS), None)


def test_a_change_in_free_disk_or_display_size_reaches_the_prompt_after_the_refresh():
    builder, facts, clock = _builder(["agent.host_facts_refresh_s=120"])
    small, large = SyntheticObserver((640, 400)).observe(), SyntheticObserver((800, 600)).observe()
    first = _prompt_facts(builder, small, 1)
    assert first == ("- operating system: Testix 1 (x86_64)\n- CPUs: 4\n- memory: 16 GiB\n"
                     "- free disk (the home's filesystem): 37 GiB\n- display: 640x400 pixels\n"
                     "- programs on PATH: git, python3")
    facts.now["disk_free_bytes"] = 37.4 * GIB  # coarse: the same text, the prompt's prefix kept
    clock.now += 200
    assert _prompt_facts(builder, small, 2) == first and facts.calls == 2
    facts.now["disk_free_bytes"] = 2.1 * GIB
    clock.now += 60  # not yet time to look again
    assert _prompt_facts(builder, large, 3) == first and facts.calls == 2
    clock.now += 60
    now = _prompt_facts(builder, large, 4)
    assert "- free disk (the home's filesystem): 2.1 GiB" in now and "- display: 800x600 pixels" in now
    assert facts.calls == 3
    # an observation without a screen keeps the last display seen (the screen part says why there is none)
    blind = replace(small, png=None, captured_size=(0, 0))
    clock.now += 120
    assert "- display: 800x600 pixels" in _prompt_facts(builder, blind, 5)


def test_the_facts_shown_are_chosen_and_can_be_turned_off():
    builder, _, _ = _builder(["agent.host_facts=[cpus,disk]"])
    assert _prompt_facts(builder, SyntheticObserver().observe(), 1) == \
        "- CPUs: 4\n- free disk (the home's filesystem): 37 GiB"
    builder, facts, _ = _builder(["agent.host_facts=[]"])
    ctx = builder.build("g", SyntheticObserver().observe(), 1)
    assert PartName.HOST_FACTS not in [p.name for p in ctx.parts]
    assert "host facts" not in sent_prompt(ctx, "generic")[0] and facts.calls == 0


def test_a_wrong_fact_name_is_a_clear_error(capsys):
    assert main(["config", "--check", "agent.host_facts=[gpu]"]) == 1
    err = capsys.readouterr().err.strip().splitlines()  # the config's own form: a heading, one line per problem
    assert err[0] == "conway: error: invalid configuration:" and len(err) == 2
    assert "agent.host_facts.0: must be one of 'os', 'cpus'" in err[1] and "(got 'gpu')" in err[1]
    assert main(["config", "--check", "agent.host_facts_refresh_s=0"]) == 1
    assert "agent.host_facts_refresh_s" in capsys.readouterr().err


def test_facts_that_cannot_be_read_keep_the_last_text_and_the_run_going():
    builder, facts, clock = _builder([])
    obs = SyntheticObserver().observe()
    first = _prompt_facts(builder, obs, 1)

    def broken():
        raise FileNotFoundError(2, "No such file or directory")

    builder.host_facts.source = broken
    clock.now += 600
    assert _prompt_facts(builder, obs, 2) == first
    fresh, _, _ = _builder([])
    fresh.host_facts.source = broken
    assert _prompt_facts(fresh, obs, 1) == "(host facts unavailable: No such file or directory)"


def test_coarse_values_change_only_when_the_figure_does():
    assert [coarse_bytes(n) for n in (0, 310 * 2**20, 1.04 * GIB, 37.4 * GIB, 412.6 * GIB, 1234 * GIB)] == \
        ["0 MiB", "310 MiB", "1 GiB", "37 GiB", "410 GiB", "1200 GiB"]


def test_the_real_gatherer_and_the_real_loop(tmp_path):
    facts = gather(tmp_path, ["python3", "surely-not-a-program-here"])
    assert facts["cpus"] >= 1 and facts["memory_bytes"] > 0 and facts["disk_free_bytes"] >= 0
    assert facts["programs"] == ["python3"] and facts["os"]
    home = resolve_home(None)
    init_home(home)
    policy = MockPolicy(MockScript.model_validate({"steps": [{"action": {"type": "list_dir", "path": "."}}] * 3}),
                        sleep=lambda s: None)
    seen = []
    decide = policy.decide
    policy.decide = lambda ctx: (seen.append(ctx), decide(ctx))[1]  # type: ignore[method-assign]
    run_agent(home, load_config(home.config, ["agent.max_steps=3"]),
              RunRequest(single_session=False, policy=policy, observer=SyntheticObserver(), clock=SimulatedClock()),
              say=lambda s: None)
    systems = [sent_prompt(ctx, "generic")[0].split('<file name="goals.md">')[0] for ctx in seen]
    assert "## host facts\n- operating system: " in systems[0] and "- display: 640x400 pixels" in systems[0]
    assert systems[0] == systems[1] == systems[2]  # the stable part stays byte-identical from cycle to cycle


def test_the_part_does_not_lower_the_prefix_the_loop_s_prompts_share(tmp_path):
    """bench_model's model-free measure (docs/measurements.md#host-facts-and-the-cached-share-issue-23)."""
    from scripts.bench.bench_model import text_prefix
    from scripts.bench.loop_contexts import loop_contexts

    on = text_prefix(loop_contexts(8, tmp_path / "on", overrides=["agent.host_facts_refresh_s=1"]))
    off = text_prefix(loop_contexts(8, tmp_path / "off", overrides=["agent.host_facts=[]"]))
    assert on["stable-first"]["share"] >= off["stable-first"]["share"] > 0.8
    assert on["stable-first"]["shared"] - off["stable-first"]["shared"] >= 7 * 200  # the part, shared every cycle
