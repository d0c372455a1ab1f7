"""`conway rollouts SUITE --samples K --output DIR`: each task K times, sampling on, each on its own disposable desktop.

A rollout set is the material the reward-driven training stages read (`training/rollout_data.py`,
`training/grpo.py`). Per rollout it keeps:

* the task's session, exactly as `conway tasks run` runs one (`conway.evals.tasks_run.TasksSuite`: a fresh
  disposable desktop, the task's setup, the real loop, the task's own checker);
* the sampling seed (`seed + samples * task's index + sample`: every rollout of a set its own) and temperature
  the policy decided with (sent with every request);
* every request the policy sent, as it sent it (`requests.jsonl` beside the rollout's home: the messages with
  each image written out as a file next to it and named by its sha256, and the model's raw answer; for the
  mock, `--mock` or `--mock-scripts DIR`, each scripted decision as the request the generic family would have
  been sent, marked `stand_in`);
* the checker's score as the reward.

DIR holds `rollouts.json` (a `tasks` report: `conway view`, `conway report` and `conway export --from-report`
read it as any tasks report), `rollouts.tasks/` (the rollouts' homes) and `manifest.json` (`conway-rollouts/1`,
written last): the suite, the policy that rolled out (its identity: the model file's size and hash, or the
endpoint and model id), K, the seeds, each rollout's reward and files, and per task its K rewards and whether
they differ at all (a group whose rewards are all equal carries no signal for a group-relative update).

Like every suite it runs serially or in a worker pool (`--workers N`, `--ray ADDRESS`): each worker rolls
out one task at a time on its own desktop; the seed of a rollout depends on (task, sample) only, never on the
worker, so a pooled run gives the same rewards per (task, seed) as a serial one.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable

from conway.config import ConwayConfig
from conway.errors import UserError
from conway.evals.pool import Pool
from conway.evals.tasks_run import TaskCase, TasksSuite, plan_cases
from conway.protocols import Policy
from conway.store.home import Home

FORMAT = "conway-rollouts/1"
MANIFEST = "manifest.json"
REPORT = "rollouts.json"
REQUESTS = "requests.jsonl"
DATA_URL = re.compile(r"^data:(image/[a-z]+);base64,(.*)$", re.S)
SUFFIX = {"image/png": ".png", "image/jpeg": ".jpg", "image/jpg": ".jpg", "image/webp": ".webp"}


@dataclass
class RolloutCase(TaskCase):
    """One rollout: a task, which of its K samples this is, and the seed it is sampled with."""

    sample: int = 0
    seed: int = 0


# --- what the policy was asked -----------------------------------------------------------------


MOCK_REQUEST = ("the mock policy: no model was asked; the messages are those Conway's own layout (the generic "
                "family's) would have sent for this decision")
"""What a mock rollout's request says it is (a stand-in, named as such)."""


class RequestLog:
    """Wraps a model policy's backend for one rollout: every request's messages and answer, kept in memory.

    A scripted (mock) policy has no backend and sends no request: each of its decisions is kept as the request
    the generic family would have sent for it (Conway's own layout, the screenshot as sent), with the script's
    answer, marked `stand_in`; so a mock rollout set has the shape the training stages read, offline."""

    def __init__(self, policy: Policy, seed: int, temperature: float) -> None:
        from conway.policies.mock import MockPolicy

        self.entries: list[dict[str, Any]] = []
        self.backend = getattr(policy, "backend", None)
        settings = getattr(policy, "settings", None)
        self._saved = None
        self._mock: MockPolicy | None = None
        self.stand_in = isinstance(policy, MockPolicy)
        """The mock decides: its decisions are kept as stand-in requests."""
        if self.stand_in:
            self._keep_mock(policy, seed, temperature)
            return
        if self.backend is None or settings is None:
            return
        self._saved = (settings, settings.seed, settings.temperature)
        settings.seed, settings.temperature = seed, temperature
        inner = self.backend.complete

        def complete(messages: list[dict[str, Any]], **kw: Any) -> Any:
            result = inner(messages, **kw)
            self.entries.append({"messages": messages, "answer": getattr(result, "text", None),
                                 "seed": kw.get("seed"), "temperature": kw.get("temperature"),
                                 "max_tokens": kw.get("max_tokens"), "mode": kw.get("mode"), "t": time.time()})
            return result

        self.backend.complete = complete  # this worker's policy, one rollout at a time

    @property
    def recording(self) -> bool:
        """Whether this rollout's requests are kept (a model's backend, or the mock's stand-ins)."""
        return self.backend is not None or self.stand_in

    def _keep_mock(self, policy: Any, seed: int, temperature: float) -> None:
        inner = policy.decide

        def decide(context: Any) -> Any:
            decision = inner(context)
            self.entries.append({**_stand_in_request(context), "answer": decision.raw_text, "seed": seed,
                                 "temperature": temperature, "max_tokens": None, "mode": None, "t": time.time(),
                                 "stand_in": MOCK_REQUEST})
            return decision

        policy.decide = decide  # this rollout's own policy (`_policy_for` made it for this task)
        self._mock = policy

    def close(self) -> None:
        if self._mock is not None:
            del self._mock.decide  # the class's method again
            self._mock = None
        if self._saved is not None:
            settings, seed, temperature = self._saved
            settings.seed, settings.temperature = seed, temperature
            del self.backend.complete  # the class's method again
            self._saved = None

    def write(self, folder: Path) -> int:
        """`folder/requests.jsonl` and `folder/images/<sha256>.<ext>`; returns the number of requests."""
        images = folder / "images"
        with open(folder / REQUESTS, "w", encoding="utf-8") as fh:
            for i, entry in enumerate(self.entries):
                messages = entry["messages"]
                fh.write(json.dumps({"index": i, **entry, "messages": None if messages is None else
                                     [externalise(m, images) for m in messages]}) + "\n")
        return len(self.entries)


