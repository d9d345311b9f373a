"""``lorescan test CASES.yaml``: lorebook regression tests with pass/fail and traces of failures."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("test", help="run lorebook regression cases (YAML or JSON); exit 1 on failure",
                       description="Runs each case of a case file and prints PASS/FAIL; a failing case "
                                   "explains, in plain words, each entry it names.")
    p.add_argument("cases", metavar="CASES", help="case file (.yaml, .yml or .json)")
    p.add_argument("--json", action="store_true", help="one JSON line per case")
    p.set_defaults(func=run)


def _read(path: Path) -> Any:
    from .._formats.common import decode_text, parse_json, read_file
    from .._formats.yamldoc import parse_yaml

    text = decode_text(read_file(path), str(path))
    if path.suffix.lower() == ".json":
        return parse_json(text, str(path))
    return parse_yaml(text, str(path))


def run(args: argparse.Namespace) -> int:
    import random

    from pydantic import ValidationError

    from .._cases import CaseFile, check
    from .._engine import Lore
    from .._errors import LorescanError
    from .._explain import explain
    from .._formats.chats import settle_roles
    from .._load import load
    from .._model import Settings, validation_error
    from .._replay import generation_points

    path = Path(args.cases)
    data = _read(path)
    try:
        spec = CaseFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise LorescanError(err["msg"], file=str(path), field=".".join(str(x) for x in err["loc"])) from None
    base = path.parent
    books = []
    for b in spec.books:
        books.extend(load(str(base / b)).books)
    try:
        lore = Lore(books, compat=spec.st_version, tokenizer=spec.tokenizer, macro_engine=spec.macro_engine)
    except LorescanError as exc:     # st_version, tokenizer or macro_engine: name the case file
        raise exc.with_file(str(path)) from None
    failed = 0
    for case in spec.cases:
        try:
            settings = Settings.model_validate({**spec.settings, **case.settings})
        except ValidationError as exc:
            raise validation_error(exc, file=str(path), prefix="settings.") from None
        user, char = case.user or spec.user, case.char or spec.char
        if isinstance(case.chat, str):
            loaded = load(str(base / case.chat))
            if loaded.chat is None:
                raise LorescanError("is not a chat", file=str(base / case.chat))
            speakers = (case.user or ("user" in spec.model_fields_set and spec.user) or None,
                        case.char or ("char" in spec.model_fields_set and spec.char) or None)
            chat_file, notes = settle_roles(loaded.chat, *speakers, loaded.warnings)
            for note in notes:
                print(f"lorescan: warning: {base / case.chat}: {note}", file=sys.stderr)
            msgs = list(chat_file.messages)
            points = generation_points(msgs) or [len(msgs)]
            at = case.at or len(points)
            timed = None
            rng = random.Random(spec.seed)        # one stream for the chat, as a replay draws
            for index in points[: at - 1]:
                timed = lore.activate(msgs[:index], settings=settings, user_name=user, char_name=char,
                                      timed=timed, rng=rng).timed
            chat, state = msgs[: points[at - 1]], timed
        else:
            chat, state, rng = list(case.chat or []), None, random.Random(spec.seed)
        result = lore.activate(chat, settings=settings, user_name=user, char_name=char, timed=state,
                               generation_type=case.type, rng=rng, trace=True)
        problems = check(result, case.expect)
        if args.json:
            print(json.dumps({"name": case.name, "pass": not problems, "failures": problems,
                              "activated": result.activated_keys()}, ensure_ascii=False))
        else:
            print(f"{'PASS' if not problems else 'FAIL'}  {case.name}")
            for msg in problems:
                print(f"      {msg}")
            if problems:
                expected = set(case.expect.activated) | set(case.expect.not_activated) | set(case.expect.position)
                for key in sorted(k for k in expected if any(ce.key == k for ce in lore._all)):
                    exp = explain(lore, result, key, chat, settings=settings, user_name=user, char_name=char,
                                  generation_type=case.type)
                    print(f"      {key}: {exp.verdict}")
                    for line in exp.lines + exp.steps:
                        print(f"        - {line}")
        failed += bool(problems)
    if not args.json:
        print(f"{len(spec.cases) - failed} passed, {failed} failed")
    return 1 if failed else 0
