"""A long soak of the real loop with the journal, memory and screenshot caps set small.

The real `run_agent` (lock, journal with rotation and fsync of intents,
state.json, memory.md, file and shell tools, the mock policy) runs N decisions
(`agent.max_steps`, which counts decisions the model made; the errors and
rate limits in between make the cycles about 15% more) in
this process on a temporary home. Waits advance a clock instead of sleeping.
The mock script repeats a mix of everything a long run sees: appends, an
alternating replace, reads (one of a 48 KB file, as a model reading logs would), listings, a shell command,
waits, a finish, malformed model output, a model error and a rate limit.
Observations are synthetic frames (five labels in turn, so every frame differs
from the last) saved through the real `ScreenshotArchive`.

At every cycle: journal total (current file included, each file as it occupies the disk: its length or its
blocks, whichever is more) <= journal.max_total_bytes,
screenshots <= observe.keep_screenshots, memory.md <= memory.max_chars. Every
`sample_every` cycles (after a gc): RSS and open file descriptors. Drift is
measured from the end of the warm-up to the end; the peak is reported too.
"""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from .common import Check, ProofResult, Violations

MIB = 1 << 20
RSS_DRIFT_LIMIT_MIB = 5.0
JOURNAL_FILE_BYTES = 32 * 1024
JOURNAL_TOTAL_BYTES = 256 * 1024
KEEP_SCREENSHOTS = 3
MEMORY_MAX_CHARS = 2000


def soak_script() -> list[dict[str, Any]]:
    big = {"action": {"type": "read_file", "path": "big.txt"}}
    return [
        {"action": {"type": "append_file", "path": "log.txt", "text": "one more line\n"}},
        {"action": {"type": "replace_text", "path": "toggle.txt", "old": "state A", "new": "state B"}},
        {"action": {"type": "read_file", "path": "toggle.txt"}},
        {"action": {"type": "replace_text", "path": "toggle.txt", "old": "state B", "new": "state A"}},
        {"action": {"type": "list_dir", "path": "."}},
        big,
        {"action": {"type": "append_file", "path": "log.txt", "text": "another line\n"}},
        {"raw": "I think I should click {\"type\": \"click\", \"x\": oops}"},
        {"action": {"type": "wait", "seconds": 1}},
        {"action": {"type": "shell", "command": "echo soak"}},
        {"error": "the model server had a hiccup"},
        {"action": {"type": "append_file", "path": "log.txt", "text": "third line\n"}},
        {"rate_limit": 1},
        {"action": {"type": "finish", "status": "DONE", "message": "a report the loop records and carries on"}},
        {"action": {"type": "read_file", "path": "log.txt"}},
    ]


class ArchivingObserver:
    """Synthetic frames through the real screenshot archive; calls `on_cycle` before each look."""

    source = "synthetic"

    def __init__(self, home, keep: int, on_cycle: Callable[[int], None]):
        from conway.imaging import ScreenshotArchive
        from conway.observe.synthetic import render_synthetic_png

        self.archive = ScreenshotArchive(home.screenshots, keep=keep)
        self.frames = [render_synthetic_png(320, 200, f"frame {n}") for n in range(5)]
        self.home = home
        self.on_cycle = on_cycle
        self.n = 0

    def observe(self):
        import hashlib

        from conway.protocols import Observation

        self.on_cycle(self.n)
        png = self.frames[self.n % len(self.frames)]
        self.n += 1
        digest = hashlib.sha256(png).hexdigest()
        obs = Observation(png=png, captured_size=(320, 200), source="synthetic", content_hash=digest,
                          change_key=digest[:16])
        path = self.archive.save(obs, f"shot-{self.n:07d}-{digest[:12]}")
        obs.screenshot_path = str(path.relative_to(self.home.root)) if path else None
        return obs

    def close(self) -> None:
        pass


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def _fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        import psutil

        return psutil.Process().num_handles() if hasattr(psutil.Process(), "num_handles") else 0


