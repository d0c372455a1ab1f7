"""One real decision: send one synthetic PNG through a policy and check the protocol end to end.

Never touches the desktop: the image is generated, no action is dispatched.
The report says the model id, the backend, the latency, which output
constraint the backend honours (detected by trying), the size the image was
sent at and in which coordinate convention, and whether the answer parsed into
a valid action. `conway probe` reports it in full; preflight's
`model.decision_check` turns it into one `Check`.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from conway.actions import ActionProblem, _Action, describe_action_space
from conway.prompt.parts import PartName
from conway.protocols import ContextPart, DecisionContext, Observation, Policy, PolicyError

__all__ = ["ProbeReport", "probe", "probe_context", "PROBE_SIZE"]

PROBE_SIZE = (640, 400)
PROBE_ACTION_TYPES = ["click", "double_click", "right_click", "type", "key", "hotkey", "scroll", "wait", "finish"]


@dataclass
class ProbeReport:
    ok: bool
    model_id: str
    latency_s: float
    policy: str | None = None
    backend: str | None = None
    structured_output: str | None = None
    """The constraint used for the probe decision (grammar, json_object, json_schema, none)."""
    structured_note: str | None = None
    """Why the constraint asked for is not applied (the family has none of that kind)."""
    structured_support: list[str] | None = None
    """What the backend honours (None when not detected)."""
    structured_detail: dict[str, str] = field(default_factory=dict)
    sent_size: list[int] | None = None
    captured_size: list[int] | None = None
    convention: str | None = None
    raw_text: str = ""
    actions: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    description: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def render(self) -> str:
        lines = [f"probe: {'PASS' if self.ok else 'FAIL'}"]
        lines += [f"  {d}" for d in self.description]
        lines.append(f"model id:          {self.model_id}")
        if self.policy:
            lines.append(f"policy / backend:  {self.policy} / {self.backend}")
        lines.append(f"latency:           {self.latency_s:.3f} s")
        if self.structured_note:
            lines.append(f"structured output: uses {self.structured_output} ({self.structured_note})")
        if self.structured_support is not None:
            uses = "" if self.structured_note else f"uses {self.structured_output}; "
            lines.append(f"structured output: {uses}honoured by the backend: "
                         f"{', '.join(self.structured_support) or 'none'}")
            for mode, what in self.structured_detail.items():
                lines.append(f"  {mode}: {what}")
        elif self.structured_output:
            lines.append(f"structured output: {self.structured_output}")
        if self.sent_size:
            lines.append(f"image:             captured {self.captured_size[0]}x{self.captured_size[1]} → sent "  # type: ignore[index]
                         f"{self.sent_size[0]}x{self.sent_size[1]} ({self.convention} coordinates)")
        if self.usage:
            lines.append("usage:             " + ", ".join(f"{k}={v}" for k, v in self.usage.items()))
        if self.timings:
            lines.append("timings:           " + ", ".join(f"{k}={v}" for k, v in self.timings.items()))
        if self.error:
            lines.append(f"error:             {self.error}")
        if self.raw_text:
            raw = self.raw_text if len(self.raw_text) <= 400 else self.raw_text[:400] + "…"
            lines.append(f"answer:            {raw}")
        for a in self.actions:
            lines.append(f"action:            {a}")
        for p in self.problems:
            lines.append(f"problem:           {p}")
        return "\n".join(lines)


def probe_context(size: tuple[int, int] = PROBE_SIZE) -> DecisionContext:
    """A decision context around a generated PNG (no screen, no files)."""
    from conway.observe.synthetic import render_synthetic_png

    png = render_synthetic_png(size[0], size[1], "Conway probe")
    digest = hashlib.sha256(png).hexdigest()
    obs = Observation(png=png, captured_size=size, source="synthetic", content_hash=digest,
                      change_key=digest[:16])
    parts = [
        ContextPart(PartName.CONSTITUTION, "You are being probed by Conway: a protocol check, not real work."),
        ContextPart(PartName.ACTION_SPACE, describe_action_space(PROBE_ACTION_TYPES)),
        ContextPart(PartName.GOALS, "Look at the screenshot and propose one valid action (a click on the white "
                                "window, or wait)."),
    ]
    return DecisionContext(parts=parts, observation=obs, step=0, action_types=list(PROBE_ACTION_TYPES))


def probe(policy: Policy, size: tuple[int, int] = PROBE_SIZE) -> ProbeReport:
    """One decision on a synthetic image; never raises for model/protocol failures."""
    model_id = policy.model_id
    report = ProbeReport(ok=False, model_id=model_id, latency_s=0.0,
                         description=list(policy.description))
    started = time.perf_counter()
    try:
        report.structured_output = policy.structured_mode()
        support = policy.structured_support()
        if support is not None:
            report.structured_support, report.structured_detail = support
        decision = policy.decide(probe_context(size))
    except PolicyError as exc:
        report.latency_s = time.perf_counter() - started
        report.error = str(exc)
        return report
    report.latency_s = decision.latency_s or (time.perf_counter() - started)
    meta = decision.meta
    report.policy = meta.get("policy")
    report.backend = meta.get("backend")
    report.structured_output = meta.get("structured_output", report.structured_output)
    report.structured_note = meta.get("structured_note")
    report.sent_size = meta.get("sent_size")
    report.captured_size = meta.get("captured_size")
    report.convention = meta.get("convention")
    report.raw_text = decision.raw_text
    report.usage = dict(decision.usage)
    report.timings = dict(meta.get("timings") or {})
    report.actions = [a.summary() for a in decision.actions if isinstance(a, _Action)]
    report.problems = [a.message for a in decision.actions if isinstance(a, ActionProblem)]
    if not decision.actions:
        report.problems.append("the answer held no action")
    report.ok = bool(report.actions) and not report.problems
    return report

