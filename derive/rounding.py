"""Correct rounding of exact rationals and certified balls to decimal text.

DESIGN.md, "Correct rounding": a value is scaled by 10^N (N places, or the places that
give the requested significant figures) and rounded to the integer the mode selects. For
an exact rational the integer is computed exactly, ties included. For a ball the integer is
returned only when the whole ball lies strictly between two rounding boundaries; otherwise
the answer is None ("undecided at this precision"), and the caller evaluates again at a
higher precision or takes the exact path. A digit is never guessed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache

from flint import arb, ctx, fmpq, fmpz

from .lazy import numpy

MODES = ("half-away", "half-even", "down", "floor", "ceiling")
MINUS = "\u2212"


@dataclass(frozen=True)
class Format:
    """How numbers are printed.

    Attributes:
        places: digits after the decimal point (default 3, the seed's), or None with ``sig``.
        sig: significant figures instead of places (scientific notation outside 1e-5..1e sig).
        mode: half-away (school rule, default), half-even, down (toward zero), floor, ceiling.
        signed_zero: print a value that rounds to zero from below as ``-0.000`` (default
            off: ``0.000``, as the seeds print it).
        minus: the minus sign: ``-`` (JSON, LaTeX source) or the Unicode minus for text.
    """

    places: int | None = 3
    sig: int | None = None
    mode: str = "half-away"
    signed_zero: bool = False
    minus: str = "-"

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"unknown rounding mode {self.mode!r}; expected one of {', '.join(MODES)}")
        if (self.places is None) == (self.sig is None):
            raise ValueError("give exactly one of places and sig")
        if self.sig is not None and self.sig < 1:
            raise ValueError("sig must be at least 1")
        if self.places is not None and self.places < 0:
            raise ValueError("places must be at least 0")


# --------------------------------------------------------------------------- integers

def round_fraction_to_int(y: Fraction, mode: str) -> int:
    """The integer ``y`` rounds to under ``mode``, exactly (ties decided by the mode)."""
    return _round_ratio(y.numerator, y.denominator, mode)


def _round_ratio(a: int, b: int, mode: str) -> int:
    """The integer a / b rounds to under ``mode`` (b > 0, not necessarily in lowest terms),
    in integers: a = floor * b + rest with 0 <= rest < b; in the half modes twice the rest
    against b says below, above or on the tie (no Fraction made)."""
    floor, rest = divmod(a, b)
    if mode == "floor" or (mode == "down" and a >= 0):
        return floor
    if mode in ("ceiling", "down"):  # (down, a < 0: toward zero is up)
        return floor + 1 if rest else floor
    twice = 2 * rest  # in [0, 2b)
    if twice < b:
        return floor
    if twice > b:
        return floor + 1
    if mode == "half-even":
        return floor if floor % 2 == 0 else floor + 1
    return floor + 1 if a > 0 else floor  # half-away


def _certified_floor(z: arb) -> int | None:
    """floor(z) when every point of the ball lies strictly between two integers (the
    closed ball holds no integer: one touching an integer is undecided)."""
    if z.contains_integer():
        return None
    # The double nearest the midpoint lies between the same two integers as the midpoint
    # (below 2^52 every integer is a double) or on one of them: then, or past 2^52, the
    # midpoint is read exactly.
    near = float(z)
    if -2**52 < near < 2**52 and near != math.floor(near):
        return math.floor(near)
    return int(z.mid().floor().unique_fmpz())


HALF = arb(0.5)  # (exact: a module constant, not an fmpq converted for every value)


def round_ball_to_int(y: arb, mode: str) -> int | None:
    """The integer ``y`` rounds to under ``mode``, or None when the ball touches a
    rounding boundary (an integer for directed modes, a half-integer otherwise)."""
    if mode in ("half-away", "half-even"):
        return _certified_floor(y + HALF)
    if mode == "floor":
        return _certified_floor(y)
    if mode == "ceiling":
        k = _certified_floor(-y)
        return None if k is None else -k
    # down: toward zero
    if y > 0:
        return _certified_floor(y)
    if y < 0:
        k = _certified_floor(-y)
        return None if k is None else -k
    return 0 if y.abs_upper() < 1 else None


# --------------------------------------------------------------------------- decades

def decade_fraction(q: Fraction) -> int:
    """floor(log10 |q|) for q != 0, exactly."""
    return _decade_ratio(abs(q.numerator), q.denominator)


def _decade_ratio(a: int, b: int) -> int:
    """floor(log10(a / b)) for integers a, b > 0, exactly (compared in integers)."""
    e = int((a.bit_length() - b.bit_length()) * 0.30102999566398)  # within one of the answer
    while not _pow10_at_most(e, a, b):
        e -= 1
    while _pow10_at_most(e + 1, a, b):
        e += 1
    return e


def _pow10_at_most(e: int, a: int, b: int) -> bool:
    """Whether 10^e <= a / b (b > 0)."""
    return b * 10 ** e <= a if e >= 0 else b <= a * 10 ** -e


def _decade_ball(x: arb) -> int | None:
    """floor(log10 |x|) when the ball certainly lies within one decade, else None: the
    decade next to a guess (log10 of the double nearest the midpoint, within one of the
    midpoint's decade; a ball's logarithm past the doubles' range) in which the ball
    certainly lies."""
    if x.contains(0):
        return None
    mag = abs(x)
    near = float(mag)
    if 0 < near < math.inf:  # (the guess only picks the candidates: each is checked exactly below)
        e = math.floor(math.log10(near))
    else:
        guess = mag.log() / arb(10).log()
        e = int(guess.mid().floor().unique_fmpz())
    for cand in (e - 1, e, e + 1):
        lo, hi = _pow10(cand), _pow10(cand + 1)
        if mag >= lo and mag < hi:
            return cand
    return None


EXACT_POW10 = 20_000  # 10^e is exact (fmpq) up to this |e|, a ball at the working precision beyond


def _pow10(e: int) -> fmpq | arb:
    """10^e: exact for |e| <= EXACT_POW10; beyond (the decade of a tiny softmax weight such
    as e^-1e300, where 10^-(4.3e299) has no exact form: FLINT refuses the power), a ball at
    the working precision, whose width only makes a comparison or a rounding undecided."""
    if abs(e) > EXACT_POW10:
        return arb(10) ** fmpz(e)  # (at the working precision: never cached)
    return _exact_pow10(e)


@lru_cache(maxsize=64)
def _scale(places: int) -> arb:
    """10^places (places >= 0) as a ball: exact at any precision (arb holds an integer
    whole), so a ball times it is rounded once, at the working precision, as times the
    fmpq 10^places, without converting that fmpq for every value."""
    return arb(10 ** places)


@lru_cache(maxsize=256)
def _exact_pow10(e: int) -> fmpq:
    """10^e as an exact fmpq (kept: every value of a table is scaled by the same power)."""
    return fmpq(fmpz(10) ** e) if e >= 0 else fmpq(1, fmpz(10) ** (-e))


# --------------------------------------------------------------------------- text

def _text(n: int, places: int, negative: bool, fmt: Format) -> str:
    """Decimal text of n * 10^-places (places >= 0); ``negative``: the value rounded was
    below 0 (a zero then prints as ``-0.000`` when ``fmt.signed_zero`` asks for it)."""
    digits = str(-n if n < 0 else n)
    if places:
        digits = digits.rjust(places + 1, "0")
        digits = f"{digits[:-places]}.{digits[-places:]}"
    if n < 0 or (negative and n == 0 and fmt.signed_zero):
        return fmt.minus + digits
    return digits


def _scientific(n: int, e: int, fmt: Format) -> str:
    digits = str(abs(n))
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    exponent = f"e{fmt.minus}{-e}" if e < 0 else f"e{e}"
    return (fmt.minus if n < 0 else "") + mantissa + exponent


def _sig_text(n: int, e: int, fmt: Format, negative: bool) -> str:
    """n has ``sig`` digits and stands for n * 10^(e - sig + 1)."""
    places = fmt.sig - 1 - e
    if -5 <= e < fmt.sig:
        return _text(n, places, negative, fmt)
    return _scientific(n, e, fmt)


def format_fraction(q: Fraction, fmt: Format) -> str:
    """Correctly round an exact rational to text under ``fmt`` (ties by the mode)."""
    return _format_ratio(q.numerator, q.denominator, fmt)


def _format_ratio(a: int, b: int, fmt: Format) -> str:
    """:func:`format_fraction` of a / b (integers, b > 0, not necessarily in lowest
    terms): a * 10^N / b rounded in integers."""
    if fmt.places is not None:
        n = _round_ratio(a * 10 ** fmt.places, b, fmt.mode)
        return _text(n, fmt.places, a < 0, fmt)
    if a == 0:
        return _text(0, max(fmt.sig - 1, 0), False, fmt)
    e = _decade_ratio(abs(a), b)
    shift = fmt.sig - 1 - e  # (negative: a value with more digits before the point than sig)
    n = _round_ratio(a * 10 ** shift, b, fmt.mode) if shift >= 0 else _round_ratio(a, b * 10 ** -shift, fmt.mode)
    if abs(n) == 10 ** fmt.sig:  # rounded up into the next decade
        e, n = e + 1, n // 10
    return _sig_text(n, e, fmt, a < 0)


GIVEN_EXTRA_PLACES = 3  # a given number prints whole with up to this many places more than the run's


def short_decimal(q: Fraction, fmt: Format) -> str | None:
    """A given number as the seed prints its given weights (``-0.5``, ``1.0``, not
    ``-0.500``): its exact decimal with the fewest places from 1 to ``fmt.places +
    GIVEN_EXTRA_PLACES`` that hold it (crane's k/64 weights, 0.484375, print whole at 3
    places), or None when it has more places (a float32 weight) or the format counts
    significant figures: then it is rounded like every other number."""
    if fmt.places is None:
        return None
    # (n / d in lowest terms holds in p places exactly when d divides 10^p, d = 2^a 5^b: the
    # fewest are max(a, b, 1); in integers, where a Fraction times 10^p at each p took 3.5 s of
    # a page of 260,000 given weights)
    n, d, most = int(q.numerator), int(q.denominator), fmt.places + GIVEN_EXTRA_PLACES
    twos = (d & -d).bit_length() - 1
    rest, fives = d >> twos, 0
    while rest % 5 == 0 and fives <= most:
        rest, fives = rest // 5, fives + 1
    places = max(twos, fives, 1)
    if rest != 1 or places > most:
        return None
    digits = str(abs(n) * 10 ** places // d).rjust(places + 1, "0")
    return f"{fmt.minus if n < 0 else ''}{digits[:-places]}.{digits[-places:]}"


def format_ball(x: arb, fmt: Format) -> str | None:
    """Correctly round a certified ball to text under ``fmt``, or None when the ball
    does not decide the last digit (evaluate again at a higher precision).

    The scaling and comparisons run at the ball's own precision plus a margin, so they
    never widen the ball that the evaluation certified, and hold the last digit asked for
    beside the value's leading one (1e6 and 10^-24 at 30 significant figures: 100 bits)."""
    if not x.is_finite():
        return None  # a NaN or infinite ball (e.g. sqrt of a ball that dips below 0) decides nothing
    digits = fmt.places if fmt.places is not None else fmt.sig
    near = float(x)  # the double nearest the midpoint: its exponent is the span or one more
    if near and math.isfinite(near):  # (0 or inf: beyond the doubles' range, or a zero midpoint)
        span = math.frexp(near)[1]
        if _rounding_precision(x.bits(), abs(span) + 1, digits) <= ctx.prec:
            return _format_ball(x, fmt, span)  # (the precision the exact span below would ask, or less)
    man, exp = x.mid().man_exp()
    man_bits = man.bit_length()
    span = int(exp) + man_bits if man else 0  # bits before the point (negative: zeros after it)
    need = abs(span) if abs(span) <= MAX_BITS else abs(span).bit_length()  # (huge: the sig path, relative)
    prec = _rounding_precision(man_bits, need, digits)
    if prec <= ctx.prec:  # (a caller rounding many values sets a precision that serves most: see working_precision)
        return _format_ball(x, fmt, span)
    with ctx.workprec(prec):
        return _format_ball(x, fmt, span)


def working_precision(evaluated: int, fmt: Format) -> int:
    """A working precision at which :func:`format_ball` rounds, under ``fmt``, a ball
    evaluated at ``evaluated`` bits with 2^-64 <= |value| < 2^64 without raising the
    precision for it (one precision set for a whole table instead of one per
    value: half of the time of rounding a wide model's quantities)."""
    return _rounding_precision(evaluated, 64, fmt.places if fmt.places is not None else fmt.sig)


def _rounding_precision(man_bits: int, span_bits: int, digits: int) -> int:
    """The bits :func:`format_ball` works at for a midpoint of ``man_bits`` mantissa bits
    with ``span_bits`` bits before (or zeros after) the point, rounded to ``digits``
    digits: the mantissa whole, and the last digit beside the leading one, 64 to spare."""
    return max(man_bits + 64, span_bits + int(3.33 * digits) + 64)


MAX_BITS = 1 << 16


def _format_ball(x: arb, fmt: Format, span: int) -> str | None:
    """:func:`format_ball` at its working precision; ``span``: the bits of the ball's
    midpoint before the point."""
    if span > MAX_BITS:
        # Too large to write out at fixed places (e^(10^10) has 4,342,944,820 digits before
        # the point): scientific form, with one more significant figure than the places asked
        # (FLINT would abort the process turning such a ball into an integer).
        return _format_sig(x, replace(fmt, places=None, sig=fmt.places + 1) if fmt.places is not None else fmt)
    if x.is_exact():
        return _format_ratio(*_arb_ratio(x), fmt)
    if fmt.places is not None:
        n = round_ball_to_int(x * _scale(fmt.places), fmt.mode)
        if n is None:
            return None
        if n == 0 and fmt.signed_zero and not (x < 0 or x > 0):
            return None  # the sign of a zero is asked for and not known
        return _text(n, fmt.places, n == 0 and bool(x < 0), fmt)  # (the ball's sign shows only on a zero)
    return _format_sig(x, fmt)


def _format_sig(x: arb, fmt: Format) -> str | None:
    """A ball to ``fmt.sig`` significant figures (None: it straddles a boundary)."""
    e = _decade_ball(x)
    if e is None:
        return _across_power_of_ten(x, fmt)
    n = round_ball_to_int(x * _pow10(fmt.sig - 1 - e), fmt.mode)
    if n is None:
        return None
    if abs(n) == 10 ** fmt.sig:
        e, n = e + 1, n // 10
    return _sig_text(n, e, fmt, bool(x < 0))


def _across_power_of_ten(x: arb, fmt: Format) -> str | None:
    """A ball that is not within one decade, in sig mode. A power of ten P is a rounding
    boundary in the directed modes, but not in the half modes: there every point within
    half a unit of the last place below P (10^(e-sig+1) / 2) or above it (ten times that)
    rounds to P itself."""
    if fmt.mode not in ("half-away", "half-even") or x.contains(0):
        return None
    mag = abs(x)
    e = _decade_ball(mag.lower())  # the decade just below P
    if e is None:
        return None
    gap = mag - _pow10(e + 1)  # (a difference: no rounding of P's neighbours at the working precision)
    if gap > -_pow10(e - fmt.sig + 1) / 2 and gap < _pow10(e - fmt.sig + 2) / 2:
        n = 10 ** (fmt.sig - 1)
        return _sig_text(-n if x < 0 else n, e + 1, fmt, bool(x < 0))
    return None


def _arb_ratio(x: arb) -> tuple[int, int]:
    """An exact ball's value m * 2^e as integers a, b with a / b = m * 2^e (b > 0)."""
    m, e = x.mid().man_exp()
    m, e = int(m), int(e)
    return (m << e, 1) if e >= 0 else (m, 1 << -e)


# Fewer values than BATCH_MIN are rounded one by one: importing numpy (0.1 s of CPU) would cost
# more than the batch saves (3 us a value: 4 us one by one, 1 us in the batch).
BATCH_MIN = 40_000
BATCH_MAX_PLACES = 300  # 10^places is a finite double with room (the batch needs it as one)
_BATCH_REL = 2.0 ** -49  # the midpoint's error relative to |y| (see format_balls)
_BATCH_RAD = 1 + 2.0 ** -20  # the radius bound's widening factor (see format_balls)
_BATCH_EXP = 1100  # relative accuracies clipped to +- this many bits (beyond the doubles' exponents)
_BATCH_NORMAL = 2.0 ** -1022  # the least normal double
_BATCH_MARGIN = 2.0 ** -30  # underflow, the float arithmetic of the test, the per-value path's own widening
_BATCH_LIMIT = 2.0 ** 48  # |y| at or above: left to the per-value path (the relative error alone nears 1/2)


def format_balls(values: list, fmt: Format) -> list[str | None]:
    """The texts :func:`format_value` gives for ``values`` (a list of arb balls, fmpq or
    Fraction values), decided in one batch of float64 arithmetic where that is certified;
    None for each value the batch leaves to :func:`format_value` (the caller rounds those
    one by one, as before). Same length and order as ``values``; raises nothing.

    The batch decides only balls (arb) at fixed places (``fmt.places`` up to
    BATCH_MAX_PLACES), and only in lists of at least BATCH_MIN values; it leaves alone
    exact rationals (fmpq, Fraction), significant-figure formats, non-finite balls, balls
    too large (|y| >= 2^48 below), too wide or too near a rounding boundary, and a value
    rounding to 0 when ``fmt.signed_zero`` asks for its sign. A text it gives is the one
    :func:`format_value` gives, ``_text(n, places, False, fmt)`` (the sign of a nonzero n
    is its own; without ``signed_zero`` a zero prints unsigned).

    Why a decided text is right. Let the ball be m +- R (exact midpoint m and radius R),
    P = 10^places and p the double nearest P (exact up to 10^22, else within 2^-53 P).
    python-flint's ``float(x)`` is m rounded to a double (to nearest in 0.9.0, toward zero
    in older versions; FLINT's arf_get_d rounds correctly in the subnormal range too):
    f = m (1 + d1) + a1 with |d1| <= 2^-52, |a1| <= 2^-1074. y = f * p in float64 is
    (f p)(1 + d2) + a2 with |d2| <= 2^-53, |a2| <= 2^-1075. Together (P <= p (1 + 2^-52))

        |y - m P| <= (2^-52 + 2^-53 + 2^-53)(1 + 2^-50) |y| + 2^-1071 p <= 2^-50 |y| + 2^-1071 p.

    The radius is read as ``x.rel_accuracy_bits()`` = a (FLINT's arb_rel_accuracy_bits:
    minus (the radius's top bit position + 1 - the midpoint's), which costs a third of
    ``float(x.rad())``): R < 2^e_r and |m| >= 2^(e_m - 1) give R < |m| 2^-a. With f a
    normal double (|f| >= 2^-1022: then a1 is within 2^-52 |f|), |m| P <= |y| (1 + 2^-48)
    and R P < |y| 2^-a (1 + 2^-48). a is clipped to [-1100, 1100] first: 2^-a past the
    doubles' exponents is 0 (R P < 2^48 2^-1074, inside the margin below) or infinite
    (never decided). A midpoint below the normal range (f may read it as 0) is decided only
    when a >= 1100 (R = 0 gives FLINT's ARF_PREC_EXACT): then R P < 2^-2100 p.

    So |y - m P| + R P <= 2^-49 |y| + |y| 2^-a (1 + 2^-20) + 2^-1069 p even as those
    products are rounded in float64 (2^-49 and 2^-20 leave room for the roundings;
    2^-1069 p, at most 2^-72 for places <= 300, for an underflow). Let slack = 2^-49 |y| +
    |y| 2^-a (1 + 2^-20) + 2^-30 (the 2^-30 margin holds the 2^-1069 p).

    Half modes: n = rint(y); the test |y - n| + slack < 1/2 puts every point of the scaled
    ball, t P for t in [m - R, m + R], strictly inside (n - 1/2, n + 1/2): it rounds to n
    under half-even and half-away alike (no point is a tie). Directed modes: b = floor(y);
    the test min(y - b, b + 1 - y) > slack puts the scaled ball strictly inside (b, b + 1):
    floor b, ceiling b + 1, down (toward zero) b when b >= 0, else b + 1 (the open
    interval holds no 0: the ball's sign is certain). The float operations of the tests
    (sums of terms below 1; y - n, y - b and b + 1 - y, below 1) err by at most 2^-50 in
    all, inside the margin. The margin and the 2^-20 on the radius also cover the
    per-value path's own widening (its 30-bit radius arithmetic, its midpoint rounded 64
    bits or more past the last digit), so that path, asked about the same ball, decides
    the same integer. |y| < 2^48 keeps the test meaningful (2^-49 |y| < 1/2) and the
    integer exact in an int64; an infinite or NaN y or radius fails every comparison.
    """
    places = fmt.places
    if places is None or places > BATCH_MAX_PLACES or len(values) < BATCH_MIN:
        return [None] * len(values)
    np = numpy()  # (here: a small case never loads it, and starts as fast as before)

    nan = math.nan
    mids = np.array([float(v) if type(v) is arb else nan for v in values], dtype=np.float64)
    accuracy = np.array([v.rel_accuracy_bits() if type(v) is arb else 0 for v in values], dtype=np.int64)
    p = float(10 ** places)
    with np.errstate(all="ignore"):  # (an overflow or a NaN fails the test below)
        y = mids * p
        accuracy = np.clip(accuracy, -_BATCH_EXP, _BATCH_EXP).astype(np.int32)
        slack = np.abs(y) * (_BATCH_REL + np.ldexp(_BATCH_RAD, -accuracy)) + _BATCH_MARGIN
        if fmt.mode in ("half-away", "half-even"):
            n = np.rint(y)
            ok = slack < 0.5 - np.abs(y - n)
        else:
            below = np.floor(y)
            ok = slack < np.minimum(y - below, below + 1 - y)
            if fmt.mode == "floor":
                n = below
            elif fmt.mode == "ceiling":
                n = below + 1
            else:  # down: toward zero
                n = np.where(below >= 0, below, below + 1)
        ok &= (np.abs(y) < _BATCH_LIMIT) & ((np.abs(mids) >= _BATCH_NORMAL) | (accuracy == _BATCH_EXP))
        if fmt.signed_zero:
            ok &= n != 0
    where = np.flatnonzero(ok)
    # One text per distinct integer (a table's values repeat: 457,667 values of a d_model 128
    # block at 3 places are a few thousand integers), placed by numpy.
    ints, inverse = np.unique(n[where].astype(np.int64), return_inverse=True)
    texts = np.array([_text(k, places, False, fmt) for k in ints.tolist()], dtype=object)
    column = np.full(len(values), None, dtype=object)
    column[where] = texts[inverse]
    return column.tolist()


def format_value(v, fmt: Format) -> str | None:
    """Round an fmpq, Fraction or arb under ``fmt``; None when a ball is too wide."""
    if isinstance(v, arb):  # (first: nearly every value of a model is a ball)
        return format_ball(v, fmt)
    if isinstance(v, fmpq):
        return _format_ratio(int(v.p), int(v.q), fmt)
    if isinstance(v, Fraction):
        return format_fraction(v, fmt)
    return format_ball(v, fmt)
