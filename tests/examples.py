"""How many examples a Hypothesis test draws in each test set (tests/conftest.py): its full
count under ``pytest`` and ``pytest -m "not slow"``, a tenth of it (at least 100) under
``pytest -m quick``, the edit loop's set, which conftest marks by setting
DERIVE_QUICK_TESTS before the test files are imported."""

from __future__ import annotations

import os


def examples(full: int) -> int:
    """``full``, or a tenth of it (at least 100) in the quick set."""
    return max(100, full // 10) if os.environ.get("DERIVE_QUICK_TESTS") == "1" else full
