"""Fuzzed model outputs through the three parsers (generic JSON, OpenCUA, UI-TARS).

Each input is a mutation (1-3 mutators) of a valid or hostile answer: the
seeds below plus the parser corpus under tests/data/parser_corpus when it is
there. Every input goes through all three parsers. Mutators: truncation, byte
(character) flips, deletion/duplication, splicing two answers, code injection
(payloads that would touch a canary file, set a flag in `builtins` or the
environment if anything evaluated them), giant numbers, deep nesting, unicode
(bidi marks, zero-width, fullwidth digits, combining marks, lone surrogates,
NUL) and giant repeats of one fragment up to the 200,000-character input limit.

Promises checked: no exception escapes `parse`, no "internal … parser error"
problem (the guard's last resort), no warning (Python's SyntaxWarning would reach
the user's terminal), no input over 50 ms (an input over 50 ms
of wall time is timed again three times in this thread's CPU time and the
minimum counts, so a busy shared machine does not; a parse still running
after 3 s is stopped by an alarm and counted), the canary untouched. The canary
is armed: a positive control runs the standalone payloads as a Python program
in a throw-away folder and shows each one does create its file.

Input i of seed S is reproducible: `mutate(random.Random(f"{S}:{i}"), ...)`;
violations name the parser, the index and the mutators.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Callable

from .common import REPO, Check, ProofResult, Violations

SLOW_MS = 50.0
FLAG = "CONWAY_FUZZ_CANARY"
CORPUS = REPO / "tests" / "data" / "parser_corpus"

SEEDS: dict[str, list[str]] = {
    "json": [
        '{"type": "click", "x": 100, "y": 200}',
        '{"thought": "open the menu", "action": {"type": "double_click", "x": 10.5, "y": 20}}',
        '```json\n{"type": "type_text", "text": "hello world"}\n```',
        'I will scroll. {"type": "scroll", "x": 5, "y": 6, "dy": -3} done',
        '[{"type": "hotkey", "keys": ["ctrl", "c"]}, {"type": "key", "key": "enter"}]',
        '{"thought": "t", "actions": [{"type": "drag", "x": 1, "y": 2, "to_x": 3, "to_y": 4}]}',
        '<think>hmm</think>{"type": "finish", "status": "DONE", "message": "ok"}',
        '{"type": "wait", "seconds": 2}',
        '{"type": "shell", "command": "ls -la"}',
        '{"type": "append_file", "path": "notes.md", "text": "x\\n"}',
        '{"action": "click", "x": 10, "y": 20}',
        '{"name": "click", "arguments": {"coordinate": [10, 20]}}',
        '{"type": {}}', '{"type": []}', '{"y": 1e400, "x": 1, "type": "click"}',
    ],
    "opencua": [
        "## Thought:\nClick it.\n\n## Action:\nClick the button.\n\n## Code:\n```python\npyautogui.click(x=0.5, y=0.25)\n```",
        "```python\npyautogui.moveTo(x=0.1, y=0.2)\npyautogui.dragTo(x=0.3, y=0.4, button='left')\n```",
        "## Code:\n```python\npyautogui.write(message='héllo ✓')\n```",
        "## Code:\n```python\npyautogui.hotkey('ctrl', 'shift', 't')\n```",
        "## Code:\n```python\npyautogui.scroll(-5, x=0.5, y=0.5)\n```",
        "## Code:\n```python\ncomputer.terminate(status='success', answer='done')\n```",
        "## Code:\n```code\ncomputer.wait(seconds=1)\n```",
        "pyautogui.press('enter', presses=3)",
        "## Code:\n```\n```\n" * 50,
    ],
    "uitars": [
        "Thought: click the icon\nAction: click(start_box='(100,200)')",
        "Thought: t\nAction: left_double(start_box='<|box_start|>(10,20)<|box_end|>')",
        "Action: drag(start_box='(1,2)', end_box='(300,400)')",
        "Thought: type\nAction: type(content='it\\'s done\\n')",
        "Action: hotkey(key='ctrl c')",
        "Action: scroll(start_box='(5,5)', direction='down')",
        "Action: click(point='<point>10 20</point>')",
        "Action: finished(content='all good')",
        "Action: call_user()",
        "Action: wait()\n\nAction: press(key='enter')",
    ],
}

PAYLOADS = [  # each would leave a trace if anything evaluated or ran it; {c} is the canary file
    "__import__('os').system('touch {c}')",
    "open('{c}', 'w').write('x')",
    "__import__('pathlib').Path('{c}').touch()",
    "exec(\"open('{c}', 'w').close()\")",
    "eval(\"__import__('pathlib').Path('{c}').touch()\")",
    "getattr(__import__('os'), 'system')('touch {c}')",
    "setattr(__import__('builtins'), '" + FLAG + "', 1)",
    "__import__('os').environ.__setitem__('" + FLAG + "', '1')",
    "__import__('subprocess').run(['touch', '{c}'])",
    "pyautogui.click(x=__import__('pathlib').Path('{c}').touch() or 1, y=1)",
    "computer.wait(seconds=__import__('os').system('touch {c}'))",
]
SHELLISH = ["$(touch {c})", "`touch {c}`", "{{{{ __import__('os').system('touch {c}') }}}}", "; touch {c}"]

UNICODE = ["\u202e", "\u200b", "\u200d", "\ufeff", "１２３", "\u0301", "\ud800", "\udfff", "\x00", "\u2028",
           "é", "✓", "😀", "ｐｙａｕｔｏｇｕｉ", "\u0435", "\U0010ffff", "\r\n", "\t", "\\u0000"]
FRAGMENTS = ["## Code:\n```\n```\n", "```python\n", "```", "{", "[", "(", "<think>", "</think>",
             "Action: ", "click(", "\\", "'", '"', "\n", "## Thought:\n", "pyautogui.click(", "[{", '{"a":',
             "start_box='(", "<|box_start|>", "1,", "Thought: ", " ", "0" * 10]
NESTERS = [("[", "]"), ("{\"a\":", "}"), ("(", ")"), ("pyautogui.click(x=(", "), y=1)"), ("click(start_box=(", "))")]


def load_seeds() -> dict[str, list[str]]:
    seeds = {k: list(v) for k, v in SEEDS.items()}
    if CORPUS.is_dir():
        for kind in seeds:
            for folder in (CORPUS / kind, CORPUS / "hostile" / kind):
                for p in sorted(folder.glob("*.txt")):
                    seeds[kind].append(p.read_text(encoding="utf-8"))
    return seeds


def mutate(rng: random.Random, seeds: dict[str, list[str]], canary: Path) -> tuple[str, list[str]]:
    kind = rng.choice(sorted(seeds))
    text = rng.choice(seeds[kind])
    names = []
    for _ in range(rng.choice((1, 1, 2, 2, 3))):
        name, fn = rng.choice(MUTATORS)
        text = fn(rng, text, seeds, canary)
        names.append(name)
    return text[:200_500], [f"seed:{kind}"] + names


def _pos(rng: random.Random, text: str) -> int:
    return rng.randint(0, len(text))


def m_truncate(rng, text, seeds, canary):
    return text[:_pos(rng, text)] if rng.random() < 0.7 else text[_pos(rng, text):]


def m_flip(rng, text, seeds, canary):
    chars = list(text)
    for _ in range(rng.randint(1, 8)):
        if not chars:
            break
        i = rng.randrange(len(chars))
        chars[i] = rng.choice([chr(rng.randint(0, 127)), chr(rng.randint(128, 0x2FFF)), rng.choice(UNICODE),
                               chr(ord(chars[i][:1] or "a") ^ (1 << rng.randint(0, 6)))])
    return "".join(chars)


def m_delete_dup(rng, text, seeds, canary):
    a, b = sorted((_pos(rng, text), _pos(rng, text)))
    return text[:a] + text[b:] if rng.random() < 0.5 else text[:b] + text[a:b] * rng.randint(2, 5) + text[b:]


def m_splice(rng, text, seeds, canary):
    other = rng.choice(seeds[rng.choice(sorted(seeds))])
    return text[:_pos(rng, text)] + other[_pos(rng, other):]


def m_inject(rng, text, seeds, canary):
    payload = rng.choice(PAYLOADS + SHELLISH).format(c=canary)
    where = rng.random()
    if where < 0.25:  # as the whole code / action / JSON value
        return rng.choice([f"## Code:\n```python\n{payload}\n```", f"Thought: x\nAction: {payload}",
                           f"Action: click(start_box={payload})", f'{{"type": "click", "x": {payload}, "y": 1}}',
                           f'{{"type": "type_text", "text": {json.dumps(payload)}}}', payload,
                           f"```python\npyautogui.moveTo(x=0.1, y=0.2)\n{payload}\n```"])
    i = _pos(rng, text)
    return text[:i] + payload + text[i:]


def m_number(rng, text, seeds, canary):
    big = rng.choice(["9" * rng.randint(20, 5000), "1e999", "-1e308", "1e-400", "NaN", "Infinity", "-Infinity",
                      "0x7fffffff", "1_000_000", "1" + "0" * 400, "-0", "4.9e-324", "1" * 4301,
                      "9" * 10 + "." + "9" * 3000, "2**10000", "10**10**10"])
    digits = [i for i, ch in enumerate(text) if ch.isdigit()]
    if not digits:
        i = _pos(rng, text)
        return text[:i] + big + text[i:]
    i = rng.choice(digits)
    j = i
    while j < len(text) and (text[j].isdigit() or text[j] == "."):
        j += 1
    return text[:i] + big + text[j:]


def m_nest(rng, text, seeds, canary):
    open_, close = rng.choice(NESTERS)
    depth = rng.choice((20, 50, 100, 200, 500, 1000, 1000, 5000, 30000))
    inner = rng.choice([text, "1", ""])
    body = open_ * depth + inner + (close * depth if rng.random() < 0.7 else "")
    return body[:199_000]


def m_unicode(rng, text, seeds, canary):
    for _ in range(rng.randint(1, 6)):
        i = _pos(rng, text)
        text = text[:i] + rng.choice(UNICODE) + text[i:]
    return text


def m_repeat(rng, text, seeds, canary):
    frag = rng.choice(FRAGMENTS) if rng.random() < 0.6 or not text else text[:rng.randint(1, min(len(text), 40))]
    target = rng.choice((20_000, 100_000, 199_000))
    return (frag * (target // max(1, len(frag)) + 1))[:target] + (text if rng.random() < 0.5 else "")


MUTATORS: list[tuple[str, Callable]] = [
    ("truncate", m_truncate), ("truncate", m_truncate), ("flip", m_flip), ("flip", m_flip),
    ("delete/dup", m_delete_dup), ("splice", m_splice), ("inject", m_inject), ("inject", m_inject),
    ("number", m_number), ("number", m_number), ("nest", m_nest), ("unicode", m_unicode), ("unicode", m_unicode),
]
GIANT_SHARE = 0.01
"""Share of inputs that get an extra giant-repeat mutation (they cost the most time)."""


def parsers() -> dict[str, Callable[..., Any]]:
    import conway.policies.families.generic.parse as parse_json
    import conway.policies.families.opencua.parse as parse_opencua
    import conway.policies.families.uitars.parse as parse_uitars

    return {"json": parse_json.parse, "opencua": parse_opencua.parse, "uitars": parse_uitars.parse}


SETUPS = [("absolute", (1932, 1092), (1920, 1080)), ("relative", (1288, 728), (2560, 1440)),
          ("relative1000", (1000, 1000), (1920, 1080)), ("absolute", (640, 400), (640, 400))]


def _is_internal(message: str) -> bool:
    m = message.lower()
    return "internal" in m and "parser error" in m


def canary_positive_control(folder: Path) -> tuple[int, int, list[str]]:
    """Run each standalone payload as a Python program; return (armed, tried, failures)."""
    runnable = [p for p in PAYLOADS if not p.startswith(("pyautogui", "computer"))]
    code_lines, files = [], []
    for n, p in enumerate(runnable):
        c = folder / f"control-{n}"
        files.append(c)
        code_lines.append(p.format(c=c))
    program = "\n".join(f"try:\n    {line}\nexcept Exception as e:\n    print('payload', {n}, e)"
                        for n, line in enumerate(code_lines))
    program += (f"\nimport builtins, os\nif getattr(builtins, {FLAG!r}, None): open({str(folder / 'flag-builtins')!r}, 'w')"
                f"\nif os.environ.get({FLAG!r}): open({str(folder / 'flag-env')!r}, 'w')\n")
    subprocess.run([sys.executable, "-c", program], cwd=folder, capture_output=True, timeout=60)
    armed, failures = 0, []
    for n, (p, c) in enumerate(zip(runnable, files)):
        if FLAG in p:
            c = folder / ("flag-builtins" if "builtins" in p else "flag-env")
        if c.exists():
            armed += 1
        else:
            failures.append(p)
    return armed, len(runnable), failures


ABORT_S = 3.0
"""A parse still running after this is stopped (SIGALRM) and counted slow, so a quadratic case cannot stall the proof."""


class _Deadline(BaseException):
    """Raised by the alarm inside a parse that ran past ABORT_S (a BaseException: the parser's guard lets it pass)."""


def _on_alarm(signum, frame):
    raise _Deadline()


def _timed(fn, text: str, convention: str, sent, captured, clock=time.perf_counter) -> tuple[Any, float]:
    armed = _ALARM and threading.current_thread() is threading.main_thread()
    if armed:
        signal.setitimer(signal.ITIMER_REAL, ABORT_S)
    t0 = clock()
    try:
        out = fn(text, convention=convention, sent_size=sent, captured_size=captured)
    finally:
        ms = (clock() - t0) * 1000
        if armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
    return out, ms


_ALARM = hasattr(signal, "setitimer")


def prove(inputs: int = 100_000, seed: int = 0, say=print) -> ProofResult:
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="conway-fuzz-"))
    canary = work / "canary" / "EXECUTED"
    canary.parent.mkdir()
    v = Violations()
    seeds = load_seeds()
    fns = parsers()
    times_ms: list[float] = []
    slowest: list[tuple[float, str]] = []
    longest = 0
    outcome = {"accepted": 0, "rejected": 0}
    by_mutator: dict[str, int] = {}
    slow_by = dict.fromkeys(fns, 0)
    internal_by = dict.fromkeys(fns, 0)
    old_handler = signal.signal(signal.SIGALRM, _on_alarm) if _ALARM else None
    stack = contextlib.ExitStack()
    try:
        control = work / "control"
        control.mkdir()
        armed, tried, unarmed = canary_positive_control(control)
        caught = stack.enter_context(warnings.catch_warnings(record=True))  # a parser must not print warnings
        warnings.simplefilter("always")
        n_warnings = 0
        for i in range(inputs):
            rng = random.Random(f"{seed}:{i}")
            text, recipe = mutate(rng, seeds, canary)
            if rng.random() < GIANT_SHARE:
                text = m_repeat(rng, text, seeds, canary)
                recipe.append("giant")
            for name in recipe[1:]:
                by_mutator[name] = by_mutator.get(name, 0) + 1
            longest = max(longest, len(text))
            convention, sent, captured = rng.choice(SETUPS)
            for pname, fn in fns.items():
                where = f"input {i} (seed {seed}, {'+'.join(recipe)}, {len(text)} chars) → {pname} parser"
                try:
                    out, ms = _timed(fn, text, convention, sent, captured)
                except _Deadline:
                    v.add(f"inputs over {SLOW_MS:g} ms", f"{where}: aborted after {ABORT_S:g} s; starts {text[:60]!r}")
                    slow_by[pname] += 1
                    times_ms.append(ABORT_S * 1000)
                    continue
                except BaseException as exc:
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    v.add("exceptions escaping parse", f"{where}: {type(exc).__name__}: {str(exc)[:200]}")
                    continue
                if ms > SLOW_MS:  # re-time in this thread's CPU time (min of 3): the parser, not a busy machine
                    try:
                        ms = min(_timed(fn, text, convention, sent, captured, time.thread_time)[1] for _ in range(3))
                    except _Deadline:
                        pass
                    if ms > SLOW_MS:
                        v.add(f"inputs over {SLOW_MS:g} ms", f"{where}: {ms:.0f} ms; starts {text[:60]!r}")
                        slow_by[pname] += 1
                times_ms.append(ms)
                if len(caught) > n_warnings:
                    w = caught[-1]
                    v.add("warnings printed by parsers", f"{where}: {w.category.__name__}: {w.message}")
                    n_warnings = len(caught)
                slowest.append((ms, f"input {i} ({'+'.join(recipe)}, {len(text)} chars) → {pname}"))
                if len(slowest) > 50:
                    slowest.sort(reverse=True)
                    del slowest[5:]
                problems = [a.message for a in out.actions if type(a).__name__ == "ActionProblem"]
                for msg in problems:
                    if _is_internal(msg):
                        v.add("internal parser errors", f"{where}: {msg[:240]}")
                        internal_by[pname] += 1
                        break
                outcome["accepted" if out.ok else "rejected"] += 1
            if (i + 1) % max(1, inputs // 10) == 0:
                say(f"  fuzz: {i + 1}/{inputs} inputs")
        if canary.exists() or any(canary.parent.iterdir()):
            v.add("canary untouched (nothing evaluated)", f"files appeared in {canary.parent}: "
                  f"{[p.name for p in canary.parent.iterdir()]}")
        if getattr(builtins, FLAG, None) is not None:
            v.add("canary untouched (nothing evaluated)", f"builtins.{FLAG} was set")
        if os.environ.get(FLAG):
            v.add("canary untouched (nothing evaluated)", f"${FLAG} was set")
    finally:
        stack.close()
        if _ALARM:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old_handler)
        shutil.rmtree(work, ignore_errors=True)
    times_ms.sort()

    def pct(q: float) -> float:
        return round(times_ms[min(len(times_ms) - 1, int(q * len(times_ms)))], 3) if times_ms else 0.0

    checks = [
        Check("inputs", inputs, f"{inputs}", True),
        v.zero_check("exceptions escaping parse"),
        v.zero_check("internal parser errors"),
        v.zero_check("warnings printed by parsers"),
        v.zero_check(f"inputs over {SLOW_MS:g} ms"),
        Check("canary armed (payloads that do create it when run)", f"{armed}/{tried}", f"{tried}/{tried}",
              armed == tried, [f"payload did not create its canary when run: {p}" for p in unarmed]),
        v.zero_check("canary untouched (nothing evaluated)"),
    ]
    figures = {"inputs": inputs, "parse_calls": inputs * len(fns), "parsers": sorted(fns), "seeds": {k: len(s) for k, s in seeds.items()},
               "accepted": outcome["accepted"], "rejected": outcome["rejected"], "mutations": by_mutator,
               "longest_input_chars": longest,
               "slow_by_parser": slow_by, "internal_errors_by_parser": internal_by, "parse_ms_p50": pct(0.5), "parse_ms_p99": pct(0.99),
               "parse_ms_max": round(times_ms[-1], 3) if times_ms else 0.0, "canary_armed": f"{armed}/{tried}",
               "slowest_ms": [[round(ms, 1), what] for ms, what in sorted(slowest, reverse=True)[:5]]}
    return ProofResult("fuzz", {"inputs": inputs, "seed": seed, "slow_ms": SLOW_MS}, figures, checks,
                       time.monotonic() - started)
