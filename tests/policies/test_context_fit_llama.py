"""Context that fits, through real llama.cpp on the tiny VLM (trained for 4,096 tokens): in-process and
llama-server (issue 10, items 1 and 5; issue 14, item 3).

Conway learns the real per-request window (in-process n_ctx held to the trained context; llama-server's
/props), sizes the text budget from it (window − image tokens − max_tokens − instructions), cuts what
still does not fit (marked in the prompt, journaled with the decision), refuses before sending when
nothing can fit, and reports what llama.cpp itself refuses as "context exceeded (N > M tokens)".
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import run_cli
from helpers.tiny_vlm import MMPROJ, MODEL, require_inprocess, require_llama_server

from conway.config import load_config
from conway.protocols import ContextExceeded, ContextPart
from conway.store.home import resolve_home
from conway.store.journal import read_journal

TRAINED = 4096

pytestmark = [pytest.mark.llama, pytest.mark.slow]


def model_args(*extra: str, backend: str = "llama_cpp") -> list[str]:
    return ["policy=generic", f"policy.backend={backend}", f"policy.model_path={MODEL}",
            f"policy.mmproj_path={MMPROJ}", "runtime.n_threads=1", "runtime.startup_timeout_s=120", *extra]


LONG_MEMORY = "memory.max_chars=200000"
"""Keeps big_home's memory.md uncompacted (no summary between cycles): the window must take it as it is."""


def big_home(home: Path) -> None:
    """A home whose goals and memory alone are far beyond any small window."""
    (home / "goals.md").write_text("# Goals\n" + "".join(f"- keep item {i} of the long backlog tidy\n"
                                                         for i in range(1500)))
    (home / "memory.md").write_text("# Memory\n" + "".join(f"- step {i}: looked at the screen, nothing new\n"
                                                           for i in range(1500)))


def decisions(home: Path) -> list[dict]:
    return [e["payload"] for e in read_journal(home / "journal").events if e["kind"] == "decision"]


def test_inprocess_window_is_n_ctx_and_a_long_home_still_fits(initialized_home):
    require_inprocess()
    big_home(initialized_home)
    # the tiny VLM's tokenizer spends a token per ~1.2 characters: its fixed instructions and action space
    # alone take ~1,000 tokens, so 3,072 is a small window for it (a 30,000-character home would need ~25,000)
    proc = run_cli("run", "--max-steps", "2", *model_args("runtime.n_ctx=3072", "policy.max_tokens=256"),
                   "observe.source=synthetic", "tools.enabled=[files]", LONG_MEMORY, "agent.idle_backoff_start_s=0.05",
                   "agent.idle_backoff_max_s=0.1", "agent.recovery_backoff_start_s=0.05",
                   "agent.recovery_backoff_max_s=0.1", timeout=400)
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    assert "exceeds n_ctx" not in proc.stdout + proc.stderr and "context exceeded" not in proc.stdout
    ds = decisions(initialized_home)
    assert len(ds) == 2, proc.stdout
    for d in ds:
        ctx = d["context"]
        assert ctx["n_ctx"] == 3072 and "in-process" in ctx["window_source"]
        assert ctx["reply_tokens"] == 256 and ctx["image_tokens"] > 0 and ctx["instruction_tokens"] > 0
        assert ctx["budget_tokens"] < 3072 - 256
        assert any("memory.md" in x or "goals.md" in x for x in ctx["dropped"]), ctx
        assert d["usage"]["prompt_tokens"] + 256 <= 3072  # what llama.cpp counted fits with the reply


def test_inprocess_n_ctx_beyond_training_is_held_to_it_and_warned(initialized_home):
    require_inprocess()
    proc = run_cli("run", "--max-steps", "1", *model_args("runtime.n_ctx=8192", "policy.max_tokens=64"),
                   "observe.source=synthetic", "tools.enabled=[]", timeout=300)
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    assert f"warning: runtime.n_ctx=8192 exceeds the {TRAINED} tokens tiny-vlm.gguf was trained for" in proc.stdout
    (d,) = decisions(initialized_home)
    assert d["context"]["n_ctx"] == TRAINED and "trained" in d["context"]["window_source"]


