"""memory.md's summary through real llama.cpp, in-process and in a llama-server Conway starts, on the tiny
random-weight VLM (tests/fixtures/tiny-vlm).

The tiny VLM's weights are random: its answer means nothing and never ends by itself, so every summary it
writes runs into its max_tokens and is refused as cut off (the accepted path is tested over HTTP in
test_memory_summary.py). What these tests hold is the real path: the text-only request reaches llama.cpp
through the acting model's backend (in-process or HTTP; or a text model of its own,
`memory.summariser.model_path`), the journal
records what llama.cpp counted, the marked truncation replaces memory.md, the decisions go on with the same
loaded model, and a stop during the summary ends the run at llama.cpp's next token (its abort callback).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from conway.config import load_config
from conway.loop.ending import RunEnd
from conway.prompt.memory import TRUNCATION_MARK
from conway.session.app import RunRequest, run_agent
from conway.store.home import init_home, resolve_home
from conway.store.journal import read_journal
from conway.store.state import read_json, write_control

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny-vlm"
MODEL, MMPROJ = TINY / "tiny-vlm.gguf", TINY / "tiny-vlm-mmproj.gguf"
PIN = "!pin keep the backups"

pytestmark = [pytest.mark.llama, pytest.mark.slow]


def require_fixtures():
    if not MODEL.exists() or not MMPROJ.exists():
        pytest.skip("tiny VLM fixtures missing (python -m scripts.build.build_tiny_vlm --out tests/fixtures/tiny-vlm)")


def require_inprocess():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install -e '.[llama]')")
    require_fixtures()


def _home_past_the_threshold():
    home = resolve_home(None)
    init_home(home)
    text = f"# notes\n{PIN}\n" + "".join(f"- step {i}: list_dir(path='.') → ok\n" for i in range(14))
    home.memory.write_text(text, encoding="utf-8")
    assert len(text) > 500
    return home, text


def _run(home, *extra: str, steps: int = 2):
    cfg = load_config(home.config, [
        "policy=generic", f"policy.model_path={MODEL}", f"policy.mmproj_path={MMPROJ}", "runtime.n_ctx=4096",
        "runtime.n_threads=1", "policy.max_tokens=64", "policy.seed=1", "observe.source=synthetic",
        "tools.enabled=[files]", f"agent.max_steps={steps}", "memory.max_chars=500", "memory.keep_chars=300",
        "agent.recovery_backoff_start_s=0.05", "agent.recovery_backoff_max_s=0.1", *extra])
    outcome, session = run_agent(home, cfg, RunRequest(single_session=False), say=lambda _s: None)
    events = [e for e in read_journal(home.journal_dir).events if e["session"] == session]
    return outcome, events


def _memory(events, name):
    return [e["payload"] for e in events if e["kind"] == "memory" and e["payload"]["event"] == name]


@pytest.mark.parametrize("own", [False, True], ids=["acting-model", "memory.summariser.model_path"])
def test_the_summary_request_goes_through_real_llama_cpp_and_its_refusal_truncates_marked(own):
    require_inprocess()
    home, seeded = _home_past_the_threshold()
    extra = [f"memory.summariser.model_path={MODEL}", "memory.summariser.n_threads=1"] if own else []
    outcome, events = _run(home, *extra)
    (request,) = _memory(events, "request")
    assert request["model_id"] == "tiny-vlm" and request["input_chars"] == len(seeded)
    assert request["summariser"] == ("memory.summariser" if own else "the acting model")
    (done,) = _memory(events, "compacted")
    assert done["prompt_sha256"] == request["prompt_sha256"]
    assert done["usage"]["prompt_tokens"] > 500 and done["output_chars"] > 0  # counted and written by llama.cpp
    assert done["duration_s"] > 0
    assert done["outcome"] == "truncated" and "cut off at its max_tokens (150" in done["reason"]
    text = home.memory.read_text()
    assert text.startswith(done["memory"]) and text.startswith(TRUNCATION_MARK) and PIN in text
    assert home.memory_previous.read_text() == seeded
    # the same loaded model goes on deciding after the summary took its KV cache
    decisions = [e["payload"] for e in events if e["kind"] == "decision"]
    assert len(decisions) == 2 and all(d["usage"].get("prompt_tokens") for d in decisions)
    assert outcome.end is RunEnd.MAX_STEPS


def test_a_stop_during_an_in_process_summary_ends_it_at_the_next_token():
    require_inprocess()
    home, seeded = _home_past_the_threshold()
    result: dict = {}

    def stop_once_asked():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            events = read_journal(home.journal_dir).events if home.journal_dir.exists() else []
            if any(e["kind"] == "memory" and e["payload"].get("event") == "request" for e in events):
                break
            time.sleep(0.02)
        time.sleep(0.3)  # inside the generation (about 2,000 tokens: several seconds on this model)
        result["stop_at"] = time.monotonic()
        write_control(home.control, read_json(home.state)["session"], "stop")

    helper = threading.Thread(target=stop_once_asked)
    helper.start()
    outcome, events = _run(home, "memory.summary_max_tokens=2000", steps=5)
    ended = time.monotonic()
    helper.join()
    assert ended - result["stop_at"] < 5, ended - result["stop_at"]  # about the control poll, not the answer
    assert outcome.end is RunEnd.STOP_REQUESTED
    (done,) = _memory(events, "compacted")
    # measured here: 0.5 s, against 8.5 s for the same 2,000-token answer left to run to its end
    assert done["outcome"] == "aborted" and done["duration_s"] < 3
    assert home.memory.read_text() == seeded and not home.memory_previous.exists()
    assert not [e for e in events if e["kind"] == "decision"]  # it stopped before any decision


def test_the_summary_goes_through_a_real_llama_server_started_by_conway():
    require_fixtures()
    from conway.config import RuntimeConfig
    from conway.errors import UserError
    from conway.runtime.server import find_program
    try:
        find_program(RuntimeConfig(server="llama-server"))
    except UserError as exc:
        pytest.skip(f"llama-server is not available here: {exc}")
    home, seeded = _home_past_the_threshold()
    outcome, events = _run(home, "policy.backend=http", "runtime.server=llama-server", "runtime.startup_timeout_s=120")
    (request,) = _memory(events, "request")
    assert request["summariser"] == "the acting model" and request["model_id"] == "tiny-vlm"
    (done,) = _memory(events, "compacted")
    assert done["usage"]["prompt_tokens"] > 500 and done["output_chars"] > 0  # counted by llama-server
    assert done["outcome"] == "truncated" and "cut off at its max_tokens (150" in done["reason"]
    assert home.memory.read_text().startswith(done["memory"]) and home.memory_previous.read_text() == seeded
    assert len([e for e in events if e["kind"] == "decision"]) == 2 and outcome.end is RunEnd.MAX_STEPS
