"""Observers: where the loop's view of the world comes from.

- `synthetic`: generated frames, no display (the mock policy and tests); what the model
  receives versus what is archived is `conway.imaging`'s business.
- `vision_cases`: vision-check's seeded screens of coloured shapes (rebuilt by export, replay,
  the viewer and training from a report's seed).
- `screen`: the primary monitor captured with mss (`ScreenObserver`), with
  its geometry (origin, captured and logical size) and a change key.
- `change`: the unchanged-screen test that forgives a blinking caret.
- `fallback`: a failed capture becomes an observation without an image, said once.
- `screen_targets`: accessible nodes and the X window stack, for grounding-check's live cases.
- `accessibility`: an optional, time-limited AT-SPI snapshot of the
  foreground application (Linux), with a stated reason when unavailable.

Modules that touch a display import their dependencies lazily, so importing
this package never needs mss, pyautogui or a screen.
"""
