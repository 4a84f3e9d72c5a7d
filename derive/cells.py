"""Cell text shared by every renderer: a step's cells rounded under one :class:`Format`.

:class:`Printer` collects every quantity the steps refer to, rounds them in one batch (so
the precision escalation runs once for all of them) and turns each cell into text.
"""

from __future__ import annotations

from fractions import Fraction

from .derivation import Derivation
from .graph import approx, is_exact
from .rounding import Format
from .steps import Ref, Step, Table, Vec


def refs_of(cell) -> list[Ref]:
    """The quantities a cell (or equation right-hand side) refers to."""
    if isinstance(cell, Ref):
        return [cell]
    if isinstance(cell, Vec):
        return list(cell.refs)
    return []


class Printer:
    """Rounded text for the cells of ``steps``.

    Raises:
        EvaluationError: when the case's forward pass is undefined.
    """

    def __init__(self, derivation: Derivation, fmt: Format, steps: list[Step]):
        self.derivation = derivation
        self.fmt = fmt
        refs = [r for step in steps for table in step.tables for row in table.rows for c in row for r in refs_of(c)]
        refs += [r for step in steps for eq in step.equations for r in refs_of(eq.rhs)]
        self.text = derivation.decimals(refs, fmt)

    def number(self, ref: Ref, short_exact: bool = False) -> str:
        """One quantity, rounded; exact short decimals as they are when ``short_exact``."""
        if short_exact:
            short = self._short(ref)
            if short is not None:
                return short
        return self.text[ref]

    def _short(self, ref: Ref) -> str | None:
        v = self.derivation.value(ref)
        if not is_exact(v) or self.fmt.places is None:
            return None
        q = Fraction(int(v.p), int(v.q))
        for places in range(1, self.fmt.places + 1):
            scaled = q * 10 ** places
            if scaled.denominator == 1:
                digits = str(abs(scaled.numerator)).rjust(places + 1, "0")
                sign = self.fmt.minus if q < 0 else ""
                return f"{sign}{digits[:-places]}.{digits[-places:]}"
        return None

    def cell(self, cell, short_exact: bool = False) -> str:
        """Text of one cell: a number, a vector ``[a, b, c]`` or literal text."""
        if isinstance(cell, Ref):
            return self.number(cell, short_exact)
        if isinstance(cell, Vec):
            return "[" + ", ".join(self.number(r, short_exact) for r in cell.refs) + "]"
        return str(cell).replace("-inf", self.fmt.minus + "\u221e")

    def rows(self, table: Table) -> list[list]:
        """The table's rows, sorted by ``table.sort_by`` (decreasing) when set."""
        rows = table.rows
        if table.sort_by is not None:
            rows = sorted(rows, key=lambda r: -approx(self.derivation.value(r[table.sort_by])))
        return rows
