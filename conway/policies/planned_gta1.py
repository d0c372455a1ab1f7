"""GTA1's planner protocol (`policy.planner.protocol=gta1`): several proposals, a judge, then the grounding preset.

As OSWorld's GTA1 agent runs it (`mm_agents/gta1/gta1_agent.py`, `GTA1Agent.predict` and `select`, ljxpython/
OSWorldUse b5007a93…, run by `scripts/python/run_multienv_gta1.py`; the prompts kept in `families/gta1/prompts/`):

1. The planner is sent its system prompt (the step and `max_steps` filled in), every past step (the newest 5 with
   their screenshot as a user turn first) as a user `Step i Observation:` text and an assistant `Step i Thought:`
   / `Step i Action:` text, then the current screenshot with the instruction (PNG as captured, `detail: high`),
   asking `n` answers (`proposals`, 8, in batches of 8) with `max_completion_tokens` (4096) and nothing else.
2. The answers the agent's `isvalid` refuses are asked again, as many as were refused, with the agent's line
   appended to the conversation and 4x the tokens, up to 5 times (`gta1_aci.is_valid`).
3. With more than one proposal a judge call picks one (`select`): its system prompt (the password, the count, the
   size), the screenshot smart-resized (factor 28) and passed to PIL's `resize` as (height, width), as the agent
   passes it (so the judge sees it 1092 wide and 1932 tall at 1920x1080), and the goal, the past steps and the
   numbered proposals; `max_completion_tokens` 16384. Its JSON `index` is read; an answer without one is asked
   again (20 tries, then the first proposal), as the agent does.
4. The chosen proposal's `agent.*` call is grounded by the executor (each description the agent grounds, asked
   as the grounding preset asks) and becomes Conway's actions (`gta1_aci.to_actions`). The step is remembered as the
   agent remembers it (its action text the Python repr of `[[call]]`, as the agent's lists print), and at the step
   budget the action is a FAIL, as `predict` replaces it.

Where Conway differs: the judge is asked of the planner's model (the agent names `o3`, the runner's planner); a
planner that gives no valid proposal at all ends the step with a problem (the agent would ask the judge about an
empty list and fail); grounded points are in the screenshot's pixels (the agent scales to 1920x1080 whatever the
screen; with the `gta1` executor they are rounded as the agent rounds them); calls the ACI runs in the VM (UNO, wmctrl, OCR) are refused (`gta1_aci`).
"""

from __future__ import annotations

import base64
import io
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from conway.policies import gta1_aci
from conway.policies.backends.backend import StructuredSpec
from conway.policies.conversation import text
from conway.policies.families.gta1.adapter import FILES
from conway.policies.parsed import problem
from conway.policies.planned import PlannedPolicy, _captured_png_url, _image
from conway.prompt.layout import split_parts
from conway.protocols import Decision, DecisionContext

__all__ = ["GTA1Planner", "GTA1PlannedPolicy", "judge_index", "judge_image"]

BATCH = 8
MAX_RETRIES = 5
JUDGE_TRIES = 20
"""`MAX_RETRY_TIMES`: how often `select` asks again before taking the first proposal."""
JUDGE_TOKENS = 4096 * 4
_PAIR = re.compile(r"\((-?\d*\.?\d+),\s*(-?\d*\.?\d+)\)")


@dataclass
class _Step:
    image_url: str
    caption: str
    thought: str
    call: str


