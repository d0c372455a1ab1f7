"""python -m scripts.bench.bench_view [--steps 10000] [--shots 200] [--json out.json]

What `conway view` costs on a long session, against `conway export` of the same
journal (same run, same machine: the export reads the journal and builds the
same step records, so the ratio is the viewer's own work):

* a session of N steps (observation, decision with a thought, result; every
  97th step an error) written to a fresh home's journal, the first `--shots`
  steps with a real 1280x800 PNG screenshot archived;
* `conway export` (the baseline), `conway view` (cold: thumbnails made), and
  `conway view` again (warm: thumbnails from the cache under the home);
* the site's size: pages, the largest page, the data file, all bytes.

Prints a Markdown table; `--json` also writes the numbers.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from conway.cli.main import main as conway  # noqa: E402
from conway.store.journal import Journal, make_event  # noqa: E402


def make_home(root: Path, steps: int, shots: int) -> str:
    from PIL import Image, ImageDraw

    shots_dir = root / "screenshots"
    shots_dir.mkdir(parents=True)
    j = Journal(root / "journal", fsync="none")
    sid = "bench-session"
    j.append(make_event(sid, 0, "session", {"event": "start", "model_id": "bench", "config_digest": "0" * 64}, now=1.0))
    for i in range(1, steps + 1):
        t = float(i)
        shot = None
        if i <= shots:
            img = Image.new("RGB", (1280, 800), (40 + i % 150, 70, 110))
            ImageDraw.Draw(img).rectangle([100 + i % 500, 100, 400 + i % 500, 300], fill=(240, 240, 240))
            buf = io.BytesIO()
            img.save(buf, format="PNG", compress_level=1)
            shot = f"screenshots/step-{i:06d}.png"
            (root / shot).write_bytes(buf.getvalue())
        j.append(make_event(sid, i, "observation", {"source": "screen", "captured_size": [1280, 800],
                                                    "screenshot": shot, "capture_ms": 12.0}, now=t))
        act = {"type": "click", "x": float(i % 1280), "y": float(i % 800), "button": "left"}
        j.append(make_event(sid, i, "decision", {"raw_text": json.dumps({"thought": f"step {i}", "action": act}),
                                                  "thought": f"I will click item {i} because the list says so.",
                                                  "actions": [act], "latency_s": 0.8, "model_id": "bench",
                                                  "sent_size": [1288, 812], "captured_size": [1280, 800],
                                                  "convention": "absolute"}, now=t + 0.8))
        kind = "error" if i % 97 == 0 else "result"
        j.append(make_event(sid, i, kind, {"action": act, "ok": kind == "result",
                                           "error": "target vanished" if kind == "error" else None}, now=t + 0.9))
    j.close()
    return sid


def timed(argv: list[str]) -> float:
    t0 = time.perf_counter()
    code = conway(argv)
    if code != 0:
        raise SystemExit(f"conway {' '.join(argv)} exited {code}")
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--shots", type=int, default=200)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "home"
        sid = make_home(root, args.steps, args.shots)
        home = ["--home", str(root)]
        quiet = io.StringIO()
        stdout, sys.stdout = sys.stdout, quiet
        try:
            export_s = timed([*home, "export", "--output", str(Path(tmp) / "traj.jsonl")])
            cold_s = timed([*home, "view", "--output", str(Path(tmp) / "site")])
            warm_s = timed([*home, "view", "--output", str(Path(tmp) / "site")])
        finally:
            sys.stdout = stdout
        site = Path(tmp) / "site"
        pages = sorted((site / "s" / sid).glob("page-*.html"))
        files = [p for p in site.rglob("*") if p.is_file()]
        numbers = {
            "steps": args.steps, "screenshots": args.shots, "export_s": round(export_s, 3),
            "view_cold_s": round(cold_s, 3), "view_warm_s": round(warm_s, 3),
            "cold_vs_export": round(cold_s / export_s, 2), "warm_vs_export": round(warm_s / export_s, 2),
            "pages": len(pages), "largest_page_kb": round(max(p.stat().st_size for p in pages) / 1024, 1),
            "data_js_kb": round((site / "s" / sid / "data.js").stat().st_size / 1024, 1),
            "site_mb": round(sum(p.stat().st_size for p in files) / 1e6, 1),
        }
    print("| steps | screenshots | export s | view cold s (×export) | view warm s (×export) | pages | largest page KB | data.js KB | site MB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    n = numbers
    print(f"| {n['steps']} | {n['screenshots']} | {n['export_s']} | {n['view_cold_s']} ({n['cold_vs_export']}×) | "
          f"{n['view_warm_s']} ({n['warm_vs_export']}×) | {n['pages']} | {n['largest_page_kb']} | {n['data_js_kb']} | "
          f"{n['site_mb']} |")
    if args.json:
        Path(args.json).write_text(json.dumps(numbers, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
