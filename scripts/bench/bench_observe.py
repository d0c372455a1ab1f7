"""python -m scripts.bench.bench_observe [--sizes 1280x800,1920x1080] [--cycles 40] [--json out.json]

Per-cycle cost of observing a real X screen, measured on private Xvfb servers
(one per size, started and stopped here; needs ``xvfb`` and ``xdotool``):

* the stages of one observation — capture (mss), exact hash (sha256), the
  unchanged-screen test (three detectors), conversion to an RGB image, the
  model's resize (qwen2.5-vl with the default 4096-image-token cap) and the
  encodings (PNG default level 6, PNG level 1, JPEG q85) — as median
  milliseconds and as ratios against the bare capture;
* bytes sent per decision for each encoding (the resized image, and its
  base64 form as it travels in an OpenAI-style request);
* how well each unchanged-screen detector does: false changes on a really
  blinking Tk caret and on 300 synthetic carets, and detection of 300 small
  real changes (one typed character) on the captured screen.

Two scenes per size: ``ui`` (an editor full of source code plus widgets, the
common case) and ``photo`` (a photographic wallpaper with a small dialog, the
worst case for lossless encoders). Prints Markdown tables; ``--json`` also
writes the raw numbers.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]

from conway.geometry import QWEN25_VL_RULE, resize_for_model  # noqa: E402
from conway.imaging import ENCODINGS  # noqa: E402
from conway.observe.change import CaretTolerantDiff, GreyHash, TileDiff  # noqa: E402
from conway.observe.screen import ScreenObserver  # noqa: E402

RULE_NAME = "qwen2.5-vl, 4096-token cap"
RULE = QWEN25_VL_RULE.with_token_cap(4096)
DETECTORS: dict[str, Callable[[], Any]] = {"caret": CaretTolerantDiff, "tile": TileDiff, "greyhash": GreyHash}

SCENE = r'''
import sys, tkinter as tk
mode, W, H, src = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
root = tk.Tk(); root.geometry(f"{W}x{H}+0+0"); root.configure(background="#2b2b2b")
if mode == "ui":
    text = tk.Text(root, font=("TkFixedFont", 11), background="#ffffff", insertofftime=300, insertontime=600)
    text.insert("1.0", open(src, encoding="utf-8").read())
    text.place(x=0, y=0, width=int(W * 0.62), height=H - 40)
    lb = tk.Listbox(root, font=("TkDefaultFont", 11))
    for i in range(80):
        lb.insert("end", f"item {i:03d}  {'abcdefghij'[i % 10] * (i % 17 + 3)}")
    lb.place(x=int(W * 0.62) + 10, y=10, width=int(W * 0.38) - 20, height=H // 2)
    for i, label in enumerate(["Open", "Save", "Run", "Stop", "Settings"]):
        tk.Button(root, text=label).place(x=int(W * 0.62) + 10 + i * 90, y=H // 2 + 30, width=80, height=32)
    tk.Entry(root).place(x=int(W * 0.62) + 10, y=H // 2 + 80, width=300, height=28)
    tk.Label(root, text="status: ready", anchor="w", background="#dddddd").place(x=0, y=H - 40, width=W, height=40)
    focus = text
else:
    img = tk.PhotoImage(file=src)  # a "photo" made by the benchmark (PPM)
    c = tk.Canvas(root, highlightthickness=0); c.place(x=0, y=0, width=W, height=H)
    c.create_image(0, 0, image=img, anchor="nw")
    f = tk.Frame(root, background="#eeeeee"); f.place(x=W // 3, y=H // 3, width=420, height=160)
    tk.Label(f, text="Replace the file?", background="#eeeeee").place(x=20, y=20)
    tk.Button(f, text="Cancel").place(x=200, y=110, width=90); tk.Button(f, text="Replace").place(x=300, y=110, width=90)
    focus = tk.Entry(f); focus.place(x=20, y=60, width=380)
root.update(); focus.focus_force(); root.update()
print("ready", flush=True)
root.mainloop()
'''


def start_xvfb(width: int, height: int) -> tuple[subprocess.Popen[bytes], str]:
    """(process, display) of a private Xvfb (conway.machine.xvfb picks a free display number)."""
    from conway.machine.xvfb import start_xvfb as start

    server = start(width, height)
    return server.proc, server.display


def make_photo(size: tuple[int, int], path: Path) -> None:
    """A synthetic photograph: smooth colour fields, soft blobs and sensor noise."""
    import numpy as np
    from PIL import Image

    w, h = size
    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.stack([xx / w * 200 + 30, yy / h * 180 + 40, (xx + yy) / (w + h) * 150 + 60], axis=2)
    for _ in range(12):
        cx, cy, r = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(40, 300)
        blob = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * r * r))[..., None]
        img = img * (1 - blob) + rng.uniform(0, 255, 3) * blob
    img += rng.normal(0, 6, img.shape)
    Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "RGB").save(path, format="PPM")


def start_scene(mode: str, display: str, size: tuple[int, int], tmp: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "DISPLAY": display}
    src = str(ROOT / "conway" / "geometry.py")
    if mode == "photo":
        src = str(tmp / f"photo-{size[0]}x{size[1]}.ppm")
        make_photo(size, Path(src))
    proc = subprocess.Popen([sys.executable, "-c", SCENE, mode, str(size[0]), str(size[1]), src], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    if line.strip() != "ready":
        proc.kill()
        raise RuntimeError(f"the {mode} scene did not start")
    # no window manager: focus follows the pointer; a click puts the caret in the text
    where = (size[0] // 4, size[1] // 3) if mode == "ui" else (size[0] // 3 + 100, size[1] // 3 + 70)
    subprocess.run(["xdotool", "mousemove", str(where[0]), str(where[1]), "click", "1"], env=env, check=True)
    return proc


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def med(fn: Callable[[], Any], n: int) -> tuple[float, Any]:
    """Median wall time in ms of ``n`` calls (after one warm-up) and the last result."""
    out = fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), out


def stage_costs(so: ScreenObserver, cycles: int) -> dict[str, Any]:
    res: dict[str, Any] = {}
    res["capture"], cap = med(so.capture, cycles)
    res["sha256"], _ = med(cap.content_hash, cycles)
    frame = cap.frame()
    digest = cap.content_hash()
    for name, make in DETECTORS.items():
        d = make()
        d.update(frame, digest)
        res[f"change:{name}"], _ = med(lambda d=d: d.update(frame, digest), cycles)
    res["to_image"], image = med(cap.image, cycles)
    res["resize"], (sent, sent_size) = med(lambda: resize_for_model(image, RULE), max(5, cycles // 4))
    res["sent_size"] = list(sent_size)
    for ename, enc in ENCODINGS.items():
        res[f"model:{ename}"], data = med(lambda enc=enc: enc.encode(sent), max(5, cycles // 4))
        res[f"bytes:{ename}"] = len(data)
        res[f"b64:{ename}"] = len(base64.b64encode(data))
        res[f"archive:{ename}"], adata = med(lambda enc=enc: enc.encode(image), max(5, cycles // 4))
        res[f"archive_bytes:{ename}"] = len(adata)
    return res


def _glyphs() -> list[Any]:
    import numpy as np
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default()
    out = []
    for ch in "aeimnorstuwxz,.;-!":
        img = Image.new("L", (12, 16), 0)
        ImageDraw.Draw(img).text((1, 1), ch, fill=255, font=font)
        mask = np.asarray(img) > 127
        if mask.any():
            out.append(mask)
    return out


def detector_accuracy(so: ScreenObserver, trials: int, blink_s: float, seed: int = 1) -> dict[str, Any]:
    """False changes on a real blinking caret and synthetic carets; detection of one typed character."""
    import numpy as np

    res: dict[str, Any] = {}
    # a real caret, blinking for blink_s seconds
    frames = []
    t_end = time.monotonic() + blink_s
    while time.monotonic() < t_end:
        cap = so.capture()
        frames.append((cap.frame().copy(), cap.content_hash()))
        time.sleep(0.05)
    distinct = len({h for _, h in frames})
    for name, make in DETECTORS.items():
        d = make()
        keys = [d.update(f, h).key for f, h in frames]
        res[f"real_blink:{name}"] = f"{len(set(keys)) - 1} key changes / {len(frames)} frames ({distinct} distinct)"
    base, base_hash = frames[0]
    h, w = base.shape
    rnd = random.Random(seed)
    rgb = np.uint32(0x00FFFFFF)
    glyphs = _glyphs()

    def contrast(y: int, x: int) -> np.uint32:
        """Black on a light pixel, white on a dark one: every trial really changes pixels."""
        p = int(base[y, x])
        lum = ((p >> 16) & 255) + 2 * ((p >> 8) & 255) + (p & 255)
        return np.uint32(0xFF000000) if lum > 2 * 255 else np.uint32(0xFFFFFFFF)

    carets, chars = [], []
    for _ in range(trials):
        x, y = rnd.randrange(0, w - 16), rnd.randrange(0, h - 24)
        c = base.copy()
        c[y:y + 18, x:x + 2] = contrast(y, x)
        carets.append(c)
        g = glyphs[rnd.randrange(len(glyphs))]
        t = base.copy()
        region = t[y:y + g.shape[0], x:x + g.shape[1]]
        region[g] = contrast(y + g.shape[0] // 2, x + g.shape[1] // 2)
        chars.append(t)

    def same(a: Any, b: Any) -> bool:  # ignoring X11's padding byte
        return bool(np.array_equal(a & rgb, b & rgb))

    for name, make in DETECTORS.items():
        false_changes = false_off = detected = real = 0
        for c, t in zip(carets, chars):
            ch = hashlib.sha256(c.tobytes()).hexdigest()
            d = make()
            d.update(base, base_hash)
            if d.update(c, ch).changed:  # the caret appears
                false_changes += 1
            d = make()
            d.update(c, ch)
            if d.update(base, base_hash).changed:  # the caret disappears
                false_off += 1
            if same(t, base):
                continue
            real += 1
            d = make()
            d.update(base, base_hash)
            if d.update(t, hashlib.sha256(t.tobytes()).hexdigest()).changed:
                detected += 1
        res[f"caret_false:{name}"] = false_changes / trials
        res[f"caret_off_false:{name}"] = false_off / trials
        res[f"char_detect:{name}"] = detected / max(real, 1)
    return res


def fmt_ms(v: float, base: float) -> str:
    return f"{v:.2f} ms ({v / base:.1f}x)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1280x800,1920x1080")
    ap.add_argument("--scenes", default="ui,photo")
    ap.add_argument("--cycles", type=int, default=40)
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--blink-s", type=float, default=3.0)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    scenes = args.scenes.split(",")
    results: dict[str, Any] = {}
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="bench-observe-"))
    for size in sizes:
        xvfb, display = start_xvfb(*size)
        try:
            for scene in scenes:
                app = start_scene(scene, display, size, tmp)  # type: ignore[arg-type]
                try:
                    with ScreenObserver(display=display) as so:
                        key = f"{size[0]}x{size[1]} {scene}"
                        print(f"measuring {key} ...", file=sys.stderr, flush=True)
                        r = stage_costs(so, args.cycles)
                        if scene == "ui":
                            r.update(detector_accuracy(so, args.trials, args.blink_s))
                        results[key] = r
                finally:
                    stop(app)
        finally:
            stop(xvfb)

    print(f"\n### Per-cycle cost (median of {args.cycles}; ratio to the bare capture)\n")
    keys = list(results)
    print("| stage | " + " | ".join(keys) + " |")
    print("|---|" + "---|" * len(keys))
    rows = ["capture", "sha256", "change:caret", "change:tile", "change:greyhash", "to_image", "resize",
            "model:jpeg85", "model:png1", "model:png6", "archive:png1", "archive:png6", "archive:jpeg85"]
    for row in rows:
        cells = [fmt_ms(results[k][row], results[k]["capture"]) for k in keys]
        print(f"| {row} | " + " | ".join(cells) + " |")
    chosen = ["capture", "sha256", "change:caret", "to_image", "resize", "model:jpeg85"]
    cells = []
    for k in keys:
        total = sum(results[k][s] for s in chosen)
        cells.append(fmt_ms(total, results[k]["capture"]))
    print("| **cycle (capture+hash+caret+image+resize+jpeg85)** | " + " | ".join(cells) + " |")
    print(f"\nresize rule: {RULE_NAME}; sent sizes: " +
          ", ".join(f"{k}: {results[k]['sent_size'][0]}x{results[k]['sent_size'][1]}" for k in keys))

    print("\n### Bytes sent per decision (the resized image; base64 in the request)\n")
    print("| encoding | " + " | ".join(keys) + " |")
    print("|---|" + "---|" * len(keys))
    for e in ENCODINGS:
        cells = [f"{results[k][f'bytes:{e}'] / 1024:.0f} KiB ({results[k][f'b64:{e}'] / 1024:.0f} KiB b64)"
                 for k in keys]
        print(f"| {e} | " + " | ".join(cells) + " |")
    print("\n### Archive size per screenshot (captured size)\n")
    print("| encoding | " + " | ".join(keys) + " |")
    print("|---|" + "---|" * len(keys))
    for e in ENCODINGS:
        print(f"| {e} | " + " | ".join(f"{results[k][f'archive_bytes:{e}'] / 1024:.0f} KiB" for k in keys) + " |")

    acc_keys = [k for k in keys if "caret_false:caret" in results[k]]
    if acc_keys:
        print(f"\n### Unchanged-screen detectors ({args.trials} synthetic trials each)\n")
        print("| detector | " + " | ".join(f"{k}: false change when a caret appears / disappears; "
                                           "typed characters detected; real Tk caret blinking"
                                           for k in acc_keys) + " |")
        print("|---|" + "---|" * len(acc_keys))
        for d in DETECTORS:
            cells = [f"{results[k][f'caret_false:{d}']:.0%} / {results[k][f'caret_off_false:{d}']:.0%}; "
                     f"{results[k][f'char_detect:{d}']:.0%}; {results[k][f'real_blink:{d}']}" for k in acc_keys]
            print(f"| {d} | " + " | ".join(cells) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    for f in tmp.iterdir():
        f.unlink()
    tmp.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())
