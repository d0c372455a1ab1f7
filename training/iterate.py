""".venv/bin/python -m training.iterate --work DIR --train-tasks SUITE --held-out SUITE --base-hf HF --base-gguf G \
        --base-mmproj P --rounds N [--samples K] [--stage grpo|sft] [key=value ...]

Rounds of rollouts → train → eval, on-policy: round r rolls out with the latest candidate (round 0: the base),
trains a candidate from those rollouts' rewards (the policy-gradient stage, or rejection-sampling SFT), and
measures it. Per round, one learning-curve point (WORK/curve.jsonl, WORK/learning_curve.png with the chance
line, and WORK/learning_curve.json, a report `conway view` and `conway report` show):

    train_success      the candidate's success on the train tasks (greedy, each task once, its checker)
    held_out_success   the same on the held-out tasks, with its Wilson 95% interval, the suite's chance level
                       (tasks declare it: conway.evals.chance) and whether the interval lies above, at or below it
    mean_reward        the mean reward of the rollouts it was trained on (the rollout policy's, sampled)
    kl                 the policy-gradient stage's KL to the base at its last step (None for SFT)

Round 0's point is the base's (measured, not trained). Everything a round makes lies under WORK/round-<r>/ and
WORK/state.json says what is finished: a stopped run started again with the same command resumes at the first
unfinished piece (an unfinished rollout set or candidate is moved aside and made again). A round whose rollouts
carry no signal (all rewards equal) trains nothing: the curve says so and the next round rolls out the same
policy with the next seeds.

Candidates land in HOME/candidates/<prefix>-r<r> (--home, default $CONWAY_HOME).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conway.errors import UserError

STATE = "state.json"

ROUND_SEEDS = 1_000_000
"""Round r's rollouts take seeds from seed + r * ROUND_SEEDS: within a round every rollout has its own
(conway.evals.rollouts: seed + K * the task's index + sample), so no two rollouts of a run share one."""


def silent(_: str) -> None:
    """A `say` that says nothing (a function, not a lambda: a worker pool pickles the suite it goes with)."""


class Rounds:
    """One iteration run: its folder, its state (what each round finished), and the pieces that make a round."""

    def __init__(self, args: argparse.Namespace, say: Callable[[str], None] = print) -> None:
        from conway.store.home import resolve_home

        self.args, self.say = args, say
        self.work = Path(args.work).expanduser().resolve()
        self.work.mkdir(parents=True, exist_ok=True)
        self.home = resolve_home(args.home)
        self.home.ensure_dirs()
        self.state_path = self.work / STATE
        self.state: dict[str, Any] = (json.loads(self.state_path.read_text(encoding="utf-8"))
                                      if self.state_path.is_file() else {"rounds": [], "args": self._args()})
        if self.state["args"] != self._args():
            raise UserError(f"{self.state_path} was started with other arguments ({self.state['args']}); resume with "
                            "the same command, or use a new --work folder")

    def _args(self) -> dict[str, Any]:
        keys = ("train_tasks", "held_out", "base_hf", "base_gguf", "base_mmproj", "samples", "stage", "prefix",
                "temperature", "max_steps", "screen", "overrides")
        return {k: getattr(self.args, k) for k in keys}

    def save(self) -> None:
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.state_path)

    def round(self, r: int) -> dict[str, Any]:
        while len(self.state["rounds"]) <= r:
            self.state["rounds"].append({"round": len(self.state["rounds"])})
        return self.state["rounds"][r]

    # -- the policy of a round ------------------------------------------------------------

    def policy(self, r: int) -> dict[str, Any]:
        """Round r's rollout policy: the latest candidate before it, else the base."""
        for prev in reversed(self.state["rounds"][:r]):
            if prev.get("candidate"):
                return prev["candidate"]
        return {"name": "base", "gguf": self.args.base_gguf, "mmproj": self.args.base_mmproj, "adapter": None}

    def pool(self, cfg: Any) -> Any:
        """--workers N > 1: the round's desktops run in N worker processes, each loading the policy itself."""
        from conway.evals.pool import workers_pool

        return workers_pool(cfg, self.home.root, getattr(self.args, "workers", 1))

    def overrides(self, policy: dict[str, Any]) -> list[str]:
        return [f"policy.kind={self.args.policy_kind}", f"policy.model_path={policy['gguf']}",
                f"policy.mmproj_path={policy['mmproj']}", "policy.backend=llama_cpp", "policy.endpoint=null",
                f"policy.model={policy['name']}", *self.args.policy_overrides]  # a later policy.backend wins

    # -- pieces ------------------------------------------------------------------------------

    def rollouts(self, r: int, policy: dict[str, Any]) -> str:
        from conway.config import load_config
        from conway.evals.rollouts import MANIFEST, rollouts

        out = self.work / f"round-{r}" / "rollouts"
        if (out / MANIFEST).is_file():
            return str(out)
        _aside(out)
        cfg = load_config(self.home.config, self.overrides(policy))
        self.say(f"round {r}: rollouts of {policy['name']} on {self.args.train_tasks}")
        rollouts(self.home, cfg, self.args.train_tasks, output=str(out), samples=self.args.samples,
                 seed=self.args.seed + r * ROUND_SEEDS, temperature=self.args.temperature,
                 max_steps=self.args.max_steps, quiet=True, say=self.say, screen=self.args.screen_size,
                 pool=self.pool(cfg))
        if not (out / MANIFEST).is_file():  # stopped part-way: the same command makes them again
            raise UserError(f"round {r}: the rollouts stopped before they finished ({out}); run the same command "
                            "again to resume")
        return str(out)

    def success(self, r: int, label: str, suite: str, policy: dict[str, Any]) -> dict[str, Any]:
        """Greedy success of `policy` on `suite` (each task once), from a tasks report kept in the round."""
        from conway.config import load_config
        from conway.evals.tasks_run import tasks_run

        out = self.work / f"round-{r}" / f"{label}.json"
        if not out.is_file():
            out.parent.mkdir(parents=True, exist_ok=True)  # the base's point comes before round 0's rollouts
            _aside(out.with_name(f"{label}.tasks"))
            cfg = load_config(self.home.config, [*self.overrides(policy), "policy.temperature=0"])
            tasks_run(self.home, cfg, suite, output=str(out), max_steps=self.args.max_steps, quiet=True,
                      say=silent, screen=self.args.screen_size, pool=self.pool(cfg))
        return success_of(out)

    def train(self, r: int, rollouts_dir: str, policy: dict[str, Any]) -> dict[str, Any] | None:
        """The round's candidate (None: no signal, nothing trained)."""
        from training.recipe import load_recipe

        name = f"{self.args.prefix}-r{r}"
        folder = self.home.candidates / name
        if (folder / "manifest.json").is_file():
            return self._candidate(name, json.loads((folder / "train" / "summary.json").read_text()))
        _aside(folder)
        common = [f"model.path={self.args.base_hf}", f"data.path={rollouts_dir}", f"output.candidate={name}",
                  f"convert.base_gguf={self.args.base_gguf}", f"convert.base_mmproj={self.args.base_mmproj}"]
        if self.args.stage == "grpo":
            from training.grpo import train_grpo
            init = [f"rl.init_adapter={policy['adapter']}"] if policy.get("adapter") else []
            recipe = load_recipe(self.args.recipe or "grpo_tiny_cpu", [*common, *init, *self.args.overrides])
            summary = train_grpo(recipe, home=str(self.home.root), say=self.say)
            if summary.get("no_signal"):
                return None
        else:
            from training.rollout_data import rollout_examples
            from training.train_lora import train
            try:
                rollout_examples(rollouts_dir)
            except UserError as exc:  # no successful rollout: nothing to imitate
                self.say(f"round {r}: {exc}")
                return None
            recipe = load_recipe(self.args.recipe or "tiny_cpu", [*common, *self.args.overrides])
            summary = train(recipe, home=str(self.home.root), progress=False, say=self.say)
        return self._candidate(name, summary)

    def _candidate(self, name: str, summary: dict[str, Any]) -> dict[str, Any]:
        folder = self.home.candidates / name
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        return {"name": name, "gguf": str(folder / manifest["gguf"]["model"]),
                "mmproj": str(folder / manifest["gguf"]["mmproj"]), "adapter": str(folder / "adapter"),
                "kl": summary.get("final_kl")}

    # -- a round ------------------------------------------------------------------------------

    def run_round(self, r: int) -> None:
        state = self.round(r)
        if r == 0 and "base_point" not in self.state:  # the curve starts at the base
            base = self.policy(0)
            self.state["base_point"] = self.point(r, "base", base, None, None)
            self.save()
        policy = self.policy(r)
        if "rollouts" not in state:
            state["rollouts"] = self.rollouts(r, policy)
            state["policy"] = policy["name"]
            self.save()
        if "candidate" not in state:
            state["candidate"] = self.train(r, state["rollouts"], policy)
            self.save()
        if "point" not in state:
            from conway.evals.rollouts import load_rollouts
            mean = load_rollouts(state["rollouts"]).get("mean_reward")
            cand = state["candidate"]
            state["point"] = (self.point(r + 1, "candidate", cand, mean, cand.get("kl")) if cand else
                              {**self.state["rounds"][r - 1]["point"], "round": r + 1, "mean_reward": mean,
                               "note": "no signal: nothing trained"} if r else
                              {**self.state["base_point"], "round": 1, "mean_reward": mean,
                               "note": "no signal: nothing trained"})
            self.save()
            self.say(f"round {r}: {json.dumps(state['point'])}")

    def point(self, r: int, label: str, policy: dict[str, Any], mean: float | None, kl: float | None) -> dict[str, Any]:
        held = self.success(r, f"held-out-{label}", self.args.held_out, policy)
        train = self.success(r, f"train-{label}", self.args.train_tasks, policy)
        return {"round": r, "policy": policy["name"], "train_success": train, "held_out_success": held,
                "mean_reward": mean, "kl": kl, "t": time.time()}

    def curve(self) -> list[dict[str, Any]]:
        points = [self.state["base_point"]] + [s["point"] for s in self.state["rounds"] if "point" in s]
        with open(self.work / "curve.jsonl", "w", encoding="utf-8") as fh:
            for p in points:
                fh.write(json.dumps(p) + "\n")
        title = f"{self.args.stage}: {self.args.prefix}"
        plot_curve(points, self.work / "learning_curve.png", title)
        from conway.evals.learning_curve import write_curve_report  # `conway view WORK/learning_curve.json`
        write_curve_report(points, self.work / "learning_curve.json", title=title,
                           command=["python", "-m", "training.iterate", *sys.argv[1:]])
        return points


