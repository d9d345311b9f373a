"""Chat logs: SillyTavern .jsonl (header, metadata, timed effects, swipes, hidden messages),
TavernAI legacy, OpenAI lists and JSONL, GLM histories (pairs, role lists, YAML) and transcripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from lorescan._errors import FormatError
from lorescan._formats.chats import Chat, write_st_chat
from lorescan._load import document, load, load_bytes, render
from lorescan._model import ChatMessage, TimedEffect

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "formats"


def _lines(path: Path) -> list[object]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_st_chat_header_metadata_and_messages() -> None:
    path = FIXTURES / "st_chat_timed.jsonl"
    loaded = load(path)
    chat = loaded.chat
    assert loaded.format == "st-chat" and chat is not None
    assert (chat.user_name, chat.character_name, chat.world_info) == ("Tomas", "Ilse", "Harbor Town")
    assert chat.metadata["lorescan_ext"] == {"kept": [1, 2]}
    assert chat.metadata["note_depth"] == 4
    assert chat.timed is not None
    assert chat.timed.sticky == {"Harbor Town.0": TimedEffect(hash="1234567890", start=2, end=5, protected=False)}
    assert chat.timed.cooldown == {"Harbor Town.1": TimedEffect(hash=987654321, start=1, end=4, protected=True)}
    assert loaded.warnings == ["timedWorldInfo.cooldown['Harbor Town.9'] is not a timed effect; ignored"]
    assert [(m.name, m.is_user, m.is_system) for m in chat.messages] == [
        ("Ilse", False, False), ("Tomas", True, False), ("Narrator", False, True), ("Ilse", False, False)]
    first = chat.messages[0]
    assert first.mes == "Welcome aboard." and first.swipes == ["Hello.", "Welcome aboard."] and first.swipe_id == 1
    assert chat.messages[1].force_avatar == "User Avatars/tomas.png"
    assert chat.messages[3].extra == {"api": "openai", "model": "gpt", "token_count": 3}


def test_st_chat_round_trip_and_edit() -> None:
    path = FIXTURES / "st_chat_timed.jsonl"
    loaded = load(path)
    assert document(loaded) == _lines(path)
    assert render(loaded)[0] == path.read_bytes()
    assert loaded.chat is not None
    loaded.chat.messages[3].mes = "South pier."
    loaded.chat.metadata["world_info"] = "Other"
    out = [json.loads(line) for line in render(loaded)[0].decode().split("\n")]
    original = _lines(path)
    assert out[4]["mes"] == "South pier." and out[4]["gen_started"] == "a"
    assert out[0]["chat_metadata"]["world_info"] == "Other"
    assert out[1:4] == original[1:4]


def test_group_chat_header_and_headerless_chat() -> None:
    header = {"chat_metadata": {"x": 1}, "user_name": "unused", "character_name": "unused"}
    lines = [header, {"name": "Me", "is_user": True, "mes": "hi"}, {"name": "Bot", "is_user": False, "mes": "yo"}]
    loaded = load_bytes("\n".join(json.dumps(x) for x in lines).encode(), "g.jsonl")
    assert loaded.chat is not None and (loaded.chat.user_name, loaded.chat.character_name) == ("Me", "Bot")
    assert json.loads(render(loaded)[0].decode().split("\n")[0]) == header
    bare = load_bytes("\n".join(json.dumps(x) for x in lines[1:]).encode(), "b.jsonl")
    assert bare.chat is not None and bare.chat.header is None and len(bare.chat.messages) == 2
    assert document(bare) == lines[1:]


def test_chub_style_messages_are_flattened() -> None:
    lines = [{"user_name": "U", "character_name": "C"},
             {"name": "C", "is_user": False, "mes": {"message": "hello"}, "swipes": [{"message": "hello"}]}]
    loaded = load_bytes("\n".join(json.dumps(x) for x in lines).encode(), "chub.jsonl")
    assert loaded.chat is not None and loaded.chat.messages[0].mes == "hello"
    assert loaded.chat.messages[0].swipes == ["hello"]
    assert loaded.warnings == ["1 Chub-style messages (mes objects) were flattened"]
    assert document(loaded) == lines


def test_bad_st_lines() -> None:
    with pytest.raises(FormatError) as info:
        load_bytes(b'{"user_name": "U"}\n{"name": "C", "mes": 5}', "bad.jsonl")
    assert str(info.value).startswith("bad.jsonl: line 2: field 'mes': Input should be a valid string")
    with pytest.raises(FormatError) as info:
        load_bytes(b'{"user_name": "U"}\n\n{"name": "C", "mes": "x"}\n{oops', "bad.jsonl")
    assert str(info.value).startswith("bad.jsonl: line 4: invalid JSON: Expecting property name")


def test_new_st_chat_from_other_formats() -> None:
    chat = Chat(format="openai", user_name="U", character_name="C",
                messages=[ChatMessage(name="U", is_user=True, mes="hi")], metadata={"world_info": "B"})
    lines = [json.loads(x) for x in write_st_chat(chat).decode().split("\n")]
    assert lines == [{"user_name": "U", "character_name": "C", "chat_metadata": {"world_info": "B"}},
                     {"name": "U", "is_user": True, "mes": "hi"}]


def test_tavernai_legacy_chat() -> None:
    data = json.dumps(["Aqua: Hello there!", "You: Hi, Aqua.", "Aqua: Need help?"]).encode()
    loaded = load_bytes(data, "legacy.json")
    chat = loaded.chat
    assert loaded.format == "tavernai-chat" and chat is not None
    assert (chat.user_name, chat.character_name) == ("You", "Aqua")
    assert [(m.name, m.is_user, m.mes) for m in chat.messages] == [
        ("Aqua", False, "Hello there!"), ("You", True, "Hi, Aqua."), ("Aqua", False, "Need help?")]
    assert render(loaded)[0] == data
    with pytest.raises(FormatError, match="item 1 is not 'Name: text'"):
        load_bytes(json.dumps(["A: x", "no colon"]).encode(), "l.json")


def test_openai_messages() -> None:
    path = FIXTURES / "openai_messages.json"
    loaded = load(path)
    chat = loaded.chat
    assert loaded.format == "openai" and chat is not None
    assert (chat.user_name, chat.character_name) == ("User", "Ilse")
    assert [(m.name, m.is_user, m.is_system) for m in chat.messages] == [
        ("system", False, True), ("developer", False, True), ("User", True, False), ("Ilse", False, False),
        ("User", True, False), ("Ilse", False, False), ("tool", False, True), ("Ilse", False, False)]
    assert chat.messages[4].mes == "What about the storm?\nIt looks bad."
    assert chat.messages[5].mes == ""
    assert document(loaded) == json.loads(path.read_text(encoding="utf-8"))
    chat.messages[2].mes = "Ready?"
    out = document(loaded)
    assert out[2] == {"role": "user", "content": "Ready?"}
    assert out[4]["content"][1]["type"] == "image_url"


def test_openai_object_and_jsonl() -> None:
    obj = {"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    loaded = load_bytes(json.dumps(obj).encode(), "o.json")
    assert loaded.format == "openai" and document(loaded) == obj
    fine = load(FIXTURES / "openai_finetune.jsonl")
    assert fine.format == "openai-jsonl" and fine.chat is not None
    assert [m.mes for m in fine.chat.messages][1:] == ["Where is the airship moored?", "At the Spire, beside the lighthouse."]
    assert fine.warnings == ["2 conversations; the first is used"]
    assert document(fine) == _lines(FIXTURES / "openai_finetune.jsonl")
    lines = load(FIXTURES / "openai_lines.jsonl")
    assert lines.chat is not None and lines.chat.character_name == "Marn"
    assert [m.name for m in lines.chat.messages] == ["User", "Marn", "User"]
    assert render(lines)[0] == (FIXTURES / "openai_lines.jsonl").read_bytes()


def test_st_chat_to_openai_and_back() -> None:
    loaded = load(FIXTURES / "st_chat_timed.jsonl")
    out = document(loaded, "openai")
    assert out == [{"role": "assistant", "content": "Welcome aboard."},
                   {"role": "user", "content": "Where is the lighthouse?"},
                   {"role": "system", "content": "(hidden note about the guild)"},
                   {"role": "assistant", "content": "North pier."}]
    again = load_bytes(json.dumps(out).encode(), "o.json")
    assert again.chat is not None
    assert [(m.is_user, m.is_system, m.mes) for m in again.chat.messages] == [
        (m.is_user, m.is_system, m.mes) for m in loaded.chat.messages]  # type: ignore[union-attr]


def test_glm3_history() -> None:
    loaded = load(FIXTURES / "glm3_history.json")
    chat = loaded.chat
    assert loaded.format == "glm" and chat is not None
    assert [(m.is_user, m.is_system, m.mes) for m in chat.messages] == [
        (False, True, "Answer as the harbor master."), (True, False, "Is the lighthouse lit?"),
        (False, False, "Yes, since dusk."), (False, False, "tool_call(city='harbor')"),
        (False, True, '{"storm": true}'), (False, False, "A storm is coming.")]
    assert document(loaded) == json.loads((FIXTURES / "glm3_history.json").read_text(encoding="utf-8"))


def test_glm_pairs() -> None:
    loaded = load(FIXTURES / "glm_pairs.json")
    chat = loaded.chat
    assert chat is not None
    assert [(m.name, m.mes) for m in chat.messages] == [
        ("User", "Who keeps the lighthouse?"), ("Assistant", "Old Marn keeps it."),
        ("User", "Is he a smuggler?"), ("Assistant", "Some say he smuggles salt."),
        ("User", "And the guild?"), ("Assistant", "The guild meets at the full moon.")]
    assert render(loaded)[0] == (FIXTURES / "glm_pairs.json").read_bytes()
    bare = [["q1", "a1"], ["q2", "a2"]]
    loaded = load_bytes(json.dumps(bare).encode(), "p.json")
    assert loaded.format == "glm" and document(loaded) == bare
    assert loaded.chat is not None
    loaded.chat.messages[3].mes = "a2!"
    assert document(loaded) == [["q1", "a1"], ["q2", "a2!"]]


def test_glm_yaml() -> None:
    path = FIXTURES / "glm4_messages.yaml"
    loaded = load(path)
    chat = loaded.chat
    assert loaded.format == "glm" and chat is not None
    assert [(m.is_user, m.is_system) for m in chat.messages] == [
        (False, True), (True, False), (False, False), (False, True), (True, False)]
    assert chat.messages[2].mes == "Next to the north pier, below the lighthouse."
    assert render(loaded)[0] == path.read_bytes()
    chat.messages[4].mes = "Thank you!"
    out = yaml.safe_load(render(loaded)[0])
    assert out["messages"][4] == {"role": "user", "content": "Thank you!"}
    with pytest.raises(FormatError, match="invalid YAML at line"):
        load_bytes(b"messages: [\n  - role: user\n", "bad.yaml")
    with pytest.raises(FormatError, match="YAML file is not a GLM chat history"):
        load_bytes(b"a: 1\n", "other.yml")


def test_transcript() -> None:
    path = FIXTURES / "transcript.txt"
    loaded = load(path)
    chat = loaded.chat
    assert loaded.format == "transcript" and chat is not None
    assert (chat.user_name, chat.character_name) == ("Tomas", "Ilse")
    assert [(m.name, m.is_user) for m in chat.messages] == [
        ("Ilse", False), ("Tomas", True), ("Ilse", False), ("Tomas", True)]
    assert chat.messages[2].mes == "Nearly. The rigging needs tar,\nand the lighthouse must be lit before we sail."
    assert render(loaded)[0] == path.read_bytes()
    chat.messages[3].mes = "Then I will fetch it."
    again = load_bytes(render(loaded)[0], "t.txt")
    assert again.chat is not None and [m.mes for m in again.chat.messages] == [m.mes for m in chat.messages]


def test_transcript_user_guess() -> None:
    loaded = load_bytes(b"Bob: hi\nAlice: hello\nBob: how are you?\n", "t.txt")
    assert loaded.chat is not None and loaded.chat.user_name == "Bob" and loaded.chat.character_name == "Alice"
    assert loaded.warnings == ["took 'Bob' (the first speaker) as the user; add '# user: Name' to choose"]
    named = load_bytes(b"Alice: hello\nYou: hi\n", "t.txt")
    assert named.chat is not None and named.chat.user_name == "You" and named.warnings == []


def test_unknown_text_is_refused() -> None:
    with pytest.raises(FormatError) as info:
        load_bytes(b"just some prose without speakers\nand more of it\n", "prose.txt")
    assert str(info.value) == "prose.txt: not a lorebook, card or chat format lorescan knows"
    with pytest.raises(FormatError, match="file is empty"):
        load_bytes(b"  \n", "empty.json")
    with pytest.raises(FormatError, match="binary file of an unsupported format"):
        load_bytes(b"\x00\x01\x02binary", "x.bin")
