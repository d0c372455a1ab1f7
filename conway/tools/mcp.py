"""Tools of MCP servers as the `mcp` action, through the official `mcp` SDK.

Servers under `tools.mcp_servers` are started (stdio) or connected (Streamable
HTTP) when the toolbox is built, each within its `timeout_s`; their tools are
listed with descriptions, input schemas and annotations. A server that fails
is reported and left out; the run goes on without it.

The SDK is asynchronous and the loop is not: every connection lives in one
asyncio loop on a daemon thread, and the loop's thread waits for each call
with a deadline. A stdio server runs in its own process group (the SDK starts
it with a new session) and is stopped with its group when the toolbox closes.

Loop semantics: `check` validates the arguments against the tool's input
schema before anything is sent (a mismatch is an `ActionProblem`); a tool
annotated `readOnlyHint: true` has no side effect, every other call does (the
loop writes its intent first); a call that times out or whose server dies
mid-call raises `DispatchUncertain` and is never retried. A stdio server runs
behind `mcp_relay.py`, so an answer over `_ANSWER_MAX_BYTES` comes back as
its head and size: a certain, cut result. The SDK's log records go to the
server's `mcp/<name>.log`, never the terminal. MCP servers run with
the user's permissions: Conway does not sandbox them.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import errno
import hashlib
import json
import logging
import os
import shutil
import signal
import sys
import threading
import time
from concurrent.futures import CancelledError as FutureCancelled
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from conway.actions import ActionProblem, Mcp, _Action, types_of
from conway.cancel import current_cancel
from conway.config import McpServerConfig, ToolsConfig
from conway.geometry import ScreenGeometry
from conway.protocols import DispatchUncertain, Tool, ToolResult
from conway.text.bounded import cut_text
from conway.tools.mcp_relay import CUT_CODE as RELAY_CUT_CODE
from conway.tools.row import Setup, ToolRow

_CALL_MARGIN_S = 5.0  # the SDK's own deadline answers first; ours only catches a stuck transport
_CLOSE_S = 10.0  # graceful stop of every server (stdin closed, 2 s grace, SIGTERM, SIGKILL)
_IMAGES_KEPT = 200
_DESCRIPTION_MAX = 400
_STRUCTURED_KEPT = 4096
_LOG_MARK = "--- conway started this server at"


_SDK_LOG_MAX = 1_000_000  # a server flooding garbage cannot fill the disk through the SDK's tracebacks
_SERVER_LOG: contextvars.ContextVar[_ServerLog | None] = contextvars.ContextVar("conway_mcp_server_log",
                                                                                default=None)


class _ServerLog:
    """The log file of one server, as the MCP SDK's log records about it see it (bounded)."""

    def __init__(self, fh: Any):
        self.fh, self.written, self.capped = fh, 0, False

    def write(self, text: str) -> None:
        if self.capped:
            return
        if self.written + len(text) > _SDK_LOG_MAX:
            self.capped = True
            text = f"[conway: over {_SDK_LOG_MAX} bytes of MCP SDK messages; the rest about this server dropped]"
        self.written += len(text) + 1
        try:
            self.fh.write(text + "\n")
            self.fh.flush()
        except (OSError, ValueError):
            pass


class _SdkLogRouter(logging.Handler):
    """The MCP SDK logs (tracebacks for every line a server garbles) into the log of the server whose
    connection task logged them, never to Conway's terminal."""

    def emit(self, record: logging.LogRecord) -> None:
        sink = _SERVER_LOG.get()
        if sink is not None:
            sink.write(self.format(record))


def _route_sdk_logging() -> None:
    logger = logging.getLogger("mcp")
    if not any(isinstance(h, _SdkLogRouter) for h in logger.handlers):
        logger.addHandler(_SdkLogRouter())
        logger.propagate = False


_ANSWER_MAX_BYTES = 8 * 1024 * 1024
"""A stdio server's answer longer than this is read as its head and its size (`mcp_relay`): a certain, cut
result instead of minutes of parsing (50 MB once outlasted a 60 s timeout after the tool had acted)."""
_RELAY = Path(__file__).with_name("mcp_relay.py")


class AnswerCut(Exception):
    """The server answered with more than `_ANSWER_MAX_BYTES`: its head and size (the call did happen)."""

    def __init__(self, text: str, size: int, read: int):
        super().__init__(f"{size} bytes")
        self.text, self.size, self.read = text, size, read


