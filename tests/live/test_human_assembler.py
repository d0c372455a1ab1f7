"""A person's raw X events → actions of the schema (`conway.observe.human.Assembler`), without a display."""

from __future__ import annotations

from conway.actions import _Action, parse_action
from conway.observe.human import Assembler, RawEvent


def run(events: list[RawEvent], end: float | None = None) -> list[dict]:
    a = Assembler()
    for ev in events:
        a.feed(ev)
    out = a.take(end) if end is not None else []
    out += a.finish()
    for act in out:
        act.pop("t")
        assert isinstance(parse_action(act), _Action), act  # every action is valid in the schema
    return out


def click(t: float, x: int, y: int, button: int = 1) -> list[RawEvent]:
    return [RawEvent("press", t, x, y, button), RawEvent("release", t + 0.05, x, y, button)]


def key(t: float, name: str, char: str = "", mods: tuple[str, ...] = ()) -> list[RawEvent]:
    return [RawEvent("key", t, key=name, char=char, mods=mods), RawEvent("keyup", t + 0.01, key=name)]


def test_clicks_right_clicks_and_multi_clicks() -> None:
    got = run(click(0, 10, 20) + click(1, 300, 40, 3) + click(2, 50, 60) + click(2.2, 50, 60)
              + click(3, 7, 8) + click(3.1, 7, 8) + click(3.2, 7, 8) + click(4, 1, 2, 2))
    assert got == [{"type": "click", "x": 10, "y": 20, "button": "left"},
                   {"type": "right_click", "x": 300, "y": 40},
                   {"type": "double_click", "x": 50, "y": 60},
                   {"type": "triple_click", "x": 7, "y": 8},
                   {"type": "click", "x": 1, "y": 2, "button": "middle"}]


def test_a_press_moved_past_the_threshold_is_a_drag() -> None:
    got = run([RawEvent("press", 0, 100, 100, 1), RawEvent("motion", 0.1, 150, 120),
               RawEvent("release", 0.2, 200, 140, 1)])
    assert got == [{"type": "drag", "x": 100, "y": 100, "to_x": 200, "to_y": 140}]


def test_typing_is_one_text_and_named_keys_and_hotkeys_split_it() -> None:
    events = key(0, "h", "h") + key(0.1, "Shift_L") + key(0.2, "i", "I") + key(0.3, "space", " ") \
        + key(0.4, "exclam", "!") + key(0.5, "Return") + key(0.6, "c", "c", ("ctrl",)) + key(0.7, "F5") \
        + key(0.8, "Next")
    assert run(events) == [{"type": "type", "text": "hI !"}, {"type": "key", "key": "enter"},
                           {"type": "hotkey", "keys": ["ctrl", "c"]}, {"type": "key", "key": "f5"},
                           {"type": "key", "key": "pagedown"}]


def test_typing_pauses_and_wheel_turns() -> None:
    a = Assembler()
    for ev in key(0, "a", "a") + key(0.1, "b", "b"):
        a.feed(ev)
    assert a.take(0.5) == []  # still typing
    assert [x["text"] for x in a.take(1.2)] == ["ab"]  # quiet for a second: the text is done
    for t in (2.0, 2.1, 2.2):
        a.feed(RawEvent("press", t, 40, 50, 5))
        a.feed(RawEvent("release", t + 0.01, 40, 50, 5))
    a.feed(RawEvent("press", 2.3, 40, 50, 6))
    out = a.finish()
    for x in out:
        x.pop("t")
    assert out == [{"type": "scroll", "x": 40, "y": 50, "dx": 0, "dy": -3},
                   {"type": "scroll", "x": 40, "y": 50, "dx": -1, "dy": 0}]
