"""Where the proxy places an activation's text in a chat completion's messages (pure functions; the
service's tests check the same through HTTP)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lorescan._js import js_string, to_number, trim
from lorescan._service.placement import (
    DEPTH_ROLES,
    MAX_DEPTH,
    SCANNED_ROLES,
    Header,
    PlacementError,
    bucket_texts,
    chat_of,
    find_header,
    insert_at_depth,
    place,
)


def sys_(text: str) -> dict[str, Any]:
    return {"role": "system", "content": text}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def bot(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def result(**buckets: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"activated": [], "before": "", "after": "", "an_top": [], "an_bottom": [], "em": [],
                            "depth": [], "outlets": {}}
    return {**base, **buckets}


CHAT = [sys_("Prompt."), user("u1"), bot("a1"), user("u2")]


def test_depth_zero_goes_after_the_last_message_assistant_then_user_then_system() -> None:
    groups = [{"depth": 0, "role": 0, "entries": ["S"]}, {"depth": 0, "role": 1, "entries": ["U"]},
              {"depth": 0, "role": 2, "entries": ["A"]}]
    assert insert_at_depth(CHAT, groups) == [*CHAT, bot("A"), user("U"), sys_("S")]


def test_a_depth_counts_chat_messages_and_what_was_inserted_below_it() -> None:
    groups = [{"depth": 2, "role": 0, "entries": ["D2"]}, {"depth": 1, "role": 0, "entries": ["D1a", "D1b"]}]
    assert insert_at_depth(CHAT, groups) == [sys_("Prompt."), user("u1"), sys_("D2"), bot("a1"),
                                             sys_("D1a\nD1b"), user("u2")]


def test_a_depth_beyond_the_chat_goes_at_its_start_after_the_leading_system_messages() -> None:
    assert insert_at_depth(CHAT, [{"depth": 9, "role": 1, "entries": ["deep"]}]) == [
        sys_("Prompt."), user("deep"), user("u1"), bot("a1"), user("u2")]
    only_system = [sys_("Prompt.")]
    assert insert_at_depth(only_system, [{"depth": 3, "role": 0, "entries": ["x"]}]) == [sys_("Prompt."), sys_("x")]


def test_other_messages_travel_with_the_chat_message_before_them() -> None:
    messages = [sys_("Prompt."), user("u1"), sys_("note"), {"role": "tool", "content": "t"}, bot("a1"), user("u2"),
                sys_("Instructions after the chat.")]
    groups = [{"depth": 0, "role": 0, "entries": ["D0"]}, {"depth": 1, "role": 2, "entries": ["D1"]},
              {"depth": 2, "role": 1, "entries": ["D2"]}]
    assert insert_at_depth(messages, groups) == [
        sys_("Prompt."), user("u1"), sys_("note"), {"role": "tool", "content": "t"}, user("D2"), bot("a1"),
        bot("D1"), user("u2"), sys_("D0"), sys_("Instructions after the chat.")]


def test_depths_as_javascript_reads_them() -> None:
    groups = [{"depth": None, "role": 0, "entries": ["never"]},      # an entry without a depth: NaN
              {"depth": 2.5, "role": 0, "entries": ["never either"]},
              {"depth": 1001, "role": 0, "entries": ["beyond 1000"]},
              {"depth": "1", "role": 0, "entries": ["  one  "]},     # Number("1"), trimmed
              {"depth": 0, "role": 5, "entries": ["no such role"]}]
    assert insert_at_depth(CHAT, groups) == [sys_("Prompt."), user("u1"), bot("a1"), sys_("one"), user("u2")]


def test_groups_of_one_key_replace_each_other_and_keys_are_joined_in_name_order() -> None:
    # script.js keys each group's extension prompt customDepthWI_<depth>_<role>: 4 and "4" are one key
    # (the later replaces the earlier); "00", " 0" and 0 are three keys of depth 0, read in key order
    groups = [{"depth": 4, "role": 0, "entries": ["first"]}, {"depth": "4", "role": 0, "entries": ["second"]},
              {"depth": 0, "role": 0, "entries": ["b"]}, {"depth": "00", "role": 0, "entries": ["c"]},
              {"depth": " 0", "role": 0.0, "entries": ["a"]}]
    chat = [user(str(i)) for i in range(6)]
    assert insert_at_depth(chat, groups) == [user("0"), user("1"), sys_("second"), *chat[2:], sys_("a\nc\nb")]


def test_buckets_read_as_sillytavern_builds_them() -> None:
    r = result(before="B1\nB2", an_top=["T1", "T2"], an_bottom=["N"],
               em=[{"position": "before", "content": "E10"}, {"position": "after", "content": "F10"},
                   {"position": "before", "content": "E20"}, {"position": "after", "content": "F20"}])
    assert bucket_texts(r) == {"before": "B1\nB2", "after": "", "an_top": "T1\nT2", "an_bottom": "N",
                               "em_top": "E20\nE10", "em_bottom": "F10\nF20"}


def test_markers_are_replaced_or_dropped_and_the_rest_joins_the_first_system_message() -> None:
    messages = [sys_("LORESCAN_SYSTEM {}"), sys_(" LORESCAN_AN_TOP\n"), sys_("Main."), sys_("Second."),
                sys_("LORESCAN_EM_BOTTOM"), sys_("LORESCAN_OUTLET  mood "), sys_("LORESCAN_OUTLET none"), user("hi")]
    r = result(before="B", after="A", an_top=["T"], an_bottom=["N"], em=[{"position": "before", "content": "E"}],
               outlets={"mood": ["M1", "M2"], "unused": ["U"]})
    assert place(messages, Header(0, {}), r) == [sys_("T"), sys_("B\nMain.\nA\nN\nE"), sys_("Second."),
                                                 sys_("M1\nM2"), user("hi")]


def test_without_a_system_message_one_is_created_at_the_start() -> None:
    messages = [user("hi"), sys_("LORESCAN_SYSTEM {}")]
    assert place(messages, Header(1, {}), result(after="A", an_bottom=["N"])) == [sys_("A\nN"), user("hi")]
    assert place(messages, Header(1, {}), result()) == [user("hi")]


def test_text_parts_keep_their_shape() -> None:
    parts = [{"type": "text", "text": "Main."}, {"type": "image_url", "image_url": {"url": "data:,"}}]
    messages = [{"role": "developer", "content": parts}, user("hi")]
    got = place(messages + [sys_("LORESCAN_SYSTEM {}")], Header(2, {}), result(before="B", after="A"))
    assert got[0] == {"role": "developer", "content": [{"type": "text", "text": "B"}, *parts,
                                                       {"type": "text", "text": "A"}]}
    assert messages[0]["content"] == parts          # the request's own message is not changed


def test_the_header_is_found_and_read() -> None:
    messages = [sys_("Main."), {"role": "system", "content": [{"type": "text", "text": 'LORESCAN_SYSTEM {"user": '},
                                                              {"type": "text", "text": '"Rowan"}'}]}]
    assert find_header(messages) == Header(1, {"user": "Rowan"})
    assert find_header([user('LORESCAN_SYSTEM {"user": "x"}'), sys_("Main.")]) is None   # only system messages
    with pytest.raises(PlacementError, match="not valid JSON") as err:
        find_header([sys_('LORESCAN_SYSTEM {"user": ')])
    assert err.value.field == "messages[0].content"
    with pytest.raises(PlacementError, match="must be a JSON object"):
        find_header([sys_("LORESCAN_SYSTEM [1]")])
    with pytest.raises(PlacementError, match=r"a second LORESCAN_SYSTEM header \(the first is messages\[0\]\)"):
        find_header([sys_("LORESCAN_SYSTEM {}"), sys_("LORESCAN_SYSTEM {}")])
    with pytest.raises(PlacementError, match=r"unknown placement marker LORESCAN_BEFOR \(did you mean LORESCAN_BEFORE\?\)"):
        place([user("x"), sys_(" LORESCAN_BEFOR")], Header(5, {}), result())
    with pytest.raises(PlacementError, match="needs an outlet name"):
        place([sys_("LORESCAN_OUTLET"), user("x")], Header(5, {}), result())


def test_the_scanned_chat_is_the_user_and_assistant_messages() -> None:
    messages = [sys_("Main."), user("u1"), {"role": "assistant", "content": "a1", "name": "Ines"},
                {"role": "tool", "content": "t"}, {"role": "user", "content": "u2", "name": ""}]
    assert chat_of(messages) == [{"role": "user", "content": "u1", "name": None},
                                 {"role": "assistant", "content": "a1", "name": "Ines"},
                                 {"role": "user", "content": "u2", "name": None}]


def walked(messages: list[Any], groups: list[dict[str, Any]]) -> list[Any]:
    """The reference for ``insert_at_depth``: the prompt builder's own steps, one by one. Every
    group keyed ``customDepthWI_<String(depth)>_<String(role)>`` (a later one replaces an earlier),
    the keys read in name order, one message per depth and role; then the chat walked from its end,
    each depth spliced into the walk at ``depth`` plus what was inserted before it."""
    prompts: dict[str, tuple[float, float, str]] = {}
    for group in groups:
        if group.get("depth") is None:
            continue
        key = f"customDepthWI_{js_string(group['depth'])}_{js_string(group.get('role'))}"
        prompts[key] = (to_number(group["depth"]), to_number(group.get("role")), "\n".join(group["entries"]))
    at_depth: dict[float, list[tuple[float, str]]] = {}
    for _, (d, r, v) in sorted(prompts.items()):
        if v and d == d and 0 <= d <= MAX_DEPTH and d == int(d):
            at_depth.setdefault(d, []).append((r, v))
    by_depth: dict[int, list[dict[str, str]]] = {}
    for depth in sorted(at_depth):
        inserted = []
        for number, role in DEPTH_ROLES:
            values = [trim(v) for r, v in at_depth[depth] if r == number]
            text = trim("\n".join(values)) if values else ""
            if text:
                inserted.append({"role": role, "content": text})
        if inserted:
            by_depth[int(depth)] = inserted[::-1]
    if not by_depth:
        return messages
    chat_at = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") in SCANNED_ROLES]
    if not chat_at:
        return messages + [m for _, inserted in sorted(by_depth.items()) for m in inserted]
    first, last = chat_at[0], chat_at[-1]
    units: list[list[Any]] = []
    for message in messages[first:last + 1]:
        if isinstance(message, dict) and message.get("role") in SCANNED_ROLES:
            units.append([message])
        else:
            units[-1].append(message)
    walk = units[::-1]
    total = 0
    for depth, inserted in sorted(by_depth.items()):
        walk[depth + total:depth + total] = [[m] for m in inserted[::-1]]
        total += len(inserted)
    return messages[:first] + [m for unit in walk[::-1] for m in unit] + messages[last + 1:]


_ROLES = st.sampled_from(["user", "assistant", "system", "tool", "developer"])
_MESSAGES = st.lists(st.builds(lambda role, i: {"role": role, "content": f"m{i}"}, _ROLES, st.integers(0, 99)),
                     max_size=14)
_NUMBERS = st.one_of(st.integers(-2, 16), st.sampled_from([None, 1000, 1001, 2.0, 2.5, -0.0, True, "3", " 1",
                                                           "01", "x", float("nan"), 2**60 + 1]))
_GROUPS = st.lists(st.fixed_dictionaries({"depth": _NUMBERS, "role": _NUMBERS,
                                          "entries": st.lists(st.sampled_from(["a", " b ", "c", "", "\n"]),
                                                              min_size=1, max_size=3)}), max_size=8)


@settings(max_examples=400, deadline=None)
@given(_MESSAGES, _GROUPS)
def test_insert_at_depth_puts_every_message_where_the_walk_puts_it(messages: list[Any],
                                                                     groups: list[dict[str, Any]]) -> None:
    assert insert_at_depth(messages, groups) == walked(messages, groups)
