"""Helpers of the tests that read `derive run`'s page against its JSON export
(tests/test_sentences.py, tests/test_whole_numbers.py): the case files (bundled, or a
seeded random case of tests/random_cases.py called ``random-SEED``), their JSON records and
their TOML, each computed once per test session.
"""

from __future__ import annotations

import json
import tempfile
import tomllib
from functools import lru_cache
from pathlib import Path

from documents import cli
from random_cases import write_case

from derive.case import bundled_cases

_FOLDER = tempfile.TemporaryDirectory(prefix="derive-pages-")  # the random cases; removed at exit
RANDOM_DIR = Path(_FOLDER.name)


def case_path(case: str) -> str:
    """The TOML path of a bundled case name, or of ``random-SEED`` (written on first use);
    a path ending in ``.toml`` as it is."""
    if case.endswith(".toml"):
        return case
    if case.startswith("random-"):
        path = RANDOM_DIR / f"{case}.toml"
        if not path.exists():
            write_case(int(case.split("-")[1]), RANDOM_DIR)
        return str(path)
    return str(bundled_cases()[case])


@lru_cache(maxsize=None)
def toml_of(case: str) -> dict:
    """The case file, as tomllib reads it (not derive)."""
    with open(case_path(case), "rb") as file:
        return tomllib.load(file)


@lru_cache(maxsize=None)
def records(case: str) -> list[dict]:
    """The JSON records of ``derive run CASE --format json``, in derive's order (the
    forward pass, dL/dtheta, theta after the step, the pass after)."""
    return json.loads(cli("run", case_path(case), "--format", "json"))
