"""``lorescan scenario FILE...``: run conformance scenarios, one JSON line per file."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .common import add_macro_engine_arg, add_version_arg


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "scenario",
        help="run conformance scenario files and print each result as one JSON line",
        description="Run scenario files in the conformance format. Prints one JSON line per file: "
                    '{"name": ..., "result": ...} (the result in the shape of "expected"), or '
                    '{"name": ..., "error": ...}. The SillyTavern version comes from each file\'s '
                    "st_version unless --st-version is given. Exit status: 2 when a file cannot be run (unreadable, "
                    "not a scenario, bad field), else 1 when --check finds a mismatch, else 0.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="scenario JSON files")
    add_version_arg(p, None, "reproduce this SillyTavern version instead of each file's st_version")
    add_macro_engine_arg(p)
    p.add_argument("--no-quirks", dest="quirks", action="store_false",
                   help="correct SillyTavern's known bugs instead of reproducing them")
    p.add_argument("--check", action="store_true",
                   help="also compare with each file's expected result; exit 1 on any mismatch")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .._errors import LorescanError
    from .._formats.common import decode_text, parse_json, read_file
    from .._scenario import run_scenario

    status = 0
    for name in args.files:
        path = Path(name)
        label = path.stem
        try:
            sc = parse_json(decode_text(read_file(path), name), name)
            if isinstance(sc, dict) and isinstance(sc.get("name"), str):
                label = sc["name"]
            result = run_scenario(sc, version=args.st_version, quirks=args.quirks, macro_engine=args.macro_engine)
            line: dict = {"name": label, "result": result}
            if args.check:
                ok = isinstance(sc, dict) and sc.get("expected") == result
                line["pass"] = ok
                if not ok:
                    status = 1
        except LorescanError as exc:
            line = {"name": label, "error": str(exc.with_file(name))}
            status = 2                    # bad input, with or without --check (a mismatch is 1)
        print(json.dumps(line, ensure_ascii=False), flush=False)
    sys.stdout.flush()
    return status
