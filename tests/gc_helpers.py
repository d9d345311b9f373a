"""What the cyclic garbage collector does while a block of a test runs."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_passes() -> Iterator[list[int]]:
    """The generation of each pass the collector starts while the block runs (after a full
    collection, so that none is already due)."""
    passes: list[int] = []

    def noted(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    gc.collect()
    gc.callbacks.append(noted)
    try:
        yield passes
    finally:
        gc.callbacks.remove(noted)
