"""The worked example as Rich tables, step by step (the seed 000's layout)."""

from __future__ import annotations

from rich.console import Group
from rich.markup import escape
from rich.table import Table as RichTable
from rich.text import Text

from .cells import Printer, refs_of
from .derivation import Derivation
from .steps import Step


def render_steps(derivation: Derivation, steps: list[Step], printer: Printer, exact: bool = False) -> Group:
    """A Rich renderable of ``steps``: a numbered heading, the words, each table and the
    equations; with ``exact``, every quantity's exact form under its table."""
    parts = []
    numbers = {id(s): n for n, s in enumerate(derivation.steps, 1)}
    for step in steps:
        parts.append(Text(f"\nStep {numbers.get(id(step), '')}. {step.title}", style="bold"))
        parts.append(Text(step.words))
        for table in step.tables:
            parts.append(_table(table, printer))
            if exact:
                parts.append(_exact_lines(derivation, [r for row in table.rows for c in row for r in refs_of(c)]))
        for eq in step.equations:
            parts.append(Text(f"{eq.lhs} = {printer.cell(eq.rhs)}"))
        if exact and step.equations:
            parts.append(_exact_lines(derivation, [r for eq in step.equations for r in refs_of(eq.rhs)]))
    return Group(*parts)


def _table(table, printer: Printer) -> RichTable:
    out = RichTable(title=escape(table.title) or None, title_justify="left", show_lines=False)
    for column in table.columns:
        out.add_column(escape(column), justify="left")
    for row in printer.rows(table):
        out.add_row(*[escape(printer.cell(c, table.short_exact)) for c in row])
    return out


def _exact_lines(derivation: Derivation, refs) -> Text:
    lines = []
    for ref in dict.fromkeys(refs):
        meta = derivation.meta(ref)
        prefix = {"grad": "dL/d", "updated": "after the step: ", "after": "after the step: "}.get(ref.phase, "")
        lines.append(f"  {prefix}{meta.label} = {derivation.exact_text(ref)}")
    return Text("\n".join(lines), style="dim")
