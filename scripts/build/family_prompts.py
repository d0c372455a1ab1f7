"""Extract the prompts of the newer families from their official sources, exactly, and print their sha256.

    python -m scripts.build.family_prompts --osworld /tmp/families-src --cookbook /tmp/hai-cookbook [--write]

`--osworld` is an extracted copy of OSWorld's `mm_agents/` (ljxpython/OSWorldUse b5007a93, upstream-identical:
`git -C <mirror> archive HEAD mm_agents | tar -x -C /tmp/families-src`), `--cookbook` one of hcompai/hai-cookbook
(2ba89619). Nothing of either is committed: this script reads the official text (module constants, the f-strings
the agents send, rendered with their placeholders named) and writes it, byte for byte, into each family's
`prompts/` folder (`--write`), then prints the sha256 that `prompts/SOURCES.md` records. The request goldens
(`scripts/build/goldens_new_families.py`) hold the same text as the official agents sent it, so an edited stored
prompt fails `tests/policies/test_new_family_goldens.py`.

Rendering rules (so a placeholder is always the agent's own field name in braces):
- a `str.format` template is rendered with each field replaced by `{field}` (its `{{`/`}}` become `{`/`}` as sent);
- a template the agent fills with `str.replace` is kept as it is (OSWorld's Jedi grounder prompt keeps its `{{`);
- an f-string in an agent's method is rendered with each expression as `{expression}`.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import string
import sys
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]
FAMILIES = REPO / "conway" / "policies" / "families"


def constants(path: Path) -> dict[str, Any]:
    """The module-level literal assignments of a Python file (the last binding of a name wins, as at import)."""
    out: dict[str, Any] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            stripped = (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                        and value.func.attr == "strip" and not value.args)  # `"""…""".strip()`
            try:
                text = ast.literal_eval(value.func.value if stripped else value)  # type: ignore[union-attr]
            except ValueError:
                continue
            out[node.targets[0].id] = text.strip() if stripped else text
    return out


def fstring(path: Path, function: str, target: str, nth: int = 0) -> str:
    """The `nth` f-string assigned to `target` inside `function`, each expression written `{expression}`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name == function:
            for node in ast.walk(fn):
                if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                        and node.targets[0].id == target and isinstance(node.value, ast.JoinedStr)):
                    found.append(node)
    found.sort(key=lambda n: n.lineno)
    parts = []
    for piece in found[nth].value.values:
        if isinstance(piece, ast.Constant):
            parts.append(piece.value)
        else:
            parts.append("{" + ast.unparse(piece.value) + "}")  # type: ignore[attr-defined]
    return "".join(parts)


def keep_fields(template: str) -> str:
    """A `str.format` template as the agent sends it, each field left as `{field}`."""
    fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    return template.format(**{f: "{" + f + "}" for f in fields})


def _evocua(osworld: Path) -> dict[str, str]:
    prompts_py = osworld / "mm_agents" / "evocua" / "prompts.py"
    ns: dict[str, Any] = {}
    exec(compile(prompts_py.read_text(encoding="utf-8"), str(prompts_py), "exec"), ns)  # the official module
    tool = ns["build_s2_tools_def"](ns["S2_DESCRIPTION_PROMPT_TEMPLATE"])  # its {resolution_info} left named
    agent = osworld / "mm_agents" / "evocua" / "evocua_agent.py"
    return {
        "s2_system.txt": keep_fields(ns["S2_SYSTEM_PROMPT"]),
        "computer_use.json": json.dumps(tool, indent=2, ensure_ascii=False) + "\n",
        "s2_instruction.txt": fstring(agent, "_build_s2_messages", "instruction_prompt", 0),
        "s1_system.txt": keep_fields(ns["S1_SYSTEM_PROMPT"]),
        "s1_instruction.txt": ns["S1_INSTRUTION_TEMPLATE"],
    }


def _owl15(osworld: Path) -> dict[str, str]:
    agent = osworld / "mm_agents" / "owl15_agent.py"
    return {"system.txt": constants(agent)["OWL15_PROMPT"],
            "instruction.txt": _owl15_user_prompt(agent)}


def _owl15_user_prompt(agent: Path) -> str:
    """`Owl15Agent.get_qwen3vlprompt`'s user prompt with history (use_history=1, the runner's), a `str.format`
    template of `{instruction}`."""
    for fn in ast.walk(ast.parse(agent.read_text(encoding="utf-8"))):
        if isinstance(fn, ast.FunctionDef) and fn.name == "get_qwen3vlprompt":
            for node in ast.walk(fn):
                if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                        and node.targets[0].id == "user_prompt"):
                    return ast.literal_eval(node.value)
    raise LookupError("get_qwen3vlprompt's user_prompt not found")


def _jedi(osworld: Path) -> dict[str, str]:
    prompts = constants(osworld / "mm_agents" / "prompts.py")
    return {"grounder_system.txt": prompts["JEDI_GROUNDER_SYS_PROMPT"],  # filled with str.replace: {{ kept
            "planner_system.txt": prompts["JEDI_PLANNER_SYS_PROMPT"],
            "planner_user.txt": fstring(osworld / "mm_agents" / "jedi_7b_agent.py", "predict", "user_prompt")}


