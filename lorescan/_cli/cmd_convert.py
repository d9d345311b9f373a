"""``lorescan convert``: write a lorebook, card or chat again, in its own format or another."""

from __future__ import annotations

import argparse
import sys

from .._formats import registry

_KIND_WORDS = {"book": "a lorebook", "card": "a card", "chat": "a chat"}


def _and(names: list[str]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def epilog() -> str:
    """The list of output formats and what ``--to`` names mean, from the format registry."""
    formats = registry.formats()
    targets = registry.targets()
    listed = "\n".join(f"  {f.name:<15} {f.description}" for f in formats if f.name in targets)
    means = []
    for kind in registry.KINDS:
        pairs = [f"{alias} means {f.name}" for f in formats if f.kind == kind for alias in f.kind_aliases]
        if pairs:
            means.append(f"for {_KIND_WORDS[kind]}, {_and(pairs)}")
    sentence = "; ".join(means)
    own_only = _and([f.name for f in formats if f.write is not None and f.name not in targets])
    also = f"\n  (also for {own_only}, which can only be written back to themselves)." if own_only else "."
    return f"""output formats (--to):
{listed}

  {sentence[:1].upper() + sentence[1:]}.
  Without --to the file is written in its own format: unchanged content gives identical bytes{also}
  Lossy targets print which entry fields they cannot hold. The input file is never overwritten."""


#: Stands for :func:`epilog` until the help is printed: the registry is read only then.
_EPILOG = "output formats (--to): see lorescan convert --help"


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    def add_text(self, text: str | None) -> None:
        super().add_text(epilog() if text is _EPILOG else text)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("convert", help="convert between lorebook, card and chat formats",
                       description="Reads IN (format detected from its content) and writes OUT.",
                       epilog=_EPILOG, formatter_class=_HelpFormatter)
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