def success_of(report: Path) -> dict[str, Any]:
    """A tasks report's success with the suite's chance level and the verdict against it (conway.evals.chance)."""
    from conway.evals import chance

    summary = json.loads(report.read_text(encoding="utf-8"))["summary"]
    s = summary["success"]
    rate = {"hits": s["hits"], "n": s["n"], "rate": s["hit_rate"], "ci95": s["hit_rate_ci95"]}
    level = (summary.get("chance") or {}).get("chance")
    return {**rate, **{k: v for k, v in chance.against(rate, level).items() if k != "separated"}}


def _aside(path: Path) -> None:
    """An unfinished piece of a stopped run: moved aside (kept for inspection), to be made again."""
    if path.exists():
        n = 1
        while path.with_name(f"{path.name}.stopped-{n}").exists():
            n += 1
        shutil.move(str(path), str(path.with_name(f"{path.name}.stopped-{n}")))


def plot_curve(points: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rounds = [p["round"] for p in points]
    fig, ax = plt.subplots(figsize=(7, 4))
    for key, colour, name in (("train_success", "tab:blue", "train tasks"), ("held_out_success", "tab:green",
                                                                              "held-out tasks")):
        rates = [p[key]["rate"] for p in points]
        lo = [p[key]["rate"] - p[key]["ci95"][0] for p in points]
        hi = [p[key]["ci95"][1] - p[key]["rate"] for p in points]
        ax.errorbar(rounds, rates, yerr=[lo, hi], fmt="o-", capsize=3, color=colour, label=f"success, {name}")
    level = next((p["held_out_success"].get("chance") for p in points
                  if p["held_out_success"].get("chance") is not None), None)
    if level is not None:  # what a policy acting validly at random scores: the line a result must clear
        ax.axhline(level, color="grey", linestyle="--", linewidth=1, label=f"chance ({level:.0%})")
    means = [(p["round"], p["mean_reward"]) for p in points if p.get("mean_reward") is not None]
    if means:
        ax.plot(*zip(*means), "s--", color="tab:orange", label="mean reward of its rollouts")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("round (0: the base)")
    ax.set_ylabel("success / reward")
    kls = [(p["round"], p["kl"]) for p in points if p.get("kl") is not None]
    if kls:
        ax2 = ax.twinx()
        ax2.plot(*zip(*kls), "x:", color="tab:red", label="KL to the base")
        ax2.set_ylabel("KL per answer token")
        ax2.legend(loc="upper right")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="iterate", description=__doc__.splitlines()[3],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--work", required=True, help="the run's folder (state.json, round-<r>/, curve.jsonl)")
    ap.add_argument("--home", help="Conway home for the candidates (default: $CONWAY_HOME or ~/.conway)")
    ap.add_argument("--train-tasks", required=True, metavar="SUITE", help="the tasks rolled out and trained on")
    ap.add_argument("--held-out", required=True, metavar="SUITE", help="tasks never trained on, measured each round")
    ap.add_argument("--base-hf", required=True, metavar="DIR", help="the base's Hugging Face folder (training)")
    ap.add_argument("--base-gguf", required=True, metavar="FILE", help="the base's GGUF (round 0's rollouts)")
    ap.add_argument("--base-mmproj", required=True, metavar="FILE", help="the base's vision projector GGUF")
    ap.add_argument("--rounds", type=int, default=3, metavar="N", help="rounds (default 3)")
    ap.add_argument("--samples", type=int, default=4, metavar="K", help="rollouts per task per round (default 4)")
    ap.add_argument("--temperature", type=float, default=1.0, help="rollouts' sampling temperature (default 1.0)")
    ap.add_argument("--seed", type=int, default=0, help="round r's rollouts use seeds from seed + r*1,000,000, each rollout its own (default 0)")
    ap.add_argument("--stage", choices=("grpo", "sft"), default="grpo", help="policy gradient or rejection-sampling SFT")
    ap.add_argument("--recipe", help="recipe (default: grpo_tiny_cpu / tiny_cpu)")
    ap.add_argument("--prefix", default="iter", help="candidate names: PREFIX-r<round> (default iter)")
    ap.add_argument("--policy-kind", default="generic", help="the policy family of the rollouts (default generic)")
    ap.add_argument("--policy-override", dest="policy_overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="a configuration override for every rollout and eval (e.g. policy.image_max_tokens=9)")
    ap.add_argument("--max-steps", type=int, default=1, metavar="N", help="decisions per task (default 1)")
    ap.add_argument("--workers", type=int, default=1, metavar="N",
                    help="desktops at once, each worker process loading the policy (default 1)")
    ap.add_argument("--screen", default="1280x800", metavar="WxH", help="the desktops' screen size")
    ap.add_argument("overrides", nargs="*", metavar="key=value", help="recipe overrides")
    args = ap.parse_args(argv)
    from conway.evals.rollouts import parse_screen
    args.screen_size = parse_screen(args.screen)
    if args.rounds < 1:
        raise UserError(f"--rounds must be at least 1 (got {args.rounds})")
    if args.workers < 1:
        raise UserError(f"--workers must be at least 1 (got {args.workers})")
    return args


def iterate(args: argparse.Namespace, say: Callable[[str], None] = print) -> list[dict[str, Any]]:
    run = Rounds(args, say)
    for r in range(args.rounds):
        run.run_round(r)
    return run.curve()


def chance_phrase(s: dict[str, Any]) -> str:
    """"above chance 50%" / "at chance 33%" / "chance unknown" for one success record."""
    if s.get("chance") is None:
        return "chance unknown"
    return f"{s['verdict']} {s['chance']:.0%}"


def main(argv: list[str] | None = None) -> int:
    try:
        points = iterate(parse_args(argv))
    except UserError as exc:
        sys.stderr.write(f"iterate: error: {exc}\n")
        return 1
    for p in points:
        h = p["held_out_success"]
        print(f"round {p['round']}: {p['policy']:<12} held-out {h['hits']}/{h['n']} ({h['rate']:.0%}, 95% CI "
              f"{h['ci95'][0]:.0%}-{h['ci95'][1]:.0%}; {chance_phrase(h)}); train {p['train_success']['rate']:.0%}; "
              f"mean reward {p.get('mean_reward')}; KL {p.get('kl')}" + (f"  [{p['note']}]" if p.get("note") else ""))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
