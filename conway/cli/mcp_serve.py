"""`conway mcp-serve`: the harness as an MCP server, for another agent or an MCP-capable assistant.

    conway mcp-serve                 # stdio (the client starts this command)
    conway mcp-serve --http 8765     # Streamable HTTP on http://127.0.0.1:8765/mcp (loopback only)

Tools: `status` and `recent_events` (read-only), `pause`, `resume`, `stop`
(through control.json, like the commands of the same names), `export`,
`vision_check` (returns the report path and summary) and `preflight`. It
never exposes the desktop or the agent's tools. Paths a caller gives go
through the same checks as the command line (new files only, never inside the
home).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from conway.config import ConwayConfig
from conway.errors import ExitCode, UserError
from conway.store.home import Home
from conway.store.state import is_stdout

EVENTS_MAX = 200
_FIELD_MAX = 2000

INSTRUCTIONS = """\
Conway is a continuous observe-decide-act agent. These tools watch and steer the agent running on
one Conway home: read its status and recent journal events, pause/resume/stop it, export its
recorded steps, and run its checks (preflight, vision-check). They never act on the desktop."""


def build_server(home: Home, load_config: Callable[[], ConwayConfig],
                 model_config: Callable[[], ConwayConfig] | None = None) -> Any:
    """The MCPServer with Conway's tools bound to one home; the tools that evaluate a model load their
    configuration through `model_config` (which refuses when no model is configured)."""
    from mcp.server.mcpserver import MCPServer

    from conway import __version__

    server = MCPServer("conway", version=__version__, instructions=INSTRUCTIONS)
    _add_read_tools(server, home)
    _add_control_tools(server, home)
    _add_report_tools(server, home, load_config, model_config or load_config)
    return server


def _guarded(fn: Callable[[], Any]) -> Any:
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        return fn()
    except UserError as exc:  # a caller's mistake: one clear line, as on the command line
        raise ToolError(str(exc)) from None


def _add_read_tools(server: Any, home: Home) -> None:
    """`status` and `recent_events`: they read the home and change nothing."""
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=read_only)
    def status() -> dict[str, Any]:
        """The agent's state on this home: session, status, pid (alive or not), step, model, pending intent."""
        from conway.session.app import status_report
        report = status_report(home)
        report.pop("last_events", None)  # recent_events serves those, bounded
        return report

    @server.tool(annotations=read_only)
    def recent_events(limit: int = 20, kinds: list[str] | None = None) -> dict[str, Any]:
        """The newest journal events (oldest first), optionally only some kinds (e.g. intent, result, error).

        Long fields are cut and image bytes are never included."""
        if not 1 <= limit <= EVENTS_MAX:
            raise ToolError(f"limit must be between 1 and {EVENTS_MAX} (got {limit})")
        from conway.store.journal import EVENT_KINDS, tail_events
        unknown = sorted(set(kinds or []) - set(EVENT_KINDS))
        if unknown:
            raise ToolError(f"unknown event kind(s) {unknown}; kinds: {', '.join(EVENT_KINDS)}")
        if not home.journal_dir.is_dir():
            return {"events": [], "note": f"no journal yet in {home.root}"}
        pool = tail_events(home.journal_dir, EVENTS_MAX * 5 if kinds else limit)
        events = [e for e in pool if not kinds or e.get("kind") in kinds][-limit:]
        return {"events": [_bounded(e) for e in events]}


def _add_control_tools(server: Any, home: Home) -> None:
    """`pause`, `resume` and `stop`: requests through control.json, like the commands of the same names."""
    from mcp.types import ToolAnnotations

    control = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                              open_world_hint=False)

    def send(request: str) -> dict[str, Any]:
        from conway.session.app import send_control
        return {"request": request, "answer": _guarded(lambda: send_control(home, request, wait_s=5.0))}

    @server.tool(annotations=control)
    def pause() -> dict[str, Any]:
        """Ask the running agent to pause between steps (like `conway pause`)."""
        return send("pause")

    @server.tool(annotations=control)
    def resume() -> dict[str, Any]:
        """Ask a paused agent to continue (like `conway resume`)."""
        return send("resume")

    @server.tool(annotations=control)
    def stop() -> dict[str, Any]:
        """Ask the running agent to stop; an action from an in-flight decision is discarded (like `conway stop`)."""
        return send("stop")


