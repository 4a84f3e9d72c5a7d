"""Checking a note under a table: a reader's calculation from the printed inputs.

derive writes, under a table, notes such as ``u_1[1]: from the printed inputs, (-0.500 -
0.000) / 0.612 = -0.81699…, which rounds to −0.817; the exact value -0.81648… rounds to
−0.816``. A note is prose around formulas: it is cut into clauses (at top-level commas and
semicolons), the leading words of each clause are read as words, and the rest as a
formula by :mod:`derive.mathread`. Each relation is checked:

- ``a = b``: the two sides are equal (a value written with ``…`` has its digits cut: the
  other side, cut at its places, gives it; a plain decimal is equal exactly, or is the
  other side correctly rounded);
- ``a rounds to b`` (or a clause ``which rounds to b`` / ``which gives b`` after a
  value): ``a`` rounded at ``b``'s places under the run's rounding rule gives ``b``;
- after the words ``the exact value``, the value is the named quantity's: its digits are
  the exact value's, cut.

A side holding numbers written with ``…`` (``2.777425995… + 0.617205760…``) is a ball over
every number with those digits (:func:`_evaluate`); an equation with such a side holds when
the other side's value lies in it (two such sides: when the balls overlap). After a chain
that ends in cut digits, ``which rounds to`` rounds the chain's full value: its first side
computed from exact inputs (``1.7320393 · 1.6035583 - …``), not the ball of its cut terms.

The note is ``explained`` when every relation holds and at least one was checked (it is
right arithmetic from rounded inputs, whatever the exact value is), ``wrong`` when one does
not hold, and ``not checked`` when it has no formula, or when a number in it is beyond the
checker's bounds (:func:`derive.handfile.value_limit`: more than MAX_PLACES places, as a
value in a table, or MAX_PLACES + CUT_PLACES for digits written with ``…``), with the reason.
"""

from __future__ import annotations

import re

from fractions import Fraction

from flint import arb, ctx, fmpq

from . import mathread
from .byhand import READER_PREC
from .derivation import Derivation
from .errors import DeriveError
from .evaluate import MAX_PREC
from .handfile import MAX_PLACES, Entry, _split_top, decimal_places, value_limit
from .mathread import Bin, Call, Neg, Num, Paren, Sym
from .names import find
from .printing import excerpt
from .rounding import Format, format_value

WORDS_BEFORE_A_ROUNDING = ("rounds to", "gives", "round to")
CUT_PLACES = 2  # a note's cut digits carry two places more than its values (byhand.ByHand.digits): at
# MAX_PLACES places, 2.777425995… has MAX_PLACES + 2


VALUE_WITH_WORKING = re.compile(r"^(?P<value>[-\u2212]?\d+(?:\.\d+)?)\s*\((?P<working>(?:[^()]*\([^()]*\))*[^()=]*=[^()]*)\)$")