def _stand_in_request(context: Any) -> dict[str, Any]:
    """{"messages"}: what the generic family would have been sent for this decision, its screenshot inline (as a
    request carries it; `externalise` writes it out); {"messages": None, "error"} when it cannot be laid out."""
    from conway.experience.conversation import IMAGE_MARKER, policy_messages

    try:
        messages, image = policy_messages(context, "generic")
    except Exception as exc:  # a stand-in's record never breaks the rollout
        return {"messages": None, "error": f"{type(exc).__name__}: {' '.join(str(exc).split())}"}
    url = image.data_url()

    def placed(message: dict[str, Any]) -> dict[str, Any]:
        content = message.get("content")
        if not isinstance(content, list):
            return message
        return {**message, "content": [
            {**part, "image_url": {**part["image_url"], "url": url}}
            if isinstance(part, dict) and (part.get("image_url") or {}).get("url") == IMAGE_MARKER else part
            for part in content]}

    return {"messages": [placed(m) for m in messages]}


def externalise(message: dict[str, Any], images: Path) -> dict[str, Any]:
    """A message with each inline image written to `images/` and named there (path relative to the rollout
    folder, sha256 and media type kept)."""
    content = message.get("content")
    if not isinstance(content, list):
        return dict(message)
    parts = []
    for part in content:
        url = ((part.get("image_url") or {}).get("url") if isinstance(part, dict) else None) or ""
        m = DATA_URL.match(url)
        if not m:
            parts.append(part)
            continue
        data = base64.b64decode(m.group(2))
        digest = hashlib.sha256(data).hexdigest()
        images.mkdir(parents=True, exist_ok=True)
        name = f"{digest}{SUFFIX.get(m.group(1), '.bin')}"
        if not (images / name).exists():
            (images / name).write_bytes(data)
        parts.append({"type": "image_url", "image_url": {"url": f"images/{name}"}, "sha256": digest,
                      "media_type": m.group(1)})
    return {**message, "content": parts}


# --- the suite ---------------------------------------------------------------------------------


@dataclass
class RolloutSuite(TasksSuite):
    """`TasksSuite` with sampling: each case a (task, sample, seed); the requests kept; the score as reward."""

    temperature: float = 1.0

    def run_case(self, policy: Policy, case: RolloutCase) -> dict[str, Any]:  # type: ignore[override]
        self._case, self._log = case, None
        try:
            record = super().run_case(policy, case)
        finally:
            log, self._log = self._log, None
            if log is not None:
                log.close()
        record.update(sample=case.sample, seed=case.seed, temperature=self.temperature)
        score = record.get("score")
        record["reward"] = float(score) if record.get("outcome") in ("pass", "fail") else None
        if log is not None and log.recording and isinstance(record.get("home"), str):
            folder = (self.report_dir / record["home"]).parent
            record["requests"] = {"path": str(Path(record["home"]).parent / REQUESTS),
                                  "count": log.write(folder)}
        return record

    def verdict(self, records: list[dict[str, Any]], summary: dict[str, Any]) -> tuple[int, str]:
        """What `conway rollouts` exits with, in the report too: a rollout set is made when rollouts were scored,
        whatever their rewards (a failed task is a reward of 0, not a failed command)."""
        from conway.errors import ExitCode

        _, status = super().verdict(records, summary)  # it adds the outcome's wording to the summary
        if any(r.get("reward") is not None for r in records):
            return ExitCode.PASSED, "scored"
        return ExitCode.NOT_PASSED, "nothing ran" if status == "nothing ran" else "none scored"

    def _policy_for(self, task_id: str, policy: Policy) -> Policy:
        """The task's policy (a mock is made afresh per task, from its own script with --mock-scripts), its
        requests logged from here on: the log wraps the policy that decides, not the one handed in."""
        chosen = super()._policy_for(task_id, policy)
        self._log = RequestLog(chosen, self._case.seed, self.temperature)
        return chosen


