"""``lorescan`` entry point: builds the argument parser from the command modules and runs one.

Each command module ``lorescan/_cli/cmd_<name>.py`` exposes ``register(subparsers)``, which adds
its sub-parser and sets ``func=<callable(args) -> int>``. Bad input surfaces as
:class:`lorescan._errors.LorescanError` and is printed as one line on stderr with exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = ("scenario", "info", "convert", "replay", "explain", "scan", "test", "lint", "report", "bench",
            "serve")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lorescan",
        description="SillyTavern-exact lorebook (world info) activation: replay, explain, lint, convert.",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"lorescan {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"lorescan._cli.cmd_{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"lorescan._cli.cmd_{name}":
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from .._errors import LorescanError

    parser = build_parser()
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


if __name__ == "__main__":
    sys.exit(main())