@dataclass
class GTA1Planner:
    """The planner and judge halves of OSWorld's GTA1 agent: its conversation, kept across steps."""

    max_steps: int = 15
    images: int = 5
    """`max_image_history_length`."""
    password: str = ""
    """`{CLIENT_PASSWORD}` of the judge's prompt (the runner's `--client_password`, "" by default)."""
    past: list[_Step] = field(default_factory=list)

    def messages(self, instruction: str, image_url: str) -> list[dict[str, Any]]:
        system = FILES.text("planner_system.txt").replace("{current_step}", str(len(self.past) + 1)).replace(
            "{max_steps}", str(self.max_steps))
        out: list[dict[str, Any]] = [{"role": "system", "content": [text(system)]}]
        first_image = max(0, len(self.past) - self.images)
        for i, p in enumerate(self.past):
            if i >= first_image:
                out.append({"role": "user", "content": [_image(p.image_url)]})
            out.append({"role": "user", "content": [text(f"Step {i + 1} Observation:\n{p.caption}\n")]})
            out.append({"role": "assistant", "content": [
                text(f"Step {i + 1} Thought:\n{p.thought}\nStep {i + 1} Action:\n{[p.call]}")]})
        user = FILES.text("planner_user.txt").replace("{instruction}", instruction)
        out.append({"role": "user", "content": [_image(image_url), text(user)]})
        return out

    def judge_messages(self, instruction: str, png: bytes, proposals: list[str]) -> list[dict[str, Any]]:
        url, (width, height) = judge_image(png)
        system = FILES.text("judge_system.txt").format(N_PLANNING=len(proposals), N_INDEX=len(proposals) - 1,
                                                       width=width, height=height, CLIENT_PASSWORD=self.password)
        history = [f"Observation:\n{p.caption}\nThought:\n{p.thought}\nAction:\n{[[p.call]]}" for p in self.past]
        lines = [f"The goal of the task is:\n{instruction}", "Here are the past history:"]
        lines += [f"### Past step {i}:\n{step}" for i, step in
                  enumerate(history or ["No history available. The action just started"])]
        lines += ["Here are the different plans to compare:"]
        lines += [f"### Index {i}:\n{plan}" for i, plan in enumerate(proposals)]
        return [{"role": "system", "content": [text(system)]},
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                             text("\n".join(lines))]}]

    def remember(self, image_url: str, answer: str, call: str) -> None:
        self.past.append(_Step(image_url, gta1_aci.caption_of(answer, "Observation"),
                               gta1_aci.caption_of(answer, "Thought"), call))


def judge_image(png: bytes) -> tuple[str, tuple[int, int]]:
    """The judge's screenshot as `select` makes it, and the (width, height) its prompt states: the smart-resized
    size (factor 28), the image resized to (height, width) as the agent passes them to PIL, PNG."""
    from PIL import Image

    from conway.geometry import smart_resize

    with Image.open(io.BytesIO(png)) as img:
        height, width = smart_resize(img.height, img.width, factor=28, min_pixels=1000, max_pixels=10 ** 12)
        resized = img.resize((height, width))
        buf = io.BytesIO()
        resized.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode(), (width, height)


def judge_index(answer: str) -> int | None:
    """The `index` of the judge's JSON answer (`extract_answer_from_response`: a ```json block, else the bare
    object, else an `"index": n` anywhere); None when there is none."""
    block = re.search(r"```json\s*(.*?)\s*```", answer, re.DOTALL)
    if block:
        try:
            found = json.loads(block.group(1))
            if isinstance(found, dict) and "explaining" in found and "index" in found:
                return int(found["index"])
        except (ValueError, TypeError):
            pass
    index = re.search(r'"index"\s*:\s*(\d+)', answer)
    return int(index.group(1)) if index else None


