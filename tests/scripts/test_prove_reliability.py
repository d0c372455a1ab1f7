"""The reliability proofs at CI size (`scripts/reliability/prove_reliability.py PROOF --quick`), one test per promise.

Each proof runs once per module as a real process; the tests read its JSON
figures. A failing test prints the proof's own description of the first
violations (what, where, how to reproduce).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = "scripts.reliability.prove_reliability"


def _run(tmp_path_factory, proof: str, *extra: str) -> dict:
    out = tmp_path_factory.mktemp(proof) / "figures.json"
    done = subprocess.run([sys.executable, "-m", SCRIPT, proof, "--quick", "--json", str(out), *extra],
                          cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert done.returncode in (0, 2), f"the proof did not run (rc {done.returncode}):\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["schema"] == "conway-reliability/1"
    assert report["ok"] == (done.returncode == 0)
    assert f"{proof}" in done.stdout and "verdict" in done.stdout  # the summary table was printed
    return report["proofs"][proof]


def _check(result: dict, name: str) -> dict:
    for c in result["checks"]:
        if c["name"] == name or c["name"].startswith(name):
            return c
    raise AssertionError(f"no check {name!r} in {[c['name'] for c in result['checks']]}")


def _holds(result: dict, name: str) -> None:
    c = _check(result, name)
    assert c["ok"], f"{result['proof']} · {c['name']}: measured {c['measured']} (limit {c['limit']}):\n" + \
        "\n".join(c["examples"])


# --- kill -9 -------------------------------------------------------------------


@pytest.fixture(scope="module")
def kill9(tmp_path_factory) -> dict:
    return _run(tmp_path_factory, "kill9")


@pytest.mark.slow
def test_kill9_quick_kills_twenty_runs_spread_over_the_phases(kill9):
    assert kill9["params"]["kills"] == 20 and kill9["figures"]["kills"] == 20
    targets = kill9["figures"]["kill_points_by_target"]
    assert set(targets) == {"start-up", "decide", "intent", "dispatch", "result"}
    assert all(n == 4 for n in targets.values()), targets
    observed = kill9["figures"]["kill_points_observed"]
    assert sum(observed.values()) == 20
    assert sum(1 for n in observed.values() if n) >= 3, observed  # the kills really landed in different places
    # the proof saw each run take the lock (its start-up kills aim from there; the lock file is `pid session`)
    assert kill9["figures"]["lock_to_session_start_ms_median"] is not None
    assert kill9["figures"]["intents"] > 10  # real side effects happened
    _holds(kill9, "every run killed")
    _holds(kill9, "final clean run ends with exit 0")


@pytest.mark.slow
@pytest.mark.parametrize("promise", [
    "every intent closed exactly once",
    "no side effect twice",
    "no side effect without an intent",
    "no successful result without its effect",
    "state files parse",
    "no NUL run inside the journal's data",
    "no traceback from any run",
])
def test_kill9_quick_core_promises(kill9, promise):
    _holds(kill9, promise)


@pytest.mark.slow
def test_kill9_quick_state_json_exists_after_every_kill(kill9):
    _holds(kill9, "state.json exists after every kill")
    _holds(kill9, "status works after every kill")


@pytest.mark.slow
def test_kill9_quick_temp_files_cleaned(kill9):
    _holds(kill9, "temp files cleaned at the next start")
    _holds(kill9, "no temp files at the end")


# --- power loss ----------------------------------------------------------------


@pytest.fixture(scope="module")
def powerloss(tmp_path_factory) -> dict:
    return _run(tmp_path_factory, "powerloss")


@pytest.mark.parametrize("promise", [
    "every spared line kept",
    "every spared line read",
    "the new run appended",
    "status reports the span",
    "export reports the span",
])
def test_powerloss_quick_a_zeroed_block_loses_only_itself(powerloss, promise):
    """Issue 32: before, readers stopped at the block and the next run wrote over every line after it."""
    assert powerloss["params"]["trials"] == 3
    _holds(powerloss, promise)


# --- fuzz ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory) -> dict:
    return _run(tmp_path_factory, "fuzz")


@pytest.mark.slow
def test_fuzz_quick_ten_thousand_inputs_through_three_parsers(fuzz):
    f = fuzz["figures"]
    assert f["inputs"] == 10_000 and f["parse_calls"] == 30_000
    assert f["parsers"] == ["json", "opencua", "uitars"]
    assert f["accepted"] > 0 and f["rejected"] > 0  # mutations of valid answers: some still parse
    for mutator in ("truncate", "flip", "inject", "number", "nest", "unicode", "giant"):
        assert f["mutations"].get(mutator, 0) > 0, mutator
    assert f["longest_input_chars"] > 190_000


@pytest.mark.slow
def test_fuzz_quick_nothing_is_evaluated(fuzz):
    _holds(fuzz, "canary armed")  # the payloads do create the canary when something runs them
    _holds(fuzz, "canary untouched")


@pytest.mark.slow
def test_fuzz_quick_no_exception_escapes_and_nothing_is_printed(fuzz):
    _holds(fuzz, "exceptions escaping parse")
    _holds(fuzz, "warnings printed by parsers")


@pytest.mark.slow
def test_fuzz_quick_no_internal_errors(fuzz):
    _holds(fuzz, "internal parser errors")


@pytest.mark.slow
def test_fuzz_quick_no_input_over_50_ms(fuzz):
    _holds(fuzz, "inputs over 50 ms")


# --- soak ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def soak(tmp_path_factory) -> dict:
    return _run(tmp_path_factory, "soak")


@pytest.mark.slow
def test_soak_quick_runs_two_thousand_decisions(soak):
    assert soak["figures"]["decisions"] == 2_000 and soak["figures"]["cycles"] >= 2_000
    _holds(soak, "ran to its budget")
    assert soak["figures"]["journal_peak_files"] >= 2  # the journal really rotated
    assert soak["figures"]["screenshots_peak"] >= 1


@pytest.mark.slow
def test_soak_quick_screenshots_and_memory_stay_capped(soak):
    _holds(soak, "screenshots <= keep")
    _holds(soak, "memory.md <= max_chars")


@pytest.mark.slow
def test_soak_quick_no_file_descriptor_leak(soak):
    _holds(soak, "open file descriptors drift")


@pytest.mark.slow
def test_soak_quick_journal_total_within_cap(soak):
    _holds(soak, "journal total <= cap")


@pytest.mark.slow
def test_soak_quick_rss_drift_within_5_mib(soak):
    _holds(soak, "RSS drift")


# --- faults no budget used to end ----------------------------------------------------


@pytest.fixture(scope="module")
def faults(tmp_path_factory) -> dict:
    return _run(tmp_path_factory, "faults")


@pytest.mark.slow
def test_faults_quick_a_stop_during_start_up_reaches_the_run_holding_the_lock(faults):
    assert faults["params"]["stops"] == 5
    _holds(faults, "stop during start-up")


@pytest.mark.slow
def test_faults_quick_a_fifo_where_a_file_is_expected_hangs_nothing(faults):
    _holds(faults, "a FIFO where a file is expected")


@pytest.mark.slow
def test_faults_quick_the_request_timeout_bounds_a_trickling_or_endless_answer(faults):
    _holds(faults, "request_timeout_s bounds")
    assert set(faults["figures"]["first_timeout_s"]) == {"trickling", "endless"}


@pytest.mark.slow
def test_faults_quick_an_oversized_mcp_answer_is_a_certain_cut_result(faults):
    _holds(faults, "an oversized MCP answer")
    assert faults["figures"]["mcp_answer_bytes"] > 50_000_000


# --- the command itself ----------------------------------------------------------


@pytest.mark.parametrize("args, says", [
    (["nope"], "unknown proof 'nope'"),
    (["kill9", "--kills", "0"], "--kills must be at least 1"),
    (["--cycles", "x"], "invalid int value"),
])
def test_a_bad_command_line_is_one_line_and_exit_1(args, says):
    done = subprocess.run([sys.executable, "-m", SCRIPT, *args], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert says in done.stderr and "Traceback" not in done.stderr
