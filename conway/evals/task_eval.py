"""Candidates measured on task suites, and the promotion gate for candidates trained on rollouts.

`conway candidate-eval NAME --suite tasks --tasks SUITE` runs the held-out tasks of SUITE on the base and on
the candidate, each task once on its own disposable desktop through the real loop (`TasksSuite`), scored by
the task's own checker: success rates with Wilson 95% intervals and Newcombe's interval of the difference
(`conway.evals.candidates` compares them as it compares click suites: here a hit is a verified success, and a
task that broke counts as not passed, for both models alike).

`rollout_gate` is what `conway promote` asks of a candidate whose manifest names rollouts (`training/grpo.py`,
rejection-sampling SFT): that the policy which rolled them out is the one the home serves, or a candidate
trained, round after round, from rollouts of it; and that its latest candidate-eval on tasks put it above its
base with separated intervals. `--force` promotes without either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conway.errors import UserError
from conway.evals import chance
from conway.evals.rollouts import file_identity, policy_identity, runnable_cases, same_policy
from conway.evals.stats import rate_record
from conway.evals.tasks_run import TasksSuite, tasks_folder
from conway.store.home import Home


@dataclass
class TaskEvalSuite(TasksSuite):
    """`TasksSuite` whose summary also speaks a click suite's terms: hits (verified successes), hit rate and
    its interval over every task run (a broken one is a miss)."""

    def summarize(self, records: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
        summary = super().summarize(records, wall_s)
        hits = sum(1 for r in records if r.get("outcome") == "pass")
        rate = rate_record(hits, len(records))
        # the chance level over every task run, as the hit rate is (a broken task is a miss for chance too)
        return {**summary, "hits": hits, **rate, "distance_px": None, "latency_s": None,
                "chance": chance.against(rate, chance.suite_chance(records))}


def task_held_out(out: Path, suite_source: str, cache: str | None, max_steps: int | None,
                  max_seconds: float | None, screen: tuple[int, int] = (1280, 800)) -> Any:
    """candidate-eval's held-out cases for a task suite: (its runnable tasks, how the run is announced, the
    report's parameters, one suite per model, what makes two records the same case)."""
    cache_dir = Path(cache).expanduser().resolve() if cache else None
    cases = runnable_cases(suite_source, cache_dir)

    def make_suite(cfg: Any) -> TaskEvalSuite:
        label = str(cfg.policy.model or "model").split("-")[0]  # candidate-NAME / base-STEM
        folder = tasks_folder(out.with_name(f"{out.stem}.{label}"))
        folder.mkdir(parents=True, exist_ok=True)
        return TaskEvalSuite(cfg, folder, out.parent, len(cases), cache=cache_dir, max_steps=max_steps,
                             max_seconds=max_seconds, quiet=True, screen=screen)

    params = {"suite": "tasks", "tasks": suite_source, "samples": len(cases), "max_steps": max_steps,
              "max_seconds": max_seconds, "screen": list(screen)}
    return (cases, f"{len(cases)} held-out task(s) of {suite_source}", params, make_suite,
            lambda r: str(r.get("task")))


def paired_tasks(runs: dict[str, Any]) -> list[dict[str, Any]]:
    """One case per held-out task: both models' outcomes and sessions side by side."""
    keys = ("outcome", "score", "session", "home", "steps", "error")
    return [{"index": b["index"], "task": b.get("task"), "instruction": b.get("instruction"),
             "hit_base": b.get("outcome") == "pass", "hit_candidate": c.get("outcome") == "pass",
             "base": {k: b.get(k) for k in keys}, "candidate": {k: c.get(k) for k in keys}}
            for b, c in zip(runs["base"][0], runs["candidate"][0])]


# --- the promotion gate -------------------------------------------------------------------------------


def _describe(identity: dict[str, Any] | None) -> str:
    if not identity:
        return "an unrecorded policy"
    model = identity.get("model") or {}
    if model.get("path"):
        return f"{identity.get('kind')} {model['path']}" + (f" (sha256 {model['sha256'][:12]})"
                                                           if model.get("sha256") else "")
    return f"{identity.get('kind')} {identity.get('endpoint') or ''} {identity.get('model_id') or ''}".strip()


def _candidate_identities(home: Home) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Each complete candidate's GGUF identity and manifest, by candidate name."""
    out = {}
    for folder in sorted(home.candidates.glob("*/manifest.json")) if home.candidates.is_dir() else []:
        try:
            manifest = json.loads(folder.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        rel = (manifest.get("gguf") or {}).get("model")
        if rel and (folder.parent / rel).is_file():
            out[folder.parent.name] = (file_identity(folder.parent / rel), manifest)
    return out


def descends_from(rollout_policy: dict[str, Any] | None, served: dict[str, Any], home: Home) -> bool:
    """Whether `rollout_policy` is the served policy, or a candidate of this home trained (round after round)
    from rollouts of it."""
    seen: set[str] = set()
    candidates = _candidate_identities(home)
    current = rollout_policy
    while current is not None:
        if same_policy(current, served):
            return True
        sha = (current.get("model") or {}).get("sha256")
        parent = next((m for name, (ident, m) in candidates.items() if sha and ident["sha256"] == sha
                       and name not in seen and not seen.add(name)), None)
        current = (parent.get("rollouts") or {}).get("policy") if parent else None
    return False


def latest_task_eval(home: Home, name: str) -> dict[str, Any] | None:
    path = home.candidates / name / "evals.jsonl"
    if not path.is_file():
        return None
    evals = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    tasks = [e for e in evals if e.get("suite") == "tasks"]
    return tasks[-1] if tasks else None


def rollout_gate(home: Home, name: str, manifest: dict[str, Any], force: bool) -> list[str]:
    """Refuse (UserError) a candidate trained on rollouts of another policy than the served one, or one no
    candidate-eval on tasks put above its base; with `force`, the reasons it would have been refused."""
    from conway.config import load_config

    rollouts = manifest.get("rollouts")
    if not rollouts:
        return []
    served = policy_identity(load_config(home.config, []))
    reasons = []
    if not descends_from(rollouts.get("policy"), served, home):
        reasons.append(f"it was trained on rollouts of another policy ({_describe(rollouts.get('policy'))}) than "
                       f"the one this home serves ({_describe(served)}): its rewards say nothing about replacing it")
    latest = latest_task_eval(home, name)
    if latest is None:
        reasons.append("no candidate-eval on held-out tasks (`conway candidate-eval NAME --suite tasks --tasks "
                       "SUITE`) measured it")
    elif not latest.get("intervals_separated"):
        reasons.append(f"its latest candidate-eval on tasks ({latest.get('report')}) did not put it above its "
                       "base with separated intervals")
    if reasons and not force:
        raise UserError(f"candidate {name!r} is not promoted: " + "; ".join(reasons) + " (--force promotes it "
                        "anyway)")
    return reasons
