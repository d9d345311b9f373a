"""The unicode word rule (``word_boundaries="unicode"``), script by script.

Each table lists keys that must fire and keys that must not, on a text, with the reason. Every key
is a whole-word key (``matchWholeWords: true``) matched case-insensitively, as most books do. The
engine's automata, the slow reference path (``match_key_text``) and ``explain`` must all agree.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lorescan
from lorescan import ChatMessage, Lorebook, Settings
from lorescan._explain import explain
from lorescan._keys import MAX_NEEDLE, match_key_text
from lorescan._lint import lint
from lorescan._match import fold, folded_spans, unicode_word_class

Case = tuple[str, str, bool, str]     # key, text, fires, why

RUSSIAN: list[Case] = [
    ("кот", "Кот спит на диване", True, "a word of its own; К folds to к"),
    ("кот", "котлета на тарелке", False, "л after it continues the word"),
    ("кот", "скот пасётся", False, "с before it continues the word"),
    ("ёж", "Ёж в лесу", True, "Ё folds to ё"),
    ("кот", "кот, пёс и мышь", True, "a comma is not a word character"),
]
UKRAINIAN: list[Case] = [
    ("їжак", "Їжак біжить", True, "Ї folds to ї"),
    ("ліс", "лісник", False, "н continues the word"),
    ("день", "деньки", False, "к continues the word"),
    ("м'ята", "м'ята росте", True, "a key with an apostrophe matches as written"),
]
GREEK: list[Case] = [
    ("σοφία", "Η ΣΟΦΊΑ του", True, "full case folding: Σ to σ, Ί to ί"),
    ("λόγος", "ΛΌΓΟΣ", True, "final sigma ς and capital Σ both fold to σ"),
    ("θεός", "θεότητα", False, "τ continues the word"),
]
GERMAN: list[Case] = [
    ("Straße", "die STRASSE", True, "full case folding: ß is ss"),
    ("Haus", "Hausmeister", False, "m continues the word"),
    ("Müller", "Herr Mu\u0308ller", True, "a decomposed ü (u + U+0308) is the composed ü after NFC"),
    ("groß", "großartig", False, "a continues the word"),
]
FRENCH: list[Case] = [
    ("café", "un cafe\u0301 noir", True, "e + U+0301 is é after NFC"),
    ("caf", "un café noir", False, "é is a letter: it continues the word (SillyTavern's ASCII rule fires here)"),
    ("élève", "ÉLÈVE", True, "accented capitals fold"),
    ("été", "l'été dernier", True, "an apostrophe is not a word character"),
]
TURKISH: list[Case] = [
    ("İstanbul", "İSTANBUL'a gidiyoruz", True, "both fold İ to i + U+0307 the same way"),
    ("istanbul", "İstanbul", False, "İ folds to i + combining dot, a mark that is not in the key"),
    ("ılık", "ILIK", False, "the default folding maps I to i, never to the dotless ı"),
    ("ılık", "ılık su", True, "dotless ı matches itself"),
    ("göz", "gözlük", False, "l continues the word"),
]
ARABIC: list[Case] = [
    ("كتاب", "هذا كتاب جميل", True, "a word between spaces"),
    ("كتاب", "قرأت الكتاب", False, "the article ال is written joined: ل before it continues the word"),
    ("كتاب", "كتابة", False, "ة continues the word"),
    ("كتاب", "كِتاب", False, "the kasra (a mark) is inside the word: the key must be written with it"),
]
HEBREW: list[Case] = [
    ("שלום", "שלום לכולם", True, "a word between spaces"),
    ("שלום", "לך בשלום", False, "the prefix ב is written joined and continues the word"),
    ("ספר", "ספרים", False, "the plural ending continues the word"),
]
HINDI: list[Case] = [
    ("नमस्ते", "नमस्ते दोस्त", True, "a word between spaces (virama and vowel signs are marks inside it)"),
    ("राम", "रामायण पढ़ो", False, "the vowel sign ा after it is a mark: it continues the word"),
    ("कम", "कमल", False, "ल continues the word"),
    ("क", "कि", False, "the vowel sign ि is a mark of the same syllable"),
]
CHINESE: list[Case] = [
    ("东京", "我去东京旅行", True, "Han is written without spaces: a key's Han edge is not checked"),
    ("龙", "恐龙很大", True, "inside a Han word too (no dictionary splits words)"),
    ("Beijing", "Beijing大学", True, "a Han character beside a Latin edge ends the word"),
    ("龙", "龍", False, "simplified and traditional characters differ"),
]
JAPANESE: list[Case] = [
    ("ドラゴン", "ドラゴンが来た", True, "Katakana is written without spaces"),
    ("東京", "東京都に住む", True, "kanji edges are not checked"),
    ("Sony", "Sonyの製品", True, "Hiragana beside a Latin edge ends the word"),
    ("Son", "Sonyの製品", False, "y continues the Latin word"),
    ("ドラゴン", "ﾄﾞﾗｺﾞﾝ", False, "halfwidth Katakana is a compatibility form NFC keeps apart"),
]
KOREAN: list[Case] = [
    ("고양이", "고양이 한 마리", True, "Korean puts spaces between words"),
    ("고양이", "고양이가 잔다", False, "Hangul is a spaced script: the particle 가 continues the word"),
    ("한국", "한국어", False, "어 continues the word"),
    ("한국", "\u1112\u1161\u11ab\u1100\u116e\u11a8 사람", True, "conjoining jamo compose to syllables under NFC"),
]
THAI: list[Case] = [
    ("แมว", "ฉันรักแมวมาก", True, "Thai is written without spaces"),
    ("cat", "catแมว", True, "a Thai letter beside a Latin edge ends the word"),
    ("แมว", "หมาตัวนี้", False, "absent"),
]
EMOJI: list[Case] = [
    ("🐉", "a 🐉 appears", True, "between spaces"),
    ("🐉", "dragon🐉", True, "an emoji is not a word character: nothing continues it"),
    ("dragon", "dragon🐉", True, "an emoji after a word ends it"),
    ("❤", "I ❤\ufe0f you", True, "the variation selector U+FE0F only picks the emoji form"),
    ("👨", "👨\u200d👩\u200d👧 at home", True, "the key's edge is an emoji (not a word character), so no edge is checked"),
    ("man", "man\u200dkind", False, "the joiner ZWJ is a word character (it joins Indic and emoji sequences)"),
]

TABLES: dict[str, list[Case]] = {
    "russian": RUSSIAN, "ukrainian": UKRAINIAN, "greek": GREEK, "german": GERMAN, "french": FRENCH,
    "turkish": TURKISH, "arabic": ARABIC, "hebrew": HEBREW, "hindi": HINDI, "chinese": CHINESE,
    "japanese": JAPANESE, "korean": KOREAN, "thai": THAI, "emoji": EMOJI,
}


def _book(cases: list[Case]) -> Lorebook:
    return Lorebook.from_entries("b", [{"uid": i, "key": [key], "content": f"entry {i}", "matchWholeWords": True}
                                       for i, (key, _, _, _) in enumerate(cases)])


def _fired(lore: lorescan.Lore, uid: int, text: str) -> bool:
    result = lore.activate([ChatMessage(name="U", is_user=True, mes=text)], user_name="U", char_name="C")
    return f"b.{uid}" in result.activated_keys()


def _check_table(cases: list[Case]) -> None:
    lore = lorescan.compile([_book(cases)], word_boundaries="unicode")
    for uid, (key, text, fires, why) in enumerate(cases):
        assert _fired(lore, uid, text) is fires, f"{key!r} in {text!r}: {why}"
        assert match_key_text(text, key, False, True, "unicode") is fires, f"slow path, {key!r} in {text!r}: {why}"


def _script_test(name: str) -> Callable[[], None]:
    def test() -> None:
        _check_table(TABLES[name])
    test.__name__ = f"test_unicode_word_rule_{name}"
    test.__doc__ = f"The unicode word rule on {name} keys (see the table's reasons)."
    return test


test_unicode_word_rule_russian = _script_test("russian")
test_unicode_word_rule_ukrainian = _script_test("ukrainian")
test_unicode_word_rule_greek = _script_test("greek")
test_unicode_word_rule_german = _script_test("german")
test_unicode_word_rule_french = _script_test("french")
test_unicode_word_rule_turkish = _script_test("turkish")
test_unicode_word_rule_arabic = _script_test("arabic")
test_unicode_word_rule_hebrew = _script_test("hebrew")
test_unicode_word_rule_hindi = _script_test("hindi")
test_unicode_word_rule_chinese = _script_test("chinese")
test_unicode_word_rule_japanese = _script_test("japanese")
test_unicode_word_rule_korean = _script_test("korean")
test_unicode_word_rule_thai = _script_test("thai")
test_unicode_word_rule_emoji = _script_test("emoji")


def test_the_default_stays_sillytaverns_ascii_rule() -> None:
    cases = [("кот", "котлета", True, "ASCII \\w: л is no word character to SillyTavern"),
             ("caf", "café", True, "é is no word character to SillyTavern"),
             ("café", "cafe\u0301", False, "no normalisation"),
             ("Straße", "STRASSE", False, "toLowerCase, not case folding")]
    lore = lorescan.compile([_book(cases)])
    for uid, (_key, text, fires, why) in enumerate(cases):
        assert _fired(lore, uid, text) is fires, why


@pytest.mark.parametrize("name", sorted(TABLES))
def test_explain_says_the_unicode_rule_decided_and_agrees_with_the_engine(name: str) -> None:
    cases = TABLES[name]
    lore = lorescan.compile([_book(cases)], word_boundaries="unicode")
    for uid, (_key, text, fires, why) in enumerate(cases):
        chat = [ChatMessage(name="U", is_user=True, mes=text)]
        result = lore.activate(chat, user_name="U", char_name="C", trace=True)
        exp = explain(lore, result, f"b.{uid}", chat, settings=Settings(), user_name="U", char_name="C")
        assert exp.activated is fires, why
        if fires:
            assert "whole words decided by the unicode word rule" in exp.lines[0], exp.lines[0]


def test_explain_maps_a_folded_match_back_to_the_text_as_written() -> None:
    cases: list[Case] = [("Straße", "Wir gehen die GROSSE STRASSE entlang", True, "ß is ss")]
    lore = lorescan.compile([_book(cases)], word_boundaries="unicode")
    chat = [ChatMessage(name="U", is_user=True, mes=cases[0][1])]
    result = lore.activate(chat, user_name="U", char_name="C", trace=True)
    exp = explain(lore, result, "b.0", chat, settings=Settings(), user_name="U", char_name="C")
    assert exp.matches[0].offset == len("U: ") + cases[0][1].index("STRASSE")   # in the text scanned
    assert exp.matches[0].word == "STRASSE"


def test_explain_names_sillytaverns_rule_where_it_decides_a_non_ascii_key() -> None:
    cases: list[Case] = [("кот", "котлета", True, "ASCII rule")]
    lore = lorescan.compile([_book(cases)])
    chat = [ChatMessage(name="U", is_user=True, mes="котлета")]
    result = lore.activate(chat, user_name="U", char_name="C", trace=True)
    exp = explain(lore, result, "b.0", chat, settings=Settings(), user_name="U", char_name="C")
    assert exp.lines[0].endswith("whole words decided by SillyTavern's word rule (ASCII letters, digits and _)")


def test_lint_reports_keys_sillytaverns_rule_cannot_bound_and_names_the_rule() -> None:
    book = Lorebook.from_entries("b", [{"uid": 0, "key": ["кот", "cat", "東京", "🐉", "café", "λόγος"], "content": "x",
                                        "matchWholeWords": True}])
    found = [f for f in lint([book]) if f.code == "word-rule-script"]
    # Latin is bounded (an accented edge mostly meets ASCII letters); Han and emoji edges are unchecked
    assert [f.field for f in found] == ["key[0]", "key[5]"]
    assert "SillyTavern's word rule" in found[0].message and "unicode" in found[0].fix
    assert not [f for f in lint([book], word_boundaries="unicode") if f.code == "word-rule-script"]


def test_keys_with_spaces_are_whole_words_under_the_unicode_rule() -> None:
    cases: list[Case] = [("большой кот", "большой котик", False, "и continues the last word"),
                         ("большой кот", "большой кот.", True, "a full stop ends it")]
    _check_table(cases)


def test_regex_keys_are_unaffected() -> None:
    book = Lorebook.from_entries("b", [
        {"uid": 0, "key": ["/кот/"], "content": "x", "matchWholeWords": True},
        {"uid": 1, "key": ["/cafe\u0301/"], "content": "y"},     # decomposed, as the text is
        {"uid": 2, "key": ["/straße/i"], "content": "z"},
    ])
    lore = lorescan.compile([book], word_boundaries="unicode")
    assert _fired(lore, 0, "котлета")                # a regex is a regex: no word rule
    assert _fired(lore, 1, "un cafe\u0301")          # run on the text as written, not its NFC form
    assert not _fired(lore, 1, "un café")            # ... so the composed é does not match it
    assert _fired(lore, 2, "die Straße")
    assert not _fired(lore, 2, "die STRASSE")        # JavaScript's i flag does not fold ß


def test_a_key_longer_than_the_automata_take_uses_the_same_rule() -> None:
    long_key = "кот " * (MAX_NEEDLE // 4) + "кот"
    cases: list[Case] = [(long_key, long_key + "лета", False, "л continues the last word"),
                         (long_key, long_key.upper() + "!", True, "folded, then bounded by !")]
    _check_table(cases)


def test_keys_with_macros_use_the_rule() -> None:
    book = Lorebook.from_entries("b", [{"uid": 0, "key": ["{{char}}"], "content": "x", "matchWholeWords": True}])
    lore = lorescan.compile([book], word_boundaries="unicode")
    chat = [ChatMessage(name="U", is_user=True, mes="Мария пришла")]
    assert lore.activate(chat, user_name="U", char_name="Мари").activated_keys() == []
    assert lore.activate(chat, user_name="U", char_name="МАРИЯ").activated_keys() == ["b.0"]


def test_word_classes_and_folding() -> None:
    assert [unicode_word_class(c) for c in "a_é\u0301ж東かカไ한1²🐉\ufe0f\u200d"] == \
        [1, 1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0, 1]
    assert fold("STRASSE") == fold("Straße") == "strasse"
    assert fold("ΛΌΓΟΣ") == fold("λόγος")
    assert fold("İ") == "i\u0307" and fold("I") == "i" and fold("ı") == "ı"
    form, where = folded_spans("Aß e\u0301", False)
    assert form == "ass é" and where == [0, 1, 1, 2, 3, 5]


def test_an_unknown_word_rule_is_a_clear_error() -> None:
    with pytest.raises(lorescan.LorescanError, match="word boundaries 'klingon'") as info:
        lorescan.compile([], word_boundaries="klingon")
    assert info.value.field == "word_boundaries"


# -- the automata and the reference path agree ----------------------------------------------------

_ALPHABET = "aAbб Бé\u0301ßS東か고,İıI_1²🐉\u200d\ufe0fσςΣ.ǰ"
_KEYS = st.text(_ALPHABET, min_size=1, max_size=4).map(str.strip).filter(lambda k: k and not k.startswith("/"))


@settings(max_examples=300, deadline=None)
@given(key=_KEYS, text=st.text(_ALPHABET, max_size=16), cs=st.booleans(), ww=st.booleans())
def test_the_automata_answer_as_the_reference_path(key: str, text: str, cs: bool, ww: bool) -> None:
    book = Lorebook.from_entries("b", [{"uid": 0, "key": [key], "content": "x", "caseSensitive": cs,
                                        "matchWholeWords": ww}])
    lore = lorescan.compile([book], word_boundaries="unicode")
    got = lore.activate([ChatMessage(name="U", is_user=True, mes=text)], user_name="U", char_name="C",
                        settings=Settings(world_info_include_names=False)).activated_keys() == ["b.0"]
    assert got is match_key_text(text, key, cs, ww, "unicode")
