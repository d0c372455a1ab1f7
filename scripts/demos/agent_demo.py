"""`scripts/demos/learning_demo.py --agent`: learning from the agent's own experience through the real loop.

  1. build the tiny random-weight base VLM (or reuse --base DIR from an earlier build);
  2. start an Xvfb display of 84x84 (the tiny model's image: 3x3 image tokens, no resize) and practise N
     single-session button-board tasks: for each, the board app starts, `conway start --task-file …
     --execute --max-steps 1` runs the loop with the real GUI tool, and Conway's acceptance check (the first
     press was the named button) verifies the session;
  3. label every practised step from the acceptance result, and relabel failed ones in hindsight with the
     verified target's box from the board's `ready` log (labels.jsonl, source task-check, hindsight: true);
  4. `conway export --format hf`;
  5. `training.train_lora --recipe tiny_cpu` → merged model → GGUF + mmproj (candidates/agent/);
  6. run M held-out task seeds through the same loop on the base and on the candidate: verified success
     rates with Wilson 95% intervals, written as an `agent-eval` report;
  7. `conway promote agent` only when the candidate's interval lies above the base's; else say why not.

Exit 0 promoted, 2 not promoted (intervals overlap), 1 setup error (one line on stderr).

Measured on the shared 2-core machine (defaults: 100 practice tasks of seed 1, 30 held-out of seed 1000):
  --buttons 1: base 0/30 (95% CI 0.0-11.3%)  candidate 29/30 = 96.7% (83.3-99.4%)  promoted, 14.0 min
  --buttons 2: base 0/30 (0.0-11.3%)  candidate 10/30 = 33.3% (19.2-51.2%)  promoted, 19.7 min: it presses
               a button 27 times in 30 but the named one at chance (it does not read the labels)
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable
SCREEN = (84, 84)
GRID = 28
CANDIDATE = "agent"


class DemoError(Exception):
    """A setup problem: printed as one line, exit 1."""


def add_arguments(ap: Any) -> None:
    g = ap.add_argument_group("--agent: learning from the agent's own loop (button-board tasks on Xvfb)")
    g.add_argument("--agent", action="store_true", help="practise, label, train and evaluate through the real loop")
    g.add_argument("--tasks", type=int, default=100, metavar="N", help="--agent: practice tasks (default 100)")
    g.add_argument("--eval-tasks", type=int, default=30, metavar="M",
                   help="--agent: held-out tasks, each run on the base and on the candidate (default 30)")
    g.add_argument("--buttons", type=int, default=1, metavar="K",
                   help="--agent: buttons on the 84x84 board, 1-4 (default 1; see docs/measurements.md)")
    g.add_argument("--task-seed", type=int, default=1, help="--agent: seed of the practice boards (default 1)")
    g.add_argument("--eval-seed", type=int, default=1000, help="--agent: seed of the held-out boards (default 1000)")
    g.add_argument("--base", metavar="DIR", help="--agent: reuse a base built by scripts/build/build_tiny_vlm.py "
                   "--config configs/tiny_vlm_demo.yaml --keep-hf --out DIR (default: build one)")
    g.add_argument("--train-seconds", type=float, default=600.0, metavar="S",
                   help="--agent: cap on training time (train.max_seconds, default 600)")


def check_arguments(args: Any) -> None:
    for name, lo, hi in (("tasks", 1, 10000), ("eval_tasks", 1, 10000), ("buttons", 1, 4)):
        v = getattr(args, name)
        if not lo <= v <= hi:
            raise DemoError(f"--{name.replace('_', '-')} must be {lo}-{hi}, not {v}")
    if args.train_seconds <= 0:
        raise DemoError(f"--train-seconds must be positive, not {args.train_seconds:g}")
    if shutil.which("Xvfb") is None:
        raise DemoError("Xvfb is not installed: --agent runs the tasks on a virtual X display "
                        "(Debian/Ubuntu: sudo apt-get install xvfb; Fedora: sudo dnf install xorg-x11-server-Xvfb)")
    try:
        import tkinter  # noqa: F401
    except ImportError:
        raise DemoError("tkinter is missing: the button board is a Tk app (Debian/Ubuntu: apt-get install "
                        "python3-tk)") from None
    if args.base:
        base = Path(args.base)
        missing = [p for p in ("tiny-vlm.gguf", "tiny-vlm-mmproj.gguf", "hf/config.json") if not (base / p).exists()]
        if missing:
            raise DemoError(f"--base {base} lacks {', '.join(missing)} (build it with scripts/build/build_tiny_vlm.py "
                            "--config configs/tiny_vlm_demo.yaml --keep-hf --out DIR)")


def run_logged(cmd: list[str], env: dict[str, str], log: list[str], tail: int = 20) -> subprocess.CompletedProcess:
    """Run one pipeline step from the repository: the command line shown and logged, the last `tail` lines of
    its output shown without progress-bar lines, and how long it took (both demos' steps)."""
    line = shlex.join(cmd)
    print(f"\n$ {line}", flush=True)
    log.append(line)
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=REPO, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    keep = [ln for ln in proc.stdout.strip().splitlines() if "it/s]" not in ln and "s/it]" not in ln
            and "examples/s]" not in ln]
    print("\n".join(keep[-tail:]))
    print(f"  ({time.time() - t0:.0f} s, exit {proc.returncode})", flush=True)
    return proc


def run(cmd: list[str], env: dict[str, str], log: list[str], ok: tuple[int, ...] = (0,)) -> str:
    proc = run_logged(cmd, env, log)
    if proc.returncode not in ok:
        raise DemoError(f"step failed (exit {proc.returncode}): {shlex.join(cmd)}")
    return proc.stdout


def run_tasks(label: str, home: Path, seed: int, n: int, folder: Path, policy: list[str], display: str,
              buttons: int, env: dict[str, str], log: list[str]) -> list[dict[str, Any]]:
    from scripts.demos import board_runs as br

    records = []
    log.append(f"{label}: {n} x conway start --task-file TASK --execute --max-steps 1 (seed {seed}, {buttons} "
               f"button(s), display {display}) {shlex.join(policy)}")
    t0 = time.time()
    for i in range(n):
        rec = br.run_task(home, seed, i, folder / f"{i:04d}", policy, display=display, count=buttons,
                          board="small", env=env)
        if rec.get("error") and not rec.get("session"):
            raise DemoError(f"{label} task {i}: the session did not run: {rec['error']}")
        records.append(rec)
        ok = sum(1 for r in records if r["verified"])
        print(f"  {label} {i + 1}/{n}: target {rec['target']} {rec['target_box']} → "
              f"{'VERIFIED' if rec['verified'] else 'not verified'} (first press {rec['first_press'] or 'none'}, "
              f"declared {rec.get('declared') or '-'}) {rec['seconds']:.1f} s · {ok}/{i + 1} verified, "
              f"{time.time() - t0:.0f} s", flush=True)
    return records


def main_agent(args: Any) -> int:
    try:
        check_arguments(args)
        return _pipeline(args)
    except DemoError as exc:
        print(f"learning demo --agent: {exc}", file=sys.stderr)
        return 1


def _pipeline(args: Any) -> int:
    from conway.evals.candidates import gguf_paths, load_manifest
    from conway.evals.report import Report
    from conway.machine.xvfb import XvfbError, start_xvfb
    from conway.store.home import Home
    from scripts.demos import board_runs as br

    started = time.time()
    load_start = os.getloadavg()[0]
    work = Path(args.work or tempfile.mkdtemp(prefix="conway-agent-demo-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    home_dir = work / "home"
    if home_dir.exists() and any(home_dir.iterdir()):
        raise DemoError(f"{home_dir} is not empty: the demo starts from a fresh home (choose another --work)")
    for sub in ("practice", "eval", "dataset", "agent-eval.json"):
        if (work / sub).exists():
            raise DemoError(f"{work / sub} exists: choose another --work")
    env = {**os.environ, "CONWAY_HOME": str(home_dir), "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    log: list[str] = []
    conway = [PY, "-m", "conway.cli.main"]
    print(f"learning demo --agent in {work} (home {home_dir})", flush=True)
    run(conway + ["init"], env, log)
    home = Home(root=home_dir)
    br.bare_home(home)  # empty constitution and goals, no skills: the training prompt equals the loop's
    print("home: constitution.md and goals.md emptied, skills removed (the task is the whole goal)")

    base = Path(args.base).resolve() if args.base else work / "base"
    if not args.base:
        run([PY, "scripts/build/build_tiny_vlm.py", "--config", "configs/tiny_vlm_demo.yaml", "--keep-hf", "--out",
             str(base)], env, log)
    model, mmproj = base / "tiny-vlm.gguf", base / "tiny-vlm-mmproj.gguf"
    policy = ["policy=generic", f"policy.model_path={model}", f"policy.mmproj_path={mmproj}",
              "policy.backend=llama_cpp", "runtime.n_ctx=4096",
              # the display is the demo's own 84x84 Xvfb: a click near a corner must not end the run
              "tools.gui_failsafe=false"]

    try:
        xvfb = start_xvfb(*SCREEN)
    except XvfbError as exc:
        raise DemoError(str(exc)) from None
    display = xvfb.display
    print(f"Xvfb {display}: {SCREEN[0]}x{SCREEN[1]} screen, board 'small' with {args.buttons} button(s)", flush=True)
    try:
        t = time.time()
        practice = run_tasks("practice", home_dir, args.task_seed, args.tasks, work / "practice", policy, display,
                             args.buttons, env, log)
        practice_s = time.time() - t
        labels = br.label_practice(home, practice, GRID)
        hind = sum(1 for lab in labels if lab.hindsight)
        print(f"\nlabels: {len(labels)} step(s) of {len(practice)} practised session(s) → {home_dir / 'labels.jsonl'}: "
              f"{len(labels) - hind} verified by the acceptance check, {hind} relabelled in hindsight with the "
              f"target's box from the board's ready log (hindsight: true)", flush=True)
        dataset = work / "dataset"
        run(conway + ["export", "--format", "hf", "--style", "generic", "--output", str(dataset)], env, log)

        t_train = time.time()
        run([PY, "-m", "training.train_lora", "--recipe", args.recipe, "--quiet", f"model.path={base / 'hf'}",
             f"data.path={dataset}", f"output.candidate={CANDIDATE}", f"convert.base_gguf={model}",
             f"convert.base_mmproj={mmproj}", f"eval.size=[{SCREEN[0]},{SCREEN[1]}]",
             f"train.max_seconds={args.train_seconds:g}",
             # (with several buttons the goal decides which; keeping it in the curriculum's short prompt,
             # train.short_prompt_keep_goals=true, was measured no better: docs/measurements.md)
             *args.overrides], env, log)
        train_s = time.time() - t_train
        manifest = load_manifest(home, CANDIDATE)
        cand_model, cand_mmproj = gguf_paths(home, CANDIDATE, manifest)
        cand_policy = ["policy=generic", f"policy.model_path={cand_model}", f"policy.mmproj_path={cand_mmproj}",
                       "policy.backend=llama_cpp", "runtime.n_ctx=4096", "tools.gui_failsafe=false"]

        t = time.time()
        base_runs = run_tasks("base", home_dir, args.eval_seed, args.eval_tasks, work / "eval" / "base", policy,
                              display, args.buttons, env, log)
        cand_runs = run_tasks("candidate", home_dir, args.eval_seed, args.eval_tasks, work / "eval" / "candidate",
                              cand_policy, display, args.buttons, env, log)
        eval_s = time.time() - t
    finally:
        xvfb.stop()

    summary = br.compare(base_runs, cand_runs)
    summary["references"] = {"random_click_rate": round(br.random_click_rate(base_runs, SCREEN), 4),
                             "buttons": args.buttons,
                             "random_button_rate": round(1 / args.buttons, 4)}
    summary["practice"] = {**br.score(practice), "labels": len(labels), "hindsight_labels": hind,
                           "seed": args.task_seed, "seconds": round(practice_s, 1)}
    summary["candidate"]["name"] = CANDIDATE
    summary["candidate"]["model"] = str(cand_model)
    summary["base"]["model"] = str(model)
    summary["seconds"] = {"practice": round(practice_s, 1), "train_and_convert": round(train_s, 1),
                          "eval": round(eval_s, 1), "total": round(time.time() - started, 1)}
    summary["load_average"] = {"start": round(load_start, 2), "end": round(os.getloadavg()[0], 2),
                               "cpus": os.cpu_count()}
    separated = summary["intervals_separated"]
    out = work / "agent-eval.json"
    report = Report("agent-eval", out, argv=["agent-eval (scripts/demos/learning_demo.py --agent)"], config=None,
                    seed=args.eval_seed, parameters={"tasks": args.tasks, "eval_tasks": args.eval_tasks,
                                                     "buttons": args.buttons, "board": "small",
                                                     "screen": list(SCREEN), "task_seed": args.task_seed,
                                                     "eval_seed": args.eval_seed, "recipe": args.recipe,
                                                     "overrides": args.overrides, "commands": log},
                    started=started)
    report.set_model(f"{Path(model).name} vs candidate {CANDIDATE}")
    report.finish(status="candidate better" if separated else "not separated", exit_code=0 if separated else 2,
                  summary=summary, cases_order=[{"seed": b["seed"], "index": b["index"], "target": b["target"],
                                                 "target_box": b["target_box"], "base": _case(b),
                                                 "candidate": _case(c)} for b, c in zip(base_runs, cand_runs)])

    print("\n=== learning demo --agent: base vs candidate on the same held-out button-board tasks, through the loop ===")
    print(f"tasks: {args.eval_tasks} held-out boards (seed {args.eval_seed}; practice: {args.tasks} boards of seed "
          f"{args.task_seed}), {args.buttons} button(s) on an {SCREEN[0]}x{SCREEN[1]} Xvfb screen; success = "
          f"Conway's acceptance check (first press = the named button)")
    for name in ("base", "candidate"):
        s = summary[name]
        print(f"{name:<10} {s['verified']:>3}/{s['tasks']} verified = {s['rate']:6.1%}   95% CI "
              f"{s['ci95'][0]:6.1%} – {s['ci95'][1]:6.1%}   (declared DONE {s['declared_done']}, pressed a "
              f"button {s['pressed_any']})")
    lo, hi = summary["difference_ci95"]
    print(f"difference {summary['difference']:+.1%} (95% CI {lo:+.1%} to {hi:+.1%}); intervals "
          f"{'do not overlap' if separated else 'overlap'}")
    print(f"reference: one uniformly random click would be verified {summary['references']['random_click_rate']:.1%} "
          f"of the time on these boards")
    p = summary["practice"]
    print(f"practice: {p['verified']}/{p['tasks']} verified; {p['labels']} labels, {p['hindsight_labels']} in hindsight")
    if separated:
        run(conway + ["promote", CANDIDATE], env, log)
        print(f"promoted: the candidate's interval lies above the base's; {home_dir / 'config.yaml'} now serves "
              f"candidates/{CANDIDATE} (undo: conway promote --rollback)")
    else:
        print(f"not promoted: the candidate's interval ({summary['candidate']['ci95'][0]:.1%} – "
              f"{summary['candidate']['ci95'][1]:.1%}) does not lie above the base's "
              f"({summary['base']['ci95'][0]:.1%} – {summary['base']['ci95'][1]:.1%})")
    wall = time.time() - started
    print(f"wall time: {wall / 60:.1f} min end to end (practice {practice_s / 60:.1f}, training + conversion "
          f"{train_s / 60:.1f}, evaluation {eval_s / 60:.1f}); load average {load_start:.1f} at the start, "
          f"{summary['load_average']['end']:.1f} at the end ({os.cpu_count()} CPUs)")
    print(f"report: {out}")
    return 0 if separated else 2


def _case(r: dict[str, Any]) -> dict[str, Any]:
    return {k: r.get(k) for k in ("verified", "first_press", "declared", "session", "steps", "exit", "seconds",
                                  "workdir", "error")}
