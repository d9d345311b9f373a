"""The format registry: the detection order and the listing order pinned, every declaration
consistent with what its reader and writer really do, and a third-party format registered
through the ``lorescan.formats`` entry-point group."""

from __future__ import annotations

import importlib.metadata
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from lorescan import Detector, Format, FormatError, Lorebook, LorescanError, ReadContext, Reading
from lorescan._formats import kobold, registry
from lorescan._formats.common import dump_json, entry_from_json
from lorescan._load import UI_ONLY, Loaded, describe, load, load_bytes, render
from lorescan._model import ENTRY_DEFAULTS

FIXTURES = Path(__file__).parent / "fixtures" / "formats"

DETECTION_ORDER = {
    "bytes": [("novelai-png",), ("png",), ("charx",)],
    "object": [("lorebook_v3",), ("ccv3",), ("ccv2",), ("novelai", "agnai", "risu"), ("novelai-scenario",),
               ("kobold",), ("charbook",), ("st",), ("st-chat",), ("openai",), ("glm",), ("kobold-lite",),
               ("ccv1",), ("openai-jsonl",)],
    "array": [("tavernai-chat",), ("openai",), ("glm",), ("kobold-lite",)],
    "lines": [("st-chat",), ("openai-jsonl",)],
    "text": [("transcript",)],
}
LISTING = ["st", "lorebook_v3", "charbook", "novelai", "novelai-scenario", "novelai-png", "agnai", "risu", "kobold",
           "kobold-lite", "ccv1", "ccv2", "ccv3", "png", "charx", "st-chat", "tavernai-chat", "openai",
           "openai-jsonl", "glm", "transcript"]
OWN_FORMAT_ONLY = ("novelai-scenario", "novelai-png", "ccv1")

#: An entry that sets every field to something other than its default.
FULL_ENTRY: dict[str, Any] = dict(
    uid=0, key=["alpha"], keysecondary=["beta"], comment="a note", content="the text", constant=True,
    vectorized=True, selective=False, selectiveLogic=3, addMemo=True, order=7, position=4, disable=True,
    excludeRecursion=True, preventRecursion=True, delayUntilRecursion=2, probability=55, useProbability=True,
    depth=2, group="g", groupOverride=True, groupWeight=30, scanDepth=3, caseSensitive=True,
    matchWholeWords=True, useGroupScoring=True, automationId="x", role=1, sticky=2, cooldown=3, delay=4,
    ignoreBudget=True, triggers=["normal"], outletName="o", matchPersonaDescription=True,
    matchCharacterDescription=True, matchCharacterPersonality=True, matchCharacterDepthPrompt=True,
    matchScenario=True, matchCreatorNotes=True, displayIndex=5)


def _st_book(entries: list[dict[str, Any]]) -> bytes:
    return dump_json({"entries": {str(e["uid"]): e for e in entries}}).encode()


def test_written_json_is_the_same_with_and_without_the_c_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    """``dump_json`` with the C extension (compact text, then ``json_layout``) writes the text
    Python's indenting encoder writes: empty containers, a lone surrogate, an infinite number,
    text beyond ASCII and nesting, at every indent and compact."""
    from lorescan._formats import common

    if common._native is None:
        pytest.skip("the C extension is not built")
    entry = {**FULL_ENTRY, "content": 'a\ud800b \u00e9 \U0001f600 "q"', "key": [], "extensions": {},
             "depth": float("inf")}
    doc = {"entries": {"0": entry}, "name": "x", "nested": [[{}], {"a": [None, -0.0, 1e300, [], {"": ""}]}]}
    for indent in (4, 2, 0, None):
        got = dump_json(doc, indent)
        monkeypatch.setattr(common, "_native", None)
        want = dump_json(doc, indent)
        monkeypatch.undo()
        assert got == want
    text = dump_json(doc)
    assert text.startswith('{\n    "entries": {\n        "0": {\n            "uid": 0,\n            "key": [],')
    assert '"content": "a\\ud800b \u00e9 \U0001f600 \\"q\\""' in text and '"depth": null' in text


# ---------------------------------------------------------------- order

@pytest.mark.parametrize("shape", registry.SHAPES)
def test_detection_order_is_pinned(shape: registry.Shape) -> None:
    assert registry.detection_order(shape) == DETECTION_ORDER[shape]


def test_listing_order_and_targets() -> None:
    assert [f.name for f in registry.formats()] == LISTING
    assert registry.targets() == tuple(n for n in LISTING if n not in OWN_FORMAT_ONLY)


