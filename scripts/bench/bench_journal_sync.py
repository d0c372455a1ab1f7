"""What one durable journal append costs, for each way a write-ahead log can make it durable.

    TMPDIR=/var/tmp python -m scripts.bench.bench_journal_sync --appends 300

Every method appends the same ~400-byte lines to its own file under `$TMPDIR` (choose the file system
with it) and makes each one durable before the next; the methods take turns, one append each per
round, so a busy disk or CPU weighs on all of them alike: read the ratios, not the absolute times.

- `fsync`: write + fsync of a growing file (the journal before issue 26);
- `fdatasync`: write + fdatasync of a growing file (the size still changes: the inode is flushed too);
- `O_DSYNC`: a growing file opened with O_DSYNC (each write returns once durable);
- `fallocate + fdatasync`: space reserved with posix_fallocate (unwritten extents), then pwrite +
  fdatasync: writing converts an unwritten extent, a metadata change again;
- `zero-filled + fdatasync`: the segment written with zeros and synced once ahead, then pwrite +
  fdatasync: the writes change no metadata, fdatasync flushes the data block alone;
- `zero-filled + O_DSYNC`: the same segment opened with O_DSYNC;
- `no sync`: write only (survives kill -9, not power loss): the floor.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

LINE = (b'{"schema":"conway-event/1","session":"bench","step":1,"kind":"intent","payload":{"action":'
        + b'{"type":"append_file","path":"bench.txt","text":"' + b"x" * 230 + b'"}}}\n')
SEGMENT = 4 << 20


class Method:
    def __init__(self, name: str, path: Path):
        self.name, self.path, self.times = name, path, []
        self.offset = 0
        self.fd = self.open()

    def open(self) -> int:
        return os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def append(self, line: bytes) -> None:
        os.write(self.fd, line)

    def timed(self, line: bytes) -> None:
        t = time.perf_counter()
        self.append(line)
        self.times.append(time.perf_counter() - t)
        self.offset += len(line)

    def close(self) -> None:
        os.close(self.fd)


class Fsync(Method):
    def append(self, line):
        os.write(self.fd, line)
        os.fsync(self.fd)


class Fdatasync(Method):
    def append(self, line):
        os.write(self.fd, line)
        os.fdatasync(self.fd)


class Dsync(Method):
    def open(self):
        return os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_DSYNC, 0o600)


class Fallocated(Method):
    def open(self):
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
        os.posix_fallocate(fd, 0, SEGMENT)
        os.fsync(fd)
        return fd

    def append(self, line):
        os.pwrite(self.fd, line, self.offset)
        os.fdatasync(self.fd)


class ZeroFilled(Method):
    flags = 0

    def open(self):
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, b"\0" * SEGMENT)
        os.fsync(fd)
        os.close(fd)
        return os.open(self.path, os.O_WRONLY | self.flags)

    def append(self, line):
        os.pwrite(self.fd, line, self.offset)
        if not self.flags:
            os.fdatasync(self.fd)


class ZeroFilledDsync(ZeroFilled):
    flags = os.O_DSYNC


METHODS = {"fsync": Fsync, "fdatasync": Fdatasync, "O_DSYNC": Dsync, "fallocate + fdatasync": Fallocated,
           "zero-filled + fdatasync": ZeroFilled, "zero-filled + O_DSYNC": ZeroFilledDsync, "no sync": Method}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--appends", type=int, default=300, help="durable appends per method (taken in turns)")
    args = ap.parse_args()
    if args.appends < 1 or args.appends * len(LINE) > SEGMENT:
        print(f"bench_journal_sync: --appends must be 1..{SEGMENT // len(LINE)}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        methods = [cls(name, Path(tmp) / f"{i}.jsonl") for i, (name, cls) in enumerate(METHODS.items())]
        try:
            for _ in range(args.appends):
                for m in methods:
                    m.timed(LINE)
        finally:
            for m in methods:
                m.close()
        fs = os.statvfs(tmp)
        print(f"{args.appends} appends of {len(LINE)} bytes each, in turns, under {tmp} "
              f"(block size {fs.f_bsize}); load average {os.getloadavg()[0]:.2f}")
    ref = statistics.median(methods[0].times)
    print(f"{'method':26} {'median ms':>10} {'p90 ms':>8} {'x fsync':>8}")
    for m in methods:
        med = statistics.median(m.times)
        p90 = statistics.quantiles(m.times, n=10)[-1] if len(m.times) > 1 else med
        print(f"{m.name:26} {med * 1e3:10.3f} {p90 * 1e3:8.3f} {med / ref:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
