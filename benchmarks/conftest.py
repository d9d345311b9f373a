"""Make ``lorescan`` (the checkout) and the benchmark helpers importable for ``pytest benchmarks``."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
for _p in (str(BENCH.parent), str(BENCH)):
    if _p not in sys.path:
        sys.path.insert(0, _p)
