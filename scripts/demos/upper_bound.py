"""The supervised upper bound on the perceivable suite: can the base learn the skill at all from LABELLED clicks?

    .venv/bin/python -m scripts.demos.upper_bound [--work DIR] [--base DIR] [--suite colour|shape] [--targets 3]
        [--train 64] [--held-out 24] [--seconds 240] [--rows loop|generated] [--prompt full|bare] [key=value ...]

If supervised fine-tuning with the right answer on every screen cannot lift a base above chance, no reward can
(the issue's first bar). So, before any reward stage:

1. builds (or reuses, --base) the tiny base and writes a perceivable suite (scripts/demos/perceivable_targets.py);
2. rolls the base out once on each train task (`conway rollouts`, the real loop on a real desktop), which
   records every request exactly as the loop sent it (the prompt, the screenshot);
3. labels each request with the right answer, a click at the named target's centre, read from the task's own
   layout (the spec its setup gives the board), and writes that as a labelled copy of the rollout set
   (WORK/labelled, its manifest saying `labelled: ...`: labels, not rewards);
4. trains `tiny_cpu` on it for --seconds (the same recipe rejection-sampling SFT uses) and measures the
   candidate greedily on the held-out tasks against chance, as the reward demo does.

With `--rows generated` (the perceiving base only) steps 2-4 are instead: the base's making's own trainer
(scripts/build/screen_pretraining.py, every parameter) on `--steps` batches of 16 labelled screens it draws as the
board does, from layout seeds far from the suite's, the answer saying the named colour and its quarter before the
click (`colour_said`, alternating with `places`), converted to the GGUF pair and measured the same way.

`--prompt bare` (the default with `--base perceive`) asks in the short form the perceiving base was made on, the
generic family's named deviation `policy.prompt=bare` (docs/learning.md: behind the full system prompt the
2-layer model loses what it learned).

Labels appear only here, for the upper bound; the reward demo never sees them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scripts.build.screen_pretraining import QUADRANTS, quadrant_centre
from scripts.demos import reward_demo


def named_target(task: dict[str, Any]) -> tuple[str, tuple[int, int], str]:
    """(the named target's name, its centre, the quarter of the screen it lies in), from the task's board spec
    (the launch step's last argument)."""
    spec = json.loads(task["config"][0]["parameters"]["command"][-1])
    named = task["evaluator"]["expected"]["rules"]["expected"].strip() if isinstance(
        task["evaluator"]["expected"], dict) else task["evaluator"]["expected"][-1]["rules"]["expected"].strip()
    x0, y0, x1, y1 = next(t["box"] for t in spec["targets"] if t["name"] == named)
    x, y = (x0 + x1) // 2, (y0 + y1) // 2
    half_w, half_h = spec["screen"][0] // 2, spec["screen"][1] // 2
    return named, (x, y), QUADRANTS[(y // half_h) * 2 + x // half_w]


def label_rollouts(rollouts: Path, suite: Path, out: Path, say: bool = False, cell: bool = False) -> int:
    """A copy of the rollout set whose every answer is the right click (reward 1: it is a label). Returns rows.
    `say`: the label's thought first says the named target and its quarter ("blue: top right"), the answer
    form the made base learns (docs/learning.md#the-bases-making); otherwise the thought is empty.
    `cell`: the click is at the centre of the target's quarter (21 or 63 on each axis, inside every target), the
    point the made base's stage teaches, rather than the target's own centre (whose digits vary with its offset)."""
    from conway.evals.rollouts import MANIFEST

    tasks = {json.loads(p.read_text())["id"]: json.loads(p.read_text()) for p in suite.rglob("*.json")}
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(rollouts, out)
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    rows = 0
    for r in manifest["rollouts"]:
        named, (x, y), quarter = named_target(tasks[r["task"]])
        if cell:
            x, y = quadrant_centre(QUADRANTS.index(quarter))
        thought = f"{named}: {quarter}" if say else ""
        answer = json.dumps({"thought": thought, "action": {"type": "click", "x": x, "y": y}})
        path = out / r["requests"]["path"]
        lines = [{**json.loads(line), "answer": answer} for line in path.read_text(encoding="utf-8").splitlines()]
        path.write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")
        r["reward"], rows = 1.0, rows + len(lines)
    manifest["labelled"] = ("supervised upper bound: every answer replaced by a click at the named target's "
                            "centre from the task's layout; rewards set to 1 as labels, not checker scores")
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="upper_bound", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--work")
    ap.add_argument("--base", help="a built base DIR, or 'perceive' (scripts/build/screen_pretraining.py, cached)")
    ap.add_argument("--suite", default="colour", choices=("colour", "shape"))
    ap.add_argument("--targets", type=int, default=3, choices=(2, 3, 4))
    ap.add_argument("--train", type=int, default=64)
    ap.add_argument("--held-out", type=int, default=24)
    ap.add_argument("--seconds", type=float, default=240)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--say", action="store_true",
                    help="labels whose thought first says the named target and its quarter (\"blue: top right\")")
    ap.add_argument("--click", default="centre", choices=("centre", "cell"),
                    help="where the label clicks: the target's centre, or its quarter's centre (the stage's point)")
    ap.add_argument("--rows", default="loop", choices=("loop", "generated"),
                    help="loop: the loop's recorded screens of the train tasks, labelled; generated: the stage's "
                         "own labelled screens (--steps batches of 16)")
    ap.add_argument("--steps", type=int, default=1200, help="--rows generated: training steps (default 1200)")
    ap.add_argument("--prompt", choices=("full", "bare"),
                    help="the generic family's prompt (default: bare with --base perceive, else full)")
    ap.add_argument("overrides", nargs="*", metavar="key=value",
                    help="tiny_cpu overrides (e.g. train.short_prompt_steps=300 train.short_prompt_keep_goals=true)")
    args = ap.parse_args(argv)
    if args.rows == "generated" and args.suite != "colour":
        ap.error("--rows generated draws coloured squares only: use it with --suite colour")
    os.environ.update(OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1",
                      TRANSFORMERS_OFFLINE="1")
    from conway.config import load_config
    from conway.errors import UserError
    from conway.evals.rollouts import MANIFEST, rollouts
    from conway.store.home import init_home, resolve_home

    started = time.time()
    work = Path(args.work or tempfile.mkdtemp(prefix="conway-upper-bound-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    home = resolve_home(str(work / "home"))
    init_home(home)
    base = reward_demo.build_base(work, args.base)
    args.partial = False
    args.prompt = args.prompt or ("bare" if args.base == "perceive" else "full")
    reward_demo.POLICY.append(f"policy.prompt={args.prompt}")
    train_suite, held_suite = reward_demo.write_suite(work / "suite", args)
    if args.rows == "generated":
        return generated(args, work, home, base, held_suite, started)
    raw = work / "rollouts"
    try:
        if not (raw / MANIFEST).is_file():
            cfg = load_config(home.config, [*reward_demo.POLICY, "policy.backend=llama_cpp",
                                            f"policy.model_path={base / 'tiny-vlm.gguf'}",
                                            f"policy.mmproj_path={base / 'tiny-vlm-mmproj.gguf'}"])
            rollouts(home, cfg, str(train_suite), output=str(raw), samples=1, seed=args.seed, temperature=1.0,
                     max_steps=1, quiet=True, say=lambda _: None, screen=(reward_demo.SCREEN, reward_demo.SCREEN))
        rows = label_rollouts(raw, train_suite, work / "labelled", say=args.say, cell=args.click == "cell")
        print(f"upper bound in {work}: {rows} labelled row(s) from {args.train} train tasks ({args.suite}, "
              f"{args.targets} targets)", flush=True)
        cand = reward_demo.sft_candidate(home, base, str(work / "labelled"), args.seconds, args.overrides)
        base_s = reward_demo.held_out_success(home, str(base / "tiny-vlm.gguf"), str(base / "tiny-vlm-mmproj.gguf"),
                                              held_suite, work / "held-out-base.json")
        cand_s = reward_demo.held_out_success(home, cand["gguf"], cand["mmproj"], held_suite,
                                              work / "held-out-supervised.json") if cand else None
    except UserError as exc:
        sys.stderr.write(f"upper_bound: error: {' '.join(str(exc).split())}\n")
        return 1
    return summarise(args, work, base_s, cand_s, rows, started)


def generated(args: argparse.Namespace, work: Path, home: Any, base: Path, held_suite: Path, started: float) -> int:
    """--rows generated: the stage's labelled screens, trained in full, converted, measured through the loop."""
    from conway.errors import UserError
    from scripts.build import build_tiny_vlm, screen_pretraining

    if not (base / "hf").is_dir():
        sys.stderr.write(f"upper_bound: error: --rows generated trains from the base's hf/ folder, and {base} has "
                         "none (use --base perceive)\n")
        return 2
    print(f"upper bound in {work}: {args.steps} steps of 16 generated labelled screens (colour_said+places)",
          flush=True)
    pair = screen_pretraining.trained_pair(base, work / "supervised", f"colour_said+places:{args.steps}",
                                           seed=args.seed, targets=args.targets)
    try:
        base_s = reward_demo.held_out_success(home, str(base / build_tiny_vlm.MODEL_FILE),
                                              str(base / build_tiny_vlm.MMPROJ_FILE), held_suite,
                                              work / "held-out-base.json")
        cand_s = reward_demo.held_out_success(home, str(pair / build_tiny_vlm.MODEL_FILE),
                                              str(pair / build_tiny_vlm.MMPROJ_FILE), held_suite,
                                              work / "held-out-supervised.json")
    except UserError as exc:
        sys.stderr.write(f"upper_bound: error: {' '.join(str(exc).split())}\n")
        return 1
    return summarise(args, work, base_s, cand_s, args.steps * 16, started)


def summarise(args: argparse.Namespace, work: Path, base_s: dict[str, Any], cand_s: dict[str, Any] | None,
              rows: int, started: float) -> int:
    print(f"\nheld-out tasks (greedy, each once; chance {base_s['chance']:.1%}; prompt {args.prompt}):")
    print(reward_demo.line("base", base_s, base_s))
    print(reward_demo.line("supervised (labelled)", cand_s, base_s))
    print("  " + reward_demo.learned("supervised (labelled)", cand_s, args))
    summary = {"args": vars(args), "rows": rows, "base": base_s, "supervised": cand_s,
               "wall_s": round(time.time() - started, 1)}
    (work / "upper_bound.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"\n{work / 'upper_bound.json'} ({summary['wall_s'] / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