class CallLost(Exception):
    """The call was sent and no answer came (timeout, server gone): its effect is unknown."""


class ServerRefused(Exception):
    """The server answered with a JSON-RPC error: it processed the request and refused it."""


@dataclass
class McpToolInfo:
    server: str
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool
    annotations: dict[str, Any]
    problem: str | None = None
    """Why this tool cannot be called (an input schema that is not valid JSON Schema)."""

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "read_only": self.read_only, "description": self.description[:200],
                **({"problem": self.problem} if self.problem else {})}


@dataclass
class _Conn:
    cfg: McpServerConfig
    ok: bool = False
    detail: str = "not started"
    tools: dict[str, McpToolInfo] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)
    dead: str | None = None
    client: Any = None
    task: Any = None
    stop: Any = None  # asyncio.Event, made on the connection thread
    ready: threading.Event = field(default_factory=threading.Event)
    settled: threading.Lock = field(default_factory=threading.Lock)
    """Held while the start-up outcome is decided (ready on time, or given up by the waiting thread)."""
    protocol: str | None = None

    def settle(self, ok: bool, detail: str) -> bool:
        """Record the start-up outcome once; False when it was already decided."""
        with self.settled:
            if self.ready.is_set():
                return False
            self.ok, self.detail = ok, detail
            self.ready.set()
            return True


