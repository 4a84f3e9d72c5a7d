"""``derive explain``: one quantity, its definition, its inputs, the reader's calculation
from the printed inputs, the exact one, and why their last digits differ.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from flint import arb, ctx, fmpq

from . import formula as F
from .byhand import READER_PREC, Reading, exact_text, printed_fraction
from .cells import Printer
from .derivation import Derivation
from .graph import is_exact
from .printing import text
from .rounding import format_fraction
from .steps import Ref


def explain(derivation: Derivation, printer: Printer, ref: Ref) -> list[str]:
    """The explanation of one forward quantity as lines of text.

    Sources: the reader's calculation is :meth:`derive.byhand.ByHand.reading`; the exact
    one evaluates the same operation on the exact values of the inputs.
    """
    node = derivation.graph.nodes[ref.id]
    meta = node.meta
    where = ", ".join(f"{k} {v}" for k, v in (("block", meta.block), ("head", meta.head)) if v)
    lines = [f"{meta.label}" + (f" ({where})" if where else "")]
    if node.op is None:
        return lines + [f"  a given value: {derivation.exact_text(ref)}"]
    lines.append(f"  definition: {meta.label} = {text(node.op.hand([written(derivation, p) for p in node.parents]))}")
    lines.append(f"  exact: {derivation.exact_text(ref)}")
    lines.append("  inputs (exact / printed):")
    for p in node.parents:
        pm = derivation.graph.nodes[p].meta
        if derivation.graph.nodes[p].op is None and not pm.param:
            continue
        pref = Ref("before", p)
        shown = printer.text.get(pref, "not printed")
        lines.append(f"    {pm.label} = {derivation.exact_text(pref)}  ~ {printer.byhand._digits(derivation.value(pref))}"
                     f"  printed: {shown}")
    reading = printer.byhand.reading(ref)
    if reading is None:  # (printed inputs that leave the step undefined, as ln 0.000, or no certain digits)
        return lines + ["  the reader, from the printed inputs: no recalculation (the step is undefined from the "
                        f"printed values, or their digits are not certain); printed: {printer.text.get(ref, 'not printed')}"]
    exact_calc = text(node.op.hand([printer.byhand._digits_expr(derivation.value(Ref("before", p)))
                                    for p in node.parents]))
    lines.append(f"  the reader, from the printed inputs: {reading.calculation} -> {reading.reader}")
    lines.append(f"  exact: {exact_calc} = {reading.exact_digits} -> {reading.correct}")
    lines.append("  " + why(reading, printer, derivation.value(ref)))
    return lines


def written(derivation: Derivation, node_id: int) -> F.Node:
    """How a definition writes a parent: its Name, the number of a constant, or, for a
    scratch value (x - mu, sqrt(d_k)), its own operation over its parents."""
    node = derivation.graph.nodes[node_id]
    if node.meta.symbol:
        return node.meta.name
    if node.op is None:
        return F.number(Fraction(int(node.leaf.p), int(node.leaf.q)))
    return node.op.hand([written(derivation, p) for p in node.parents])


def why(reading: Reading, printer: Printer, exact=None) -> str:
    """The sentence that says why the reader's digit and the correct one agree or not,
    with the digits that decide it: the rounding boundary between them, computed exactly
    for the run's rounding mode. ``exact`` is the quantity's certified value (fmpq or arb
    ball; None: no claim about which side of a boundary it lies on)."""
    fmt = printer.fmt
    unit = Fraction(1, 10 ** fmt.places) if fmt.places is not None else None
    mine = printer.byhand._value_text(reading.value) if reading.value is not None else reading.reader
    if reading.tie:
        q = Fraction(int(reading.value.p), int(reading.value.q))
        under = {mode: (format_fraction(q, dataclasses.replace(fmt, mode=mode, minus="-")) or "?")
                 for mode in ("floor", "ceiling", "half-away", "half-even")}
        head = (f"why: the reader's result {mine} lies exactly on the rounding boundary between {under['floor']} "
                f"and {under['ceiling']}, so its last digit depends on the tie rule (half-away gives "
                f"{under['half-away']}, half-even {under['half-even']}); ")
        side = _side(exact, q)
        if side == "on":
            return head + (f"the exact value is {exact_text(q, (fmt.places or 0) + 2)} as well, on the boundary "
                           f"itself, and {fmt.mode} rounds it to {reading.correct}.")
        if side is None:
            return head + f"the exact value {reading.exact_digits} rounds to {reading.correct}."
        return head + f"the exact value {reading.exact_digits} lies {side} the boundary and rounds to {reading.correct}."
    if not reading.differs:
        span = _interval(printed_fraction(reading.correct), fmt)
        where = f" between the rounding boundaries {span[0]} and {span[1]}" if span else ""
        return (f"why: the reader's {mine} and the exact {reading.exact_digits} both lie{where}, so both round to "
                f"{reading.correct}: the rounding errors of the printed inputs (each off by {_input_error(fmt)}) "
                "do not cross a rounding boundary here.")
    if unit is not None:
        a, b = printed_fraction(reading.reader), printed_fraction(reading.correct)
        crossed = [exact_text(x, fmt.places + 2) for x in _boundaries(a, b, fmt)]
        if len(crossed) > 4:
            crossed = crossed[:2] + ["...", crossed[-1]]
        across = (f"the rounding boundary {crossed[0]}" if len(crossed) == 1 else
                  f"the rounding boundaries {', '.join(crossed[:-1])} and {crossed[-1]}")
        return (f"why: the printed inputs are each off by {_input_error(fmt)} and together move the result "
                f"across {across}: the reader lands on the "
                f"{'upper' if a > b else 'lower'} side ({mine} -> {reading.reader}), the exact value on the other "
                f"({reading.exact_digits} -> {reading.correct}).")
    return (f"why: the rounding errors of the printed inputs move the result across a rounding boundary: "
            f"the reader gets {reading.reader}, the exact value rounds to {reading.correct}.")


def _input_error(fmt) -> str:
    """How far a printed input may lie from its exact value: half a unit in the last place
    under a half mode, less than a whole unit under a directed one (floor, ceiling, down)."""
    if fmt.mode in ("half-away", "half-even"):
        return "up to half a unit in the last place" if fmt.places is None else \
            f"up to {exact_text(Fraction(1, 2 * 10 ** fmt.places), fmt.places + 2)}"
    return "less than a unit in the last place" if fmt.places is None else \
        f"less than {exact_text(Fraction(1, 10 ** fmt.places), fmt.places + 2)}"


def _boundaries(a: Fraction, b: Fraction, fmt) -> list[Fraction]:
    """The rounding boundaries between two printed values ``a`` and ``b`` (whole units
    apart) under ``fmt.mode``, in increasing order: the midpoints between neighbouring
    printed values (half modes); the printed values themselves above the lower one for
    floor (and down above 0), where values from a printed value upward round to it; below
    the upper one for ceiling (and down below 0)."""
    unit = Fraction(1, 10 ** fmt.places)
    low, high = min(a, b), max(a, b)
    steps = int((high - low) / unit)
    if fmt.mode in ("half-away", "half-even"):
        return [low + (k + Fraction(1, 2)) * unit for k in range(steps)]
    if fmt.mode == "floor" or (fmt.mode == "down" and high > 0):
        return [low + (k + 1) * unit for k in range(steps)]
    return [low + k * unit for k in range(steps)]


def _side(exact, q: Fraction) -> str | None:
    """Where the certified value ``exact`` lies from ``q``: "above", "below", "on" (exactly
    equal), or None when its ball cannot tell (or no value was given)."""
    if exact is None:
        return None
    if is_exact(exact):
        value = Fraction(int(exact.p), int(exact.q))
        return "on" if value == q else "above" if value > q else "below"
    point = arb(fmpq(q.numerator, q.denominator))
    return "above" if exact > point else "below" if exact < point else None


def _interval(correct: Fraction, fmt) -> tuple[str, str] | None:
    """The rounding boundaries around ``correct``: the values between them round to it."""
    if fmt.places is None:
        return None
    unit = Fraction(1, 10 ** fmt.places)
    if fmt.mode in ("half-away", "half-even"):
        low, high = correct - unit / 2, correct + unit / 2
    elif fmt.mode == "floor" or (fmt.mode == "down" and correct > 0):
        low, high = correct, correct + unit
    elif fmt.mode == "ceiling" or (fmt.mode == "down" and correct < 0):
        low, high = correct - unit, correct
    else:
        low, high = -unit, unit
    return exact_text(low, fmt.places + 2), exact_text(high, fmt.places + 2)
