"""The whole configuration as pydantic models, composed with Hydra.

Order of precedence (later wins): `configs/config.yaml` (+ groups) → the home's
`config.yaml` → `key=value` overrides on the command line. Unknown keys fail;
files that look like they hold secrets are refused (keys come from the
environment).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Collection
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from conway.actions import TOOL_NAMES, TOOLS_ON_BY_DEFAULT
from conway.errors import UserError
from conway.policies.families import FAMILIES, POLICY_KINDS
from conway.redact import _secret_name, find_secrets, redact


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, validate_assignment=True)


HOST_FACTS = ("os", "cpus", "memory", "disk", "display", "programs")
"""The host facts the prompt can show (`agent.host_facts`)."""
HOST_FACTS_PROGRAMS = ("python3", "git", "curl", "libreoffice", "soffice", "firefox", "chromium", "google-chrome",
                       "code", "gimp", "vlc", "thunderbird", "xdg-open")
"""Programs looked for on PATH by default: a desktop's usual office, browser, editor and media programs."""


class AgentConfig(_Section):
    max_steps: int | None = Field(default=None, ge=1)
    """Stop after the model has made this many decisions (None: run until stopped). Cycles without an
    answer (rate limits, failed or timed-out requests) do not count; max_seconds bounds those."""
    max_seconds: float | None = Field(default=None, gt=0)
    """Stop after this much wall time (checked between steps; not a hard OS deadline)."""
    idle_backoff_start_s: float = Field(default=2.0, gt=0)
    """First wait when the model waits and the screen is unchanged; doubles each time."""
    idle_backoff_max_s: float = Field(default=60.0, gt=0)
    """Cap of the idle backoff."""
    recovery_backoff_start_s: float = Field(default=5.0, gt=0)
    """First wait after repeated pre-dispatch errors; doubles each time."""
    recovery_backoff_max_s: float = Field(default=300.0, gt=0)
    """Cap of the recovery backoff."""
    errors_before_backoff: int = Field(default=2, ge=1)
    """Consecutive pre-dispatch errors tolerated before recovery backoff starts."""
    max_permanent_failures: int = Field(default=3, ge=1)
    """Identical model failures in a row that retrying cannot cure (context exceeded, HTTP 400/401/403/404/405/501)
    after which the run ends, saying what to change; transient ones (HTTP 500, timeouts) keep backing off."""
    repetition_limit: int = Field(default=3, ge=1)
    """Identical side-effect actions allowed in a row; the next one is suppressed."""
    control_poll_s: float = Field(default=0.25, gt=0, le=5)
    """Slice length of every wait; pause/stop are checked between slices."""
    max_model_wait_s: float | None = Field(default=None, gt=0)
    """Longest wait a model may ask for in one `wait` action (None: idle_backoff_max_s); the prompt says so."""
    host_facts: list[Literal[HOST_FACTS]] = list(HOST_FACTS)  # type: ignore[valid-type]
    """The host facts the prompt's stable part shows, in this order (`[]` turns the part off): the OS, the CPU
    count, total memory (GiB), free disk of the home's filesystem (rounded), the display size, and which of
    host_facts_programs are on PATH."""
    host_facts_refresh_s: float = Field(default=300.0, ge=1)
    """The facts are gathered at the start and again at most this often (a changed fact reaches the next prompt
    after the refresh; an unchanged one leaves the prompt's prefix as it was)."""
    host_facts_programs: list[str] = list(HOST_FACTS_PROGRAMS)
    """Programs whose presence on PATH the host facts report (`programs`)."""

    @model_validator(mode="after")
    def _caps(self) -> "AgentConfig":
        if self.idle_backoff_max_s < self.idle_backoff_start_s:
            raise ValueError("idle_backoff_max_s must be >= idle_backoff_start_s")
        if self.recovery_backoff_max_s < self.recovery_backoff_start_s:
            raise ValueError("recovery_backoff_max_s must be >= recovery_backoff_start_s")
        return self

    @property
    def model_wait_cap_s(self) -> float:
        """The cap on a model-requested wait."""
        return self.max_model_wait_s if self.max_model_wait_s is not None else self.idle_backoff_max_s


INPROCESS_IMAGE_TOKENS = 4096
"""libmtmd's own image-token limit for the Qwen-VL projectors: llama-cpp-python's chat handlers open the mtmd
context with its defaults, so a larger image would be shrunk again inside and answered in other pixels."""


DEVIATION_KEYS = ("constitution", "goals", "memory", "latest_result", "host_facts", "skills", "action_list",
                  "accessibility", "half_slide", "recent_answers", "jpeg", "english_thoughts")
"""What Conway may add to, or change in, a trained family's official request, each opted into by its key
(`policy.deviations`; what each is: `conway/policies/deviations.py`)."""
RUN_DEVIATIONS = ("constitution", "goals", "memory", "recent_answers")
"""The deviations `conway run` (the continuous loop) turns on when `policy.deviations` is unset: the seed's
promises (the constitution's identity and scope, goals reread, memory kept) need them, and a run without end
cannot replay every earlier answer (memory.md keeps what the window lets go)."""


