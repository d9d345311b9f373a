"""One request object: keywords and an ActivationRequest give the same evaluation."""

from __future__ import annotations

import json
import random

import pytest
from pydantic import ValidationError

import lorescan
from lorescan import ActivationRequest, ChatMessage, Lorebook, Settings
from lorescan._results import result_json

from .conftest import ROOT

BOOK = Lorebook.from_entries("w", [
    {"uid": 0, "key": ["dragon"], "content": "Dragons breathe fire.", "probability": 50},
    {"uid": 1, "constant": True, "content": "{{char}} guards {{user}}.", "position": 1, "sticky": 2},
])
CHAT = [ChatMessage(name="Bob", is_user=True, mes="Tell me about the dragon.")]


def test_a_request_and_keywords_give_the_same_result() -> None:
    lore = lorescan.compile([BOOK], tokenizer="chars4")
    by_keywords = lore.activate(CHAT, user_name="Bob", char_name="Alice", rng=random.Random(3),
                                settings=Settings(world_info_depth=3))
    request = ActivationRequest(chat=CHAT, user_name="Bob", char_name="Alice", rng=random.Random(3),
                                settings=Settings(world_info_depth=3))
    by_request = lore.activate(request)
    assert result_json(by_request) == result_json(by_keywords)
    assert by_request.after == "Alice guards Bob."
    assert lorescan.activate(lore, request).after == "Alice guards Bob."


def test_a_request_reads_json_with_checked_names_and_types() -> None:
    request = ActivationRequest.model_validate({
        "chat": [{"name": "Bob", "is_user": True, "mes": "a dragon!"}],
        "settings": {"world_info_depth": 1},
        "force_activate": [{"world": "w", "uid": 0}],
        "generation_type": "swipe",
    })
    assert request.chat[0].mes == "a dragon!" and request.settings.world_info_depth == 1
    assert request.force_activate[0].uid == 0 and request.generation_type == "swipe"
    with pytest.raises(ValidationError, match="user_nmae"):
        ActivationRequest.model_validate({"user_nmae": "Bob"})
    with pytest.raises(ValidationError, match="dry_run"):
        ActivationRequest.model_validate({"dry_run": "maybe"})


def test_unknown_keywords_and_mixed_calls_are_type_errors() -> None:
    lore = lorescan.compile([BOOK], tokenizer="chars4")
    with pytest.raises(TypeError, match="'user_nmae'"):
        lore.activate(CHAT, user_nmae="Bob")
    with pytest.raises(TypeError, match="not both"):
        lore.activate(ActivationRequest(chat=CHAT), dry_run=True)


def test_the_result_shape_is_the_scenarios_expected_shape() -> None:
    lore = lorescan.compile([BOOK], tokenizer="chars4")
    result = lore.activate(CHAT, user_name="Bob", char_name="Alice", rng=random.Random(3), trace=True)
    shaped = result_json(result, trace=True)
    assert list(shaped) == ["activated", "before", "after", "an_top", "an_bottom", "em", "depth", "timed",
                            "rolls", "outlets", "trace"]
    assert shaped["activated"] == ["w.0", "w.1"]
    assert shaped["timed"] == {"sticky": {"w.1": {"start": 1, "end": 3, "protected": False}}, "cooldown": {}}
    assert "outlets" not in result_json(result, outlets=False)
    assert isinstance(shaped["trace"], list) and shaped["trace"]


def test_build_stores_what_model_construct_stores() -> None:
    """build fills defaults itself (pydantic's model_construct inspects default factories on every
    call); the request must be the one model_construct would make."""
    from lorescan import ActivationRequest, ChatMessage, Settings

    chat = [ChatMessage(name="U", is_user=True, mes="hi")]
    s = Settings(world_info_depth=4)
    fast = ActivationRequest.build(chat, settings=s, user_name="Rowan", trace=True)
    slow = ActivationRequest.model_construct(chat=chat, settings=s, user_name="Rowan", trace=True)
    assert fast == slow
    assert fast.model_fields_set == slow.model_fields_set == {"chat", "settings", "user_name", "trace"}
    assert list(fast.__dict__) == list(ActivationRequest.model_fields)
    assert fast.chat is chat and fast.force_activate == [] and fast.settings is s
    bare = ActivationRequest.build(chat)
    assert bare.settings == Settings() and bare.force_activate is not ActivationRequest.build(chat).force_activate


def test_settings_are_validated_once_per_distinct_names_types_and_values() -> None:
    import pytest as _pytest
    from pydantic import ValidationError

    from lorescan._scenario import valid_settings

    first = valid_settings({"world_info_depth": 3, "world_info_recursive": True})
    assert first is valid_settings({"world_info_depth": 3, "world_info_recursive": True})
    assert (first.world_info_depth, first.world_info_recursive) == (3, True)
    # the same values of other types, or other bits, are other settings
    assert valid_settings({"world_info_depth": 3, "world_info_recursive": 1}) is not first
    zero, negative = valid_settings({"world_info_budget": 0.0}), valid_settings({"world_info_budget": -0.0})
    assert zero is not negative and str(negative.world_info_budget) == "-0.0"
    with _pytest.raises(ValidationError, match="world_info_dept"):
        valid_settings({"world_info_dept": 3})
    with _pytest.raises(ValidationError):
        valid_settings({"world_info_depth": [3]})          # a list: not a key, validated (and refused)


