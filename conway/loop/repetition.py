"""Repetition suppression: identical side-effect actions in a row, counted per action group (docs/architecture.md#repetition-suppression).

By default three identical side-effect actions in a row are allowed and the fourth is
suppressed. GUI counters reset when the screen changes; file, shell and MCP counters
survive unrelated screen changes.
"""

from __future__ import annotations

import json

from conway.actions import _Action


class Repetitions:
    def __init__(self, limit: int):
        self.limit = limit
        self._runs: dict[str, tuple[str, int]] = {}  # group -> (action key, times in a row)

    def screen_changed(self) -> None:
        self._runs.pop("gui", None)

    def suppressed(self, action: _Action) -> int | None:
        """How often this side-effect action was already done in a row when it must not run again, else None
        (and it is counted)."""
        key = json.dumps(action.model_dump(), sort_keys=True)
        last, times = self._runs.get(action.group, (None, 0))
        times = times + 1 if last == key else 1
        if action.side_effect and times > self.limit:
            return times - 1
        self._runs[action.group] = (key, times)
        return None