def test_equal_priorities_are_ambiguous() -> None:
    doc = json.dumps({"kind": "memory", "type": "risu", "entries": []}).encode()
    with pytest.raises(FormatError) as info:
        load_bytes(doc, "a.json")
    assert str(info.value) == "a.json: ambiguous: looks like agnai and risu at once"


# ---------------------------------------------------------------- declarations

def test_declarations_are_consistent() -> None:
    fields = set(ENTRY_DEFAULTS) | {"uid", "displayIndex"}
    names = {f.name for f in registry.formats()}
    aliases = [a for f in registry.formats() for a in f.aliases]
    assert len(aliases) == len(set(aliases)) and not set(aliases) & names
    for fmt in registry.formats():
        assert fmt.kind in registry.KINDS and fmt.description and fmt.detect and fmt.write, fmt.name
        assert registry.get(fmt.name) is fmt
        for alias in fmt.aliases:
            assert registry.resolve(alias, fmt.kind) == fmt.name
        for alias in fmt.kind_aliases:             # another format's name, meaning this one for its kind
            assert alias in names and registry.get(alias).kind != fmt.kind, (fmt.name, alias)
            assert registry.resolve(alias, fmt.kind) == fmt.name
        if fmt.kind == "chat":
            assert fmt.carries is None and not fmt.comma_keys, fmt.name
        if fmt.carries is not None:
            assert fmt.carries <= fields and {"uid", "key", "content"} <= fmt.carries, fmt.name
        assert not set(fmt.carried_values) & (fmt.carries or set()), fmt.name
        assert set(fmt.carried_values) <= fields, fmt.name


def _book_targets() -> list[str]:
    return [f.name for f in registry.formats() if f.kind == "book" and f.target]


@pytest.mark.parametrize("target", _book_targets())
def test_every_book_target_round_trips_a_small_book(target: str) -> None:
    entries = [{"uid": 0, "key": ["harbor", "dock"], "content": "Ships moor here.", "comment": "harbor"},
               {"uid": 1, "key": ["lamp"], "content": "The lamp burns.", "comment": "lamp"}]
    data, notes = render(load_bytes(_st_book(entries), "small.json"), target)
    back = load_bytes(data, "small.json")
    assert back.format == target and notes == []
    got = [{k: e.to_json()[k] for k in ("key", "content", "comment")} for e in back.books[0].scan_order()]
    assert got == [{k: e[k] for k in ("key", "content", "comment")} for e in entries]


@pytest.mark.parametrize("target", [f.name for f in registry.formats() if f.carries is not None])
def test_carries_is_what_survives_and_the_rest_is_reported(target: str) -> None:
    if registry.get(target).kind == "card":
        card = json.loads((FIXTURES / "charx_card.json").read_text())
        card["data"]["character_book"] = {"entries": []}
        source = load_bytes(json.dumps(card).encode(), "card.json")
        source.books[0].entries = [entry_from_json(FULL_ENTRY, None)]
        source.books[0].entry_keys = ["0"]
    else:
        source = load_bytes(_st_book([FULL_ENTRY]), "book.json")
    fmt = registry.get(target)
    assert fmt.carries is not None
    data, notes = render(source, target)
    back = load_bytes(data, "book.png" if target == "png" else "book.json")
    assert back.format == target
    read = back.books[0].scan_order()[0].to_json()
    for field in sorted(fmt.carries - UI_ONLY - {"displayIndex"}):
        if target == "risu" and field == "useProbability":   # SillyTavern's importer stores the percent there
            assert bool(read[field]) is FULL_ENTRY[field]
        else:
            assert read[field] == FULL_ENTRY[field], (target, field)
    lost = sorted(f for f in FULL_ENTRY if f not in fmt.carries and f not in UI_ONLY
                  and FULL_ENTRY[f] != ENTRY_DEFAULTS.get(f) and FULL_ENTRY[f] not in fmt.carried_values.get(f, ()))
    dropped = [n for n in notes if "cannot hold these entry fields" in n]
    assert dropped == ([f"{target} cannot hold these entry fields, so they are dropped: "
                        + ", ".join(f"{f} (1)" for f in lost)] if lost else [])
    assert bool(lost) is (fmt.kind == "book" and target not in ("lorebook_v3", "charbook"))


def test_koboldai_formats_are_declared_in_their_module() -> None:
    assert [f.name for f in kobold.FORMATS] == ["kobold", "kobold-lite"]
    assert [registry.get(f.name) for f in kobold.FORMATS] == list(kobold.FORMATS)


