"""The table model of a worked example: steps, tables, cells and equations.

Every renderer (Rich, JSON, later LaTeX and Markdown) prints the same :class:`Step`
objects and differs only in how it prints them. A cell refers to quantities by
:class:`Ref` (which pass, which node), never to printed text, so each renderer rounds the
exact values itself with the run's :class:`~derive.rounding.Format`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import NamedTuple, Union

# How a document summarises a long table (derive latex/markdown/html, without --all-rows): a
# table of more than ROW_LIMIT rows shows its first HEAD_ROWS and last TAIL_ROWS rows. Kept
# here, with the table model, so that the CLI's help can name them without importing a renderer.
ROW_LIMIT = 16
HEAD_ROWS, TAIL_ROWS = 5, 3
# A LaTeX table wider than the line or longer than a page is written in parts; each tabular is
# preceded by this comment: which rows of the table it holds (1-based, a gap row counted), which
# of its columns (1-based; the key columns repeated), "continued" when it is not the table's
# first. ``derive check`` reads it back to place a part's cells in the whole table.
PART = "%% derive: %(continued)srows %(first)d-%(last)d, columns %(columns)s"
PART_LINE = re.compile(r"^% derive: (continued, )?rows (\d+)-(\d+), columns ([\d ]+)$")
# A terminal table wider than the page is printed in column groups (``derive run``), each
# repeating the columns that name the row (id, token); each group's title ends with the data
# columns it holds, counted without those: ``W_U (4 x 12) (columns 2-9 of 12)``, ``(column 6 of
# 6)``. ``derive check`` reads it back to place a group's cells in the whole table.
COLUMN_GROUP = re.compile(r"(?<!\s)\s*\((?:columns (\d+)-(\d+)|column (\d+)) of (\d+)\)\s*$")  # (a run of spaces tried once)


def column_group(first: int, last: int, total: int) -> str:
    """The words a column group's title ends with: which of the table's ``total`` data
    columns it holds, ``first`` to ``last`` (1-based, the columns naming the row aside)."""
    return f"(columns {first}-{last} of {total})" if last > first else f"(column {last} of {total})"


def column_group_read(title: str) -> tuple[str, tuple[int, int] | None]:
    """A table title without its column group's words (:func:`column_group`), and the data
    columns the group holds, (first, last), 1-based: ``E (12 x 4) (column 4 of 4)`` ->
    (``E (12 x 4)``, (4, 4)); (title, None) for a whole table."""
    found = COLUMN_GROUP.search(title)
    if found is None:
        return title, None
    first, last = (int(found[1]), int(found[2])) if found[1] else (int(found[3]), int(found[3]))
    return title[:found.start()].strip(), (first, last)


# The words of a summarised table's gap row (``… 56 rows omitted; --all-rows prints them``):
# how many rows of the whole table it stands for.
OMITTED = re.compile(r"(?<!\d)(\d+) rows? omitted")  # (a run of digits tried once)


class Ref(NamedTuple):
    """One scalar quantity of an evaluation.

    ``phase`` is ``before`` (the forward pass, node id), ``grad`` (dL/dtheta, leaf id),
    ``updated`` (theta after the SGD step, leaf id) or ``after`` (the forward pass after
    the step, node id)."""

    phase: str
    id: int


def refs_of_ids(phase: str, ids: Iterable[int]) -> Iterator[Ref]:
    """``Ref(phase, i)`` for each id in turn, made in C (``tuple.__new__`` over the
    pairs, as ``Ref._make`` makes one): a third of the time of calling Ref one by one
    (crane's 46,000 quantities)."""
    return map(tuple.__new__, repeat(Ref), zip(repeat(phase), ids))


@dataclass(eq=False)
class Vec:
    """A row vector of quantities, printed ``[a, b, c]``."""

    refs: Sequence[Ref]


class Refs(Sequence):
    """The refs of node (or leaf) ids in one phase, made when read: a table of a wide
    model's weights and their derivatives holds millions of them, and only a page
    that prints them reads them. A sequence of :class:`Ref` like the list it stands
    for (equal to it).

    Args:
        phase: ``before``, ``grad``, ``updated`` or ``after`` (see :class:`Ref`).
        ids: the node ids, in order (a list or a range).
    """

    __slots__ = ("phase", "ids")

    def __init__(self, phase: str, ids: Sequence[int]):
        self.phase, self.ids = phase, ids

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [Ref(self.phase, i) for i in self.ids[k]]
        return Ref(self.phase, self.ids[k])

    def __iter__(self):
        return refs_of_ids(self.phase, self.ids)

    def __eq__(self, other) -> bool:
        return list(self) == (list(other) if isinstance(other, Sequence) else other)

    __hash__ = None


class Rows(Sequence):
    """A table's rows made when read, row ``r`` by ``make(r)`` (a list of cells): the
    table of a wide model's weight holds a Ref per entry (7 million at d_model 768),
    and only a page that prints it reads them. A sequence of rows like the list it
    stands for (equal to it).

    Args:
        count: the number of rows. make: row index (0-based) -> the row's cells.
    """

    __slots__ = ("count", "make")

    def __init__(self, count: int, make: Callable[[int], list]):
        self.count, self.make = count, make

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self.make(r) for r in range(self.count)[k]]
        if not -self.count <= k < self.count:
            raise IndexError("row index out of range")
        return self.make(k % self.count)

    def __eq__(self, other) -> bool:
        return list(self) == (list(other) if isinstance(other, Sequence) else other)

    __hash__ = None


