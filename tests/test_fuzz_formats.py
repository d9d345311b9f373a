"""Fuzz tests over every importer: mutated bytes of the bundled samples either load (and then
describe and write back) or fail with a :class:`LorescanError` — never any other exception.

Seeds are the bundled samples (``corpora/``, ``tests/fixtures/formats/``) and those samples
written in every other format lorescan writes, so every format ``load`` reads has seeds. Each
example mutates one seed: bytes flipped, inserted, deleted or repeated; hostile tokens spliced into
the text; or, for JSON, YAML, card PNGs and CHARX archives, one value of the parsed document
replaced by a hostile value (huge and infinite numbers, lone surrogates, wrong types, deep
nesting) and the file written again, so the mutation reaches the importer behind the container.

CI runs a few examples per format, the same ones every run. ``LORESCAN_FUZZ_EXAMPLES=N`` runs N
random examples per format instead (see the README for a long run).
"""

from __future__ import annotations

import base64
import bz2
import copy
import io
import json
import lzma
import os
import zipfile
import zlib
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lorescan._errors import LorescanError
from lorescan._formats import png, registry
from lorescan._load import describe, load_bytes, render

FORMATS = {f.name: f.description for f in registry.formats()}
BOOK_FORMATS = tuple(f.name for f in registry.formats() if f.kind == "book")
CARD_FORMATS = tuple(f.name for f in registry.formats() if f.kind == "card")
CHAT_FORMATS = tuple(f.name for f in registry.formats() if f.kind == "chat")
TARGETS = registry.targets()

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted([*ROOT.glob("corpora/*.json"), *ROOT.glob("corpora/*.jsonl"),
                  *(p for p in (ROOT / "tests/fixtures/formats").iterdir() if p.name != "README.md")])
LONG_RUN = bool(os.environ.get("LORESCAN_FUZZ_EXAMPLES"))
EXAMPLES = int(os.environ.get("LORESCAN_FUZZ_EXAMPLES") or 50)
SUFFIX = {"png": ".png", "novelai-png": ".png", "charx": ".charx", "transcript": ".txt", "st-chat": ".jsonl",
          "openai-jsonl": ".jsonl", "novelai": ".lorebook", "novelai-scenario": ".scenario"}

#: Raw tokens spliced into text, and written in place of a JSON value (unquoted).
TOKENS = [b"null", b"true", b"[]", b"{}", b"[[]]", b"\"\"", b"-1", b"0", b"1e400", b"-1e400", b"1e-400",
          b"9" * 400, b"-" + b"9" * 400, b"9" * 5000, b"-" + b"9" * 5000, b"0.1", b"\"\\ud800\"",
          b"\"\\udfff\\ud800\"", b"\"\\u0000\"", b"NaN", b"Infinity", b"\"a,b\"", b"\"{{user}}\"",
          b"\"/(a+)+$/i\"", b"\"/[/\"", b"\"\xf0\x9f\x98\x80\"", b"\xff\xfe", b"\xef\xbb\xbf", b"\r\n", b"\n",
          b"\x00", b",", b":", b"\"", b"{", b"}", b"[", b"]", b"\\", b"'", b"#", b"- ", b": ", b"~", b"&a ",
          b"*a", b"<<: *a", b"!!binary ", b"!!set ", b"!!timestamp ", b"!!python/object ", b"!!str ",
          b"2024-13-45", b"2001-12-14t21:59:43.10-05:00", b".inf", b"-.inf", b".nan", b"0x1F", b"0o17",
          b"1:30:00", b"? ", b"|\n", b">-\n", b"%YAML 1.1\n", b"---\n", b"...\n", b"User: ", b"# user: ",
          b"# character: ", b"PK\x03\x04", b"PK\x05\x06", b"\x89PNG\r\n\x1a\n", b"tEXt", b"IEND",
          b"[" * 3000 + b"]" * 3000, b"{\"a\":" * 3000 + b"1" + b"}" * 3000]
#: Strings that stand for raw tokens in a JSON document until it is written.
RAW = [f"@@raw{i}@@" for i in range(len(TOKENS))]
_LONG = "x" * 20_000


VALUES: list[Any] = [
    None, True, False, 0, 1, -1, 7, 2**31, 2**53 + 1, -(2**63), 10**400, 0.5, -0.0, "", " ", "a", "0", "1",
    "true", "false", "null", "NaN", "Infinity", "-Infinity", "\ud800", "a\udc00b", "\ud83d", "\x00",
    "a,b, c", " key ", "{{char}}", "/x/", "/(a+)+$/", "/[/", "\uf000folder:1", "folder", "normal", "regex",
    "constant", "before_char", "after_char", "@@depth 5", "@@@activate", "@@depth \u00b2\nx",
    "@@depth " + "9" * 5000, "@@scan_depth 4\n@@@depth 1\ntext", "@@role assistant\n@@position after_desc",
    "@@dont_activate\n@@activate", "@@depth\n@@@depth -1", "icon", "embeded://card.json",
    "embeded://../../x", "__asset:x", "ccdefault:", "chara_card_v2", "chara_card_v3", "lorebook_v3", "risu",
    "user", "assistant", "system", "tool", _LONG, [], [None], [[]], [{}], ["a", 1, None], ["\ud800"], {},
    {"": None}, {"key": "a"}, {"keys": ["a"], "content": "c"}, {"name": "n", "content": "c"},
    {"role": "user", "content": "c"}, {"type": "text", "text": "t"}, [[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]],
    *RAW,
]


