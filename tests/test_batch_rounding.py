"""The batch rounding of balls in float64 (derive/rounding.py ``format_balls``).

The batch may leave any value to the per-value path (None), but a text it gives must be
the one :func:`format_value` gives. Hypothesis draws balls near the rounding boundaries
(k + 1/2) / 10^p and k / 10^p, exact balls on ties, wide balls, balls straddling zero,
huge and tiny exponents, non-finite balls and exact rationals; and, so that a batch which
decides nothing fails too, every ball whose distance to the nearest boundary, computed
exactly in rationals, is clearly more than its radius must be decided. Then hand-made
balls with their right texts, and the Rounder with the batch on and off (the same texts
in the same order, a value decided in a later pass last, the progress meter advanced
once a quantity).
"""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace
from unittest import mock

import pytest
from flint import arb, ctx, fmpq, fmpz
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from examples import examples

import derive.rounding as rounding
from derive.case import load_case
from derive.decimals import Rounder
from derive.derivation import derive
from derive.evaluate import Progress, reporting
from derive.rounding import MINUS, MODES, Format, format_balls, format_value
from derive.steps import Ref

HALF_MODES = ("half-away", "half-even")


def batch(values, fmt):
    """format_balls on a list of any length (the size threshold lifted)."""
    with mock.patch.object(rounding, "BATCH_MIN", 0):
        return format_balls(list(values), fmt)


def exact(x: arb) -> fmpq:
    """The exact midpoint of an arb as an fmpq."""
    m, e = x.mid().man_exp()
    return fmpq(m) * fmpq(2) ** int(e) if e >= 0 else fmpq(m, fmpz(2) ** int(-e))


def distance_to_boundary(y: fmpq, mode: str) -> fmpq:
    """Exact distance from y to the nearest rounding boundary of ``mode`` (half-integers
    in the half modes, integers in the directed ones)."""
    frac = y - fmpq(y.floor())  # in [0, 1)
    if mode in HALF_MODES:
        return abs(frac - fmpq(1, 2))
    return min(frac, 1 - frac)


# =========================================================================== draws


@st.composite
def balls(draw, places):
    """One arb ball, drawn to test the batch near its edges."""
    kind = draw(st.sampled_from(["boundary", "dyadic boundary", "random", "wide", "around zero"]))
    prec = draw(st.sampled_from([53, 64, 128, 300]))
    scale = fmpq(10) ** places
    if kind == "boundary":  # (k + 1/2) / 10^p or k / 10^p, moved by a tiny offset (or none)
        k = draw(st.integers(-(10**7), 10**7) | st.integers(-(2**60), 2**60))
        mid = (fmpq(k) + draw(st.sampled_from([fmpq(1, 2), fmpq(0)]))) / scale
        e = draw(st.integers(10, 200))
        mid += draw(st.sampled_from([0, 1, -1])) * fmpq(1, fmpz(2) ** e)
    elif kind == "dyadic boundary":
        # exact balls: j / 2^(p+1) (j odd) is a tie at p places, j / 2^p a boundary of the directed modes
        j = draw(st.integers(-(10**6), 10**6))
        mid = fmpq(2 * j + 1, fmpz(2) ** (places + 1)) if draw(st.booleans()) else fmpq(j, fmpz(2) ** places)
        prec = 300
    elif kind == "random":  # any magnitude, subnormal and beyond the doubles' range included
        man = draw(st.integers(-(2**64), 2**64))
        e = draw(st.integers(-1200, 200))
        mid = fmpq(man) * fmpq(2) ** e if e >= 0 else fmpq(man, fmpz(2) ** -e)
    elif kind == "wide":
        mid = fmpq(draw(st.integers(-(10**6), 10**6)), draw(st.integers(1, 10**4)))
    else:  # around zero: a small midpoint, maybe within its radius of 0
        mid = fmpq(draw(st.integers(-1000, 1000)), fmpz(2) ** draw(st.integers(0, 1100)))
    with ctx.workprec(prec):
        m = arb(mid).mid()  # (exact: the midpoint rounded to prec bits)
    radius = draw(st.sampled_from([None, "small", "any"]))
    if radius is None or kind == "dyadic boundary" and draw(st.booleans()):
        return m
    lo, hi = ((-60, 5) if kind in ("wide", "around zero") else (-1200, -20)) if radius == "any" else (-400, -100)
    return arb(m, arb(2) ** draw(st.integers(lo, hi)))


