"""User-facing errors: the CLI prints the message and exits 1, never a traceback."""


class UserError(Exception):
    """A mistake the user can fix (bad path, bad config, nothing running...)."""

    exit_code = 1


class NotReady(UserError):
    """A check ran and found the setup not ready (exit 2)."""

    exit_code = 2


NO_VALID_DECISION_EXIT = 3
"""Exit code of a run, session or check in which the model never produced a valid action (the report
counts why: HTTP status, timeout, context exceeded, cut off, unparseable, invalid action)."""
