"""Formulas as SymPy expressions: a reader's calculation in the order the reader writes it.

SymPy's ``Add`` and ``Mul`` sort their terms and fold numbers together; a reader's
``0.4935 + 0.928 + 0 + 1.069 = 2.4905`` must print as written. The nodes here keep their
arguments in order and never evaluate; :mod:`derive.printing` prints them (plain text,
Unicode, LaTeX) by SymPy's printer dispatch (``_print_Terms``...). Functions of one
argument are SymPy's own, made with ``evaluate=False`` (:func:`exp`, :func:`ln`,
:func:`sqrt`, :func:`power`, :func:`relu`, ``sympy.sin``...).

    Dec("2.400")            a printed decimal, kept as the reader saw it (its zeros, its
                            minus sign; ``cut`` for a value cut short, printed with ``…``)
    Terms(a, b, c)          a + b + c; a negative term prints as a subtraction
    Times(a, b)             a · b; a negative or compound factor after the first in
                            parentheses
    Over(a, b)              a / b
    Neg(a)                  -a
    Group(a)                (a): a substituted value the reader parenthesises, as in
                            0.1 · (-0.011)
    Chain(a, b, c)          a = b = c: a calculation and its results
    Iverson(i, a, b, ...)   [argmax(a, b, ...) = i]

Each node's value, where its arguments are rational, is :func:`value` (exact
:class:`fractions.Fraction` arithmetic), so a test can check that a printed calculation
gives the printed result.
"""

from __future__ import annotations

import re
from fractions import Fraction

import sympy
from sympy.core.basic import Basic
from sympy.core.expr import AtomicExpr, Expr

MINUS = "\u2212"
NUMBER = re.compile(r"[-\u2212]?\d+(?:\.\d*)?(?:e[-\u2212+]?\d+)?$")


class Dec(AtomicExpr):
    """A printed decimal (``-0.816``, ``2.49067`` cut short), kept as text.

    Args:
        text: the digits as printed, with the ASCII or the Unicode minus (kept: the plain
            printer writes the text as it is), ``1.2e-06`` allowed.
        cut: the value goes on (printed with an ellipsis: ``2.49067…``).

    Raises:
        ValueError: when ``text`` is not a number.
    """

    is_number = True
    is_commutative = True
    __slots__ = ("text", "cut")

    def __new__(cls, text: str, cut: bool = False):
        text = text.rstrip("\u2026")
        if not NUMBER.match(text):
            raise ValueError(f"{text!r} is not a printed number")
        obj = AtomicExpr.__new__(cls)
        obj.text = text
        obj.cut = cut
        return obj

    def __getnewargs__(self):
        return (self.text, self.cut)

    def _hashable_content(self):
        return (self.text, self.cut)

    @property
    def fraction(self) -> Fraction:
        """The exact value of the printed digits."""
        return Fraction(self.text.replace(MINUS, "-"))

    @property
    def negative(self) -> bool:
        """True for a printed minus sign (``-0.000`` included)."""
        return self.text.startswith(("-", MINUS))

    def negated(self) -> "Dec":
        """The same digits with the other sign."""
        return Dec(self.text[1:] if self.negative else "-" + self.text, self.cut)

    def _eval_evalf(self, prec):
        return sympy.Float(sympy.Rational(self.fraction.numerator, self.fraction.denominator), sympy.prec_to_dps(prec))


class _Ordered(Expr):
    """An operation that keeps its arguments in the order given and never evaluates."""

    is_commutative = True

    def __new__(cls, *args):
        return Expr.__new__(cls, *[a if isinstance(a, Basic) else sympy.sympify(a) for a in args])


class Terms(_Ordered):
    """A sum written term by term: ``a + b - c``."""


class Times(_Ordered):
    """A product written factor by factor: ``a · b``."""


class Over(_Ordered):
    """A quotient ``a / b``."""


class Neg(_Ordered):
    """``-a``."""


class Group(_Ordered):
    """``(a)``: parentheses the reader writes around a substituted value."""


class Chain(_Ordered):
    """``a = b = c``: a calculation followed by its results."""


