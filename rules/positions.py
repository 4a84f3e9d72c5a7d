"""Positions: ``x_t = E[id_t] + P_t`` (seed 000, step 3; seed 003, eq. 17.2).

P is a table of learned weights, one row per position (positions count from 1).
"""

from __future__ import annotations

from derive.case import Case
from derive.graph import Graph, Lin, Meta
from derive.steps import Step, Table, vec

from .linear import Ids, weight


def positions(graph: Graph, case: Case, rows: Ids) -> tuple[Ids, Step]:
    """Add P (positions x d_model) as leaves and X = E[ids] + P[1..T]; return (X, step)."""
    P = weight(graph, "P", case.P)
    X = [[graph.add(Lin([1, 1]), (e, P[t][c]),
                    Meta("x", f"x_{t + 1}[{c + 1}]", position=t + 1, index=c + 1))
          for c, e in enumerate(row)] for t, row in enumerate(rows)]
    table = Table(["token", "E[id]", "P_t", "x_t = E[id] + P_t"],
                  [[f"`{tok}`", vec(rows[t]), vec(P[t]), vec(X[t])] for t, tok in enumerate(case.tokens)],
                  title="X = E[ids] + P", short_exact=True)
    words = ("E does not say where the token is. Each position has a row of P, and the sum of "
             "the two rows is the row of X, the only thing the block receives.")
    return X, Step("positions", "The position table P and the matrix X", words, [table])
