"""Given input vectors: a case that starts from X (T x d_model) instead of a prompt, as
attention exercises are written (no tokenizer, no embedding table)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from derive.registry import Operation, register
from derive.graph import Graph, Meta
from derive.name import Name
from derive.steps import Step, Table, vec

from .linear import Ids

if TYPE_CHECKING:
    from derive.case import Case


def given_input(graph: Graph, case: Case) -> tuple[Ids, Step]:
    """X as constant leaves named x_t[c]; returns X and the step that shows it."""
    X = [[graph.leaf(value, Meta.of(Name("x", position=t + 1, index=c + 1)))
          for c, value in enumerate(row)] for t, row in enumerate(case.X)]
    table = Table(["row", "x_t"], [[f"`{label}`", vec(X[t])] for t, label in enumerate(case.tokens)],
                  title="X (given)", short_exact=True)
    return X, Step("input", "The input vectors", "The exercise starts from these vectors.", [table])


INPUT = register(Operation(
    name="input", kind="stage", title="Given input", stage=11, steps=("input",),
    symbols={"x": "a row of the given X"},
    source="attention exercises that start from X (seed 004)", forward=given_input,
))
