"""Correctly rounded decimals of a graph's quantities (DESIGN.md, "Correct rounding").

Each quantity is rounded from its ball at the working precision; a ball that straddles a
rounding boundary is tried on its exact form first (at the starting precision: almost
always a rational sitting on the boundary), then evaluated again at doubled precision up
to MAX_PREC bits, and what is left takes the exact path or is reported as undecided.
In each pass the balls of a large table are first rounded together in float64 where a
rigorous error bound decides them (:func:`~derive.rounding.format_balls`; at fixed places),
and only the others one by one.
"""

from __future__ import annotations

from itertools import compress, repeat
from operator import is_

from .evaluate import MAX_PREC, START_PREC, Evaluator, gc_paused, progress
from .exact import EXACT_PATH_SECONDS, EXACT_PATH_TOTAL, ExactForms
from flint import ctx, fmpq

from .rounding import Format, format_balls, format_fraction, format_value, working_precision
from .steps import Ref

ZERO = fmpq(0)

UNDECIDED = "undecided"
EARLY_SECONDS = 0.25  # CPU time the exact path may spend on a quantity before the precision is raised
EARLY_TOTAL = 1.0  # ... and on all of them together, in one rounding (then: the precision is raised)


class Rounder:
    """Rounds the quantities of one graph under any :class:`~derive.rounding.Format`.

    Args:
        evaluator: the values, at any working precision. forms: their exact forms, for
            the exact path. file: the case file that errors name.
    """

    def __init__(self, evaluator: Evaluator, forms: ExactForms, file: str | None = None):
        self.evaluator = evaluator
        self.forms = forms
        self.file = file
        self._single: dict[tuple[Ref, Format], str] = {}  # (see :meth:`decimal`)

    def decimals(self, refs, fmt: Format) -> dict[Ref, str]:
        """Correctly rounded text for each ref, in the order of ``refs`` (whichever pass
        decided it: the early exact path is bounded in CPU time, so which pass decides a
        value can depend on the machine's load); ``undecided`` where no precision up to
        MAX_PREC and no exact simplification decides the last digit.

        Raises:
            EvaluationError: the forward pass is undefined (raised by the evaluation). A value too
                large to write out at fixed places is printed in scientific form.
        """
        out: dict[Ref, str] = {}
        pending = order = list(dict.fromkeys(refs))
        meter = progress()
        prec = first = max(START_PREC, _bits_for(fmt))
        while pending and prec <= MAX_PREC:
            ev_prec = self.evaluator.evaluation(prec).prec
            with ctx.workprec(working_precision(ev_prec, fmt)):  # (set once here, not once per value)
                pending = self._round(pending, ev_prec, fmt, prec == first, out, meter)
            prec = max(prec, ev_prec) * 2
        undecided = f"{UNDECIDED} at 10^-{fmt.places}" if fmt.places is not None else UNDECIDED
        for ref, text in zip(pending, self._exact_rationals(pending, fmt, EXACT_PATH_SECONDS)):
            out[ref] = undecided if text is None else text
            meter.advance()
        return out if list(out) == order else {ref: out[ref] for ref in order}

    def decimals_each(self, refs, fmts: list[Format]) -> list[dict[Ref, str]]:
        """:meth:`decimals` of ``refs`` under each of ``fmts``, in that order, after one
        evaluation at the highest precision any of them starts at: the evaluation kept
        answers the others (crane's JSON, 3 places and the 30 significant figures of
        ``value``: one evaluation at 164 bits instead of one at 128 and one at 164).

        Raises:
            EvaluationError: as :meth:`decimals`."""
        refs = list(dict.fromkeys(refs))
        if refs and fmts:
            self.evaluator.evaluation(max(max(START_PREC, _bits_for(fmt)) for fmt in fmts))
        return [self.decimals(refs, fmt) for fmt in fmts]

    def _round(self, pending: list[Ref], ev_prec: int, fmt: Format, first: bool, out: dict, meter) -> list[Ref]:
        """One pass of :meth:`decimals` over ``pending`` at the evaluation of ``ev_prec``
        bits (``first``: the first pass): the text of each value the ball decides goes into
        ``out``; returns the refs still undecided. Most balls are decided at once in float64
        (:func:`~derive.rounding.format_balls`, certified); the rest one by one."""
        values = self.evaluator.values(pending, ev_prec)
        # (Paused: importing numpy, the first time, would run full collections over every live
        # object of a large case: 0.33 s of CPU instead of 0.12 at d_model 128.)
        with gc_paused():
            texts = format_balls(values, fmt)  # (None: left to the value's own rounding below)
        out.update(zip(pending, texts))  # (in the order of pending; each None is replaced or taken out below)
        left = list(compress(range(len(texts)), map(is_, texts, repeat(None))))  # (found in C)
        meter.advance(len(texts) - len(left))
        # A ball that still touches a rounding boundary at the first precision is almost
        # always a rational sitting on it (an e^s / e^s = 1 weight times a rational value, or
        # an exact 0 made of balls): its exact form is tried, briefly (EARLY_SECONDS), before
        # re-evaluating the whole graph at up to MAX_PREC bits (seven passes, minutes on a
        # large case). A ball as wide as the last digit only lacks precision: no SymPy for
        # it. (A tiny value that is not 0, as 1e-395 made of terms of 1e-132, is decided by
        # the precision; its simplification may take seconds and is given up early.)
        zero = format_value(ZERO, fmt)  # (an exact 0's text, made once: crane's 6,048 masked weights)
        texts = {i: zero if type(values[i]) is fmpq and not values[i] else format_value(values[i], fmt) for i in left}
        early = [i for i in left if texts[i] is None and first and _on_boundary(values[i], fmt)]
        early_texts = self._exact_rationals([pending[i] for i in early], fmt, EARLY_SECONDS, EARLY_TOTAL)
        for i, text in zip(early, early_texts):
            texts[i] = text
        still = []
        for i in left:
            ref, text = pending[i], texts[i]
            if text is None:
                del out[ref]  # (a later pass puts it back; decimals restores the order of refs)
                still.append(ref)
            else:
                out[ref] = text
                meter.advance()
        return still

    def decimal(self, ref: Ref, fmt: Format) -> str:
        """Correctly rounded text of one quantity (see :meth:`decimals`), kept: a check asks
        for the same quantity at the same places again and again (the SGD lines of a long
        file tried against each row of a weight: 0.4 s of 100,000 lines)."""
        key = (ref, fmt)
        text = self._single.get(key)
        if text is None:
            text = self._single[key] = self.decimals([ref], fmt)[ref]
        return text

    def _exact_rationals(self, refs: list[Ref], fmt: Format, seconds: float,
                         total: float = EXACT_PATH_TOTAL) -> list[str | None]:
        """The correctly rounded text of each quantity (a forward one, a derivative, a
        weight after the step) whose exact form simplifies to a rational within ``seconds``
        of CPU time, all of them within ``total`` (:meth:`ExactForms.rationals`), else None."""
        known = self.forms.rationals(refs, seconds, total) if refs else {}
        return [None if known.get(ref) is None else format_fraction(known[ref], fmt) for ref in refs]


def _bits_for(fmt: Format) -> int:
    """Bits a value of size about 1 needs for its last printed digit, with 64 to spare
    (34 places: 177 bits; the default 3 places stay at START_PREC)."""
    digits = fmt.places if fmt.places is not None else fmt.sig
    return int(digits * 3.33) + 64


def _on_boundary(value, fmt: Format) -> bool:
    """Whether an undecided ball is far narrower than its last printed digit (10^6 times),
    so it sits on a rounding boundary (likely a rational: worth the exact path), rather
    than being too wide for the places asked (which only more precision decides); at
    significant figures, a ball around 0 narrower than 10^-(sig + 6) (likely an exact 0
    made of balls, as q_3 . k_1 = 0 or mu'_1 = 0 of cat-climbed: seven evaluations up to
    10,432 bits never decide its first figure)."""
    if not hasattr(value, "rad"):
        return True
    radius = value.rad()
    if fmt.places is not None:
        return radius * 10 ** (fmt.places + 6) < 1
    if value.contains(0):  # (at significant figures a ball around 0 never decides: narrow, it is likely an exact 0)
        return radius * 10 ** (fmt.sig + 6) < 1
    return radius * 10 ** (fmt.sig + 6) < abs(value.mid())
