"""Every number the page shows is printed whole, at any width (issue 10, first acceptance
bullet): for the bundled cases and seeded random cases (tests/random_cases.py), at
``--width`` 60, 80 and 200 and written to a file with ``-o`` (no width: what a pipe or a
file gets), each step's text holds, whole, the JSON ``decimal`` of every quantity the step
shows (as many times as it shows it), and no table cell holds "…".

Which records a step shows comes from the derivation's step model (its tables' and
equations' quantities, the same set ``derive run --step KEY --format json`` exports); the
numbers come from ``derive run CASE --format json``. A table that prints given weights as
they are (``short_exact``, the seed's E: ``-0.5``) is expected to show the exact value's
short decimal, computed here from the record's ``exact`` fraction. tests/test_rich_width.py
compares the widths with one another; this file compares each with the JSON.
"""

from __future__ import annotations

import re
from collections import Counter
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

import pytest

from documents import CASES, cli
from pages import case_path, records

from derive.case import load_case
from derive.cells import refs_of
from derive.derivation import derive

WIDTHS = ("60", "80", "200", "file")
DECIMAL = re.compile(r"[\u2212-]?\d+\.\d+(?:e[\u2212+-]?\d+)?")
STEP = re.compile(r"^Step (\d+)\. ", re.M)
QUICK = ["cat-climbed", "woodchuck", "random-6"]  # random-6: a tied W_U
BUNDLED = [c for c in CASES if c not in QUICK and c != "crane"]
RANDOM = [f"random-{seed}" for seed in range(1, 21) if seed != 6]


@lru_cache(maxsize=None)
def expected(case: str) -> dict[int, Counter]:
    """By step number (1-based): the decimals the step shows, counted, from the JSON."""
    d = derive(load_case(case_path(case)))
    json_records = records(case)
    refs = d.given() + d.quantities()  # the given weights' records first
    assert [d.meta(r).label for r in refs] == [r["label"] for r in json_records]  # the same order
    by_ref = dict(zip(refs, json_records))
    places = 3
    out = {}
    for number, step in enumerate(d.steps, 1):
        shown = Counter()
        for table in step.tables:
            for row in table.rows:
                for cell in row:
                    for ref in refs_of(cell):  # every number the page shows has a record
                        shown[_as_shown(by_ref[ref], table.short_exact, places)] += 1
        for eq in step.equations:
            for ref in refs_of(eq.rhs):
                shown[_as_shown(by_ref[ref], False, places)] += 1
        out[number] = shown
    return out


def _as_shown(record: dict, short_exact: bool, places: int) -> str:
    """The record's decimal as the page prints it: the JSON ``decimal``, or in a table of
    given weights the exact value's short decimal (``-0.5``) when it has one of 1 to
    ``places`` + 3 places."""
    if short_exact:
        try:
            q = Fraction(record["exact"])
        except ValueError:
            q = None
        for p in range(1, places + 4):  # whole up to 3 places more than the run's (crane's 0.484375)
            if q is not None and (q * 10 ** p).denominator == 1:
                return str((Decimal(q.numerator) / q.denominator).quantize(Decimal(1).scaleb(-p)))
    return record["decimal"]


def page_text(case: str, width: str, tmp_path) -> str:
    if width == "file":
        out = tmp_path / f"{case}.txt"
        cli("run", case_path(case), "-o", str(out))
        return out.read_text(encoding="utf-8")
    text = cli("run", case_path(case), "--width", width)
    assert max(map(len, text.splitlines())) <= int(width)
    return text


def check_whole(case: str, width: str, tmp_path) -> int:
    """Compare one page with the JSON, step by step; returns how many numbers it found."""
    text = page_text(case, width, tmp_path)
    cells = [c for line in text.splitlines() if line.startswith("\u2502") for c in line.split("\u2502")[1:-1]]
    cut = [c.strip() for c in cells if "\u2026" in c]
    assert not cut, f"{case} at {width}: cut cells {cut[:3]}"
    parts = STEP.split(text)[1:]  # number, body, number, body, ...
    steps = {int(n): body for n, body in zip(parts[::2], parts[1::2])}
    want = expected(case)
    assert set(steps) == set(want), f"{case} at {width}: steps {sorted(steps)} on the page, {sorted(want)} derived"
    found = 0
    for number, shown in want.items():
        printed = Counter(m.replace("\u2212", "-") for m in DECIMAL.findall(steps[number]))
        numbers = Counter({k: v for k, v in shown.items() if DECIMAL.fullmatch(k)})
        missing = numbers - printed
        # (a value on a rounding boundary is decided by the exact path within a CPU budget: the page's
        # process may print "undecided" where the JSON's decided it, or the other way, as the machine's
        # speed goes (random-18's W_Q_{2,1} after the step, 0.5625 on a tie, takes the exact path 2.5 s
        # on this machine against its 2 s): a number the JSON decided and the page did not stands where
        # the page says undecided; one the JSON left undecided is printed undecided or as a number)
        undecided = steps[number].count("undecided")
        assert sum(missing.values()) <= undecided, \
            f"{case} at {width}, step {number}: not printed whole: {list(missing.elements())[:5]}"
        left = sum((shown - numbers).values())  # the JSON's undecided values
        assert left <= undecided + sum((printed - numbers).values()), \
            f"{case} at {width}, step {number}: {left} undecided values neither printed undecided nor decided"
        found += sum(numbers.values())
    return found


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", QUICK)
def test_every_json_number_is_printed_whole(case, width, tmp_path):
    assert check_whole(case, width, tmp_path) > 100


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", BUNDLED + RANDOM)
def test_every_json_number_is_printed_whole_on_every_case(case, width, tmp_path):
    assert check_whole(case, width, tmp_path) > 0


@pytest.mark.slow
@pytest.mark.parametrize("width", ("80", "file"))
def test_crane_every_json_number_is_printed_whole(width, tmp_path):
    assert check_whole("crane", width, tmp_path) > 10000


def test_a_cut_number_is_caught(tmp_path, monkeypatch):
    """The check fails on a page whose number is cut: the seed's page with one cell's
    last digit replaced by "…"."""
    import test_whole_numbers as me

    real = me.page_text
    monkeypatch.setattr(me, "page_text", lambda c, w, t: real(c, w, t).replace("0.395", "0.39\u2026", 1))
    with pytest.raises(AssertionError, match="cut|not printed whole"):
        check_whole("cat-climbed", "200", tmp_path)
