"""The tiny base's making (issue 46): a perception stage on generated screens, before any learning under test.

    .venv/bin/python -m scripts.build.screen_pretraining make [--config configs/tiny_vlm_perceive.yaml]
    .venv/bin/python -m scripts.build.screen_pretraining diagnose --hf HF_DIR --phases caption:600,colour:400

A random-weight tiny Qwen2-VL trained on labelled clicks stays on the marginal answer (measured: docs/learning.md):
nothing pulls it off the plateau where the image is ignored. This stage trains the whole model (not LoRA) on
screens drawn as the perceivable suite's board draws them (scripts/demos/perceivable_targets.py's layout: the same
colours, sides, cells and offsets), in the loop's short prompt form (the goals block and the last line, as
training.data.Example.short(keep_goals=True) makes it), on tasks that are NOT the suite's:

    caption   "Say what is in each quarter of the screen." -> thought "top left: red, top right: nothing, ..."
    places    "Say where each colour is."                  -> thought "red: top left, green: nowhere, ..."
    where     "Where is the blue square?"                  -> thought "top right"   (words, action wait)
    where_said  the same, the thought saying the colour first: "blue: top right" (one look-up per token)
    single    "Click the square." on a screen with ONE target -> a click on it (the action format, no choice)
    colour    the suite's own task ("Click the blue square." among 2-4 -> the click): diagnosis only, never
              in the base's making (that is the learning under test)
    colour_said  the same, the thought saying first what and where ("blue: top right"): one look-up per token
              (the colour from the instruction, its place, then the click), diagnosis only
    any_said  "Click a square." among 2-4 -> any one of them, said first ("green: bottom left") then clicked: the
              answer's form and the look-up from a colour said to its place, with no colour named to choose by
              (the reward stage's start: it says and clicks a target at random, and rewards make it the named one)
    not_said  "Click a square that is not blue." -> one of the others, said first then clicked: a colour named in a
              click instruction is not by itself the one to click (the instruction's words decide)
    where_coded  "Where is colour 3?" -> "blue: top right" (colours numbered in pt.COLOURS' order), action wait: the
              look-up from a colour word said to its place, without ever copying a colour word from the question

Phases are `task:steps` joined by ","; " | " starts a segment trained with a fresh AdamW (a warm restart), and a
segment ending in "@N" uses seed N for its data. `button` (the config's) writes that button in every click.

`make` builds the tiny base with scripts/build/build_tiny_vlm.py's builder, runs the configured phases on it, and
converts it with the same converter, into .cache/tiny-vlm-bases/<hash>/ keyed by the config and this file's code,
so it is made once. `diagnose` trains phases in-process and prints held-out accuracy per task (teacher-forced
argmax of every answer token: what greedy decoding answers).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

from scripts.demos import perceivable_targets as pt

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache" / "tiny-vlm-bases"
SCREEN = 84
QUADRANTS = ("top left", "top right", "bottom left", "bottom right")
TASKS = ("caption", "places", "where", "where_said", "single", "colour", "colour_said", "any_said", "not_said",
         "where_coded")
TRAIN_SEEDS, HELD_SEEDS = 10_000_000, 20_000_000
"""Layout seeds offset far from the suite's (its train tasks use seed s, its held-out tasks s + 1_000_000)."""
JPEG_QUALITY = 85
"""The generic family's screenshot encoding (conway.imaging.MODEL_ENCODING)."""


def render(targets: list[dict[str, Any]], screen: int = SCREEN) -> bytes:
    """The board's drawing of filled squares (cairo's rectangle x0..x1 inclusive), as the JPEG the loop sends."""
    from PIL import Image, ImageDraw

    im = Image.new("RGB", (screen, screen), tuple(round(c * 255) for c in pt.BACKGROUND))
    draw = ImageDraw.Draw(im)
    for t in targets:
        draw.rectangle(t["box"], fill=tuple(t["rgb"]))
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=JPEG_QUALITY)
    return buf.getvalue()


