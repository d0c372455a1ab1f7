"""Observers: where the loop's view of the world comes from.

- `synthetic`: generated frames, no display (the mock policy and tests).
- `screen`: the primary monitor captured with mss (`ScreenObserver`), with
  its geometry (origin, captured and logical size) and a change key.
- `change`: the unchanged-screen test that forgives a blinking caret.
- `encode`: what the model receives (JPEG q85, resized per model family)
  versus what is archived under ``screenshots/`` (PNG level 1).
- `accessibility`: an optional, time-limited AT-SPI snapshot of the
  foreground application (Linux), with a stated reason when unavailable.

Modules that touch a display import their dependencies lazily, so importing
this package never needs mss, pyautogui or a screen.
"""
