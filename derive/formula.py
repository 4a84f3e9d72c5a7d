"""Formulas: a reader's calculation in the order the reader writes it, as a small tree.

A reader's ``0.4935 + 0.928 + 0 + 1.069 = 2.4905`` must print as written: no term sorted,
no number folded into another. The nodes here keep their arguments in order, never
evaluate, and need no computer algebra (a plain ``derive run`` prints thousands of them
and never imports SymPy); :mod:`derive.printing` prints them in three notations (plain
text, Unicode, LaTeX), and :func:`value` gives the exact value of the rational ones.

    Dec("2.400")            a printed decimal, kept as the reader saw it (its zeros, its
                            minus sign; ``cut`` for a value cut short, printed with ``…``)
    Rat(1, 3)               an exact rational that is not a short decimal: 1/3 (Rat(2) is 2)
    Terms(a, b, c)          a + b + c; a negative term prints as a subtraction
    Times(a, b)             a · b; a negative or compound factor after the first in
                            parentheses
    Over(a, b)              a / b
    Neg(a)                  -a
    Group(a)                (a): a substituted value the reader parenthesises, as in
                            0.1 · (-0.011)
    Chain(a, b, c)          a = b = c: a calculation and its results
    Iverson(i, a, b, ...)   [argmax(a, b, ...) = i]
    Pow(a, e)               a^e (``Pow(a, Rat(1, 2))`` is sqrt(a): :func:`sqrt`)
    Exp(a), Ln(a)           e^a, ln(a)
    Max(a, b)               max(a, b) (:func:`relu` is max(0, x))
    Sin(a), Cos(a)          sin(a), cos(a) (RoPE's rotations)
    GeluTanh(a), GeluErf(a) GELU_tanh(a), GELU_erf(a)

A plain int or :class:`fractions.Fraction` given as an argument becomes a :class:`Rat`; a
str is words, printed as they are.
Two nodes are equal when their classes and arguments are.
"""

from __future__ import annotations

import re
from fractions import Fraction

from .name import Name

MINUS = "\u2212"
NUMBER = re.compile(r"[-\u2212]?\d+(?:\.\d*)?(?:e[-\u2212+]?\d+)?$")


class Node:
    """A formula node: its arguments (``args``) in the order the reader writes them."""

    __slots__ = ("args",)

    def __init__(self, *args):
        for a in args:
            if not isinstance(a, _READY):
                self.args = tuple(map(_node, args))
                return
        self.args = args  # (nodes, Names and words as they are: most of a page's 350,000)

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.args == other.args

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.args))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self.args))})"

    def __str__(self) -> str:
        from .printing import text
        return text(self)


class Dec(Node):
    """A printed decimal (``-0.816``, ``2.49067`` cut short), kept as text.

    Args:
        text: the digits as printed, with the ASCII or the Unicode minus (kept: the plain
            printer writes the text as it is), ``1.2e-06`` allowed.
        cut: the value goes on (printed with an ellipsis: ``2.49067…``).

    Raises:
        ValueError: when ``text`` is not a number.
    """

    __slots__ = ("text", "cut")

    def __init__(self, text: str, cut: bool = False):
        text = text.rstrip("\u2026")
        if not NUMBER.match(text):
            raise ValueError(f"{text!r} is not a printed number")
        self.text = text
        self.cut = cut
        self.args = ()

    def __eq__(self, other) -> bool:
        return type(other) is Dec and self.text == other.text and self.cut == other.cut

    def __hash__(self) -> int:
        return hash(("Dec", self.text, self.cut))

    def __repr__(self) -> str:
        return f"Dec({self.text!r}" + (", cut=True)" if self.cut else ")")

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


class Rat(Node):
    """An exact rational ``p/q`` in lowest terms, ``q > 0`` (``Rat(3)`` is the integer 3).

    Raises:
        ZeroDivisionError: for ``q`` = 0.
    """

    __slots__ = ("p", "q")

    def __init__(self, p: int, q: int = 1):
        f = Fraction(int(p), int(q))
        self.p, self.q = f.numerator, f.denominator
        self.args = ()

    def __eq__(self, other) -> bool:
        return type(other) is Rat and (self.p, self.q) == (other.p, other.q)

    def __hash__(self) -> int:
        return hash(("Rat", self.p, self.q))

    def __repr__(self) -> str:
        return f"Rat({self.p}, {self.q})" if self.q != 1 else f"Rat({self.p})"


HALF = Rat(1, 2)
_READY = (Node, Name, str)  # an argument kept as it is (see _node)


def _node(a):
    """An argument as a node: an int or a Fraction becomes a :class:`Rat`; words (a str:
    ``undecided``) print as they are."""
    if isinstance(a, (Node, Name, str)):
        return a
    if isinstance(a, (int, Fraction)):
        return Rat(Fraction(a).numerator, Fraction(a).denominator)
    raise TypeError(f"{a!r} is not a formula (a node, a Name, words, an int or a Fraction)")


class Terms(Node):
    """A sum written term by term: ``a + b - c``."""

    __slots__ = ()


class Times(Node):
    """A product written factor by factor: ``a · b``."""

    __slots__ = ()


class Over(Node):
    """A quotient ``a / b``."""

    __slots__ = ()


class Neg(Node):
    """``-a``."""

    __slots__ = ()


class Group(Node):
    """``(a)``: parentheses the reader writes around a substituted value."""

    __slots__ = ()


