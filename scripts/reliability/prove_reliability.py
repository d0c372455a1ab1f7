"""Conway's reliability proofs, measured: kill -9 + restart, a power loss's zeroed block, fuzzed model output, a
long soak.

    python -m scripts.reliability.prove_reliability                  # the full run (docs/measurements.md#reliability), ~15-25 min
    python -m scripts.reliability.prove_reliability --quick          # CI size: 20 kills, 3 trials, 10^4 inputs, 2,000 cycles
    python -m scripts.reliability.prove_reliability kill9 --kills 30 # one proof alone, any size

Proofs (each in scripts/reliability/, see its docstring for exactly what is checked):

    kill9  kill -9 at 100 points of real `conway run` processes on one home, each restarted
    powerloss  a block zeroed inside a closed journal file, then a new `conway run`: every other line kept, 10 trials
    soak   10,000 decisions of the real loop with journal, memory and screenshot caps set small
    fuzz   10^5 mutated model answers through the generic JSON, OpenCUA and UI-TARS parsers
    faults stops at random instants of start-up, FIFOs where files are expected, trickling/endless answers

Prints one table (a row per check: measured, limit, verdict) and writes every
figure, with the first violations of each check described exactly, to --json.
Exit 0: every promise held; 2: a promise was violated; 1: the proof could not run.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

from scripts.reliability.common import REPO, ProofResult, table

PROOFS = ("kill9", "powerloss", "soak", "fuzz", "faults")
FULL = {"kills": 100, "trials": 10, "cycles": 10_000, "inputs": 100_000, "stops": 20}
QUICK = {"kills": 20, "trials": 3, "cycles": 2_000, "inputs": 10_000, "stops": 5}


def _revision() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "") if out.returncode == 0 else None
    except OSError:
        return None


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # exit 1 (2 means "a promise was violated")
        self.print_usage(sys.stderr)
        sys.stderr.write(f"prove_reliability: error: {message}\n")
        raise SystemExit(1)


def main(argv: list[str] | None = None) -> int:
    ap = _Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("proofs", nargs="*", metavar="PROOF",
                    help=f"which proofs to run ({', '.join(PROOFS)}; default: all)")
    ap.add_argument("--quick", action="store_true", help="CI sizes: 20 kills, 3 trials, 2,000 cycles, 10^4 inputs")
    ap.add_argument("--kills", type=int, help="kill9: number of kills (default 100, quick 20)")
    ap.add_argument("--trials", type=int, help="powerloss: zeroed blocks, each followed by a run (default 10, quick 3)")
    ap.add_argument("--cycles", type=int, help="soak: decisions to run (default 10,000, quick 2,000; cycles are ~15%% more)")
    ap.add_argument("--inputs", type=int, help="fuzz: number of inputs (default 100,000, quick 10,000)")
    ap.add_argument("--stops", type=int, help="faults: stops sent during start-up (default 20, quick 5)")
    ap.add_argument("--seed", type=int, default=0, help="seed of kill points and fuzzed inputs (default 0)")
    ap.add_argument("--json", default="prove_reliability.json", metavar="FILE",
                    help="where to write the figures (default ./prove_reliability.json)")
    ap.add_argument("--keep", metavar="DIR", help="kill9: copy its home, scripts and logs here for inspection")
    args = ap.parse_args(argv)
    unknown = [p for p in args.proofs if p not in PROOFS]
    if unknown:
        ap.error(f"unknown proof {unknown[0]!r} (choose from {', '.join(PROOFS)})")
    sizes = dict(QUICK if args.quick else FULL)
    for key in sizes:
        if getattr(args, key) is not None:
            if getattr(args, key) < 1:
                ap.error(f"--{key} must be at least 1")
            sizes[key] = getattr(args, key)
    chosen = [p for p in PROOFS if p in (args.proofs or PROOFS)]
    say = lambda text: print(text, flush=True)  # noqa: E731
    results: list[ProofResult] = []
    try:
        for proof in chosen:
            say(f"{proof} …")
            if proof == "kill9":
                from scripts.reliability import kill9
                results.append(kill9.prove(kills=sizes["kills"], seed=args.seed,
                                           keep=Path(args.keep) if args.keep else None, say=say))
            elif proof == "powerloss":
                from scripts.reliability import powerloss
                results.append(powerloss.prove(trials=sizes["trials"], seed=args.seed, say=say))
            elif proof == "soak":
                from scripts.reliability import soak
                results.append(soak.prove(cycles=sizes["cycles"], say=say))
            elif proof == "faults":
                from scripts.reliability import faults
                results.append(faults.prove(stops=sizes["stops"], seed=args.seed, say=say))
            else:
                from scripts.reliability import fuzz
                results.append(fuzz.prove(inputs=sizes["inputs"], seed=args.seed, say=say))
            say(f"{proof}: {'held' if results[-1].ok else 'VIOLATED'} in {results[-1].seconds:.0f} s")
    except (RuntimeError, OSError) as exc:
        print(f"prove_reliability: error: could not run {proof}: {exc}", file=sys.stderr)
        return 1
    print()
    print(table(results))
    for r in results:
        for c in r.checks:
            for example in c.examples[:5]:
                print(f"  {r.proof} · {c.name}: {example}")
    report = {
        "schema": "conway-reliability/1",
        "command": "python -m scripts.reliability.prove_reliability " + " ".join(argv if argv is not None else sys.argv[1:]),
        "revision": _revision(), "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": __import__("os").cpu_count()},
        "ok": all(r.ok for r in results), "proofs": {r.proof: r.to_json() for r in results},
    }
    Path(args.json).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nfigures: {args.json}")
    return 0 if report["ok"] else 2


if __name__ == "__main__":
    sys.exit(main())