def test_a_prompt_that_cannot_fit_is_refused_before_sending_with_the_numbers(conway_home):
    require_inprocess()
    from conway.policies.factory import build_model_policy
    from conway.readiness.checks.decision import probe_context
    policy = build_model_policy(load_config(None, model_args("runtime.n_ctx=1024", "policy.max_tokens=900")),
                                resolve_home(None))
    try:
        with pytest.raises(ContextExceeded, match=r"context exceeded \(\d+ > 1024 tokens\): the prompt needs"):
            policy.decide(probe_context((640, 400)))
    finally:
        policy.close()


def test_cutting_to_fit_leaves_the_callers_context_as_built(conway_home):
    """Deciding one oversized context twice (a retry, a comparison) sends the same prompt both times."""
    require_inprocess()
    from conway.policies.factory import build_model_policy
    from conway.readiness.checks.decision import probe_context
    ctx = probe_context((640, 400))
    ctx.parts.append(ContextPart("memory.md", "".join(f"- step {i}: looked, nothing new\n" for i in range(400))))
    before = [(p.name, p.text) for p in ctx.parts]
    policy = build_model_policy(load_config(None, model_args("runtime.n_ctx=2048", "policy.max_tokens=16")),
                                resolve_home(None))
    sent = []
    complete = policy.backend.complete
    policy.backend.complete = lambda messages, **kw: sent.append(repr(messages)) or complete(messages, **kw)
    try:
        policy.decide(ctx)
        assert [(p.name, p.text) for p in ctx.parts] == before  # nothing cut in place, no part added
        assert ctx.dropped == ["memory.md (cut to fit the model's context window)"]
        policy.budget.calibration = 0  # the second call must not see a better estimate either: same inputs
        policy.decide(ctx)
        assert sent[0] == sent[1] and "Cut to fit the model" in sent[0], ctx.dropped
        assert ctx.dropped == ["memory.md (cut to fit the model's context window)"]  # reported once
    finally:
        policy.close()


def test_llama_cpp_s_own_length_refusal_is_context_exceeded(conway_home):
    require_inprocess()
    from conway.policies.factory import build_model_policy
    policy = build_model_policy(load_config(None, model_args("runtime.n_ctx=512")), resolve_home(None))
    try:
        messages = [{"role": "user", "content": [{"type": "text", "text": "word " * 3000}]}]
        with pytest.raises(ContextExceeded, match=r"context exceeded \(\d+ > 512 tokens\)"):
            policy.backend.complete(messages, mode="none", spec=None, max_tokens=16, temperature=0.0, seed=0)
    finally:
        policy.close()


def test_no_display_decides_without_an_image_and_without_gui_actions(initialized_home):
    require_inprocess()
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    (initialized_home / "scratch").mkdir(exist_ok=True)
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "conway.cli.main", "run", "--max-steps", "2",
                           *model_args("policy.max_tokens=512", "runtime.n_ctx=4096"), "observe.source=screen",
                           "tools.enabled=[files,shell,gui]", "agent.idle_backoff_start_s=0.05",
                           "agent.idle_backoff_max_s=0.1", "agent.recovery_backoff_start_s=0.05",
                           "agent.recovery_backoff_max_s=0.1"],
                          capture_output=True, text=True, timeout=400, env=env,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    assert proc.stdout.count("screen unavailable: ") == 1, proc.stdout  # said once, at the start
    assert "DISPLAY is not set" in proc.stdout
    ds = decisions(initialized_home)
    assert len(ds) == 2  # the model was asked every step
    for d in ds:
        assert d["image_tokens"] is None and d["context"]["image_tokens"] == 0
        assert not {"click", "type", "key", "scroll"} & set(d["context"]["action_types"])
        assert {"read_file", "shell"} <= set(d["context"]["action_types"])
    obs = [e["payload"] for e in read_journal(initialized_home / "journal").events if e["kind"] == "observation"]
    assert all(o["source"] == "none" and "DISPLAY" in o["screen_unavailable"] for o in obs)


# --- llama-server ------------------------------------------------------------------------------------