@pytest.mark.parametrize(("logic", "kept"), [(0, True), (2, True), (1, False), (3, False)])
def test_kobold_lite_holds_and_any_and_not_any_only(logic: int, kept: bool) -> None:
    entry = {"uid": 0, "key": ["a"], "keysecondary": ["b"], "content": "c", "selectiveLogic": logic}
    data, notes = render(load_bytes(_st_book([entry]), "b.json"), "lite")
    assert notes == ([] if kept else ["kobold-lite cannot hold these entry fields, so they are dropped: "
                                      "selectiveLogic (1)"])
    assert load_bytes(data, "b.json").books[0].entries[0].selectiveLogic == (logic if kept else 0)


@pytest.mark.parametrize("target", [f.name for f in registry.formats() if f.kind == "card" and f.target])
def test_every_card_target_round_trips_a_card(target: str) -> None:
    source = load(FIXTURES / "charx_card.json")
    data, _ = render(source, target)
    back = load_bytes(data, "card.png" if target == "png" else "card.json")
    assert back.format == target and back.character is not None
    assert back.character.name == source.character.name == "Harbor Master"
    assert [e.to_json()["content"] for e in back.books[0].scan_order()] == \
        [e.to_json()["content"] for e in source.books[0].scan_order()]


@pytest.mark.parametrize("target", [f.name for f in registry.formats() if f.kind == "chat"])
def test_every_chat_target_round_trips_a_chat(target: str) -> None:
    lines = [{"user_name": "Rowan", "character_name": "Ines"},
             {"name": "Ines", "is_user": False, "mes": "Welcome to the lighthouse."},
             {"name": "Rowan", "is_user": True, "mes": "Is the lamp lit?"},
             {"name": "Ines", "is_user": False, "mes": "Every night."}]
    source = load_bytes("\n".join(json.dumps(x) for x in lines).encode(), "chat.jsonl")
    data, notes = render(source, target)
    back = load_bytes(data, "chat.txt" if target == "transcript" else "chat.json")
    assert back.format == target and notes == []
    assert back.chat is not None
    assert [(m.is_user, m.mes) for m in back.chat.messages] == [(x["is_user"], x["mes"]) for x in lines[1:]]


# ---------------------------------------------------------------- a third-party format

def _read_wordlist(text: str, ctx: ReadContext) -> Reading:
    words = text.split()[1:]
    entries = [entry_from_json({"uid": i, "key": [w], "content": w.upper()}, ctx.file) for i, w in enumerate(words)]
    book = Lorebook(name=ctx.stem, entries=entries, entry_keys=[str(i) for i in range(len(words))])
    return Reading(books=[book], warnings=[f"{len(words)} words"], raw=words)


def _write_wordlist(loaded: Loaded, same: bool) -> tuple[Any, Any]:
    words = [e.key[0] for e in loaded.books[0].scan_order()]
    return words, lambda doc: ("WORDLIST\n" + "\n".join(doc) + "\n").encode()


WORDLIST = Format("wordlist", "one key per line after a WORDLIST header", "book",
                  (Detector("text", 50, lambda text: text.startswith("WORDLIST\n")),),
                  _read_wordlist, _write_wordlist, aliases=("words",), carries=frozenset({"uid", "key", "content"}))


@pytest.fixture
def entry_points(monkeypatch: pytest.MonkeyPatch):
    """Installs fake entry points (``name=value`` of the lorescan.formats group); counts lookups."""
    calls: list[str | None] = []

    def install(**points: str) -> list[str | None]:
        eps = [importlib.metadata.EntryPoint(name, value, registry.ENTRY_POINT_GROUP) for name, value in points.items()]

        def fake(group: str | None = None, **_: Any) -> list[importlib.metadata.EntryPoint]:
            calls.append(group)
            return [ep for ep in eps if ep.group == group]

        monkeypatch.setattr(importlib.metadata, "entry_points", fake)
        monkeypatch.setattr(registry, "declares_group", lambda group: True)   # as a dist-info would say
        registry.reset()
        return calls

    yield install
    registry.reset()


