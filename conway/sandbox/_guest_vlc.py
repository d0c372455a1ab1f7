"""`vlc` on a task's desktop: VLC itself (its libvlc, Qt interface and ~/.config/vlc/vlcrc), started by a launcher
that runs as uid 0.

Debian's `/usr/bin/vlc` refuses to start as root ("VLC is not supposed to be run as root"), and a task's sandbox
started by root keeps uid 0 (see `conway.sandbox.environment`). That check lives only in the `vlc` program's
`main`; this launcher does what that `main` does with the same library: `libvlc_new` with the arguments given,
the default interface, play what was named, run until the interface quits or a signal comes. It adds what
OSWorld's VM has set for its VLC getters: the HTTP interface on localhost:8080 with the password `password`, and
no first-run privacy dialog.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

OSWORLD_ARGS = ["--extraintf", "http", "--http-host", "localhost", "--http-port", "8080",
                "--http-password", "password", "--no-qt-privacy-ask"]


def main(args: list[str]) -> int:
    # VLC finds its Lua scripts (the HTTP interface's pages) beside the library it was loaded from; in the sandbox
    # /lib is a folder of its own rather than a link into /usr, so /lib/…/vlc/../../share/vlc does not exist
    os.environ.setdefault("VLC_DATA_PATH", "/usr/share/vlc")
    lib = ctypes.CDLL("libvlc.so.5")
    lib.libvlc_new.restype = ctypes.c_void_p
    lib.libvlc_new.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib.libvlc_add_intf.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.libvlc_playlist_play.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    lib.libvlc_set_exit_handler.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.libvlc_release.argtypes = [ctypes.c_void_p]
    full = ["--no-ignore-config", "--media-library", *OSWORLD_ARGS, *args]
    argv = (ctypes.c_char_p * len(full))(*[a.encode() for a in full])
    vlc = lib.libvlc_new(len(full), argv)
    if not vlc:
        print("vlc: libvlc did not start", file=sys.stderr)
        return 1
    done = threading.Event()
    on_exit = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _: done.set())
    lib.libvlc_set_exit_handler(vlc, ctypes.cast(on_exit, ctypes.c_void_p), None)
    # Qt, the interface VLC's own main picks on a display, named unless the task names one: left to choose, libvlc
    # falls back to a windowless interface when the X server refuses Qt's connection (a loaded machine), and the
    # launch waited out a window that could never come; named, the start fails and the launch starts it again
    named = any(a in ("-I", "--intf") or a.startswith(("--intf=", "-I")) for a in args)
    if lib.libvlc_add_intf(vlc, None if named else b"qt") != 0:
        print("vlc: its interface did not start", file=sys.stderr)
        lib.libvlc_release(vlc)
        return 1
    lib.libvlc_playlist_play(vlc, -1, 0, None)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: done.set())
    while not done.wait(0.5):
        pass
    lib.libvlc_release(vlc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
