"""A prompt that caches: what only grows comes first and oldest-first, the latest result last; the prefix rule.

The in-process KV reuse itself is tested on the real tiny VLM in test_policies_llama.py.
"""

from __future__ import annotations

from conway.geometry import Convention
from conway.policies.backends.llama_prompt_cache import ImageSpan, KVRecord, layout, reusable_prefix
from conway.policies.families.generic.adapter import GenericAdapter
from conway.prompt.budget import build_parts
from conway.prompt.layout import build_messages
from conway.prompt.memory import Memory
from conway.prompt.parts import PartName, RecentSteps, StepNote
from conway.protocols import Policy


def note(i: int) -> StepNote:
    return StepNote(i, f"list_dir(path='.') #{i}", "ok")


def test_recent_steps_window_appends_until_it_slides_by_half():
    w = RecentSteps(4)
    slid = [w.add(note(i)) for i in range(1, 5)]
    assert slid == [False] * 4 and [n.step for n in w.notes] == [1, 2, 3, 4]
    assert w.add(note(5)) is True and [n.step for n in w.notes] == [4, 5]
    assert w.add(note(6)) is False and [n.step for n in w.notes] == [4, 5, 6]
    assert RecentSteps(0).add(note(1)) is True and RecentSteps(0).notes == []
    one = RecentSteps(1)
    one.add(note(1))
    assert one.add(note(2)) and [n.step for n in one.notes] == [2]


def test_parts_grow_oldest_first_and_the_latest_result_is_last():
    recent = [note(i) for i in range(1, 6)]
    parts, dropped = build_parts(constitution="C", goals="G", memory="- step 1: x\n", action_space="A",
                                 latest="read_file → 12 bytes", recent=recent, budget_tokens=6000,
                                 chars_per_token=3.5, accessibility="button OK")
    names = [p.name for p in parts]
    assert names == ["constitution.md", "action space", "untrusted data", "goals.md", "memory.md",
                     PartName.RECENT_STEPS, "accessibility snapshot", "latest result"]
    steps = next(p.text for p in parts if p.name == PartName.RECENT_STEPS).splitlines()
    assert [int(s.split()[2].rstrip(":")) for s in steps] == [1, 2, 3, 4, 5]
    assert not dropped


def test_a_short_budget_keeps_the_newest_steps_still_oldest_first():
    recent = [StepNote(i, f"click(x={i}, y=1)", "ok " + "z" * 80) for i in range(1, 51)]
    parts, dropped = build_parts(constitution="C", goals="G", memory="", action_space="A", latest="L",
                                 recent=recent, budget_tokens=300, chars_per_token=3.5)
    steps = next(p.text for p in parts if p.name == PartName.RECENT_STEPS).splitlines()
    numbers = [int(s.split()[2].rstrip(":")) for s in steps]
    assert numbers == sorted(numbers) and numbers[-1] == 50 and numbers[0] > 1
    assert dropped == [f"{50 - len(numbers)} older step(s)"]
    assert [p.name for p in parts][-2:] == ["left out", "latest result"]


def _user_text(ctx) -> str:
    a = GenericAdapter()
    msgs = build_messages(ctx, instructions=a.instructions(ctx.action_types, (644, 392), Convention.ABSOLUTE),
                          action_space=None, request_text=a.request_text(), image_url="data:image/jpeg;base64,AA",
                          sent_size=(644, 392))
    return msgs[-1]["content"][0]["text"]


def test_the_real_loop_builds_prompts_that_only_grow_until_the_window_slides(tmp_path):
    from scripts.bench.loop_contexts import loop_contexts
    ctxs = loop_contexts(20, tmp_path / "home", overrides=["context.recent_steps=8"])
    assert len(ctxs) == 20
    texts = [_user_text(c) for c in ctxs]
    kept = slides = 0
    for old, new in zip(texts, texts[1:]):
        cut = old.find('<untrusted-data source="latest result">')
        head = old[:cut if cut >= 0 else old.index(GenericAdapter().request_text())].rstrip()  # all but the volatile end
        head = head.removesuffix("</untrusted-data>")  # the growing part's closing tag moves down by its new line
        if new.startswith(head):
            kept += 1
        else:
            slides += 1
    assert slides <= 20 // 4 + 1 and kept >= 14  # the window (8) slides by 4: at most every 4th cycle
    assert all(t.rstrip().endswith("The screenshot below is 644x392 pixels.") for t in texts)
    last = texts[-1]
    assert last.index('<untrusted-data source="latest result">') \
        > last.index(f'<untrusted-data source="{PartName.RECENT_STEPS}">') \
        > last.index('<untrusted-data source="memory.md">')
    # the screenshot changes every cycle, as it does when the agent acts
    assert len({c.observation.content_hash for c in ctxs}) == 20


