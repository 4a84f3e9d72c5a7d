"""Issue 13, "Many places": the seed case at every --places and --sig up to 50.

`derive run cat-climbed --places 34` never finished (every quantity went to SymPy's exact
path when the starting precision was too narrow for the places asked). Here each places
and each sig from 1 to 50 is printed: no quantity is undecided, the whole page (notes
included) is written, and the loss L and p(␣roof) agree with tests/hand/hand_reference.py
(an independent forward pass: exact fractions and mpmath at 400 bits, about 120 digits).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from derive.case import load_case
from derive.cells import Printer
from derive.derivation import derive
from derive.page import render_steps
from derive.rounding import Format

sys.path.insert(0, str(Path(__file__).parent / "hand"))
import hand_reference as R  # noqa: E402


@pytest.fixture(scope="module")
def derivation():
    return derive(load_case("cat-climbed"))


@pytest.fixture(scope="module")
def reference():
    out = R.forward()
    return {"L": out["L"], "p": out["p"]["␣roof"]}


def _check(derivation, reference, fmt: Format):
    printer = Printer(derivation, fmt)
    assert not [r for r, t in printer.text.items() if "undecided" in t]
    render_steps(derivation, derivation.steps, printer)  # the page and its notes are written whole
    refs = {derivation.meta(r).label: r for r in printer.text if r.phase == "before"}
    return printer.text[refs["L"]], printer.text[refs["p(\u2423roof)"]]


QUICK_PLACES = [0, 3, 33, 34, 36, 50]
QUICK_SIG = [1, 3, 34, 50]


def _places(derivation, reference, places):
    L, p = _check(derivation, reference, Format(places=places))
    assert L.replace("\u2212", "-") == R.text(reference["L"], places)
    assert p == R.text(reference["p"], places)


def _sig(derivation, reference, sig):
    L, p = _check(derivation, reference, Format(places=None, sig=sig))
    # L = 0.928... and p = 0.395...: sig significant figures are sig places
    assert (L, p) == (R.text(reference["L"], sig), R.text(reference["p"], sig))


@pytest.mark.parametrize("places", QUICK_PLACES)
def test_places(derivation, reference, places):
    _places(derivation, reference, places)


@pytest.mark.parametrize("sig", QUICK_SIG)
def test_sig(derivation, reference, sig):
    _sig(derivation, reference, sig)


@pytest.mark.slow
@pytest.mark.parametrize("places", [p for p in range(51) if p not in QUICK_PLACES])
def test_every_places(derivation, reference, places):
    _places(derivation, reference, places)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [s for s in range(1, 51) if s not in QUICK_SIG])
def test_every_sig(derivation, reference, sig):
    _sig(derivation, reference, sig)