def rollout_cases(cases: list[TaskCase], samples: int, seed: int) -> list[RolloutCase]:
    """Each task's K rollouts, task by task, each with its own seed: seed + K * (the task's index) + sample (the
    same for every run). Why not seed + sample for every task: the k-th sample of every task then draws the same
    random numbers, and a small model whose answers differ little between tasks made the same choice in all of
    them (a set of 16 tasks x 8 held 8 independent draws, not 128: docs/learning.md)."""
    out: list[RolloutCase] = []
    for i, case in enumerate(cases):
        for k in range(samples):
            out.append(RolloutCase(len(out), task=case.task, problem=case.problem, reasons=list(case.reasons),
                                   sample=k, seed=seed + samples * i + k))
    return out


# --- the policy's identity ------------------------------------------------------------------------


def file_identity(path: Path) -> dict[str, Any]:
    """Size and sha256 of a model file (the whole file up to 64 MiB; beyond that its first and last 16 MiB)."""
    size = path.stat().st_size
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        if size <= 64 << 20:
            h.update(fh.read())
            how = "sha256"
        else:
            h.update(fh.read(16 << 20))
            fh.seek(size - (16 << 20))
            h.update(fh.read())
            how = "sha256 of the first and last 16 MiB"
    return {"path": str(path), "size": size, "sha256": h.hexdigest(), "hash": how}


def policy_identity(config: ConwayConfig, mock_scripts: Path | None = None) -> dict[str, Any]:
    """What names the policy that rolled out: its kind, and its model file's hash, or its endpoint and model id
    (the mock: its script, or its folder of scripts per task)."""
    pol = config.policy
    out: dict[str, Any] = {"kind": pol.kind}
    if pol.kind == "mock":
        out["mock_script"] = pol.mock_script
        if mock_scripts is not None:
            out["mock_scripts"] = str(mock_scripts)
        return out
    if pol.model_path:
        path = Path(pol.model_path).expanduser()
        out["model"] = file_identity(path) if path.is_file() else {"path": str(path)}
    else:
        out.update(endpoint=pol.endpoint, model_id=pol.model)
    return out


def same_policy(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Whether two identities name the same policy (a model file by its hash, else endpoint + model id)."""
    if not a or not b or a.get("kind") != b.get("kind"):
        return False
    ma, mb = a.get("model") or {}, b.get("model") or {}
    if ma.get("sha256") or mb.get("sha256"):
        return bool(ma.get("sha256")) and ma.get("sha256") == mb.get("sha256")
    keys = ("mock_script", "mock_scripts", "endpoint", "model_id")
    return all(a.get(k) == b.get(k) for k in keys) and ma.get("path") == mb.get("path")


# --- the manifest -----------------------------------------------------------------------------------


def groups(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per task: its rollouts' rewards (by sample), their mean, and whether they differ (signal)."""
    out: dict[str, dict[str, Any]] = {}
    for r in sorted(records, key=lambda r: (str(r.get("task")), r.get("sample", 0))):
        g = out.setdefault(str(r.get("task")), {"rewards": [], "seeds": []})
        g["rewards"].append(r.get("reward"))
        g["seeds"].append(r.get("seed"))
    for g in out.values():
        scored = [x for x in g["rewards"] if x is not None]
        g["mean_reward"] = round(sum(scored) / len(scored), 4) if scored else None
        g["signal"] = len(set(scored)) > 1
    return out


def build_manifest(records: list[dict[str, Any]], *, suite: Any, samples: int, seed: int, temperature: float,
                   policy: dict[str, Any], summary: dict[str, Any]) -> dict[str, Any]:
    by_task = groups(records)
    scored = [r["reward"] for r in records if r.get("reward") is not None]
    signal = any(g["signal"] for g in by_task.values())
    return {
        "format": FORMAT, "created": time.time(), "suite": suite, "samples": samples, "seed": seed,
        "seeds": "seed + samples * task index + sample", "temperature": temperature, "policy": policy,
        "report": REPORT,
        "rollouts": [{k: r.get(k) for k in ("task", "sample", "seed", "reward", "outcome", "session", "home",
                                            "requests", "error")} for r in records],
        "tasks": by_task, "scored": len(scored),
        "mean_reward": round(sum(scored) / len(scored), 4) if scored else None,
        "signal": signal,
        "no_signal": None if signal else ("no signal: every task's rollouts got the same reward; a group-relative "
                                          "update has nothing to learn from"),
        "summary": {k: summary.get(k) for k in ("tasks", "scored", "passed", "failed", "errors", "not_runnable",
                                                 "malformed", "timed_out", "interrupted")},
    }


def load_rollouts(folder: str | Path) -> dict[str, Any]:
    """A rollout set's manifest (UserError when the folder is not a complete rollout set)."""
    path = Path(folder).expanduser() / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path.parent} is not a rollout set (no {MANIFEST}; `conway rollouts` writes it last, so "
                        "an unfinished run has none)") from None
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read {path}: {exc}") from None
    if data.get("format") != FORMAT:
        raise UserError(f"{path} is not a {FORMAT} manifest (format {data.get('format')!r})")
    return data


