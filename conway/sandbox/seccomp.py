"""The seccomp filter every sandboxed command gets: the kernel keyring calls, and the mount family as a second wall.

Without capabilities a command can no longer mount, remount or make device nodes (the kernel refuses), but
the keyring calls still reach the keys of the uid it runs as on this machine (root's, when Conway runs as
root): bubblewrap keeps the caller's session keyring. So `add_key`, `request_key` and `keyctl` fail with
EPERM (as Flatpak's filter does), and so do the mount family's calls whatever the capabilities.

The program is classic BPF written out here (no libseccomp needed), for x86_64 (with its i386 and x32
entries, which a process can switch to) and aarch64; on any other machine there is no filter (`program()`
is None) and the boundary is the user namespace alone. A syscall of an architecture the filter does not
know fails with EPERM.

bwrap reads the program from a file descriptor (`--seccomp FD`): `launcher()` is a sealed in-memory file
(memfd) this process holds open, and a `/bin/sh` line that opens it as fd 9 and execs bwrap.
"""

from __future__ import annotations

import errno
import os
import platform
import struct

__all__ = ["BLOCKED", "bwrap_args", "launcher", "program"]

BLOCKED = ("add_key", "request_key", "keyctl", "mount", "umount", "umount2", "pivot_root", "open_tree",
           "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr")
"""Refused with EPERM inside the sandbox."""

_NEW_MOUNT_API = {"open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
                  "fspick": 433, "mount_setattr": 442}  # the same numbers on every architecture
_X86_64 = (0xC000003E, {"add_key": 248, "request_key": 249, "keyctl": 250, "mount": 165, "umount2": 166,
                        "pivot_root": 155, **_NEW_MOUNT_API})
_I386 = (0x40000003, {"add_key": 286, "request_key": 287, "keyctl": 288, "mount": 21, "umount": 22,
                      "umount2": 52, "pivot_root": 217, **_NEW_MOUNT_API})
_AARCH64 = (0xC00000B7, {"add_key": 217, "request_key": 218, "keyctl": 219, "mount": 40, "umount2": 39,
                         "pivot_root": 41, **_NEW_MOUNT_API})
_ARCHES = {"x86_64": [_X86_64, _I386], "aarch64": [_AARCH64]}
_X32_BIT = 0x40000000

_LD_ABS_W, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_ALLOW, _DENY = 0x7FFF0000, 0x00050000 | errno.EPERM  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO(EPERM)
_NR, _ARCH = 0, 4  # offsets in struct seccomp_data
_FD = 9
"""The descriptor bwrap is told to read the program from (opened by the launcher line)."""


def _arch_block(numbers: dict[str, int], x32: bool) -> list[tuple[int, int, int, int]]:
    """Load the syscall number; a blocked one (or any x32 call) jumps to the block's final DENY."""
    listed = sorted(set(numbers.values()))
    length = 1 + int(x32) + len(listed) + 2  # load, [x32 test], one test each, ALLOW, DENY
    block = [(_LD_ABS_W, 0, 0, _NR)]
    tests = ([(_JGE, _X32_BIT)] if x32 else []) + [(_JEQ, n) for n in listed]
    for code, k in tests:
        block.append((code, length - 1 - len(block) - 1, 0, k))
    return block + [(_RET, 0, 0, _ALLOW), (_RET, 0, 0, _DENY)]


def program(machine: str | None = None) -> bytes | None:
    """The filter as bwrap wants it (an array of struct sock_filter), or None on a machine it does not know."""
    arches = _ARCHES.get(machine or platform.machine())
    if arches is None:
        return None
    code = [(_LD_ABS_W, 0, 0, _ARCH)]
    for audit, numbers in arches:
        block = _arch_block(numbers, x32=audit == _X86_64[0])
        code.append((_JEQ, 0, len(block), audit))  # not this architecture: skip its block
        code.extend(block)
    code.append((_RET, 0, 0, _DENY))  # an architecture the filter does not know
    return b"".join(struct.pack("=HBBI", *insn) for insn in code)


_memfd: int | None = None
_NAME = "conway-seccomp"


def launcher() -> list[str] | None:
    """argv to put before bwrap's own (`[*launcher(), bwrap, ..., "--seccomp", "9", ...]`): opens the sealed
    program as fd 9 and execs the rest; None where there is no filter. The program lives in a memfd of this
    process, sealed, so nothing (a sandboxed command included) can change what the next command gets."""
    global _memfd
    if _memfd is None or not _still_ours(_memfd):  # a daemon's fd clean-up may have closed it
        prog = program()
        if prog is None or not hasattr(os, "memfd_create"):
            return None
        import fcntl  # POSIX only, like the sandbox itself

        fd = os.memfd_create(_NAME, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.write(fd, prog)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS,
                    fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
        _memfd = fd
    return ["/bin/sh", "-c", f'exec "$@" {_FD}<"$0"', f"/proc/{os.getpid()}/fd/{_memfd}"]


def _still_ours(fd: int) -> bool:
    try:
        return os.readlink(f"/proc/self/fd/{fd}").startswith(f"/memfd:{_NAME}")
    except OSError:
        return False


def bwrap_args() -> list[str]:
    """bwrap's own option naming the descriptor (empty where there is no filter)."""
    return ["--seccomp", str(_FD)] if launcher() is not None else []
