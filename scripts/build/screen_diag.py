"""Diagnosis (issue 46): can a tiny Qwen2-VL, trained in full on generated perceivable screens, pick by colour?

    PYTHONPATH=. .venv/bin/python -m scripts.build.screen_diag --hf BASE/hf [--steps 400] [text.hidden_size=128 ...]

No desktop, no llama.cpp: screens drawn as the suite's board draws its squares, the loop's short prompt (goals +
last line), the answer a click at the named target's quadrant centre, full-parameter AdamW, held-out accuracy by
teacher-forced argmax of every answer token (= greedy decoding's answer).
"""

from __future__ import annotations

import argparse
import io
import json
import random
import sys
import time

from scripts.demos import perceivable_targets as pt


def render(targets: list[dict], screen: int = 84, quality: int = 85) -> bytes:
    from PIL import Image, ImageDraw

    bg = tuple(round(c * 255) for c in pt.BACKGROUND)
    im = Image.new("RGB", (screen, screen), bg)
    d = ImageDraw.Draw(im)
    for t in targets:
        x0, y0, x1, y1 = t["box"]
        d.rectangle([x0, y0, x1, y1], fill=tuple(t["rgb"]))
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def quadrant_centre(box: list[int], screen: int = 84) -> tuple[int, int]:
    cell = screen // 2
    cx, cy = (box[0] + box[2]) // 2, (box[1] + box[3]) // 2
    return (cx // cell) * cell + cell // 2, (cy // cell) * cell + cell // 2


QUADRANTS = ("top left", "top right", "bottom left", "bottom right")


def example(seed: int, i: int, count: int, task: str = "colour"):
    from training.data import Example

    if "+" in task:
        parts = task.split("+")
        task = parts[i % len(parts)]
    named, targets = pt.layout(seed, i, max(count, 2), 84, "colour")
    if task == "single":
        targets = [t for t in targets if t["name"] == named]
    box = next(t["box"] for t in targets if t["name"] == named)
    x, y = quadrant_centre(box)
    said = "Click the square." if task == "single" else pt.instruction(named, "colour")
    if task == "where":
        said = f"Where is the {named} square?"
    if task == "caption":
        said = "Say what is in each quarter of the screen."
        at = {}
        for t in targets:
            qx, qy = quadrant_centre(t["box"])
            at[(qy // 42) * 2 + qx // 42] = t["name"]
        caption = ", ".join(f"{q}: {at.get(k, 'nothing')}" for k, q in enumerate(QUADRANTS))
    goals = (f'<file name="goals.md">\nTask for this session:\n{said}\n\nStanding goals:\n'
             '\\# Goals\n\nOnly the session task.\n</file>')
    msgs = [{"role": "user", "content": [{"type": "text", "text": goals + "\n\nThe screenshot below is 84x84 pixels."},
                                         {"type": "image_url", "image_url": {"url": "x"}}]}]
    if task == "where":
        caption = QUADRANTS[(y // 42) * 2 + x // 42]
    ans = json.dumps({"thought": caption, "action": {"type": "wait"}} if task in ("caption", "where") else
                     {"thought": "", "action": {"type": "click", "x": x, "y": y}})
    return Example(messages=msgs, image_png=render(targets), completion=ans)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hf", required=True)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--targets", type=int, default=3)
    ap.add_argument("--eval", type=int, default=96)
    ap.add_argument("--task", default="colour:400", help="phases: task:steps,task:steps (single|colour|caption|mix)")
    ap.add_argument("--eval-task", default=None)
    ap.add_argument("overrides", nargs="*")
    a = ap.parse_args(argv)
    import torch
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    from training.data import Encoder

    torch.set_num_threads(1)
    torch.manual_seed(0)
    enc = Encoder.from_pretrained(a.hf)
    cfg = Qwen2VLConfig.from_pretrained(a.hf)
    for o in a.overrides:
        k, v = o.split("=", 1)
        part, key = k.split(".", 1)
        obj = cfg.text_config if part == "text" else cfg.vision_config
        val = json.loads(v)
        if key == "rope_theta":
            obj.rope_parameters["rope_theta"] = val
        elif key == "mrope_section":
            obj.rope_parameters["mrope_section"] = val
        else:
            setattr(obj, key, val)
    t = cfg.text_config
    t.layer_types = ["full_attention"] * t.num_hidden_layers
    t.max_window_layers = t.num_hidden_layers
    if cfg.vision_config.hidden_size != cfg.text_config.hidden_size:
        cfg.vision_config.hidden_size = cfg.text_config.hidden_size
    model = Qwen2VLForConditionalGeneration(cfg)
    print("params", sum(p.numel() for p in model.parameters()), flush=True)
    phases = [(t, int(n)) for t, n in (p.split(":") for p in a.task.split(","))]
    evals = sorted({t for t, _ in phases for t in t.split("+")} | ({a.eval_task} if a.eval_task else set()))
    helds = {t: [enc.encode(example(10**6, i, a.targets, t)) for i in range(a.eval)] for t in evals}
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.0)
    rng = random.Random(0)
    t0 = time.time()

    def evaluate(held) -> float:
        model.eval()
        ok = 0
        with torch.no_grad():
            for j in range(0, len(held), 16):
                b = enc.collate(held[j:j + 16])
                b.pop("labels")
                logits = model(**b).logits
                for k, it in enumerate(held[j:j + 16]):
                    p = it["prompt_len"]
                    n = len(it["input_ids"])
                    pred = logits[k, p - 1:n - 1].argmax(-1)
                    ok += bool((pred == it["input_ids"][p:n]).all())
        model.train()
        return ok / len(held)

    schedule = [t for t, n in phases for _ in range(n)]
    for step, task in enumerate(schedule, 1):
        items = [enc.encode(example(0, rng.randrange(10**7), a.targets, task)) for _ in range(a.batch)]
        b = enc.collate(items)
        loss = model(**b).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == len(schedule):
            acc = " ".join(f"{t} {evaluate(h):.1%}" for t, h in helds.items())
            print(f"step {step} {task} loss {loss.item():.3f} held-out {acc} {time.time() - t0:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
