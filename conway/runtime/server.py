"""Start and stop a local OpenAI-compatible model server (llama.cpp) for Conway.

Which program:

* llama.cpp's `llama-server` (preferred: slots, `cache_prompt`, `--parallel`,
  `--image-min-tokens/--image-max-tokens`) when `runtime.llama_server_path`
  names one, or one is on PATH, or `scripts/build/build_llama_server.sh` left one in
  `.cache/llama-server/bin/`;
* else llama-cpp-python's `python -m llama_cpp.server` (the `llama` extra).

Rules: it listens on 127.0.0.1 unless `runtime.allow_remote`; a busy port is
refused before starting; all its output goes to the home's
`llama-runtime.log` (`conway.runtime.runtime_log`: filtered, redacted, capped,
0600); start-up waits for the health check with a deadline and, when the
server dies or never answers, shows the last lines of this start's output. It
runs with `OMP_WAIT_POLICY=PASSIVE` (idle OpenMP threads otherwise spin and
starve the busy one: 2.7 vs 33 tok/s measured on a 2-core machine) and the
configured thread counts. On Linux it is tied to Conway's life (it gets
SIGTERM if Conway dies), and `stop()` (also run at exit) ends it and waits.
"""

from __future__ import annotations

import atexit
import errno
import importlib.util
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx

from conway.config import ConwayConfig, RuntimeConfig
from conway.errors import UserError
from conway.redact import redact
from conway.runtime.runtime_log import RuntimeLog

