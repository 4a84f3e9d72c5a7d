"""The weights: every matrix and vector the model reads, printed before the first step
that uses them, so that a reader who redoes a step by hand finds every number on the page
(issue 10, item 2).

    W  (n x m):  W_{r,c} in row r, column c          (x W + b: row vectors times W)
    b  (1 x m):  a bias, a norm's gain or bias, as a matrix of one row

The list comes from the model itself and from the registry: every trainable leaf of the
graph that a registered operation declares as a :class:`~derive.registry.Param` (W_Q is
attention's, ``ln1_gain`` a norm's ``gain`` in slot ln1, W_3 of a stack of linear layers
its ``W_l``), in the order the model reads them, one table per block, head and name. A
weight already printed by another step (E by the embedding, a learned P by the
positions) is not printed twice. Given weights are printed as the case gives them when
they fit the places plus 3 (``-0.5``, as the seed prints E; crane's 0.484375), else
correctly rounded like every other number (:func:`derive.rounding.short_decimal`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import repeat
from typing import TYPE_CHECKING

from derive import registry
from derive.graph import Graph, Weights
from derive.printing import listed
from derive.registry import Operation, Param, register
from derive.steps import Ref, Rows, Step, Table, step_refs


from .attention import head_name
from .block import FINAL_SLOT, SUBLAYERS

if TYPE_CHECKING:
    from derive.case import Case

SLOTS = tuple(dict.fromkeys(spec[0] for _, spec, *_ in SUBLAYERS)) + (FINAL_SLOT[0],)  # ln1, ln2, lnf


def declared(name: str) -> Param | None:
    """The registered :class:`~derive.registry.Param` a weight called ``name`` is: an
    operation's own (``W_Q``, ``b_1``, ``W_U``), a norm's written with its slot's prefix
    (``ln2_gain`` is the norm's ``gain``), or a layer's ``W_l``/``b_l`` with l a number
    (``W_3``); None when no registered operation declares it."""
    for op in registry.operations():
        for param in op.params:
            if op.kind == "norm":
                if any(name == f"{slot}_{param.name}" for slot in SLOTS):
                    return param
            elif name == param.name or (param.name.endswith("_l")
                                        and re.fullmatch(re.escape(param.name[:-1]) + r"\d+", name)):
                return param
    return None


def weight_groups(graph: Graph) -> dict[tuple, Sequence[int]]:
    """The weights' leaves by (block, head, name), in the order the model reads them (the
    first computation that uses one; W_1 and b_1 before W_2 and b_2): every trainable leaf
    named as a weight (not a given logit, which is z). A whole weight's leaves are the
    range of its ids.

    Raises:
        ValueError: for a weight no registered operation declares (a rule that adds a
            weight must declare it: the registry is the only list).
    """
    groups: dict[tuple, Sequence[int]] = {}
    weight_of: dict[tuple, Weights] = {}
    for w in graph.weights:
        ids = range(w.start, w.start + w.rows * w.cols)
        if not w.heads:  # (the usual: one weight, one group, its ids a range)
            key = (w.block, None, w.param)
            groups[key] = [*groups[key], *ids] if key in groups else ids
            weight_of.setdefault(key, w)
            continue
        for i in ids:  # a hand-set weight per head: the slices of its heads
            key = (w.block, graph.nodes[i].meta.head, w.param)
            groups.setdefault(key, []).append(i)
            weight_of.setdefault(key, w)
    for name in dict.fromkeys(param for _, _, param in groups):
        if declared(name) is None:
            raise ValueError(f"the weight {name} is declared by no registered operation")
    by_id, by_weight, one_by_one = graph.first_readers()
    never = len(graph.nodes)

    def read(key, leaves):  # the first node reading one of the leaves (one by one, or the weight whole)
        start = weight_of[key].start
        alone = one_by_one.get(start, never) if type(leaves) is range else \
            min(map(by_id.get, leaves, repeat(never)))
        return min(by_weight.get(start, never), alone), leaves[0]

    return dict(sorted(groups.items(), key=lambda item: read(*item)))


def weights_step(graph: Graph, case: Case, shown: list[Step]) -> Step | None:
    """The step ``weights``: one table per weight of the model that the steps ``shown``
    do not print already, rows and columns as the case gives them; None when the model
    has no other weights (an exercise from given vectors without projections)."""
    on_page = {r.id for step in shown for r in step_refs(step) if r.phase == "before"}
    tables, printed, elsewhere, heads = [], [], [], []
    for (block, head, name), leaves in weight_groups(graph).items():
        if all(leaf in on_page for leaf in leaves):
            elsewhere.append(name)
            continue
        tables.append(_table(graph, case, block, head, name, leaves))
        printed.append(name)
        heads += [] if head is None else [name]
    if not tables:
        return None
    words = f"The weights the model reads: {listed(printed)}."
    if heads:
        words += f" Each head has its own {listed(heads)}."
    if elsewhere:
        words += f" {listed(elsewhere)} {'is' if len(set(elsewhere)) == 1 else 'are'} printed above."
    if case.has_unembedding and case.W_U is None and case.E:
        words += " W_U is tied to E: W_U = E^T, whose columns are the rows of E."
    return Step("weights", "The weights", words, tables)


def _table(graph: Graph, case: Case, block: int | None, head: int | None, name: str, leaves: list[int]) -> Table:
    """One weight as a table, titled with its shape (``W_1 (4 x 8)``), its head when the
    head has weights of its own (``W_Q (16 x 1), head 3 (hand set)``) and its block when
    there are several: row r holds W_{r,1} ... W_{r,m} (a vector is one row).
    A dimension the registry names ``V`` is labelled by the vocabulary's pieces (W_U's
    column of ␣roof gives z_␣roof), the others by their numbers in the whole matrix
    (``c_3`` is column 3 of W_Q even when a head's part starts there)."""
    if type(leaves) is range:  # a whole weight (rows x cols, row-major ids)
        cols = graph.nodes[leaves.start].weights.cols
        rows = {r + 1: leaves[r * cols:(r + 1) * cols] for r in range(len(leaves) // cols)}
        first = 1
    else:
        rows: dict[int, list[int]] = {}
        for leaf in leaves:
            rows.setdefault(graph.nodes[leaf].meta.position, []).append(leaf)
        first = min(graph.nodes[leaf].meta.index for leaf in leaves)
    width = max(len(r) for r in rows.values())
    shape = declared(name).shape  # (rows, columns), or (columns,) for a vector: one row
    pieces_down, pieces_across = len(shape) == 2 and shape[0] == "V", shape[-1] == "V"
    columns = [f"`{case.pieces[c - 1]}`" if pieces_across else f"c_{c}" for c in range(first, first + width)]
    title = f"{name} ({len(rows)} x {width})"
    if head is not None:
        title += ", " + head_name(case.blocks[block - 1], head)
    if block is not None and len(case.blocks) > 1:
        title += f", block {block}"
    keys = list(rows)

    def row(k: int) -> list:  # (made when a page reads it: a Ref per entry)
        r = keys[k]
        return [f"`{case.pieces[r - 1]}`" if pieces_down else r] + [Ref("before", leaf) for leaf in rows[r]]

    return Table(["row"] + columns, Rows(len(keys), row), title=title, short_exact=True)


WEIGHTS = register(Operation(
    name="weights", kind="stage", title="Weights", stage=25, steps=("weights",),
    symbols={"given": "an entry of a given weight, as the case gives it; param names the weight (E, P, W_Q, ...)"},
    source="the case file's weights, printed before the first step that reads them (issue 10, item 2)",
    forward=weights_step,
))
