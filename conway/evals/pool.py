"""A pool of workers for the eval runner: processes on this machine, or Ray actors on a cluster.

A worker owns its own policy (built from the config in the worker: a policy
holds sockets, a loaded model or a server and never crosses a process) and
runs one case at a time through the suite's own `run_case`; the driver (the
command's process) hands cases out, collects the records and writes the one
report, in case order, exactly as a serial run does.

    spec = PoolSpec(workers=4)                       # processes here
    spec = PoolSpec(workers=16, ray="auto")          # Ray actors on a running cluster
    records, wall = run_pooled(suite, PolicyRecipe(config, str(home.root)), cases, spec, take=…)

What the pool promises:

- **endpoint slots**: workers are spread over `spec.endpoints` (or all use the
  configured one) and the driver never has more cases in flight on one
  endpoint than its slots: each case sends one request at a time, so that bounds
  the requests an endpoint sees;
- **faults**: a worker that dies mid-case (SIGKILL, its node lost) is replaced
  and that case runs once more on another worker, the record saying so
  (`retried`); a second loss records the case as an error, never twice or lost;
- **stop**: Ctrl+C or SIGTERM stops the workers (the requests in flight are
  abandoned with them) and the finished records make a partial report;
- **provenance**: each worker asks its policy once what served the model
  (`served_by`) and sends it with its records; the report names it as a
  serial run's does, or, when the workers were served differently (several
  endpoints), each distinct one with its endpoint (`ServedBy`).

On Ray the driver uses Ray's own actors, `ray.wait` and actor-death errors; no
scheduler or RPC of ours runs between machines. Everything Conway starts
listens on 127.0.0.1 and the dashboard stays off; workers get the config, whose
secrets are environment-variable names only, never values.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from conway.cancel import Cancel
from conway.config import ConwayConfig
from conway.errors import UserError

Record = dict[str, Any]
POLL_S = 0.25
STOP_GRACE_S = 10.0
"""How long stopped workers get to exit (a task closes its desktop) before they are killed."""
LOST = "environment_lost"
"""A record with this key says the case's environment died under it (its X server killed …): the case runs
once more, like a case whose worker died; the worker itself goes on."""


@dataclass(frozen=True)
class Endpoint:
    """A model endpoint as a resource: its URL (None: the configured policy's) and how many requests it takes at once."""

    url: str | None
    slots: int = 1


@dataclass(frozen=True)
class PoolSpec:
    workers: int = 1
    ray: str | None = None
    """A Ray cluster's address, "auto" (the cluster this machine belongs to) or "local" (start one here)."""
    endpoints: tuple[Endpoint, ...] = ()
    """Empty: every worker uses the configured endpoint, with as many slots as workers."""
    desktops_per_node: int | None = None
    """`ray="local"`: how many desktops (workers) the private node hosts (default: its CPUs). A cluster's own
    nodes declare theirs when they join (`ray start --resources '{"desktop": N}'`)."""

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise UserError(f"--workers must be at least 1 (got {self.workers})")
        if self.desktops_per_node is not None and self.desktops_per_node < 1:
            raise UserError(f"--desktops-per-node must be at least 1 (got {self.desktops_per_node})")
        if self.desktops_per_node is not None and self.ray != "local":
            raise UserError("--desktops-per-node sizes the private cluster of --ray local; the nodes of a cluster "
                            "declare theirs when they join: ray start --resources '{\"desktop\": N}'")
        for e in self.endpoints:
            if e.slots < 1:
                raise UserError(f"an endpoint's slots must be at least 1 (got {e.slots} for {e.url})")


def parse_endpoint(text: str) -> Endpoint:
    """`URL` or `URL@SLOTS` (the --pool-endpoint form)."""
    url, _, slots = text.rpartition("@") if "@" in text.rsplit("/", 1)[-1] else (text, "", "")
    try:
        n = int(slots) if slots else 1
    except ValueError:
        raise UserError(f"--pool-endpoint {text!r}: the slots after '@' must be a whole number") from None
    if not url.startswith(("http://", "https://")):
        raise UserError(f"--pool-endpoint {text!r}: expected an http(s) URL, optionally followed by @SLOTS")
    return Endpoint(url, n)


@dataclass(frozen=True)
class PolicyRecipe:
    """How a worker builds its own policy: the config (and the home its runtime logs go to)."""

    config: ConwayConfig
    home: str

    def for_endpoint(self, endpoint: Endpoint) -> "PolicyRecipe":
        if endpoint.url is None:
            return self
        data = self.config.model_dump()
        data["policy"]["endpoint"] = endpoint.url
        return PolicyRecipe(ConwayConfig.model_validate(data), self.home)

    def build(self) -> Any:
        from pathlib import Path

        from conway.policies.factory import build_policy
        from conway.store.home import Home
        return build_policy(self.config, Home(Path(self.home)))  # Home does not convert: a str root breaks `/`


@dataclass(frozen=True)
class Pool:
    """What the runner needs to run a suite's cases in a pool: where, and how each worker builds its policy."""

    spec: PoolSpec
    recipe: PolicyRecipe


def workers_pool(cfg: ConwayConfig, home_root: Any, workers: int) -> Pool | None:
    """`workers` local worker processes, each building the policy of `cfg` itself (None for one: the cases run in
    this process). A script's `--workers` without the command line's other pool flags."""
    return Pool(PoolSpec(workers=workers), PolicyRecipe(cfg, str(home_root))) if workers > 1 else None


def pool_spec_of(args):
    """The pool's shape a command's pool flags (`conway.args.pool`) ask for, or None (one process)."""
    endpoints = tuple(parse_endpoint(e) for e in getattr(args, "pool_endpoint", []))
    spec = PoolSpec(workers=args.workers, ray=args.ray, endpoints=endpoints,
                    desktops_per_node=getattr(args, "desktops_per_node", None))
    if spec.workers == 1 and not spec.ray and not endpoints and spec.desktops_per_node is None:
        return None
    return spec


def pool_of(args, cfg, home):
    """The worker pool the arguments ask for, or None (the cases run in this process)."""
    spec = pool_spec_of(args)
    if spec is None:
        return None
    if getattr(args, "parallel", 1) != 1:
        raise UserError("--parallel overlaps requests in one process; with --workers each worker sends its own: "
                        "use one or the other")
    return Pool(spec, PolicyRecipe(cfg, str(home.root)))


def pool_record(pool: Pool | None, parallel: int = 1) -> dict[str, Any]:
    """How the cases were spread (kept apart from `parameters`: a resumed run may use another pool)."""
    if pool is None:
        return {"workers": 1, "parallel": parallel}
    from conway.evals.report import safe_endpoint
    spec = pool.spec
    return {"workers": spec.workers, "ray": spec.ray,
            "endpoints": [{"url": safe_endpoint(e.url), "slots": e.slots} for e in spec.endpoints] or None}


class ServedBy:
    """What served the model in a pool's workers, gathered from their records (each worker asks its own policy
    once: the policy never leaves the worker)."""

    def __init__(self) -> None:
        self._seen: list[tuple[str | None, dict[str, Any]]] = []

    def add(self, endpoint: str | None, said: dict[str, Any] | None) -> None:
        """`said`: one worker's `served_by` (None or {}: its policy names nothing, e.g. the mock)."""
        if said and (endpoint, said) not in self._seen:
            self._seen.append((endpoint, said))

    def record(self) -> dict[str, Any] | list[dict[str, Any]] | None:
        """The report's `served_by`: the one dict when every worker was served alike (as a serial run's report
        says it), else each distinct one with the endpoint that served it (its secrets left out); None: no
        worker named one."""
        from conway.evals.report import safe_endpoint
        distinct = [said for i, (_, said) in enumerate(self._seen) if said not in [s for _, s in self._seen[:i]]]
        if len(distinct) <= 1:
            return distinct[0] if distinct else None
        return [{"endpoint": safe_endpoint(url) if url else None, **said} for url, said in self._seen]


def lost_record(case: Any, reason: str) -> Record:
    """The record of a case no worker could finish (its workers died twice)."""
    return {"case": case if isinstance(case, (int, str)) else repr(case), "error": reason, "error_cause": "worker lost"}


# --- the driver ---------------------------------------------------------------------


@dataclass
class _Slot:
    """One worker as the driver sees it."""

    name: str
    endpoint: int
    handle: Any = None
    busy: tuple[int, Any] | None = None
    """(position, case) in flight."""
    started: float = field(default_factory=time.monotonic)


def _assign(spec: PoolSpec) -> tuple[list[Endpoint], list[int]]:
    """(endpoints, endpoint index per worker): workers spread round-robin over the endpoints."""
    endpoints = list(spec.endpoints) or [Endpoint(None, spec.workers)]
    return endpoints, [i % len(endpoints) for i in range(spec.workers)]


def run_pooled(suite: Any, recipe: PolicyRecipe, cases: Sequence[Any], spec: PoolSpec, *,
               take: Callable[[int, Record], None], token: Cancel,
               on_state: Callable[[dict[str, str]], None] | None = None, served: ServedBy | None = None) -> None:
    """Every case through a worker; `take(position, record)` as each finishes. Returns when all are done or
    `token` is set (the workers stopped either way). `served` gathers what served each worker's model."""
    backend: _Backend = _RayBackend(spec.ray, spec.desktops_per_node) if spec.ray else _ProcessBackend()
    endpoints, assignment = _assign(spec)
    recipes = [recipe.for_endpoint(e) for e in endpoints]
    in_flight = [0] * len(endpoints)
    queue: deque[tuple[int, Any]] = deque(enumerate(cases))
    retried: dict[int, str] = {}
    slots = [_Slot(f"worker-{i + 1}", assignment[i]) for i in range(spec.workers)]
    try:
        for s in slots:
            s.handle = backend.start(suite, recipes[s.endpoint], s.name)
        while (queue or any(s.busy for s in slots)) and not token.is_set():
            for s in slots:
                if s.busy is None and queue and in_flight[s.endpoint] < endpoints[s.endpoint].slots:
                    s.busy = queue.popleft()
                    in_flight[s.endpoint] += 1
                    backend.submit(s.handle, *s.busy)
            if on_state:
                on_state({s.name: ("idle" if s.busy is None else f"case {s.busy[0] + 1}") for s in slots})
            for s, outcome in backend.poll([s for s in slots if s.busy], POLL_S):
                position, case = s.busy  # type: ignore[misc]
                s.busy = None
                in_flight[s.endpoint] -= 1
                if isinstance(outcome, _Done):
                    if served is not None:
                        served.add(endpoints[s.endpoint].url or recipe.config.policy.endpoint, outcome.served_by)
                    outcome = outcome.record
                if isinstance(outcome, dict) and outcome.get(LOST):
                    outcome = _Died(str(outcome[LOST]), worker_alive=True)
                if isinstance(outcome, _Died):
                    if not outcome.worker_alive:
                        s.handle = backend.start(suite, recipes[s.endpoint], s.name)  # a fresh worker in its place
                    if position in retried:
                        take(position, {**lost_record(case, f"lost twice: {retried[position]}; then {outcome.why}"),
                                        "retried": {"reason": retried[position]}})
                    else:
                        retried[position] = f"{s.name} died ({outcome.why})"
                        queue.appendleft((position, case))
                    continue
                if position in retried:
                    outcome = {**outcome, "retried": {"reason": retried[position], "attempt": 2}}
                take(position, outcome)
    finally:
        backend.stop_all([s.handle for s in slots if s.handle is not None], interrupted=token.is_set())


@dataclass(frozen=True)
class _Done:
    """A case's record as a worker sends it, with what served that worker's model (`served_by_of`)."""

    record: Record
    served_by: dict[str, Any] | None


@dataclass(frozen=True)
class _Died:
    why: str
    worker_alive: bool = False


class _Backend:
    def start(self, suite: Any, recipe: PolicyRecipe, name: str) -> Any: ...
    def submit(self, handle: Any, position: int, case: Any) -> None: ...
    def poll(self, busy: list[_Slot], timeout: float) -> list[tuple[_Slot, _Done | Record | _Died]]: ...
    def stop_all(self, handles: list[Any], interrupted: bool = False) -> None: ...


# --- processes on this machine ------------------------------------------------------------


def _process_main(conn: Any, suite: Any, recipe: PolicyRecipe) -> None:
    """A worker process: build the policy, then run the cases it is sent until it is sent None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the driver's: it stops the workers itself
    try:
        policy = recipe.build()
    except BaseException as exc:  # the driver records the cases as errors with this reason
        conn.send(("setup", f"{type(exc).__name__}: {exc}"))
        return
    from conway.evals.report import served_by_of
    served = served_by_of(policy)  # asked once: it does not change under a running worker
    try:
        while True:
            msg = conn.recv()
            if msg is None:
                return
            position, case = msg
            conn.send(("record", position, suite.run_case(policy, case), served))
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        return
    finally:
        policy.close()


@dataclass
class _Proc:
    process: Any
    conn: Any
    setup_error: str | None = None


class _ProcessBackend(_Backend):
    def __init__(self) -> None:
        # spawn, not fork: the driver has threads (progress, servers) that a fork would copy half-way
        self._ctx = multiprocessing.get_context("spawn")

    def start(self, suite: Any, recipe: PolicyRecipe, name: str) -> _Proc:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_process_main, args=(child, suite, recipe), name=f"conway-{name}",
                                 daemon=True)
        proc.start()
        child.close()
        return _Proc(proc, parent)

    def submit(self, handle: _Proc, position: int, case: Any) -> None:
        try:
            handle.conn.send((position, case))
        except (BrokenPipeError, OSError):
            pass  # it died: poll finds its sentinel

    def poll(self, busy: list[_Slot], timeout: float) -> list[tuple[_Slot, _Done | _Died]]:
        from multiprocessing.connection import wait
        by_obj: dict[Any, _Slot] = {}
        for s in busy:
            by_obj[s.handle.conn] = s
            by_obj[s.handle.process.sentinel] = s
        out: list[tuple[_Slot, _Done | _Died]] = []
        seen: set[int] = set()
        for obj in wait(list(by_obj), timeout=timeout):
            s = by_obj[obj]
            if id(s) in seen:
                continue
            proc: _Proc = s.handle
            msg = None
            try:
                if proc.conn.poll():
                    msg = proc.conn.recv()
            except (EOFError, OSError):
                msg = None
            if msg and msg[0] == "record":
                out.append((s, _Done(msg[2], msg[3])))
            elif msg and msg[0] == "setup":  # the policy cannot be built: no case would fare better
                raise UserError(f"{s.name} could not build the policy: {msg[1]}")
            else:
                proc.process.join(timeout=1.0)
                code = proc.process.exitcode
                why = f"signal {-code}" if code is not None and code < 0 else f"exit {code}"
                out.append((s, _Died(why)))
            seen.add(id(s))
        return out

    def stop_all(self, handles: list[_Proc], interrupted: bool = False) -> None:
        """Done: each worker is told so and exits. Stopped: SIGTERM at once, which a case's loop takes as a stop
        (its desktop closed, its session recorded), then SIGKILL for one that outlasts the grace."""
        for h in handles:
            try:
                h.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
            if interrupted and h.process.is_alive():
                h.process.terminate()
        deadline = time.monotonic() + STOP_GRACE_S
        for h in handles:
            h.process.join(timeout=max(0.0, deadline - time.monotonic()))
            if h.process.is_alive():
                h.process.kill()
                h.process.join(timeout=1.0)
            h.conn.close()


# --- Ray actors on a cluster ----------------------------------------------------------------


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UserError("--ray needs Ray: pip install 'conway[ray]' (the ray package)") from None
    return ray


_ACTOR: Any = None


def _actor_class() -> Any:
    global _ACTOR
    if _ACTOR is None:
        ray = _ray()

        class CaseWorker:
            """One desktop's worth of work on a Ray node: its own policy, one case at a time."""

            def __init__(self, suite: Any, recipe: PolicyRecipe):
                from conway.evals.report import served_by_of
                self.suite, self.policy = suite, recipe.build()
                self.served = served_by_of(self.policy)  # asked once, sent with each record

            def run(self, position: int, case: Any) -> tuple[int, Record, dict[str, Any] | None]:
                return position, self.suite.run_case(self.policy, case), self.served

            def pid(self) -> int:
                return os.getpid()

        _ACTOR = ray.remote(max_restarts=0, max_task_retries=0)(CaseWorker)
    return _ACTOR


def ray_connect(address: str, desktops: int | None = None) -> Any:
    """Join the cluster at `address` ("auto", "local" for a private one here with `desktops` desktops, or
    HOST:PORT); dashboard off."""
    ray = _ray()
    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "ignore_reinit_error": True,
                              "configure_logging": False}
    if address not in ("auto", "local") and not address.startswith("ray://"):
        _check_reachable(address)  # ray.init would retry an address nobody answers at for minutes
    try:
        if address == "local":
            ray.init(_node_ip_address="127.0.0.1", num_cpus=os.cpu_count() or 1,
                     resources={"desktop": desktops or os.cpu_count() or 1}, **kwargs)
        else:
            ray.init(address=address, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise UserError(f"cannot join the Ray cluster at {address}: {str(exc).splitlines()[0]}") from None
    return ray


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    import socket
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise UserError(f"--ray {address!r}: expected HOST:PORT (the head's GCS address), 'auto' or 'local'")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise UserError(f"cannot join the Ray cluster at {address}: nothing answers there ({exc.strerror or exc}); "
                        "start it with `ray start --head` or check the address") from None


class _RayBackend(_Backend):
    def __init__(self, address: str, desktops: int | None = None):
        self._owned = not _ray().is_initialized()
        """We joined the cluster for this run, so we leave it afterwards (an embedding program keeps its own)."""
        self.ray = ray_connect(address, desktops)
        self._refs: dict[Any, Any] = {}
        resources = self.ray.cluster_resources()
        # a node that declares desktops (`ray start --resources '{"desktop": N}'`) hosts at most N workers;
        # without that resource a worker takes one CPU
        self._options = {"resources": {"desktop": 1}, "num_cpus": 0} if resources.get("desktop") else {"num_cpus": 1}

    def start(self, suite: Any, recipe: PolicyRecipe, name: str) -> Any:
        return _actor_class().options(name=None, **self._options).remote(suite, recipe)

    def submit(self, handle: Any, position: int, case: Any) -> None:
        self._refs[id(handle)] = handle.run.remote(position, case)

    def poll(self, busy: list[_Slot], timeout: float) -> list[tuple[_Slot, _Done | Record | _Died]]:
        refs = {self._refs[id(s.handle)]: s for s in busy if id(s.handle) in self._refs}
        if not refs:
            time.sleep(timeout)
            return []
        ready, _ = self.ray.wait(list(refs), num_returns=1, timeout=timeout)
        out: list[tuple[_Slot, _Done | Record | _Died]] = []
        for ref in ready:
            s = refs[ref]
            self._refs.pop(id(s.handle), None)
            try:
                _, record, served = self.ray.get(ref)
                out.append((s, _Done(record, served)))
            except self.ray.exceptions.RayActorError as exc:
                out.append((s, _Died(f"Ray actor lost: {str(exc).splitlines()[0][:160]}")))
            except self.ray.exceptions.RayTaskError as exc:  # the case raised inside the worker: a case error
                out.append((s, lost_record(s.busy[1] if s.busy else None, f"the case raised: {exc.cause!r}")))
        return out

    def stop_all(self, handles: list[Any], interrupted: bool = False) -> None:
        for h in handles:
            try:
                self.ray.kill(h, no_restart=True)
            except Exception:  # already gone
                pass
        self._refs.clear()
        if self._owned:
            self.ray.shutdown()
