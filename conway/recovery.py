"""Start-up recovery: what a killed or crashed run left behind, put on the record before the first cycle.

Temp files of interrupted atomic writes are removed; a corrupt state.json falls
back to its previous copy; a torn journal tail is noted; a pending intent whose
outcome never reached the journal becomes an `uncertain` record and is never
replayed (DESIGN §2: intent before side effect, uncertain outcomes not replayed).
"""

from __future__ import annotations

from typing import Any, Callable

from .home import Home
from .journal import Journal, intent_verdict
from .state import StateStore, remove_leftover_temps


def recover(home: Home, journal: Journal, store: StateStore, record: Callable[[str, dict[str, Any]], None],
            say: Callable[[str], None]) -> str | None:
    """Record what the previous run left; return the note the model sees first when an action is uncertain."""
    leftovers = remove_leftover_temps(home.root)
    if leftovers:
        record("recovery", {"what": "temp files", "detail": "removed temp files a killed run left: "
                            + ", ".join(leftovers)})
    prior, note = store.load()
    if note:
        record("recovery", {"what": "state", "detail": note})
        say(f"recovered: {note}")
    if journal.torn_on_open:
        record("recovery", {"what": "journal", "detail": f"torn last line in {journal.torn_on_open} skipped"})
    pending = prior.get("pending") if isinstance(prior, dict) else None
    verdict, journaled = intent_verdict(home.journal_dir)  # the fsynced journal is the authority
    if verdict == "pending":
        pending = journaled
    elif verdict == "resolved" and pending:
        record("recovery", {"what": "pending", "detail": "the pending action's outcome is in the journal; "
                            "state.json's copy had not been cleared yet"})
        pending = None
    if not pending:
        return None
    record("uncertain", {"action": pending.get("action"),
                         "from_session": pending.get("session") or prior.get("session"),
                         "intent_step": pending.get("step"),
                         "detail": "a previous run stopped while dispatching this action; "
                                   "it may or may not have happened and is not replayed"})
    return (f"UNCERTAIN: the previous run stopped while doing {pending.get('summary', 'an action')}; "
            "it may or may not have happened. Look at the screen before acting again.")