# --- the command -------------------------------------------------------------------------------------


def check_rollout_args(samples: int, temperature: float) -> None:
    if samples < 1:
        raise UserError(f"--samples must be at least 1 (got {samples})")
    if not 0 <= temperature <= 2:
        raise UserError(f"--temperature must be within 0..2 (got {temperature:g})")
    if temperature == 0 and samples > 1:
        raise UserError("--temperature 0 samples the same answer K times: give a temperature above 0 "
                        "(default 1.0) or --samples 1")


def parse_screen(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)x(\d+)", text.strip())
    if not m or not (28 <= int(m.group(1)) <= 8192 and 28 <= int(m.group(2)) <= 8192):
        raise UserError(f"--screen must look like WIDTHxHEIGHT, each 28-8192 pixels (got {text!r})")
    return int(m.group(1)), int(m.group(2))


def runnable_cases(suite_source: str | list[str], cache: Path | None, desktop: str = "local") -> list[TaskCase]:
    """The suite's cases on the `desktop` provider's desktops; a UserError, one line, when none can run there."""
    from conway.tasks.task import load_suite

    cases = plan_cases(load_suite(suite_source), cache, desktop=desktop)
    runnable = [c for c in cases if c.task is not None and not c.reasons]
    if not runnable:
        reasons = sorted({r for c in cases for r in c.reasons} | {c.problem.reason for c in cases if c.problem})
        raise UserError(f"suite {suite_source} has no task that can run here ({len(cases)} file(s)"
                        + (f"; e.g. {reasons[0]}" if reasons else "") + "; `conway tasks list` says why)")
    return runnable


