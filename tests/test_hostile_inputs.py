"""Hostile files: each loads as SillyTavern (or JavaScript) would read it, or fails with a one-line
:class:`FormatError`; ``lorescan info`` on it, run as a process, never prints a traceback.

The files are built here and are small: a 1 GiB bzip2 bomb is ~1 KB, spliced from one compressed
block of zeros, and the tests check that loading one allocates little memory.
"""

from __future__ import annotations

import bz2
import io
import json
import lzma
import math
import os
import struct
import subprocess
import sys
import tracemalloc
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lorescan._errors import FormatError, LorescanError
from lorescan._formats import charx, png
from lorescan._formats.yamldoc import MAX_EXPANDED_NODES, has_c_loader, parse_yaml
from lorescan._load import load_bytes, render

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
GiB = 1 << 30
MiB = 1 << 20
CARD = json.dumps({"spec": "chara_card_v3", "spec_version": "3.0", "data": {"name": "Bomb"}}).encode()


# ---------------------------------------------------------------- building hostile archives

def zip_archive(members: list[dict[str, Any]]) -> bytes:
    """A ZIP written field by field, so headers can claim what they like. Each member: ``name``,
    ``method``, ``raw`` (the stored bytes), ``crc``, ``size`` (the claimed uncompressed size) and
    optionally ``version`` (needed to extract, ×10)."""
    local, central = io.BytesIO(), io.BytesIO()
    for m in members:
        name = m["name"].encode()
        offset = local.tell()
        fields = (m.get("version", 20), 0, m["method"], 0, 0x21, m["crc"], len(m["raw"]), m["size"])
        local.write(struct.pack("<4s2B4HL2L2H", b"PK\x03\x04", fields[0], 0, *fields[1:], len(name), 0))
        local.write(name + m["raw"])
        central.write(struct.pack("<4s4B4HL2L5H2L", b"PK\x01\x02", 20, 3, fields[0], 0, *fields[1:],
                                  len(name), 0, 0, 0, 0, 0, offset))
        central.write(name)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), central.tell(),
                      local.tell(), 0)
    return local.getvalue() + central.getvalue() + end


