"""Macros as ``substituteParams`` expands them wherever SillyTavern calls it: in keys, contents,
the first chat message and the scanned injections, with the card's fields, each version's own
set of macros, one pass per macro, and 1.12.6's replacement strings for the legacy tokens.
Expected values are what SillyTavern's own code gives (1.12.6's ``script.js`` and ``macros.js``;
1.18's macro set as its ``substituteParams`` builds it)."""

from __future__ import annotations

import pytest

import lorescan
from lorescan import Character, Lorebook
from lorescan._js import lower
from lorescan._macros import MacroEnv, substitute

#: each version, and 1.18 under both macro engines ("1.18": its default, the new one)
VERSIONS = ["1.12", "1.18-legacy", "1.18"]


def _activate(entries: list[dict], chat: list[str], version: str, **fields):
    compat, _, engine = version.partition("-")
    lore = lorescan.compile([Lorebook.from_entries("book", entries)], compat=compat, tokenizer="chars4",
                            macro_engine=engine or None)
    messages = [{"name": "Ann" if i % 2 else "Bo", "is_user": bool(i % 2), "mes": m} for i, m in enumerate(chat)]
    fields.setdefault("user_name", "Ann")
    fields.setdefault("char_name", "Bo")
    return lore.activate(messages, **fields)


def _entry(uid: int, key: str, content: str = "lore", **more) -> dict:
    return {"uid": uid, "key": [key], "content": content, "order": 100, "position": 0, **more}


ELF = Character(name="Bo", avatar="Bo.png", description="  tall elf \r\n", personality="grim",
                scenario="a ruined keep", mes_example="<START>\n{{char}}: hi", system_prompt="Be {{char}}.",
                post_history_instructions="Stay terse.", character_version="v2 ", creator_notes="made by {{user}}",
                depth_prompt="{{char}} hides a dagger")


@pytest.mark.parametrize("version", VERSIONS)
def test_card_fields_in_keys_are_substituted(version: str) -> None:
    """A key ``{{description}}`` is the card's description (trimmed, carriage return dropped)."""
    hit = _activate([_entry(0, "{{description}}")], ["a tall elf\nappears"], version, character=ELF)
    miss = _activate([_entry(0, "{{description}}")], ["a short elf appears"], version, character=ELF)
    assert hit.activated_keys() == ["book.0"] and miss.activated_keys() == []


@pytest.mark.parametrize("version", VERSIONS)
def test_card_fields_in_the_first_message_and_the_authors_note(version: str) -> None:
    first = _activate([_entry(0, "ruined keep")], ["We stand in {{scenario}}.", "hm"], version, character=ELF)
    assert first.activated_keys() == ["book.0"]
    note = _activate([_entry(0, "grim")], ["hello"], version, character=ELF, authors_note="Mood: {{personality}}",
                     authors_note_scan=True)
    assert note.activated_keys() == ["book.0"]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_depth_prompt_is_scanned_with_the_authors_note(version: str) -> None:
    """The character's depth prompt is an extension prompt that follows the note's scan flag."""
    on = _activate([_entry(0, "bo hides")], ["hello"], version, character=ELF, authors_note_scan=True)
    off = _activate([_entry(0, "bo hides")], ["hello"], version, character=ELF)
    assert on.activated_keys() == ["book.0"] and off.activated_keys() == []


@pytest.mark.parametrize(("version", "want"), [
    ("1.12", "{{creatorNotes}}|{{charDepthPrompt}}|{{mesExamplesRaw}}|{{charInstruction}}|{{notChar}}"),
    ("1.18", "made by Ann|Bo hides a dagger|<START>\nBo: hi|Stay terse.|Ann"),
])
def test_each_version_has_its_own_macros(version: str, want: str) -> None:
    content = "{{creatorNotes}}|{{charDepthPrompt}}|{{mesExamplesRaw}}|{{charInstruction}}|{{notChar}}"
    result = _activate([_entry(0, "hello", content)], ["hello"], version, character=ELF)
    assert result.before == want


def test_the_card_macros_of_1_12() -> None:
    content = "{{charPrompt}}|{{charJailbreak}}|{{mesExamples}}|{{charVersion}}|{{char_version}}|{{persona}}"
    result = _activate([_entry(0, "hello", content)], ["hello"], "1.12", character=ELF, persona_description=" Ann, a bard ")
    assert result.before == "Be Bo.|Stay terse.|<START>\nBo: hi|v2 |v2 |Ann, a bard"


def test_1_18_leaves_formatted_example_messages_as_written() -> None:
    """1.18's ``{{mesExamples}}`` formats the examples for the prompt: '' without any."""
    got = _activate([_entry(0, "hello", "[{{mesExamples}}]")], ["hello"], "1.18", character=ELF)
    none = _activate([_entry(0, "hello", "[{{mesExamples}}]")], ["hello"], "1.18",
                     character=ELF.model_copy(update={"mes_example": ""}))
    assert got.before == "[{{mesExamples}}]" and none.before == "[]"