formats = st.builds(
    Format,
    places=st.sampled_from([0, 0, 1, 2, 3, 3, 3, 4, 6, 12, 20, 30]),
    mode=st.sampled_from(MODES),
    signed_zero=st.booleans(),
    minus=st.sampled_from(["-", MINUS]),
)


@settings(max_examples=examples(1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), fmt=formats)
def test_batch_gives_the_per_value_text(data, fmt):
    values = data.draw(st.lists(balls(fmt.places), min_size=1, max_size=6))
    got = batch(values, fmt)
    assert len(got) == len(values)
    scale = fmpq(10) ** fmt.places
    for x, text in zip(values, got):
        if text is not None:
            event("decided")
            assert text == format_value(x, fmt), (x, fmt)
            continue
        event("left to the per-value path")
        # It may leave a ball only within 2^-48 |y| + 2^-29 of a boundary past four times its
        # radius (the radius it reads is a power of two above |m| 2^-accuracy), beyond 2^40
        # units of the last place, a zero whose sign is asked for, or an inexact ball whose
        # midpoint is below the doubles' normal range.
        m, y, r = exact(x), exact(x) * scale, exact(x.rad()) * scale
        if abs(y) >= 2**40 or (fmt.signed_zero and abs(y) < 1) or (r and abs(m) < fmpq(1, 2**1022)):
            continue
        near = distance_to_boundary(y, fmt.mode) - 4 * r * (1 + fmpq(1, 2**19))
        assert near <= abs(y) / 2**48 + fmpq(1, 2**29), (x, fmt)


def test_batch_leaves_rationals_non_finite_balls_and_sig_formats():
    values = [fmpq(1, 3), Fraction(2, 3), arb.nan(), arb.pos_inf(), arb(1, float("inf")), arb(1) / 3]
    assert batch(values, Format()) == [None] * 5 + ["0.333"]
    assert batch([arb(1) / 3], Format(places=None, sig=3)) == [None]


# =========================================================================== hand-made


@pytest.mark.parametrize(
    "mode, expected",
    [
        ("half-away", [None, None, "0.125"]),
        ("half-even", [None, None, "0.125"]),
        ("floor", ["0.062", "0.000", None]),
        ("ceiling", ["0.063", "0.001", None]),
        ("down", ["0.062", "0.000", None]),
    ],
)
def test_boundaries_are_left_to_the_per_value_path(mode, expected):
    """At 3 places: 0.0625 = 1/16 (an exact ball) is a tie of the half modes (62.5
    thousandths); 0.0005 as a narrow ball holds the tie 0.0005; 0.125 = 1/8 is exactly on
    a boundary of the directed modes. In the other modes each is decided."""
    tie = arb(1) / 16
    around = arb(fmpq(5, 10000), arb(2) ** -200)
    on = arb(1) / 8
    assert batch([tie, around, on], Format(places=3, mode=mode)) == expected


@pytest.mark.parametrize(
    "value, fmt, expected",
    [
        (arb(1) / 3, Format(), "0.333"),
        (-arb(2) / 3, Format(), "-0.667"),
        (-arb(2) / 3, Format(minus=MINUS), MINUS + "0.667"),
        (arb(2) / 3, Format(places=0), "1"),
        (arb(123456789) / 7, Format(places=2), "17636684.14"),  # 17636684.142857...
        (arb(1) / 3, Format(places=12), "0.333333333333"),
        (arb(1) / 3, Format(places=20), None),  # 3.3e19 units of the last place: beyond 2^48
        (-arb(1) / 3, Format(places=3, mode="floor"), "-0.334"),
        (-arb(1) / 3, Format(places=3, mode="ceiling"), "-0.333"),
        (-arb(1) / 3, Format(places=3, mode="down"), "-0.333"),
        (arb(2) / 3, Format(places=3, mode="down"), "0.666"),
        (-arb(1) / 3000, Format(), "0.000"),  # -0.000333...: a zero, unsigned
        (-arb(1) / 3000, Format(signed_zero=True), None),  # its sign is left to the per-value path
        (arb(2) ** -1100, Format(), "0.000"),  # below the doubles' range
        (arb(arb(2) ** -1080, arb(2) ** -58), Format(places=20), None),  # +- 347 units; its midpoint reads as 0.0
        (arb(10) ** 20 / 3, Format(), None),  # 3.3e19 thousandths: beyond 2^48
        (arb(1, 1e-3), Format(), None),  # 1 +- 0.001 straddles 1.0005 and 0.9995
        (arb(1, 1e-5), Format(), "1.000"),
    ],
)
def test_hand_made_balls(value, fmt, expected):
    assert batch([value], fmt) == [expected]


