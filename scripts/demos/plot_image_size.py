#!/usr/bin/env python3
""".venv/bin/python -m scripts.demos.plot_image_size [SUMMARY.json|DIR ...] [--output PNG]

Hit rate against image size for learning-demo runs of one profile: reads the
WORK/summary.json files that `scripts/demos/learning_demo.py --size PX` writes, draws base
and candidate held-out hit rates with their 95% intervals and the always-click-the-
centre reference against the image side, and prints the same figures as a Markdown
table. Without arguments: one plot per folder of training/results/image_size/ (the
measured runs, one folder per profile), written to training/results/PROFILE_image_size.png.
Exit 1 with one line when there is nothing to plot or a summary cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DIR = REPO / "training" / "results" / "image_size"
CELL = 28  # image tokens of the tiny Qwen2-VL cover 28x28 px


class Refused(Exception):
    """A user mistake: one line, exit 1."""


def load(paths: list[Path]) -> list[dict[str, Any]]:
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files += sorted(p.glob("*.json"))
        elif p.is_file():
            files.append(p)
        else:
            raise Refused(f"no such summary file or folder: {p}")
    if not files:
        raise Refused(f"no learning-demo summaries (*.json) in {', '.join(map(str, paths))}")
    runs = []
    for f in files:
        try:
            run = json.loads(f.read_text(encoding="utf-8"))
            for key in ("profile", "size", "heldout", "base", "candidate", "references"):
                run[key]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise Refused(f"{f} is not a learning-demo summary ({type(exc).__name__}: {exc})") from None
        run["_file"] = f.name
        runs.append(run)
    profiles = sorted({r["profile"] for r in runs})
    if len(profiles) > 1:
        raise Refused(f"summaries of several profiles ({', '.join(profiles)}): plot one profile at a time")
    sizes = [r["size"] for r in runs]
    if len(set(sizes)) != len(sizes):
        raise Refused(f"two summaries for the same size in {sorted(sizes)}: keep one per size")
    return sorted(runs, key=lambda r: r["size"])


def cap(run: dict[str, Any]) -> str:
    for o in run.get("overrides") or []:
        if o.startswith("train.max_seconds="):
            return o.split("=", 1)[1] + " s"
    return "recipe's"


def table(runs: list[dict[str, Any]]) -> str:
    head = ("| image | image tokens | base | candidate | centre click | training | train cap | wall |\n"
            "| --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = []
    for r in runs:
        n, t, px = r["heldout"], r.get("train") or {}, r["size"]
        cells = []
        for label in ("base", "candidate"):
            s = r[label]
            lo, hi = s["hit_rate_ci95"]
            cells.append(f"{s['hits']}/{n} = {s['hit_rate']:.0%} ({lo:.1%}–{hi:.1%})")
        ref = r["references"]
        stop = t.get("stop_reason") or "?"
        rows.append(f"| {px}x{px} | {px // CELL}x{px // CELL} = {(px // CELL) ** 2} | {cells[0]} | {cells[1]} | "
                    f"{ref['centre_click_hits']}/{n} | {t.get('steps')} steps, {t.get('train_s', 0):.0f} s ({stop}) | "
                    f"{cap(r)} | {r.get('wall_s', 0) / 60:.1f} min |")
    return "\n".join([head, *rows])


def plot(runs: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["size"] for r in runs]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, colour, marker, shift in (("base", "tab:grey", "o", 0.985), ("candidate", "tab:green", "s", 1.015)):
        rates = [r[label]["hit_rate"] for r in runs]
        lo = [r[label]["hit_rate"] - r[label]["hit_rate_ci95"][0] for r in runs]
        hi = [r[label]["hit_rate_ci95"][1] - r[label]["hit_rate"] for r in runs]
        ax.errorbar([s * shift for s in sizes], rates, yerr=[lo, hi], marker=marker, color=colour, capsize=4,
                    label=f"{label} (95% interval)")
    ax.plot(sizes, [r["references"]["centre_click_rate"] for r in runs], "k:", label="always click the centre")
    ax.set_xscale("log")  # sizes grow by ratios (84, 112, 168, 224, ...): even spacing
    ax.minorticks_off()
    ax.set_xticks(sizes)
    ax.set_xlim(min(sizes) / 1.12, max(sizes) * 1.25)  # room for the step labels
    ax.set_xticklabels([f"{s}\n({s // CELL}x{s // CELL} tok)" for s in sizes])
    ax.set_xlabel("image side in px, log scale (image tokens)")
    ax.set_ylabel(f"held-out hit rate ({runs[0]['heldout']} cases)")
    ax.set_ylim(-0.02, 1.04)
    caps = sorted({cap(r) for r in runs})
    ax.set_title(f"learning demo, profile {runs[0]['profile']}: hit rate vs image size\n"
                 f"recipe {runs[0].get('recipe', '?')}, {runs[0].get('practice', '?')} practice cases, "
                 f"training capped at {' / '.join(caps)} (2-core CPU)", fontsize=10)
    for r in runs:
        t = r.get("train") or {}
        capped = str(t.get("stop_reason") or "").startswith("max_seconds")
        ax.annotate(f"{t.get('steps')} steps" + (" (cap)" if capped else ""),
                    (r["size"], r["candidate"]["hit_rate"]), textcoords="offset points", xytext=(6, -14), fontsize=8,
                    color="tab:green")
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("summaries", nargs="*", type=Path,
                    help="summaries or folders of one profile (default: each folder of training/results/image_size)")
    ap.add_argument("--output", type=Path, help="PNG to write (default training/results/PROFILE_image_size.png)")
    args = ap.parse_args(argv)
    folders = sorted(p for p in DEFAULT_DIR.iterdir() if p.is_dir()) if DEFAULT_DIR.is_dir() else []
    groups = [args.summaries] if args.summaries else [[p] for p in folders]
    if args.output and len(groups) > 1:
        print("plot_image_size: --output names one plot: give the summaries of one profile", file=sys.stderr)
        return 1
    try:
        loaded = [load(g) for g in groups] or [load([DEFAULT_DIR])]
    except Refused as exc:
        print(f"plot_image_size: {exc}", file=sys.stderr)
        return 1
    for runs in loaded:
        out = args.output or REPO / "training" / "results" / f"{runs[0]['profile']}_image_size.png"
        plot(runs, out)
        shown = out.relative_to(REPO) if out.is_relative_to(REPO) else out
        print(f"profile {runs[0]['profile']}:\n{table(runs)}\nplot: {shown}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