def quadrant(box: list[int], screen: int = SCREEN) -> int:
    """0-3, row-major: the cell of the 2x2 grid the target lies in (a target never crosses its cell)."""
    cell = screen // 2
    return ((box[1] + box[3]) // 2 // cell) * 2 + (box[0] + box[2]) // 2 // cell


def quadrant_centre(q: int, screen: int = SCREEN) -> tuple[int, int]:
    """A point inside every target of cell q: offsets 1..13 in a 42-px cell put a 28-px side over its centre."""
    cell = screen // 2
    return (q % 2) * cell + cell // 2, (q // 2) * cell + cell // 2


FULL = "@full"
"""A task's suffix for its rows in the loop's full prompt form (the system prompt of a recorded request, then the
goals block, the loop's "Choose the next action" line and the image) rather than the short one."""
FULL_SYSTEM: dict[str, str] = {}
"""The system prompt the full form uses, set by `use_system_of(requests.jsonl)`."""


def use_system_of(requests: Path) -> None:
    """Take the full form's system prompt from the first request a rollout recorded (a loop's real request: the
    constitution, action space and host facts of the run that recorded it)."""
    entry = json.loads(Path(requests).read_text(encoding="utf-8").splitlines()[0])
    system = next(m for m in entry["messages"] if m["role"] == "system")
    content = system["content"]
    FULL_SYSTEM["text"] = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def example(task: str, seed: int, index: int, targets: int = 3, button: str = "") -> Any:
    """One generated row (training.data.Example) of `task`; a task "a+b" alternates a and b by index; a task
    ending in "@full" is in the loop's full prompt form (`use_system_of` first). `button`: written in every click
    ("left": the field the loop's grammar offers after the last coordinate, so the answer never has to choose
    there between ending and going on; "": left out)."""
    from training.data import Example

    if "+" in task:
        parts = task.split("+")
        task = parts[index % len(parts)]
    full = task.endswith(FULL)
    task = task.removesuffix(FULL)
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r} (one of {', '.join(TASKS)})")
    named, drawn = pt.layout(seed, index, max(targets, 2), SCREEN, "colour")
    if task == "single":
        drawn = [t for t in drawn if t["name"] == named]
    at = {quadrant(t["box"]): t["name"] for t in drawn}
    avoided = named
    if task == "not_said":  # the answer is one of the others, drawn by the row's own seed
        named = random.Random(f"not_said:{seed}:{index}").choice(sorted(t["name"] for t in drawn if t["name"] != named))
    q = next(k for k, name in at.items() if name == named)
    said = {"caption": "Say what is in each quarter of the screen.", "where": f"Where is the {named} square?",
            "where_said": f"Where is the {named} square?",
            "where_coded": f"Where is colour {list(pt.COLOURS).index(named) + 1}?",
            "places": "Say where each colour is.",
            "single": "Click the square.", "any_said": "Click a square.",
            "not_said": f"Click a square that is not {avoided}."}.get(task, pt.instruction(named, "colour"))
    if task == "caption":
        answer = {"thought": ", ".join(f"{name}: {at.get(k, 'nothing')}" for k, name in enumerate(QUADRANTS)),
                  "action": {"type": "wait"}}
    elif task == "places":
        place = {name: QUADRANTS[k] for k, name in at.items()}
        answer = {"thought": ", ".join(f"{c}: {place.get(c, 'nowhere')}" for c in pt.COLOURS),
                  "action": {"type": "wait"}}
    elif task == "where":
        answer = {"thought": QUADRANTS[q], "action": {"type": "wait"}}
    elif task in ("where_said", "where_coded"):
        answer = {"thought": f"{named}: {QUADRANTS[q]}", "action": {"type": "wait"}}
    else:
        x, y = quadrant_centre(q)
        thought = f"{named}: {QUADRANTS[q]}" if task in ("colour_said", "any_said", "not_said") else ""  # any: the layout's
        # named target is drawn at random among the screen's, so the said one is any of them
        answer = {"thought": thought, "action": {"type": "click", "x": x, "y": y, **({"button": button} if button else {})}}
    goals = (f'<file name="goals.md">\nTask for this session:\n{said}\n\nStanding goals:\n\\# Goals\n\n'
             'Only the session task.\n</file>')
    last = f"The screenshot below is {SCREEN}x{SCREEN} pixels."
    text = f"{goals}\n\nChoose the next action. Answer with the JSON object only.\n{last}" if full else f"{goals}\n\n{last}"
    messages = [{"role": "user", "content": [{"type": "text", "text": text},
                                             {"type": "image_url", "image_url": {"url": "screen.jpg"}}]}]
    if full:
        if "text" not in FULL_SYSTEM:
            raise ValueError("a full-form row needs the loop's system prompt: use_system_of(requests.jsonl) first")
        messages.insert(0, {"role": "system", "content": FULL_SYSTEM["text"]})
    return Example(messages=messages, image_png=render(drawn), completion=json.dumps(answer),
                   meta={"task": task, "quadrant": q})


