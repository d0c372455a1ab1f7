"""Start-up: what a killed or crashed run left behind is put on the record, then the new session begins.

Temp files of interrupted atomic writes are removed; a corrupt state.json falls
back to its previous copy; a torn journal tail is noted; a pending intent whose
outcome never reached the journal becomes an `uncertain` record and is never
replayed (docs/architecture.md#uncertain-outcomes-are-never-replayed). Then
`start_up` writes the running state and records the session's start and what the tools found.
"""

from __future__ import annotations

from typing import Any, Callable

from conway.loop.parts import LoopParts
from conway.loop.run_state import RunState
from conway.store.events import Recovery, SessionStart
from conway.store.home import Home
from conway.store.journal import Journal, intent_verdict
from conway.store.state import StateStore, remove_leftover_temps

Record = Callable[[str, dict[str, Any]], None]


def start_up(parts: LoopParts, state: RunState, record: Record, revision: str) -> str | None:
    """Recover, then begin the session; returns the note the model sees first (an uncertain action), if any."""
    latest = recover(parts.home, parts.journal, state.store, record, parts.say)
    model_id, digest = parts.policy.model_id, parts.config.digest()
    mode = "session" if parts.single_session else "continuous"
    asked = getattr(parts.policy, "served_by", None)  # a model policy's: what served it (reports name it)
    served_by = asked() if callable(asked) else None
    state.begin(parts.session, model_id=model_id, config_digest=digest, mode=mode, dry_run=parts.dry_run,
                served_by=served_by)
    deviations = getattr(parts.policy, "deviations", None)  # a model policy's, from its family's official request
    record("session", SessionStart(model_id, revision, digest, mode, parts.dry_run, parts.toolbox.available_types(),
                                   list(deviations) if deviations is not None else None, served_by).to_payload())
    if deviations:
        parts.say("deviations from the official request: " + "; ".join(d.split(":")[0] for d in deviations))
    for found in parts.toolbox.findings():  # MCP servers and skills: what started, what was left out
        record("session", {"event": "tools", **found})
        parts.say(found["summary"])
    return latest


def recover(home: Home, journal: Journal, store: StateStore, record: Record, say: Callable[[str], None]) -> str | None:
    """Record what the previous run left; return the note the model sees first when an action is uncertain."""
    leftovers = remove_leftover_temps(home.root)
    if leftovers:
        record("recovery", Recovery("temp files", "removed temp files a killed run left: "
                                    + ", ".join(leftovers)).to_payload())
    prior, note = store.load()
    if note:
        record("recovery", Recovery("state", note).to_payload())
        say(f"recovered: {note}")
    if journal.torn_on_open:
        record("recovery", Recovery("journal", f"torn last line in {journal.torn_on_open} skipped").to_payload())
    pending = prior.get("pending") if isinstance(prior, dict) else None
    verdict, journaled = intent_verdict(home.journal_dir)  # the fsynced journal is the authority
    if verdict == "pending":
        pending = journaled
    elif verdict == "resolved" and pending:
        record("recovery", Recovery("pending", "the pending action's outcome is in the journal; "
                                    "state.json's copy had not been cleared yet").to_payload())
        pending = None
    if not pending:
        return None
    say(f"recovered: the previous run stopped while doing {pending.get('summary', 'an action')}; recorded as "
        "uncertain (it may or may not have happened), not replayed")
    record("uncertain", {"action": pending.get("action"),
                         "from_session": pending.get("session") or prior.get("session"),
                         "intent_step": pending.get("step"),
                         "detail": "a previous run stopped while dispatching this action; "
                                   "it may or may not have happened and is not replayed"})
    return (f"UNCERTAIN: the previous run stopped while doing {pending.get('summary', 'an action')}; "
            "it may or may not have happened. Look at the screen before acting again.")
