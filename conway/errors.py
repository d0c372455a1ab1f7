"""User-facing errors and the one table of exit codes every command and eval suite uses."""

from enum import IntEnum


class ExitCode(IntEnum):
    """What a `conway` command's exit status means; every check and eval suite exits one of these."""

    PASSED = 0
    """The command did what was asked; for a check or suite: everything it checked passed (every case hit, every
    check verified, the candidate better)."""
    SETUP_ERROR = 1
    """Bad arguments or input, missing data, a model that cannot be reached or loaded, a full disk: nothing was
    measured. `run` exits this too when it ends on a crash or on an action whose outcome is not known."""
    NOT_PASSED = 2
    """The command ran and measured, and not everything passed (a miss, an error, not verified, not ready)."""
    NO_VALID_DECISION = 3
    """The model never produced a valid decision (the report counts why: HTTP status, timeout, cut off ...)."""
    INTERRUPTED = 130
    """Ctrl+C."""


def exit_codes_text(passed: str, not_passed: str, *, model: bool = True) -> str:
    """A command's help sentence from the table: what 0 and 2 mean for it; 3 and 1 mean the same everywhere
    (3 only for a command that asks a model: `model`)."""
    return (f"Exit {ExitCode.PASSED:d} {passed}, {ExitCode.NOT_PASSED:d} {not_passed}, "
            + (f"{ExitCode.NO_VALID_DECISION:d} the model never produced a valid decision, " if model else "")
            + f"{ExitCode.SETUP_ERROR:d} setup errors.")


class UserError(Exception):
    """A mistake the user can fix (bad path, bad config, nothing running...)."""

    exit_code = ExitCode.SETUP_ERROR


class NotReady(UserError):
    """A check ran and found the setup not ready."""

    exit_code = ExitCode.NOT_PASSED


class NoValidDecision(UserError):
    """The model answered nothing usable where the command cannot go on without an answer."""

    exit_code = ExitCode.NO_VALID_DECISION
