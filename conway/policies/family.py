"""What a model family is: the facts one `conway/policies/families/<name>/` folder declares, once.

A family is a kind of model Conway drives and trains: how it is asked and
how its answers are read (the adapter), the coordinates and image size it
answers in by default, how a recorded step is written as its answer (the
target-turn renderer), what training must know about its base models, and
the policy presets that serve it. `policy.kind`, `export --style`,
`data.policy_kind` and `model.family` are all checked against the registry
(`conway.policies.families`) that lists these records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from conway.geometry import Convention, ResizeRule

__all__ = ["Architecture", "Conversation", "Family", "LM_PROJECTIONS", "Renderer"]

Renderer = Callable[[dict[str, Any], dict[tuple[str, str], tuple[Any, Any]], str | None], str]
"""(action, its points in the model's coordinates by field pair, thought) → the answer text."""

LM_PROJECTIONS = r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"
"""LoRA on every attention and MLP projection of the language model; the vision tower stays frozen."""


@dataclass(frozen=True)
class Architecture:
    """A base model's architecture as training sees it (a recipe's `model.family`)."""

    name: str
    lora_targets: str = LM_PROJECTIONS
    """Default `lora.target_modules` (a regex over module names) when a recipe leaves it out."""
    remote_code: bool = False
    """The weights load only with the model repository's own Python code (`model.trust_remote_code`)."""
    gguf: bool = True
    """llama.cpp's converter knows the architecture, so a candidate can be converted to GGUF."""


@dataclass(frozen=True)
class Conversation:
    """The conversation a family was trained on, as its reference agent sends it (the layout code is the adapter's
    `messages`, `policies/conversation.py`)."""

    history_images: int = 1
    """Screenshots in one request, the current one included (`policy.history_images` when unset)."""
    replayed: str = "nothing: past steps are a text list"
    """What of a past turn is sent back (the README's model table says it)."""
    source: str = "Conway's own"
    """The reference agent's file the layout follows (repository, path, commit)."""
    max_turns: int | None = None
    """Past answers the reference agent replays at most (None: every earlier step of the episode, as UI-TARS,
    OpenCUA and the Qwen agents do); a faithful window is constant, never slid by half."""
    keeps_reasoning: bool = False
    """The reference agent replays an answer's `<think>` block with it (UI-Venus), where the others drop it."""

    @property
    def official(self) -> bool:
        """The layout follows a reference agent (its request is what a preset is held to), not Conway's own."""
        return self.source != "Conway's own"


@dataclass(frozen=True)
class Family:
    """One model family, declared once."""

    name: str
    """`policy.kind`, `export --style` and `data.policy_kind` value; recorded with every decision."""
    adapter: Callable[..., Any]
    """Builds the `policies.adapter.Adapter`: the prompt language, and the parser and grammar of the answers.
    Imported on use, so that the registry stays cheap to import. Called with one of `prompts` (a model's own
    prompt variant) or with nothing (the first)."""
    convention: Convention
    """Coordinate convention of the answers when `policy.convention=auto`."""
    resize: ResizeRule
    """Resize rule of the image sent when `policy.resize=auto`: a shared one from `conway.geometry`
    (`SHARED_RESIZE_RULES`) or the family's own, declared here; either way `policy.resize` can name it
    (`families.get_resize_rule`) and journals record its name."""
    render: Renderer
    """Writes a step's target turn in this family's answer format (its folder's `turn.py`; `policies.target_turns`
    calls it)."""
    follows_prompted_geometry: bool = False
    """The prompt states the coordinate convention and image size, so a step recorded by another family keeps
    the geometry it was recorded with; otherwise it is re-rendered in this family's defaults."""
    architecture: Architecture | None = None
    """The architecture of this family's released models, when training must know it (None: any base)."""
    presets: tuple[str, ...] = ()
    """`configs/policy/<name>.yaml` presets that serve this family (`conway run policy=<name>`)."""
    prompts: tuple[str, ...] = ()
    """The trained prompts this family's adapter can send (`policy.prompt`), the default first; empty: one only."""
    max_tokens: int = 512
    """Reply cap when `policy.max_tokens` is unset: what the family's own agent asks for (its source cited where
    declared), so that its reasoning sections are not cut off."""
    sends_max_tokens: bool = True
    """False: the agent's request carries no max_tokens (the server's default: until the model stops); `max_tokens`
    is then only Conway's reply budget when fitting the context, and is sent only when `policy.max_tokens` is set."""
    temperature: float | None = 0.0
    """(Every sampling value here keeps the Python type the agent sends, `0` or `0.0`: JSON keeps it, and the golden
    tests compare it.) Sampling temperature when `policy.temperature` is unset (the family's agent's runner's; None: not sent, the
    server's default, as OSWorld's Qwen3-VL agent leaves it)."""
    top_p: float | None = None
    """`top_p` the agent's runner sends (None: not sent)."""
    frequency_penalty: float | None = None
    """`frequency_penalty` the agent sends (None: not sent)."""
    retry_unfinished: int = 0
    """Times the agent asks again, with the same request, when an answer does not end with finish_reason "stop"
    (OpenCUA's `call_llm`); 0: never."""
    image_encoding: str = "png"
    """How the agent encodes its screenshots (every OSWorld agent sends PNG); `jpeg` (q85) for Conway's own layout;
    `jpeg<QUALITY>` for an agent's own JPEG quality (`imaging.Encoding.parse`)."""
    thought_language: str | None = None
    """The language the agent's prompt asks its thoughts in (UI-TARS' `{language}`: OSWorld's runners fill in
    Chinese); None: the prompt has no such slot."""
    osworld_prompt: str | None = None
    """The prompt (one of `prompts`) an OSWorld task run sends at `policy.prompt=auto`: the one the family's
    OSWorld agent sends, with facts of OSWorld's VM (OpenCUA's `l2-osworld`); elsewhere (the user's own desktop)
    the first of `prompts`, the training one. None: the first everywhere."""
    by_prompt: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Defaults that differ for one of `prompts` (`policy.prompt`: UI-TARS 1.0's runner samples otherwise). Its
    `deviation` (a sentence) makes choosing that prompt a named deviation, listed in every journal and report."""
    layout: str = "stable-first"
    """Conway's own layout of the request (`conway.prompt.layout.Layout`) for a family without a trained
    conversation; `by_prompt` may name another for one of its prompts (generic's `bare`)."""
    sampling: tuple[tuple[str, Any], ...] = ()
    """The other sampling parameters the family's agent sends at its runner's defaults (`top_p`, `top_k`,
    `repetition_penalty` …), as (name, value) pairs, its source cited where declared; empty: none."""
    conversation: Conversation = Conversation()
    reference: str | None = None
    """The official code a stateless family's one request a step follows (a grounding model asked once per target,
    no past turn), where it has no `conversation` of an agent's; None: Conway's own or `conversation.source`."""
    """Roles, where the prompt goes, the screenshot history and what of the model's own answers is replayed."""
    known_differences: tuple[str, ...] = ()
    """What a preset of this family still does otherwise than its agent at its runner's defaults, each with why it
    is not copied: not a deviation one opts into, but one every run has. `conway models --conformance` lists them
    as deviations and the README's preset table says the same words (`tests/test_readme.py` holds them equal)."""
    image_max_tokens: int = 16384
    """Image-token cap when `policy.image_max_tokens` is unset: the largest image the family's processor takes
    (qwen-vl-utils' max_pixels, 16384 tokens, for the Qwen-VL families)."""

    def default(self, name: str, prompt: str = "auto") -> Any:
        """The family's default `name` (max_tokens, temperature, top_p …) for `prompt` (`auto`: its first)."""
        chosen = self.prompts[0] if prompt == "auto" and self.prompts else prompt
        overrides = self.by_prompt.get(chosen, {})
        return overrides[name] if name in overrides else getattr(self, name)

    def prompt_problem(self, prompt: str) -> str | None:
        """None when `prompt` (`policy.prompt`) is one of this family's, else the sentence naming its prompts."""
        if prompt == "auto" or prompt in self.prompts:
            return None
        known = ", ".join(self.prompts) if self.prompts else "only its one, policy.prompt=auto"
        return f"the {self.name} family has no prompt {prompt!r} (known: {known})"

    def make_adapter(self, prompt: str = "auto") -> Any:
        """The adapter asking with `prompt` (`auto`: the family's default); ValueError naming the family's prompts
        when it has no such one."""
        problem = self.prompt_problem(prompt)
        if problem:
            raise ValueError(problem)
        return self.adapter() if prompt == "auto" else self.adapter(prompt)
