"""Correct rounding (derive/rounding.py, DESIGN.md "Correct rounding").

Three layers:

1. the acceptance examples and the directed modes, as exact expected strings;
2. a hypothesis property test: random compositions of exp, sqrt, tanh, erf and sin of
   rationals, evaluated as python-flint balls, rounded by derive and compared with an
   independent reference (mpmath at 100 digits, rounded with ``Decimal.quantize``). A
   ``None`` ("undecided") from derive is accepted only when the value genuinely lies within
   the ball's width of a rounding boundary. Each example also builds a value within 1e-30
   of a boundary: at a low working precision derive must give the right digits or None,
   never a wrong digit; at 400 bits it must decide, and be right;
3. exact rationals (``Fraction``), ties included, against a reference in Python integers.
"""

from __future__ import annotations

import decimal
import math
from decimal import ROUND_CEILING, ROUND_DOWN, ROUND_FLOOR, ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from fractions import Fraction

import mpmath
import pytest
from flint import arb, ctx, fmpq
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from examples import examples

from derive.rounding import (
    MINUS,
    MODES,
    Format,
    format_ball,
    format_fraction,
    format_value,
    round_ball_to_int,
    round_fraction_to_int,
)

PROPERTY = settings(max_examples=10000, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def places(n, mode="half-away", **kw):
    return Format(places=n, mode=mode, **kw)


def sig(n, mode="half-away", **kw):
    return Format(places=None, sig=n, mode=mode, **kw)


def ball(expr, prec=53):
    """Evaluate ``expr()`` (building arb balls) at ``prec`` bits."""
    with ctx.workprec(prec):
        return expr()


# =========================================================================== 1. examples


@pytest.mark.parametrize(
    "value, fmt, expected",
    [
        # exactly on a tie: decided on the exact path, by the mode
        (Fraction("0.0625"), places(3, "half-away"), "0.063"),
        (Fraction("0.0625"), places(3, "half-even"), "0.062"),
        (fmpq(1, 16), places(3, "half-away"), "0.063"),
        (fmpq(1, 16), places(3, "half-even"), "0.062"),
        (Fraction("2.675"), places(2), "2.68"),
        (Fraction("2.675"), places(2, "half-even"), "2.68"),
        (Fraction("-2.675"), places(2), "-2.68"),
        (Fraction("-2.665"), places(2, "half-even"), "-2.66"),
        (Fraction(1, 200), places(2, "half-away"), "0.01"),
        (Fraction(1, 200), places(2, "half-even"), "0.00"),
        (fmpq(1, 200), places(2, "half-away"), "0.01"),
        (fmpq(1, 200), places(2, "half-even"), "0.00"),
        (Fraction(-1, 200), places(2, "half-away"), "-0.01"),
        # negative zero
        (Fraction("-0.0004"), places(3), "0.000"),
        (Fraction("-0.0004"), places(3, signed_zero=True), "-0.000"),
        (Fraction("-0.0004"), places(3, signed_zero=True, minus=MINUS), MINUS + "0.000"),
        (Fraction("0.0004"), places(3, signed_zero=True), "0.000"),
        (Fraction(0), places(3, signed_zero=True), "0.000"),
        (Fraction("-0.0004"), places(3, "ceiling", signed_zero=True), "-0.000"),
        (Fraction("-0.0004"), places(3, "down", signed_zero=True), "-0.000"),
        (Fraction("-0.0004"), places(3, "floor", signed_zero=True), "-0.001"),
        # trailing zeros kept
        (Fraction(1, 2), places(3), "0.500"),
        (Fraction(5), places(2), "5.00"),
        (Fraction(5), places(0), "5"),
        (Fraction(1, 8), sig(4), "0.1250"),
        (Fraction(2), sig(3), "2.00"),
        (Fraction(3), sig(1), "3"),
        (Fraction(0), sig(3), "0.00"),
        # directed modes, exact values
        (Fraction("2.3456"), places(2, "down"), "2.34"),
        (Fraction("2.3456"), places(2, "floor"), "2.34"),
        (Fraction("2.3456"), places(2, "ceiling"), "2.35"),
        (Fraction("-2.3456"), places(2, "down"), "-2.34"),
        (Fraction("-2.3456"), places(2, "floor"), "-2.35"),
        (Fraction("-2.3456"), places(2, "ceiling"), "-2.34"),
        (Fraction("2.34"), places(2, "ceiling"), "2.34"),  # on the grid: no bump
        (Fraction("-2.34"), places(2, "floor"), "-2.34"),
        (Fraction("2.3456"), sig(2, "ceiling"), "2.4"),
        (Fraction("-2.3456"), sig(2, "floor"), "-2.4"),
        (Fraction("-2.3456"), sig(2, "down"), "-2.3"),
        # significant figures rounding up into the next decade
        (Fraction("9.9996"), sig(4), "10.00"),
        (Fraction("-9.9996"), sig(4), "-10.00"),
        (Fraction("9.9996"), sig(4, "half-even"), "10.00"),
        (Fraction("9.9996"), sig(4, "ceiling"), "10.00"),
        (Fraction("9.9996"), sig(4, "floor"), "9.999"),
        (Fraction("9.9996"), sig(4, "down"), "9.999"),
        (Fraction("-9.9996"), sig(4, "floor"), "-10.00"),
        (Fraction("-9.9996"), sig(4, "ceiling"), "-9.999"),
        (Fraction("99999.5"), sig(5), "1.0000e5"),
        (Fraction("0.000099996"), sig(4), "0.0001000"),
        (Fraction("0.0000099996"), sig(4), "0.00001000"),
        (Fraction("0.00000099996"), sig(4), "1.000e-6"),
        (Fraction("-0.00000099996"), sig(4, minus=MINUS), MINUS + "1.000e" + MINUS + "6"),
        (Fraction(12345), sig(3), "1.23e4"),
        (Fraction(999), sig(3), "999"),
    ],
)
def test_exact_examples(value, fmt, expected):
    assert format_value(value, fmt) == expected


@pytest.mark.parametrize(
    "expr, fmt, expected",
    [
        (lambda: arb(3).sqrt() / 2, places(4), "0.8660"),
        (lambda: arb(3).sqrt() / 2, places(4, "half-even"), "0.8660"),
        (lambda: arb(3).sqrt() / 2, places(4, "down"), "0.8660"),
        (lambda: arb(3).sqrt() / 2, places(4, "ceiling"), "0.8661"),
        (lambda: -arb(3).sqrt() / 2, places(4, "floor"), "-0.8661"),
        (lambda: arb(1000).exp(), sig(5), "1.9701e434"),
        (lambda: -arb(1000).exp(), sig(5, minus=MINUS), MINUS + "1.9701e434"),
        (lambda: arb(-1000).exp(), sig(3), "5.08e-435"),
        # directed modes on balls
        (lambda: arb.pi(), places(4), "3.1416"),
        (lambda: arb.pi(), places(4, "down"), "3.1415"),
        (lambda: arb.pi(), places(4, "floor"), "3.1415"),
        (lambda: arb.pi(), places(4, "ceiling"), "3.1416"),
        (lambda: -arb.pi(), places(4), "-3.1416"),
        (lambda: -arb.pi(), places(4, "down"), "-3.1415"),
        (lambda: -arb.pi(), places(4, "floor"), "-3.1416"),
        (lambda: -arb.pi(), places(4, "ceiling"), "-3.1415"),
        (lambda: -arb.pi(), sig(3, "ceiling"), "-3.14"),
        (lambda: -arb.pi(), sig(3, "floor"), "-3.15"),
        # negative zero from a ball
        (lambda: arb(-4) / 10000 * arb(2).sqrt() / arb(2).sqrt(), places(3), "0.000"),
        (lambda: arb(-4) / 10000 * arb(2).sqrt() / arb(2).sqrt(), places(3, signed_zero=True), "-0.000"),
        # a ball that contains 0: the sign of a zero is unknown
        (lambda: arb(2).sqrt() - arb(2).sqrt(), places(3), "0.000"),
        (lambda: arb(2).sqrt() - arb(2).sqrt(), places(3, "down"), "0.000"),
        (lambda: arb(2).sqrt() - arb(2).sqrt(), places(3, signed_zero=True), None),
        (lambda: arb(2).sqrt() - arb(2).sqrt(), places(3, "floor"), None),
        # 9.9996 as a ball rounds up into the next decade
        (lambda: arb(99996) / 10000, sig(4), "10.00"),
        (lambda: -arb(99996) / 10000, sig(4), "-10.00"),
        (lambda: arb(99996) / 10000, sig(4, "floor"), "9.999"),
        # a binary double is exact: 2.675 as a double is 2.67499999999999982236431605997495353221893310546875
        (lambda: arb(2.675), places(2), "2.67"),
        # exactly on a tie but inexact as a ball: never decided numerically (DESIGN item 2) ...
        (lambda: arb(fmpq(1, 200)), places(2), None),
        (lambda: arb(fmpq(1, 200)), places(2, "half-even"), None),
        # ... though a directed mode, for which 0.005 is no boundary, decides it
        (lambda: arb(fmpq(1, 200)), places(2, "down"), "0.00"),
        (lambda: arb(fmpq(1, 200)), places(2, "ceiling"), "0.01"),
        (lambda: arb(fmpq(1, 16)), places(3), "0.063"),  # dyadic: exact ball, exact path
    ],
)
def test_ball_examples(expr, fmt, expected):
    assert format_ball(ball(expr), fmt) == expected
    assert format_value(ball(expr), fmt) == expected


def test_inexact_tie_stays_undecided_at_high_precision():
    for prec in (53, 200, 1000):
        assert format_ball(ball(lambda: arb(fmpq(1, 200)), prec), places(2)) is None
        assert format_ball(ball(lambda: arb(fmpq(1, 16)) * arb(3).sqrt() ** 2 / 3, prec), places(3)) is None


# Regression: a ball that straddles a power of ten. In the half modes a power of ten is no
# rounding boundary (the neighbours are 10^k - u/2 below and 10^k + 10u/2 above, with u
# the unit of the last place below 10^k), so the digits are decided; derive used to return
# None for every such ball, at every precision (e.g. a value that is exactly 1000 but
# computed as a ball, to 4 significant figures).
@pytest.mark.parametrize("prec", [53, 200, 400])
def test_ball_across_power_of_ten(prec):
    thousand = ball(lambda: arb(2).sqrt() ** 2 * 500, prec)
    assert thousand.contains(1000) and not thousand.is_exact()
    assert format_ball(thousand, sig(4)) == "1000"
    assert format_ball(thousand, sig(4, "half-even")) == "1000"
    assert format_ball(-thousand, sig(4)) == "-1000"
    assert format_ball(thousand, sig(2)) == "1.0e3"
    assert format_ball(thousand, sig(8, minus=MINUS)) == "1000.0000"
    # for the directed modes it is a boundary: undecided, never guessed
    for mode in ("down", "floor", "ceiling"):
        assert format_ball(thousand, sig(4, mode)) is None
        assert format_ball(-thousand, sig(4, mode)) is None
    milli = ball(lambda: arb(3).sqrt() ** 2 / 3000, prec)  # 10^-3, a negative power
    assert ball(lambda: milli.overlaps(arb(1) / 1000), prec) and not milli.is_exact()
    assert format_ball(milli, sig(2)) == "0.0010"
    assert format_ball(-milli, sig(3, "half-even")) == "-0.00100"
    assert format_ball(milli, sig(2, "floor")) is None
    # places mode was already right
    assert format_ball(thousand, places(2)) == "1000.00"


def test_ball_across_power_of_ten_too_wide():
    # 999.94 rounds to 999.9 and 1000.1 to 1000 at 4 figures: undecided
    assert format_ball(arb("1000.02 +/- 0.08"), sig(4)) is None
    # below: within half a unit (0.05) of 1000; above: within half a unit (0.5) of 1000
    assert format_ball(arb("1000.2 +/- 0.23"), sig(4)) == "1000"  # 999.97 .. 1000.43
    assert format_ball(arb("1000.27 +/- 0.3"), sig(4)) is None  # reaches 1000.57
    assert format_ball(arb("1000 +/- 0.06"), sig(4)) is None  # reaches 999.94


# Regression: a NaN or infinite ball (sqrt of a ball around 0 that dips below it, a
# division by a ball containing 0) used to raise TypeError / ValueError in places mode.
@pytest.mark.parametrize(
    "expr",
    [
        lambda: arb.nan(),
        lambda: arb.pos_inf(),
        lambda: arb.neg_inf(),
        lambda: arb("1 +/- inf"),
        lambda: (arb(2).sqrt() - arb(2).sqrt()).sqrt(),
        lambda: arb(1) / (arb(2).sqrt() - arb(2).sqrt()),
    ],
)
@pytest.mark.parametrize("fmt", [places(3), places(0, "floor"), sig(3), sig(2, "down", signed_zero=True)])
def test_non_finite_ball_is_undecided(expr, fmt):
    assert format_ball(ball(expr), fmt) is None


def test_format_validation():
    with pytest.raises(ValueError):
        Format(mode="nearest")
    with pytest.raises(ValueError):
        Format(places=None, sig=None)
    with pytest.raises(ValueError):
        Format(places=2, sig=3)
    with pytest.raises(ValueError):
        Format(places=None, sig=0)
    with pytest.raises(ValueError):
        Format(places=-1)


# =========================================================================== references

DECIMAL_ROUNDING = {
    "half-away": ROUND_HALF_UP,  # Decimal's HALF_UP is half away from zero
    "half-even": ROUND_HALF_EVEN,
    "down": ROUND_DOWN,
    "floor": ROUND_FLOOR,
    "ceiling": ROUND_CEILING,
}
DEC = decimal.Context(prec=5000, Emax=10**6, Emin=-(10**6))  # abs(), +, format: mind the default 28 digits


def decimal_reference(dv: Decimal, fmt: Format) -> str:
    """Round the decimal ``dv`` under ``fmt`` with ``Decimal.quantize`` and print it."""
    rounding = DECIMAL_ROUNDING[fmt.mode]
    if fmt.places is not None:
        r = dv.quantize(Decimal(1).scaleb(-fmt.places, DEC), rounding=rounding, context=DEC)
        negative = r < 0 or (r == 0 and dv < 0 and fmt.signed_zero)
        return (fmt.minus if negative else "") + format(r.copy_abs(), "f")
    if dv == 0:
        return "0" + ("." + "0" * (fmt.sig - 1) if fmt.sig > 1 else "")
    e = dv.adjusted()
    r = dv.quantize(Decimal(1).scaleb(e - fmt.sig + 1, DEC), rounding=rounding, context=DEC)
    if r.copy_abs() >= Decimal(1).scaleb(e + 1, DEC):
        e += 1
        r = r.quantize(Decimal(1).scaleb(e - fmt.sig + 1, DEC), context=DEC)
    sign = fmt.minus if r < 0 else ""
    if -5 <= e < fmt.sig:
        return sign + format(r.copy_abs(), "f")
    digits = "".join(map(str, r.copy_abs().as_tuple().digits))
    assert len(digits) == fmt.sig
    mantissa = digits[0] + ("." + digits[1:] if fmt.sig > 1 else "")
    return sign + mantissa + "e" + (fmt.minus + str(-e) if e < 0 else str(e))


def _round_magnitude(a: int, b: int, mode: str, negative: bool) -> int:
    """|value| = a/b (a >= 0, b > 0) rounded to an integer magnitude; the sign is applied
    by the caller. Written on magnitudes, unlike derive's floor-based code."""
    q, r = a // b, a % b
    if r == 0:
        return q
    if mode in ("half-away", "half-even"):
        if 2 * r != b:
            return q + (2 * r > b)
        return q + 1 if mode == "half-away" or q % 2 == 1 else q
    toward_zero = mode == "down" or (mode == "floor" and not negative) or (mode == "ceiling" and negative)
    return q if toward_zero else q + 1


def integer_reference(q: Fraction, fmt: Format) -> str:
    """Round the exact rational ``q`` under ``fmt`` in Python integers and print it."""
    negative = q < 0
    a, b = abs(q.numerator), q.denominator
    if fmt.places is not None:
        m = _round_magnitude(a * 10**fmt.places, b, fmt.mode, negative)
        digits = str(m).zfill(fmt.places + 1)
        body = digits[: len(digits) - fmt.places] + ("." + digits[-fmt.places :] if fmt.places else "")
        shown_negative = negative and (m != 0 or fmt.signed_zero)
        return (fmt.minus if shown_negative else "") + body
    if a == 0:
        return "0" + ("." + "0" * (fmt.sig - 1) if fmt.sig > 1 else "")
    e = 0  # 10^e <= a/b < 10^(e+1)
    while a * 10 ** max(-e, 0) < b * 10 ** max(e, 0):
        e -= 1
    while a * 10 ** max(-(e + 1), 0) >= b * 10 ** max(e + 1, 0):
        e += 1
    shift = fmt.sig - 1 - e
    m = _round_magnitude(a * 10 ** max(shift, 0), b * 10 ** max(-shift, 0), fmt.mode, negative)
    if m == 10**fmt.sig:
        m, e = 10 ** (fmt.sig - 1), e + 1
    assert 10 ** (fmt.sig - 1) <= m < 10**fmt.sig
    sign = fmt.minus if negative else ""
    digits = str(m)
    if -5 <= e < fmt.sig:
        point = e + 1  # digits before the point
        if point <= 0:
            return sign + "0." + "0" * (-point) + digits
        return sign + digits[:point] + ("." + digits[point:] if point < fmt.sig else "")
    mantissa = digits[0] + ("." + digits[1:] if fmt.sig > 1 else "")
    return sign + mantissa + "e" + (fmt.minus + str(-e) if e < 0 else str(e))


def test_references_agree_on_examples():
    # the two references agree with each other on a few hand cases
    for text, fmt, expected in [
        ("0.0625", places(3), "0.063"),
        ("0.0625", places(3, "half-even"), "0.062"),
        ("-0.0004", places(3, signed_zero=True), "-0.000"),
        ("9.9996", sig(4), "10.00"),
        ("-0.00000099996", sig(4, "floor"), "-1.000e-6"),
        ("123456", sig(2, "ceiling"), "1.3e5"),
    ]:
        assert decimal_reference(Decimal(text), fmt) == expected
        assert integer_reference(Fraction(text), fmt) == expected


def boundary_distance(v, fmt: Format):
    """Distance (mpf) from v to the nearest rounding boundary of ``fmt``: the points where
    the printed text changes. In places mode these are the grid j*10^-N (directed modes;
    for "down" not 0) or the half-grid (half modes), plus 0 when a signed zero is asked
    for. In sig mode, within each decade [10^k, 10^(k+1)) the grid of that decade's last
    place (directed modes, powers of ten included) or its half-grid (half modes: powers of
    ten are *not* boundaries)."""
    half = fmt.mode in ("half-away", "half-even")
    offset = mpmath.mpf(1) / 2 if half else 0
    if fmt.places is not None:
        step = mpmath.mpf(10) ** (-fmt.places)
        s = v / step - offset
        j = int(mpmath.floor(s))
        cands = [c for c in range(j - 1, j + 3) if not (c == 0 and fmt.mode == "down")]
        d = min(abs(s - c) for c in cands) * step
        return min(d, abs(v)) if fmt.signed_zero else d
    a = abs(v)
    if a == 0:
        return mpmath.mpf(0)
    e = int(mpmath.floor(mpmath.log10(a)))
    best = mpmath.inf
    lo_j, hi_j = 10 ** (fmt.sig - 1), (10**fmt.sig - 1 if half else 10**fmt.sig)
    for k in (e - 1, e, e + 1):
        step = mpmath.mpf(10) ** (k - fmt.sig + 1)
        s = a / step - offset
        j = int(mpmath.floor(s))
        for c in range(j - 1, j + 3):
            if lo_j <= c <= hi_j:
                best = min(best, abs(s - c) * step)
    return best


# =========================================================================== expressions

FUNCS = ("exp", "sqrt", "tanh", "erf", "sin")
LEAVES = st.sampled_from(sorted({Fraction(p, q) for p in range(-40, 41) for q in range(1, 25)}, key=lambda f: (abs(f), f)))


def bound(t) -> float:
    """A static upper bound of |value| (keeps exp arguments small)."""
    op = t[0]
    if op == "q":
        return abs(float(t[1]))
    if op == "exp":
        return math.exp(bound(t[1]))
    if op == "sqrt":
        return math.sqrt(bound(t[1]))
    if op in ("tanh", "erf", "sin"):
        return 1.0
    if op == "add":
        return bound(t[1]) + bound(t[2])
    if op == "mul":
        return bound(t[1]) * bound(t[2])
    raise AssertionError(op)


@st.composite
def trees(draw, depth, root=False):
    op = draw(st.sampled_from(FUNCS if root else ("q", "q") + FUNCS + ("add", "mul")))
    if op == "q" or depth == 0:
        return ("q", draw(LEAVES))
    if op in ("add", "mul"):
        return (op, draw(trees(depth - 1)), draw(trees(depth - 1)))
    child = draw(trees(depth - 1))
    if op == "exp" and bound(child) > 40:
        child = ("sin", child)
    return (op, child)


def eval_arb(t):
    op = t[0]
    if op == "q":
        return arb(fmpq(t[1].numerator, t[1].denominator))
    if op == "add":
        return eval_arb(t[1]) + eval_arb(t[2])
    if op == "mul":
        return eval_arb(t[1]) * eval_arb(t[2])
    x = eval_arb(t[1])
    if op == "sqrt":
        # abs() keeps the radius, so a ball around 0 would still dip below 0 (sqrt: NaN)
        return abs(x).nonnegative_part().sqrt()
    return getattr(x, op)()


def eval_mp(t):
    op = t[0]
    if op == "q":
        return mpmath.mpf(t[1].numerator) / t[1].denominator
    if op == "add":
        return eval_mp(t[1]) + eval_mp(t[2])
    if op == "mul":
        return eval_mp(t[1]) * eval_mp(t[2])
    x = eval_mp(t[1])
    if op == "sqrt":
        return mpmath.sqrt(abs(x))
    return getattr(mpmath, op)(x)


def show(t) -> str:
    if t[0] == "q":
        return f"({t[1]})"
    if t[0] in ("add", "mul"):
        return f"({show(t[1])} {'+' if t[0] == 'add' else '*'} {show(t[2])})"
    return f"{t[0]}{show(t[1])}" if t[1][0] == "q" else f"{t[0]}({show(t[1])})"


def _format(n: int, mode: str, flags: tuple[bool, str]) -> Format:
    """n in 0..6: places 0..6; n in 7..14: sig 1..8 (few draws: hypothesis's cost is per draw)."""
    signed_zero, minus = flags
    if n <= 6:
        return Format(places=n, mode=mode, signed_zero=signed_zero, minus=minus)
    return Format(places=None, sig=n - 6, mode=mode, signed_zero=signed_zero, minus=minus)


formats = st.builds(_format, st.integers(0, 14), st.sampled_from(MODES),
                    st.sampled_from([(False, "-"), (True, "-"), (False, MINUS), (True, MINUS)]))


def reference(value_mp, fmt: Format):
    """(expected text, distance to the nearest boundary, error bound, value at 100 digits).

    ``value_mp()`` evaluates the value with mpmath at the current precision; the value at
    100 digits is compared with the one at 120 to bound its error. The text is None when
    the reference itself cannot tell the side of a boundary."""
    with mpmath.workdps(120):
        fine = value_mp()
    with mpmath.workdps(100):
        v = value_mp()
        err = 10 * abs(v - fine) + abs(v) * mpmath.mpf(10) ** -97
        d = boundary_distance(v, fmt)
        text = None
        if d > 10 * err:
            text = decimal_reference(Decimal(mpmath.nstr(v, 110, min_fixed=1, max_fixed=0)), fmt)
    return text, d, err, v


def check(x: arb, prec: int, fmt: Format, value_mp, ref=None, label="") -> str | None:
    """Round ``x`` (evaluated at ``prec`` bits) with derive and check it against the
    reference (``ref``, or computed from ``value_mp``). Returns derive's text."""
    with ctx.workprec(prec):
        got = format_ball(x, fmt)
        assert format_value(x, fmt) == got
    note(f"prec={prec} fmt={fmt} x={x.str(40, radius=True)} derive={got!r}")
    if x.is_exact():
        expected = integer_reference(_arb_fraction(x), fmt)
        event(f"{label}exact ball")
        assert got == expected
        return got
    expected, d, err, v = ref or reference(value_mp, fmt)
    note(f"reference={expected!r} v={mpmath.nstr(v, 50)} distance={mpmath.nstr(d, 5)} err={mpmath.nstr(err, 5)}")
    if expected is None:
        # the value is (as far as 100 digits tell) on a boundary: only "undecided" is right
        event(f"{label}on a boundary")
        assert got is None
        return got
    if got is None:
        # undecided is allowed only within the ball's width of a boundary (plus the
        # relative rounding of derive's scaling at the working precision)
        rad = mpmath.mpf(x.rad().mid().str(20, radius=False)) * (1 + mpmath.mpf(10) ** -10)
        slack = (abs(v) + 1) * mpmath.mpf(2) ** (-(prec - 8))
        event(f"{label}undecided")
        assert d <= 2 * rad + slack + err, "undecided, but the ball is clear of every boundary"
        return got
    event(f"{label}decided")
    assert got == expected
    return got


def _arb_fraction(x: arb) -> Fraction:
    m, e = x.mid().man_exp()
    m, e = int(m), int(e)
    return Fraction(m * 2**e) if e >= 0 else Fraction(m, 2 ** (-e))


# =========================================================================== 2. properties

SCALES = st.builds(lambda p, q, k: Fraction(p, q) * Fraction(10) ** k,
                   st.integers(-99, 98).map(lambda p: p if p < 0 else p + 1),  # no 0
                   st.integers(1, 13), st.integers(-10, 12))
S2 = Fraction("1.4142135623730950488016887242096980785696")  # sqrt(2) - S2 ~ 7.2e-41

# where a near-boundary value sits: on a rounding boundary, on a point that is no boundary
# for the mode (the grid in the half modes, the half-grid in the directed ones), at 0, or
# at a power of ten (a boundary only for the directed modes in sig mode)
NEAR = st.tuples(
    st.sampled_from(["boundary", "boundary", "boundary", "grid", "zero", "pow10"]),
    st.one_of(st.integers(-20, 20), st.integers(-(10**7), 10**7)),  # grid index
    st.integers(-9, 12),  # decade
    st.sampled_from([1, -1]),  # sign of the boundary
    st.sampled_from([1, -1]),  # sign of the perturbation
    st.builds(Fraction, st.integers(1, 2000), st.integers(1000, 2000)),  # 1/2000 .. 2
    st.sampled_from(["exp70", "sqrt2", "residual"]),
)


def near_point(fmt: Format, where: str, j: int, k: int, bsign: int) -> Fraction:
    half = fmt.mode in ("half-away", "half-even")
    offset = Fraction(1, 2) if half == (where == "boundary") else 0
    if fmt.places is not None:
        if where == "zero":
            return Fraction(0)
        if where == "pow10":
            return bsign * Fraction(10) ** min(max(k, -fmt.places), 7)
        return (j + offset) * Fraction(1, 10**fmt.places)
    if where in ("zero", "pow10"):
        return bsign * Fraction(10) ** k
    first = 10 ** (fmt.sig - 1)  # j in first .. 10 * first - 1: within the decade
    return bsign * (first + abs(j) % (9 * first) + offset) * Fraction(10) ** (k - fmt.sig + 1)


@pytest.mark.slow  # 10,000 random compositions: the long fuzz run (CI runs it)
@PROPERTY
@given(
    tree=trees(3, root=True),
    scale=SCALES,
    fmt=formats,
    prec=st.sampled_from([200, 200, 200, 128, 64]),
    near=NEAR,
    near_prec=st.sampled_from([53, 64, 100, 128, 200]),
)
def test_random_compositions(tree, scale, fmt, prec, near, near_prec):
    """(a) scale * tree at ``prec`` bits; (b) a value b + r * tiny within 1e-30 of a point
    b chosen by ``near`` (tiny: exp(-70), sqrt(2) - S2, or tree - c with c the tree's value
    to 36 decimals): right digits or None at ``near_prec`` bits, right digits at 400."""
    note(f"value = {scale} * {show(tree)}")
    with ctx.workprec(prec):
        x = eval_arb(tree) * fmpq(scale.numerator, scale.denominator)
    check(x, prec, fmt, lambda: eval_mp(tree) * scale.numerator / scale.denominator, label="composition: ")

    where, j, k, bsign, sign, r, kind = near
    b, r = near_point(fmt, where, j, k, bsign), sign * r
    if kind == "residual":
        with mpmath.workdps(100):
            e_mp = eval_mp(tree)
            c = Fraction(int(mpmath.nint(e_mp * mpmath.mpf(10) ** 36)), 10**36)
            if abs(e_mp - mpmath.mpf(c.numerator) / c.denominator) < mpmath.mpf(10) ** -60:
                kind = "exp70"  # (nearly) rational: no residual to speak of
    note(f"near value = {b} + {r} * {kind}")

    def tiny_arb():
        if kind == "exp70":
            return arb(-70).exp()
        if kind == "sqrt2":
            return arb(2).sqrt() - arb(fmpq(S2.numerator, S2.denominator))
        return eval_arb(tree) - arb(fmpq(c.numerator, c.denominator))

    def tiny_mp():
        if kind == "exp70":
            return mpmath.exp(-70)
        if kind == "sqrt2":
            return mpmath.sqrt(2) - mpmath.mpf(S2.numerator) / S2.denominator
        return eval_mp(tree) - mpmath.mpf(c.numerator) / c.denominator

    def value_mp():
        return mpmath.mpf(b.numerator) / b.denominator + tiny_mp() * r.numerator / r.denominator

    def value_arb(p):
        with ctx.workprec(p):
            return arb(fmpq(b.numerator, b.denominator)) + tiny_arb() * fmpq(r.numerator, r.denominator)

    with mpmath.workdps(100):
        assert 0 < abs(value_mp() - mpmath.mpf(b.numerator) / b.denominator) < mpmath.mpf(10) ** -30
    ref = reference(value_mp, fmt)
    check(value_arb(near_prec), near_prec, fmt, value_mp, ref, label="near, low precision: ")
    # at 400 bits the ball is far narrower than the distance to the boundary: decided
    assert check(value_arb(400), 400, fmt, value_mp, ref, label="near, 400 bits: ") is not None


# =========================================================================== 2b. balls, by their endpoints
# A ball at fixed places against its two endpoints, read exactly as fractions: the ball
# decides the last digit iff no rounding boundary (a tie in the half modes, a grid point in
# the directed ones, not 0 for "down"; 0 too when a signed zero is asked for) lies in the
# closed interval, and then prints its midpoint's rounding. The balls are built to sit on a
# boundary, touch one with an endpoint (dyadic boundaries: the grid where 5^N divides it, the
# ties at 0 places, and 0), straddle it by a few ulps, or lie near 0.


def _holds_boundary(lo: Fraction, hi: Fraction, fmt: Format) -> bool:
    """Whether the closed interval [lo, hi] (already scaled by 10^places) holds a point
    where the rounded text changes (in floor and ceiling, written with math.floor/ceil)."""
    if fmt.signed_zero and lo <= 0 <= hi:
        return True
    if fmt.mode in ("half-away", "half-even"):
        return math.ceil(lo - Fraction(1, 2)) <= math.floor(hi - Fraction(1, 2))
    first, last = math.ceil(lo), math.floor(hi)  # the integers in [lo, hi]
    if fmt.mode == "down":
        return first <= last and not first == last == 0
    return first <= last


@st.composite
def dyadic_balls(draw, places: int):
    """(midpoint, radius asked for) as Fractions; the radius 0 for an exact ball, and for
    "touch" the midpoint is set against the radius the ball really gets (see _ball)."""
    kind = draw(st.sampled_from(["touch", "touch", "near", "near", "zero", "random", "exact"]))
    sign = draw(st.sampled_from([1, -1]))
    bits = draw(st.integers(1, 160))
    rad = Fraction(draw(st.integers(1, 2**30 - 1)), 2 ** draw(st.integers(bits, bits + 80)))
    if kind == "touch":  # a dyadic boundary t: i / 2^places is 5^places * i / 10^places
        t = Fraction(draw(st.one_of(st.integers(0, 4), st.integers(0, 10**6))), 2**places)
        if draw(st.booleans()):  # as wide as a unit: "down" around 0, reaching +-1
            rad = Fraction(draw(st.integers(1, 2**30 - 1)), 2**29)
        if places == 0 and draw(st.booleans()):
            t += Fraction(1, 2)  # a tie at 0 places
        return ("touch", sign * t, draw(st.sampled_from([1, -1])), rad)
    if kind == "near":  # a boundary or grid point j / 10^places or (j + 1/2) / 10^places, to `bits` bits
        j = Fraction(draw(st.integers(0, 10**6))) + draw(st.sampled_from([0, Fraction(1, 2)]))
        m = math.floor(sign * j / 10**places * 2**bits) + draw(st.integers(-3, 3))
        return ("near", Fraction(m, 2**bits), 0, rad)
    if kind == "zero":
        return ("zero", Fraction(draw(st.integers(-8, 8)), 2 ** draw(st.integers(0, 300))), 0, rad)
    m = Fraction(draw(st.integers(-(2**80), 2**80)), 2**bits)
    return ("random" if kind == "random" else "exact", m, 0, rad if kind == "random" else 0)


def _ball(kind: str, mid: Fraction, side: int, rad: Fraction) -> arb:
    """The arb ball: radius ``rad`` (arb rounds it up to its own 30-bit form), then the
    midpoint added exactly; for "touch", the midpoint is t + side * (the real radius), so
    one endpoint is exactly t."""
    prec = 64 + max(abs(mid.numerator).bit_length(), mid.denominator.bit_length()) + 400
    with ctx.workprec(prec):
        if rad == 0:
            x = arb(fmpq(mid.numerator, mid.denominator))
            assert x.is_exact()
            return x
        x = arb(0, fmpq(rad.numerator, rad.denominator))
        if kind == "touch":
            mid += side * _arb_fraction(x.rad())
        return x + fmpq(mid.numerator, mid.denominator)


@pytest.mark.parametrize("t, side, rad, fmt, expected", [
    (Fraction(5, 2), 1, Fraction(1, 8), places(0), None),  # [2.5, 2.75]: touches the tie 2.5
    (Fraction(5, 2), 1, Fraction(1, 8), places(0, "floor"), "2"),  # 2.5 is no boundary for floor
    (Fraction(2), 1, Fraction(1, 8), places(0, "floor"), None),  # [2, 2.25]: touches 2
    (Fraction(2), -1, Fraction(1, 8), places(0, "ceiling"), None),  # [1.75, 2]
    (Fraction(1), -1, Fraction(3, 4), places(0, "down"), None),  # [-0.5, 1]: touches 1
    (Fraction(-1), 1, Fraction(3, 4), places(0, "down"), None),  # [-1, 0.5]
    (Fraction(0), 1, Fraction(1, 4096), places(3, signed_zero=True), None),  # [0, 2^-11]: the sign of 0 unknown
    (Fraction(0), 1, Fraction(1, 4096), places(3), "0.000"),  # [0, 0.00049]: 0 is no boundary here
    (Fraction(1, 8), -1, Fraction(1, 2**20), places(3), "0.125"),  # 1/8 = 0.125 is a grid point, no tie
])
def test_ball_touching_a_boundary(t, side, rad, fmt, expected):
    """An endpoint exactly on a boundary decides nothing (the closed ball holds it); the
    integer itself (round_ball_to_int, no scaling to widen the ball) is decided likewise."""
    x = _ball("touch", t, side, rad)
    assert (_arb_fraction(x.mid()) - side * _arb_fraction(x.rad())) == t
    assert format_ball(x, fmt) == expected
    if fmt.places == 0:
        assert round_ball_to_int(x, fmt.mode) == (None if expected is None else int(expected))


@pytest.mark.parametrize("mid", [
    Fraction(7) + Fraction(1, 2**70), Fraction(-7) - Fraction(1, 2**70),  # the nearest double is the integer
    Fraction(7) - Fraction(1, 2**70), Fraction(2**60) + Fraction(1, 4), -Fraction(2**60) - Fraction(1, 4),  # beyond 2^52
    Fraction(2**52) - Fraction(1, 4), Fraction(-(2**52)) + Fraction(1, 3 * 2**40), Fraction(3, 8), Fraction(-3, 8),
    Fraction(2**1100) + Fraction(1, 4),  # past the doubles: float() is inf
])
@pytest.mark.parametrize("mode", MODES)
def test_integer_of_a_ball_near_an_integer(mid, mode):
    """round_ball_to_int of a ball 2^-90 wide within 2^-70 of an integer, or past 2^52 (or
    past the doubles), where a double cannot tell the integer below it: the exact rounding
    of its midpoint."""
    x = _ball("near", mid, 0, Fraction(1, 2**90))
    assert abs(_arb_fraction(x.mid()) - mid) <= _arb_fraction(x.rad()) < Fraction(1, 2**80)
    rounded = {"floor": math.floor, "ceiling": math.ceil, "down": math.trunc, "half-even": round,
               "half-away": lambda y: math.floor(y + Fraction(1, 2)) if y >= 0 else -math.floor(-y + Fraction(1, 2))}
    with ctx.workprec(2048):  # (the half modes add 1/2: at 53 bits that alone would widen the ball past the tie)
        assert round_ball_to_int(x, mode) == rounded[mode](mid)


@settings(max_examples=examples(2000), deadline=None)
@given(data=st.data(), places_=st.sampled_from([0, 0, 1, 2, 3, 3, 4, 6, 12, 30]), mode=st.sampled_from(MODES),
       signed_zero=st.booleans(), minus=st.sampled_from(["-", MINUS]), prec=st.sampled_from([53, 200]))
def test_balls_at_places_against_their_endpoints(data, places_, mode, signed_zero, minus, prec):
    fmt = Format(places=places_, mode=mode, signed_zero=signed_zero, minus=minus)
    kind, mid, side, rad = data.draw(dyadic_balls(places_))
    x = _ball(kind, mid, side, rad)
    with ctx.workprec(prec):  # (the caller's precision: format_ball raises it as the ball needs)
        got = format_ball(x, fmt)
        assert format_value(x, fmt) == got
    mid, rad = _arb_fraction(x.mid()), _arb_fraction(x.rad())
    note(f"{kind}: mid={mid} rad={rad} fmt={fmt} derive={got!r}")
    expected = integer_reference(mid, fmt)  # the midpoint's rounding, exactly
    if rad == 0:  # an exact ball: the exact path, ties by the mode
        event("exact")
        assert got == expected
        return
    lo, hi = (mid - rad) * 10**places_, (mid + rad) * 10**places_
    if _holds_boundary(lo, hi, fmt):
        event("touches a boundary" if _holds_boundary(lo, lo, fmt) or _holds_boundary(hi, hi, fmt)
              else "straddles a boundary")
        assert got is None
    elif got is None:  # allowed only within derive's rounding of x * 10^N at the working precision
        event("undecided within the working precision")
        slack = (abs(lo) + abs(hi) + 1) / 2**60
        assert _holds_boundary(lo - slack, hi + slack, fmt), "undecided, but the ball is clear of every boundary"
    else:
        event("decided")
        assert got == expected


# =========================================================================== 3. rationals


@st.composite
def fractions_(draw):
    kind = draw(st.sampled_from(["random", "random", "tie", "grid", "pow10", "small"]))
    if kind == "random":
        return Fraction(draw(st.integers(-(10**15), 10**15)), draw(st.integers(1, 10**9)))
    if kind == "small":
        return Fraction(draw(st.integers(-(10**4), 10**4)), draw(st.integers(1, 10**12)))
    k = draw(st.integers(-12, 12))
    sign = draw(st.sampled_from([1, -1]))
    if kind == "pow10":
        return sign * Fraction(10) ** k
    j = draw(st.integers(0, 10**9))
    if kind == "tie":  # (j + 1/2) * 10^k: a tie at 10^k places, or at the matching figures
        return sign * (j + Fraction(1, 2)) * Fraction(10) ** k
    return sign * j * Fraction(10) ** k


@settings(max_examples=examples(4000), deadline=None)
@given(q=fractions_(), fmt=formats)
def test_exact_rationals(q, fmt):
    expected = integer_reference(q, fmt)
    if q != 0:
        e = math.floor(math.log10(abs(q))) if fmt.sig else 0  # float guess; only for the event
        twice = 2 * q * Fraction(10) ** (fmt.places if fmt.places is not None else fmt.sig - 1 - e)
        event("exact tie" if twice.denominator == 1 and twice.numerator % 2 else "no tie")
    assert format_fraction(q, fmt) == expected
    assert format_value(fmpq(q.numerator, q.denominator), fmt) == expected
    if q.denominator & (q.denominator - 1) == 0:  # dyadic: an exact ball takes the exact path
        with ctx.workprec(max(64, q.numerator.bit_length() + 8)):
            x = arb(fmpq(q.numerator, q.denominator))
        assert x.is_exact()
        assert format_ball(x, fmt) == expected


@settings(max_examples=1000, deadline=None)
@given(a=st.integers(-(10**30), 10**30), b=st.integers(1, 10**30), mode=st.sampled_from(MODES))
def test_round_fraction_to_int(a, b, mode):
    q = Fraction(a, b)
    n = round_fraction_to_int(q, mode)
    magnitude = _round_magnitude(abs(a), b, mode, a < 0)
    assert n == (-magnitude if a < 0 else magnitude)
    assert abs(q - n) < 1


@settings(max_examples=examples(3000), deadline=None)
@given(k=st.one_of(st.integers(-30, 30), st.integers(-400, 400)), j=st.integers(1, 10**6),
       step=st.integers(-3, 3), rad_bits=st.integers(20, 200), sign=st.sampled_from([1, -1]),
       prec=st.sampled_from([53, 128, 300]))
def test_decade_of_a_ball_against_its_endpoints(k, j, step, rad_bits, sign, prec):
    """rounding._decade_ball (the guess from a double, each candidate decade checked on
    the ball): floor(log10 |x|) of the ball's exact endpoints when both lie in one decade,
    None when the ball reaches into two; balls around powers of ten (10^k + a few units
    of the ball's width) and far from them, up to 10^+-400 (past the doubles)."""
    from derive.rounding import _decade_ball

    width = Fraction(1, 2**rad_bits) * Fraction(10) ** k
    mid = sign * (Fraction(10) ** k * (1 if j < 500_000 else Fraction(j, 10**5)) + step * width)
    mid = Fraction(math.floor(mid * 2 ** (rad_bits + 1400)), 2 ** (rad_bits + 1400))  # dyadic
    x = _ball("near", mid, 0, width)
    lo, hi = _arb_fraction(x.mid()) - _arb_fraction(x.rad()), _arb_fraction(x.mid()) + _arb_fraction(x.rad())

    def decade(q: Fraction) -> int:
        e = len(str(abs(q.numerator) // q.denominator)) - 1 if abs(q) >= 1 else -1
        while Fraction(10) ** e > abs(q):
            e -= 1
        while Fraction(10) ** (e + 1) <= abs(q):
            e += 1
        return e

    expected = decade(lo) if lo * hi > 0 and decade(lo) == decade(hi) else None
    with ctx.workprec(prec):
        got = _decade_ball(x)
    if got is None and expected is not None:  # (the ball's comparisons at prec bits may leave it undecided)
        assert prec < 2 * rad_bits or abs(k) > 30
    else:
        assert got == expected


def _shortest(q: Fraction, most: int) -> tuple[int, int] | None:
    """(places, |q| 10^places) of q's exact decimal with the fewest places from 1 to
    ``most``, found by trying each, or None: the definition short_decimal follows."""
    for places in range(1, most + 1):
        scaled = abs(q) * 10 ** places
        if scaled.denominator == 1:
            return places, scaled.numerator
    return None


@settings(max_examples=2000, deadline=None)
@given(st.integers(-10**12, 10**12), st.integers(0, 12), st.integers(0, 12), st.sampled_from([1, 1, 1, 3, 7, 9]),
       st.integers(0, 8))
def test_short_decimal_is_the_fewest_places_that_hold_the_number(n, twos, fives, other, places):
    """A given weight n / (2^a 5^b c) prints whole with the fewest places (1 to places + 3)
    that hold it exactly (-0.5, 0.484375, 1.0), or not at all (None) past them or when c > 1."""
    from derive.rounding import GIVEN_EXTRA_PLACES, short_decimal

    q = Fraction(n, 2 ** twos * 5 ** fives * other)
    fmt = Format(places=places)
    found = _shortest(q, places + GIVEN_EXTRA_PLACES)
    if found is None:
        assert short_decimal(q, fmt) is None
    else:
        p, scaled = found
        digits = str(scaled).rjust(p + 1, "0")
        assert short_decimal(q, fmt) == (fmt.minus if q < 0 else "") + f"{digits[:-p]}.{digits[-p:]}"