def rollouts(home: Home, config: ConwayConfig, suite_source: str | list[str], *, output: str, samples: int,
             seed: int = 0, temperature: float = 1.0, cache: str | None = None, mock_scripts: str | None = None,
             max_steps: int | None = None,
             max_seconds: float | None = None, quiet: bool = False, argv: list[str] | None = None,
             policy: Policy | None = None, say: Callable[[str], None] | None = None, pool: Pool | None = None,
             prices: dict[str, float] | None = None, reference: dict[str, int] | None = None,
             then: Callable[[Path], Any] | None = None, **limits: Any) -> int:
    """Run the rollouts and write DIR/rollouts.json, DIR/rollouts.tasks/ and DIR/manifest.json (last).

    `prices` (per million tokens in and out) and `reference` (steps per task) go into the figures
    (`conway.evals.best_of_n`): pass@1, pass@k and what each rollout cost, in the report and the manifest.
    `then`: called with DIR once the set is written (the command line's `--judge`: `conway judge` over it)."""
    from conway.evals.best_of_n import figures
    from conway.evals.report import Report
    from conway.evals.runner import run_suite, suite_policy
    from conway.evals.tasks_run import _check_folder, _check_limits, _extra
    from conway.session.app import console_say

    say = say or console_say
    check_rollout_args(samples, temperature)
    _check_limits(max_steps, max_seconds, limits.get("task_timeout_s"))
    cache_dir = _check_folder(cache, "--cache")
    scripts = _check_folder(mock_scripts, "--mock-scripts")
    from conway.desktops import check_settings

    check_settings(config.tasks)  # a provider that cannot work as configured is said before any rollout
    cases = rollout_cases(runnable_cases(suite_source, cache_dir, config.tasks.desktop), samples, seed)
    out_dir, report_path, folder = new_set(output, suite_source)
    runner = RolloutSuite(config, folder, out_dir, len(cases), cache=cache_dir, mock_scripts=scripts,
                          max_steps=max_steps, max_seconds=max_seconds, quiet=quiet, say=say,
                          temperature=temperature, **limits)
    identity = policy_identity(config, scripts)
    report = Report("tasks", report_path, argv=argv, config=config, seed=seed, expected_cases=len(cases),
                    parameters={"suite": suite_source, "rollouts": {"samples": samples, "seed": seed,
                                                                    "temperature": temperature},
                                "cache": str(cache_dir) if cache_dir else None,
                                "mock_scripts": str(scripts) if scripts else None, "max_steps": max_steps,
                                "max_seconds": max_seconds, "tasks_folder": folder.name, "prices": prices,
                                "reference_steps": len(reference) if reference else None})
    figures_of = partial(figures, prices=prices, reference=reference, max_steps=max_steps)
    if not quiet:
        say(f"rollouts: {len(cases) // samples} task(s) x {samples} sample(s), temperature {temperature:g}, "
            f"seeds {seed}..{seed + len(cases) - 1}; into {out_dir}")
    with suite_policy(config, home, policy, pool) as pol:
        result = run_suite(runner, pol, cases, report, progress=False, pool=pool,
                           extra=lambda res: {**_extra(runner, cases, res.records), "rollouts": {
                               "samples": samples, "seed": seed, "temperature": temperature,
                               "tasks": groups(res.records), "figures": figures_of(res.records)}})
    if result.summary.get("interrupted"):  # a partial set is no rollout set: no manifest, nothing trains on it
        say(f"rollouts: {result.summary['interrupted']}; no manifest written ({out_dir} is not a rollout set)")
        return int(result.code)
    manifest = build_manifest(result.records, suite=suite_source, samples=samples, seed=seed,
                              temperature=temperature, policy=identity, summary=result.summary)
    manifest["figures"] = figures_of(result.records)
    manifest["scoring"] = {"prices": prices, "reference": reference, "max_steps": max_steps}  # the judge's figures
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    say_rollouts(manifest, out_dir, say)
    if then is not None:  # Best of N: the set's narratives and a pick per task (DIR/judged.json)
        then(out_dir)
    return 0 if manifest["scored"] else 2


def new_set(output: str, suite_source: str | list[str]) -> tuple[Path, Path, Path]:
    """(DIR, its report, its tasks folder), made; DIR must be new and lie outside the suite."""
    from conway.evals.tasks_run import _check_outside, tasks_folder

    out_dir = Path(output).expanduser().resolve()
    if out_dir.exists():
        raise UserError(f"{out_dir} already exists; a rollout set goes into a new folder")
    report_path = out_dir / REPORT
    _check_outside(report_path, suite_source)
    out_dir.mkdir(parents=True)
    folder = tasks_folder(report_path)
    folder.mkdir()
    return out_dir, report_path, folder


def say_rollouts(manifest: dict[str, Any], out_dir: Path, say: Callable[[str], None]) -> None:
    for task, g in manifest["tasks"].items():
        rewards = " ".join("-" if x is None else f"{x:g}" for x in g["rewards"])
        say(f"  {task}: rewards {rewards}" + ("" if g["signal"] else "  (all equal)"))
    overall = (manifest.get("figures") or {}).get("overall") or {}
    for key, what in (("pass1", "pass@1"), ("passk", "pass@k")):
        r = overall.get(key)
        if r and r.get("n"):
            say(f"rollouts: {what} {r['hits']}/{r['n']} = {r['rate']:.1%} (95% CI {r['ci95'][0]:.0%}–{r['ci95'][1]:.0%})")
    mean = manifest["mean_reward"]
    say(f"rollouts: {manifest['scored']} scored, mean reward {mean:.3f}" if mean is not None
        else "rollouts: no rollout was scored")
    if manifest["no_signal"]:
        say(f"rollouts: {manifest['no_signal']}")
    say(f"manifest: {out_dir / MANIFEST}   (conway view {out_dir / REPORT})")
