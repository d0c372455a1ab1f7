"""Prove every OSWorld task the project keeps with an oracle pair passable on this machine, and print the figures
docs/checks.md gives ("Oracles: which tasks are passable here").

    python -m scripts.reliability.prove_oracles [OUT_DIR] [key=value ...]

Runs `conway tasks check` on tests/data/osworld_real (each task's solve script must score 1, its idle script 0,
on its own disposable desktop, OSWorld's runner protocol around it), then prints one row per domain: runnable
here, with an oracle pair, passable here, and each task not proved with its reason. The runs' reports and the
tasks' homes stay in OUT_DIR (default: a new temporary folder). Overrides go to the runs (e.g.
`tasks.waits=measured` for the measured-readiness deviation; the default is OSWorld's fixed waits, 80 s a task
and a run). Exit 0 when every task with a pair is passable here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "tests" / "data" / "osworld_real"


def main(argv: list[str]) -> int:
    out_dir = Path(argv[0]) if argv and "=" not in argv[0] else Path(tempfile.mkdtemp(prefix="conway-oracles-"))
    overrides = [a for a in argv if "=" in a]
    out_dir.mkdir(parents=True, exist_ok=True)
    record_path = out_dir / "check.json"
    done = subprocess.run([sys.executable, "-m", "conway.cli", "--home", str(out_dir / "home"), "tasks", "check",
                           str(SUITE / "examples"), *overrides, "--oracles", str(SUITE / "mock"),
                           "--output", str(record_path), "--quiet"], cwd=REPO)
    if not record_path.is_file():
        print(f"prove_oracles: no check record (conway exited {done.returncode})", file=sys.stderr)
        return 1
    record = json.loads(record_path.read_text(encoding="utf-8"))
    print("| domain | runnable (of the kept tasks) | with an oracle pair | passable here |")
    print("| --- | --- | --- | --- |")
    for domain, c in sorted(record["counts"]["by_domain"].items()):
        print(f"| {domain} | {c['runnable']} | {c['with_oracle']} | {c['passable']} |")
    c = record["counts"]
    print(f"| **all** | **{c['runnable']}** | **{c['with_oracle']}** | **{c['passable']}** |")
    for row in record["tasks"]:
        if row["verdict"] != "passable here":
            print(f"- {row['domain']}/{row['id']}: {row['verdict']}")
    print(f"record: {record_path}")
    return 0 if c["passable"] == c["with_oracle"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