def bzip2_zeros(block: int, count: int) -> bytes:
    """A bzip2 stream of ``count`` × ``block`` zero bytes (``block`` a multiple of 1 MiB that fits
    one bzip2 block): one block is compressed, streamed, and its bits repeated, with the stream
    CRC combined as bzip2 does."""
    compressor = bz2.BZ2Compressor(9)
    one = b"".join(compressor.compress(bytes(MiB)) for _ in range(block // MiB)) + compressor.flush()
    end_magic = 0x177245385090
    bits, total = int.from_bytes(one[4:], "big"), 8 * (len(one) - 4)
    pad = next(p for p in range(8) if (bits >> (p + 32)) & ((1 << 48) - 1) == end_magic)
    length = total - pad - 80                                   # the block, without the stream's end
    body = bits >> (pad + 80)
    crc = (body >> (length - 80)) & 0xFFFFFFFF                  # the block's CRC, after its magic
    out, combined = 0, 0
    for _ in range(count):
        out = (out << length) | body
        combined = (((combined << 1) | (combined >> 31)) & 0xFFFFFFFF) ^ crc
    out = (out << 80) | (end_magic << 32) | combined
    size = count * length + 80
    return one[:4] + (out << (-size % 8)).to_bytes((size + 7) // 8, "big")


def lzma_zeros(size: int) -> bytes:
    """A ZIP LZMA member's bytes (version, properties, raw LZMA1) for ``size`` zero bytes."""
    lc, lp, pb, dictionary = 3, 0, 2, MiB
    compressor = lzma.LZMACompressor(lzma.FORMAT_RAW, filters=[
        {"id": lzma.FILTER_LZMA1, "lc": lc, "lp": lp, "pb": pb, "dict_size": dictionary}])
    stream = b"".join(compressor.compress(bytes(MiB)) for _ in range(size // MiB)) + compressor.flush()
    props = bytes([(pb * 5 + lp) * 9 + lc]) + dictionary.to_bytes(4, "little")
    return b"\x09\x04" + len(props).to_bytes(2, "little") + props + stream


def deflate_zeros(size: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return b"".join(compressor.compress(bytes(MiB)) for _ in range(size // MiB)) + compressor.flush()


def count_bzip2(data: bytes) -> int:
    """The size ``data`` inflates to, counted in 1 MiB pieces."""
    stream, total = bz2.BZ2Decompressor(), 0
    piece = stream.decompress(data, MiB)
    while True:
        assert piece.count(0) == len(piece)
        total += len(piece)
        if stream.eof:
            return total
        piece = stream.decompress(b"", MiB)


def peak_memory(action: Callable[[], Any]) -> int:
    """The most memory (bytes) Python allocated while ``action`` ran."""
    tracemalloc.start()
    try:
        action()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def cli(tmp_path: Path, name: str, data: bytes, *args: str) -> subprocess.CompletedProcess[str]:
    """``lorescan info FILE`` in a new process."""
    path = tmp_path / name
    path.write_bytes(data)
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([sys.executable, "-m", "lorescan", "info", str(path), *args], capture_output=True,
                          text=True, timeout=120, env=env, errors="replace")


def assert_one_line_error(run: subprocess.CompletedProcess[str], *words: str) -> None:
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""
    assert len(run.stderr.splitlines()) == 1 and run.stderr.startswith("lorescan: error: ")
    for word in words:
        assert word in run.stderr


# ---------------------------------------------------------------- decompression bombs

def test_the_bzip2_splice_makes_what_it_says() -> None:
    assert count_bzip2(bzip2_zeros(MiB, 3)) == 3 * MiB


@pytest.fixture(scope="module")
def bzip2_bomb() -> bytes:
    """A 1 GiB bzip2 card.json whose headers claim 1,000 bytes, in about 1 KB."""
    raw = bzip2_zeros(32 * MiB, 32)
    return zip_archive([{"name": "card.json", "method": zipfile.ZIP_BZIP2, "raw": raw, "crc": 0, "size": 1000}])


def test_bzip2_bomb_is_refused_after_the_size_it_claims(bzip2_bomb: bytes, tmp_path: Path) -> None:
    assert len(bzip2_bomb) < 1200

    def load() -> None:
        with pytest.raises(FormatError, match="'card.json' inflates past the 1000 bytes its header declares"):
            load_bytes(bzip2_bomb, "bomb.charx")

    assert peak_memory(load) < 16 * MiB                        # not 1 GiB
    assert_one_line_error(cli(tmp_path, "bomb.charx", bzip2_bomb), "bomb.charx", "zip bomb")


@pytest.mark.parametrize("method", [zipfile.ZIP_LZMA, zipfile.ZIP_DEFLATED])
def test_lzma_and_deflate_bombs_are_refused_alike(method: int) -> None:
    raw = lzma_zeros(32 * MiB) if method == zipfile.ZIP_LZMA else deflate_zeros(64 * MiB)
    data = zip_archive([{"name": "card.json", "method": method, "raw": raw, "crc": 0, "size": 1000}])

    def load() -> None:
        with pytest.raises(FormatError, match="inflates past the 1000 bytes its header declares"):
            load_bytes(data, "bomb.charx")

    assert peak_memory(load) < 8 * MiB


def test_honestly_labelled_bomb_is_refused_before_inflating(bzip2_bomb: bytes) -> None:
    raw = bzip2_zeros(32 * MiB, 32)
    data = zip_archive([{"name": "card.json", "method": zipfile.ZIP_BZIP2, "raw": raw, "crc": 0, "size": GiB}])
    with pytest.raises(FormatError, match=f"inflates {len(raw)} bytes to {GiB} \\(zip bomb\\?\\)"):
        load_bytes(data, "bomb.charx")


def test_every_member_is_capped_the_icon_and_members_copied_on_write() -> None:
    card = json.dumps({"spec": "chara_card_v3", "data": {
        "name": "Bomb", "assets": [{"type": "icon", "uri": "embeded://icon.png", "name": "main"}]}}).encode()
    stored = {"name": "card.json", "method": 0, "raw": card, "crc": zlib.crc32(card), "size": len(card)}
    bomb = {"method": zipfile.ZIP_BZIP2, "raw": bzip2_zeros(8 * MiB, 2), "crc": 0, "size": 10}
    with pytest.raises(FormatError, match="'icon.png' inflates past the 10 bytes"):
        load_bytes(zip_archive([stored, {**bomb, "name": "icon.png"}]), "icon.charx")
    other = zip_archive([stored, {**bomb, "name": "assets/other.bin"}])
    loaded = load_bytes(other, "other.charx")                   # an asset nothing reads is not inflated
    assert loaded.character is not None and loaded.character.name == "Bomb"
    with pytest.raises(FormatError, match="'assets/other.bin' inflates past the 10 bytes"):
        charx.write_charx(json.loads(card), original=other)     # writing back copies every member


def test_a_member_shorter_than_it_claims_or_with_a_bad_crc_is_corrupt() -> None:
    raw = zlib.compress(CARD)[2:-4]
    short = {"name": "card.json", "method": zipfile.ZIP_DEFLATED, "raw": raw, "crc": zlib.crc32(CARD)}
    with pytest.raises(FormatError, match="'card.json' is corrupt \\(its data ends early\\)"):
        load_bytes(zip_archive([{**short, "size": len(CARD) + 1}]), "short.charx")
    with pytest.raises(FormatError, match="'card.json' is corrupt \\(bad CRC-32\\)"):
        load_bytes(zip_archive([{**short, "size": len(CARD), "crc": 1}]), "crc.charx")
    assert load_bytes(zip_archive([{**short, "size": len(CARD)}]), "ok.charx").character.name == "Bomb"


def test_compressed_png_chunks_are_never_inflated(tmp_path: Path) -> None:
    """SillyTavern reads only ``tEXt``; a ``zTXt``/``iTXt`` card chunk, however large it inflates,
    is left compressed."""
    text = png.Chunk(b"zTXt", b"chara\0\0" + zlib.compress(bytes(64 * MiB), 9))
    itext = png.Chunk(b"iTXt", b"ccv3\0\1\0\0\0" + zlib.compress(bytes(64 * MiB), 9))
    image = png.blank_png()
    data = image[:-12] + text.to_bytes() + itext.to_bytes() + image[-12:]

    def load() -> None:
        with pytest.raises(FormatError, match="PNG has no tEXt metadata, so no character card"):
            load_bytes(data, "ztxt.png")

    assert peak_memory(load) < 8 * MiB
    assert_one_line_error(cli(tmp_path, "ztxt.png", data), "ztxt.png", "no tEXt")


# ---------------------------------------------------------------- other archives and formats

def test_zip_needing_a_version_above_6_3_is_a_format_error(tmp_path: Path) -> None:
    member = {"name": "card.json", "method": 0, "raw": CARD, "crc": zlib.crc32(CARD), "size": len(CARD)}
    assert load_bytes(zip_archive([{**member, "version": 63}]), "v63.charx").character.name == "Bomb"
    data = zip_archive([{**member, "version": 64}])
    with pytest.raises(FormatError, match="ZIP archive of a version lorescan cannot read \\(zip file version 6.4"):
        load_bytes(data, "v64.charx")
    assert_one_line_error(cli(tmp_path, "v64.charx", data), "v64.charx", "6.4")


def test_risu_folder_that_is_not_a_string(tmp_path: Path) -> None:
    """SillyTavern's Risu import never reads ``folder``: the row is an ordinary entry."""
    data = b'{"type":"risu","data":[{"key":"a","folder":[]}, {"key":["x"],"mode":"folder"}, {"key":"b","folder":{}}]}'
    with pytest.raises(FormatError, match="entry 1: field 'key': must be a comma-separated string, got array"):
        load_bytes(data, "risu.json")
    data = b'{"type":"risu","data":[{"key":"a","folder":[]}, {"key":"c, d","folder":{"x":1}}]}'
    loaded = load_bytes(data, "risu.json")
    assert [e.key for e in loaded.books[0].entries] == [["a"], ["c", "d"]]
    assert loaded.warnings == []
    run = cli(tmp_path, "risu.json", data)
    assert run.returncode == 0 and run.stderr == "" and "2 entries" in run.stdout


YAML_BIG_INT = "---\nhistory:\n- role: user\n  content: " + "9" * 5000 + "\n- role: assistant\n  content: hi\n"


def test_yaml_integer_over_4300_digits_is_infinity_as_in_javascript(tmp_path: Path) -> None:
    for name in ("chat.yaml", "chat.txt"):                      # .txt reaches YAML through the fallback
        loaded = load_bytes(YAML_BIG_INT.encode(), name)
        assert loaded.format == "glm" and loaded.raw["history"][0]["content"] == math.inf
        assert [m.mes for m in loaded.chat.messages] == ["", "hi"]     # a number is no message text
    negative = parse_yaml("a: -" + "9" * 5000 + "\nb: 0x" + "f" * 5000 + "\n", "n.yaml")
    assert negative["a"] == -math.inf and negative["b"] == int("f" * 5000, 16)
    run = cli(tmp_path, "chat.txt", YAML_BIG_INT.encode())
    assert run.returncode == 0 and "chat: 2 messages" in run.stdout and run.stderr == ""


def test_json_integer_over_4300_digits_is_infinity_as_json_parse_gives() -> None:
    data = ('{"entries": {"0": {"uid": 0, "key": ["a"], "order": ' + "9" * 5000 + "}}}").encode()
    loaded = load_bytes(data, "book.json")
    assert loaded.books[0].entries[0].order == math.inf
    out, _ = render(loaded, "lorebook_v3")
    assert json.loads(out)["data"]["entries"][0]["insertion_order"] is None     # JSON.stringify(Infinity)


def test_lone_surrogates_in_a_card_print_and_write_as_escapes(tmp_path: Path) -> None:
    data = b'{"spec":"chara_card_v2","spec_version":"2.0","data":{"name":"\\ud800","tags":["\\udfff","x"]}}'
    loaded = load_bytes(data, "card.json")
    assert loaded.character.name == "\ud800" and loaded.character.tags == ["\udfff", "x"]
    run = cli(tmp_path, "card.json", data)
    assert run.returncode == 0 and run.stderr == ""
    assert "character: \\ud800 [chara_card_v2 2.0]" in run.stdout and "tags: \\udfff, x" in run.stdout
    as_json = cli(tmp_path, "card.json", data, "--json")
    assert json.loads(as_json.stdout)["character"]["tags"] == ["\udfff", "x"]
    for target in ("ccv3", "png", "charx"):
        out, _ = render(loaded, target)
        again = load_bytes(out, f"again.{'json' if target == 'ccv3' else target}")
        assert again.character.name == "\ud800"
    chat = load_bytes(b'[{"role": "user", "content": "a\\ud800b"}]', "chat.json")
    out, _ = render(chat, "transcript")
    assert out.decode("utf-8").splitlines()[-1] == "User: a\ufffdb"   # as Node.js writes it


# ---------------------------------------------------------------- YAML: one loader, C or not

YAML_CASES = [
    "history:\n- role: user\n  content: hello\n",
    "a: 1\nb: 1.5\nc: .inf\nd: -.inf\ne: 0x1f\nf: 0o17\ng: 1_000\nh: 1:30\ni: ~\nj: yes\nk: 'x'\n",
    "a: " + "9" * 4400 + "\nb: -" + "9" * 4301 + "\nc: " + "9" * 4300 + "\n",
    "when: 2024-01-02\nat: 2001-12-14t21:59:43.10-05:00\nbad: 2024-13-45\n",
    "bin: !!binary aGVsbG8=\nset: !!set {a, b}\nomap: !!omap [a: 1, b: 2]\npairs: !!pairs [a: 1, a: 2]\n",
    "1: one\n2.5: x\ntrue: t\n~: n\n.inf: i\n[a, b]: no\n",
    "base: &b {x: 1, y: [1, 2]}\nmore:\n  <<: *b\n  y: 3\nsame: *b\n",
    "bad: !!int abc\n", "bad: !!float abc\n", "bad: !!bool maybe\n", "bad: !!timestamp x\n",
    "bad: !!python/object:os.system x\n", "a: &a [*a]\n", "[unclosed\n", "a: b: c\n",
]


@pytest.mark.parametrize("text", YAML_CASES)
def test_c_and_pure_python_yaml_loaders_agree(text: str) -> None:
    results = []
    for c_loader in (True, False):
        try:
            results.append(("ok", parse_yaml(text, "doc.yaml", c_loader=c_loader)))
        except FormatError:
            results.append(("error", None))
    assert results[0] == results[1]


def test_yaml_values_are_json_values() -> None:
    doc = parse_yaml(YAML_CASES[3] + YAML_CASES[4] + "1: one\ntrue: t\n~: n\n", "doc.yaml")
    assert doc == {"when": "2024-01-02", "at": "2001-12-14t21:59:43.10-05:00", "bad": "2024-13-45",
                   "bin": "aGVsbG8=", "set": {"a": None, "b": None}, "omap": [{"a": 1}, {"b": 2}],
                   "pairs": [["a", 1], ["a", 2]], "1": "one", "true": "t", "null": "n"}
    assert parse_yaml("t: !!timestamp x\n", "doc.yaml") == {"t": "x"}
    for bad in ("bad: !!int abc\n", "bad: !!float abc\n", "bad: !!bool maybe\n", "a: &a [*a]\n"):
        with pytest.raises(FormatError, match="invalid YAML at line 1"):
            parse_yaml(bad, "doc.yaml")


def test_yaml_uses_the_c_loader_when_present() -> None:
    import yaml

    assert has_c_loader() == hasattr(yaml, "CSafeLoader")
    fixture = (FIXTURES / "formats" / "glm4_messages.yaml").read_text(encoding="utf-8")
    assert parse_yaml(fixture, "f", c_loader=True) == parse_yaml(fixture, "f", c_loader=False)
    assert parse_yaml(fixture, "f") == yaml.safe_load(fixture)


def test_yaml_alias_bomb_is_refused_before_it_expands() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    text = "\n".join(lines) + "\nhistory: *a8\n"                  # 10^9 values once expanded
    with pytest.raises(FormatError, match=f"aliases expand to more than {MAX_EXPANDED_NODES} values"):
        load_bytes(text.encode(), "laughs.yaml")


def test_cases_file_uses_the_same_yaml_reader(tmp_path: Path) -> None:
    from lorescan._cli.main import main

    cases = tmp_path / "cases.yaml"
    cases.write_text("books: [book.json]\ncases: !!int abc\n", encoding="utf-8")
    assert main(["test", str(cases)]) == 2


# ---------------------------------------------------------------- the CLI's guard

BOOM = """
import sys
import lorescan._load
def boom(loaded):
    raise TypeError("unhashable type: 'list'\\nsecond line")
lorescan._load.describe = boom
from lorescan._cli.main import main
sys.exit(main())
"""


def test_an_unexpected_error_is_one_line_naming_the_file(tmp_path: Path) -> None:
    book = FIXTURES / "formats" / "st_odd_keys.json"
    run = subprocess.run([sys.executable, "-c", BOOM, "info", str(book)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 3 and run.stdout == ""
    assert run.stderr.splitlines() == [
        f"lorescan: error: {book}: unexpected TypeError: unhashable type: 'list' second line (a bug in "
        "lorescan; please report it with the file; --debug shows the traceback)"]
    for args in (["info", str(book), "--debug"], ["--debug", "info", str(book)]):
        debug = subprocess.run([sys.executable, "-c", BOOM, *args], capture_output=True, text=True, timeout=120)
        assert debug.returncode == 3
        assert debug.stderr.startswith("Traceback (most recent call last):")
        assert debug.stderr.splitlines()[-1] == run.stderr.splitlines()[0]


def test_an_error_outside_loading_names_the_command_inputs() -> None:
    import argparse

    from lorescan._cli.main import bug_report

    args = argparse.Namespace(books=["a.json", "b.png"], chat="c.jsonl")
    line = bug_report(OverflowError("x" * 300), args)
    assert line.startswith("a.json, b.png, c.jsonl: unexpected OverflowError: " + "x" * 157 + "... (a bug")
    assert isinstance(FormatError("x"), LorescanError)


def test_every_command_prints_and_writes_lone_surrogates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Names, keys, contents and messages with lone surrogates: shown as ``\\ud800`` escapes,
    written to files as JSON escapes or (in text) U+FFFD."""
    from lorescan._cli.main import main

    book, chat = tmp_path / "sbook.json", tmp_path / "schat.jsonl"
    book.write_text(json.dumps({"entries": {"0": {"uid": 0, "key": ["hel\ud800"], "comment": "c\udfff",
                                                  "content": "x\ud800y"}}}), encoding="ascii")
    lines = [{"user_name": "U\ud800", "character_name": "C"}, {"name": "C", "is_user": False, "mes": "hi"},
             {"name": "U\ud800", "is_user": True, "mes": "say hel\ud800"}, {"name": "C", "is_user": False, "mes": "ok"}]
    chat.write_text("\n".join(json.dumps(x) for x in lines), encoding="ascii")
    files = ["--book", str(book), "--chat", str(chat)]
    assert main(["replay", *files, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["before"] == "x\ud800y"
    assert main(["explain", *files, "--entry", "sbook.0"]) == 0
    assert "primary key 'hel\\ud800' matched in message #2 (U\\ud800)" in capsys.readouterr().out
    assert main(["replay", *files]) == 0 and main(["lint", str(book)]) == 0
    assert main(["report", *files, "-o", str(tmp_path / "r.html")]) == 0
    assert "U\ufffd: say hel\ufffd" in (tmp_path / "r.html").read_text(encoding="utf-8")
    assert main(["convert", str(chat), "-o", str(tmp_path / "c.txt"), "--to", "transcript"]) == 0
    assert (tmp_path / "c.txt").read_text(encoding="utf-8").splitlines()[0] == "# user: U\ufffd"
    assert main(["convert", str(book), "-o", str(tmp_path / "b.json"), "--to", "novelai"]) == 0
    assert json.loads((tmp_path / "b.json").read_text(encoding="utf-8"))["entries"][0]["text"] == "x\ud800y"


def test_settings_and_scenario_files_read_json_as_the_importers_do(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from lorescan._cli.main import main

    settings = tmp_path / "settings.json"
    settings.write_text('{"world_info_depth": ' + "9" * 5000 + "}", encoding="ascii")
    book, chat = str(ROOT / "corpora/saltmere.json"), str(ROOT / "corpora/saltmere-chat.jsonl")
    assert main(["replay", "--book", book, "--chat", chat, "--settings", str(settings)]) == 2
    assert capsys.readouterr().err == (f"lorescan: error: {settings}: field 'world_info_depth': "
                                       "Input should be a finite number\n")
    scenario = tmp_path / "scenario.json"
    scenario.write_bytes(b'{"name": "\xff"}')
    assert main(["scenario", str(scenario)]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == (f"{scenario}: is not UTF-8 text (bad byte at "
                                                            "offset 10)")


def test_v3_decorator_numbers_are_ascii_digits_int_can_read() -> None:
    """Found by fuzzing: ``'²'.isdigit()`` is true but ``int('²')`` fails."""
    entry = {"keys": ["a"], "enabled": True, "insertion_order": 1}
    card = {"spec": "chara_card_v3", "spec_version": "3.0", "data": {"name": "x", "character_book": {"entries": [
        {**entry, "content": "@@depth \u00b2\nx"}, {**entry, "content": "@@depth " + "9" * 5000 + "\ny"},
        {**entry, "content": "@@depth 7\nz"}]}}}
    loaded = load_bytes(json.dumps(card).encode(), "card.json", v3_decorators=True)
    first, second, third = loaded.books[0].entries
    assert (first.content, second.content[:9], third.content, third.depth, third.position) == (
        "@@depth \u00b2\nx", "@@depth 9", "z", 7, 4)
    left = "has no SillyTavern setting; left in the content"
    assert loaded.warnings[:2] == [f"entry 0: decorator '@@depth \u00b2' {left}",
                                   "entry 1: decorator '@@depth " + "9" * 5000 + f"' {left}"]


def test_a_compression_method_zip_cannot_inflate_is_named() -> None:
    member = {"name": "card.json", "method": 9, "raw": CARD, "crc": zlib.crc32(CARD), "size": len(CARD)}
    with pytest.raises(FormatError, match="'card.json' uses compression method 9; lorescan reads stored, deflate"):
        load_bytes(zip_archive([member]), "deflate64.charx")
