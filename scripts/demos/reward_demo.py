"""Learning from verified outcomes on this CPU: the tiny VLM, a generated suite, rewards from its checkers only.

    .venv/bin/python -m scripts.demos.reward_demo [--work DIR] [--base DIR] [--suite colour|shape|label]
        [--targets 3] [--train 8] [--held-out 24] [--samples 8] [--rounds 2] [--sft-steps 20]

1. builds the tiny base (configs/tiny_vlm_demo.yaml; --base DIR reuses one) and a fresh home;
2. writes the suite: train and held-out tasks from different seeds, --targets targets on an 84x84 screen in
   shuffled places, the instruction naming one by its colour or its shape (scripts/demos/perceivable_targets.py)
   or, with --suite label, "Click the button labelled X" (scripts/demos/named_buttons.py, the harder suite: the
   word must be read on the screen). The checker reads which target was pressed first. No action is labelled
   anywhere. Every task declares its chance level, 1/N (conway.evals.chance);
3. runs `training.iterate` (GRPO stage, --rounds rounds): round r rolls out the latest policy on the train
   tasks (--samples per task, temperature 1, seeds recorded), trains a candidate from the rewards, and measures
   it greedily on the train and held-out tasks (round 0's point: the base);
4. trains the rejection-sampling SFT candidate from round 0's rollouts (the same rollouts the first GRPO
   candidate learned from; recipe tiny_cpu, --sft-steps) and measures it on the held-out tasks;
5. prints base, SFT and GRPO side by side on the held-out tasks (success, Wilson 95% interval, where it lies
   against chance, Newcombe's interval of the difference to the base), then what each stage learned, said only
   by its comparison with chance: a candidate that merely learned to press a target scores chance, however far
   it lies above a base that presses nothing. Writes WORK/results.json and the learning curve with its chance
   line (WORK/iterate/learning_curve.png; copied to training/results/reward_demo_learning_curve.png).

It needs xvfb, bubblewrap and python3-tk (the disposable desktop and the board), llama-cpp-python (the policy)
and the train extra. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable
SCREEN = 84
RESULTS = REPO / "training" / "results"
# tasks.waits=measured: OSWorld's fixed 80 s around each of the demo's many one-step button tasks would be most of
# its time; a named deviation, listed in every report it writes
POLICY = ["policy=generic", "runtime.n_ctx=4096", "tools.gui_failsafe=false", "tools.enabled=[gui]",
          "tasks.waits=measured"]


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="reward_demo", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--work", help="the run's folder (default: a new temporary one); a stopped run resumes in it")
    ap.add_argument("--base", help="reuse a base built by scripts/build/build_tiny_vlm.py --keep-hf --out DIR; "
                                   "'perceive': the perceiving base (scripts/build/screen_pretraining.py, cached)")
    ap.add_argument("--partial", action="store_true",
                    help="partial rewards on the train tasks: 0.25 for pressing another target, 1 for the named one "
                         "(perceivable suites only; held-out tasks are scored 1 or 0)")
    ap.add_argument("--train", type=int, default=8, help="train tasks (default 8)")
    ap.add_argument("--held-out", type=int, default=24, help="held-out tasks (default 24)")
    ap.add_argument("--suite", default="colour", choices=("colour", "shape", "label"),
                    help="what the instruction names: the target's colour (default), its shape "
                         "(scripts/demos/perceivable_targets.py), or a button's label, the harder suite "
                         "(scripts/demos/named_buttons.py)")
    ap.add_argument("--targets", "--buttons", dest="targets", type=int, default=3, choices=(2, 3, 4),
                    help="targets per screen (default 3)")
    ap.add_argument("--samples", type=int, default=8, help="rollouts per train task per round (default 8)")
    ap.add_argument("--rounds", type=int, default=2, help="GRPO rounds (default 2)")
    ap.add_argument("--sft-steps", type=int, default=20,
                    help="rejection-sampling SFT's optimizer steps (default 20: longer overfits the few rewarded "
                         "answers, measured in docs/learning.md)")
    ap.add_argument("--sft-seconds", type=float, default=120, help="and at most this long (default 120)")
    ap.add_argument("--seed", type=int, default=0, help="suite seed (held-out: seed + 1000000)")
    ap.add_argument("--workers", type=int, default=1,
                    help="desktops at once for rollouts and measures (worker processes, default 1)")
    ap.add_argument("--backend", default="llama_cpp", choices=("llama_cpp", "http"),
                    help="llama_cpp: in-process llama-cpp-python (default); http: a llama-server Conway starts")
    ap.add_argument("--prompt", choices=("full", "bare"),
                    help="the generic family's prompt: bare (the default with --base perceive) asks in the short "
                         "form the perceiving base was made on, a named deviation (policy.prompt=bare); full: "
                         "Conway's whole prompt (the default otherwise)")
    ap.add_argument("--no-copy", action="store_true", help="do not copy the results into training/results/")
    ap.add_argument("overrides", nargs="*", metavar="key=value", help="GRPO recipe overrides (e.g. rl.epochs=8)")
    args = ap.parse_args(argv)
    if args.workers < 1:  # refused before the base is made (minutes), not after
        ap.error(f"--workers must be at least 1 (got {args.workers})")
    if args.sft_steps < 1:
        ap.error(f"--sft-steps must be at least 1 (got {args.sft_steps})")
    if args.partial and args.suite == "label":
        ap.error("--partial goes with the perceivable suites (--suite colour or shape)")
    args.prompt = args.prompt or ("bare" if args.base == "perceive" else "full")
    return args


def build_base(work: Path, base_arg: str | None) -> Path:
    """`--base perceive`: the perceiving base (scripts/build/screen_pretraining.py, made once, cached); DIR: a
    built base; none: a fresh random one in WORK/base."""
    if base_arg == "perceive":
        from scripts.build import screen_pretraining
        return screen_pretraining.make()
    base = Path(base_arg).resolve() if base_arg else work / "base"
    if not (base / "tiny-vlm.gguf").is_file():
        subprocess.run([PY, "scripts/build/build_tiny_vlm.py", "--config", "configs/tiny_vlm_demo.yaml", "--keep-hf",
                        "--out", str(base)], cwd=REPO, check=True)
    return base


def write_suite(out: Path, args: argparse.Namespace) -> tuple[Path, Path]:
    """The suite's train and held-out folders: perceivable targets, or the named-label buttons."""
    if args.suite == "label":
        from scripts.demos import named_buttons
        return named_buttons.write_suite(out, train=args.train, held_out=args.held_out, buttons=args.targets,
                                         seed=args.seed, screen=SCREEN)
    from scripts.demos import perceivable_targets
    return perceivable_targets.write_suite(out, train=args.train, held_out=args.held_out, targets=args.targets,
                                           by=args.suite, seed=args.seed, screen=SCREEN, partial=args.partial)