class PlannerConfig(_Section):
    """`policy.planner`: a planner model that proposes each step in words and code, the configured grounding preset
    (`policy=jedi-7b`, `gta1` …) becoming its executor (`conway/policies/planned.py`, OSWorld's Jedi agents;
    `conway/policies/planned_gta1.py`, OSWorld's GTA1 agent)."""

    protocol: Literal["jedi", "gta1"] = "jedi"
    """Whose planner turns are sent: `jedi` (OSWorld's Jedi agents: one answer a step, pyautogui code with a comment
    grounded) or `gta1` (OSWorld's GTA1 agent: `proposals` answers of `agent.*` calls, a judge call picking one)."""
    endpoint: str | None = None
    """The planner's OpenAI-compatible server (or `model_path`: a GGUF Conway runs)."""
    model: str | None = None
    api_key_env: str | None = None
    model_path: str | None = None
    mmproj_path: str | None = None
    max_tokens: int | None = Field(default=None, ge=1, le=32768)
    """The planner's reply cap (None: the protocol's agent's: 1500 for jedi, `JediAgent7B(max_tokens=1500)`, sent as
    `max_tokens`; 4096 for gta1, `GTA1Agent(max_tokens=4096)`, sent as `max_completion_tokens`, 4x on a retry)."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    """The planner's temperature (None: jedi's 0.5, `JediAgent7B(temperature=0.5)`; gta1 sends none, as its agent)."""
    max_steps: int = Field(default=15, ge=1)
    """`{max_steps}` of the planner's prompt (`JediAgent7B(max_steps=15)`; GTA1's runner's `--max_steps` 15, whose
    agent answers FAIL once the step count reaches it)."""
    proposals: int = Field(default=8, ge=1, le=64)
    """gta1: the answers asked per step (`GTA1Agent(N_SEQ=8)`, sent as `n` in requests of at most 8); above 1 a
    judge call picks one."""
    password: str = ""
    """gta1: `{CLIENT_PASSWORD}` of the judge's prompt (the runner's `--client_password`, "" by default)."""


class PolicyConfig(_Section):
    kind: Literal[POLICY_KINDS] = "mock"  # type: ignore[valid-type]  # the registry's kinds, as a Literal
    """`mock` (the offline scripted policy) or the model family whose adapter turns model output into actions
    (conway.policies.families)."""
    backend: Literal["auto", "http", "llama_cpp"] = "auto"
    """`http`: an OpenAI-compatible endpoint; `llama_cpp`: in-process llama-cpp-python; auto: http when an endpoint is set."""
    endpoint: str | None = None
    """Base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1."""
    model: str | None = None
    """Served model id; discovered from /v1/models when only one is served."""
    api_key_env: str | None = None
    """Name of the environment variable holding the API key (never the key itself)."""
    mock_script: str | None = None
    """Path of a YAML/JSONL script of decisions for the mock policy (None: the built-in demo)."""
    convention: Literal["auto", "absolute", "relative", "relative1000", "relative999", "screen"] = "auto"
    """Coordinate convention of the model's answers; auto picks the family default."""
    resize: str = "auto"
    """Image resize rule name (`policies.families.RESIZE_RULES`: qwen2.5-vl, uitars, uitars-1.0, qwen3-vl, gta1, holo1.5,
    none …); auto: family default."""
    prompt: str = "auto"
    """Which of the family's trained prompts is sent (`Family.prompts`: uitars-1.5 / uitars-1.0, OpenCUA's l2 / l1 /
    l3; for GUI-Owl 1.5 its agent's engine, dash / openai, whose requests differ in sampling and image encoding);
    auto: the family's default."""
    model_path: str | None = None
    """Local GGUF model for in-process inference or a server Conway starts."""
    mmproj_path: str | None = None
    """The vision projector GGUF that goes with model_path."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    """Sampling temperature (None: the family's agent's runner's, `Family.temperature`; Qwen3-VL's sends none)."""
    top_p: float | None = Field(default=None, gt=0, le=1)
    """Nucleus sampling `top_p` (None: the family's agent's, `Family.top_p`: 0.9 for UI-TARS, OpenCUA, Qwen2.5-VL;
    none sent for the others)."""
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    """`frequency_penalty` (None: the family's agent's, `Family.frequency_penalty`: 1 for UI-TARS; none sent for the
    others)."""
    max_tokens: int | None = Field(default=None, ge=1, le=32768)
    """Cap on generated tokens per decision (None: the family's agent's runner's, `Family.max_tokens`: 512 generic,
    2048 OpenCUA, 1000 UI-TARS-1.5, 1500 UI-TARS 1.0, 32768 Qwen3-VL, 1500 Qwen2.5-VL, 100 GTA1, 128 Holo1.5)."""
    request_timeout_s: float = Field(default=120.0, gt=0)
    """HTTP timeout of one decision request: it bounds the whole answer (a trickling or endless body included)."""
    structured_output: Literal["auto", "grammar", "json_object", "json_schema", "none"] = "auto"
    """Output constraint: auto detects what the backend honours (generic: grammar, then json_object+schema, then json_schema; opencua/uitars: none)."""
    image_max_tokens: int | None = Field(default=None, ge=4)
    """Cap on image tokens of the image sent (None: the family's, `Family.image_max_tokens`: 16384, Qwen3-VL 12800,
    GTA1 11285, Holo1.5 1280;
    in-process held to libmtmd's Qwen-VL default of 4096, which llama-cpp-python does not let Conway raise)."""
    seed: int | None = None
    """Sampling seed sent with every request (None: the server's default)."""
    image_encoding: Literal["jpeg", "png"] | None = None
    """How the resized screenshot is sent (None: as the family's agent sends it, `Family.image_encoding`: PNG for
    every trained family, JPEG for generic): lossless PNG level 1, or JPEG q85 (measured 5-40x cheaper; for a
    trained family the deviation `jpeg`, as `policy.deviations=[jpeg]` also sets)."""
    tool_schema: Literal["auto", "request", "prompt"] = "auto"
    """Where a tool-calling family (qwen25vl, qwen3vl) gets its `computer_use` function schema: `prompt` in the system
    prompt as its source writes it; `request` in the request's `tools` field, the server's chat template rendering
    it (vLLM; llama-server with --jinja, its default), the deviation `tool_schema`; `auto`: `prompt`, as the official
    agents send it."""
    planner: PlannerConfig | None = None
    """A planner model for a grounding preset (None: the preset decides alone)."""
    history_images: int | None = Field(default=None, ge=1, le=32)
    """Screenshots in one request, the current one included: the newest past ones go with the model's own answers
    (None: the family's, `Conversation.history_images`: UI-TARS 5, OpenCUA 3, Qwen2.5-VL and Qwen3-VL 5, GTA1, Holo1.5
    and generic 1). Fewer than the family's agent sends is the deviation `smaller_window`, listed in every report."""
    deviations: list[Literal[DEVIATION_KEYS]] | None = None  # type: ignore[valid-type]
    """What Conway adds to a trained family's official request, opted into per key (`DEVIATION_KEYS`; what each is:
    `conway models --conformance`). None: the mode's default, none for evaluations (`tasks run`, the checks,
    sweeps, `start --task`), the seed's (`RUN_DEVIATIONS`) for `conway run`; [] none anywhere."""

    @model_validator(mode="after")
    def _known_prompt(self) -> "PolicyConfig":
        family = FAMILIES.get(self.kind)
        problem = family.prompt_problem(self.prompt) if family is not None else None
        if problem:
            raise ValueError(f"prompt: {problem}")
        return self

    def _family_default(self, name: str) -> Any:
        family = FAMILIES.get(self.kind) or FAMILIES["generic"]  # the mock decides nothing: any family's numbers do
        return family.default(name, self.prompt if family.name == self.kind else "auto")

    @property
    def resolved_max_tokens(self) -> int:
        """`max_tokens` when set, else the family's default."""
        return self.max_tokens if self.max_tokens is not None else self._family_default("max_tokens")

    @property
    def resolved_max_tokens_sent(self) -> bool:
        """Whether requests carry max_tokens: when `max_tokens` is set, else as the family's agent sends it."""
        return self.max_tokens is not None or bool(self._family_default("sends_max_tokens"))

    @property
    def resolved_temperature(self) -> float | None:
        """`temperature` when set, else the family's default (None: none is sent)."""
        return self.temperature if self.temperature is not None else self._family_default("temperature")

    @property
    def resolved_sampling(self) -> dict[str, float | int]:
        """The sampling parameters sent beside temperature: the family's agent's (`Family.sampling`, `top_p`,
        `frequency_penalty`), `top_p` and `frequency_penalty` as the config sets them (absent: none sent). The family's
        values keep the type its agent sends (`top_k` 1, not 1.0: the wire's bytes, and a server's integer field)."""
        out = {str(k): v for k, v in self._family_default("sampling")}
        for name in ("top_p", "frequency_penalty"):
            value = getattr(self, name)
            value = value if value is not None else self._family_default(name)
            if value is not None:
                out[name] = value
        if self.seed is not None:
            out.pop("seed", None)  # the config's seed wins over a family's own (GUI-Owl's DashScope path sends 3407)
        return out

    @property
    def resolved_encoding(self) -> str:
        """`image_encoding` when set (or `jpeg` among the deviations), else how the family's agent sends images."""
        if self.image_encoding is not None:
            return self.image_encoding
        return "jpeg" if "jpeg" in (self.deviations or ()) else self._family_default("image_encoding")

    def resolved_deviations(self, continuous: bool = False) -> list[str]:
        """The opted-in deviation keys: `deviations` when set, else none, or the seed's in `conway run`
        (`continuous`)."""
        if self.deviations is not None:
            return list(self.deviations)
        return list(RUN_DEVIATIONS) if continuous else []

    @property
    def is_model_family(self) -> bool:
        """`kind` names a model family (not the mock, which writes no answers of its own)."""
        return self.kind in FAMILIES

    @property
    def resolved_history_images(self) -> int:
        """`history_images` when set, else the family's (1 for the mock: it reads no history)."""
        if self.history_images is not None:
            return self.history_images
        family = FAMILIES.get(self.kind)
        return family.conversation.history_images if family is not None else 1

    @property
    def official_layout(self) -> bool:
        """The family lays out a reference agent's request (UI-TARS, OpenCUA, the Qwen-VL families), which the
        deviations are measured against; False for Conway's own (generic) and the mock."""
        family = FAMILIES.get(self.kind)
        return family is not None and family.conversation.official

    def history_window(self, recent_steps: int) -> tuple[int, int | None, bool]:
        """(past screenshots, past answers or None for all, slide by half?) of the model's own past turns: the
        reference agent's constant window, or with `half_slide` (and for Conway's own layout) `recent_steps`
        answers slid by half."""
        images, deviations = self.resolved_history_images - 1, self.deviations or ()
        if self.official_layout and "half_slide" not in deviations:
            turns = recent_steps if "recent_answers" in deviations else FAMILIES[self.kind].conversation.max_turns
            return images, turns, False
        return images, recent_steps, True

    @property
    def keeps_reasoning(self) -> bool:
        """The family's agent replays an answer's `<think>` block (`Conversation.keeps_reasoning`)."""
        return self.is_model_family and FAMILIES[self.kind].conversation.keeps_reasoning

    def image_token_cap(self, in_process: bool = False, window: int | None = None) -> int:
        """`image_max_tokens` when set, else the family's cap; in-process held to libmtmd's limit, and when Conway
        runs the model (`window`: the context it gives it) to half that window, so a 4K screen still leaves room
        for the text instead of overflowing every decision."""
        if self.image_max_tokens is not None:
            return self.image_max_tokens
        cap = self._family_default("image_max_tokens")
        if window:
            cap = min(cap, max(4, window // 2))
        return min(cap, INPROCESS_IMAGE_TOKENS) if in_process else cap


class RuntimeConfig(_Section):
    """How Conway runs a local GGUF model: in-process, or a server it starts and stops itself."""

    server: Literal["auto", "llama-server", "llama-cpp-python"] = "auto"
    """Server program Conway starts (policy.backend=http, no endpoint): auto prefers llama.cpp's llama-server (configured, on PATH or in .cache/llama-server), else llama-cpp-python's."""
    llama_server_path: str | None = None
    """Path of a llama-server binary (None: PATH, then .cache/llama-server/bin/)."""
    host: str = "127.0.0.1"
    """Address a started server listens on; anything but loopback needs allow_remote."""
    allow_remote: bool = False
    """Allow a non-loopback host (the server then answers anyone who can reach it)."""
    port: int = Field(default=0, ge=0, le=65535)
    """Port of a started server (0: any free port)."""
    n_ctx: int = Field(default=8192, ge=256)
    """Context size in tokens (the KV cache is sized for it)."""
    n_threads: int | None = Field(default=None, ge=1)
    """Generation threads (None: half the CPUs, at least 1, at most 8)."""
    n_threads_batch: int | None = Field(default=None, ge=1)
    """Prompt-processing threads (None: same as n_threads)."""
    n_gpu_layers: int = Field(default=0, ge=-1)
    """Layers offloaded to one NVIDIA GPU (-1: all; needs a GPU build of llama.cpp)."""
    parallel: int = Field(default=1, ge=1, le=64)
    """llama-server slots."""
    omp_wait_policy: Literal["PASSIVE", "ACTIVE", "unset"] = "PASSIVE"
    """OMP_WAIT_POLICY for llama.cpp: PASSIVE stops idle OpenMP threads spin-waiting (10x faster on busy small machines)."""
    startup_timeout_s: float = Field(default=180.0, gt=0)
    """Deadline for a started server to answer its health check."""
    check_memory: bool = True
    """Refuse a model whose estimated memory does not fit (see headroom_gib)."""
    headroom_gib: float = Field(default=1.0, ge=0)
    """Memory kept free beyond the estimate (10% of what is available is kept when that is more)."""
    chat_handler: str = "auto"
    """llama-cpp-python vision chat handler (auto: mtmd with the GGUF's own chat template; or qwen2.5-vl, llava-1-5, llava-1-6, minicpm-v-2.6 …)."""
    chat_format: str | None = None
    """llama-cpp-python chat format for a model without a chat template (e.g. gemma)."""
    prompt_cache: bool = True
    """In-process: keep the KV cache between decisions and evaluate only what changed after the common prefix (false: the whole prompt every time)."""
    extra_args: list[str] = []
    """Extra command-line arguments for the started server program (a --host here needs allow_remote)."""

    @model_validator(mode="after")
    def _no_host_override(self) -> "RuntimeConfig":
        hosts = [a for a in self.extra_args if a == "--host" or a.startswith("--host=")]
        if hosts and not self.allow_remote:
            raise ValueError(f"extra_args sets {hosts[0]}, which would override the loopback bind: set "
                             "runtime.host instead (anything but loopback also needs runtime.allow_remote=true)")
        return self


class ContextConfig(_Section):
    budget_tokens: int | None = Field(default=None, ge=256)
    """Token budget of the text part of one decision prompt. None: sized from the model's context window (window − image tokens − max_tokens − instructions; 6000 when the model does not say); a number caps that further."""
    chars_per_token: float = Field(default=3.5, gt=0)
    """Estimate used when no tokenizer is at hand."""
    recent_steps: int = Field(default=12, ge=0)
    """Size of the recent-steps window shown oldest first; when full it slides by half (cache-friendly)."""
    result_max_chars: int = Field(default=4000, ge=200)
    """Tool output shown to the model is cut (head + tail) to this size."""


class SummariserConfig(_Section):
    """A separate model that writes memory's summary (text only): an OpenAI-compatible endpoint, or a local GGUF
    run in-process. Neither set: the acting model writes it."""

    endpoint: str | None = Field(default=None, pattern=r"^https?://")
    """Base URL of an OpenAI-compatible server for the summary, e.g. http://127.0.0.1:8081/v1."""
    model: str | None = None
    """Served model id at `endpoint` (discovered from /v1/models when only one is served); the id of a local one."""
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Name of the environment variable holding the endpoint's API key (never the key itself)."""
    model_path: str | None = None
    """A local GGUF text model run in-process (llama-cpp-python) for the summary."""
    n_ctx: int = Field(default=8192, ge=512)
    """Context of the in-process summariser (memory.max_chars of text and the summary must fit)."""
    n_threads: int | None = Field(default=None, ge=1)
    """Threads of the in-process summariser (None: as runtime.n_threads)."""

    @model_validator(mode="after")
    def _one_source(self) -> "SummariserConfig":
        if self.endpoint and self.model_path:
            raise ValueError("memory.summariser: set endpoint or model_path, not both")
        if self.api_key_env and not self.endpoint:
            raise ValueError("memory.summariser.api_key_env is for an endpoint (memory.summariser.endpoint)")
        return self

    @property
    def configured(self) -> bool:
        return bool(self.endpoint or self.model_path)


class MemoryConfig(_Section):
    max_chars: int = Field(default=8000, ge=500)
    """When memory.md grows past this it is compacted: summarised by a model, or truncated with a mark."""
    keep_chars: int = Field(default=4000, ge=200)
    """Size memory.md is brought down to by compaction: the summary's target (a longer one is refused)."""
    summarise: bool = True
    """Past max_chars a model summarises memory.md (memory.summariser when set, else the acting model; the mock has
    none and truncates); false: always the marked truncation."""
    summariser: SummariserConfig = SummariserConfig()
    """A separate text model for the summary (default: none, the acting model writes it)."""
    summary_max_tokens: int | None = Field(default=None, ge=16, le=32768)
    """Cap on the summary's tokens (None: keep_chars / 2, room for the target in any tokenizer)."""
    summary_timeout_s: float = Field(default=120.0, gt=0, le=3600)
    """Deadline of one summary request; past it the request is aborted and the marked truncation is used."""

    @property
    def resolved_summary_max_tokens(self) -> int:
        return self.summary_max_tokens if self.summary_max_tokens is not None else max(16, self.keep_chars // 2)


class JournalConfig(_Section):
    max_file_bytes: int = Field(default=8 * 1024 * 1024, ge=4096)
    """A journal file rotates when it grows past this."""
    max_total_bytes: int = Field(default=512 * 1024 * 1024, ge=8192)
    """Oldest journal files are deleted beyond this total."""
    fsync: Literal["intents", "all", "none"] = "intents"
    """Which events are made durable (fdatasync) before the next step: intents (required before side effects), all, or none (survives kill -9 only; tests/benchmarks)."""


class ObserveConfig(_Section):
    source: Literal["auto", "synthetic", "screen"] = "auto"
    """Where observations come from; auto: synthetic for the mock, else the screen."""
    keep_screenshots: int = Field(default=200, ge=0)
    """Most recent screenshots kept under screenshots/ (0: keep none)."""
    accessibility: bool = False
    """Add a read-only accessibility snapshot of the foreground app (Linux AT-SPI)."""
    accessibility_timeout_s: float = Field(default=3.0, gt=0, le=60)
    """Time limit of the accessibility subprocess."""
    accessibility_max_chars: int = Field(default=6000, ge=200)
    """Cap on the accessibility text put into the context."""


_SERVER_NAME = r"^[a-z][a-z0-9_-]{0,39}$"
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class McpServerConfig(_Section):
    """One MCP server: a stdio command Conway starts, or a Streamable HTTP URL it connects to."""

    name: str = Field(pattern=_SERVER_NAME)
    """Safe identifier (lowercase letters, digits, '_', '-'); the model names the server by it."""
    command: str | None = Field(default=None, min_length=1)
    """stdio: the program to start (it runs with your permissions; Conway does not sandbox it)."""
    args: list[str] = []
    """stdio: its arguments."""
    env: dict[str, str] = {}
    """stdio: extra non-secret environment values (secrets go through inherit_env)."""
    inherit_env: list[str] = []
    """stdio: names of variables passed from Conway's environment (e.g. an API token)."""
    cwd: str | None = None
    """stdio: working directory (None: the tools' workdir)."""
    url: str | None = Field(default=None, pattern=r"^https?://")
    """Streamable HTTP: the endpoint, e.g. http://127.0.0.1:8765/mcp."""
    headers_env: dict[str, str] = {}
    """Streamable HTTP: header name → name of the environment variable holding its value."""
    timeout_s: float = Field(default=60.0, gt=0, le=3600)
    """Deadline of one tool call; a side-effecting call past it is uncertain (never retried)."""
    startup_timeout_s: float = Field(default=30.0, gt=0, le=600)
    """Deadline to start or connect, answer the handshake and list tools; past it the run goes on without it."""
    enabled_tools: list[str] | None = None
    """Offer only these tools (None: all the server lists)."""

    @model_validator(mode="after")
    def _one_transport(self) -> "McpServerConfig":
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server {self.name!r} needs exactly one of command (stdio) or url (HTTP)")
        if self.url is not None and (self.args or self.env or self.inherit_env or self.cwd):
            raise ValueError(f"MCP server {self.name!r}: args/env/inherit_env/cwd are for stdio servers (command)")
        if self.command is not None and self.headers_env:
            raise ValueError(f"MCP server {self.name!r}: headers_env is for HTTP servers (url)")
        bad = [n for n in [*self.env, *self.inherit_env, *self.headers_env.values()] if not re.match(_ENV_NAME, n)]
        if bad:
            raise ValueError(f"MCP server {self.name!r}: not an environment variable name: {bad[0]!r}")
        return self


class SkillsConfig(_Section):
    paths: list[str] = []
    """Extra folders of Agent Skills (each skill a folder with SKILL.md); the home's skills/ is always read."""
    listing_max_chars: int = Field(default=2000, ge=200)
    """Cap on the skill names and descriptions put into every prompt (the cut is marked)."""
    max_file_bytes: int = Field(default=65536, ge=1024)
    """A SKILL.md or skill file larger than this is reported and left out."""


class ToolsConfig(_Section):
    enabled: list[Literal[TOOL_NAMES]] = list(TOOLS_ON_BY_DEFAULT)  # type: ignore[valid-type]  # the table's names
    """Tool groups offered to the model (a routing preference; `environment` decides what they can reach)."""
    environment: Literal["local", "sandbox"] = "local"
    """Where the shell and files tools act: `local` (as the current user, everything the user can reach) or
    `sandbox` (inside bubblewrap: the workdir read-write, the system read-only, the real home hidden)."""
    sandbox_network: bool = False
    """With `environment: sandbox`, whether commands share the host's network (default: a private loopback only)."""
    workdir: str | None = None
    """Where relative paths resolve and shell commands start (None: the home's scratch/)."""
    read_max_bytes: int = Field(default=65536, ge=256)
    """read_file returns at most this many bytes (head and tail kept, the cut announced)."""
    list_max_entries: int = Field(default=200, ge=1)
    """list_dir shows at most this many entries."""
    shell_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    """Shell commands are killed (whole process group) after this."""
    shell_max_output_bytes: int = Field(default=32768, ge=256)
    """Shell output kept (head and tail, the cut announced)."""
    shell_env_drop: list[str] = []
    """More environment variable names (fnmatch patterns) removed from shell commands; the variables that
    policy.api_key_env and memory.summariser.api_key_env name and names that look like credentials (*TOKEN,
    *API_KEY*, *SECRET*, *PASSWORD* …) always are."""
    shell_env_keep: list[str] = []
    """Credential-looking variable names the shell may still see (never policy.api_key_env's or
    memory.summariser.api_key_env's)."""
    gui_pause_s: float = Field(default=0.02, ge=0, le=2)
    """pyautogui's pause after each call (its own default, 0.1 s, is a large share of a cycle)."""
    gui_failsafe: bool = True
    """Moving the pointer into a screen corner ends the run."""
    mcp_servers: list[McpServerConfig] = []
    """MCP servers whose tools become `mcp` actions (see docs/mcp-and-skills.md)."""
    mcp_listing_max_chars: int = Field(default=6000, ge=200)
    """Cap on the MCP tool descriptions and schemas in the prompt (what is left out is marked)."""
    mcp_result_max_chars: int = Field(default=32768, ge=256)
    """An MCP result kept in the journal is cut (head + tail, announced) to this size."""

    @model_validator(mode="after")
    def _unique_servers(self) -> "ToolsConfig":
        names = [s.name for s in self.mcp_servers]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate MCP server name(s): {', '.join(dup)}")
        return self


class SandboxConfig(_Section):
    """Limits of each task desktop's box (docs/desktop.md#the-box): a cgroup of its own where Conway may make one
    (root), rlimits otherwise; each breach ends the task with a named error. 0: no limit of that kind."""

    pids: int = Field(1024, ge=0)
    """Processes and threads of the whole desktop (a fork bomb stops here)."""
    memory_mb: int = Field(4096, ge=0)
    """Memory of the whole desktop; past it the kernel's OOM killer ends a process in it (named in the report)."""
    cpus: float = Field(0.0, ge=0)
    """At most this many cores' worth of CPU time (0: no cap)."""
    cpu_seconds: int = Field(0, ge=0)
    """CPU seconds each program in the desktop may use (RLIMIT_CPU; 0: none)."""
    disk_mb: int = Field(2048, ge=0)
    """The home's size (a tmpfs of this size when root; watched otherwise) and each of /tmp and /dev/shm."""


WAIT_MODES = ("fixed", "measured")
"""How `tasks run` waits on an OSWorld-format task's desktop (`tasks.waits`)."""


_PROVIDER_NAME = r"^[a-z][a-z0-9_-]{0,31}$"


class TasksConfig(_Section):
    """Which desktop a task of `conway tasks run` (and rollouts, rerun, the pool's workers) runs on, and OSWorld's
    runner protocol (`lib_run_single.run_single_example` with `run.py`'s defaults) for the OSWorld-format tasks
    it runs, on every provider: the same waits and step limit, so a score means what OSWorld's would. Any other
    value is a deviation, listed in the report (`conway/evals/task_protocol.py`)."""

    desktop: str = Field(default="local", pattern=_PROVIDER_NAME)
    """The desktop provider by its short name: local (a disposable desktop's box on this machine), osworld (a
    machine running OSWorld's guest server, at desktop_url), qemu (OSWorld's VM image here)."""
    desktop_url: str | None = Field(default=None, pattern=r"^https?://")
    """osworld: the guest server's address, e.g. http://192.168.122.10:5000 (`tasks run --desktop-url`); several,
    comma-separated, are leased one per task."""
    desktop_options: dict[str, str | int | float | bool] = {}
    """The provider's own settings, checked by it before any task starts (qemu: image, memory_mb, cpus,
    guest_port, boot_timeout_s)."""

    wait_after_setup_s: float = Field(default=60.0, ge=0, le=600)
    """After the setup steps, before the first observation (OSWorld: `time.sleep(60)` after `env.reset`)."""
    sleep_after_action_s: float = Field(default=0.0, ge=0, le=60)
    """After each dispatched action, before the next observation (OSWorld: `env.step(action,
    args.sleep_after_execution)`, run.py's default 0)."""
    settle_before_eval_s: float = Field(default=20.0, ge=0, le=600)
    """After the loop ends, before the evaluator (OSWorld: `time.sleep(20)` before `env.evaluate()`)."""
    max_steps: int = Field(default=15, ge=1)
    """Decisions per task unless `--max-steps` or the task file says otherwise (OSWorld: run.py's 15)."""
    waits: Literal[WAIT_MODES] = "fixed"  # type: ignore[valid-type]
    """`fixed`: the waits above as OSWorld sleeps them. `measured` (a named deviation): each wait ends as soon
    as the desktop is ready (its windows unchanged, its processes idle, no file in the task's home written for
    `readiness_quiet_s`), never later than the fixed wait."""
    readiness_quiet_s: float = Field(default=2.0, gt=0, le=60)
    """With `waits: measured`, how long the windows and the home's files must stay unchanged to count as
    ready."""


class ConwayConfig(_Section):
    agent: AgentConfig = AgentConfig()
    policy: PolicyConfig = PolicyConfig()
    runtime: RuntimeConfig = RuntimeConfig()
    context: ContextConfig = ContextConfig()
    memory: MemoryConfig = MemoryConfig()
    journal: JournalConfig = JournalConfig()
    observe: ObserveConfig = ObserveConfig()
    tools: ToolsConfig = ToolsConfig()
    skills: SkillsConfig = SkillsConfig()
    sandbox: SandboxConfig = SandboxConfig()
    tasks: TasksConfig = TasksConfig()

    def for_task_formats(self, formats: Collection[str]) -> "ConwayConfig":
        """This configuration for a run of tasks of `formats` (`Task.format`): when every one is OSWorld's, a
        family's prompt left at `auto` is the one its OSWorld agent sends (`Family.osworld_prompt`, with facts of
        OSWorld's VM); on the user's own desktop (Conway's tasks, `start --task`) the training one is kept."""
        family = FAMILIES.get(self.policy.kind)
        if (family is None or family.osworld_prompt is None or self.policy.prompt != "auto" or not formats
                or set(formats) != {"osworld"}):
            return self
        return self.model_copy(update={"policy": self.policy.model_copy(update={"prompt": family.osworld_prompt})})

    def digest(self) -> str:
        """Stable hash of the resolved config (reports and checkpoints carry it)."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()


# --- composition -------------------------------------------------------------


def configs_dir() -> Path:
    """The Hydra config tree: CONWAY_CONFIGS, else the package's own copy (a wheel ships it), else `configs/`."""
    env = os.environ.get("CONWAY_CONFIGS")
    if env:
        path = Path(env)
    else:  # package data: conway/configs (in a checkout a symlink to the repository's configs/)
        path = Path(__file__).resolve().parent / "configs"
        if not (path / "config.yaml").exists():
            path = Path(__file__).resolve().parent.parent / "configs"
    if not (path / "config.yaml").exists():
        raise UserError(f"config tree not found at {path} (set CONWAY_CONFIGS to the repository's configs/ folder)")
    return path


def yaml_error_line(exc: Exception) -> str:
    """A YAML parser's error as one line (the README promises one-line errors): what is wrong and where."""
    problem, mark = getattr(exc, "problem", None), getattr(exc, "problem_mark", None)
    if not problem or mark is None:
        return " ".join(str(exc).split())
    context = getattr(exc, "context", None)
    return f"{context + ': ' if context else ''}{problem} (line {mark.line + 1}, column {mark.column + 1})"


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise UserError(f"{path} is not valid YAML: {yaml_error_line(exc)}") from None
    except UnicodeDecodeError:
        raise UserError(f"{path} is not UTF-8 text") from None
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path} must hold a mapping of settings, not {type(data).__name__}")
    return data


def _nested(overrides: list[str]) -> dict[str, Any]:
    """`policy.token=x` → {"policy": {"token": x}}: each key name is checked as itself, not as a dotted path."""
    out: dict[str, Any] = {}
    for item in overrides:
        key, value = item.split("=", 1)
        *parents, last = key.lstrip("+").split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {}) if isinstance(node.get(part, {}), dict) else {}
        node[last] = _scalar(value)
    return out


def _scalar(text: str) -> Any:
    """An override's value as the configuration will read it: a number stays a number (`chars_per_token=3`
    is a ratio, not a secret), anything else the text given."""
    try:
        number = float(text) if any(c in text for c in ".eE") else int(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def mock_chosen(home_config: Path | None, overrides: list[str]) -> bool:
    """Whether the mock policy was chosen (override or the home's config.yaml), not just the default."""
    keys = {o.lstrip("+").split("=", 1)[0] for o in overrides}
    if keys & {"policy", "policy.kind", "policy.mock_script"}:
        return True
    if home_config is None or not home_config.is_file():
        return False
    policy = _read_yaml(home_config).get("policy")
    return isinstance(policy, dict) and ("kind" in policy or "mock_script" in policy)


def load_config(home_config: Path | None = None, overrides: list[str] | None = None) -> ConwayConfig:
    """Compose defaults + home file + overrides and validate into a ConwayConfig."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    overrides = list(overrides or [])
    for item in overrides:
        if "=" not in item:
            raise UserError(f"override {item!r} must look like key=value (e.g. agent.max_steps=5)")
    home_data: dict[str, Any] = {}
    if home_config is not None and home_config.exists():
        home_data = _read_yaml(home_config)
        secrets = find_secrets(home_data)
        if secrets:
            raise UserError(f"{home_config} looks like it holds a secret at: {', '.join(secrets)}. "
                            "Remove it and pass keys through the environment (policy.api_key_env, or an MCP server's "
                            "inherit_env / headers_env, names the variable).")
    _check_home_policy(home_config, home_data)
    _check_override_keys(overrides)
    GlobalHydra.instance().clear()
    try:
        # Group choices (policy=opencua-7b) go through Hydra; plain values are applied after
        # the home file so the command line wins over it.
        groups = {d.name for d in configs_dir().iterdir() if d.is_dir()}
        choices = [o for o in overrides if o.lstrip("+").split("=", 1)[0] in groups]
        values = [o.lstrip("+") for o in overrides if o not in choices]
        _check_choices(choices)
        _check_values(values)
        with initialize_config_dir(config_dir=str(configs_dir()), version_base=None):
            base = compose(config_name="config", overrides=choices)
        OmegaConf.set_struct(base, False)  # unknown keys are pydantic's to reject, with a clear message
        cli = OmegaConf.from_dotlist(values)
        merged = OmegaConf.merge(base, OmegaConf.create(home_data), cli)
        data = OmegaConf.to_container(merged, resolve=True)
    except (HydraException, OmegaConfBaseException, ValueError, yaml.YAMLError) as exc:
        raise UserError(f"cannot compose configuration: {exc}".splitlines()[0]) from None
    finally:
        GlobalHydra.instance().clear()
    data.pop("hydra", None)  # type: ignore[union-attr]
    secrets = find_secrets(data)  # a list item or URL inside an override (`runtime.extra_args=[--api-key,…]`)
    if secrets:
        raise UserError(f"the configuration holds what looks like a secret at: {', '.join(secrets)}; "
                        "pass keys through the environment (policy.api_key_env names the variable)")
    try:
        return ConwayConfig.model_validate(data)
    except ValidationError as exc:
        raise UserError("invalid configuration:\n" + explain_validation(exc)) from None


def _check_override_keys(overrides: list[str]) -> None:
    """A typo is an unknown key (with the closest names), before any secret check; a secret is refused."""
    hints: list[str] = []
    for item in overrides:
        key = item.split("=", 1)[0].lstrip("+~")
        problem = unknown_key(key) if "." in key else None
        if problem and _secret_name(key.rsplit(".", 1)[-1]) and not _typo_of_a_setting(key):
            hints.append(f"{key}: {problem}")  # policy.api_key is someone's key, not a slip of the finger
        elif problem:
            raise UserError(f"override {key}: {problem}")
    secrets = find_secrets(_nested(overrides))
    if secrets:
        raise UserError(f"refusing secret-looking override(s): {', '.join(secrets)}; use environment variables"
                        + (f" ({'; '.join(hints)})" if hints else ""))


def presets(group: str) -> list[str]:
    """The presets of a config group (`policy`: one per released model), by name."""
    return sorted(p.stem for p in (configs_dir() / group).glob("*.yaml"))


def _check_choices(choices: list[str]) -> None:
    """A preset that does not exist is one line listing the group's presets (Hydra's own message names none)."""
    for item in choices:
        group, name = item.lstrip("+").split("=", 1)
        if name not in presets(group):
            raise UserError(f"override {item}: no {group} preset {name!r}; the {group} presets are "
                            f"{', '.join(presets(group))}")


def _check_values(values: list[str]) -> None:
    """Each override's value read alone first: a YAML error names the override it is in."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    for item in values:
        try:
            OmegaConf.from_dotlist([item])
        except (OmegaConfBaseException, ValueError, yaml.YAMLError) as exc:
            cause = exc.__cause__ if isinstance(exc.__cause__, yaml.YAMLError) else exc
            raise UserError(f"override {item}: its value is not valid YAML: {yaml_error_line(cause)}") from None


def _check_home_policy(path: Path | None, home_data: dict[str, Any]) -> None:
    """`policy: opencua-7b` in config.yaml: a preset's name where the policy's settings go (a raw pydantic message
    said only that a dictionary was expected)."""
    policy = home_data.get("policy")
    if policy is None or isinstance(policy, dict):
        return
    where = path if path is not None else "config.yaml"
    named = isinstance(policy, str) and policy in presets("policy")
    raise UserError(f"{where}: `policy:` holds the policy's settings (a mapping, e.g. policy: {{kind: generic, "
                    f"endpoint: http://127.0.0.1:8080/v1}}), not {policy!r}"
                    + ("; a preset is chosen on the command line: policy=" + policy if named else
                       f"; the presets (chosen on the command line, policy=NAME) are {', '.join(presets('policy'))}"))


def explain_validation(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"])
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "literal_error":
            msg = f"must be one of {err['ctx']['expected']}"
        lines.append(f"  {key}: {msg} (got {err.get('input')!r})" if err["type"] != "extra_forbidden"
                     else f"  {key}: {unknown_key(key) or 'unknown key'}")
    return "\n".join(lines)


def _typo_of_a_setting(dotted: str, cutoff: float = 0.85) -> bool:
    """Whether the last part of `dotted` is one slip away from a real setting (policy.max_token)."""
    import difflib

    model: Any = ConwayConfig
    *parents, leaf = dotted.split(".")
    for part in parents:
        fields = getattr(model, "model_fields", None) or {}
        annotation = fields[part].annotation if part in fields else None
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
        if model is None:
            return False
    return bool(difflib.get_close_matches(leaf, list(model.model_fields), n=1, cutoff=cutoff))


def unknown_key(dotted: str) -> str | None:
    """None when `dotted` names a setting (or lies inside a free-form one), else "unknown key" with the
    closest valid names (a typo like policy.max_token is not mistaken for anything else)."""
    import difflib

    model: Any = ConwayConfig
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        fields = getattr(model, "model_fields", None)
        if fields is None:
            return None  # below a free-form value (a dict of MCP servers, a list …)
        if part not in fields:
            prefix = ".".join(parts[:i])
            close = difflib.get_close_matches(part, list(fields), n=3, cutoff=0.6)
            names = [f"{prefix}.{c}" if prefix else c for c in close]
            hint = f" (did you mean {' or '.join(names)}?)" if names else \
                f" (known in {prefix or 'the configuration'}: {', '.join(sorted(fields))})"
            secret = " Keys and tokens never go in settings: policy.api_key_env names the environment variable." \
                if _secret_name(part) and not names else ""
            return f"unknown key{hint}{secret}"
        annotation = fields[part].annotation
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
        if model is None:
            return None
    return None


def to_yaml(config: ConwayConfig) -> str:
    """The resolved configuration as YAML, anything secret-looking redacted (it is printed)."""
    return yaml.safe_dump(redact(config.model_dump(mode="json")), sort_keys=False)


def api_key(config: ConwayConfig) -> str | None:
    """The API key from the environment variable `policy.api_key_env` names (never from a file)."""
    name = config.policy.api_key_env
    if not name:
        return None
    value = os.environ.get(name)
    if not value:
        raise UserError(f"policy.api_key_env names the environment variable {name}, but it is not set")
    return value
