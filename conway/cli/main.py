"""The `conway` command: argument parsing only (each command's parser: `conway/cli/parsers.py`); each subcommand
calls one function elsewhere."""

from __future__ import annotations

import argparse
import sys

from conway import __version__
from conway.cli.commands import run_command
from conway.cli.parsers import parser_pieces
from conway.errors import ExitCode, UserError

EPILOG = """\
Put --home PATH (or set CONWAY_HOME) before the subcommand; the default home is ~/.conway.
Settings: key=value overrides after a command, e.g. `conway run agent.max_steps=5 policy=generic`.
Start here: conway init && conway run --mock --max-steps 5
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # user mistakes exit 1 with a hint, never 2 or a traceback
        self.print_usage(sys.stderr)
        sys.stderr.write(f"conway: error: {message}\n(see `{self.prog} --help`)\n")
        raise SystemExit(ExitCode.SETUP_ERROR)

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        # argparse reports unknown words as the top parser's error (`see conway --help`); the command they
        # were given to is the one whose help lists what it takes
        parsed, extras = self.parse_known_args(args, namespace)
        extras = _late_overrides(parsed, extras)
        if extras:
            self._chosen(parsed).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def _chosen(self, parsed: argparse.Namespace) -> "_Parser":
        """The innermost (sub)command parser the parsed words chose."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(parsed, action.dest, None) or "")
                if isinstance(chosen, _Parser):
                    return chosen._chosen(parsed)
        return self


def _late_overrides(parsed: argparse.Namespace, extras: list[str]) -> list[str]:
    """key=value words after the options, which argparse leaves over once a command's list of positionals is
    taken (`tasks run SUITE --output R agent.max_steps=3`): added to the command's overrides (or to its suite
    words, which `split_overrides` divides), so every command takes them anywhere, as `conway run` does. What
    remains is what the command does not take."""
    from conway.cli.tasks import OVERRIDE

    dest = next((d for d in ("overrides", "suite") if isinstance(getattr(parsed, d, None), list)), None)
    if dest is None:
        return extras
    late = [w for w in extras if OVERRIDE.match(w)]
    getattr(parsed, dest).extend(late)
    return [w for w in extras if w not in late]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `only` (the command named on the command line), just that command where it is one
    of the command line's own (`parser_pieces`): its parsing, help and errors are the same either way."""
    parser = _Parser(prog="conway", description="Conway: a continuous observe → decide → act agent around a "
                     "replaceable local vision-language model, with file memory and an append-only journal.",
                     epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", metavar="PATH", help="Conway home (default: $CONWAY_HOME or ~/.conway)")
    parser.add_argument("--version", action="version", version=f"conway {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for add in parser_pieces(only):  # each command's parser: conway/cli/parsers.py, a suite's in its module
        add(sub)
    return parser


# --- command functions -------------------------------------------------------


def _named_command(argv: list[str]) -> str | None:
    """The subcommand as argparse will find it: the first word that is not an option or `--home`'s value."""
    words = iter(argv)
    for word in words:
        if word == "--home":
            next(words, None)
        elif not word.startswith("-"):
            return word
        elif word in ("-h", "--help", "--version") or word == "--":
            return None
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(_named_command(argv)).parse_args(argv)
    args._argv = argv  # reports record the command line
    try:
        code = run_command(args)
        sys.stdout.flush()  # inside the try: a closed pipe is noticed here, not at interpreter exit
        return code
    except UserError as exc:
        sys.stderr.write(f"conway: error: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("conway: interrupted\n")
        return ExitCode.INTERRUPTED
    except BrokenPipeError:  # `conway status | head -1`: the reader left; nothing more to say
        from conway.session.app import silence_stdout
        silence_stdout()
        return ExitCode.PASSED
    except OSError as exc:  # the machine refused (full disk, permissions, read-only file system)
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        sys.stderr.write(f"conway: error: {exc.strerror or exc}{where}\n")
        return ExitCode.SETUP_ERROR


if __name__ == "__main__":
    sys.exit(main())