def held_out_success(home: Any, gguf: str, mmproj: str, suite: Path, out: Path, workers: int = 1) -> dict[str, Any]:
    """Greedy success on `suite`, each task once (a tasks report at `out`, kept)."""
    from conway.config import load_config
    from conway.evals.pool import workers_pool
    from conway.evals.tasks_run import tasks_run
    from training.iterate import silent, success_of

    if not out.is_file():
        cfg = load_config(home.config, [*POLICY, f"policy.model_path={gguf}", f"policy.mmproj_path={mmproj}",
                                        "policy.temperature=0"])
        tasks_run(home, cfg, str(suite), output=str(out), max_steps=1, quiet=True, say=silent,
                  screen=(SCREEN, SCREEN), pool=workers_pool(cfg, home.root, workers))
    return success_of(out)


def candidate_overrides(base: Path, rollouts: str | Path, name: str) -> list[str]:
    """A reward stage's inputs as recipe overrides: the made base (its hf/ and GGUF pair), the rollout set, the
    candidate's name (scripts/bench/bench_stage_steps.py builds its GRPO points on them too)."""
    return [f"model.path={base / 'hf'}", f"data.path={rollouts}", f"output.candidate={name}",
            f"convert.base_gguf={base / 'tiny-vlm.gguf'}", f"convert.base_mmproj={base / 'tiny-vlm-mmproj.gguf'}"]