def prove(cycles: int = 10_000, sample_every: int = 100, say=print) -> ProofResult:
    from conway.config import load_config
    from conway.loop.control import Clock
    from conway.loop.ending import RunEnd
    from conway.policies.mock import MockPolicy, MockScript
    from conway.session.app import RunRequest, run_agent
    from conway.store.home import Home, init_home
    from conway.store.journal import journal_files, occupied_bytes

    class NoSleepClock(Clock):
        def __init__(self) -> None:
            self.offset = 0.0

        def monotonic(self) -> float:
            return time.monotonic() + self.offset

        def sleep(self, seconds: float) -> None:
            self.offset += seconds

    started = time.monotonic()
    warmup = min(max(200, cycles // 10), cycles // 2)
    v = Violations()
    samples: list[tuple[int, int, int]] = []  # (cycle, rss, fds)
    peaks = {"journal_bytes": 0, "screenshots": 0, "memory_chars": 0, "journal_files": 0}
    work = Path(tempfile.mkdtemp(prefix="conway-soak-"))
    try:
        home = Home(work / "home")
        init_home(home)
        (home.scratch / "toggle.txt").write_text("state A\n", encoding="utf-8")
        (home.scratch / "big.txt").write_text(("x" * 99 + "\n") * 480, encoding="utf-8")  # 48 KB
        cfg = load_config(home.config, [
            f"agent.max_steps={cycles}", f"journal.max_file_bytes={JOURNAL_FILE_BYTES}",
            f"journal.max_total_bytes={JOURNAL_TOTAL_BYTES}", f"observe.keep_screenshots={KEEP_SCREENSHOTS}",
            f"memory.max_chars={MEMORY_MAX_CHARS}", "memory.keep_chars=1000"])

        def on_cycle(n: int, sample: bool = True) -> None:
            files = journal_files(home.journal_dir)
            total = sum(occupied_bytes(f) for f in files)  # what the files take: a zeroed tail, blocks set aside
            reserve = home.journal_dir / ".reserve"  # the folder is what the cap bounds: its reserve counts
            total += occupied_bytes(reserve) if reserve.is_file() else 0
            shots = sum(1 for p in home.screenshots.iterdir() if p.suffix in (".png", ".jpg")) \
                if home.screenshots.is_dir() else 0
            mem = len(home.memory.read_text(encoding="utf-8")) if home.memory.exists() else 0
            peaks["journal_bytes"] = max(peaks["journal_bytes"], total)
            peaks["journal_files"] = max(peaks["journal_files"], len(files))
            peaks["screenshots"] = max(peaks["screenshots"], shots)
            peaks["memory_chars"] = max(peaks["memory_chars"], mem)
            if total > cfg.journal.max_total_bytes:
                v.add("journal total <= cap at every cycle",
                      f"cycle {n}: {total} bytes in {len(files)} files > cap {cfg.journal.max_total_bytes} "
                      f"(newest file {occupied_bytes(files[-1])} bytes)")
            if shots > KEEP_SCREENSHOTS:
                v.add("screenshots <= keep at every cycle", f"cycle {n}: {shots} screenshots > keep {KEEP_SCREENSHOTS}")
            if mem > MEMORY_MAX_CHARS:
                v.add("memory.md <= max_chars at every cycle", f"cycle {n}: memory.md {mem} chars > {MEMORY_MAX_CHARS}")
            if sample and n % sample_every == 0:
                gc.collect()
                samples.append((n, _rss(), _fds()))
            if n and n % max(1, cycles // 10) == 0:
                say(f"  soak: {n} cycles ({cycles} decisions to run)")

        policy = MockPolicy(MockScript.model_validate({"steps": soak_script(), "repeat": True}))
        observer = ArchivingObserver(home, KEEP_SCREENSHOTS, on_cycle)
        outcome, _session = run_agent(home, cfg, RunRequest(single_session=False, quiet=True, policy=policy,
                                                            observer=observer, clock=NoSleepClock()))
        in_run = samples[-1]  # the last look while the run held its journal, lock and tools
        ran = observer.n
        on_cycle(ran, sample=False)  # one last check after the run closed everything
        gc.collect()
        samples.append((ran, _rss(), _fds()))
        if outcome.end is not RunEnd.MAX_STEPS or ran < cycles:
            v.add("ran to its budget", f"the run ended after {ran} cycles ({cycles} decisions asked): {outcome.reason}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = next((s for s in samples[:-1] if s[0] >= warmup), in_run)
    after = [s for s in samples if s[0] >= base[0]]
    drift = (samples[-1][1] - base[1]) / MIB
    peak = (max(s[1] for s in after) - base[1]) / MIB
    fd_drift = in_run[2] - base[2]
    checks = [
        v.zero_check("ran to its budget"),
        Check(f"RSS drift after warm-up (cycle {base[0]} → {samples[-1][0]}), MiB", round(drift, 2),
              f"<= {RSS_DRIFT_LIMIT_MIB:g}", drift <= RSS_DRIFT_LIMIT_MIB,
              [] if drift <= RSS_DRIFT_LIMIT_MIB else [f"RSS {base[1] / MIB:.1f} MiB at cycle {base[0]} → "
                                                       f"{samples[-1][1] / MIB:.1f} MiB at the end"]),
        Check("open file descriptors drift after warm-up (while running)", fd_drift, "<= 0", fd_drift <= 0,
              [] if fd_drift <= 0 else [f"{base[2]} fds at cycle {base[0]} → {in_run[2]} at cycle {in_run[0]}"]),
        v.zero_check("journal total <= cap at every cycle"),
        v.zero_check("screenshots <= keep at every cycle"),
        v.zero_check("memory.md <= max_chars at every cycle"),
    ]
    figures = {"decisions": cycles, "cycles": ran, "warmup_cycles": warmup, "rss_mib_at_warmup": round(base[1] / MIB, 2),
               "rss_mib_end": round(samples[-1][1] / MIB, 2), "rss_drift_mib": round(drift, 2),
               "rss_peak_over_warmup_mib": round(peak, 2), "fds_drift": fd_drift,
               "journal_cap_bytes": JOURNAL_TOTAL_BYTES, "journal_file_bytes": JOURNAL_FILE_BYTES,
               "journal_peak_bytes": peaks["journal_bytes"], "journal_peak_files": peaks["journal_files"],
               "screenshots_keep": KEEP_SCREENSHOTS, "screenshots_peak": peaks["screenshots"],
               "memory_max_chars": MEMORY_MAX_CHARS, "memory_peak_chars": peaks["memory_chars"],
               "cycles_per_s": round(ran / max(1e-9, time.monotonic() - started), 1),
               "rss_samples_mib": [[c, round(r / MIB, 2)] for c, r, _ in samples]}
    return ProofResult("soak", {"decisions": cycles, "sample_every": sample_every, "warmup": warmup}, figures, checks,
                       time.monotonic() - started)
