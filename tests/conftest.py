"""Shared test fixtures: where the conformance scenarios and the shared corpora live."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SHARED = ROOT.parent / "shared"
CONFORMANCE = TESTS / "conformance"


@pytest.fixture
def shared_corpora() -> Path:
    """``../shared/corpora`` beside the checkout; the test is skipped when it is absent."""
    path = SHARED / "corpora"
    if not path.is_dir():
        pytest.skip("../shared/corpora is not present")
    return path