def vec(ids: Sequence[int], phase: str = "before") -> Vec:
    """The vector of quantities with node (or leaf) ids ``ids`` in ``phase``."""
    return Vec(Refs(phase, ids))


Cell = Union[str, int, Ref, Vec]


@dataclass(eq=False)
class Table:
    """Columns (headers in the chapter's notation: plain text, or a
    :class:`~derive.name.Name` or formula, which every renderer prints in its own
    notation) and rows of cells.

    ``short_exact`` prints exact decimals that fit the places as they are (the seed prints
    the given weights as ``-0.5``, not ``-0.500``). ``sort_by`` names a column of
    quantities by which the rows are shown in decreasing order (the seed's logits table)."""

    columns: list  # of str, Name or formula
    rows: list[list[Cell]]
    title: str = ""
    short_exact: bool = False
    sort_by: int | None = None


@dataclass(eq=False)
class Equation:
    """``lhs = rhs`` where rhs is a quantity, a vector of them, or a text calculation; lhs
    is plain text (``mu_5``), or better a :class:`~derive.name.Name` or a formula
    (``Chain(u'_5, Over(Terms(h_5, Neg(mu'_5)), sigma'_5))``, see :mod:`derive.formula`),
    which each renderer prints in its notation (LaTeX display: ``\\frac``)."""

    lhs: object  # str, Name or formula
    rhs: Cell


@dataclass(eq=False)
class Step:
    """One numbered step of the worked example.

    ``key`` is the name ``--step`` selects (tokens, embedding, positions, weights,
    layernorm, qkv, attention, mix, residual, mlp, final, logits, loss, gradient, sgd,
    after; :func:`derive.registry.step_keys` lists them all)."""

    key: str
    title: str
    words: str
    tables: list[Table] = field(default_factory=list)
    equations: list[Equation] = field(default_factory=list)
    derivation = None  # the Derivation this step belongs to, set by it (not a field: no cycle in asdict)
    # In Jupyter a step displays itself: derive.notebook, in the outputs layer, gives Step its
    # _repr_html_ and _repr_latex_ when it is imported (the table model imports no renderer).


def step_refs(step: Step) -> list[Ref]:
    """Every quantity a step shows, in its tables and its equations."""
    refs = [r for table in step.tables for r in table_refs(table)]
    return refs + [r for eq in step.equations for r in refs_of(eq.rhs)]


def table_refs(table: Table) -> list[Ref]:
    """Every quantity a table shows."""
    return [r for row in table.rows for c in row for r in refs_of(c)]


def refs_of(cell) -> list[Ref]:
    """The quantities a cell (or equation right-hand side) refers to."""
    if isinstance(cell, Ref):
        return [cell]
    if isinstance(cell, Vec):
        return list(cell.refs)
    return []
