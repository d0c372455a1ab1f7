"""python -m scripts.bench.bench_parsers [--chars 200000] [--repeat 5] [--json out.json]

Worst-case time of the model-output parsers (JSON, OpenCUA, UI-TARS, Qwen3-VL, GTA1, Holo) on
pathological answers: unclosed fences, thousands of headings, deep brackets,
unbalanced quotes, endless ``<think>`` tags … Each shape is built at 10k, 100k
and ``--chars`` characters (the parsers refuse anything over 200,000). Prints
one Markdown row per shape: the best of ``--repeat`` runs in ms at each size
and the 100k/10k ratio, which is about 10 for linear work and about 100 for
quadratic work (a same-run baseline: the machine's speed cancels out).
`tests/policies/test_parser_linear_time.py` asserts the ratio on the same shapes.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]

SETUP = dict(convention="absolute", sent_size=(1932, 1092), captured_size=(1920, 1080))


def _rep(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def _noise(n: int) -> str:
    rng = random.Random(7)
    alphabet = "abc{}[]()\"'`#:\n ,.=_-<>|/\\0123456789"
    return "".join(rng.choice(alphabet) for _ in range(n))


SHAPES: dict[str, Callable[[int], str]] = {
    "opencua: empty code sections": lambda n: _rep("## Code:\n```\n```\n", n),
    "fence opener, no newline": lambda n: "```" + _rep("a", n - 3),
    "fence openers": lambda n: _rep("```python\n", n),
    "tagged fence openers": lambda n: _rep("```json\n{", n),
    "headings": lambda n: _rep("## Thought: x\n", n),
    "bare headings": lambda n: _rep("## Action\n", n),
    "hashes": lambda n: _rep("#", n),
    "spaces then a word": lambda n: _rep(" ", n - 1) + "x",
    "newlines": lambda n: _rep("\n", n),
    "open think tags": lambda n: _rep("<think>", n),
    "close think tags": lambda n: _rep("</think>", n),
    "think pairs": lambda n: _rep("<think>a</think>", n),
    "open braces": lambda n: _rep("{", n),
    "open brackets": lambda n: _rep("[", n),
    "bracket-brace": lambda n: _rep("[{", n),
    "quotes": lambda n: _rep('"', n),
    "nested keys": lambda n: _rep('{"a":', n),
    "empty objects": lambda n: _rep("{} ", n),
    "bare pyautogui calls": lambda n: _rep("pyautogui.click(", n),
    "uitars: action labels": lambda n: _rep("Action: ", n),
    "uitars: unclosed calls": lambda n: _rep("Action: click(start_box='(", n),
    "uitars: thought labels": lambda n: _rep("Thought: ", n),
    "uitars: box tokens": lambda n: _rep("<|box_start|>", n),
    "uitars: points": lambda n: _rep("<point>", n),
    "qwen3vl: open tool_call tags": lambda n: _rep("<tool_call>", n),
    "qwen3vl: tool_call pairs": lambda n: _rep("<tool_call>{}</tool_call>", n),
    "qwen3vl: one block of open brackets": lambda n: "<tool_call>" + _rep("[", n - 11),
    "single quotes": lambda n: _rep("'", n),
    "parentheses": lambda n: _rep("(", n),
    "point: unclosed pairs": lambda n: _rep("(123456789,", n),
    "point: long digit runs": lambda n: "(" + _rep("9", n - 1),
    "noise": _noise,
}


def parsers() -> dict[str, Callable[[str], object]]:
    import conway.policies.families.generic.parse as parse_json
    import conway.policies.families.opencua.parse as parse_opencua
    import conway.policies.families.qwen3vl.parse as parse_qwen3vl
    import conway.policies.families.uitars.parse as parse_uitars
    from conway.policies.families.gta1.parse import parse_pair
    from conway.policies.families.holo.parse import parse_click_json

    return {"json": lambda t: parse_json.parse(t, **SETUP),  # type: ignore[arg-type]
            "opencua": lambda t: parse_opencua.parse(t, **SETUP),  # type: ignore[arg-type]
            "uitars": lambda t: parse_uitars.parse(t, **SETUP),  # type: ignore[arg-type]
            "qwen3vl": lambda t: parse_qwen3vl.parse(t, **SETUP),  # type: ignore[arg-type]
            "gta1": lambda t: parse_pair(t, **SETUP),  # type: ignore[arg-type]
            "holo": lambda t: parse_click_json(t, **SETUP)}  # type: ignore[arg-type]


def best_time(fn: Callable[[str], object], text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - started)
    return best


def measure(sizes: tuple[int, ...] = (10_000, 100_000, 200_000), repeat: int = 5) -> list[dict]:
    rows = []
    for shape, build in SHAPES.items():
        texts = {n: build(n) for n in sizes}
        for name, fn in parsers().items():
            times = {n: best_time(fn, texts[n], repeat) for n in sizes}
            rows.append({"shape": shape, "parser": name, "ms": {n: round(t * 1000, 3) for n, t in times.items()},
                         "ratio_100k_10k": round(times[100_000] / max(times[10_000], 5e-4), 1)})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chars", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    rows = measure((10_000, 100_000, args.chars), args.repeat)
    print(f"| shape | parser | 10k ms | 100k ms | {args.chars // 1000}k ms | 100k/10k |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        ms = r["ms"]
        print(f"| {r['shape']} | {r['parser']} | {ms[10_000]:.2f} | {ms[100_000]:.2f} | {ms[args.chars]:.2f} | "
              f"{r['ratio_100k_10k']} |")
    worst = max(rows, key=lambda r: r["ms"][args.chars])
    print(f"\nworst at {args.chars} chars: {worst['parser']} on '{worst['shape']}', {worst['ms'][args.chars]:.1f} ms; "
          f"highest 100k/10k ratio {max(r['ratio_100k_10k'] for r in rows)}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