class McpTool(Tool):
    name = "mcp"
    action_types = types_of("mcp")
    cancellable = True  # a stop abandons the call in flight (see `_call`) instead of waiting for timeout_s

    def __init__(self, cfg: ToolsConfig, workdir: Path, home_root: Path | None = None):
        self.cfg = cfg
        self.workdir = workdir
        self.folder = home_root / "mcp" if home_root is not None else None
        self.conns: dict[str, _Conn] = {s.name: _Conn(s) for s in cfg.mcp_servers}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="conway-mcp", daemon=True)
        self._groups: set[int] = set()
        self._closed = False
        _route_sdk_logging()
        self._thread.start()
        try:
            self._start_all()
        except BaseException:  # Ctrl+C or SIGTERM while servers start: they go with Conway, not seconds later
            for conn in self.conns.values():
                if conn.task is not None:
                    conn.task.cancel()
            self.close()
            raise

    # --- start-up ------------------------------------------------------------

    def _start_all(self) -> None:
        missing = mcp_missing()
        if missing:
            for conn in self.conns.values():
                conn.detail = missing
            return
        before = _session_children()
        try:
            for conn in self.conns.values():
                conn.task = asyncio.run_coroutine_threadsafe(self._serve(conn), self._loop)
            started = time.monotonic()
            for conn in self.conns.values():
                left = conn.cfg.startup_timeout_s - (time.monotonic() - started)
                if not conn.ready.wait(max(0.0, left)) and conn.settle(
                        False, f"did not answer within {conn.cfg.startup_timeout_s:g} s (startup_timeout_s)"):
                    conn.task.cancel()  # its shutdown stops the process; close() kills the group if that fails
        finally:  # also when interrupted: close() must know the groups it may have to kill
            self._groups = _session_children() - before  # a safety net for close(); the SDK stops them first

    async def _serve(self, conn: _Conn) -> None:
        """One connection, from spawn to stop, inside a single task (the SDK's scopes need that)."""
        from mcp import Client
        from mcp.types import Implementation

        from conway import __version__

        conn.stop = asyncio.Event()
        try:
            async with AsyncExitStack() as stack:
                target = await self._target(conn.cfg, stack)
                client = Client(target, cache=None, client_info=Implementation(name="conway", version=__version__))
                await stack.enter_async_context(client)
                tools = await _list_all(client)
                conn.client, conn.protocol = client, client.protocol_version
                self._take_tools(conn, tools)
                left_out = f", {len(conn.left_out)} left out" if conn.left_out else ""
                if conn.settle(True, f"{len(conn.tools)} tool(s){left_out}"):
                    await conn.stop.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            conn.settle(False, _describe_start_error(exc) + self._log_hint(conn.cfg))
        finally:
            conn.settle(False, "stopped before it answered")
            if conn.ok and not conn.stop.is_set():
                conn.dead = conn.dead or "the connection ended"

    async def _target(self, s: McpServerConfig, stack: AsyncExitStack) -> Any:
        if s.command is not None:
            from mcp import StdioServerParameters
            env = dict(s.env)
            for name in s.inherit_env:
                if name not in os.environ:
                    raise _StartRefused(f"environment variable {name} (inherit_env) is not set")
                env[name] = os.environ[name]
            errlog = stack.enter_context(self._errlog(s.name))
            _SERVER_LOG.set(_ServerLog(errlog))  # this connection's task (and its children) log there
            cwd = Path(os.path.expanduser(s.cwd)) if s.cwd else self.workdir
            from mcp.client.stdio import get_default_environment, stdio_client
            path = (get_default_environment() | env).get("PATH")
            program = s.command if os.sep in s.command else shutil.which(s.command, path=path)
            if program is None or not os.access(cwd / program if os.sep in program else program, os.X_OK):
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", s.command)
            # through the relay: an answer line over _ANSWER_MAX_BYTES comes back cut, not read whole
            relayed = [str(_RELAY), str(_ANSWER_MAX_BYTES), "--", s.command, *s.args]
            return stdio_client(StdioServerParameters(command=sys.executable, args=relayed, env=env, cwd=cwd),
                                errlog=errlog)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client
        _SERVER_LOG.set(_ServerLog(stack.enter_context(self._errlog(s.name))))
        headers = {}
        for header, var in s.headers_env.items():
            if var not in os.environ:
                raise _StartRefused(f"environment variable {var} (headers_env.{header}) is not set")
            headers[header] = os.environ[var]
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(s.timeout_s, read=max(300.0, s.timeout_s))))
        return streamable_http_client(s.url, http_client=http)

    def _errlog(self, name: str):
        """The server's stderr and the SDK's messages about it: mcp/<name>.log in the home (never Conway's
        terminal)."""
        if self.folder is None:
            return open(os.devnull, "w")
        self.folder.mkdir(parents=True, exist_ok=True)
        fh = open(self.folder / f"{name}.log", "a", encoding="utf-8")
        fh.write(f"{_LOG_MARK} {time.strftime('%Y-%m-%d %H:%M:%S')}\n")  # this start's lines follow
        fh.flush()
        return fh

    def _log_hint(self, s: McpServerConfig) -> str:
        """Where the server's stderr went, with its last line (usually the reason it failed)."""
        if not (self.folder and s.command):
            return ""
        log = self.folder / f"{s.name}.log"
        try:
            with open(log, "rb") as fh:
                fh.seek(max(0, log.stat().st_size - 2000))
                lines = fh.read().decode("utf-8", "replace").splitlines()
            last = [ln for ln in lines if ln.strip()][-1:]
            if last and last[0].startswith(_LOG_MARK):
                last = []
        except (OSError, IndexError):
            last = []
        return f" (its stderr, {log}" + (f", ends: {last[0].strip()[:200]}" if last else "") + ")"

    def _take_tools(self, conn: _Conn, listed: list[Any]) -> None:
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import validator_for

        wanted = conn.cfg.enabled_tools
        for t in listed:
            if wanted is not None and t.name not in wanted:
                continue
            ann = t.annotations.model_dump(exclude_none=True) if t.annotations is not None else {}
            schema = t.input_schema if isinstance(t.input_schema, dict) else {}
            info = McpToolInfo(server=conn.cfg.name, name=t.name, description=(t.description or "").strip(),
                               input_schema=schema, read_only=ann.get("read_only_hint") is True, annotations=ann)
            try:
                validator_for(schema).check_schema(schema)
            except SchemaError as exc:
                info.problem = f"its input schema is not valid JSON Schema ({exc.message})"
                conn.left_out.append(f"{t.name}: {info.problem}")
            conn.tools[t.name] = info
        missing = [n for n in wanted or [] if n not in conn.tools]
        conn.left_out += [f"{n}: listed in enabled_tools but the server has no such tool" for n in missing]

    # --- what the toolbox asks -----------------------------------------------

    def availability(self) -> tuple[bool, str]:
        up = [c for c in self.conns.values() if c.ok]
        usable = sum(1 for c in up for t in c.tools.values() if not t.problem)
        parts = [f"{c.cfg.name}: {c.detail}" for c in self.conns.values()]
        detail = f"{len(up)} of {len(self.conns)} MCP server(s) up, {usable} tool(s) — " + "; ".join(parts)
        return usable > 0, detail

    def servers(self) -> list[dict[str, Any]]:
        """Per-server report (doctor, preflight, the journal)."""
        return [{"server": c.cfg.name, "transport": "stdio" if c.cfg.command else "http", "ok": c.ok,
                 "detail": c.detail, "protocol": c.protocol, "tools": [t.record() for t in c.tools.values()],
                 "left_out": c.left_out} for c in self.conns.values()]

    def findings(self) -> list[dict[str, Any]]:
        out = []
        for rec in self.servers():
            if rec["ok"]:
                summary = f"MCP server {rec['server']}: {rec['detail']}"
            else:
                summary = f"MCP server {rec['server']} not available: {rec['detail']} (the run continues without it)"
            out.append({"tool": "mcp", "summary": summary, **rec})
        return out

    def describe(self) -> str:
        """The MCP tools for the prompt: server, name, read-only mark, description, argument schema; bounded."""
        cap = self.cfg.mcp_listing_max_chars
        head = ('MCP tools (call with {"type": "mcp", "server": "<server>", "tool": "<tool>", '
                '"arguments": {...}}; arguments must match the tool\'s schema):')
        lines, used, left = [head], len(head), []
        tools = [t for c in self.conns.values() if c.ok for t in c.tools.values() if not t.problem]
        for t in tools:
            schema = json.dumps(_compact_schema(t.input_schema), separators=(",", ":"), sort_keys=True)
            desc = cut_text(" ".join(t.description.split()), _DESCRIPTION_MAX)[0]
            line = (f"- {t.server}/{t.name}{' (read-only)' if t.read_only else ''}: {desc or '(no description)'}"
                    f"\n  arguments: {schema}")
            if used + len(line) + 1 > cap:
                left.append(f"{t.server}/{t.name}")
                continue
            lines.append(line)
            used += len(line) + 1
        if left:
            lines.append(f"[{len(left)} MCP tool(s) left out to stay inside tools.mcp_listing_max_chars: "
                         + cut_text(", ".join(left), 400)[0] + "]")
        return "\n".join(lines) if tools else ""

    def check(self, action: _Action) -> _Action | ActionProblem:
        """Pre-dispatch: the server is up, the tool exists, the arguments match its schema."""
        if not isinstance(action, Mcp):
            return action
        found = self._lookup(action)
        if isinstance(found, str):
            return ActionProblem(message=found, raw=action.model_dump())
        from jsonschema.validators import validator_for

        validator = validator_for(found.input_schema)(found.input_schema)
        errors = sorted(validator.iter_errors(action.arguments), key=lambda e: list(e.absolute_path))
        if errors:
            described = "; ".join(f"{'.'.join(str(p) for p in e.absolute_path) or 'arguments'}: {e.message}"
                                  for e in errors[:3])
            return ActionProblem(message=f"arguments of {action.server}/{action.tool} do not match its schema: "
                                         f"{cut_text(described, 600)[0]}", raw=action.model_dump())
        action._read_only = found.read_only
        return action

    def _lookup(self, action: Mcp) -> McpToolInfo | str:
        conn = self.conns.get(action.server)
        if conn is None:
            known = ", ".join(n for n, c in self.conns.items() if c.ok) or "none"
            return f"no MCP server named {action.server!r}; servers up: {known}"
        if not conn.ok:
            return f"MCP server {action.server!r} is not available: {conn.detail}"
        if conn.dead:
            return f"MCP server {action.server!r} is gone ({conn.dead}); its tools cannot be called in this run"
        info = conn.tools.get(action.tool)
        if info is None:
            names = ", ".join(n for n, t in conn.tools.items() if not t.problem)
            return f"MCP server {action.server!r} has no tool {action.tool!r}; its tools: {cut_text(names, 400)[0]}"
        if info.problem:
            return f"{action.server}/{action.tool} cannot be called: {info.problem}"
        return info

    # --- the call ------------------------------------------------------------

    def run(self, action: _Action, screen: ScreenGeometry | None = None) -> ToolResult:
        if not isinstance(action, Mcp):
            return ToolResult(ok=False, error=f"the mcp tool cannot run {getattr(action, 'type', action)!r}")
        checked = self.check(action)
        if isinstance(checked, ActionProblem):  # refused before sending: nothing happened
            return ToolResult(ok=False, error=checked.message)
        info = self._lookup(action)
        assert isinstance(info, McpToolInfo)
        conn = self.conns[action.server]
        timeout = conn.cfg.timeout_s
        what = f"MCP call {action.server}/{action.tool}"
        try:
            result = self._call(conn, action.tool, action.arguments, timeout)
        except CallLost as exc:
            if info.read_only:  # nothing can be half done by a read-only tool
                return ToolResult(ok=False, error=f"{what} {exc}", data=self._facts(action, info))
            raise DispatchUncertain(f"{what} {exc}; it may or may not have taken effect and is not retried") from None
        except ServerRefused as exc:
            return ToolResult(ok=False, error=f"{what} refused by the server: {exc}", data=self._facts(action, info))
        except AnswerCut as cut:
            head = cut_text(cut.text, self.cfg.mcp_result_max_chars)[0]
            note = (f"[the answer was {cut.size} bytes; Conway reads at most {cut.read} bytes of an answer: "
                    "shown is the start of its first text]")
            return ToolResult(ok=True, output=f"{head}\n{note}", truncated=True,
                              data={**self._facts(action, info), "answer_bytes": cut.size, "answer_read": cut.read})
        return self._render(action, info, result)

    def _call(self, conn: _Conn, tool: str, arguments: dict[str, Any], timeout: float) -> Any:
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        future = asyncio.run_coroutine_threadsafe(
            conn.client.call_tool(tool, arguments, read_timeout_seconds=timeout), self._loop)
        stop = current_cancel()  # the agent is being stopped: do not wait out timeout_s for the answer
        unregister = stop.on_cancel(future.cancel) if stop is not None else (lambda: None)
        started = time.monotonic()
        try:
            return future.result(timeout + _CALL_MARGIN_S)
        except FutureCancelled:
            reason = stop.reason if stop is not None else "cancelled"
            raise CallLost(f"was abandoned after {time.monotonic() - started:.1f} s because the agent was "
                           f"stopped ({reason})") from None
        except FutureTimeout:
            future.cancel()
            raise CallLost(f"got no answer within {timeout:g} s") from None
        except MCPError as exc:
            if exc.code == RELAY_CUT_CODE and isinstance(exc.data, dict):
                data = exc.data
                raise AnswerCut(str(data.get("text", "")), int(data.get("bytes", 0)),
                                int(data.get("read", _ANSWER_MAX_BYTES))) from None
            if exc.code == REQUEST_TIMEOUT:
                raise CallLost(f"timed out after {timeout:g} s (timeout_s)") from None
            if exc.code == CONNECTION_CLOSED:
                conn.dead = "the server closed the connection (it exited or crashed) during a call"
                raise CallLost("lost its server mid-call (the connection closed)") from None
            raise ServerRefused(f"{exc.message} (code {exc.code})") from None
        except Exception as exc:
            conn.dead = f"{type(exc).__name__}: {exc}"
            raise CallLost(f"failed in transport: {type(exc).__name__}: {exc}") from None
        finally:
            unregister()

    def _facts(self, action: Mcp, info: McpToolInfo) -> dict[str, Any]:
        return {"server": action.server, "tool": action.tool, "read_only": info.read_only}

    def _render(self, action: Mcp, info: McpToolInfo, result: Any) -> ToolResult:
        """Text for the model and facts for the journal: images saved to the home, everything bounded."""
        from mcp.types import AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextContent

        texts: list[str] = []
        facts = self._facts(action, info)
        for block in result.content or []:
            if isinstance(block, TextContent):
                texts.append(block.text)
            elif isinstance(block, (ImageContent, AudioContent)):
                saved = self._save_media(block.data, block.mime_type)
                kind = "image" if isinstance(block, ImageContent) else "audio"
                facts.setdefault(f"{kind}s", []).append(saved)
                texts.append(f"[{kind} ({block.mime_type}) saved to {saved['path']}]" if saved.get("path")
                             else f"[{kind} ({block.mime_type}, {saved['bytes']} bytes) not kept: {saved['note']}]")
            elif isinstance(block, ResourceLink):
                facts.setdefault("resource_links", []).append({"uri": str(block.uri), "name": block.name,
                                                               "mime_type": block.mime_type})
                texts.append(f"[resource link: {block.name} {block.uri}"
                             + (f" ({block.mime_type})" if block.mime_type else "") + "]")
            elif isinstance(block, EmbeddedResource):
                res = block.resource
                text = getattr(res, "text", None)
                if text is not None:
                    texts.append(f"[resource {res.uri}]\n{text}")
                else:
                    texts.append(f"[resource {res.uri}: binary content ({res.mime_type or 'unknown type'}) not shown]")
            else:
                texts.append(f"[{getattr(block, 'type', 'unknown')} content not shown]")
        structured = result.structured_content
        if structured is not None:
            dumped = json.dumps(structured, ensure_ascii=False, default=str)
            facts["structured_chars"] = len(dumped)
            if not any(isinstance(b, TextContent) for b in result.content or []):
                texts.append(dumped)  # the text below carries it (cut like any output)
            elif len(dumped) <= _STRUCTURED_KEPT:  # usually the text blocks repeat it: keep it only when small
                facts["structured"] = structured
        output, truncated = cut_text("\n".join(texts), self.cfg.mcp_result_max_chars)
        if result.is_error:
            return ToolResult(ok=False, error=f"{action.server}/{action.tool} reported an error: "
                                              f"{output or '(no message)'}", truncated=truncated, data=facts)
        return ToolResult(ok=True, output=output, truncated=truncated, data=facts)

    def _save_media(self, data: str, mime: str) -> dict[str, Any]:
        try:
            raw = base64.b64decode(data, validate=True)
        except ValueError:
            return {"bytes": len(data), "note": "not valid base64"}
        facts: dict[str, Any] = {"mime_type": mime, "bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
        if self.folder is None:
            return {**facts, "note": "no home to keep it in"}
        folder = self.folder / "images"
        folder.mkdir(parents=True, exist_ok=True)
        ext = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp",
               "audio/wav": ".wav", "audio/mpeg": ".mp3"}.get(mime, ".bin")
        path = folder / f"{facts['sha256'][:24]}{ext}"
        if not path.exists():
            tmp = path.with_name(path.name + ".partial")
            tmp.write_bytes(raw)
            tmp.replace(path)
            kept = sorted(folder.iterdir(), key=lambda p: p.stat().st_mtime)
            for old in kept[:-_IMAGES_KEPT]:
                old.unlink(missing_ok=True)
        return {**facts, "path": str(path)}

    # --- stop ------------------------------------------------------------------

    def close(self) -> None:
        """Stop every server (the SDK closes stdin, waits, then signals the process group)."""
        if self._closed:
            return
        self._closed = True
        for conn in self.conns.values():
            if conn.stop is not None:
                self._loop.call_soon_threadsafe(conn.stop.set)
        deadline = time.monotonic() + _CLOSE_S
        for conn in self.conns.values():
            if conn.task is None:
                continue
            try:
                conn.task.result(max(0.0, deadline - time.monotonic()))
            except BaseException:
                pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=2.0)
        if not self._thread.is_alive():
            self._loop.close()
        for pgid in self._groups:  # anything the SDK could not stop
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def mcp_missing() -> str | None:
    """Why the MCP SDK cannot be used here, or None."""
    import importlib.util
    for module in ("mcp", "jsonschema"):
        if importlib.util.find_spec(module) is None:
            return f"the {module} package is not installed (pip install -e '.[mcp]')"
    return None


