"""The repetition counter on its own (the loop's use of it: test_loop_rules.py)."""

from conway.actions import AppendFile, Click, ReadFile
from conway.loop.repetition import Repetitions


def test_the_fourth_identical_side_effect_is_suppressed_and_stays_suppressed():
    reps = Repetitions(limit=3)
    append = AppendFile(path="a.txt", text="x")
    assert [reps.suppressed(append) for _ in range(3)] == [None, None, None]
    assert reps.suppressed(append) == 3  # done 3 times in a row already
    assert reps.suppressed(append) == 3  # a suppressed action does not count on
    assert reps.suppressed(AppendFile(path="a.txt", text="y")) is None  # a different action starts over


def test_gui_counters_reset_on_a_changed_screen_file_counters_survive():
    reps = Repetitions(limit=1)
    click, append = Click(x=10, y=20), AppendFile(path="a.txt", text="x")
    assert reps.suppressed(click) is None and reps.suppressed(append) is None
    reps.screen_changed()
    assert reps.suppressed(click) is None  # the screen changed: the same click is new again
    assert reps.suppressed(append) == 1  # unrelated to the screen: still counted


def test_actions_without_side_effects_are_never_suppressed():
    reps = Repetitions(limit=1)
    read = ReadFile(path="a.txt")
    assert all(reps.suppressed(read) is None for _ in range(5))
