"""``derive explain``: one quantity, its definition, its inputs, the reader's calculation
from the printed inputs, the exact one, and why their last digits differ.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from fractions import Fraction

from flint import arb, ctx, fmpq

from . import formula as F
from .byhand import (READER_PREC, Reading, exact_text, is_number, logit_gradient, logit_gradient_of,
                     printed_fraction)
from .cells import Printer
from .derivation import Derivation
from .graph import is_exact
from .name import after_step, grad_of
from .names import SHARED, as_stepped, hidden_by_mask, label_of
from .printing import plain_text, text
from .rounding import format_fraction
from .steps import Ref


# what each of the case's settings is (its sizes, d, V, T, ..., say it in their meanings: Checker.settings)
SETTING_WORDS = {"eps": "the epsilon of the norm", "eta": "the learning rate of the SGD step, theta - eta dL/dtheta",
                 "d_k": "the width of a head's queries and keys", "d_model": "the width of the model's rows",
                 "h": "the number of attention heads"}


def explain_setting(name: str, meanings: list[tuple[Fraction, str]]) -> list[str]:
    """The explanation of one of the case's settings or sizes (``eta``, ``d_k``, ``T``), as
    ``derive check`` judges a line that defines it: what it is and its value in the case
    (each of its values, when the name has several meanings: ``T = 1 (the temperature) or
    T = 5 (the number of tokens)``); ``meanings`` as :meth:`derive.check.Checker.setting`
    gives them."""
    said = " or ".join(f"{name} = {exact_text(value)}" + (f" ({meaning})" if meaning else "")
                       for value, meaning in meanings)
    what = f"{SETTING_WORDS[name]}: " if name in SETTING_WORDS else ""
    return [name, f"  {what}{said} in this case (one of its settings, not a computed quantity)"]


def explain_masked_score(derivation: Derivation, printer: Printer, weight: Ref, exp: bool = False) -> list[str]:
    """The explanation of a score the mask hides, s_{i,j} (key j hidden from query i),
    which the graph does not hold: -inf by the mask, never computed, so its weight a_{i,j}
    (``weight``, :func:`derive.names.masked_score`) is exactly 0. Printed: the last row's
    table writes -inf (with the format's minus and ∞) for each key it hides; no table
    prints the other rows' scores. With ``exp``, of its e^s_{i,j}: e^-inf, exactly 0."""
    meta = derivation.meta(weight)
    where = ", ".join(f"{k} {v}" for k, v in (("block", meta.block), ("head", meta.head)) if v)
    if exp:
        return [str(meta.name.but(symbol="exp_s")) + (f" ({where})" if where else ""),
                f"  masked: exactly 0, e^-inf, never computed ({hidden_by_mask(meta)}, so {meta.label} is exactly 0 "
                "too)"]
    infinity = "-\u221e"  # (the ASCII minus, as explain writes every number)
    shown = infinity if meta.position == len(derivation.case.tokens) else None
    return [str(meta.name.but(symbol="s")) + (f" ({where})" if where else ""),
            f"  masked: {infinity}, never computed ({hidden_by_mask(meta)}, so {meta.label} is exactly 0)  "
            f"{_printed(shown)}"]


def _printed(shown: str | None) -> str:
    """What the page prints of a quantity, as explain's lines end: ``printed: 0.383``, or
    ``not printed`` when no table prints it."""
    return "not printed" if shown is None else f"printed: {shown}"


def explain(derivation: Derivation, printer: Printer, ref: Ref) -> list[str]:
    """:func:`_explain`, its numbers written with the ASCII minus, as the page's notes write
    them (a table's −0.5 is -0.5 here): one minus sign throughout."""
    return [line.replace("\u2212", "-") for line in _explain(derivation, printer, ref)]


def _explain(derivation: Derivation, printer: Printer, ref: Ref) -> list[str]:
    """The explanation of one quantity as lines of text: a quantity of the forward pass
    (before or after the SGD step, ``ref.phase`` ``before`` or ``after``), a weight after
    the step (``updated``, or ``after`` of a weight), a given value, or a derivative of L
    (``grad``). Every printed value is the chapter's (a given weight as its table prints
    it, ``-0.5``: :meth:`derive.cells.Printer.shown`).

    Sources: the reader's calculation is :meth:`derive.byhand.ByHand.reading` (the forward
    pass before the step and after it, and the SGD step theta - eta dL/dtheta, its inputs
    as printed);
    the exact one evaluates the same operation on the exact values of the inputs."""
    ref = as_stepped(derivation, ref)  # (a weight in the pass after the step: its value after the step)
    node = derivation.graph.nodes[ref.id]
    meta = node.meta
    shared = meta.symbol in SHARED and meta.block in derivation.graph.head_groups  # (read by a group of query heads)
    where = ", ".join(f"{k} {v}" for k, v in (("block", meta.block), ("key/value head" if shared else "head",
                                                                      meta.head)) if v)
    lines = [label_of(derivation, ref) + (f" ({where})" if where else "")]
    shown = printer.shown(ref)  # (None: no table prints it)
    if ref.phase == "grad":
        exact = derivation.exact_text(ref)
        lines += [f"  the derivative of L by {meta.label}, by reverse mode (the chain rule back from L)"] + \
            ([f"  exact: {exact}"] if exact != lines[0] else []) + \
            [f"  value: {printer.byhand.digits(derivation.value(ref))}  {_printed(shown)}"]
        logit = logit_gradient_of(derivation, ref)  # (dL/dz_i = (p_i - y_i) / T: the one derivative a reader works out)
        reading = printer.byhand.reading(ref) if logit else None
        if reading is None:
            return lines + ["  the reader, from the printed inputs: no recalculation (derive writes no by-hand form "
                            "of a weight's derivative)" if not logit else "  the reader, from the printed inputs: no "
                            f"recalculation ({label_of(derivation, logit[0])} is not printed with certain digits)"]
        p, y = logit
        exact_calc = text(logit_gradient(printer.byhand.digits_expr(derivation.value(p)), y, derivation))
        return lines + [f"  the reader, {plain_text(reading.whence())}: {reading.calculation} -> {reading.reader}",
                        f"  exact: {exact_calc} = {reading.exact_digits} -> {reading.correct}",
                        "  " + why(reading, printer, derivation.value(ref), _rounded(derivation, printer, [p]))]
    if node.masked:  # (an entry of a run of leaves that stand for masked entries)
        return lines + [f"  masked: exactly {derivation.exact_text(ref)}, never computed ({hidden_by_mask(meta)})  "
                        f"{_printed(shown)}"]
    if node.op is None and ref.phase != "updated":
        return lines + [f"  a given value: {derivation.exact_text(ref)}  {_printed(shown)}"]
    inputs, hand = _operation(derivation, ref)
    kept = " (not trained: conventions.trained)" if ref.phase == "updated" and len(inputs) == 1 else ""
    label, formula = label_of(derivation, ref), text(hand([written(derivation, r) for r in inputs]))
    if formula == label:  # (a name that is its own formula: e^z_␣roof = exp(z_␣roof), not e^z_␣roof again)
        formula = derivation.forms.definition_text(ref.id)
    lines.append(f"  definition: {label} = {formula}{kept}")
    lines.append(f"  exact: {derivation.exact_text(ref)}")
    lines.append("  inputs (exact / printed):")
    for r in _named_inputs(derivation, inputs):
        if derivation.graph.nodes[r.id].op is None and not derivation.graph.nodes[r.id].meta.param and \
                r.phase in ("before", "after"):
            continue
        label, exact = label_of(derivation, r), derivation.exact_text(r)  # (a derivative's exact text is its name)
        lines.append(f"    {label}{'' if exact == label else ' = ' + exact}  ~ "
                     f"{printer.byhand.digits(derivation.value(r))}  {_printed(printer.shown(r))}")
    reading = printer.byhand.reading(ref)
    if ref.phase == "updated" and len(inputs) == 2 and printer.shown(inputs[1]) is None:  # a derivative not printed
        if reading is None:
            return lines + [f"  the reader, from the printed inputs: no recalculation ({label_of(derivation, inputs[1])} "
                            f"is not printed); {_printed(shown)}"]
        # (the reader takes an unprinted derivative only when it is exactly 0: ByHand._gradient)
        return lines + [f"  the reader: {label_of(derivation, inputs[1])} is exactly 0 (no table prints it), so "
                        f"the weight does not move: {printer.shown(inputs[0])}; {_printed(shown)}"]
    if reading is None:  # (printed inputs that leave the step undefined, as ln 0.000, or no certain digits)
        return lines + ["  the reader, from the printed inputs: no recalculation (the step is undefined from the "
                        f"printed values, or their digits are not certain); {_printed(shown)}"]
    if shown is not None and shown != reading.correct and reading.reader == reading.correct:
        # (printed as given: -0.5, not -0.500; a quantity no table prints keeps its rounded digits)
        reading = dataclasses.replace(reading, reader=shown, correct=shown)
    exact_calc = text(hand([_exact_input(derivation, printer, r) for r in inputs]))
    lines.append(f"  the reader, {plain_text(reading.whence())}: {reading.calculation} -> {reading.reader}")
    lines.append(f"  exact: {exact_calc} = {reading.exact_digits} -> {reading.correct}")
    lines.append("  " + why(reading, printer, derivation.value(ref), _rounded(derivation, printer,
                                                                           _named_inputs(derivation, inputs))))
    return lines


def _exact_input(derivation: Derivation, printer: Printer, ref: Ref) -> F.Node:
    """An input of the exact calculation: its exact value's digits (a derivative's
    bracketed), or for an unnamed step, its own operation on its inputs (ln p of L = -ln p:
    -ln(0.39544…), as the reader writes it, not -(-0.92773…))."""
    node = derivation.graph.nodes[ref.id]
    if node.meta.symbol is None and node.op is not None and ref.phase != "grad":
        inputs, hand = _operation(derivation, ref)
        return hand([_exact_input(derivation, printer, r) for r in inputs])
    digits = printer.byhand.digits_expr(derivation.value(ref))
    return F.Group(digits) if ref.phase == "grad" else digits


def _operation(derivation: Derivation, ref: Ref) -> tuple[list[Ref], Callable[[list[F.Node]], F.Node]]:
    """The inputs of ``ref`` and how the reader writes its operation on them: a forward
    quantity's parents in its own pass (a weight in the pass after the step is its
    ``updated`` value) and its operation's by-hand form; a weight after the step, the
    weight and dL/dweight, and the SGD step theta - eta dL/dtheta (Rumelhart et al. 1986),
    or the weight alone when the case does not train it (conventions.trained)."""
    node = derivation.graph.nodes[ref.id]
    if ref.phase == "updated":
        trained = derivation.case.conventions.trained
        if trained is not None and node.meta.param not in trained:
            return [Ref("before", ref.id)], lambda parts: parts[0]
        eta = F.number(derivation.case.conventions.learning_rate)
        return [Ref("before", ref.id), Ref("grad", ref.id)], \
            lambda parts: F.Terms(parts[0], F.Neg(F.Times(eta, parts[1])))
    graph = derivation.graph
    inputs = [_weight_after(derivation, p) if ref.phase == "after" and graph.nodes[p].op is None
              and graph.nodes[p].meta.param else Ref(ref.phase, p) for p in node.parents]
    return inputs, node.op.hand


def _weight_after(derivation: Derivation, leaf: int) -> Ref:
    """A weight as the pass after the step reads it: its value after the step (phase
    ``updated``, the SGD step's table), or the weight as given (phase ``before``, where the
    page prints it) when the step leaves it where it was (not trained, or its derivative
    exactly 0): W_U of the seed, which trains E alone, is W_U after the step too."""
    value = derivation.value(Ref("after", leaf))
    return Ref("before", leaf) if is_exact(value) and value == derivation.graph.nodes[leaf].leaf else \
        Ref("updated", leaf)


def _rounded(derivation: Derivation, printer: Printer, inputs: list[Ref]) -> list[str]:
    """The labels of ``inputs`` that the page prints rounded (a printed value that is not
    the exact one): the inputs whose rounding errors move a reader's result."""
    out = []
    for r in inputs:
        shown, value = printer.shown(r), derivation.value(r)
        if shown is not None and is_number(shown) and not (is_exact(value) and Fraction(
                int(value.p), int(value.q)) == printed_fraction(shown)):
            out.append(label_of(derivation, r))
    return out


def _named_inputs(derivation: Derivation, inputs: list[Ref]) -> list[Ref]:
    """The quantities a definition's ``inputs`` write, each once, in order: an unnamed
    step (ln p in L = -ln p, sqrt(d_k) in s = q.k / sqrt(d_k)) by the inputs it writes in
    turn (p(␣roof), and the constant d_k), as the definition and the reader write it."""
    graph, out = derivation.graph, []
    for r in inputs:
        node = graph.nodes[r.id]
        if node.meta.symbol is None and node.op is not None:
            out += _named_inputs(derivation, _operation(derivation, r)[0])
        else:
            out.append(r)
    return list(dict.fromkeys(out))


def written(derivation: Derivation, ref: Ref | int) -> F.Node:
    """How a definition writes an input: its Name (dL/dtheta for a gradient, the name
    after the step in the pass after it), the number of a constant, or, for a scratch
    value (x - mu, sqrt(d_k)), its own operation over its parents. An int is a node id
    of the pass before the step."""
    ref = ref if isinstance(ref, Ref) else Ref("before", ref)
    node = derivation.graph.nodes[ref.id]
    if node.meta.symbol:
        name = node.meta.name
        return grad_of(name) if ref.phase == "grad" else after_step(name) if ref.phase != "before" else name
    if node.op is None:
        return F.number(Fraction(int(node.leaf.p), int(node.leaf.q)))
    return node.op.hand([written(derivation, Ref(ref.phase, p)) for p in node.parents])


def why(reading: Reading, printer: Printer, exact=None, rounded: list[str] | None = None) -> str:
    """The sentence that says why the reader's digit and the correct one agree or not,
    with the digits that decide it: the rounding boundary between them, computed exactly
    for the run's rounding mode. ``exact`` is the quantity's certified value (fmpq or arb
    ball; None: no claim about which side of a boundary it lies on); ``rounded``: the labels
    of the inputs the page prints rounded (:func:`_rounded`), one named as such (None: the
    printed inputs, in general)."""
    fmt = printer.fmt
    unit = Fraction(1, 10 ** fmt.places) if fmt.places is not None else None
    one = rounded is not None and len(rounded) == 1  # (one input printed rounded: named)
    mine = printer.byhand.value_text(reading.value) if reading.value is not None else reading.reader
    if reading.tie:
        q = Fraction(int(reading.value.p), int(reading.value.q))
        under = {mode: (format_fraction(q, dataclasses.replace(fmt, mode=mode, minus="-")) or "?")
                 for mode in ("floor", "ceiling", "half-away", "half-even")}
        rule = (f"so its last digit depends on the tie rule (half-away gives {under['half-away']}, half-even "
                f"{under['half-even']})" if under["half-away"] != under["half-even"] else
                f"which half-away and half-even both round to {under['half-away']}")
        head = (f"why: the reader's result {mine} lies exactly on the rounding boundary between {under['floor']} "
                f"and {under['ceiling']}, {rule}; ")
        side = _side(exact, q)
        if side == "on":
            return head + (f"the exact value is {exact_text(q, (fmt.places or 0) + 2)} as well, on the boundary "
                           f"itself, and {fmt.mode} rounds it to {reading.correct}.")
        if side is None:
            return head + f"the exact value {reading.exact_digits} rounds to {reading.correct}."
        return head + f"the exact value {reading.exact_digits} lies {side} the boundary and rounds to {reading.correct}."
    if not reading.differs:
        if exact is not None and is_exact(exact) and is_exact(reading.value) and exact == reading.value:
            # (not said: that the inputs are exact as printed; 0.152 / 0.152 = 1 is exact from rounded ones)
            return (f"why: the reader's calculation from the printed inputs gives the exact value itself, {mine}, "
                    f"printed {reading.correct}.")
        span = _interval(printed_fraction(reading.correct), fmt)
        where = f" lie between the rounding boundaries {span[0]} and {span[1]}, so both" if span else ""
        errors = f"the rounding error of the printed {rounded[0]} (off by" if one else \
            "the rounding errors of the printed inputs (each off by"
        return (f"why: the reader's {mine} and the exact {reading.exact_digits} both{where} round to "
                f"{reading.correct}: {errors} {_input_error(fmt)}) {'does' if one else 'do'} not cross a rounding "
                "boundary here.")
    if unit is not None:
        a, b = printed_fraction(reading.reader), printed_fraction(reading.correct)
        crossed = [exact_text(x, fmt.places + 2) for x in _boundaries(a, b, fmt)]
        if len(crossed) > 4:
            crossed = crossed[:2] + ["...", crossed[-1]]
        across = (f"the rounding boundary {crossed[0]}" if len(crossed) == 1 else
                  f"the rounding boundaries {', '.join(crossed[:-1])} and {crossed[-1]}")
        off = f"the printed {rounded[0]} is off by {_input_error(fmt)} and moves" if one else \
            f"the printed inputs are each off by {_input_error(fmt)} and together move"
        return (f"why: {off} the result across {across}: the reader lands on the "
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