def parse_phases(spec: str) -> list[tuple[str, int]]:
    """"caption:600,caption+where:900" -> [("caption", 600), ("caption+where", 900)] (every segment's, in order)."""
    return [phase for phases, _ in parse_segments(spec, 0) for phase in phases]


def parse_segments(spec: str, seed: int) -> list[tuple[list[tuple[str, int]], int]]:
    """"a:500 | b:1200 | b:1600@1" -> one (phases, seed) per segment: each segment is trained with a fresh
    optimizer and its own seed (its data order and layouts; `seed` unless it ends in "@N")."""
    segments = []
    for segment in spec.split("|"):
        head, at, own = segment.strip().rpartition("@")
        segment, at = (head, at) if own.isdigit() else (segment.strip(), "")  # "@full" is a task's suffix
        phases = []
        for part in segment.split(","):
            task, _, steps = part.strip().partition(":")
            for t in task.split("+"):
                if t.removesuffix(FULL) not in TASKS:
                    raise ValueError(f"unknown task {t!r} in {spec!r} (one of {', '.join(TASKS)})")
            phases.append((task, int(steps)))
        segments.append((phases, int(own) if at else seed))
    return segments


def accuracy(model: Any, enc: Any, held: list[dict[str, Any]]) -> float:
    """Share of rows whose every answer token is the argmax given the ones before (greedy's answer)."""
    import torch

    model.eval()
    ok = 0
    with torch.no_grad():
        for j in range(0, len(held), 16):
            chunk = held[j:j + 16]
            batch = enc.collate(chunk)
            batch.pop("labels")
            logits = model(**batch).logits
            for k, it in enumerate(chunk):
                p, n = it["prompt_len"], len(it["input_ids"])
                ok += bool((logits[k, p - 1:n - 1].argmax(-1) == it["input_ids"][p:n]).all())
    model.train()
    return ok / len(held)


def train_segments(model: Any, enc: Any, spec: str, *, lr: float, batch: int, seed: int, targets: int,
                   evals: dict[str, list[dict[str, Any]]] | None = None, eval_every: int = 50,
                   say: Any = print, button: str = "") -> list[dict[str, Any]]:
    """`spec`'s segments one after another (parse_segments), each with a fresh AdamW: a warm restart. Why
    restarts: the base the reward stage learned from was made as such a chain (docs/learning.md), and one optimizer
    over the same phases made a different base, one rewards alone could not move."""
    log, done = [], 0
    for phases, own_seed in parse_segments(spec, seed):
        log += train(model, enc, phases, lr=lr, batch=batch, seed=own_seed, targets=targets, evals=evals,
                     eval_every=eval_every, say=say, first_step=done, button=button)
        done += sum(n for _, n in phases)
    return log


def train(model: Any, enc: Any, phases: list[tuple[str, int]], *, lr: float = 2e-3, batch: int = 16,
          seed: int = 0, targets: int = 3, evals: dict[str, list[dict[str, Any]]] | None = None,
          eval_every: int = 50, say: Any = print, first_step: int = 0, button: str = "") -> list[dict[str, Any]]:
    """Full-parameter AdamW over the phases; returns the log (loss, held-out accuracy per task). `first_step`:
    the steps of the segments before this one (the log's numbering)."""
    import torch

    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    rng = random.Random(f"screen-pretraining:{seed}")
    schedule = [task for task, steps in phases for _ in range(steps)]
    log, started = [], time.time()
    model.train()
    for step, task in enumerate(schedule, 1):
        rows = [enc.encode(example(task, TRAIN_SEEDS + seed, rng.randrange(10 ** 9), targets, button))
                for _ in range(batch)]
        loss = model(**enc.collate(rows)).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if evals and (step % eval_every == 0 or step == len(schedule)):
            point = {"step": first_step + step, "task": task, "loss": round(loss.item(), 4), "s": round(time.time() - started, 1),
                     **{t: round(accuracy(model, enc, h), 4) for t, h in evals.items()}}
            log.append(point)
            say(json.dumps(point))
    return log


