"""User-facing errors: the CLI prints the message and exits 1, never a traceback."""


class UserError(Exception):
    """A mistake the user can fix (bad path, bad config, nothing running...)."""

    exit_code = 1


class NotReady(UserError):
    """A check ran and found the setup not ready (exit 2)."""

    exit_code = 2
