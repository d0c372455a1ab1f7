"""The model's past turns read back from the journal after a restart (`conway/history.py`).

The journal keeps each decision's raw answer, the family that wrote it and the size its screenshot was sent
at, and each observation the path of its archived copy under `screenshots/`; it keeps no image. So a restart
gets back the answers of the journal's last events (as long as the same family wrote them) and, for the
newest, their screenshots from the archive, read again by the policy (`ArchivedImage`). A turn counts only
when the loop acted on it, as it does in a running session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conway.history import ArchivedImage
from conway.store.home import Home
from conway.store.journal import tail_events

__all__ = ["RESTORE_EVENTS", "journaled_turns"]

RESTORE_EVENTS = 2000
"""Journal events read back at start (the newest): far more than a history window holds."""
_ACTED = ("intent", "result", "error", "finish", "suppressed")
"""Events that follow a decision the loop acted on (a pre-dispatch error does not count)."""


def journaled_turns(home: Home, family: str) -> list[tuple[str, ArchivedImage | None]]:
    """(answer, its archived screenshot) for the turns the journal's tail holds, oldest first."""
    out: list[tuple[str, ArchivedImage | None]] = []
    shot: str | None = None
    candidate: tuple[str, ArchivedImage | None] | None = None
    for event in tail_events(home.journal_dir, RESTORE_EVENTS):
        kind, payload = event.get("kind"), event.get("payload")
        if not isinstance(payload, dict):
            continue
        if kind == "observation":
            shot, candidate = payload.get("screenshot"), None
        elif kind == "decision":
            candidate = None
            if payload.get("policy") != family:
                out.clear()  # another family's answers are not this one's own
                continue
            if payload.get("discarded") or not _valid(payload):
                continue
            candidate = (payload["raw_text"], _archived(home, shot, payload))
        elif kind in _ACTED and candidate is not None:
            if not (kind == "error" and payload.get("stage") == "pre-dispatch"):
                out.append(candidate)
            candidate = None
    return out


def _valid(payload: dict[str, Any]) -> bool:
    actions = payload.get("actions")
    return (isinstance(payload.get("raw_text"), str) and isinstance(actions, list) and bool(actions)
            and all(isinstance(a, dict) and "problem" not in a for a in actions))


def _archived(home: Home, shot: Any, payload: dict[str, Any]) -> ArchivedImage | None:
    sent, captured = payload.get("sent_size"), payload.get("captured_size")
    if not isinstance(shot, str) or not shot or not (isinstance(sent, list) and isinstance(captured, list)):
        return None
    path = Path(shot) if Path(shot).is_absolute() else home.root / shot
    tokens = payload.get("image_tokens")
    return ArchivedImage(str(path), (int(sent[0]), int(sent[1])), (int(captured[0]), int(captured[1])),
                         tokens if isinstance(tokens, int) else None)