def test_without_a_character_the_card_macros_are_empty() -> None:
    result = _activate([_entry(0, "hello", "<{{description}}{{charPrompt}}>")], ["hello"], "1.12")
    assert result.before == "<>"


def test_one_pass_per_macro_in_order() -> None:
    """A user named ``{{char}}`` becomes the character's name: the names are replaced one after
    another, ``user`` before ``char``."""
    env = MacroEnv(user="{{char}}", char="Bo")
    assert substitute("{{user}} and {{char}}", env) == "Bo and Bo"
    assert substitute("{{char}} {{user}}", MacroEnv(user="Ann", char="{{user}}")) == "{{user}} Ann"


def test_reverse_and_ascii_case() -> None:
    env = MacroEnv()
    assert substitute("{{reverse:abc}}|{{REVERSE:é😀x}}", env) == "cba|x😀é"
    assert substitute("{{reverse:a\nb}}", env) == "{{reverse:a\nb}}"     # no line terminator inside
    assert substitute("{{uſer}} <uſer>", env) == "{{uſer}} <uſer>"       # JavaScript's /i: ASCII letters only


@pytest.mark.parametrize(("version", "char", "want"), [
    ("1.12", "$&", "[<BOT>]"), ("1.12", "Jo$$", "[Jo$]"), ("1.12", "$`", "[[]"), ("1.12", "$'!", "[]!]"),
    ("1.12", "$1", "[$1]"), ("1.18", "Jo$$", "[Jo$$]"),
])
def test_legacy_tokens_read_names_as_replacement_strings_in_1_12(version: str, char: str, want: str) -> None:
    """1.12.6 replaces ``<BOT>`` with ``String.prototype.replace`` and the name as the replacement
    string; ``{{char}}`` takes the name as it is."""
    result = _activate([_entry(0, "hello", "[<BOT>]"), _entry(1, "hello", "({{char}})", order=90)], ["hello"],
                       version, char_name=char)
    assert result.before.split("\n") == [f"({char})", want]


def test_capital_letters_newer_than_python_lowercase_as_javascript_does() -> None:
    assert lower("\ua7cb\U00010d50\u1c89Ab") == "\u0264\U00010d70\u1c8aab"
    result = _activate([_entry(0, "\u0264")], ["a \ua7cb here"], "1.18")
    assert result.activated_keys() == ["book.0"]


@pytest.mark.parametrize(("avatar", "want"), [
    ("Alice.png", "Alice"), ("Alice.", "Alice."), ("a.b/c", "a.b/c"), ("x.tar.gz", "x.tar"), ("plain", "plain"),
    ("dir.d/x.png", "dir.d/x"), ("x.png\n", "x"),
])
def test_avatar_file_names_lose_their_extension_as_get_chara_filename_strips_it(avatar: str, want: str) -> None:
    assert Character(avatar=avatar).file_name("C") == want


@pytest.mark.parametrize(("version", "want"), [("1.12", ["book.0"]), ("1.18-legacy", ["book.0"]), ("1.18", [])])
def test_the_quiet_prompt_is_substituted_twice(version: str, want: list[str]) -> None:
    """Generate substitutes the quiet prompt, and the scan reads it back through substituteParams
    again: under the legacy engine a description holding an earlier macro is expanded on the
    second pass; the new engine empties a card macro inside a card field, so there is nothing left."""
    card = Character(description="{{charPrompt}}", system_prompt="dragon")
    got = _activate([_entry(0, "dragon")], ["hello"], version, character=card, quiet_prompt="{{description}}")
    assert got.activated_keys() == want


def test_a_depth_prompt_empty_once_substituted_adds_no_text() -> None:
    """An injection that substitutes to '' is skipped (``if (prompt)``): the scan text still ends
    with the message, where ``/hello$/`` matches."""
    card = Character(depth_prompt="{{description}}")
    got = _activate([_entry(0, "/hello$/")], ["hello"], "1.12", character=card, authors_note_scan=True)
    assert got.activated_keys() == ["book.0"]


def test_turns_carry_the_first_message_as_generate_left_it() -> None:
    """Generate writes the first message back substituted, so the next turn substitutes it again."""
    sc = {"st_version": "1.12.6", "user_name": "Bob", "char_name": "Mia",
          "character": {"description": "{{charPrompt}}", "system_prompt": "dragon"},
          "entries": [{"uid": 0, "key": ["dragon"], "content": "hit"}],
          "chat": [{"name": "Mia", "is_user": False, "mes": "{{description}}"}], "turns": [{}, {}]}
    turns = lorescan.run_scenario(sc)["turns"]
    assert [t["activated"] for t in turns] == [[], ["global.0"]]