def test_without_buckets_the_records_and_budget_are_the_same() -> None:
    """``buckets=False`` (batch counting) leaves the prompt buckets empty and changes nothing else;
    it is not part of the request's JSON."""
    book = Lorebook.from_entries("w", [
        {"uid": 0, "key": ["dragon"], "content": "Dragons breathe fire.", "position": 0},
        {"uid": 1, "key": ["dragon"], "content": "Scales.", "position": 4, "depth": 2},
        {"uid": 2, "constant": True, "content": "{{char}} guards {{user}}.", "position": 1},
        {"uid": 3, "constant": True, "content": "An example.", "position": 5},
    ])
    lore = lorescan.compile([book], tokenizer="chars4")
    names = {"user_name": "Bob", "char_name": "Alice"}
    full = lore.activate(CHAT, rng=random.Random(3), **names)
    bare = lore.activate(CHAT, rng=random.Random(3), buckets=False, **names)
    assert (full.before, full.after, [d.entries for d in full.depth], [e.content for e in full.em]) == \
        ("Dragons breathe fire.", "Alice guards Bob.", [["Scales."]], ["An example."])
    assert (bare.before, bare.after, bare.depth, bare.em, bare.an_top, bare.an_bottom) == ("", "", [], [], [], [])
    assert bare.activated == full.activated and bare.activated_keys() == ["w.0", "w.1", "w.2", "w.3"]
    assert (bare.budget, bare.budget_used, bare.overflowed, bare.timed) == \
        (full.budget, full.budget_used, full.overflowed, full.timed)
    assert "buckets" not in ActivationRequest(chat=CHAT, buckets=False).model_dump()


def test_evaluations_given_no_random_source_draw_from_one_reseeded_in_a_forked_child() -> None:
    import os

    from lorescan import _engine

    lore = lorescan.compile([BOOK], tokenizer="chars4")

    def dragons(rng: random.Random | None) -> list[bool]:
        return ["w.0" in lore.activate(CHAT, user_name="Bob", char_name="Alice", rng=rng).activated_keys()
                for _ in range(40)]

    _engine._SHARED_RANDOM.seed(11)
    shared = dragons(None)
    assert shared == dragons(random.Random(11))      # one stream of draws across the 40 evaluations
    assert 0 < sum(shared) < 40
    if not hasattr(os, "fork"):
        return
    _engine._SHARED_RANDOM.seed(5)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:    # the child: its draw, then out without running the parent's cleanup
        os.write(write, repr(_engine._SHARED_RANDOM.random()).encode())
        os._exit(0)
    os.close(write)
    child = float(os.read(read, 64).decode())
    os.waitpid(pid, 0)
    os.close(read)
    assert child != random.Random(5).random() == _engine._SHARED_RANDOM.random()


def test_what_a_frontend_keeps_as_json_may_be_given_as_dicts() -> None:
    # settings, a character and the timed state a result gave, as a frontend stores them: they used
    # to be taken as given and fail deep inside ('dict' object has no attribute ...)
    lore = lorescan.compile([BOOK], tokenizer="chars4", settings={"world_info_depth": 3})
    first = lore.activate(CHAT, user_name="Bob", char_name="Alice", rng=random.Random(3),
                          settings={"world_info_depth": 3}, character={"name": "Alice"})
    typed = lore.activate(CHAT, user_name="Bob", char_name="Alice", rng=random.Random(3),
                          settings=Settings(world_info_depth=3), character=lorescan.Character(name="Alice"))
    assert result_json(first) == result_json(typed) and first.after == "Alice guards Bob."
    kept = json.loads(json.dumps(first.timed.to_json()))
    again = lore.activate(CHAT, user_name="Bob", char_name="Alice", rng=random.Random(4), timed=kept)
    assert result_json(again) == result_json(lore.activate(CHAT, user_name="Bob", char_name="Alice",
                                                           rng=random.Random(4), timed=first.timed))
    assert again.timed.sticky and again.after == "Alice guards Bob."
    with pytest.raises(ValidationError, match="nope"):
        lore.activate(CHAT, settings={"nope": 1})


@pytest.mark.parametrize(("fields", "said"), [
    ({"user_name": 5}, "user_name must be a str, not int"),
    ({"char_name": None}, "char_name must be a str, not NoneType"),
    ({"settings": 3}, "settings must be a Settings or a dict, not int"),
    ({"timed": [1]}, "timed must be a TimedState or a dict, not list"),
])
def test_a_field_of_the_wrong_type_is_named(fields: dict[str, object], said: str) -> None:
    with pytest.raises(TypeError) as err:
        lorescan.compile([BOOK], tokenizer="chars4").activate(CHAT, **fields)
    assert str(err.value) == said


@pytest.mark.parametrize(("books", "said"), [
    (BOOK, "compile() takes a list of lorebooks: compile([book])"),
    ("corpora/saltmere.json", "compile() takes lorebooks, not a path: compile(lorescan.load(path).books)"),
    ([{"entries": []}], "compile() takes Lorebook objects, not dict: make one with Lorebook.model_validate(data)"),
])
def test_compile_says_what_to_pass(books: object, said: str) -> None:
    with pytest.raises(TypeError) as err:
        lorescan.compile(books)  # type: ignore[arg-type]
    assert str(err.value) == said


def test_compile_points_a_loaded_file_to_its_books() -> None:
    loaded = lorescan.load(ROOT / "corpora" / "saltmere.json")
    with pytest.raises(TypeError, match=r"^compile\(\) takes Lorebook objects, not Loaded: a loaded file holds its "
                                        r"books in \.books$"):
        lorescan.compile([loaded])  # type: ignore[list-item]
    assert lorescan.compile(loaded.books).activate([]).activated_keys() == ["saltmere.0"]     # a constant
