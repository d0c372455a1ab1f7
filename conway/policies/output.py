"""The answer's form: the output constraint a backend enforces, and where a tool-calling family's schema goes.

Output constraints, in order of preference (`STRUCTURED_MODES`): a GBNF grammar generated from the action
schema (enforces numeric bounds), a JSON schema through `response_format: json_object` (llama-cpp-python),
OpenAI's `json_schema` (llama-server, vLLM …), or none (free text, robust extraction). A family whose adapter
calls a tool (`Adapter.request_tools`) sends its function schema in the request's `tools` field where the
server renders it (`policy.tool_schema`), else in the system prompt.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field, replace
from typing import Any, get_args

from conway.config import PolicyConfig
from conway.geometry import Size
from conway.policies.adapter import Adapter
from conway.policies.backends.backend import Backend, StructuredSpec
from conway.policies.settings import PolicySettings
from conway.protocols import PolicyError

__all__ = ["STRUCTURED_MODES", "AnswerForm", "OutputForm", "ToolsNotRendered"]

STRUCTURED_MODES = tuple(m for m in get_args(PolicyConfig.model_fields["structured_output"].annotation) if m != "auto")
"""Output constraints, in order of preference (see the module's docstring)."""

_TOOLS_REFUSED = re.compile(r"\btools?\b|jinja|tool_choice", re.I)
"""A refusal naming the `tools` field (llama-server without --jinja: "tools param requires --jinja flag")."""


class ToolsNotRendered(PolicyError):
    """`policy.tool_schema=request` against a server whose template would drop the `tools` field."""

    permanent = True
    advice = "set policy.tool_schema=prompt (or auto), or serve the model with a chat template that renders tools"


@dataclass
class AnswerForm:
    """One decision's answer form: the instructions, the request's `tools` (None: in the instructions), the
    output constraint's mode and its spec."""

    instructions: str
    tools: list[dict[str, Any]] | None
    mode: str = "none"
    spec: StructuredSpec = field(default_factory=StructuredSpec)
    note: str | None = None
    """Why the constraint asked for is not applied (`OutputForm.note`)."""


class OutputForm:
    """The output constraint in use (detected once) and the tool schema's place (learned from the server)."""

    def __init__(self, adapter: Adapter, backend: Backend, settings: PolicySettings):
        self.adapter = adapter
        self.backend = backend
        self.settings = settings
        self._mode: str | None = None
        self._mode_lock = threading.Lock()
        self.note: str | None = None
        """Why the constraint asked for is not applied: the family offers none of that kind (gta1 has no grammar),
        so its answers are free text; said by `conway probe` and in every decision's record."""
        self.tools_refused: str | None = None
        """Why the server's `tools` field is no longer used (it refused it under `policy.tool_schema=auto`)."""

    # -- the tool schema ----------------------------------------------------------------

    def instructions(self, types: list[str], sent: Size) -> AnswerForm:
        """The instructions and the request's `tools` for this decision (the form chosen by `tool_form`)."""
        conv = self.settings.convention
        tools = self.adapter.request_tools(types, sent, conv) if self.tool_form() else None  # type: ignore[misc]
        return AnswerForm(tools[0] if tools else self.adapter.instructions(types, sent, conv),
                          tools[1] if tools else None)

    def tool_form(self) -> bool:
        """Whether the family's function schema goes in the request's `tools` field (`policy.tool_schema`): only when
        asked for (`request`). `auto` is `prompt`: the official agents write the tool into their own system text,
        and a chat template that renders `tools` would move and reword it (the deviation `tool_schema`)."""
        if self.adapter.request_tools is None or self.tools_refused:
            return False
        if self.settings.tool_schema != "request":
            return False
        said = self.backend.renders_tools()
        if self.settings.tool_schema == "request" and said is False:  # the tool would vanish without a word
            raise ToolsNotRendered("policy.tool_schema=request, but the server's chat template renders no tools "
                                   "(llama-server /props: chat_template_caps.supports_tools false): the tool would "
                                   "be dropped")
        return self.settings.tool_schema == "request" or said is True

    def refused_tools(self, form: AnswerForm, exc: PolicyError, types: list[str], sent: Size) -> bool:
        """Whether a refusal is the server refusing the `tools` field under `auto` (the template takes tools but
        the server does not render them: llama-server without --jinja); then the tool goes in the system prompt
        from now on, said once, and `form` is changed so."""
        if not (form.tools and self.settings.tool_schema == "auto" and exc.status in (400, 422, 500)
                and _TOOLS_REFUSED.search(str(exc))):
            return False
        self.tools_refused = f"the server refused the tools field ({str(exc)[:200]}); the tool goes in the " \
                             "system prompt from now on (policy.tool_schema=auto)"
        form.tools, form.spec = None, replace(form.spec, tools=None)
        form.instructions = self.adapter.instructions(types, sent, self.settings.convention)
        return True

    def record(self, form: AnswerForm) -> dict[str, Any]:
        """Where the tool schema went, for a tool-calling family's decision record."""
        if self.adapter.request_tools is None:
            return {}
        meta = {"tool_schema": "request" if form.tools else "prompt"}
        if self.tools_refused and not form.tools:
            meta["tool_schema_note"] = self.tools_refused
        return meta

    # -- the output constraint ---------------------------------------------------------

    def constrain(self, form: AnswerForm, types: list[str], sent: Size, captured: Size) -> None:
        """Set the mode in use and the adapter's constraint for it (plus the `tools` field) on `form`."""
        form.mode = self.structured_mode()
        form.note = self.note
        spec = StructuredSpec()
        if form.mode != "none":
            try:
                spec = self.adapter.structured(types, convention=self.settings.convention, sent_size=sent,
                                               captured_size=captured)
            except ValueError as exc:
                raise PolicyError(f"cannot build the output constraint: {exc}") from None
        form.spec = replace(spec, tools=form.tools) if form.tools else spec

    def structured_mode(self) -> str:
        """The output constraint in use; detected on first use (PolicyError when a requested one is unsupported)."""
        with self._mode_lock:
            return self._structured_mode()

    def _structured_mode(self) -> str:
        if self._mode is not None:
            return self._mode
        wanted = self.settings.structured_output
        if wanted == "none" or (wanted == "auto" and not self.adapter.constrain_by_default):
            self._mode = "none"
            return self._mode
        supported = self.backend.structured_support()
        if wanted == "auto":
            usable = [m for m in supported if self._offered(m)]
            self._mode = usable[0] if usable else "none"
        elif wanted in supported and not self._offered(wanted):  # the backend could, the family has nothing to
            kind = "grammar" if wanted == "grammar" else "JSON schema"  # hold its answer to: say so, apply none
            self.note = (f"policy.structured_output={wanted} is not applied: the {self.adapter.name} family has no "
                         f"{kind} for its answers, so they are free text")
            self._mode = "none"
        elif wanted in supported:
            self._mode = wanted
        else:
            raise PolicyError(f"policy.structured_output={wanted} but {self.backend.kind} backend "
                              f"{self.backend.model_id} does not honour it (it does: {', '.join(supported) or 'none'})")
        return self._mode

    def _offered(self, mode: str) -> bool:
        """Whether the family has a constraint of `mode`'s kind (a grammar, or a JSON schema for the JSON modes)."""
        try:
            spec = self.adapter.structured(["wait"], convention=self.settings.convention,
                                           sent_size=(28, 28), captured_size=(28, 28))
        except ValueError:
            return False
        return (spec.grammar if mode == "grammar" else spec.schema) is not None