class Iverson(_Ordered):
    """``[argmax(a, b, ...) = i]``: 1 when value ``i`` (0-based) is the largest."""


class GeluTanh(sympy.Function):
    """GPT-2's gelu_new, written GELU_tanh(x) (Hendrycks and Gimpel 2016)."""

    nargs = 1


class GeluErf(sympy.Function):
    """The exact GELU, written GELU_erf(x) (Hendrycks and Gimpel 2016, eq. 1)."""

    nargs = 1


def exp(x) -> sympy.Expr:
    """``e^x``, unevaluated."""
    return sympy.exp(x, evaluate=False)


def ln(x) -> sympy.Expr:
    """``ln x`` (natural logarithm), unevaluated."""
    return sympy.log(x, evaluate=False)


def sqrt(x) -> sympy.Expr:
    """``sqrt(x)``, unevaluated (sqrt(2) stays sqrt(2))."""
    return sympy.Pow(x, sympy.S.Half, evaluate=False)


def power(x, e) -> sympy.Expr:
    """``x^e``, unevaluated."""
    return sympy.Pow(x, e, evaluate=False)


def relu(x) -> sympy.Expr:
    """``max(0, x)``, unevaluated."""
    return sympy.Max(0, x, evaluate=False)


def number(q: Fraction | int) -> sympy.Expr:
    """An exact number as the reader writes it: a terminating decimal (``0.4935``,
    ``-0.5``) as a :class:`Dec`, any other fraction as a SymPy Rational (``1/3``)."""
    q = Fraction(q)
    for places in range(0, 13):
        scaled = q * 10 ** places
        if scaled.denominator == 1:
            digits = str(abs(scaled.numerator)).rjust(places + 1, "0")
            body = digits[:-places] + "." + digits[-places:] if places else digits
            return Dec(("-" if q < 0 else "") + body)
    return sympy.Rational(q.numerator, q.denominator)


def terms(*items) -> sympy.Expr:
    """A sum of ``items``, or the one item alone."""
    return items[0] if len(items) == 1 else Terms(*items)


def is_negative(expr) -> bool:
    """True when ``expr`` prints with a leading minus sign (a negative number, -a, or a
    product or quotient whose first factor is one): a term after it becomes a subtraction."""
    if isinstance(expr, Dec):
        return expr.negative
    if isinstance(expr, Neg):
        return True
    if isinstance(expr, (Times, Over)):
        return is_negative(expr.args[0])
    if isinstance(expr, sympy.Number):
        return bool(expr < 0)
    return False


def negated(expr) -> sympy.Expr:
    """The magnitude of an expression for which :func:`is_negative` is True: what follows
    the minus sign of a subtraction."""
    if isinstance(expr, Dec):
        return expr.negated()
    if isinstance(expr, Neg):
        return expr.args[0]
    if isinstance(expr, (Times, Over)):
        return type(expr)(negated(expr.args[0]), *expr.args[1:])
    if isinstance(expr, sympy.Number):
        return -expr
    raise ValueError(f"{expr} has no minus sign to take off")


def value(expr) -> Fraction:
    """The exact value of a rational formula (decimals, rationals, + - · /).

    Raises:
        ValueError: for a node that is not rational arithmetic (a name, e^x, sqrt).
    """
    if isinstance(expr, Dec):
        return expr.fraction
    if isinstance(expr, sympy.Rational):
        return Fraction(int(expr.p), int(expr.q))
    args = [value(a) for a in expr.args] if isinstance(expr, _Ordered) else None
    if isinstance(expr, Terms):
        return sum(args, Fraction(0))
    if isinstance(expr, Times):
        out = Fraction(1)
        for a in args:
            out *= a
        return out
    if isinstance(expr, Over):
        return args[0] / args[1]
    if isinstance(expr, Neg):
        return -args[0]
    if isinstance(expr, Group):
        return args[0]
    raise ValueError(f"{expr} is not rational arithmetic")


__all__ = ["Dec", "Terms", "Times", "Over", "Neg", "Group", "Chain", "Iverson", "GeluTanh", "GeluErf", "exp",
           "ln", "sqrt", "power", "relu", "number", "terms", "is_negative", "negated", "value"]
