"""``lorescan report``: replay a chat and write a self-contained HTML timeline of the activations."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import add_book_args, open_inputs


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="replay a chat and write an HTML report: timeline heat map, budget, traces",
        description="Replays the chat (as `lorescan replay` does, with traces) and writes one HTML file "
                    "that needs no network: entries × generations heat map, budget use per generation, "
                    "and each entry's trace in plain words on click.")
    add_book_args(p)
    p.add_argument("-o", "--output", required=True, metavar="REPORT.html", help="the HTML file to write")
    p.add_argument("--title", default=None, help="page title (default: from the chat file name)")
    p.set_defaults(func=run)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and a.samefile(b)
    except OSError:
        return False


def run(args: argparse.Namespace) -> int:
    from .._errors import LorescanError
    from .._formats.common import utf8
    from .._replay import replay
    from .._report import render_page, report_data

    out = Path(args.output)
    inputs_paths = [Path(p) for p in [*args.books, args.chat, args.settings] if p]
    for path in inputs_paths:
        if _same_file(out, path) or out.resolve() == path.resolve():
            raise LorescanError("is an input file; refusing to overwrite it (choose another -o)", file=str(out))
    if out.is_dir():
        raise LorescanError("is a directory", file=str(out))
    inputs = open_inputs(args)
    gens = list(replay(inputs.lore, inputs.messages, settings=inputs.settings, user_name=inputs.user_name,
                       char_name=inputs.char_name, character=inputs.character, timed=inputs.timed,
                       rng=inputs.rng(), trace=True))
    title = args.title or f"lorescan report: {Path(args.chat).name}"
    data = report_data(gens, inputs.books, title=title, messages=inputs.messages)
    page = render_page(data)
    try:
        out.write_bytes(utf8(page))
    except OSError as exc:
        raise LorescanError(f"cannot write: {exc.strerror}", file=str(out)) from None
    activations = sum(len(g.result.activated) for g in gens)
    print(f"wrote {out}: {len(gens)} generations, {activations} activations, "
          f"{len(data['rows'])} entries in the timeline")
    return 0