def check_note(derivation: Derivation, entry: Entry, mode: str) -> tuple[str, str, str | None]:
    """(status, message, name) for a note (see the module docstring)."""
    text = entry.note.strip()
    name, body = None, text
    head, sep, rest = text.partition(":")
    if sep and len(head) < 60 and "=" not in head:
        name, body = head.strip(), rest
    label = name or "note"
    quantity = _quantity(derivation, name, entry)  # (its Ref)
    checked, failures = 0, []
    previous, previous_loose = None, False  # the full value of the last formula
    for clause in [c for part in _split_top(body, ";") for c in _split_top(part, ",")]:
        words, formula = _words(clause.strip().rstrip(".").strip())
        if not formula:
            continue
        shown = VALUE_WITH_WORKING.match(formula)
        if shown:  # 0.494 (2.910 / 5.885 = 0.49447…): the working, which rounds to the value before it
            formula = f"{shown['working']} \u2248 {shown['value']}"
        try:
            chain = mathread.read(formula)
        except DeriveError:
            continue
        written = mathread.numbers(chain)
        if not written:
            continue
        limit = next((r for r in (value_limit(n.text, MAX_PLACES + CUT_PLACES * n.cut) for n in written)
                      if r is not None), None)
        if limit is not None:
            return "not checked", f"{label}: not checked: {limit}", name
        exprs, rels = list(chain.exprs), list(chain.rels)
        phrase = " ".join(words).lower()
        if previous is not None and phrase.endswith(WORDS_BEFORE_A_ROUNDING):
            exprs, rels = [None] + exprs, ["rounds to"] + rels
        values, loose = [], []  # loose: the value is a ball over inputs written with cut digits
        for k, expr in enumerate(exprs):
            if expr is None:
                values.append(previous)
                loose.append(previous_loose)
                continue
            if k == 0 and "exact" in phrase and quantity is not None and _is_number(expr):
                values.append(_exact_value(derivation, quantity))
                loose.append(False)
                if not _cut_of(derivation, quantity, expr):
                    failures.append(f"{excerpt(mathread.show(expr))} is not the exact value's digits")
                checked += 1
                continue
            try:
                value, cut_inputs = _evaluate(expr)
            except (ValueError, DeriveError, ArithmeticError):
                value, cut_inputs = None, False
            values.append(value)
            loose.append(cut_inputs)
        for k, rel in enumerate(rels):
            left, right = values[k], values[k + 1]
            if left is None or right is None:
                continue
            checked += 1
            if not _holds(left, rel, right, exprs[k + 1], mode, loose[k], loose[k + 1]):
                shown_left = excerpt(mathread.show(exprs[k])) if exprs[k] is not None else "the value before"
                failures.append(f"{shown_left} {rel} {excerpt(mathread.show(exprs[k + 1]))} does not hold")
        if values and values[-1] is not None:
            previous, previous_loose = values[-1], loose[-1]
        if values and isinstance(exprs[-1], (Num, Neg)) and len(values) > 1 and values[-2] is not None \
                and _cut(exprs[-1]):
            previous, previous_loose = _full(values[:-1], loose[:-1])  # the full value, not its cut digits
    if failures:
        return "wrong", f"{label}: the note's calculation is wrong: " + "; ".join(failures), name
    if not checked:
        return "not checked", f"{label}: a note in words", name
    return "explained", (f"{label}: a reader's calculation from the printed inputs; its arithmetic and "
                         f"roundings hold ({checked} checked)"), name


def _full(values: list, loose: list) -> tuple:
    """The full value of a chain's sides before its cut digits, and whether it is a ball over
    cut inputs: the first side computed from exact inputs (``1.7320393 · 1.6035583 -
    0.5773464 · (-1.0690389)``: every later side was cut from it), else the last side (a
    ball over cut inputs: ``0.195390… / (0.195390… + 1.781067… + 2.911995… + 1)``)."""
    exact = [(v, False) for v, wide in zip(values, loose) if v is not None and not wide]
    return exact[0] if exact else (values[-1], loose[-1])


def _quantity(derivation: Derivation, name: str | None, entry: Entry):
    """The quantity a note is about (its Ref), or None."""
    if not name:
        return None
    try:
        node = mathread.read(name).exprs[0]
        refs = find(derivation, mathread.label(node), entry.block, entry.head)
    except DeriveError:
        return None
    return refs[0] if len(refs) == 1 else None


def _words(clause: str) -> tuple[list[str], str]:
    """The clause's leading words, and the rest (the formula, ``""`` when there is none)."""
    tokens = clause.split(" ")
    k = 0
    while k < len(tokens) and (tokens[k].isalpha() and tokens[k] not in mathread.FUNCTIONS
                               and not (len(tokens[k]) == 1 and k + 1 < len(tokens) and tokens[k + 1] in "+-*/=")):
        k += 1
    return tokens[:k], " ".join(tokens[k:]).strip()


def _is_number(node) -> bool:
    return isinstance(node, Num) or isinstance(node, Neg) and isinstance(node.a, Num)


def _cut(node) -> bool:
    node = node.a if isinstance(node, Neg) else node
    return isinstance(node, Num) and node.cut


def _text(node) -> str:
    return ("-" + node.a.text) if isinstance(node, Neg) else node.text


def _exact_value(derivation: Derivation, ref):
    """The quantity's exact value: the rational the rounding's exact path found it to be
    (a tie, 0.0625, which no ball decides), else its certified ball."""
    rational = derivation.forms.known_rational(ref)
    return fmpq(rational.numerator, rational.denominator) if rational is not None else derivation.value(ref)


def _cut_of(derivation: Derivation, ref, node) -> bool:
    """``node`` (``-0.81648…``) is the quantity ``ref``'s exact value with its digits cut at
    the written places, the value evaluated at a higher precision until the cut is decided
    (-2 + 1e-299 is -1.99999…: 1,000 bits); True when no precision up to MAX_PREC decides it
    (nothing to say against the note)."""
    places = decimal_places(_text(node))
    prec = READER_PREC
    while True:
        value = _exact_value(derivation, ref) if prec == READER_PREC else derivation.value(ref, prec)
        with ctx.workprec(max(prec, READER_PREC)):
            cut = format_value(value, Format(places=places or 0, mode="down"))
        if cut is not None:
            return _equal_text(cut, _text(node))
        if prec >= MAX_PREC:
            return True
        prec *= 2


