"""``lorescan`` entry point: builds the argument parser from the command modules and runs one.

:data:`COMMANDS` is the one list of commands, in the order ``lorescan --help`` shows them. Each
names a module ``lorescan/_cli/cmd_<name>.py`` (a missing one is an ImportError, never skipped)
that exposes ``register(subparsers)``, which adds its sub-parser and sets
``func=<callable(args) -> int>``. A new command is a new ``cmd_<name>.py`` plus its name here; a
test checks that the two agree. Bad input surfaces as
:class:`lorescan._errors.LorescanError` and is printed as one line on stderr with exit code 2.
Any other exception is a bug: one line names the file and the error and asks for a report (exit
code 3); ``--debug`` prints the traceback as well. Text that cannot be encoded for the terminal
(a lone surrogate from a JSON escape, say) is printed as a ``\\uXXXX`` escape.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

#: Exit code of an unexpected error (a bug in lorescan); bad input exits with 2.
EXIT_BUG = 3
#: Notes :func:`lorescan.load` adds to an unexpected error begin with this.
READING = "while reading "
_DEBUG_HELP = "on an unexpected error, print the Python traceback"

#: Every command, in help order; each is the module ``cmd_<name>.py``.
COMMANDS = ("scenario", "info", "convert", "replay", "explain", "scan", "test", "lint", "report", "bench",
            "serve", "workbench")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of the command ``only`` alone (the one a command line
    names: the other command modules are then not imported)."""
    parser = argparse.ArgumentParser(
        prog="lorescan",
        description="SillyTavern-exact lorebook (world info) activation: replay, explain, lint, convert.",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"lorescan {__version__}")
    parser.add_argument("--debug", action="store_true", help=_DEBUG_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"lorescan._cli.cmd_{name}").register(sub)
    for command in sub.choices.values():
        # after the command too; SUPPRESS keeps a --debug given before it
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=_DEBUG_HELP)
    return parser


def main(argv: list[str] | None = None) -> int:
    from .._errors import LorescanError

    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    given = sys.argv[1:] if argv is None else argv
    named = next((a for a in given if not a.startswith("-")), None)
    parser = build_parser(named if named in COMMANDS else None)
    args = parser.parse_args(argv)
    # Run from the command line (not called with arguments from Python), the command owns the
    # process: loaded books may then be frozen out of the cyclic collector (see common.load_inputs).
    args.owns_process = argv is None
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except LorescanError as exc:
        print(f"lorescan: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 (the one guard: every other exception is a bug)
        if args.debug:
            import traceback

            traceback.print_exc()
        print(f"lorescan: error: {bug_report(exc, args)}", file=sys.stderr)
        return EXIT_BUG


def bug_report(exc: BaseException, args: argparse.Namespace) -> str:
    """The line printed for an unexpected exception: the file, the error, and what to do."""
    notes = [n[len(READING):] for n in getattr(exc, "__notes__", []) if n.startswith(READING)]
    where = notes[0] if notes else ", ".join(_inputs(args)) or "the input"
    detail = " ".join(str(exc).split())
    if len(detail) > 160:
        detail = detail[:157] + "..."
    what = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    return (f"{where}: unexpected {what} (a bug in lorescan; please report it with the file; "
            "--debug shows the traceback)")


def _inputs(args: argparse.Namespace) -> list[str]:
    """The files a command was given, in the order the command reads them."""
    out: list[str] = []
    for name in ("file", "input", "files", "books", "chat", "settings", "cases"):
        value: Any = getattr(args, name, None)
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list):
            out.extend(str(v) for v in value)
    return out


if __name__ == "__main__":
    sys.exit(main())