class GTA1PlannedPolicy(PlannedPolicy):
    """A planner model proposing as GTA1's agent's o3 does, judged, and a grounding preset locating."""

    def __init__(self, planner: Any, executor: Any, *, max_tokens: int, proposals: int = 8, max_steps: int = 15,
                 password: str = ""):
        super().__init__(planner, executor, max_tokens=max_tokens, temperature=0.0, max_steps=max_steps)
        self.proposals = proposals
        self.state = GTA1Planner(max_steps=max_steps, password=password)  # type: ignore[assignment]

    def decide(self, context: DecisionContext) -> Decision:
        started = time.perf_counter()
        image_url = _captured_png_url(context)
        instruction = split_parts(context, "")[0]
        calls: list[dict[str, Any]] = []
        valid = self._propose(self.state.messages(instruction, image_url), calls)
        meta: dict[str, Any] = {"policy": f"planner+{self.executor.adapter.name}", "calls": calls,
                                "proposals": len(valid)}
        if not valid:
            return Decision(raw_text="", model_id=self.model_id, latency_s=time.perf_counter() - started, meta=meta,
                            actions=[problem(f"the planner gave no valid proposal in {MAX_RETRIES + 1} tries")])
        png = base64.b64decode(image_url.split(",", 1)[1])
        chosen = self._select(instruction, png, valid, calls) if self.proposals > 1 else valid[0]
        call = gta1_aci.agent_call(chosen) or ""
        actions = self._act(chosen, call, context, calls)
        self.state.remember(image_url, chosen, call)
        if len(self.state.past) + 1 >= self.state.max_steps:  # predict's step budget: its action becomes FAIL
            actions = [gta1_aci.to_actions("agent.fail()", [])[0]]
        return Decision(raw_text=chosen, actions=actions, model_id=self.model_id,
                        thought=gta1_aci.caption_of(chosen, "Thought") or None, usage=calls[0]["usage"],
                        latency_s=time.perf_counter() - started, meta={**meta, "codes": [call]})

    def _propose(self, messages: list[dict[str, Any]], calls: list[dict[str, Any]]) -> list[str]:
        """The valid proposals: `proposals` asked, the refused ones asked again (the agent's line, 4x tokens)."""
        valid = [a for a in self._ask(messages, self.proposals, self.max_tokens, calls) if gta1_aci.is_valid(a)]
        missing = self.proposals - len(valid)
        for _ in range(MAX_RETRIES):
            if missing <= 0:
                break
            messages.append({"role": "user", "content": [text(FILES.text("retry.txt"))]})
            again = [a for a in self._ask(messages, missing, self.max_tokens * 4, calls) if gta1_aci.is_valid(a)]
            valid += again
            missing -= len(again)
        return valid

    def _ask(self, messages: list[dict[str, Any]], n: int, tokens: int, calls: list[dict[str, Any]]) -> list[str]:
        """`n` planner answers, in requests of at most 8 (a server that answers fewer choices is asked again for
        the rest)."""
        answers: list[str] = []
        for batch in [BATCH] * (n // BATCH) + ([n % BATCH] if n % BATCH else []):
            got: list[str] = []
            while len(got) < batch:
                texts = self._request(self.planner, "planner", messages, calls,
                                      {"n": batch - len(got), "max_completion_tokens": tokens})
                got += texts or [""]
            answers += got
        return answers

    def _request(self, policy: Any, role: str, messages: list[dict[str, Any]], calls: list[dict[str, Any]],
                 sampling: dict[str, Any]) -> list[str]:
        """One request with only the agent's fields (no temperature, no max_tokens); every choice's text. A
        planner Conway runs in-process is asked one answer at a time, its cap as `max_tokens` (llama.cpp's)."""
        started = time.perf_counter()
        tokens = None
        if getattr(policy.backend, "kind", "") == "llama_cpp":
            tokens, sampling = sampling["max_completion_tokens"], {}
        result = policy.backend.complete(messages, mode="none", spec=StructuredSpec(), max_tokens=tokens,
                                         temperature=None, seed=policy.settings.seed, sampling=sampling)
        choices = (result.raw or {}).get("choices") if isinstance(result.raw, dict) else None
        texts = [result.text] + [str((c.get("message") or {}).get("content") or "") for c in (choices or [])[1:]
                                 if isinstance(c, dict)]
        calls.append({"role": role, "model_id": policy.model_id, "usage": dict(result.usage or {}),
                      "latency_s": round(time.perf_counter() - started, 6), "raw_text": result.text,
                      **({"choices": texts} if len(texts) > 1 else {})})
        return texts

    def _select(self, instruction: str, png: bytes, valid: list[str], calls: list[dict[str, Any]]) -> str:
        messages = self.state.judge_messages(instruction, png, valid)  # type: ignore[attr-defined]
        for _ in range(JUDGE_TRIES):
            answer = self._request(self.planner, "judge", messages, calls, {"max_completion_tokens": JUDGE_TOKENS})[0]
            index = judge_index(answer)
            if index is not None and 0 <= index < len(valid):
                return valid[index]
        return valid[0]

    def _point(self, answer: str, parsed: tuple[int, int], sent: Any, captured: Any) -> tuple[int, int]:
        """GTA1's executor's point as `request_vllm` and `OSWorldACI.resize_coordinates` take it: the first
        `(x,y)` of integers over the size its prompt states, times the screen's size, rounded (the agent's
        screen is always 1920x1080; here the captured one)."""
        found = _PAIR.search(answer) if self.executor.adapter.name == "gta1" else None
        if found is None or "." in found.group(0):
            return parsed
        x, y = int(found.group(1)), int(found.group(2))
        return round(x / sent[0] * captured[0]), round(y / sent[1] * captured[1])

    def _act(self, chosen: str, call: str, context: DecisionContext, calls: list[dict[str, Any]]) -> list[Any]:
        """The chosen call grounded (each description the agent grounds) and turned into actions."""
        fn = (gta1_aci.bound(call) or ("", {}))[0]
        points = []
        if fn not in gta1_aci.REFUSED:
            for description in gta1_aci.to_ground(chosen):
                point = self._locate(str(description), context, calls)
                if point is not None:
                    points.append(point)
        return gta1_aci.to_actions(call, points)