def _holo2(cookbook: Path) -> dict[str, str]:
    """The notebook's own cells run as written (its imports, then the cell declaring `ClickCoordinates` and
    `build_messages`; `IPython.display` a no-op, for showing pictures only), and `build_messages` called with an
    empty target: its text is the prompt, a newline and the target."""
    import sys
    import types

    from PIL import Image

    nb = json.loads((cookbook / "holo2" / "holo_2_localization_hosted_api.ipynb").read_text(encoding="utf-8"))
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    display = types.ModuleType("IPython.display")
    display.display = lambda *a, **k: None  # type: ignore[attr-defined]
    saved = {k: sys.modules.get(k) for k in ("IPython", "IPython.display")}
    sys.modules.update({"IPython": types.ModuleType("IPython"), "IPython.display": display})
    module = types.ModuleType("holo_2_localization_hosted_api")  # pydantic resolves annotations through it
    sys.modules[module.__name__] = module
    sys.path.insert(0, str(cookbook))
    try:
        for cell in cells:
            if cell.lstrip().startswith("from typing") or "class ClickCoordinates" in cell:
                exec(compile(cell, "holo_2_localization_hosted_api.ipynb", "exec"), module.__dict__)
    finally:
        sys.path.remove(str(cookbook))
        for key, value in saved.items():
            if value is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = value
    space = module.__dict__
    messages = space["build_messages"](task="", image=Image.new("RGB", (64, 64)), image_format="JPEG")
    text = next(p["text"] for p in messages[0]["content"] if p["type"] == "text")
    schema = json.dumps(space["ClickCoordinates"].model_json_schema(), indent=2) + "\n"
    return {"localization.txt": text.removesuffix("\n"), "click_schema.json": schema}


def _kimi(osworld: Path) -> dict[str, str]:
    consts = constants(osworld / "mm_agents" / "kimi" / "kimi_agent.py")
    return {"system_thinking.txt": consts["SYSTEM_PROMPT_THINKING"],
            "system_non_thinking.txt": consts["SYSTEM_PROMPT_NON_THINKING"],
            "instruction.txt": consts["INSTRUCTION_TEMPLATE"]}


LOCATIONS: dict[str, str] = {
    "evocua/s2_system.txt": "mm_agents/evocua/prompts.py S2_SYSTEM_PROMPT",
    "evocua/computer_use.json": "mm_agents/evocua/prompts.py build_s2_tools_def(S2_DESCRIPTION_PROMPT_TEMPLATE)",
    "evocua/s2_instruction.txt": "mm_agents/evocua/evocua_agent.py EvoCUAAgent._build_s2_messages instruction_prompt",
    "evocua/s1_system.txt": "mm_agents/evocua/prompts.py S1_SYSTEM_PROMPT",
    "evocua/s1_instruction.txt": "mm_agents/evocua/prompts.py S1_INSTRUTION_TEMPLATE",
    "guiowl/system.txt": "mm_agents/owl15_agent.py OWL15_PROMPT",
    "guiowl/instruction.txt": "mm_agents/owl15_agent.py Owl15Agent.get_qwen3vlprompt user_prompt (use_history 1)",
    "jedi/grounder_system.txt": "mm_agents/prompts.py JEDI_GROUNDER_SYS_PROMPT",
    "jedi/planner_system.txt": "mm_agents/prompts.py JEDI_PLANNER_SYS_PROMPT",
    "jedi/planner_user.txt": "mm_agents/jedi_7b_agent.py JediAgent7B.predict user_prompt",
    "holo2/localization.txt": "holo2/holo_2_localization_hosted_api.ipynb build_messages prompt",
    "holo2/click_schema.json": "holo2/holo_2_localization_hosted_api.ipynb ClickCoordinates.model_json_schema()",
    "kimi/system_thinking.txt": "mm_agents/kimi/kimi_agent.py SYSTEM_PROMPT_THINKING",
    "kimi/system_non_thinking.txt": "mm_agents/kimi/kimi_agent.py SYSTEM_PROMPT_NON_THINKING",
    "kimi/instruction.txt": "mm_agents/kimi/kimi_agent.py INSTRUCTION_TEMPLATE",
}
"""`family/file` -> where in its source tree (`SOURCES`' tree) the official text is: file and symbol."""

SOURCES: dict[str, tuple[str, Callable[[Path], dict[str, str]]]] = {
    "evocua": ("osworld", _evocua), "guiowl": ("osworld", _owl15), "jedi": ("osworld", _jedi),
    "holo2": ("cookbook", _holo2), "kimi": ("osworld", _kimi),
}
"""Family folder -> (which source tree, its extractor)."""


def extract(family: str, osworld: Path | None, cookbook: Path | None) -> dict[str, str]:
    """The official texts of `family`'s stored prompt files, by file name."""
    tree, fn = SOURCES[family]
    root = osworld if tree == "osworld" else cookbook
    if root is None:
        raise SystemExit(f"{family} needs --{tree}")
    return fn(root)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--osworld", type=Path, help="extracted OSWorld tree (holds mm_agents/)")
    ap.add_argument("--cookbook", type=Path, help="extracted hcompai/hai-cookbook tree (holds holo2/)")
    ap.add_argument("--write", action="store_true", help="write the files into each family's prompts/ folder")
    ap.add_argument("families", nargs="*", default=list(SOURCES), help=f"which (default: {', '.join(SOURCES)})")
    args = ap.parse_args(argv)
    for family in args.families:
        if family not in SOURCES:
            ap.error(f"unknown family {family!r}; known: {', '.join(SOURCES)}")
        for name, text in extract(family, args.osworld, args.cookbook).items():
            data = text.encode("utf-8")
            if args.write:
                out = FAMILIES / family / "prompts" / name
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(data)
            print(f"{family}/{name} {hashlib.sha256(data).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