def _write_json(value: Any, pretty: bool) -> bytes:
    """JSON text (ASCII, lone surrogates escaped) with each raw-token marker replaced by its token."""
    body = json.dumps(value, indent=4 if pretty else None).encode("ascii")
    for marker, token in zip(RAW, TOKENS):
        body = body.replace(json.dumps(marker).encode(), token)
    return body


# ---------------------------------------------------------------- seeds

def _extra_seeds(loaded: Any) -> list[tuple[str, bytes]]:
    """Formats lorescan reads but does not write from another one: V1 cards, NovelAI scenarios and
    NovelAI lorebook images, made from the samples."""
    out: list[tuple[str, bytes]] = []
    if loaded.format == "novelai":
        raw = loaded.raw
        out.append(("seed.scenario", json.dumps({"scenarioVersion": 1, "title": "t", "lorebook": raw}).encode()))
        out.append(("seed.png", png.write_naidata_png(None, raw)))
    if loaded.kind == "card" and isinstance(loaded.raw, dict):
        data = loaded.raw.get("data", loaded.raw)
        v1 = {k: data.get(k, "") for k in ("name", "description", "personality", "scenario", "first_mes",
                                            "mes_example")}
        out.append(("seed.json", json.dumps(v1).encode()))
    return out


@cache
def seeds() -> dict[str, list[tuple[str, bytes]]]:
    """Format → seed files (name, bytes)."""
    found: dict[str, list[tuple[str, bytes]]] = {}

    def add(name: str, data: bytes) -> None:
        try:
            fmt = load_bytes(data, name).format
        except LorescanError:
            return
        if data not in [d for _, d in found.get(fmt, [])]:
            found.setdefault(fmt, []).append((name, data))

    for path in SAMPLES:
        data = path.read_bytes()
        try:
            loaded = load_bytes(data, path.name)
        except LorescanError:
            continue
        add(path.name, data)
        for target in TARGETS:
            try:
                body, _ = render(loaded, target)
            except LorescanError:
                continue
            add(f"seed{SUFFIX.get(target, '.json')}", body)
        for name, body in _extra_seeds(loaded):
            add(name, body)
    return found


# ---------------------------------------------------------------- mutations

@st.composite
def byte_mutations(draw: Any, data: bytes) -> bytes:
    """``data`` with 1–4 byte-level edits."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "token", "bytes", "delete", "repeat", "truncate"]))
        pos = draw(st.integers(0, len(buf)))
        if op == "flip" and pos < len(buf):
            buf[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "token":
            cut = draw(st.integers(0, 8))
            buf[pos:pos + cut] = draw(st.sampled_from(TOKENS))
        elif op == "bytes":
            buf[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del buf[pos:pos + draw(st.integers(1, 64))]
        elif op == "repeat":
            end = min(len(buf), pos + draw(st.integers(1, 64)))
            buf[pos:pos] = buf[pos:end] * draw(st.integers(1, 3))
        elif op == "truncate":
            del buf[pos:]
    return bytes(buf)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:50]):
            out += _paths(item, (*path, index))
    return out


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value).union(*(_keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_keys(v) for v in value[:50]))
    return set()


@st.composite
def tree_mutations(draw: Any, doc: Any) -> Any:
    """``doc`` (a parsed JSON document) with 1–3 values replaced, removed or added."""
    doc = json.loads(json.dumps(doc))
    names = sorted(_keys(doc)) or ["x"]
    for _ in range(draw(st.integers(1, 5))):
        path = draw(st.sampled_from(_paths(doc)))
        value = copy.deepcopy(draw(st.sampled_from(VALUES) | st.sampled_from(VALUES).map(lambda v: [v])))
        if not path:
            doc = value
            continue
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        op = draw(st.sampled_from(["tweak", "tweak", "set", "delete", "add"]))
        if op == "tweak":
            parent[path[-1]] = copy.deepcopy(draw(_tweaked(parent[path[-1]])))
        elif op == "set":
            parent[path[-1]] = value
        elif op == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(names))] = value
        else:
            parent.insert(path[-1], value)
    return doc


def _tweaked(value: Any) -> st.SearchStrategy[Any]:
    """Values like ``value``: the same type bent (a string with a surrogate, a decorator or commas
    added; a number far too large; a list emptied or doubled), or another type."""
    if isinstance(value, str):
        return st.sampled_from([value + "\ud800", "\udc00" + value, "@@depth \u00b2\n" + value,
                                "@@depth " + "9" * 5000 + "\n" + value, value * 50, value + ",", ", " + value,
                                "{{char}}" + value, "/" + value + "/gi", "/(" + value + ")+/", value[: len(value) // 2],
                                RAW[TOKENS.index(b"1e400")], [value], None])
    if isinstance(value, bool):
        return st.sampled_from([not value, int(value), str(value).lower(), None, [value]])
    if isinstance(value, (int, float)):
        big = [RAW[TOKENS.index(t)] for t in (b"1e400", b"-1e400", b"9" * 5000, b"9" * 400, b"1e-400")]
        near = value + 0.5 if abs(value) < 2**53 else -1.5
        return st.sampled_from([*big, -value, near, str(value), [value], None, 2**63, -(2**31)])
    if isinstance(value, list):
        return st.sampled_from([[], value * 2, value[::-1], [*value, None], [value], value[1:], {}])
    if isinstance(value, dict):
        return st.sampled_from([{}, [value], {**value, "": value}, dict(list(value.items())[::-1]), None])
    return st.sampled_from(["", 0, [], {}, False])


def _jsonl(data: bytes) -> list[Any] | None:
    try:
        return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    except ValueError:
        return None


def _zip_with(card: bytes, original: bytes, method: int) -> bytes:
    """``original`` (a CHARX) with ``card.json`` = ``card`` compressed with ``method``."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(original)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            body = card if info.filename == "card.json" else source.read(info)
            target.writestr(info.filename, body, compress_type=method)
    return out.getvalue()