def held_out(enc: Any, tasks: list[str], n: int, targets: int = 3,
             button: str = "") -> dict[str, list[dict[str, Any]]]:
    """Encoded held-out rows per task, from a seed no training row uses."""
    return {t: [enc.encode(example(t, HELD_SEEDS, i, targets, button)) for i in range(n)] for t in tasks}


def diagnose(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="screen_pretraining diagnose")
    ap.add_argument("--hf", required=True, help="a tiny base's HF folder (build_tiny_vlm.py --keep-hf)")
    ap.add_argument("--phases", default="colour:400",
                    help="task:steps,...; ' | ' starts a segment with a fresh optimizer, '@N' ends one with its "
                         "own seed (tasks: " + ", ".join(TASKS) + ")")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--targets", type=int, default=3)
    ap.add_argument("--button", default="", help="written in every click's answer (e.g. left; default: left out)")
    ap.add_argument("--eval", type=int, default=48)
    ap.add_argument("--eval-tasks", default="caption,where,single,colour")
    ap.add_argument("--seed", type=int, default=0, help="data order and layouts of the training rows")
    ap.add_argument("--system-from", type=Path, help="a recorded requests.jsonl whose system prompt the @full rows use")
    ap.add_argument("--save", type=Path, help="save the trained model (HF) here")
    ap.add_argument("--eval-every", type=int, default=50)
    a = ap.parse_args(argv)
    if a.system_from:
        use_system_of(a.system_from)
    import torch
    from transformers import Qwen2VLForConditionalGeneration

    from training.data import Encoder

    torch.set_num_threads(1)
    enc = Encoder.from_pretrained(a.hf)
    model = Qwen2VLForConditionalGeneration.from_pretrained(a.hf)
    evals = held_out(enc, a.eval_tasks.split(","), a.eval, a.targets, a.button)
    train_segments(model, enc, a.phases, lr=a.lr, batch=a.batch, targets=a.targets, evals=evals, seed=a.seed,
                   eval_every=a.eval_every, button=a.button)
    if a.save:
        model.save_pretrained(a.save)
        for f in Path(a.hf).iterdir():  # the tokenizer and preprocessor files beside the weights
            if f.is_file() and not (a.save / f.name).exists():
                (a.save / f.name).write_bytes(f.read_bytes())
    return 0


DEFAULT_CONFIG = REPO / "configs" / "tiny_vlm_perceive.yaml"
SETTINGS = {"build_config": str, "phases": str, "lr": float, "batch": int, "targets": int, "seed": int,
            "button": str}


def load(config: Path) -> dict[str, Any]:
    """The stage's settings (every key required, unknown keys an error)."""
    import yaml

    data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    unknown, missing = set(data) - set(SETTINGS), set(SETTINGS) - set(data)
    if unknown or missing:
        raise SystemExit(f"{config}: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")
    settings = {k: kind(data[k]) for k, kind in SETTINGS.items()}
    try:
        parse_phases(settings["phases"])
    except ValueError as exc:  # an unknown task or a step count that is not a number: one line, not a traceback
        raise SystemExit(f"{config}: phases: {exc}") from None
    return settings


