"""SillyTavern 1.18's default macro engine (lorescan._macro_engine).

Every expected string was produced by SillyTavern's own engine (substituteParams with the new macro
engine on), so these tests need no JavaScript.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lorescan._macro_engine import evaluate, may_change, trim_scoped
from lorescan._macro_parser import lex
from lorescan._macros import MacroEnv, card_env


class _Card(SimpleNamespace):
    def depth_prompt_text(self) -> str:
        return str(self.depth_prompt or "")


def _env(user: str, char: str, card: dict[str, str] | None, persona: str) -> MacroEnv:
    base = MacroEnv(user=user, char=char, engine="new")
    return card_env(base, None if card is None else _Card(**card), persona, "1.18")  # type: ignore[arg-type]


#: a card whose fields hold names, card macros, a macro the new engine lacks, a carriage return and spaces
CARD = {"description": " Desc of {{char}} {{description}} {{charJailbreak}} ", "personality": "kind",
        "scenario": "a\r\nb", "system_prompt": "SYS {{user}}", "post_history_instructions": "PHI", "mes_example": "",
        "creator_notes": "notes <USER>", "character_version": " v1 {{user}} ", "depth_prompt": "  depth {{persona}}  "}

# (id, text, user, char, card fields or None, persona description, SillyTavern's result)
CASES: list[tuple[str, str, str, str, Any, str, str]] = [
    ('f1', '{{ user }}|{{\tchar\n}}', 'Al', 'Moon', None, '',
     'Al|Moon'),
    ('f2', '<USER>', '<BOT>', 'Moon', None, '',
     '<BOT>'),
    ('f3', '{{char}}', 'Al', '{{reverse:ab}}', None, '',
     '{{reverse:ab}}'),
    ('f4', '{{user}}', 'Bo{{trim}}', 'Moon', None, '',
     'Bo'),
    ('f5', 'a \\{b\\} \\{{user}}', 'Al', 'Moon', None, '',
     'a {b} \\Al'),
    ('f6', '{{!user}}{{#user}}{{?user}}{{~user}}{{>user}}{{! ~ user}}', 'Al', 'Moon', None, '',
     'AlAlAlAlAlAl'),
    ('f7', '[{{if {{user}}}}A{{else}}B{{/if}}|{{space}}|{{newline::2}}|{{trim::x}}|{{reverse::ab}}|x {{ // y }} z]', 'Al', 'Moon', None, '',
     '[A| |\n\n||ba|x  z]'),
    ('f8', 'a{{//}}b', 'Al', 'Moon', None, '',
     'a{{//}}b'),
    ('markers', '<USER>|<bot>|<Char>|<CHARIFNOTGROUP>|<group>|<users>', 'Al', 'Moon', None, '',
     'Al|Moon|Moon|Moon|Moon|<users>'),
    ('case', '{{USER}} {{Char}} {{GROUP}} {{charifnotgroup}} {{groupNotMuted}} {{NOTCHAR}}', 'Al', 'Moon', None, '',
     'Al Moon Moon Moon Moon Al'),
    ('dollar', '{{user}} <USER>', "$& $$ $'", 'Moon', None, '',
     "$& $$ $' $& $$ $'"),
    ('empty-name', '[{{user}}][<BOT>]', '', '', None, '',
     '[][]'),
    ('name-macro', '{{user}}', '{{char}} <USER> \\{x\\}', 'Moon', None, '',
     '{{char}} <USER> {x}'),
    ('name-else', '{{user}}', 'a{{else}}b', 'Moon', None, '',
     'a{{else}}b'),
    ('unicode', '{{reverse::a😀é}}|{{user}}', 'Zoë', 'Moon', None, '',
     'é😀a|Zoë'),
    ('newline', 'a{{newline}}b{{newline::3}}c{{newline:: 2 }}d{{newline::x}}{{newline::-1}}{{newline::}}', 'Al', 'Moon', None, '',
     'a\nb\n\n\nc\n\nd{{newline::x}}{{newline::-1}}{{newline::}}'),
    ('space', '[{{space}}][{{space::3}}][{{space 2}}][{{space::0}}][{{space::1::2}}]', 'Al', 'Moon', None, '',
     '[ ][   ][  ][][{{space::1::2}}]'),
    ('trim', 'a\n\n{{trim}}\n\nb|{{trim}}x{{/trim}}|{{trim}}  y  {{/trim}}', 'Al', 'Moon', None, '',
     'ab|x|y'),
    ('noop', 'a{{noop}}b{{noop::x}}{{NOOP}}', 'Al', 'Moon', None, '',
     'ab{{noop::x}}'),
    ('reverse', '{{reverse:abc}}|{{reverse::a::b}}|{{reverse:a::b}}|{{reverse}}|{{reverse:}}|{{reverse::}}|{{reverse {{user}}x}}', 'Al', 'Moon', None, '',
     'cba|{{reverse::a::b}}|b::a|{{reverse}}|||xlA'),
    ('comment', 'a{{// note}}b{{comment x}}c{{//::a::b}}d{{//}}comment{{///}}e{{// x}}f{{///}}', 'Al', 'Moon', None, '',
     'a{{// note}}bc{{//::a::b}}def{{///}}'),
    ('banned', 'a{{banned::word}}b{{banned}}c', 'Al', 'Moon', None, '',
     'ab{{banned}}c'),
    ('unknown', '{{foo}}|{{foo::{{user}}}}|{{foo}}in {{char}}{{/foo}}|{{user::x}}', 'Al', 'Moon', None, '',
     '{{foo}}|{{foo::Al}}|{{foo}}in Moon}}|{{user::x}}'),
    ('scoped-raw', '{{user}}x{{/user}}|{{/char}}|{{// note}} t {{///}}', 'Al', 'Moon', None, '',
     '{{user}}x{{/user}}|{{/char}}|{{// note}} t {{///}}'),
    ('if-true', '{{if user}}yes{{else}}no{{/if}}', 'Al', 'Moon', None, '',
     'yes'),
    ('if-empty', '{{if user}}yes{{else}}no{{/if}}', '', 'Moon', None, '',
     'no'),
    ('if-not', '{{if !user}}yes{{else}}no{{/if}}|{{if ! {{char}}}}Y{{/if}}', 'Al', 'Moon', None, '',
     'no|'),
    ('if-falsy', '{{if 0}}a{{/if}}{{if off}}b{{/if}}{{if FALSE}}c{{/if}}{{if x}}d{{/if}}{{if noop}}e{{/if}}{{if newline}}f{{/if}}', 'Al', 'Moon', None, '',
     'df'),
    ('pairs-many', '{{if user}}a{{/if}}' * 3, 'Al', 'Moon', None, '', 'aaa'),
    ('pairs-open', '{{if user}}' * 3 + 'b{{/if}}', 'Al', 'Moon', None, '', '{{if user}}{{if user}}b'),
    ('pairs-closers-first', '{{/if}}' * 3 + '{{if user}}c', 'Al', 'Moon', None, '', '{{/if}}{{/if}}{{/if}}{{if user}}c'),
    ('pairs-unclosed-macros', '{{ user }} {{' * 3, 'Al', 'Moon', None, '', 'Al {{Al {{Al {{'),
    ('pairs-nested', '{{if user}}' * 4 + 'x' + '{{/if}}' * 4, 'Al', 'Moon', None, '', 'x'),
    ('pairs-case', '{{IF user}}a{{if char}}b{{/If}}c{{/IF}}d', 'Al', 'Moon', None, '', 'abcd'),
    ('deep-100', '{{reverse::' * 100 + 'xy' + '}}' * 100, 'Al', 'Moon', None, '', 'xy'),
    ('if-nested', '{{if user}}[{{if char}}in{{else}}out{{/if}}]{{else}}no{{/if}}', 'Al', '', None, '',
     '[out]'),
    ('if-inline', '{{if user::shown}}|{{if ::x}}', 'Al', 'Moon', None, '',
     '{{if user::shown}}|{{if ::x}}'),
    ('if-indent', '{{if user}}\n    line1\n      line2\n  line3\n{{/if}}|{{#if user}}  keep  {{/if}}', 'Al', 'Moon', None, '',
     'line1\n  line2\nline3|  keep  '),
    ('if-card', '{{if description}}D:{{description}}{{else}}none{{/if}}|{{if charVersion}}V{{/if}}', 'Al', 'Moon', CARD, 'P',
     'D:Desc of Moon  {{charJailbreak}}|V'),
    ('if-case', '{{IF user}}a{{ELSE}}b{{/IF}}|{{if user}}a{{ELSE}}b{{/if}}', 'Al', 'Moon', None, '',
     'ab|ab'),
    ('else-alone', 'a{{else}}b', 'Al', 'Moon', None, '',
     'ab'),
    ('if-unclosed', '{{if user}}text', 'Al', 'Moon', None, '',
     '{{if user}}text'),
    ('card', '{{description}}|{{charDescription}}|{{personality}}|{{scenario}}|{{persona}}|{{charPrompt}}|{{charInstruction}}|{{charJailbreak}}', 'Al', 'Moon', CARD, ' persona {{user}} ',
     'Desc of Moon  {{charJailbreak}}|Desc of Moon  {{charJailbreak}}|kind|a\nb|persona Al|SYS Al|PHI|{{charJailbreak}}'),
    ('card2', '{{mesExamples}}|{{mesExamplesRaw}}|{{charVersion}}|{{char_version}}|{{version}}|{{charDepthPrompt}}|{{creatorNotes}}|{{charCreatorNotes}}', 'Al', 'Moon', CARD, 'Pers',
     '|| v1 {{user}} | v1 {{user}} | v1 {{user}} |depth |notes Al|notes Al'),
    ('no-card', '[{{description}}][{{persona}}][{{charVersion}}][{{mesExamples}}]', 'Al', 'Moon', None, 'Pers {{char}}',
     '[][Pers Moon][][]'),
    ('braces', '{{{user}}}|{{{{char}}|{{}}|{{ }}|}}{{|{{user', 'Al', 'Moon', None, '',
     '{Al}|{{Moon|{{}}|{{ }}|}}{{|{{user'),
    ('recovery', '{{user!}}|{{user.{{char}} x}}|{{reverse::{{ 1}}x}}|{{ }} {{user}}|{{!}} {{char}}', 'Al', 'Moon', None, '',
     'Al|Al x}}|1 {{x}}|{{ }} Al|{{!}} Moon'),
    ('unclosed', '{{reverse::ab {{user}} cd', 'Al', 'Moon', None, '',
     '{{reverse::ab Al cd'),
    ('newlines', 'line1\n<USER>\r\n{{char}}\n', 'Al', 'Moon', None, '',
     'line1\nAl\r\nMoon\n'),
    ('plain', 'nothing to see { here } < >', 'Al', 'Moon', None, '',
     'nothing to see { here } < >'),
]


@pytest.mark.parametrize(("cid", "text", "user", "char", "card", "persona", "expected"), CASES,
                         ids=[c[0] for c in CASES])
def test_evaluate_matches_sillytavern(cid: str, text: str, user: str, char: str, card: Any, persona: str,
                                      expected: str) -> None:
    assert evaluate(text, _env(user, char, card, persona)) == expected


def test_empty_text() -> None:
    assert evaluate("", MacroEnv()) == ""
    assert evaluate(None, MacroEnv()) == ""


def test_card_env_values() -> None:
    card = {"description": " D {{char}} {{description}} ", "personality": "", "scenario": "a\r\nb",
            "system_prompt": "", "post_history_instructions": "", "mes_example": "ex", "creator_notes": "",
            "character_version": " v1 ", "depth_prompt": ""}
    env = _env("Al", "Moon", card, " P {{user}} ")
    values = dict(env.variables)
    assert values["description"] == "D Moon "     # trimmed first; card macros inside a field are empty
    assert values["scenario"] == "a\nb"          # carriage returns dropped after evaluation
    assert values["persona"] == "P Al"
    assert values["charVersion"] == " v1 "        # as it is: not trimmed, not evaluated
    assert "mesExamples" not in values            # formatted from live settings: left as written
    assert dict(env.after_names) == {"groupNotMuted": "Moon", "notChar": "Al"}


@pytest.mark.parametrize("text", ["plain", "a { b } c", "<b>bold</b>", "x < y > z", "\\n", "{{", "a{{b",
                                  "<USER>", "<bot>", "\\{{", "a\\}}", "\x00\x1fELSE\x1f\x00"])
def test_may_change_is_conservative(text: str) -> None:
    for env in (MacroEnv(user="Al", char="Moon"), MacroEnv(user="", char="{{user}}")):
        if not may_change(text):
            assert evaluate(text, env) == text


@pytest.mark.parametrize(("text", "expected"), [
    ("plain text", False), ("a { b } c", False), ("x < y", False), ("<b>hi</b>", False), ("back\\slash", False),
    ("{{user}}", True), ("{{", True), ("<USER>", True), ("<cHaR>", True), ("<charifnotgroup>", True),
    ("\\{{", True), ("\\}}", True), ("a\x00\x1fELSE\x1f\x00b", True),
])
def test_may_change(text: str, expected: bool) -> None:
    assert may_change(text) is expected


def test_else_marker_in_text_is_removed() -> None:
    assert evaluate("a\x00\x1fELSE\x1f\x00b", MacroEnv()) == "ab"


def test_trim_scoped() -> None:
    assert trim_scoped("\n    a\n      b\n  c\n") == "a\n  b\nc"
    assert trim_scoped("  x  ") == "x"
    assert trim_scoped("") == ""


def test_lexer_ends_with_end_of_input() -> None:
    toks = lex("a{{user}}")
    assert [t.start for t in toks] == [0, 1, 3, 7, 9]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="{}<>\\/!#:|USERBOTusrbt \n\x00\x1fELS-", max_size=24))
def test_a_text_either_engine_may_change_is_one_lorescan_substitutes(text: str) -> None:
    """lorescan skips substitution for texts its shared ``may_change`` rules out: both engines
    must then leave them as they are, whatever the names."""
    from lorescan._macros import may_change as shared
    from lorescan._macros import substitute

    env = MacroEnv(user="{{char}}<BOT>", char="\\{x}")
    for engine in ("new", "legacy"):
        got = substitute(text, MacroEnv(user=env.user, char=env.char, engine=engine))
        assert shared(text) or got == text
    assert shared(text) or not may_change(text)


def test_macros_nested_deeper_than_lorescan_follows_are_a_clear_error() -> None:
    """SillyTavern substitutes a few hundred nested macros (and fails beyond); lorescan's parser
    stops near 140 levels with a one-line error, never a RecursionError, and lint says so per
    field."""
    from lorescan import Lorebook, LorescanError
    from lorescan._lint import lint

    deep = "{{reverse::" * 300 + "x" + "}}" * 300
    with pytest.raises(LorescanError) as err:
        evaluate(deep, MacroEnv(engine="new"))
    assert err.value.message == ('the macros of "{{reverse::{{reverse::{{reverse::{{re..." nest too deeply for '
                                 "lorescan to substitute (about 140 levels at most)")
    book = Lorebook.from_entries("b", [{"uid": 0, "key": ["dragon", deep], "content": deep}])
    found = [(f.code, f.field) for f in lint([book], tokenizer="chars4") if f.code == "macros-too-deep"]
    assert found == [("macros-too-deep", "key[1]"), ("macros-too-deep", "content")]

