"""Record the Holo3.1 agent-loop golden from H Company's documentation: its Python examples run as written.

H publishes no agent code for Holo3 / Holo3.1 (the agent of `hcompai/holo-desktop-cli` runs in the closed
`hai-agent-runtime` binary); what H does publish is the agent-loop page of its documentation
(hub.hcompany.ai/agent-loop.md), whose structured-outputs tab holds runnable Python: the `Step` schema
(pydantic), `trim_to_last_n_images` and "a complete loop". This builder runs those three blocks exactly as the
page writes them, with only the network replaced by the recorder (the page's `client`, an `openai.OpenAI` stand-in, as
`goldens_new_families.py` does for the Holo notebooks), over the request goldens' episode.

The page leaves three things to the harness by its own words ("plug in your own `screenshot()` ... and
`execute(...)`", "your prompt"): `render_prompt` gives the task's instruction (Conway puts its own parts there,
the golden test puts the instruction back before comparing), `screenshot()` the episode's screenshots,
`execute(...)` the text Conway's layout sends as a past step's result (`holo3.adapter.TOOL_RESULT`). The
loop's `return` needs a function around it: the block is indented into one, nothing else changed.

    python -m scripts.build.goldens_holo3 --page PATH/agent-loop.md

The page is not committed (its code is H's); its sha256 is checked against `PAGE_SHA256` (the copy this golden
was recorded from) so a changed page is noticed, never silently used. Needs pydantic (in the venv).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import types
from pathlib import Path
from typing import Any

from scripts.build.golden_episode import INSTRUCTION, SCREEN, STEPS
from scripts.build.goldens_new_families import Recorder, request_record, screenshot

__all__ = ["ANSWERS", "PAGE", "PAGE_SHA256", "TOOL_RESULT", "blocks", "build"]

PAGE = "hub.hcompany.ai/agent-loop.md"
PAGE_SHA256 = "487454400dc5e8363047b6dd80e5ed43350dae2195f682e2efe497d542803847"
"""The page as recorded (26168 characters; the version naming Holo3.1 and Holo3, `message.reasoning`)."""

OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "goldens_new" / "holo3.1.json"

TOOL_RESULT = "done"
"""What `execute(...)` returns: Conway's layout sends this as every past step's result (its history keeps no
result per step; the latest one rides in the current observation)."""


def _click(thought: str, element: str, x: int, y: int, note: str | None = None) -> str:
    return json.dumps({"note": note, "thought": thought,
                       "tool_call": {"tool_name": "click", "element": element, "x": x, "y": y}})


def _write(thought: str, content: str, press_enter: bool | None = None, note: str | None = None) -> str:
    call: dict[str, Any] = {"tool_name": "write", "content": content}
    if press_enter is not None:
        call["press_enter"] = press_enter
    body: dict[str, Any] = {"thought": thought, "tool_call": call}
    if note is not None:
        body = {"note": note, **body}
    return json.dumps(body)


ANSWERS = [
    _click("Open the Files app from the dock.", "Files icon in the dock", 62, 315),
    _write("Type the folder name into the path bar.", "Documents", press_enter=True),
    _click("Select report.txt.", "report.txt in the file list", 333, 388, note="report.txt is in Documents."),
    _click("Open its context menu.", "Rename entry of the menu", 340, 420),
    _write("Select the old name first.", "final.txt"),  # press_enter left out: the replay writes its default
    _click("Confirm the rename.", "Rename button", 781, 833),
    _click("Open the file.", "final.txt in the list", 365, 278, note="The file is now final.txt."),
    _write("Add a line.", "Final version\n", press_enter=False),
    _click("Open the File menu.", "File menu", 21, 30),
    _click("Save.", "Save item of the File menu", 40, 92),
    _write("Name the copy.", "final copy", press_enter=True, note="Saving asks for a name."),
    _click("Close the dialog.", "Close button of the dialog", 937, 55),
    _click("Back to the folder.", "Documents in the sidebar", 52, 240),
    _write("Filter the list.", "final", press_enter=False),
    _click("Check the result.", "final.txt in the list", 365, 278, note="final.txt saved; the rename is done."),
    _click("Close the editor.", "Close button of the editor", 990, 12),
]
"""One scripted answer a step (no `answer` call: the episode does not end), notes null, set and left out, and
`press_enter` true, false and left out, so the replay's canonical form is exercised."""


_FENCE = re.compile(r"^( *)(`{3,4})python Python[^\n]*\n(.*?)^\1\2$", re.S | re.M)


def blocks(page: str) -> list[str]:
    """The page's Python blocks, dedented as they are shown."""
    out = []
    for indent, _, body in _FENCE.findall(page):
        out.append("\n".join(line[len(indent):] for line in body.split("\n")))
    return out


def _pick(found: list[str], needle: str) -> str:
    chosen = [b for b in found if needle in b]
    if len(chosen) != 1:
        raise SystemExit(f"the page has {len(chosen)} Python blocks with {needle!r} (want 1): not the recorded page")
    return chosen[0]