def _equal_text(a: str, b: str) -> bool:
    from fractions import Fraction
    return Fraction(a.replace("\u2212", "-")) == Fraction(b.replace("\u2212", "-"))


def _evaluate(expr) -> tuple:
    """The value of a note's formula, and whether numbers written with cut digits are among
    its inputs (``0.19688… / (0.19688… + 1.77762…)``): each then stands for every number
    with those digits (cut toward zero, so 0.19688… is in [0.19688, 0.19689]) and the value
    is a ball holding every result (a bare cut number too: ``-0.006460… rounds to -0.006461``).

    Raises:
        ValueError, DeriveError, ArithmeticError: as :func:`derive.mathread.evaluate`."""
    if _is_number(expr):  # a bare number: its digits, or cut, every number with those digits
        return (_cut_ball(_text(expr)), True) if _cut(expr) else (mathread.evaluate(expr), False)
    balls: dict = {}

    def swap(node):
        if isinstance(node, Num) and node.cut:
            name = Sym(f"cut{len(balls)}")
            balls[name] = _cut_ball(node.text)
            return name
        if isinstance(node, Bin):
            return Bin(node.op, swap(node.a), swap(node.b))
        if isinstance(node, Neg):
            return Neg(swap(node.a))
        if isinstance(node, Call):
            return Call(node.name, tuple(swap(a) for a in node.args), node.base)
        if isinstance(node, Paren):
            return Paren(tuple(swap(i) for i in node.items))
        return node

    swapped = swap(expr)
    if not balls:
        return mathread.evaluate(expr), False

    def resolve(name):  # a cut number's ball; any other name is no number (2.49067…u_5)
        if name in balls:
            return balls[name]
        raise ValueError(f"{mathread.show(name)} is a name, not a number")

    with ctx.workprec(READER_PREC):
        return mathread.evaluate(swapped, resolve, prec=READER_PREC), True


def _cut_ball(text: str) -> arb:
    """The numbers whose digits ``text`` gives when cut toward zero: [t, t + 10^-places]
    for t >= 0, [t - 10^-places, t] below 0."""
    half = fmpq(1, 2 * 10 ** (decimal_places(text) or 0))
    t = fmpq(*Fraction(text).as_integer_ratio())
    return arb(t - half if text.startswith("-") else t + half, half)


def _overlaps(left, written) -> bool:
    """A ball over cut inputs gives the written number: some value in it has the written
    digits (cut: [t, t + ulp] toward zero) or rounds to them ([t - ulp/2, t + ulp/2])."""
    text = _text(written)
    t = fmpq(*Fraction(text).as_integer_ratio())
    ulp = fmpq(1, 10 ** (decimal_places(text) or 0))
    if _cut(written):
        lo, hi = (t - ulp, t) if text.startswith("-") else (t, t + ulp)
    else:
        lo, hi = t - ulp / 2, t + ulp / 2
    ball = arb(left)
    return not (ball.upper() < arb(lo)) and not (ball.lower() > arb(hi))


def _holds(left, rel: str, right, written, mode: str, loose: bool = False, loose_right: bool = False) -> bool:
    """One relation of a note between two values (see the module docstring); with
    ``loose`` (``loose_right``), ``left`` (``right``) is a ball over cut inputs
    (:func:`_evaluate`): ``written`` is the right side's formula."""
    if loose and _is_number(written):
        return _overlaps(left, written)
    if (loose or loose_right) and not _is_number(written):  # some number in both balls
        with ctx.workprec(READER_PREC):
            return bool(arb(left).overlaps(arb(right)))
    if _is_number(written):
        text = _text(written)
        places = decimal_places(text) or 0
        with ctx.workprec(READER_PREC):
            if _cut(written):
                cut = format_value(left, Format(places=places, mode="down"))
                return cut is not None and _equal_text(cut, text)
            rounded = format_value(left, Format(places=places, mode=mode))
        if rel == "rounds to":
            return rounded is not None and _equal_text(rounded, text)
        if mathread_equal(left, right):
            return True
        return rounded is not None and _equal_text(rounded, text)
    return mathread_equal(left, right)


def mathread_equal(a, b) -> bool:
    """Two values are equal (rationals exactly, balls to 30 digits)."""
    from .check import _same_value
    return _same_value(a, b, 30)