def test_a_plugin_format_is_loaded_once_and_reads_and_writes(entry_points, tmp_path: Path) -> None:
    calls = entry_points(wordlist=f"{__name__}:WORDLIST")
    path = tmp_path / "harbor.txt"
    path.write_text("WORDLIST\nharbor\nlamp\n")
    loaded = load(path)
    assert loaded.format == "wordlist" and loaded.warnings == ["2 words"]
    assert [(e.key, e.content) for e in loaded.books[0].entries] == [(["harbor"], "HARBOR"), (["lamp"], "LAMP")]
    assert describe(loaded)["description"] == "one key per line after a WORDLIST header"
    assert render(loaded) == (b"WORDLIST\nharbor\nlamp\n", [])
    st, _ = render(load_bytes(_st_book([FULL_ENTRY]), "b.json"), "words")
    assert st == b"WORDLIST\nalpha\n"
    books = [n for n in registry.targets() if registry.get(n).kind == "book"]
    assert books[-2:] == ["kobold-lite", "wordlist"]          # listed after the built-in books
    load(path)
    assert calls == [registry.ENTRY_POINT_GROUP]             # read once, lazily


def test_a_plugin_format_is_a_convert_target(entry_points, capsys: pytest.CaptureFixture[str]) -> None:
    from lorescan._cli.main import main

    entry_points(wordlist=f"{__name__}:WORDLIST")
    with pytest.raises(SystemExit):
        main(["convert", "--help"])
    assert "\n  wordlist        one key per line after a WORDLIST header\n" in capsys.readouterr().out


def test_a_broken_plugin_is_one_line_naming_it(entry_points) -> None:
    entry_points(broken=f"{__name__}:NO_SUCH_NAME")
    with pytest.raises(LorescanError) as info:
        registry.formats()
    assert str(info.value) == (f"format plugin 'broken' ({__name__}:NO_SUCH_NAME) failed to load: "
                               f"AttributeError: module '{__name__}' has no attribute 'NO_SUCH_NAME'")


def test_a_plugin_may_not_take_a_builtin_name(entry_points) -> None:
    entry_points(again=f"{__name__}:ST_AGAIN")
    with pytest.raises(LorescanError, match="^format plugins: format name 'st' is declared twice$"):
        registry.formats()


ST_AGAIN = [Format("st", "another st", "book", (), _read_wordlist)]


def test_building_the_command_line_does_not_read_the_registry() -> None:
    from lorescan._cli.main import build_parser

    registry.reset()
    build_parser()                                  # every command starts with this: keep it cheap
    assert registry.registry.cache_info().currsize == 0


def _dist(root: Path, name: str, text: str | None) -> None:
    info = root / f"{name}.dist-info"
    info.mkdir(parents=True)
    if text is not None:
        (info / "entry_points.txt").write_text(text)


def test_the_plugin_lookup_runs_only_when_a_distribution_names_the_group(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``declares_group`` reads the ``entry_points.txt`` files ``importlib.metadata`` would read:
    False skips the lookup (and the import of ``importlib.metadata``), None runs it."""
    import importlib.machinery

    try:    # the importlib_metadata backport (distributed installs its finder): it reads sys.path too
        import importlib_metadata as backport
    except ImportError:  # pragma: no cover - not installed
        backport = None
    monkeypatch.setattr(sys, "meta_path", [importlib.machinery.PathFinder])
    site = tmp_path / "site"
    _dist(site, "plain-1.0", None)
    _dist(site, "tool-1.0", "[console_scripts]\ntool = tool:main\n")
    monkeypatch.setattr(sys, "path", [str(site), str(tmp_path / "missing")])
    assert registry.declares_group(registry.ENTRY_POINT_GROUP) is False
    assert registry.declares_group("console_scripts") is True
    _dist(site, "myformats-2.0", f"[{registry.ENTRY_POINT_GROUP}]\nwords = myformats:WORDS\n")
    assert registry.declares_group(registry.ENTRY_POINT_GROUP) is True
    egg = tmp_path / "old.egg" / "EGG-INFO"
    egg.mkdir(parents=True)
    (egg / "entry_points.txt").write_text("[other]\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert registry.declares_group(registry.ENTRY_POINT_GROUP) is False
    (tmp_path / "bundle.zip").write_bytes(b"PK\x05\x06" + b"\0" * 18)     # a zip on sys.path
    monkeypatch.setattr(sys, "path", [str(tmp_path / "bundle.zip")])
    assert registry.declares_group(registry.ENTRY_POINT_GROUP) is None
    monkeypatch.setattr(sys, "path", [])

    class Finder:
        @staticmethod
        def find_distributions(*_: Any) -> list[Any]:
            return []

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    assert registry.declares_group(registry.ENTRY_POINT_GROUP) is None
    if backport is not None:
        monkeypatch.setattr(sys, "meta_path", [importlib.machinery.PathFinder, backport.MetadataPathFinder()])
        assert registry.declares_group(registry.ENTRY_POINT_GROUP) is False
