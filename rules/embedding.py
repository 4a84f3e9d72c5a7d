"""Embedding lookup: ``E[id]``, the row of the token's id (seed 000, step 2c).

Reading a row is the product of a one-hot vector by E; no arithmetic happens, so the
rows of ``E[ids]`` are the same graph leaves as the rows of E, and the gradient of a row
collects every position the token occupies (and the output path when W_U is tied).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from derive.registry import Operation, Param, register
from derive.graph import Graph
from derive.steps import Ref, Step, Table, vec

from .linear import Ids, weight

if TYPE_CHECKING:
    from derive.case import Case


def embedding(graph: Graph, case: Case) -> tuple[Ids, Ids, Step]:
    """Add E (V x d_model) as leaves; return (E, E[ids] (T x d_model), the step)."""
    E = weight(graph, "E", case.E)
    for token_id, row in enumerate(E):
        for leaf in row:
            graph.nodes[leaf].meta.token = case.pieces[token_id]
    rows = [E[i] for i in case.ids]
    table = Table(["token", "id", "E[id]"],
                  [[f"`{case.pieces[i]}`", i, vec(E[i])] for i in case.ids],
                  title="E[ids]", short_exact=True)
    full = Table(["id", "token"] + [f"c_{c + 1}" for c in range(case.d_model)],
                 [[i, f"`{p}`"] + [Ref("before", leaf) for leaf in E[i]] for i, p in enumerate(case.pieces)],
                 title=f"E ({len(case.pieces)} x {case.d_model})", short_exact=True)
    words = ("E has one row per token of the vocabulary and one column per dimension. "
             "Reading a row is a product by a one-hot vector: E[id].")
    return E, rows, Step("embedding", "The table E and the rows E[ids]", words, [full, table])


EMBEDDING = register(Operation(
    name="embedding", kind="stage", title="Embedding", stage=15, steps=("embedding",),
    source="Vaswani et al. 2017, section 3.4; seed 000, step 2c",
    params=(Param("E", ("V", "d_model"), "the embedding table, one row per vocabulary piece"),),
    forward=embedding,
))
