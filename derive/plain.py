"""Formulas as plain ASCII text in SymPy's string syntax, in the order they are given.

A quantity's *definition* (its operation applied to its parents' labels) is printed from
the graph with these few pieces, without building a SymPy expression: each operation's
``plain`` method (:mod:`derive.graph`) puts its parents' texts together. The syntax is the
one ``sympy.sstr`` writes (``+ - * / **``, ``exp(..)``, ``log(..)``, ``sqrt(..)``,
``Max(0, x)``), so ``sympy.sympify`` reads it back once the labels are symbols; unlike
sstr, terms and factors keep the reader's order (the order of the parents), a rational
coefficient is written first (``1/10*x``), a negative one as a subtraction (``a - 1/10*x``),
and parentheses go exactly where precedence needs them (``1/4*(a + b)``, ``a - (b + c)``,
``a/(b*c)``, ``(-x)**2``). The only simplifications: a factor 1 is left out, a term or
product with a factor 0 is 0, signs of factors multiply (``a*(-1/2)`` is ``-a*1/2``), a
sum inside a sum loses its parentheses (``a + (b - c)`` is ``a + b - c``), and a product of
a text with itself is its square (``(x - mu)**2``).

    Text(body, prec, negative)  a formula: its text without the leading minus, how tightly
                                that binds (ADD < MUL < POW < ATOM), and whether a minus
                                goes before it; ``str()`` writes it whole
    atom(label)                 a name, never parenthesised
    number(q)                   a rational (fmpq, Fraction or int): ``3``, ``1/10``, ``-2``
    add(*terms)                 a + b - c
    times(*factors)             a*b*c (a*a: a**2)
    over(a, b)                  a/b
    power(a, e)                 a**e
    call(name, *args)           name(a, b)
"""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

ADD, MUL, POW, ATOM = 1, 2, 3, 4  # how tightly a text binds (SymPy's precedence, in its order)


class Text(NamedTuple):
    """A formula as text: ``body`` without its sign, ``prec`` how tightly the body binds
    (ADD, MUL, POW or ATOM), ``negative`` whether a minus goes before it (such a text
    binds as a sum: ``x*(-a)``). ``str(t)`` is the whole formula."""

    body: str
    prec: int
    negative: bool = False

    def __str__(self) -> str:
        return "-" + _wrap(self.body, self.prec <= ADD) if self.negative else self.body


ZERO, ONE, TWO = Text("0", ATOM), Text("1", ATOM), Text("2", ATOM)


def _wrap(text: str, needed: bool) -> str:
    return f"({text})" if needed else text


def atom(label: str) -> Text:
    """A name (a quantity's label), printed as it is and never parenthesised."""
    return Text(label, ATOM)


def number(q) -> Text:
    """A rational number (fmpq, Fraction or int) as SymPy writes it: ``3``, ``1/10``,
    ``-2`` (a negative number is a negative text)."""
    q = Fraction(int(q.p), int(q.q)) if hasattr(q, "p") else Fraction(q)
    p = abs(q.numerator)
    return Text(str(p), ATOM, q < 0) if q.denominator == 1 else Text(f"{p}/{q.denominator}", MUL, q < 0)


def neg(a: Text) -> Text:
    """-a (0 stays 0; --a is a)."""
    return a if a == ZERO else a._replace(negative=not a.negative)


def add(*terms: Text) -> Text:
    """The sum of the terms in their order, a negative term as a subtraction (``a - b``,
    ``a - (b + c)``); terms that are 0 are left out (all of them: 0), one term is itself."""
    terms = [t for t in terms if t != ZERO]
    if not terms:
        return ZERO
    if len(terms) == 1:
        return terms[0]
    parts = [str(terms[0])]
    for t in terms[1:]:
        if t.negative:
            parts.append(" - " + _wrap(t.body, t.prec <= ADD))
        elif t.prec == ADD and t.body.startswith("-"):  # a sum whose first term is negative: a + (-b + c) is a - b + c
            parts.append(" - " + t.body[1:])
        else:
            parts.append(" + " + t.body)
    return Text("".join(parts), ADD)


def times(*factors: Text) -> Text:
    """The product of the factors in their order (``1/10*x``, ``a*(b + c)``); a factor 1 is
    left out, a factor 0 makes 0, the factors' signs multiply into one, and a product of
    two equal factors is a square (``(x - mu)**2``)."""
    if ZERO in factors:
        return ZERO
    if len(factors) == 2:  # (a dot product's every term: the rules below, for two factors)
        a, b = factors
        if a == b:
            return power(a, TWO)
        if a.prec == ATOM and a.body == "1" or b.prec == ATOM and b.body == "1":
            return _times(factors)
        return Text((a.body if a.prec >= MUL else f"({a.body})") + "*" + (b.body if b.prec >= MUL else f"({b.body})"),
                    MUL, a.negative != b.negative)
    return _times(factors)


def _times(factors: tuple[Text, ...]) -> Text:
    """:func:`times` of factors none of which is 0."""
    negative, kept = False, []
    for f in factors:
        negative ^= f.negative
        if f.body != "1" or f.prec != ATOM:
            kept.append(f)
    if len(kept) == 1:
        return kept[0]._replace(negative=negative)
    if not kept:
        return Text("1", ATOM, negative)
    return Text("*".join(f.body if f.prec >= MUL else f"({f.body})" for f in kept), MUL, negative)


def over(a: Text, b: Text) -> Text:
    """a/b (``a/(b*c)``, ``(a + b)/c``); a/1 is a, 0/b is 0."""
    if a == ZERO or b == ONE:
        return a
    return Text(f"{_wrap(a.body, a.prec < MUL)}/{_wrap(b.body, b.prec <= MUL)}", MUL, a.negative != b.negative)


def power(a: Text, e: Text) -> Text:
    """a**e (``(x - mu)**2``, ``x**(1/3)``, ``(-x)**2``, ``x**(-2)``)."""
    base = _wrap(str(a), a.negative or a.prec <= POW)
    return Text(f"{base}**{_wrap(str(e), e.negative or e.prec <= POW)}", POW)


def call(name: str, *args: Text) -> Text:
    """A function applied to its arguments: ``exp(-x)``, ``Max(0, x)``."""
    return Text(f"{name}({', '.join(map(str, args))})", ATOM)
