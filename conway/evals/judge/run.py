"""`conway judge DIR`: Agent S3's behaviour Best-of-N over a rollout set: a narrative per rollout, a judge per task.

For each task of the rollout set (`conway rollouts`' DIR), one case:

1. each rollout's narrative: a fact per step, asked of the judge's model with Agent S3's narrator request
   (`conway.evals.judge.agent_s3`) over the rollout's own screenshots and actions
   (`conway.evals.judge.trajectory`); kept beside the rollout (`narrative.jsonl`) and reused by a later run
   with the same model, so a stopped judge does not ask again;
2. the comparison: Agent S3's judge request over the task's N narratives (first and last screenshots, facts),
   the model's answer naming one rollout by its index; the pick, its reason and the judge's spend are the case.

The judge is any model Conway can talk to (the acting one, or another: `conway judge DIR policy.endpoint=URL`
or a preset), asked at temperature 0 as S3 asks. The report (`DIR/judged.json`, kind `best-of-n`) holds per
task the pick, and the figures of `conway.evals.best_of_n` with the picks: pass@1, pass@k, best-of-N, the
judge's agreement with the checker, each with its Wilson interval, and the cost of a success, the judge's
spend included. Every request is kept as sent (`DIR/judged.requests/<task>/requests.jsonl` beside the report,
images as files).

Like every suite it runs serially or in a worker pool (`--workers N`, `--ray ADDRESS`), and `--resume` a
partial report keeps its finished tasks.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from conway.config import ConwayConfig
from conway.errors import ExitCode, UserError
from conway.evals import best_of_n
from conway.evals.judge import agent_s3
from conway.evals.judge.trajectory import read_trajectory
from conway.protocols import Policy
from conway.store.home import Home

KIND = "best-of-n"
REPORT = "judged.json"
NARRATIVE = "narrative.jsonl"
JUDGE_DIR = "judge"
"""Where a suite built without a report keeps its requests."""


@dataclass
class JudgeSuite:
    """The runner's `CaseSuite`: one task's rollouts narrated and compared per case."""

    report_dir: Path
    """The rollout set's folder (its rollouts' homes are named relative to it)."""
    rollouts: list[dict[str, Any]] | None = None
    """The set's rollout records and how they are scored (`judged_figures`): the summary's figures."""
    scoring: dict[str, Any] | None = None
    grammar: bool = False
    """`--grammar`: the judge's answer held to S3's tags and an index by a grammar (a named deviation: S3 asks in
    words only; for a model too small to follow them, such as the tiny test VLM)."""
    max_tokens: int | None = None
    """`--max-tokens`: a reply bound S3 does not send (a named deviation, for a model whose context is small)."""
    requests_dir: Path | None = None
    """Where each task's requests are kept (`<report>.requests/<task>/`; default DIR/judge/)."""
    quiet: bool = False
    say: Callable[[str], None] = print
    total: int = 0
    kind = KIND

    def run_case(self, policy: Policy, case: dict[str, Any]) -> dict[str, Any]:
        record: dict[str, Any] = {"index": case["index"], "task": case["task"], "instruction": case.get("instruction"),
                                  "samples": [r.get("sample") for r in case["rollouts"]]}
        started = time.monotonic()
        spend = _Spend()
        try:
            backend = getattr(policy, "backend", None)
            if backend is None:
                raise UserError("the judge needs a model (a policy with an endpoint or a model file), not the mock")
            log = _Requests((self.requests_dir or self.report_dir / JUDGE_DIR) / _safe(case["task"]))
            narratives = [self._narrative(backend, r, spend, log) for r in case["rollouts"]]
            messages = agent_s3.judge_request(case.get("instruction") or "", [
                {"initial": n["initial"], "final": n["final"], "facts": n["facts"]} for n in narratives])
            result = _complete(backend, messages, None if self.grammar else self.max_tokens,  # the grammar bounds it
                               choice_grammar(len(narratives)) if self.grammar else None)
            spend.add(result)
            log.add(messages, result.text)
            index, answer, thoughts = agent_s3.choice(result.text, len(narratives))
            record.update(pick=case["rollouts"][index - 1].get("sample") if index else None, answer=answer,
                          reason=thoughts, judge_model=result.model or backend.model_id,
                          narratives=[{"sample": r.get("sample"), "facts": n["facts"], "problem": n["problem"]}
                                      for r, n in zip(case["rollouts"], narratives)],
                          deviations=sorted({d for n in narratives for d in n["deviations"]}
                                            | ({max_tokens_deviation(self.max_tokens)} if self.max_tokens else set())
                                            | ({GRAMMAR_DEVIATION} if self.grammar else set())),
                          requests=str(log.write()))
            if index is None:
                record["error"] = f"the judge's answer names no rollout 1..{len(narratives)}: {answer[:120]!r}"
        except Exception as exc:  # one task's failure is its own line; the others are judged
            record.setdefault("pick", None)
            record["error"] = str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
            if "n_ctx" in str(exc) or "llama_decode" in str(exc):  # S3's unbounded requests outgrew the context
                record["error"] += ("; the judge's context is too small for these requests: a model with a larger "
                                    "one, or --max-tokens N (and --grammar), each a named deviation")
        record.update(rollouts=[self._side(r, record.get("pick")) for r in case["rollouts"]])
        record["images"] = [x["image"] for x in record["rollouts"] if x.get("image")]
        record["outcome"] = judged_outcome(record)
        record["judge_cost"] = {**spend.record(), "harness_s": round(max(0.0, time.monotonic() - started
                                                                           - spend.model_s), 3)}
        if not self.quiet:
            self.say(f"[{case['index'] + 1}/{self.total}] {case['task']}: "
                     + (f"picked sample {record['pick']}" if record.get("pick") is not None else "no pick")
                     + (f" — {record['error']}" if record.get("error") else ""))
        return record

    def _base(self, rollout: dict[str, Any]) -> Path:
        """The folder the rollout's files are named from: its own set's, when several sets are judged together."""
        return Path(rollout["base"]) if rollout.get("base") else self.report_dir

    def _side(self, rollout: dict[str, Any], pick: Any) -> dict[str, Any]:
        """A rollout as the judge's card shows it beside the others: its outcome, its last screen, its session."""
        image = rollout.get("image") if isinstance(rollout.get("image"), dict) else {}
        path = image.get("path")
        label = (f"sample {rollout.get('sample')}"
                 + (f" ({rollout['set']}, its sample {rollout.get('set_sample')})" if rollout.get("set") else "")
                 + f" · {rollout.get('outcome')}"
                 + (" · the judge's pick" if pick is not None and rollout.get("sample") == pick else ""))
        return {"sample": rollout.get("sample"), "outcome": rollout.get("outcome"), "steps": rollout.get("steps"),
                "picked": pick is not None and rollout.get("sample") == pick, "view": rollout.get("view"),
                "set": rollout.get("set"), "policy": rollout.get("policy"),
                "image": {"path": str(self._base(rollout) / path), "size": image.get("size"), "label": label}
                if path else None}

    def _narrative(self, backend: Any, rollout: dict[str, Any], spend: _Spend, log: _Requests) -> dict[str, Any]:
        """The rollout's facts (asked, or read back from an earlier run with the same model) and its first and
        last screenshots."""
        traj = read_trajectory(self._base(rollout), rollout)
        out: dict[str, Any] = {"initial": _read(traj.initial), "final": _read(traj.final), "facts": [],
                               "problem": traj.problem, "deviations": set()}
        if traj.problem or not traj.codes:
            return out
        kept = self._base(rollout) / Path(str(rollout["home"])).parent / NARRATIVE
        model = backend.model_id
        cached = _cached(kept, model, traj.codes, self.max_tokens)
        lines = []
        for i, code in enumerate(traj.codes):
            if cached is not None:
                fact = cached[i]
            else:
                messages, deviation = agent_s3.narration_request(traj.screenshots[i].read_bytes(),
                                                                 traj.screenshots[i + 1].read_bytes(), code)
                text = None
                if messages is not None:
                    result = _complete(backend, messages, self.max_tokens)
                    spend.add(result)
                    log.add(messages, result.text)
                    text = result.text
                fact = {**agent_s3.fact(i + 1, code, text), "code": code,
                        "deviation": deviation}
            if fact.get("deviation"):
                out["deviations"].add(fact["deviation"])
            out["facts"].append(fact["fact_answer"])
            lines.append(json.dumps({**fact, "model": model, "max_tokens": self.max_tokens, "screenshot_num": i + 1}))
        if cached is None:
            kept.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return out

    # -- the runner's CaseSuite ------------------------------------------------------------------------------

    def summarize(self, records: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
        out = {"tasks": len(records), "picked": sum(1 for r in records if r.get("pick") is not None),
               "errors": sum(1 for r in records if r.get("error")), "wall_s": round(wall_s, 3)}
        if self.rollouts is not None:  # pass@1, pass@k, best_of_n, agreement, cost: where a sweep finds its rate
            out.update(judged_figures(self.rollouts, records, self.scoring or {})["overall"])
        return out

    def verdict(self, records: list[dict[str, Any]], summary: dict[str, Any]) -> tuple[int, str]:
        if records and summary["picked"] == len(records):
            return ExitCode.PASSED, "pass"
        return ExitCode.NOT_PASSED, "fail"


class _Spend:
    def __init__(self) -> None:
        self.tokens_in = self.tokens_out = self.requests = 0
        self.model_s = 0.0

    def add(self, result: Any) -> None:
        usage = getattr(result, "usage", None) or {}
        self.tokens_in += int(usage.get("prompt_tokens") or 0)
        self.tokens_out += int(usage.get("completion_tokens") or 0)
        self.model_s += float(getattr(result, "latency_s", 0.0) or 0.0)
        self.requests += 1

    def record(self) -> dict[str, Any]:
        return {"tokens_in": self.tokens_in, "tokens_out": self.tokens_out, "model_s": round(self.model_s, 3),
                "steps": 0, "requests": self.requests}


class _Requests:
    """Every request the judge sent for one task, as sent (images written out, as a rollout's are)."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.entries = folder, []

    def add(self, messages: list[dict[str, Any]], answer: str | None) -> None:
        self.entries.append({"messages": messages, "answer": answer, "temperature": 0.0})

    def write(self) -> Path:
        from conway.evals.rollouts import externalise

        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / "requests.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for i, e in enumerate(self.entries):
                fh.write(json.dumps({"index": i, **e, "messages": [externalise(m, self.folder / "images")
                                                                   for m in e["messages"]]}) + "\n")
        return path


JUDGED_OUTCOMES = ("error", "missed", "none-passed", "best")
"""A judged task, in the viewer's filter order: no pick, a failing pick where a passing rollout existed, no rollout
passed (nothing to pick), the pick passed."""


def judged_outcome(record: dict[str, Any]) -> str:
    if record.get("pick") is None:
        return "error"
    sides = record.get("rollouts") or []
    if any(s.get("picked") and s.get("outcome") == "pass" for s in sides):
        return "best"
    return "missed" if any(s.get("outcome") == "pass" for s in sides) else "none-passed"


def max_tokens_deviation(n: int) -> str:
    return f"max_tokens {n} sent with every request (--max-tokens; S3 sends none)"


GRAMMAR_DEVIATION = "the judge's answer held to <thoughts>…</thoughts><answer>N</answer> by a grammar (--grammar)"


def choice_grammar(n: int) -> str:
    """GBNF for S3's judge answer: thoughts (printable ASCII but '<', at most 24 characters: a bounded reply
    still closes its tags), then an index 1..n (n below 10, else any number)."""
    index = " | ".join(f'"{i}"' for i in range(1, n + 1)) if n < 10 else "[1-9] [0-9]*"
    return f'root ::= "<thoughts>" [ -;=-~]{{0,24}} "</thoughts>\\n<answer>" ({index}) "</answer>"'


def _complete(backend: Any, messages: list[dict[str, Any]], max_tokens: int | None = None,
              grammar: str | None = None) -> Any:
    """One request as S3 sends it: the messages, temperature 0, nothing else (no max_tokens unless --max-tokens
    asks for one, no grammar unless --grammar, no seed)."""
    from conway.policies.backends.backend import StructuredSpec

    if grammar is not None:
        return backend.complete(messages, mode="grammar", spec=StructuredSpec(grammar=grammar),
                                max_tokens=max_tokens, temperature=0.0, seed=None)
    return backend.complete(messages, mode="none", spec=StructuredSpec(), max_tokens=max_tokens, temperature=0.0,
                            seed=None)


def _cached(path: Path, model: str | None, codes: list[str], max_tokens: int | None) -> list[dict[str, Any]] | None:
    """The facts of an earlier run, when it asked the same model the same way about the same actions."""
    try:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError):
        return None
    if [r.get("code") for r in rows] != codes or any(r.get("model") != model or r.get("max_tokens") != max_tokens
                                                     for r in rows):
        return None
    return rows


def _read(path: Path | None) -> bytes | None:
    return path.read_bytes() if path is not None and path.is_file() else None


def _safe(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:80] or "task"


# --- the cases and the figures ------------------------------------------------------------------------------------


def judge_cases(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One case per task, its rollouts in sample order; a task with fewer than two rollouts has nothing to choose
    from and is still judged (its one rollout is the pick unless the judge names none)."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    instruction: dict[str, str] = {}
    for r in records:
        by_task.setdefault(str(r.get("task")), []).append(r)
        instruction.setdefault(str(r.get("task")), r.get("instruction") or "")
    return [{"index": i, "task": t, "instruction": instruction[t],
             "rollouts": sorted(rs, key=lambda r: r.get("sample") or 0)}
            for i, (t, rs) in enumerate(by_task.items())]


def judged_figures(rollouts: list[dict[str, Any]], judged: list[dict[str, Any]],
                   scoring: dict[str, Any]) -> dict[str, Any]:
    picks = {str(r["task"]): r.get("pick") for r in judged if "task" in r}
    costs = {str(r["task"]): r["judge_cost"] for r in judged if r.get("judge_cost")}
    return best_of_n.figures(rollouts, picks, prices=scoring.get("prices"), reference=scoring.get("reference"),
                             max_steps=scoring.get("max_steps"),
                             judge_costs={t: {k: v for k, v in c.items() if k != "requests"} for t, c in costs.items()})


def load_sets(folders: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    """(every rollout, the first set's manifest, each set's name, folder and policy) of one or more rollout sets.

    Several sets (mixed agents: the same tasks rolled out by several presets, as Agent S3 mixes models) are
    judged together: a task's rollouts are every set's, renumbered 0..N-1 in set order (`set`, `set_sample`,
    `policy` and `base`, the set's folder, say where each came from)."""
    from conway.evals.report import load_report
    from conway.evals.rollouts import load_rollouts

    out: list[dict[str, Any]] = []
    sets, first = [], None
    for n, folder in enumerate(folders):
        root = Path(folder).expanduser().resolve()
        manifest = load_rollouts(root)
        first = first or manifest
        _, records = load_report(root / manifest.get("report", "rollouts.json"))
        name = f"set {n + 1}: {root.name}"
        sets.append({"name": name, "folder": str(root), "policy": manifest.get("policy")})
        for r in records:
            out.append({**r, "base": str(root)} if len(folders) == 1 else
                       {**r, "base": str(root), "set": name, "set_sample": r.get("sample"),
                        "policy": manifest.get("policy")})
    if len(folders) > 1:
        count: dict[str, int] = {}
        for r in sorted(out, key=lambda r: (folders.index(_folder_of(r, sets)), r.get("sample") or 0)):
            r["sample"] = count.setdefault(str(r.get("task")), 0)
            count[str(r.get("task"))] += 1
    assert first is not None
    return out, first, sets


def _folder_of(record: dict[str, Any], sets: list[dict[str, Any]]) -> str:
    return next(str(s["folder"]) for s in sets if s["folder"] == record["base"])


def by_set(rollouts: list[dict[str, Any]], judged: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per set of mixed agents: its rollouts' pass@1 and how many of the judge's picks were its rollouts."""
    from conway.evals.stats import rate_record

    picked = {(str(r.get("task")), r.get("pick")) for r in judged if r.get("pick") is not None}
    out: dict[str, dict[str, Any]] = {}
    for r in rollouts:
        s = out.setdefault(str(r.get("set")), {"policy": r.get("policy"), "scored": 0, "passed": 0, "picked": 0,
                                               "picked_passed": 0})
        scored = r.get("outcome") in best_of_n.SCORED
        s["scored"] += scored
        s["passed"] += r.get("outcome") == "pass"
        if (str(r.get("task")), r.get("sample")) in picked:
            s["picked"] += 1
            s["picked_passed"] += r.get("outcome") == "pass"
    for s in out.values():
        s["pass1"] = rate_record(s["passed"], s["scored"])
    return out


def judge(home: Home, config: ConwayConfig, folder: str | list[str], *, output: str | None = None, quiet: bool = False,
          argv: list[str] | None = None, policy: Policy | None = None, say: Callable[[str], None] | None = None,
          pool: Any = None, resume: str | None = None, prices: dict[str, float] | None = None,
          reference: dict[str, int] | None = None, max_tokens: int | None = None, grammar: bool = False) -> int:
    """The command: judge every task of the rollout set in `folder`, write its `best-of-n` report."""
    from conway.evals.report import Report
    from conway.evals.runner import check_outputs, run_suite, suite_policy
    from conway.session.app import console_say

    say = say or console_say
    folders = [folder] if isinstance(folder, str) else list(folder)
    if len(folders) > 1 and not output:
        raise UserError("several rollout sets are judged together into a report of their own: give --output FILE")
    rollouts, manifest, sets = load_sets(folders)
    root = Path(folders[0]).expanduser().resolve()
    scoring = dict(manifest.get("scoring") or {})
    if prices is not None:
        scoring["prices"] = prices
    if reference is not None:
        scoring["reference"] = reference
    cases = judge_cases(rollouts)
    out, _ = check_outputs(output or str(root / REPORT), home, cases=len(cases))
    if max_tokens is not None and max_tokens < 1:
        raise UserError(f"--max-tokens must be at least 1 (got {max_tokens})")
    suite = JudgeSuite(root, rollouts=rollouts, scoring=scoring, max_tokens=max_tokens, grammar=grammar,
                       requests_dir=out.with_name(out.stem + ".requests"),
                       quiet=quiet, say=say, total=len(cases))
    report = Report(KIND, out, argv=argv, config=config, expected_cases=len(cases), parameters={
        "rollouts": str(root) if len(sets) == 1 else [s["folder"] for s in sets], "samples": manifest.get("samples"),
        "judge": "Agent S3 behaviour Best-of-N "
        "(narrator + comparative judge)", "prices": scoring.get("prices"),
        "reference_steps": len(scoring["reference"]) if scoring.get("reference") else None,
        "max_tokens": max_tokens, "grammar": grammar})
    if not quiet:
        say(f"judge: {len(cases)} task(s), {len(rollouts)} rollout(s) from " + ", ".join(s["folder"] for s in sets))
    with suite_policy(config, home, policy, pool) as pol:
        result = run_suite(suite, pol, cases, report, progress=False, pool=pool, resume=resume,
                           extra=lambda res: {"figures": judged_figures(rollouts, res.records, scoring), **(
                               {"sets": sets, "by_set": by_set(rollouts, res.records)} if len(sets) > 1 else {})})
    fig = judged_figures(rollouts, result.records, scoring)
    for line in best_of_n.render_figures(fig)[:5]:
        say(f"judge: {line}")
    say(f"report: {out} (conway report {out}; conway view {out})")
    return int(result.code)


# --- `conway report` ----------------------------------------------------------------------------------------------


def render_judged(data: dict[str, Any], cases: list[dict[str, Any]], max_rows: int) -> list[str]:
    from conway.evals.text import _short

    s = data.get("summary") or {}
    out = [f"judged {s.get('tasks', 0)} task(s) of {(data.get('parameters') or {}).get('rollouts')}: "
           f"{s.get('picked', 0)} picked, {s.get('errors', 0)} error(s)"]
    out += best_of_n.render_figures(data.get("figures") or {}, max_rows)
    for name, g in (data.get("by_set") or {}).items():  # mixed agents: how each set fared, and in the judge's eyes
        p = g.get("pass1") or {}
        policy = g.get("policy") or {}
        who = policy.get("model_id") or (policy.get("model") or {}).get("path") or policy.get("kind") or "?"
        out.append(f"{name} ({who}): pass@1 {p.get('hits', 0)}/{p.get('n', 0)}; picked {g['picked']} time(s), "
                   f"{g['picked_passed']} of them passing")
    out.append("")
    out.append("the judge's picks:")
    for c in cases[:max_rows]:
        pick = "none" if c.get("pick") is None else f"sample {c['pick']}"
        out.append(f"  {c.get('task')}: {pick}" + (f" — {c['error']}" if c.get("error") else "")
                   + (f"; {_short(c.get('reason'), 160)}" if c.get("reason") else ""))
    devs = sorted({d for c in cases for d in c.get("deviations") or []})
    if devs:
        out += ["", "deviations from Agent S3's requests:"] + [f"  - {d}" for d in devs]
    return out


# --- its command, `conway judge` (registered with its kind in conway.evals.suites) ---------------------------------


def _add_parser(sub: Any) -> None:
    from conway.args.command import add_model_args, cmd
    from conway.args.costs import add_cost_args
    from conway.args.pool import add_pool_args

    p = cmd(sub, "judge", "Best of N: narrate each rollout of a rollout set and let a judge model pick one per task",
            "Agent S3's behaviour Best-of-N over a rollout set (`conway rollouts`' DIR): per rollout a fact per\n"
            "step from its screenshots and actions (S3's narrator), per task a judge request comparing the\n"
            "narratives that names one rollout (S3's comparative judge), both asked of the configured model (or\n"
            "any other: policy.endpoint=URL, a preset) at temperature 0. The report (DIR/judged.json) has per task\n"
            "the pick and its reason, and pass@1, pass@k, best-of-N and the judge's agreement with the checker,\n"
            "with Wilson intervals, and what a success cost.\n\n"
            "  conway judge rollouts/r0 policy.endpoint=http://127.0.0.1:8080/v1\n"
            "  conway judge rollouts/uitars rollouts/opencua --output mixed.json policy.endpoint=URL   (mixed agents)\n\n"
            "Exit 0 every task got a pick, 2 some did not, 1 bad input, 130 Ctrl+C.")
    p.add_argument("folder", nargs="+", metavar="DIR", help="a rollout set (conway rollouts --output DIR); several "
                   "(the same tasks by several agents) are judged together, into --output; then any key=value "
                   "overrides")
    p.add_argument("--output", metavar="FILE", help=f"the new report (default DIR/{REPORT})")
    p.add_argument("--quiet", action="store_true", help="no line per task")
    p.add_argument("--max-tokens", type=int, metavar="N", help="bound every reply (S3 sends no bound: a named "
                   "deviation, for a judge whose context cannot hold an unbounded reply)")
    p.add_argument("--grammar", action="store_true", help="hold the judge's answer to S3's tags and an index by a "
                   "grammar (a named deviation, for a model too small to follow the prompt's format)")
    add_model_args(p)
    add_cost_args(p)
    add_pool_args(p)


def _run_command(args: Any) -> int:
    from conway.args.command import OVERRIDE
    from conway.args.resolve import home_of, model_config_of
    from conway.evals.best_of_n import cost_args
    from conway.evals.pool import pool_of

    words = list(args.folder)  # argparse cannot tell the folders from the overrides: a key=value is one
    args.overrides = [w for w in words if OVERRIDE.match(w) and not Path(w).exists()]
    args.folder = [w for w in words if w not in args.overrides]
    if not args.folder:
        raise UserError("name the rollout set to judge (conway rollouts --output DIR)")
    home = home_of(args)
    cfg = model_config_of(args, home)
    given = cost_args(args)
    return judge(home, cfg, args.folder, output=args.output, quiet=args.quiet, argv=args._argv,
                 pool=pool_of(args, cfg, home), resume=args.resume, prices=given["prices"],
                 reference=given["reference"], max_tokens=args.max_tokens, grammar=args.grammar)


def _command() -> Any:
    from conway.args.command import CommandPiece

    return CommandPiece("judge", _add_parser, _run_command, after="rollouts")


COMMAND = _command()


def judge_set(home: Home, judge_config: ConwayConfig, out_dir: Path, **kw: Any) -> int:
    from conway.evals.judge.run import judge

    return judge(home, judge_config, str(out_dir), **kw)


def judge_pool(pool: Any, home: Home, judge_config: ConwayConfig, same: bool) -> Any:
    """The rollouts' pool shape for the judge, its workers building the judge's model (another endpoint than the
    acting model's leaves the acting model's endpoint slots behind)."""
    if pool is None:
        return None
    from dataclasses import replace

    from conway.evals.pool import PolicyRecipe, Pool

    spec = pool.spec if same else replace(pool.spec, endpoints=())
    return Pool(spec, PolicyRecipe(judge_config, str(home.root)))