def cache_key(settings: dict[str, Any]) -> str:
    """A hash of what decides the base: the stage's settings, the random base's config, and both builders' code."""
    h = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for path in (REPO / settings["build_config"], Path(__file__), REPO / "scripts" / "build" / "build_tiny_vlm.py"):
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _train_saved(src: Path, dst: Path, phases: str, *, lr: float, batch: int, seed: int, targets: int,
                 eval_tasks: list[str], evals: int, say: Any, button: str) -> dict[str, Any]:
    """The phases trained in full on the HF model in `src` (one thread), saved into `dst`: the log and the time.
    `evals` held-out checks in all, on `eval_tasks`."""
    import torch
    from transformers import Qwen2VLForConditionalGeneration

    from training.data import Encoder

    torch.set_num_threads(1)
    enc = Encoder.from_pretrained(src)
    model = Qwen2VLForConditionalGeneration.from_pretrained(src, dtype=torch.float32)
    steps = parse_phases(phases)
    started = time.time()
    log = train_segments(model, enc, phases, lr=lr, batch=batch, seed=seed, targets=targets,
                         evals=held_out(enc, eval_tasks, 48, targets, button),
                         eval_every=max(1, sum(n for _, n in steps) // evals), say=say, button=button)
    model.save_pretrained(dst)
    return {"log": log, "seconds": round(time.time() - started, 1)}


def pretrainer(settings: dict[str, Any], say: Any = print) -> Any:
    """build_tiny_vlm.build's `pretrain` hook: the phases on the freshly built HF folder, saved in place."""

    def run(hf_dir: Path) -> dict[str, Any]:
        tasks = sorted({t for task, _ in parse_phases(settings["phases"]) for t in task.split("+")} | {"colour"})
        done = _train_saved(hf_dir, hf_dir, settings["phases"], lr=settings["lr"], batch=settings["batch"],
                            seed=settings["seed"], targets=settings["targets"], eval_tasks=tasks, evals=6, say=say,
                            button=settings["button"])
        return {"settings": settings, **done}

    return run


def make(config: Path = DEFAULT_CONFIG, *, cache: Path = CACHE, say: Any = print) -> Path:
    """The perceiving base's folder (tiny-vlm.gguf, tiny-vlm-mmproj.gguf, hf/, pretraining.json), made once."""
    from scripts.build import build_tiny_vlm

    settings = load(config)
    out = cache / cache_key(settings)
    if (out / "pretraining.json").is_file():
        return out
    report = build_tiny_vlm.build(out, build_tiny_vlm.load_settings(REPO / settings["build_config"]), keep_hf=True,
                                  pretrain=pretrainer(settings, say))
    (out / "pretraining.json").write_text(json.dumps(report["pretraining"], indent=1) + "\n", encoding="utf-8")
    return out  # pretraining.json is written last: a folder without it is unfinished and made again


def trained_pair(base: Path, out: Path, phases: str, *, lr: float = 1e-3, batch: int = 16, seed: int = 0,
                 targets: int = 3, config: Path = DEFAULT_CONFIG, say: Any = print) -> Path:
    """`phases` trained in full from the made base `base` (its hf/), converted to the GGUF pair in `out` (made
    once: `out/trained.json`, written last, says what it is). The supervised upper bound's candidate: labelled
    rows generated as the stage generates them, from layout seeds far from the suite's. `config`: the stage's
    settings the base was made with (its random base's build config gives the same tokenizer; its `button`, the
    clicks' form the base learned)."""
    from scripts.build import build_tiny_vlm

    if (out / "trained.json").is_file():
        return out
    settings = load(config)

    def run(hf_dir: Path) -> dict[str, Any]:  # the tokenizer beside it is the build's own, the base's too
        done = _train_saved(base / "hf", hf_dir, phases, lr=lr, batch=batch, seed=seed, targets=targets,
                            eval_tasks=["colour_said"], evals=4, say=say, button=settings["button"])
        return {"from": str(base), "phases": phases, "lr": lr, "batch": batch, "seed": seed,
                "button": settings["button"], **done}

    report = build_tiny_vlm.build(out, build_tiny_vlm.load_settings(REPO / settings["build_config"]), keep_hf=True,
                                  pretrain=run)
    (out / "trained.json").write_text(json.dumps(report["pretraining"], indent=1) + "\n", encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["diagnose"]:
        return diagnose(argv[1:])
    if argv[:1] == ["make"]:
        ap = argparse.ArgumentParser(prog="screen_pretraining make")
        ap.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
        ap.add_argument("--cache", type=Path, default=CACHE)
        a = ap.parse_args(argv[1:])
        print(make(a.config, cache=a.cache))
        return 0
    sys.stderr.write(__doc__.split("\n\n")[0] + "\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