def sft_recipe(base: Path, rollouts: str | Path, name: str, steps: int, seconds: float,
               overrides: list[str] | None = None) -> Any:
    """Rejection-sampling SFT on a rollout set's rewarded answers: `tiny_cpu` stopped at `steps` optimizer steps
    (or `seconds`), no early stop, no curriculum, every answer trained (scripts/bench/bench_stage_steps.py too)."""
    from training.recipe import load_recipe

    return load_recipe("tiny_cpu", [*candidate_overrides(base, rollouts, name),
                                    f"train.max_seconds={seconds:g}", f"train.max_steps={steps}", "train.eval_generate=0",
                                    "train.early_stop_hits=null", "train.short_prompt_steps=0",
                                    "data.eval_fraction=0", "eval.size=null", *(overrides or [])])


def sft_candidate(home: Any, base: Path, rollouts: str, seconds: float, steps: int,
                  overrides: list[str] | None = None) -> dict[str, Any] | None:
    from conway.errors import UserError
    from training.train_lora import train

    folder = home.candidates / "reward-sft"
    if not (folder / "manifest.json").is_file():
        if folder.exists():
            shutil.rmtree(folder)
        recipe = sft_recipe(base, rollouts, "reward-sft", steps, seconds, overrides)
        try:
            train(recipe, home=str(home.root), progress=False)
        except UserError as exc:  # no successful rollout: nothing to imitate
            print(f"rejection-sampling SFT: {exc}")
            return None
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    return {"gguf": str(folder / manifest["gguf"]["model"]), "mmproj": str(folder / manifest["gguf"]["mmproj"])}