def build(page_path: Path) -> dict[str, Any]:
    """Run the page's structured-outputs loop over the episode; the golden."""
    data = page_path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != PAGE_SHA256:
        raise SystemExit(f"{page_path}: sha256 {digest}, the golden was recorded from {PAGE_SHA256}")
    found = blocks(data.decode("utf-8"))
    trim = _pick(found, "def trim_to_last_n_images")
    schema = _pick(found, "class Step(BaseModel)")
    loop = _pick(found, 'extra_body={"structured_outputs": {"json": schema}},\n    )\n    step =')
    recorder = Recorder({"llm": ANSWERS})
    shots = iter(range(1, STEPS + 1))
    module = types.ModuleType("holo_agent_loop")  # pydantic resolves the union's names through it
    sys.modules[module.__name__] = module
    space = module.__dict__
    space.update(MODEL_NAME="holo3-1-35b-a3b", MAX_STEPS=STEPS, render_prompt=lambda tools: INSTRUCTION,
                 screenshot=lambda: screenshot(next(shots)), execute=lambda call: TOOL_RESULT,
                 client=recorder.openai_class("llm")())  # the page's `client` (its Quickstart's OpenAI)
    exec(compile(trim, PAGE, "exec"), space)
    exec(compile(schema, PAGE, "exec"), space)
    body = "def run_loop():\n" + "".join(f"    {line}\n" if line else "\n" for line in loop.split("\n"))
    exec(compile(body, PAGE, "exec"), space)
    assert space["run_loop"]() is None  # no answer: every step ran
    assert len(recorder.bodies) == STEPS
    schema_text = json.dumps(space["Step"].model_json_schema())
    system = recorder.bodies[0][1]["messages"][0]["content"]
    assert system.startswith(INSTRUCTION) and system.count(schema_text) == 1
    _texts.update({"step_schema.json": schema_text,
                   "output_format.txt": system[len(INSTRUCTION):].replace(schema_text, "{schema}")})
    return {"source": f"{PAGE} (H Company's documentation, sha256 {PAGE_SHA256})",
            "provenance": "documented, not code-checked: H publishes no agent code for Holo3.1",
            "runner": "the page's Python blocks as written (Step, trim_to_last_n_images, the structured-outputs "
                      "loop inside one function); render_prompt -> the instruction, screenshot() -> the episode's, "
                      f"execute(...) -> {TOOL_RESULT!r}; client -> the recorder",
            "preset": "holo3.1", "instruction": INSTRUCTION, "screen": list(SCREEN), "answers": ANSWERS,
            "requests": [{"call": queue, **request_record(b)} for queue, b in recorder.bodies]}


_texts: dict[str, str] = {}
"""The stored prompt files as the page's code makes them (`build` fills it)."""

LOCATIONS = {"output_format.txt": "the structured-outputs loop, the <output_format> text appended to the system prompt",
             "step_schema.json": "the structured-outputs Step model, json.dumps(Step.model_json_schema())"}
SOURCES_SUMS = OUT.parents[1] / "goldens" / "prompt_sources.json"
FAMILY_PROMPTS = Path(__file__).resolve().parents[2] / "conway" / "policies" / "families" / "holo3" / "prompts"


def record_sources(write_prompts: bool) -> list[str]:
    """The prompt files' sums and locations into `prompt_sources.json` (beside the OSWorld builder's entries);
    the stored files rewritten when asked; the stored files that differ from the page's text, one line each."""
    where = f"{PAGE} (H Company's documentation; documented, not code-checked) @ sha256:{PAGE_SHA256}"
    sums = json.loads(SOURCES_SUMS.read_text(encoding="utf-8"))
    for file, text in _texts.items():
        sums["sha256"][f"holo3/{file}"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        sums["locations"][f"holo3/{file}"] = f"{where}: {LOCATIONS[file]}"
        if write_prompts:
            (FAMILY_PROMPTS / file).write_text(text, encoding="utf-8")
    line = f"{PAGE} @ sha256:{PAGE_SHA256} (holo3/, by scripts/build/goldens_holo3.py)"
    sums["sources"] = [s for s in sums["sources"] if "(holo3/" not in s] + [line]
    sums["sha256"], sums["locations"] = dict(sorted(sums["sha256"].items())), dict(sorted(sums["locations"].items()))
    SOURCES_SUMS.write_text(json.dumps(sums, indent=1) + "\n", encoding="utf-8")
    return [f"holo3/{f}: stored text is not the page's" for f, t in _texts.items()
            if (FAMILY_PROMPTS / f).read_text(encoding="utf-8") != t]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--page", type=Path, required=True, help=f"a saved copy of {PAGE}")
    ap.add_argument("--write-prompts", action="store_true", help="also overwrite the stored prompt files")
    args = ap.parse_args(argv)
    golden = build(args.page)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{OUT.relative_to(OUT.parents[3])}: {len(golden['requests'])} requests")
    problems = record_sources(args.write_prompts)
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