def test_llama_server_window_comes_from_props_and_a_long_home_fits(initialized_home):
    require_llama_server()
    big_home(initialized_home)
    proc = run_cli("run", "--max-steps", "2", *model_args("runtime.server=llama-server", "runtime.n_ctx=8192",
                                                          "policy.max_tokens=256", backend="http"),
                   "observe.source=synthetic", "tools.enabled=[files]", LONG_MEMORY, "agent.idle_backoff_start_s=0.05",
                   "agent.idle_backoff_max_s=0.1", "agent.recovery_backoff_start_s=0.05",
                   "agent.recovery_backoff_max_s=0.1", timeout=400)
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    assert "exceeds the available context size" not in proc.stdout
    assert f"warning: runtime.n_ctx=8192 exceeds the {TRAINED} tokens" in proc.stdout
    ds = decisions(initialized_home)
    assert len(ds) == 2
    for d in ds:
        assert d["context"]["n_ctx"] == TRAINED and d["context"]["window_source"].startswith("llama-server /props")
        assert d["usage"]["prompt_tokens"] + 256 <= TRAINED


def test_llama_server_s_http_400_for_length_is_context_exceeded(conway_home):
    require_llama_server()
    from conway.policies.factory import build_model_policy
    policy = build_model_policy(load_config(None, model_args("runtime.server=llama-server", "runtime.n_ctx=1024",
                                                             backend="http")), resolve_home(None))
    try:
        messages = [{"role": "user", "content": "word " * 3000}]
        with pytest.raises(ContextExceeded, match=r"context exceeded \(\d+ > 1024 tokens\): the server refused"):
            policy.backend.complete(messages, mode="none", spec=None, max_tokens=16, temperature=0.0, seed=0)
        assert policy.context_window().n_ctx == 1024
    finally:
        policy.close()


@pytest.mark.parametrize("backend", ["llama_cpp", "http"])
def test_the_faithful_uitars_window_at_1920x1080_goes_through_the_tiny_vlm_in_the_context_conway_chose(backend):
    """Five screenshots a request (the agent's window, constant) and every answer, in-process and on a llama-server
    Conway starts, with runtime.n_ctx left to Conway: the preset's need at 1920x1080 (image tokens held to 256
    for the tiny VLM's 4,096) fits, and every request goes through."""
    import io

    from PIL import Image

    from conway.history import PastImage, TurnHistory
    from conway.policies.conformance import window_need
    from conway.policies.factory import build_model_policy
    from conway.policies.images import prepare_image
    from conway.protocols import DecisionContext, Observation

    require_inprocess() if backend == "llama_cpp" else require_llama_server()
    server = ["runtime.server=llama-server", "runtime.startup_timeout_s=120"] if backend == "http" else []
    cfg = load_config(None, ["policy=uitars-1.5-7b", f"policy.backend={backend}", f"policy.model_path={MODEL}",
                             f"policy.mmproj_path={MMPROJ}", "policy.max_tokens=8", "policy.image_max_tokens=256",
                             "runtime.n_threads=1", *server])
    need = window_need(cfg, (1920, 1080), in_process=backend == "llama_cpp")
    images, turns, slide = cfg.policy.history_window(12)
    history = TurnHistory(max_images=images, max_turns=turns, slide=slide)
    sent_images = []
    with build_model_policy(cfg, resolve_home(None)) as policy:
        window = policy.context_window()
        assert window is not None and need.total <= window.n_ctx <= TRAINED
        for step in range(1, 7):
            buf = io.BytesIO()
            Image.new("RGB", (1920, 1080), (30 * step, 90, 160)).save(buf, format="PNG")
            obs = Observation(png=buf.getvalue(), captured_size=(1920, 1080), source="synthetic",
                              content_hash=f"h{step}", change_key=f"k{step}")
            d = policy.decide(DecisionContext(parts=[ContextPart("goals.md", "Wait.")], observation=obs, step=step,
                                              action_types=["wait", "finish"], history=history))
            sent_images.append(d.meta["history"]["past_images"] + 1)
            shot = prepare_image(obs, policy.settings.resize_rule, policy.rule, policy.settings.image_encoding)
            assert shot.mime == "image/png"
            history.discard()
            history.propose("Thought: waiting.\nAction: wait()", PastImage(shot.data, shot.mime, shot.sent_size,
                                                                          shot.image_tokens))
            history.commit()
    assert sent_images == [1, 2, 3, 4, 5, 5] and len(history.turns) == 6  # constant once full, every answer kept