def compare(base: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    from conway.evals.candidates import newcombe_difference

    lo, hi = newcombe_difference(base["hits"], base["n"], other["hits"], other["n"])
    return {"difference": round(other["rate"] - base["rate"], 4), "difference_ci95": [round(lo, 4), round(hi, 4)],
            "intervals_separated": other["ci95"][0] > base["ci95"][1]}


def line(label: str, s: dict[str, Any] | None, base: dict[str, Any]) -> str:
    from training.iterate import chance_phrase

    if s is None:
        return f"{label:<28} not trained (see above)"
    c = compare(base, s)
    return (f"{label:<28} {s['hits']:>3}/{s['n']:<3} = {s['rate']:6.1%}  95% CI {s['ci95'][0]:5.1%}-{s['ci95'][1]:5.1%}"
            f"  {chance_phrase(s).upper():<18}  vs base {c['difference']:+.1%} ({c['difference_ci95'][0]:+.1%} to "
            f"{c['difference_ci95'][1]:+.1%})" + ("  apart from the base" if c["intervals_separated"] else ""))


def learned(label: str, s: dict[str, Any] | None, args: argparse.Namespace) -> str:
    """What a stage learned, said only by its comparison with chance: a candidate that merely presses a target
    scores chance, whatever the base scores."""
    if s is None or s.get("verdict") is None:
        return f"{label}: not measured against chance"
    what = {"colour": "the colour", "shape": "the shape", "label": "the label"}[args.suite]
    if s["verdict"] == "above chance":
        return (f"{label}: its 95% interval lies above chance: it picks the target by {what} the instruction "
                "names, on tasks it never trained on")
    if s["verdict"] == "at chance":
        return (f"{label}: at chance: no evidence it follows the instruction (pressing a target at random "
                "scores as much)")
    return f"{label}: below chance: it does not even press a target as often as a random valid press would hit"


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    POLICY.extend([f"policy.backend={args.backend}", f"policy.prompt={args.prompt}"])
    os.environ.update(OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1",
                      TRANSFORMERS_OFFLINE="1")
    started = time.time()
    work = Path(args.work or tempfile.mkdtemp(prefix="conway-reward-demo-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    from conway.store.home import init_home, resolve_home
    from training import iterate

    home = resolve_home(str(work / "home"))
    init_home(home)
    base = build_base(work, args.base)
    train_suite, held_suite = write_suite(work / "suite", args)
    print(f"reward demo in {work}: {args.train} train / {args.held_out} held-out tasks named by {args.suite}, "
          f"{args.targets} targets, {args.samples} rollouts per task, {args.rounds} GRPO round(s)", flush=True)
    it_args = iterate.parse_args([
        "--work", str(work / "iterate"), "--home", str(home.root), "--train-tasks", str(train_suite),
        "--held-out", str(held_suite), "--base-hf", str(base / "hf"), "--base-gguf", str(base / "tiny-vlm.gguf"),
        "--base-mmproj", str(base / "tiny-vlm-mmproj.gguf"), "--rounds", str(args.rounds), "--samples",
        str(args.samples), "--prefix", "reward-grpo", "--max-steps", "1", "--screen", f"{SCREEN}x{SCREEN}",
        "--workers", str(args.workers),
        *[f"--policy-override={o}" for o in POLICY[1:]], *args.overrides])  # iterate sets the kind itself
    points = iterate.iterate(it_args)
    state = json.loads((work / "iterate" / "state.json").read_text(encoding="utf-8"))
    sft = sft_candidate(home, base, state["rounds"][0]["rollouts"], args.sft_seconds, args.sft_steps)
    sft_s = (held_out_success(home, sft["gguf"], sft["mmproj"], held_suite, work / "held-out-sft.json", args.workers)
             if sft else None)
    return report(args, work, points, sft_s, time.time() - started)


def report(args: argparse.Namespace, work: Path, points: list[dict[str, Any]], sft: dict[str, Any] | None,
           wall_s: float) -> int:
    base = points[0]["held_out_success"]
    grpo = [p for p in points[1:] if not p.get("note")]
    rows = [("base", base), ("rejection-sampling SFT", sft)] + [
        (f"GRPO round {p['round']}", p["held_out_success"]) for p in grpo]
    level = base.get("chance")
    print("\nheld-out tasks (greedy, each once; success by the task's checker; chance "
          + (f"{level:.1%}: a policy that presses one of the {args.targets} targets at random)" if level is not None
             else "unknown)") + ":")
    for label, s in rows:
        print(line(label, s, base))
    print("\nwhat was learned (judged against chance, not against the base):")
    for label, s in rows[1:]:
        print("  " + learned(label, s, args))
    for p in points:
        print(f"round {p['round']}: {p['policy']:<14} train {p['train_success']['rate']:.0%}  held-out "
              f"{p['held_out_success']['rate']:.0%}  mean reward {p.get('mean_reward')}  KL {p.get('kl')}"
              + (f"  [{p['note']}]" if p.get("note") else ""))
    results = {"args": {k: v for k, v in vars(args).items()}, "wall_s": round(wall_s, 1), "curve": points,
               "held_out": {label: ({**s, **compare(base, s)} if s else None) for label, s in rows}}
    (work / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if not args.no_copy:
        RESULTS.mkdir(exist_ok=True)
        shutil.copy(work / "iterate" / "learning_curve.png", RESULTS / "reward_demo_learning_curve.png")
        shutil.copy(work / "results.json", RESULTS / "reward_demo_results.json")
    print(f"\nresults: {work / 'results.json'}; learning curve {work / 'iterate' / 'learning_curve.png'} "
          f"({wall_s / 60:.1f} min)")
    return 0


def run(argv: list[str] | None = None) -> int:
    """main() with a UserError as one line (exit 1), never a traceback."""
    from conway.errors import UserError

    try:
        return main(argv)
    except UserError as exc:
        sys.stderr.write(f"reward_demo: error: {' '.join(str(exc).split())}\n")
        return 1


if __name__ == "__main__":
    sys.exit(run())
