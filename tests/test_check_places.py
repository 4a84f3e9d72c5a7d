"""derive check on derive's own chapters written with many places (a fresh user's report).

From 7 places on, a by-hand note writes the products of its printed inputs cut
(``1.7320393 · 1.6035583 - 0.5773464 · (-1.0690389) = 2.777425995… + 0.617205760… =
3.394631755…``): the side ``2.777425995… + 0.617205760…`` stands for every sum of numbers with
those digits, and the exact value of the left side must lie in it (such notes were judged
wrong at 7, 8, 9 and 12 places; at 27 to 30 places the check ended in a traceback, the
exact value's digits asked of too narrow a precision). A page at 50 places or 50 significant
figures (run's most) is judged; past 100 places a value is ``not checked`` with the reason.
The right values below are computed with Python's fractions and mpmath.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from derive.case import load_case
from derive.check import FAILING, Checker
from derive.derivation import derive

_DERIVED: dict = {}


def checker() -> Checker:
    """A checker of cat-climbed (derived once per session)."""
    if "cat-climbed" not in _DERIVED:
        _DERIVED["cat-climbed"] = derive(load_case("cat-climbed"))
    return Checker(_DERIVED["cat-climbed"])


def written(tmp_path: Path, command: str, options: list[str]) -> str:
    """cat-climbed as derive's CLI writes it."""
    out = tmp_path / ("chapter.md" if command == "markdown" else "chapter.txt")
    script = Path(sys.executable).with_name("derive")
    cli = [str(script)] if script.exists() else [sys.executable, "-m", "derive"]
    done = subprocess.run(cli + [command, "cat-climbed", "-o", str(out)] + options, capture_output=True,
                          text=True, env=dict(os.environ, COLUMNS="200"), timeout=600)
    assert done.returncode == 0, done.stderr
    return out.read_text(encoding="utf-8")


def note_lines(text: str) -> set[int]:
    """The 1-based lines holding a by-hand note (Markdown's and the terminal's)."""
    return {k + 1 for k, line in enumerate(text.splitlines()) if "from the printed inputs" in line}


@pytest.mark.parametrize("places", [7, 9, 12, 30])
def test_notes_at_many_places_are_explained(tmp_path, places):
    text = written(tmp_path, "markdown", ["--places", str(places)])
    verdicts = checker().check_text(text)
    bad = [(v.line, v.status, v.message) for v in verdicts if v.status in FAILING]
    assert not bad, bad[:3]
    notes = note_lines(text)
    assert len(notes) >= 10  # the chapter writes its notes (so the check below is not empty)
    judged = {v.line: v.status for v in verdicts if v.line in notes}
    assert judged.keys() == notes and set(judged.values()) == {"explained"}, judged


@pytest.mark.parametrize("options", [["--places", "50"], ["--sig", "50"]])
def test_a_page_at_50_places_or_figures_is_checked(tmp_path, options):
    """`derive run` prints up to 50 places (or 50 significant figures: 0.0106... then has 51
    places); check judged at most 30 and left every note of such a page `not checked` (a
    user trial). Now each is judged: its values correct and its notes explained."""
    text = written(tmp_path, "run", options)
    verdicts = checker().check_text(text)
    bad = [(v.line, v.status, v.message) for v in verdicts if v.status in FAILING or v.status == "not checked"]
    assert not bad, bad[:3]
    notes = note_lines(text)
    assert len(notes) >= 10
    judged = {v.line: v.status for v in verdicts if v.line in notes}
    assert judged.keys() == notes and set(judged.values()) == {"explained"}, judged


def test_values_to_100_places_are_judged_and_past_them_not_checked():
    """sigma_5 = sqrt(750010)/1000 (the README's exact form), to 50, 100 and 101 places by
    mpmath (at most 100 places: 50 significant figures of a value of 1e-50)."""
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(130):
        sigma = mpmath.sqrt(750010) / 1000
        at = {n: mpmath.nstr(sigma, n, strip_zeros=False) for n in (50, 100, 101)}  # (0.866...: n places)
    assert at[50].startswith("0.86603") and len(at[50]) == 52
    for n in (50, 100):
        right = checker().check_text(f"sigma_5 = {at[n]}")[0]
        assert right.status == "correct", right.message
    last = int(at[50][-1])
    wrong = checker().check_text(f"sigma_5 = {at[50][:-1]}{(last + 1) % 10}")[0]
    assert wrong.status == "wrong", wrong.message
    past = checker().check_text(f"sigma_5 = {at[101]}")[0]
    assert past.status == "not checked" and "101 places (derive judges at most 100)" in past.message, past.message


NOTE = r"<sup>c</sup> $q_{5} \cdot k_{3}$: from the printed inputs, $%s$, which rounds to $%s$."


def test_a_sum_of_cut_products():
    """1.7320393 · 1.6035583 = 2.77742599544119 and 0.5773464 · 1.0690389 = 0.61720576037496
    (fractions): the cut digits 2.777425995… and 0.617205760… hold, their sum 3.39463175581615
    rounds to 3.3946318; a product cut to 2.777425985… is wrong. With one-digit cuts,
    0.5 · 0.5 + 0.5 · 0.46 = 0.48 rounds to 0.5, not 0.4 (though 0.2… + 0.2… = 0.4… holds for
    sums from 0.4 to 0.6: the rounding is of the full value, 0.48)."""
    first, second = Fraction("1.7320393") * Fraction("1.6035583"), Fraction("0.5773464") * Fraction("1.0690389")
    assert (first, second) == (Fraction("2.77742599544119"), Fraction("0.61720576037496"))
    assert round((first + second) * 10 ** 7) == 33946318
    assert round(Fraction("0.48") * 10) == 5
    left = r"1.7320393 \cdot 1.6035583 - 0.5773464 \cdot (-1.0690389)"

    def status(formula: str, rounded: str) -> str:
        verdicts = checker().check_text(NOTE % (formula, rounded))
        assert len(verdicts) == 1, verdicts
        return verdicts[0].status

    assert status(left + r" = 2.777425995\ldots + 0.617205760\ldots = 3.394631755\ldots", "3.3946318") == "explained"
    assert status(left + r" = 2.777425985\ldots + 0.617205760\ldots = 3.394631745\ldots", "3.3946317") == "wrong"
    assert status(left + r" = 2.777425995\ldots + 0.617205760\ldots = 3.394631755\ldots", "3.3946317") == "wrong"
    halves = r"0.5 \cdot 0.5 + 0.5 \cdot 0.46 = 0.2\ldots + 0.2\ldots = 0.4\ldots"
    assert status(halves, "0.5") == "explained"
    assert status(halves, "0.4") == "wrong"