def _add_report_tools(server: Any, home: Home, load_config: Callable[[], ConwayConfig],
                      model_config: Callable[[], ConwayConfig]) -> None:
    """`export`, `vision_check` and `preflight`: each writes a new file outside the home."""
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    writes_report = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                    open_world_hint=False)

    @server.tool(annotations=writes_report)
    def export(output: str, include_dry_runs: bool = False, include_uncertain: bool = False) -> dict[str, Any]:
        """Write recorded steps as conway-traj/1 JSONL to `output`, a new absolute path outside the home."""
        from conway.evals.report import check_new_output
        from conway.experience.export import export as do_export

        def run() -> dict[str, Any]:
            out = check_new_output(_absolute(output), home, "export")
            res = do_export(home.journal_dir, out, include_dry_runs=include_dry_runs,
                            include_uncertain=include_uncertain, home_root=home.root)
            return {"output": str(out), "written": res.written, "skipped_lines": len(res.skipped_lines),
                    "unreadable": res.unreadable}
        return _guarded(run)

    @server.tool(annotations=writes_report)
    def vision_check(output: str, samples: int = 8, seed: int = 0, profile: str = "standard") -> dict[str, Any]:
        """Score the configured model's clicks on generated images (nothing is executed); returns the
        report path and its summary. `output` is a new absolute path outside the home."""
        from conway.evals.vision_check import vision_check as run_check
        if not 1 <= samples <= 1000:
            raise ToolError(f"samples must be between 1 and 1000 (got {samples})")
        if profile not in ("standard", "demo"):
            raise ToolError("profile must be standard or demo")

        def run() -> dict[str, Any]:
            path = _absolute(output)
            code = run_check(home, model_config(), output=path, samples=samples, seed=seed, progress=False,
                             say=lambda _text: None, profile=profile, argv=["mcp-serve", "vision_check"])
            return _report(path, code)
        return _guarded(run)

    @server.tool(annotations=writes_report)
    def preflight(output: str) -> dict[str, Any]:
        """Check that this home and setup are ready to run (never downloads anything); returns the report
        path and summary. `output` is a new absolute path outside the home."""
        from conway.evals.preflight import preflight as run_preflight

        def run() -> dict[str, Any]:
            path = _absolute(output)
            model_config()  # no model configured: refused like the command, not a quiet mock
            code = run_preflight(home, load_config, output=path, say=lambda _text: None,
                                 argv=["mcp-serve", "preflight"])
            return _report(path, code)
        return _guarded(run)


def _absolute(output: str) -> str:
    # the server's working directory is not the caller's: relative paths would land somewhere surprising
    if not output or not Path(output).expanduser().is_absolute():
        raise UserError(f"output must be an absolute path (got {output!r})")
    if is_stdout(output):  # on stdio it carries the protocol; a report there would break it
        raise UserError("output must be a file, not standard output")
    return output


def _report(path: str, code: int) -> dict[str, Any]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {"report": path, "exit_code": code, "status": data.get("status"), "summary": data.get("summary")}


def _bounded(value: Any, depth: int = 0) -> Any:
    """An event with long strings cut and deep nesting elided (responses stay small)."""
    if isinstance(value, str):
        return value if len(value) <= _FIELD_MAX else value[:_FIELD_MAX] + f"[... {len(value) - _FIELD_MAX} chars cut]"
    if depth > 6:
        return "[nested data elided]"
    if isinstance(value, dict):
        return {k: _bounded(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_bounded(v, depth + 1) for v in value[:100]]
    return value


def serve(home: Home, load_config: Callable[[], ConwayConfig], http_port: int | None = None,
          model_config: Callable[[], ConwayConfig] | None = None) -> int:
    """Run until the client disconnects (stdio) or Ctrl+C (HTTP). Loopback only."""
    from conway.tools.mcp import mcp_missing
    missing = mcp_missing()
    if missing:
        raise UserError(f"mcp-serve needs the MCP SDK: {missing}")
    load_config()  # a broken configuration is the user's to fix now, not a surprise mid-session
    server = build_server(home, load_config, model_config)
    if http_port is None:
        server.run("stdio")
        return ExitCode.PASSED
    if not 1 <= http_port <= 65535:
        raise UserError(f"--http needs a port between 1 and 65535 (got {http_port})")
    import socket
    import sys
    with socket.socket() as probe:  # a clear line now rather than a server log line later
        try:
            probe.bind(("127.0.0.1", http_port))
        except OSError as exc:
            raise UserError(f"cannot listen on 127.0.0.1:{http_port}: {exc.strerror}") from None
    sys.stderr.write(f"conway mcp-serve: http://127.0.0.1:{http_port}/mcp (loopback only; Ctrl+C stops)\n")
    try:
        server.run("streamable-http", host="127.0.0.1", port=http_port)
    except KeyboardInterrupt:
        pass
    return ExitCode.PASSED