# =========================================================================== the Rounder


@pytest.fixture(scope="module")
def climbed():
    return derive(load_case("cat-climbed"))


class Counter(Progress):
    def __init__(self):
        self.done = 0

    def advance(self, n: int = 1) -> None:
        self.done += n


@pytest.mark.parametrize("fmt", [Format(), Format(places=5, mode="half-even"), Format(places=0),
                                 Format(places=3, signed_zero=True), Format(places=4, mode="floor"),
                                 Format(places=2, mode="down", minus=MINUS)])
def test_rounder_with_and_without_the_batch(climbed, fmt):
    """Every quantity of the seed, rounded with the batch and one by one: the same texts in
    the same order, the progress meter advanced once for each; and the batch decides most."""
    refs = climbed.quantities()
    with mock.patch.object(rounding, "BATCH_MIN", 10**9):
        one_by_one = climbed.rounder.decimals(refs, fmt)
    meter = Counter()
    with mock.patch.object(rounding, "BATCH_MIN", 0), reporting(meter):
        batched = climbed.rounder.decimals(refs, fmt)
    assert list(batched.items()) == list(one_by_one.items())
    assert meter.done == len(batched)
    values = list(climbed.evaluator.values(list(batched)))
    decided = sum(t is not None for t in batch(values, fmt))
    assert decided > 0.5 * sum(type(v) is arb for v in values)


class Stub:
    """An evaluator whose values are given as functions of the precision (bits)."""

    def __init__(self, values: dict):
        self.given = values

    def evaluation(self, prec: int):
        return SimpleNamespace(prec=prec)

    def values(self, refs, prec: int):
        return [self.given[ref](prec) for ref in refs]


class NoForms:
    def rational(self, node_id):
        return None


def test_a_ball_decided_in_a_later_pass_keeps_its_place():
    """0.3336 +- 2^-(prec - 120) holds the boundary 0.3335 at 128 bits (+- 0.0039) and is
    decided at 256 bits (0.334): it keeps its place in the dict (the order of the refs),
    with the batch as without it; 1/7 = 0.142857..., 2/3, the rational -5/8."""
    wide = Ref("before", 0)
    given = {wide: lambda prec: arb(fmpq(3336, 10000), arb(2) ** (120 - prec)),
             Ref("before", 1): lambda prec: arb(1) / 7,
             Ref("before", 2): lambda prec: arb(2) / 3,
             Ref("before", 3): lambda prec: fmpq(-5, 8)}
    refs = list(given)
    for at_least in (0, 10**9):
        with mock.patch.object(rounding, "BATCH_MIN", at_least):
            got = Rounder(Stub(given), NoForms()).decimals(refs, Format())
        assert list(got.items()) == [(wide, "0.334"), (Ref("before", 1), "0.143"), (Ref("before", 2), "0.667"),
                                     (Ref("before", 3), "-0.625")]


def test_texts_in_the_order_asked_whichever_pass_decides():
    """The early exact path is bounded in CPU time, so under load a value on a rounding
    boundary (the seed's exact zeros, printed 0.000 with signed zeros) can be decided by a
    later pass instead; the texts still come in the order of the refs (a JSON export, the
    tests' comparisons). Here the early path has no time at all."""
    d = derive(load_case("cat-climbed"))
    refs = d.quantities()
    fmt = Format(places=3, signed_zero=True)
    with mock.patch("derive.decimals.EARLY_SECONDS", 0.0), mock.patch("derive.decimals.EARLY_TOTAL", 0.0):
        texts = d.rounder.decimals(refs, fmt)
    assert list(texts) == list(dict.fromkeys(refs))
    assert texts == derive(load_case("cat-climbed")).rounder.decimals(refs, fmt)
