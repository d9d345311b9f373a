"""``lorescan convert``: write a lorebook, card or chat again, in its own format or another."""

from __future__ import annotations

import argparse
import sys

from .._formats import FORMATS

EPILOG = "output formats (--to):\n" + "\n".join(
    f"  {name:<15} {text}" for name, text in FORMATS.items()
    if name not in ("ccv1", "novelai-scenario", "novelai-png")) + """

  For a lorebook, ccv3 means lorebook_v3 and ccv2 means charbook; for a chat, st means st-chat.
  Without --to the file is written in its own format: unchanged content gives identical bytes
  (also for ccv1, novelai-scenario and novelai-png, which can only be written back to themselves).
  Lossy targets print which entry fields they cannot hold. The input file is never overwritten."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("convert", help="convert between lorebook, card and chat formats",
                       description="Reads IN (format detected from its content) and writes OUT.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", metavar="IN", help="any supported lorebook, character card or chat file")
    p.add_argument("-o", "--output", metavar="OUT", required=True, help="file to write (never IN)")
    p.add_argument("--to", metavar="FORMAT", help="output format (default: IN's own format)")
    p.add_argument("--name", help="book name (default: the file name, or the card book's name)")
    p.add_argument("--v3-decorators", action="store_true",
                   help="map V3 @@depth/@@position/@@role/@@scan_depth/@@activate/@@dont_activate "
                        "in card books to entry settings (SillyTavern ignores most of them)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .._load import convert

    loaded, notes = convert(args.input, args.output, args.to, name=args.name,
                            v3_decorators=args.v3_decorators)
    for note in notes:
        print(f"lorescan: note: {note}", file=sys.stderr)
    target = args.to or loaded.format
    what = [f"book {b.name}, {len(b.entries)} entries" for b in loaded.books]
    if loaded.chat is not None:
        what.append(f"{len(loaded.chat.messages)} messages")
    print(f"wrote {args.output} ({target})" + (f": {'; '.join(what)}" if what else ""))
    return 0
