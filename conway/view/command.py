"""The `conway view` command: a static site in a folder, or `--serve` from 127.0.0.1."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Callable

from conway.errors import ExitCode, UserError
from conway.store.home import Home
from conway.view.sessions import load_sessions, pick_sessions
from conway.view.site import Site, SiteReport, write_site

DEFAULT_PAGE_SIZE = 100


def build_site(home: Home, *, report: str | None = None, session: str | None = None, last: bool = False,
               page_size: int = DEFAULT_PAGE_SIZE) -> Site:
    if not 1 <= page_size <= 5000:
        raise UserError(f"--page-size must be between 1 and 5000 (got {page_size})")
    if report:
        from conway.evals.report import load_report
        from conway.view.reports import check_kind

        if session or last:
            raise UserError("a report view shows the report's cases; --session and --last are for the journal")
        data, cases = load_report(report)
        return Site(home.root, page_size=page_size,
                    report=SiteReport(check_kind(data, report), data, cases, Path(report).name,
                                  Path(report).expanduser().resolve().parent))
    sessions, skipped = load_sessions(home.journal_dir, home.root)
    return Site(home.root, pick_sessions(sessions, session, last), skipped, page_size=page_size)


def view(home: Home, *, report: str | None = None, session: str | None = None, last: bool = False,
         output: str | None = None, serve: bool = False, port: int = 0, page_size: int = DEFAULT_PAGE_SIZE,
         live: list[str] | None = None, say: Callable[[str], None] = print) -> int:
    if serve and output:
        raise UserError("--serve answers from memory and writes no site; --output is for the static site: "
                        "give one or the other")
    if not 0 <= port <= 65535:
        raise UserError(f"--port must be 0 (any free port) to 65535 (got {port})")
    if port and not serve:
        raise UserError("--port goes with --serve")
    if live and not serve:
        raise UserError("--live goes with --serve (the live page is served, never written)")
    roots = [home.root] + [_live_root(p) for p in live or []]
    site = build_site(home, report=report, session=session, last=last, page_size=page_size)
    if serve:
        from conway.view.server import ViewServer

        try:
            rebuild = None if report else (lambda: build_site(home, session=session, last=last, page_size=page_size))
            server = ViewServer(site, port, rebuild=rebuild, journal=None if report else home.journal_dir,
                                live=roots)
        except OSError as exc:
            raise UserError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from None
        try:
            with _stop_on_signals():  # before the URL is shown: a stop sent on seeing it must not be lost
                # the token is in these addresses and nowhere else: whoever has the terminal is the owner
                say(f"serving {server.owner_url()} (Ctrl+C to stop); running sessions live: "
                    f"{server.owner_url('live')}")
                if not report:
                    say(f"labels you give in the browser go to {home.root / 'labels.jsonl'} (source: review)")
                server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.httpd.server_close()
        return ExitCode.PASSED
    out = Path(output).expanduser() if output else home.root / "view"
    out = out if out.is_absolute() else Path.cwd() / out
    counts = write_site(site, out)
    first = out / "index.html"
    if not report and len(site.sessions) == 1:
        first = out / "s" / site.sessions[0].folder / "page-0001.html"
    say(f"wrote {counts['pages']} page(s) and {counts['images']} image(s) to {out} "
        f"({counts['bytes'] / 1e6:.1f} MB)")
    say(f"open {first.as_uri()}")
    return ExitCode.PASSED


def _live_root(raw: str) -> Path:
    path = Path(raw).expanduser()
    if not path.is_dir():
        raise UserError(f"--live {raw}: not a folder (give a Conway home or a folder of them, e.g. REPORT.tasks)")
    return path.resolve()


class _stop_on_signals:
    """Ctrl+C and SIGTERM end serving cleanly (exit 0), also when the parent started us with SIGINT ignored
    (a background job of a script): as `conway run` does, the command asks for them explicitly."""

    def __enter__(self) -> None:
        self.old = {}
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may set handlers (tests call view() from others)
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.old[sig] = signal.signal(sig, self._raise)

    @staticmethod
    def _raise(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    def __exit__(self, *exc: object) -> None:
        for sig, old in self.old.items():
            signal.signal(sig, old)