class Chain(Node):
    """``a = b = c``: a calculation followed by its results."""

    __slots__ = ()


class Iverson(Node):
    """``[argmax(a, b, ...) = i]``: 1 when value ``i`` (0-based) is the largest."""

    __slots__ = ()


class Pow(Node):
    """``a^e``; the exponent 1/2 is the square root (printed ``sqrt(a)``)."""

    __slots__ = ()


class Exp(Node):
    """``e^a``."""

    __slots__ = ()


class Ln(Node):
    """``ln a`` (natural logarithm)."""

    __slots__ = ()


class Max(Node):
    """``max(a, b, ...)``."""

    __slots__ = ()


class Function(Node):
    """A named function of its arguments, printed ``name(a)`` (``\\name`` in LaTeX where
    LaTeX has the name)."""

    __slots__ = ()
    name = ""


class Sin(Function):
    """``sin a``."""

    __slots__ = ()
    name = "sin"


class Cos(Function):
    """``cos a``."""

    __slots__ = ()
    name = "cos"


class GeluTanh(Function):
    """GPT-2's gelu_new, written GELU_tanh(x) (Hendrycks and Gimpel 2016)."""

    __slots__ = ()
    name = "GeluTanh"


class GeluErf(Function):
    """The exact GELU, written GELU_erf(x) (Hendrycks and Gimpel 2016, eq. 1)."""

    __slots__ = ()
    name = "GeluErf"


def exp(x) -> Exp:
    """``e^x``."""
    return Exp(x)


def ln(x) -> Ln:
    """``ln x`` (natural logarithm)."""
    return Ln(x)


def sqrt(x) -> Pow:
    """``sqrt(x)`` (sqrt(2) stays sqrt(2))."""
    return Pow(x, HALF)


def power(x, e) -> Pow:
    """``x^e``."""
    return Pow(x, e)


def relu(x) -> Max:
    """``max(0, x)``."""
    return Max(0, x)


def number(q: Fraction | int) -> Node:
    """An exact number as the reader writes it: a terminating decimal (``0.4935``,
    ``-0.5``) as a :class:`Dec`, any other fraction as a :class:`Rat` (``1/3``)."""
    q = Fraction(q)
    for places in range(0, 13):
        scaled = q * 10 ** places
        if scaled.denominator == 1:
            digits = str(abs(scaled.numerator)).rjust(places + 1, "0")
            body = digits[:-places] + "." + digits[-places:] if places else digits
            return Dec(("-" if q < 0 else "") + body)
    return Rat(q.numerator, q.denominator)


def terms(*items) -> Node:
    """A sum of ``items``, or the one item alone."""
    return items[0] if len(items) == 1 else Terms(*items)


def is_negative(expr) -> bool:
    """True when ``expr`` prints with a leading minus sign (a negative number, -a, or a
    product or quotient whose first factor is one): a term after it becomes a subtraction."""
    cls = type(expr)
    if cls is Dec:
        return expr.negative
    if cls is Neg:
        return True
    if cls is Times or cls is Over:
        return is_negative(expr.args[0])
    if cls is Rat:
        return expr.p < 0
    return False


def negated(expr) -> Node:
    """The magnitude of an expression for which :func:`is_negative` is True: what follows
    the minus sign of a subtraction.

    Raises:
        ValueError: for an expression with no leading minus sign to take off.
    """
    cls = type(expr)
    if cls is Dec:
        return expr.negated()
    if cls is Neg:
        return expr.args[0]
    if cls is Times or cls is Over:
        return cls(negated(expr.args[0]), *expr.args[1:])
    if cls is Rat:
        return Rat(-expr.p, expr.q)
    raise ValueError(f"{expr} has no minus sign to take off")


def decimals(expr, live: bool = False) -> list[Dec]:
    """Every printed decimal in ``expr`` (a node, a Name or words), in the order written;
    with ``live``, none of a product with a factor 0 (``-1.011 · 0``: a term that adds nothing)."""
    if isinstance(expr, Dec):
        return [expr]
    if not isinstance(expr, Node) or live and isinstance(expr, Times) and any(map(_zero, expr.args)):
        return []
    return [d for a in expr.args for d in decimals(a, live)]


def _zero(expr) -> bool:
    """A written 0 (``0``, ``0.000``, ``-0.0``, ``(0)``)."""
    if isinstance(expr, (Group, Neg)):
        return _zero(expr.args[0])
    return isinstance(expr, Rat) and expr.p == 0 or isinstance(expr, Dec) and expr.fraction == 0


def value(expr) -> Fraction:
    """The exact value of a rational formula (decimals, rationals, + - · /).

    Raises:
        ValueError: for a node that is not rational arithmetic (a name, e^x, sqrt).
    """
    if isinstance(expr, Dec):
        return expr.fraction
    if isinstance(expr, Rat):
        return Fraction(expr.p, expr.q)
    args = [value(a) for a in expr.args] if isinstance(expr, Node) else None
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

__all__ = ["Node", "Dec", "Rat", "HALF", "Terms", "Times", "Over", "Neg", "Group", "Chain", "Iverson", "Pow", "Exp",
           "Ln", "Max", "Function", "Sin", "Cos", "GeluTanh", "GeluErf", "exp", "ln", "sqrt", "power", "relu",
           "number", "terms", "is_negative", "negated", "value"]
