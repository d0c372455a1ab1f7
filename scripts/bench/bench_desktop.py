"""How long a task desktop takes to be ready and to go, against a bare Xvfb started and stopped in the same run.

    python -m scripts.bench.bench_desktop [--repeat 10]

A desktop is ready when `DisposableDesktop.start()` returns (its X server, session bus and sandbox up) and a
command run on it has answered (`echo`); it is gone when `close()` returns. The baseline is `start_xvfb` and
`stop` of a bare X server, the part every desktop has, so the ratio says what the rest costs on this machine
whatever its load. Run from a checkout of another commit (same command) to compare two designs.
"""

from __future__ import annotations

import argparse
import statistics
import time

from conway.machine.xvfb import start_xvfb
from conway.sandbox.desktop import DisposableDesktop


def _bare_x() -> float:
    t = time.perf_counter()
    x = start_xvfb(1280, 800)
    x.stop()
    return time.perf_counter() - t


def _desktop() -> tuple[float, float]:
    t = time.perf_counter()
    d = DisposableDesktop("bench")
    d.start()
    assert d.run(["echo", "ready"]).stdout == "ready\n"
    ready = time.perf_counter() - t
    t = time.perf_counter()
    d.close()
    return ready, time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_desktop", description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args(argv)
    bare, ready, gone = [], [], []
    for _ in range(args.repeat):  # interleaved, so load affects both alike
        bare.append(_bare_x())
        r, g = _desktop()
        ready.append(r)
        gone.append(g)
    b, r, g = (statistics.median(v) for v in (bare, ready, gone))
    print(f"bare Xvfb start+stop  median {b * 1000:7.0f} ms")
    print(f"desktop ready         median {r * 1000:7.0f} ms  ({r / b:.2f}x the bare X server)")
    print(f"desktop close         median {g * 1000:7.0f} ms")
    print(f"desktop ready+close   median {(r + g) * 1000:7.0f} ms  ({(r + g) / b:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