@st.composite
def structured(draw: Any, name: str, data: bytes) -> bytes:
    """The seed with one value of its document mutated, written back in the same container."""
    if data.startswith(png.SIGNATURE):
        chunks, _ = png.read_chunks(data, None)
        text = next(c for c in chunks if c.type == b"tEXt")
        keyword = text.keyword or "chara"
        doc = json.loads(base64.b64decode(text.text))
        body = _write_json(draw(tree_mutations(doc)), pretty=False)
        add = [png.Chunk(b"tEXt", keyword.encode() + b"\0" + base64.b64encode(body))]
        return png.replace_text(data, ("chara", "ccv3", "naidata"), add)
    if data.startswith(b"PK"):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            doc = json.loads(archive.read("card.json"))
        body = _write_json(draw(tree_mutations(doc)), pretty=True)
        method = draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2,
                                       zipfile.ZIP_LZMA]))
        return _zip_with(body, data, method)
    if name.endswith(".yaml"):
        return _write_json(draw(tree_mutations(yaml.safe_load(data))), pretty=True)
    lines = _jsonl(data) if name.endswith(".jsonl") else None
    if lines is not None:
        index = draw(st.integers(0, len(lines) - 1))
        lines[index] = draw(tree_mutations(lines[index]))
        return b"\n".join(_write_json(line, pretty=False) for line in lines)
    try:
        doc = json.loads(data)
    except ValueError:
        return draw(byte_mutations(data))
    return _write_json(draw(tree_mutations(doc)), pretty=True)


@st.composite
def fuzzed(draw: Any, fmt: str) -> tuple[str, bytes]:
    name, data = draw(st.sampled_from(seeds()[fmt]))
    how = draw(st.sampled_from(["bytes", "structure", "both"]))
    if how != "bytes":
        data = draw(structured(name, data))
    if how != "structure":
        data = draw(byte_mutations(data))
    return name, data


# ---------------------------------------------------------------- the property

#: What each kind of file may be written as (a card also as its book's formats).
WRITES = {"lorebook": [t for t in TARGETS if t in BOOK_FORMATS] + ["ccv3"],
          "card": [t for t in TARGETS if t in BOOK_FORMATS or t in CARD_FORMATS],
          "chat": [t for t in TARGETS if t in CHAT_FORMATS]}


def check(name: str, data: bytes, pick: Any, v3_decorators: bool = False) -> None:
    """Load, describe, write back and convert (to a format ``pick`` chooses from a list); any
    failure must be a :class:`LorescanError`."""
    try:
        loaded = load_bytes(data, name, v3_decorators=v3_decorators)
        json.dumps(describe(loaded), ensure_ascii=False)
        render(loaded)
        target = pick(WRITES[loaded.kind])
        out, _ = render(loaded, target)
        assert isinstance(out, bytes)
    except LorescanError:
        pass


FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not LONG_RUN, database=None,
                suppress_health_check=list(HealthCheck))


def test_every_format_has_seeds() -> None:
    assert sorted(seeds()) == sorted(FORMATS)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@FUZZ
@given(data=st.data())
def test_importer_raises_only_lorescan_errors(fmt: str, data: Any) -> None:
    name, body = data.draw(fuzzed(fmt), label="file")
    v3 = data.draw(st.booleans(), label="v3_decorators")
    check(name, body, lambda targets: data.draw(st.sampled_from(targets), label="convert to"), v3)


def test_compressed_members_are_fuzzed() -> None:
    """The CHARX seeds are rewritten with every compression method zipfile writes, so each
    decompressor sees mutated input (bz2 and lzma are imported for the same reason)."""
    assert bz2.compress(b"x") and lzma.compress(b"x") and zlib.compress(b"x")
    name, data = seeds()["charx"][0]
    for method in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        loaded = load_bytes(_zip_with(b'{"spec": "chara_card_v2", "data": {"name": "Z"}}', data, method), name)
        assert loaded.character is not None and loaded.character.name == "Z"
