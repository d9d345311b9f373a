"""Writing an edited world-info file back (10k entries; 100k in full mode): ``lorescan.render``
rebuilds the document from the entries and writes it indented, as SillyTavern saves it. The
alternative is the same document through Python's own indenting JSON encoder (what lorescan used
before its C extension laid the text out); both must give the same bytes."""

from __future__ import annotations

import json

import benchdata as bd
import pytest

import lorescan
from lorescan._formats import common
from lorescan._load import render


@pytest.fixture(scope="module", params=bd.sizes(10_000))
def edited(request, tmp_path_factory):
    """A loaded world-info file with its first entry's order changed (so it is written afresh)."""
    n = request.param
    path = bd.gen.write_book(tmp_path_factory.mktemp("wi") / f"{bd.gen.BOOK_NAME}.json", entries=bd.entries(n))
    loaded = lorescan.load(path)
    loaded.books[0].entries[0].order = 7
    return n, path, loaded


def _check(data: bytes, n: int, path) -> None:
    written = json.loads(data)
    source = json.loads(path.read_bytes())
    assert len(written["entries"]) == n
    assert written["entries"]["0"]["order"] == 7
    written["entries"]["0"]["order"] = source["entries"]["0"]["order"]
    assert written == source                    # nothing else changed
    assert data.startswith(b'{\n    "entries": {\n        "0": {\n            "uid": 0,')


def test_write_edited_book(benchmark, edited) -> None:
    n, path, loaded = edited
    data, notes = benchmark.pedantic(render, args=(loaded,), rounds=3 if bd.FULL else 1)
    assert notes == []
    _check(data, n, path)
    benchmark.extra_info.update(entries=n, file_mb=round(len(data) / 2**20, 1))


def test_write_edited_book_pythons_indenting_encoder(benchmark, edited, monkeypatch) -> None:
    """The alternative: ``render`` with the document written by ``json.dumps(indent=4)`` (the C
    extension's layout turned off); the same bytes as :func:`test_write_edited_book`'s."""
    n, path, loaded = edited
    with_layout = render(loaded)[0]
    monkeypatch.setattr(common, "_native", None)
    data, _ = benchmark.pedantic(render, args=(loaded,), rounds=3 if bd.FULL else 1)
    monkeypatch.undo()
    _check(data, n, path)
    assert data == with_layout
