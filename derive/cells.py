"""Cell text shared by every renderer: a step's cells rounded under one :class:`Format`.

:class:`Printer` collects every quantity the derivation's steps refer to, rounds them in
one batch (so the precision escalation runs once for all of them), turns each cell into
text and gives the last-digit notes of a table (:mod:`derive.byhand`): the cells where a
reader who recomputes from the printed inputs gets another last digit or lands on a tie,
softmax rows whose printed weights do not add up to 1, and with ``carry="printed"`` the
drift of the student's chain from the exact values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from .byhand import ByHand, printed
from .derivation import Derivation
from .graph import approx, is_exact
from .name import after_step, cell_piece, code_span
from .printing import RichText, plain_text
from .rounding import Format, short_decimal
from .steps import Ref, Table, Vec, refs_of, step_refs, table_refs


SCIENTIFIC = re.compile(r"[-\u2212]?\d\.?\d*e([-\u2212]?\d+)")  # 1.078e4342944819 (not "undecided")


@dataclass(eq=False)
class Note:
    """A note under a table about the cells ``refs`` (a last-digit disagreement, a tie, a
    softmax row that does not add up to 1, or the drift of a carried chain): ``parts`` is
    rich text (prose strings and SymPy formulas over Names and printed numbers, see
    :mod:`derive.printing`), which each renderer prints in its notation; ``text`` is the
    same in the plain notation, for the terminal."""

    refs: list[Ref]
    parts: RichText

    @property
    def text(self) -> str:
        """The note in the plain notation."""
        return plain_text(self.parts)


class Printer:
    """Rounded text for the cells of ``steps``.

    Raises:
        EvaluationError: when the case's forward pass is undefined.
    """

    def __init__(self, derivation: Derivation, fmt: Format, carry: str = "exact"):
        self.derivation = derivation
        self.fmt = fmt
        refs = [r for step in derivation.steps for r in step_refs(step)]
        self.text = derivation.decimals(refs, fmt)
        whole = {r: short for step in derivation.steps for table in step.tables if table.short_exact
                 for r in table_refs(table) if (short := self._short(r)) is not None}  # numbers printed as given
        self.byhand = ByHand(derivation, fmt, self.text, carry, whole)

    def number(self, ref: Ref, short_exact: bool = False) -> str:
        """One quantity, rounded (or as the student carries it, with ``carry="printed"``);
        exact short decimals as they are when ``short_exact``."""
        if short_exact:
            short = self._short(ref)
            if short is not None:
                return short
        return self.byhand.carried(ref)

    def shown(self, ref: Ref) -> str | None:
        """``ref`` as the chapter prints it: a given number that a table prints as given
        (``-0.5``, not ``-0.500``: :func:`derive.rounding.short_decimal`) so, any other
        quantity correctly rounded; None when no step prints it."""
        if ref in self.byhand.whole:
            return self.byhand.whole[ref]
        return self.text.get(ref)

    def notes(self, refs) -> list[Note]:
        """The last-digit notes about ``refs`` (a table's or an equation's quantities),
        in order: by-hand disagreements and ties, softmax sums, and the chain's drift."""
        refs = [r for r in dict.fromkeys(refs) if r in self.text]
        if self.byhand.carry == "printed":
            out = [Note([ref], self._drift(ref)) for ref in refs if self.byhand.carried(ref) != self.text[ref]]
        else:
            out = [Note([r.ref], r.note_parts()) for r in self.byhand.readings(refs)]
        out += [Note(n.refs, n.note_parts()) for n in self.byhand.sum_notes(refs)]
        return out + [Note([ref], self._scientific(ref)) for ref in refs if self._is_scientific(ref)]

    def _is_scientific(self, ref: Ref) -> bool:
        """Whether a value asked for at fixed places was printed in scientific form (too
        large to write out: see :func:`derive.rounding.format_ball`)."""
        text = self.text[ref]  # (an exponent's "e" first: no pattern matched for every number on the page)
        return self.fmt.places is not None and "e" in text and SCIENTIFIC.fullmatch(text) is not None

    def _scientific(self, ref: Ref) -> RichText:
        digits = int(SCIENTIFIC.fullmatch(self.text[ref]).group(1).replace(self.fmt.minus, "-")) + 1
        return [self.derivation.meta(ref).name, f": too large to write out at {self.fmt.places} places "
                f"({digits:,} digits before the point); printed to {self.fmt.places + 1} significant figures, "
                "in scientific form."]

    def _drift(self, ref: Ref) -> RichText:
        reading = self.byhand.reading(ref)
        how = [" (", reading.formula, reading.remark + ")"] if reading else []
        name = self.derivation.meta(ref).name
        return ([after_step(name) if ref.phase == "after" else name, ": carried from the printed values, ",
                 printed(self.byhand.carried(ref))] + how
                + ["; from the exact values, ", printed(self.text[ref]), "."])

    def _short(self, ref: Ref) -> str | None:
        v = self.derivation.value(ref)
        return short_decimal(Fraction(int(v.p), int(v.q)), self.fmt) if is_exact(v) else None

    def cell(self, cell, short_exact: bool = False, marks: dict[Ref, str] | None = None) -> str:
        """Text of one cell: a number, a vector ``[a, b, c]`` or literal text; each number
        followed by its note mark from ``marks`` (renderer-specific text), if any."""
        marks = marks or {}
        if isinstance(cell, Ref):
            return self.number(cell, short_exact) + marks.get(cell, "")
        if isinstance(cell, Vec):
            return "[" + ", ".join(self.number(r, short_exact) + marks.get(r, "") for r in cell.refs) + "]"
        return self.literal(str(cell))

    def literal(self, text: str) -> str:
        """A text cell or header as the terminal writes it: a piece as a code span that reads
        back whole (:func:`derive.name.code_span`: ````` ``a`b`` ````` for the piece a`b), ``-inf``
        with the format's minus and ∞."""
        piece = cell_piece(text)
        return code_span(piece) if piece is not None else text.replace("-inf", self.fmt.minus + "\u221e")

    def rows(self, table: Table) -> list[list]:
        """The table's rows, sorted by ``table.sort_by`` (decreasing) when set."""
        rows = table.rows
        if table.sort_by is not None:
            rows = sorted(rows, key=lambda r: -approx(self.derivation.value(r[table.sort_by])))
        return rows
