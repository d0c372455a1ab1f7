"""The normalized action schema every policy produces and every tool consumes.

Coordinates in GUI actions are pixels of the *captured screenshot* (the image
the observer took, before any resize for the model). Policies map their model's
convention into this space (see `geometry.py`); GUI tools map it to the input
coordinate space of the host. Nothing here knows about models or pyautogui.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, NamedTuple, Union, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

# --- key names: one set for the validator, the output grammars and schemas, and the GUI tool ---------

NAMED_KEYS = frozenset("""
accept add alt altleft altright apps backspace browserback browserfavorites browserforward browserhome
browserrefresh browsersearch browserstop capslock clear convert ctrl ctrlleft ctrlright decimal del delete
divide down end enter esc escape execute f1 f2 f3 f4 f5 f6 f7 f8 f9 f10 f11 f12 f13 f14 f15 f16 f17 f18 f19
f20 f21 f22 f23 f24 final fn hanguel hangul hanja help home insert junja kana kanji launchapp1 launchapp2
launchmail launchmediaselect left modechange multiply nexttrack nonconvert num0 num1 num2 num3 num4 num5 num6
num7 num8 num9 numlock pagedown pageup pause pgdn pgup playpause prevtrack print printscreen prntscrn prtsc
prtscr return right scrolllock select separator shift shiftleft shiftright sleep space stop subtract tab up
volumedown volumemute volumeup win winleft winright yen command option optionleft optionright
""".split())
"""pyautogui's multi-character KEY_NAMES (0.9.54), lowercase."""
SINGLE_KEYS = frozenset("\t\n\r !\"#$%&'()*+,-./0123456789:;<=>?@[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"
                        "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
"""Single characters a key action may name (pyautogui's, plus capital letters)."""
KEY_ALIASES = {
    "control": "ctrl", "ctl": "ctrl", "lctrl": "ctrlleft", "rctrl": "ctrlright",
    "return": "enter", "escape": "esc", "del": "delete", "ins": "insert",
    "page_up": "pageup", "pgup": "pageup", "page_down": "pagedown", "pgdn": "pagedown",
    "arrowup": "up", "arrowdown": "down", "arrowleft": "left", "arrowright": "right",
    "arrow_up": "up", "arrow_down": "down", "arrow_left": "left", "arrow_right": "right",
    "spacebar": "space", "back_space": "backspace", "bksp": "backspace",
    "super": "win", "meta": "win", "cmd": "command", "opt": "option", "caps_lock": "capslock",
    "print_screen": "printscreen", "plus": "+", "minus": "-",
}
"""Common spellings models use, mapped to pyautogui key names (matched case-insensitively)."""
KEY_CHOICES: tuple[str, ...] = tuple(sorted(NAMED_KEYS | set(KEY_ALIASES))) + \
    tuple(sorted(k for k in SINGLE_KEYS if k.isprintable() and k not in ('"', "\\")))
"""The key names output grammars and schemas offer: every one the validator accepts except the control
characters, the quote and the backslash (a model writes "tab" / "enter"; llama-cpp-python 0.3.36's schema
converter mangles those into a grammar that crashes its sampler: segfault, measured)."""


def canonical_key(key: str) -> str | None:
    """The pyautogui key name `key` stands for (aliases and case resolved), or None when it names no key."""
    k = key.strip() if key.strip() else key
    if len(k) == 1:
        return k if k in SINGLE_KEYS else None
    k = k.lower()
    k = KEY_ALIASES.get(k, k)
    return k if k in NAMED_KEYS or (len(k) == 1 and k in SINGLE_KEYS) else None


def _check_key(key: str) -> str:
    if canonical_key(key) is None:
        raise ValueError(f"unknown key {key!r} (examples: enter, esc, tab, backspace, delete, up, pagedown, f5, "
                         "ctrl, alt, shift, win, a, 1)")
    return key


class KeyNameRule:
    """Marks a field whose value must be one of KEY_CHOICES (read by the grammar generator)."""


KeyName = Annotated[str, Field(min_length=1, max_length=40), AfterValidator(_check_key),
                    WithJsonSchema({"type": "string", "enum": list(KEY_CHOICES)}), KeyNameRule()]


class GroupTool(NamedTuple):
    """The tool that runs an action group: named, never imported here (a tool's module may import a desktop or an
    SDK lazily; this module stays a leaf that policies import)."""

    module: str
    """Its module under `conway/tools/`, which declares the tool's `ROW` (`conway.tools.row`)."""
    by_name: bool = True
    """`tools.enabled` turns it on by the module's name; False: its own configuration does (MCP servers, skills)."""
    on_by_default: bool = False
    """In `tools.enabled` by default. A new tool is off until an owner turns it on (or its entry says so): what
    an agent may do in every run is never widened by adding a module."""


ACTION_GROUPS: dict[str, GroupTool | None] = {
    "skill": GroupTool("skills", by_name=False),
    "mcp": GroupTool("mcp", by_name=False),
    "file": GroupTool("files", on_by_default=True),
    "shell": GroupTool("shell", on_by_default=True),
    "browser": GroupTool("browser", on_by_default=True),
    "gui": GroupTool("gui", on_by_default=True),
    "control": None,  # wait and finish: the loop runs them itself
}
"""Every action belongs to one group: the tool that runs it and its repetition counter (gui counters reset on
screen change). In the toolbox's order (`conway.tools.registry.tool_rows`: the prompt's tool texts and the start-up
findings follow it). A new tool is its module in `conway/tools/` plus, here, its action classes (in `Action`) and
its entry in this table."""
TOOL_NAMES: tuple[str, ...] = tuple(t.module for t in ACTION_GROUPS.values() if t is not None and t.by_name)
"""The names `tools.enabled` takes (`conway.config`), in the table's order."""
TOOLS_ON_BY_DEFAULT: tuple[str, ...] = tuple(t.module for t in ACTION_GROUPS.values()
                                             if t is not None and t.by_name and t.on_by_default)
"""`tools.enabled`'s default, in the table's order."""


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    side_effect: ClassVar[bool] = True
    """Whether dispatching this action may change the world (intent is journaled first)."""
    group: ClassVar[str]
    """One of ACTION_GROUPS, declared by every action class (no default: a forgotten one is refused at import,
    rather than silently becoming a GUI action hidden when there is no screen)."""
    lengthy: ClassVar[bool] = False
    """May take a while (a shell command, an MCP call): a side-effecting one gets a pending copy in
    state.json before dispatch, so `status` shows it while it runs. Whether a stop can cut it short is
    the tool's (`Tool.cancellable`), not this."""
    paired: ClassVar[tuple[tuple[str, str], ...]] = ()
    """Cross-field rule: fields given together or not at all (validator, JSON schema and grammar obey it)."""
    one_nonzero: ClassVar[tuple[str, ...]] = ()
    """Cross-field rule: at least one of these fields is given and non-zero."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        group = getattr(cls, "group", None)
        if group not in ACTION_GROUPS:
            raise TypeError(f"action class {cls.__name__} must declare group: one of {', '.join(ACTION_GROUPS)}"
                            f" (got {group!r})")

    def summary(self) -> str:
        """Short human/model readable rendering, e.g. `click(x=10, y=20)`."""
        fields = self.model_dump(exclude={"type"}, exclude_none=True)
        args = ", ".join(f"{k}={v!r}" for k, v in fields.items())
        return f"{self.type}({args})"  # type: ignore[attr-defined]


Coord = Annotated[float, Field(ge=0, le=100_000)]


# --- GUI ---------------------------------------------------------------------


class Click(_Action):
    type: Literal["click"] = "click"
    group: ClassVar[str] = "gui"
    x: Coord
    y: Coord
    button: Literal["left", "middle", "right"] = "left"


class DoubleClick(_Action):
    type: Literal["double_click"] = "double_click"
    group: ClassVar[str] = "gui"
    x: Coord
    y: Coord


class TripleClick(_Action):
    type: Literal["triple_click"] = "triple_click"
    group: ClassVar[str] = "gui"
    x: Coord
    y: Coord


class RightClick(_Action):
    type: Literal["right_click"] = "right_click"
    group: ClassVar[str] = "gui"
    x: Coord
    y: Coord


class Move(_Action):
    type: Literal["move"] = "move"
    group: ClassVar[str] = "gui"
    x: Coord
    y: Coord


class Drag(_Action):
    type: Literal["drag"] = "drag"
    group: ClassVar[str] = "gui"
    x: Coord
    y: Coord
    to_x: Coord
    to_y: Coord


class TypeText(_Action):
    type: Literal["type"] = "type"
    group: ClassVar[str] = "gui"
    text: str = Field(min_length=1, max_length=10_000)


class Key(_Action):
    type: Literal["key"] = "key"
    group: ClassVar[str] = "gui"
    key: KeyName


class Hotkey(_Action):
    type: Literal["hotkey"] = "hotkey"
    group: ClassVar[str] = "gui"
    keys: list[KeyName] = Field(min_length=1, max_length=6)


class Scroll(_Action):
    type: Literal["scroll"] = "scroll"
    group: ClassVar[str] = "gui"
    dy: int = Field(default=0, ge=-100, le=100)
    """Wheel clicks; positive scrolls up (pyautogui's convention)."""
    dx: int = Field(default=0, ge=-100, le=100)
    """Horizontal wheel clicks; positive scrolls right."""
    x: Coord | None = None
    y: Coord | None = None

    paired: ClassVar[tuple[tuple[str, str], ...]] = (("x", "y"),)
    """Optional fields that come together or not at all (the grammar and schema say so too)."""
    one_nonzero: ClassVar[tuple[str, ...]] = ("dy", "dx")
    """At least one of these must be non-zero (the grammar and schema say so too)."""

    @model_validator(mode="after")
    def _rules(self) -> "Scroll":
        check_rules(self)
        return self


def check_rules(action: _Action) -> None:
    """The cross-field rules a class declares (`paired`, `one_nonzero`): the validator's half."""
    for a, b in action.paired:
        if (getattr(action, a) is None) != (getattr(action, b) is None):
            raise ValueError(f"{a} and {b} go together: give both or neither")
    nonzero = action.one_nonzero
    if nonzero and not any(getattr(action, f) for f in nonzero):
        raise ValueError(f"give a non-zero {' or '.join(nonzero)}")


# --- direct tools ------------------------------------------------------------


class ReadFile(_Action):
    type: Literal["read_file"] = "read_file"
    path: str = Field(min_length=1, max_length=4096)
    side_effect: ClassVar[bool] = False
    group: ClassVar[str] = "file"


class ReplaceText(_Action):
    type: Literal["replace_text"] = "replace_text"
    path: str = Field(min_length=1, max_length=4096)
    old: str = Field(min_length=1)
    new: str
    group: ClassVar[str] = "file"


class AppendFile(_Action):
    type: Literal["append_file"] = "append_file"
    path: str = Field(min_length=1, max_length=4096)
    text: str
    group: ClassVar[str] = "file"


class ListDir(_Action):
    type: Literal["list_dir"] = "list_dir"
    path: str = Field(default=".", min_length=1, max_length=4096)
    side_effect: ClassVar[bool] = False
    group: ClassVar[str] = "file"


class OpenBrowser(_Action):
    type: Literal["open_browser"] = "open_browser"
    url: str = Field(min_length=1, max_length=4096)
    group: ClassVar[str] = "browser"


class Shell(_Action):
    type: Literal["shell"] = "shell"
    command: str = Field(min_length=1, max_length=20_000)
    timeout_s: float | None = Field(default=None, gt=0, le=3600)
    group: ClassVar[str] = "shell"
    lengthy: ClassVar[bool] = True


class Mcp(_Action):
    """A tool of a configured MCP server; `arguments` are checked against the tool's input schema."""

    type: Literal["mcp"] = "mcp"
    server: str = Field(min_length=1, max_length=40)
    tool: str = Field(min_length=1, max_length=128)
    arguments: dict[str, Any] = Field(default_factory=dict)
    group: ClassVar[str] = "mcp"
    lengthy: ClassVar[bool] = True
    _read_only: bool = PrivateAttr(default=False)
    """Set by the MCP tool's check from the server's readOnlyHint; unknown means a side effect."""

    @property
    def side_effect(self) -> bool:  # type: ignore[override]
        return not self._read_only


class ReadSkill(_Action):
    """An Agent Skill's instructions (SKILL.md) or one of its files."""

    type: Literal["read_skill"] = "read_skill"
    name: str = Field(min_length=1, max_length=64)
    file: str | None = Field(default=None, min_length=1, max_length=512)
    side_effect: ClassVar[bool] = False
    group: ClassVar[str] = "skill"


# --- control -----------------------------------------------------------------


class Wait(_Action):
    type: Literal["wait"] = "wait"
    seconds: float | None = Field(default=None, ge=0, le=3600)
    """None lets the loop's idle backoff choose."""
    side_effect: ClassVar[bool] = False
    group: ClassVar[str] = "control"


class Finish(_Action):
    type: Literal["finish"] = "finish"
    status: Literal["DONE", "FAIL"]
    message: str = ""
    side_effect: ClassVar[bool] = False
    group: ClassVar[str] = "control"


Action = Annotated[
    Union[
        Click, DoubleClick, TripleClick, RightClick, Move, Drag, TypeText, Key, Hotkey, Scroll,
        ReadFile, ReplaceText, AppendFile, ListDir, OpenBrowser, Shell, Mcp, ReadSkill, Wait, Finish,
    ],
    Field(discriminator="type"),
]

ACTION_TYPES: dict[str, type[_Action]] = {cls.model_fields["type"].default: cls for cls in get_args(get_args(Action)[0])}
"""Every action type and its class, in the union's order (the one list of actions)."""


def types_of(group: str) -> frozenset[str]:
    """The action types of one group (what its tool runs)."""
    return frozenset(n for n, c in ACTION_TYPES.items() if c.group == group)


GUI_TYPES = types_of("gui")

_adapter: TypeAdapter[Any] = TypeAdapter(Action)


class ActionProblem(BaseModel):
    """A validation failure kept as data, so the loop can show it to the model."""

    model_config = ConfigDict(frozen=True)
    message: str
    raw: Any = None


def parse_action(raw: Any) -> "_Action | ActionProblem":
    """Validate one action given as a dict; never raises for bad input."""
    if isinstance(raw, _Action):
        return raw
    if not isinstance(raw, dict):
        return ActionProblem(message=f"an action must be a JSON object, got {type(raw).__name__}", raw=raw)
    kind = raw.get("type")
    if not isinstance(kind, str) or kind not in ACTION_TYPES:  # {"type": {}} is unhashable: check str first
        known = ", ".join(sorted(ACTION_TYPES))
        what = f"{kind!r}" if isinstance(kind, str) and len(kind) <= 60 else _show(kind)
        return ActionProblem(message=f"unknown action type {what}; known types: {known}", raw=raw)
    too_big = _giant_number(raw)
    if too_big is not None:
        return ActionProblem(message=f"invalid {kind} action: {too_big}", raw=raw)
    try:
        return _adapter.validate_python(raw)
    except ValidationError as exc:
        return ActionProblem(message=f"invalid {kind} action: {_describe(exc)}", raw=raw)
    except Exception as exc:
        return ActionProblem(message=f"invalid {kind} action: {type(exc).__name__}: {str(exc)[:200]}", raw=raw)


MAX_FIELD_NUMBER = 10**15
"""No field of any action comes near this; a bigger number is refused before validation
(converting a 400-digit integer to a float raises OverflowError)."""


def _giant_number(raw: dict[str, Any]) -> str | None:
    for key, value in raw.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_FIELD_NUMBER:
                return f"{key}: a {digits(v)}-digit number is not a plausible value"
    return None


def digits(v: int) -> int:
    """How many decimal digits `v` has (estimated beyond Python's int-to-str limit)."""
    try:
        return len(str(abs(v)))
    except ValueError:
        return int(v.bit_length() * 0.30103) + 1


def _show(v: Any) -> str:
    """A type-named, length-bounded rendering of a value that is not a valid type name."""
    if v is None:
        return "None (the \"type\" field is missing)"
    try:
        text = repr(v)
    except Exception:
        text = object.__repr__(v)
    text = text if len(text) <= 60 else text[:60] + "…"
    return f"{text} ({type(v).__name__}, not a type name)" if not isinstance(v, str) else text


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"] if p != err["loc"][0] or len(err["loc"]) == 1)
        parts.append(f"{loc or err['loc'][0]}: {err['msg']}")
    return "; ".join(parts)


def action_schema() -> dict[str, Any]:
    """JSON schema of one action (used by structured-output policies).

    Cross-field rules (`paired`, `one_nonzero`) become `anyOf` variants of the class's schema, so a
    schema-constrained answer obeys the same rules the validator checks.
    """
    schema = _adapter.json_schema()
    defs = schema.get("$defs", {})
    for cls in ACTION_TYPES.values():
        name = cls.__name__
        if name in defs and (cls.paired or cls.one_nonzero):
            defs[name] = _rule_variants(defs[name], cls)
    return schema


def _rule_variants(base: dict[str, Any], cls: type[_Action]) -> dict[str, Any]:
    """`base` split into variants that each satisfy the class's cross-field rules."""
    import copy
    import itertools

    variants = []
    nonzero = list(cls.one_nonzero) or [None]
    pairs = list(cls.paired)
    for lead, with_pairs in itertools.product(range(len(nonzero)), itertools.product((False, True),
                                                                                     repeat=len(pairs))):
        v = copy.deepcopy(base)
        props = v["properties"]
        required = [r for r in v.get("required", [])]
        field = nonzero[lead]
        if field is not None:
            for earlier in nonzero[:lead]:  # an earlier lead field is zero here: leave it out
                props.pop(earlier, None)
            lo, hi = props[field].get("minimum", -(10**6)), props[field].get("maximum", 10**6)
            kept = {k: val for k, val in props[field].items() if k not in ("minimum", "maximum", "default")}
            props[field] = {"anyOf": [{**kept, "minimum": lo, "maximum": -1}, {**kept, "minimum": 1, "maximum": hi}]}
            required.append(field)
        for (a, b), present in zip(pairs, with_pairs):
            if present:
                for f in (a, b):
                    props[f] = next((alt for alt in props[f].get("anyOf", []) if alt.get("type") != "null"), props[f])
                    required.append(f)
            else:
                props.pop(a, None)
                props.pop(b, None)
        if "type" in props and "type" not in required:
            required.insert(0, "type")
        v["required"] = required
        v["additionalProperties"] = False
        variants.append(v)
    return {"anyOf": variants, "title": base.get("title")}


def describe_action_space(types: list[str] | None = None) -> str:
    """A compact text listing of the action types and their fields, for prompts."""
    lines = []
    for name, cls in ACTION_TYPES.items():
        if types is not None and name not in types:
            continue
        fields = [f for f in cls.model_fields if f != "type"]
        lines.append(f'- {{"type": "{name}"' + "".join(f', "{f}": …' for f in fields) + "}")
    return "\n".join(lines)
