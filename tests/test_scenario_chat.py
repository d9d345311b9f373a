"""The scenario reader's chat: messages of the plain shape are read once and shared."""

from __future__ import annotations

import pytest

from lorescan import ChatMessage
from lorescan._errors import LorescanError
from lorescan._scenario import scenario_chat


def test_a_plain_message_is_read_once_and_what_it_gave_is_kept() -> None:
    chat = [{"name": "U", "is_user": True, "mes": "the bell"}, {"name": "C", "mes": "It rings."}]
    first = scenario_chat(chat)
    assert [(m.name, m.is_user, m.is_system, m.mes) for m in first] == [
        ("U", True, False, "the bell"), ("C", False, False, "It rings.")]
    assert all(a is b for a, b in zip(scenario_chat([dict(m) for m in chat]), first))
    assert first[1].model_fields_set == {"name", "mes"}
    # the same values given differently are other messages
    explicit = scenario_chat([{"name": "C", "mes": "It rings.", "is_user": False}])[0]
    assert explicit is not first[1] and explicit.model_fields_set == {"name", "mes", "is_user"}
    assert explicit.model_dump() == first[1].model_dump()


@pytest.mark.parametrize("message", [
    {"name": "U", "mes": "x", "send_date": "today"},      # more fields: kept as extras
    {"name": "U", "mes": "x", "is_user": 1},              # a number for a flag: as pydantic reads it
])
def test_other_messages_are_read_as_pydantic_reads_them(message: dict) -> None:
    assert scenario_chat([message])[0].model_dump() == ChatMessage.model_validate(message).model_dump()
    assert scenario_chat([message])[0] is not scenario_chat([message])[0]


def test_a_bad_message_still_names_its_field() -> None:
    with pytest.raises(LorescanError) as err:
        scenario_chat([{"name": "U", "mes": "fine"}, {"name": "U", "mes": 5}], "turns[1].chat")
    assert err.value.field == "turns[1].chat[1].mes"