class _StartRefused(Exception):
    """A server that cannot be started as configured (a missing environment variable)."""


async def _list_all(client: Any) -> list[Any]:
    tools, cursor = [], None
    for _ in range(100):  # pages; a server that never stops paginating is cut off
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without its title strings (noise in a prompt); a property named `title` stays."""
    if isinstance(schema, dict):
        return {k: _compact_schema(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_compact_schema(v) for v in schema]  # type: ignore[return-value]
    return schema


def _describe_start_error(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return _describe_start_error(exc.exceptions[0])
    if isinstance(exc, _StartRefused):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return f"cannot start: {exc.strerror}: {exc.filename}"
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "listing its tools timed out"
    from mcp.shared.exceptions import MCPError
    if isinstance(exc, MCPError):
        return f"it ended the connection before answering ({exc.message}): it exited or does not speak MCP"
    return f"{type(exc).__name__}: {exc}"


def _session_children() -> set[int]:
    """Children of this process that lead their own process group (how the SDK starts stdio servers)."""
    out = set()
    try:
        for child in psutil.Process().children(recursive=False):
            try:
                if os.getpgid(child.pid) == child.pid:
                    out.add(child.pid)
            except OSError:
                continue
    except psutil.Error:
        pass
    return out


def _make(s: Setup) -> Tool | None:
    if not s.cfg.mcp_servers:
        return None
    return McpTool(s.cfg, s.workdir, s.home_root)


ROW = ToolRow("mcp", _make, refused=("no MCP tool is available", "no MCP server is configured (tools.mcp_servers)"))