def test_memory_notices_edits_made_by_someone_else(tmp_path):
    m = Memory(tmp_path / "memory.md", tmp_path / "memory.previous.md")
    m.read()
    m.add("- step 1: ok")
    assert not m.edited_elsewhere()  # its own append
    with open(tmp_path / "memory.md", "a", encoding="utf-8") as fh:
        fh.write("a note from the owner, much longer than a step line\n")
    assert m.edited_elsewhere()
    m.add("- step 2: ok")
    assert m.edited_elsewhere()  # still: the outside edit was not read yet
    assert "the owner" in m.read() and not m.edited_elsewhere()


def test_memory_in_the_prompt_is_frozen_between_slides_but_shows_outside_edits_at_once(tmp_path):
    from conway.actions import ListDir
    from conway.config import load_config
    from conway.loop.control import SimulatedClock
    from conway.protocols import Decision
    from conway.session.app import RunRequest, run_agent
    from conway.store.home import Home, init_home

    seen = []

    class Spy(Policy):
        model_id = "spy"

        def decide(self, ctx):
            seen.append(ctx)
            if len(seen) == 3:
                with open(home.memory, "a", encoding="utf-8") as fh:
                    fh.write("OWNER: the report is due on Friday\n")
            return Decision(raw_text="", actions=[ListDir(path=".")], model_id="spy")

    home = Home(tmp_path / "home")
    init_home(home)
    run_agent(home, load_config(home.config, ["agent.max_steps=5", "context.recent_steps=12"]),
              RunRequest(single_session=False, policy=Spy(), clock=SimulatedClock()), say=lambda s: None)
    mem = [next((p.text for p in c.parts if p.name == "memory.md"), "") for c in seen]
    assert mem[0] == mem[1] == mem[2]  # the loop's own step lines wait in the window until it slides
    assert "step 2: list_dir" in next(p.text for p in seen[2].parts if p.name == PartName.RECENT_STEPS)
    assert "OWNER: the report is due on Friday" in mem[3]  # an edit by someone else shows at once
    assert "step 3: list_dir" in mem[3]


# --- the prefix rule -------------------------------------------------------------------------

OWNER = ("model.gguf", "mmproj.gguf", 1)
IMG = ImageSpan("aa", 322, 23)


def record(items):
    starts, end = layout(items)
    return KVRecord(OWNER, items, starts, end)


def test_prefix_reuse_keeps_text_and_an_unchanged_image():
    text = list(range(100, 140))
    old = text + [7, 8, IMG, 9, 10]
    assert reusable_prefix(record(old), OWNER, text + [7, 99, IMG, 9, 10]) == (41, "prefix")
    # the same image after the same text stays; only the text after it is evaluated
    assert reusable_prefix(record(old), OWNER, old[:-1] + [11]) == (len(old) - 1, "prefix")
    # a new screenshot: everything from the image on is evaluated
    assert reusable_prefix(record(old), OWNER, text + [7, 8, ImageSpan("bb", 322, 23), 9, 10]) == (42, "prefix")
    # the very same prompt: the last token is evaluated again for fresh logits
    assert reusable_prefix(record(old), OWNER, list(old)) == (len(old) - 1, "prefix")
    starts, end = layout(old)
    assert starts[42] == 42 and starts[43] == 42 + 23 and end == 42 + 23 + 2


def test_prefix_reuse_falls_back_to_a_full_evaluation():
    old = list(range(100, 140)) + [IMG, 9]
    assert reusable_prefix(None, OWNER, old) == (0, "cold")
    assert reusable_prefix(record(old), ("other.gguf", "mmproj.gguf", 1), old) == (0, "another model or context")
    assert reusable_prefix(record(old), ("model.gguf", "mmproj.gguf", 2), old) == (0, "another model or context")
    # a changed system text: only the template's header is common, which is not worth keeping
    changed = old[:3] + [5] + old[4:]
    assert reusable_prefix(record(old), OWNER, changed) == (0, "no common prefix")
