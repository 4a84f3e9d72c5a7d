"""The table model of a worked example: steps, tables, cells and equations.

Every renderer (Rich, JSON, later LaTeX and Markdown) prints the same :class:`Step`
objects and differs only in how it prints them. A cell refers to quantities by
:class:`Ref` (which pass, which node), never to printed text, so each renderer rounds the
exact values itself with the run's :class:`~derive.rounding.Format`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Union


class Ref(NamedTuple):
    """One scalar quantity of an evaluation.

    ``phase`` is ``before`` (the forward pass, node id), ``grad`` (dL/dtheta, leaf id),
    ``updated`` (theta after the SGD step, leaf id) or ``after`` (the forward pass after
    the step, node id)."""

    phase: str
    id: int


@dataclass
class Vec:
    """A row vector of quantities, printed ``[a, b, c]``."""

    refs: list[Ref]


def vec(ids: list[int], phase: str = "before") -> Vec:
    """The vector of quantities with node (or leaf) ids ``ids`` in ``phase``."""
    return Vec([Ref(phase, i) for i in ids])


Cell = Union[str, int, Ref, Vec]


@dataclass
class Table:
    """Columns (headers in the chapter's notation) and rows of cells.

    ``short_exact`` prints exact decimals that fit the places as they are (the seed prints
    the given weights as ``-0.5``, not ``-0.500``). ``sort_by`` names a column of
    quantities by which the rows are shown in decreasing order (the seed's logits table)."""

    columns: list[str]
    rows: list[list[Cell]]
    title: str = ""
    short_exact: bool = False
    sort_by: int | None = None


@dataclass
class Equation:
    """``lhs = rhs`` where rhs is a quantity, a vector of them, or a text calculation."""

    lhs: str
    rhs: Cell


@dataclass
class Step:
    """One numbered step of the worked example.

    ``key`` is the name ``--step`` selects (tokens, embedding, positions, layernorm,
    qkv, attention, mix, residual, mlp, final, logits, loss, gradient, sgd, after)."""

    key: str
    title: str
    words: str
    tables: list[Table] = field(default_factory=list)
    equations: list[Equation] = field(default_factory=list)
    derivation = None  # the Derivation this step belongs to, set by it (not a field: no cycle in asdict)
    # In Jupyter a step displays itself: derive.notebook, in the outputs layer, gives Step its
    # _repr_html_ and _repr_latex_ when it is imported (the table model imports no renderer).