__all__ = [
    "REPO_ROOT",
    "LocalServer",
    "ServerProgram",
    "find_program",
    "default_threads",
    "port_in_use",
    "free_port",
    "server_env",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILT_LLAMA_SERVER = REPO_ROOT / ".cache" / "llama-server" / "bin" / "llama-server"
LOG_TAIL_LINES = 25


def server_window(config: ConwayConfig, n_ctx: int) -> int:
    """The context one request gets on a server Conway starts: its context shared by its slots."""
    return n_ctx // max(1, config.runtime.parallel)


def default_threads(configured: int | None) -> int:
    """Configured threads, else half the CPUs (at least 1, at most 8)."""
    if configured:
        return configured
    return max(1, min(8, (os.cpu_count() or 2) // 2))


def server_env(runtime: RuntimeConfig, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    if runtime.omp_wait_policy != "unset":
        env["OMP_WAIT_POLICY"] = runtime.omp_wait_policy
    return env


def _check_host(runtime: RuntimeConfig) -> str:
    host = runtime.host.strip()
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not runtime.allow_remote:
        raise UserError(f"runtime.host={host} is not a loopback address: a model server Conway starts listens on "
                        "127.0.0.1 only, unless you also set runtime.allow_remote=true")
    return host


def port_in_use(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return True
            raise
    return False


def free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class ServerProgram:
    kind: str
    """`llama-server` or `llama-cpp-python`."""
    argv0: list[str]
    where: str


def _python_server_available() -> str | None:
    """None when `python -m llama_cpp.server` can run, else what is missing."""
    for mod in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "pydantic_settings", "starlette_context"):
        if importlib.util.find_spec(mod) is None:
            return mod
    return None


def find_program(runtime: RuntimeConfig) -> ServerProgram:
    """The server program to start, per `runtime.server` (UserError when none can run here)."""
    want = runtime.server
    if want in ("auto", "llama-server"):
        if runtime.llama_server_path:
            p = Path(runtime.llama_server_path).expanduser()
            if not p.is_file() or not os.access(p, os.X_OK):
                raise UserError(f"runtime.llama_server_path={p} is not an executable file")
            return ServerProgram("llama-server", [str(p)], str(p))
        found = shutil.which("llama-server")
        if found:
            return ServerProgram("llama-server", [found], found)
        if BUILT_LLAMA_SERVER.is_file() and os.access(BUILT_LLAMA_SERVER, os.X_OK):
            return ServerProgram("llama-server", [str(BUILT_LLAMA_SERVER)], str(BUILT_LLAMA_SERVER))
        if want == "llama-server":
            raise UserError("runtime.server=llama-server but no llama-server was found (not configured in "
                            "runtime.llama_server_path, not on PATH, not in .cache/llama-server/bin): build it "
                            "with `bash scripts/build/build_llama_server.sh`")
    missing = _python_server_available()
    if missing:
        raise UserError(f"no model server program here: llama-server is not found and llama-cpp-python's server "
                        f"cannot run (module {missing!r} missing): pip install -e '.[llama]' or build llama-server "
                        "with `bash scripts/build/build_llama_server.sh`")
    return ServerProgram("llama-cpp-python", [sys.executable, "-m", "llama_cpp.server"], "python -m llama_cpp.server")


def _chat_format_for(runtime: RuntimeConfig, has_mmproj: bool) -> str | None:
    if runtime.chat_format:
        return runtime.chat_format
    if has_mmproj:
        return "mtmd" if runtime.chat_handler == "auto" else runtime.chat_handler
    return None


def build_command(program: ServerProgram, cfg: ConwayConfig, host: str, port: int, alias: str,
                  n_ctx: int | None = None) -> list[str]:
    """The command line for `program` serving cfg.policy.model_path (+ mmproj) on host:port."""
    rt = cfg.runtime
    pol = cfg.policy
    n_ctx = n_ctx or rt.n_ctx
    threads = default_threads(rt.n_threads)
    threads_batch = rt.n_threads_batch or threads
    if program.kind == "llama-server":
        cmd = [*program.argv0, "--model", str(pol.model_path), "--host", host, "--port", str(port),
               "--ctx-size", str(n_ctx), "--threads", str(threads), "--threads-batch", str(threads_batch),
               "--n-gpu-layers", "all" if rt.n_gpu_layers == -1 else str(rt.n_gpu_layers),
               "--parallel", str(rt.parallel), "--alias", alias, "--no-webui"]
        if pol.mmproj_path:
            cmd += ["--mmproj", str(pol.mmproj_path)]
            cmd += ["--image-max-tokens", str(pol.image_token_cap(window=server_window(cfg, n_ctx)))]
        if rt.chat_format:
            cmd += ["--chat-template", rt.chat_format]
    else:
        cmd = [*program.argv0, "--model", str(pol.model_path), "--host", host, "--port", str(port),
               "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--n_threads_batch", str(threads_batch),
               "--n_gpu_layers", str(rt.n_gpu_layers), "--model_alias", alias]
        fmt = _chat_format_for(rt, bool(pol.mmproj_path))
        if pol.mmproj_path:
            cmd += ["--clip_model_path", str(pol.mmproj_path)]
        if fmt:
            cmd += ["--chat_format", fmt]
    return cmd + list(rt.extra_args)


def _tie_to_parent() -> None:  # runs in the child before exec (Linux): die with Conway
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


@dataclass
class LocalServer:
    """One started model server; `start()` returns its base URL, `stop()` ends it."""

    cmd: list[str]
    host: str
    port: int
    log_path: Path
    program: ServerProgram
    env: dict[str, str]
    startup_timeout_s: float
    alias: str
    proc: subprocess.Popen | None = None
    started_s: float | None = None
    _atexit: Any = field(default=None, repr=False)
    _pump: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.log = RuntimeLog(self.log_path)

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    @classmethod
    def from_config(cls, cfg: ConwayConfig, log_path: Path, alias: str, n_ctx: int | None = None) -> "LocalServer":
        """`n_ctx`: the context to load (runtime.n_ctx held to the model's trained context; None: runtime.n_ctx)."""
        rt = cfg.runtime
        host = _check_host(rt)
        if rt.port:
            if port_in_use(host, rt.port):
                raise UserError(f"port {rt.port} on {host} is already in use (another server?): choose another "
                                "with runtime.port=N, or runtime.port=0 for any free port")
            port = rt.port
        else:
            port = free_port(host)
        program = find_program(rt)
        return cls(cmd=build_command(program, cfg, host, port, alias, n_ctx), host=host, port=port, log_path=log_path,
                   program=program, env=server_env(rt), startup_timeout_s=rt.startup_timeout_s, alias=alias)

    def start(self) -> str:
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.log.begin(f"{stamp} conway starts {self.program.kind}: {' '.join(redact(self.cmd))}")
        started = time.monotonic()
        try:
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, env=self.env, start_new_session=True,
                                         preexec_fn=_tie_to_parent if sys.platform.startswith("linux") else None)
        except OSError as exc:
            raise UserError(f"cannot start {self.program.where}: {exc.strerror or exc}") from None
        assert self.proc.stdout is not None
        self._pump = self.log.pump(self.proc.stdout)
        self._atexit = self.stop
        atexit.register(self.stop)
        try:
            self._wait_ready(started)
        except BaseException:
            self.stop()
            raise
        self.started_s = time.monotonic() - started
        self.log.note(f"conway: {self.program.kind} ready at {self.base_url} after {self.started_s:.1f} s "
                      f"(pid {self.proc.pid})")
        return self.base_url

    def _wait_ready(self, started: float) -> None:
        assert self.proc is not None
        root = self.base_url[: -len("/v1")]
        deadline = started + self.startup_timeout_s
        with httpx.Client(timeout=httpx.Timeout(2.0)) as http:
            while True:
                code = self.proc.poll()
                if code is not None:
                    raise UserError(self._died_message(code))
                if self._ready(http, root):
                    return
                if time.monotonic() > deadline:
                    raise UserError(f"the model server ({self.program.kind}) did not become ready within "
                                    f"{self.startup_timeout_s:g} s (runtime.startup_timeout_s); last lines of "
                                    f"{self.log_path}:\n{self.log.tail(LOG_TAIL_LINES)}")
                time.sleep(0.2)

    @staticmethod
    def _ready(http: httpx.Client, root: str) -> bool:
        try:
            r = http.get(root + "/health")
            if r.status_code == 200:
                return True
            if r.status_code == 503:  # llama-server: still loading
                return False
            r = http.get(root + "/v1/models")  # llama-cpp-python has no /health
            return r.status_code == 200
        except httpx.HTTPError:
            return False

    def _died_message(self, code: int) -> str:
        if self._pump is not None:
            self._pump.join(timeout=2.0)  # the last lines the server printed before it exited
        tail = self.log.tail(LOG_TAIL_LINES)
        low = tail.lower()
        if "address already in use" in low or "couldn't bind" in low or "errno 98" in low:
            return (f"the model server could not listen on {self.host}:{self.port}: the port is in use "
                    f"(choose another with runtime.port=N, or 0 for any free port); last lines of {self.log_path}:\n"
                    f"{tail}")
        return (f"the model server ({self.program.kind}) exited with code {code} during start-up; last lines of "
                f"{self.log_path}:\n{tail}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout_s: float = 15.0) -> None:
        """End the server (SIGTERM, then SIGKILL) and wait for it; safe to call twice."""
        proc, self.proc = self.proc, None
        if self._atexit is not None:
            atexit.unregister(self._atexit)
            self._atexit = None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                proc.terminate()
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        self.log.note(f"conway stopped {self.program.kind} (pid {proc.pid}, exit {proc.returncode})")
