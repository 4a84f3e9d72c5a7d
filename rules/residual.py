"""Residual sums: a sublayer's output added back to the stream it read (He et al. 2016;
seed 000, step 8): ``h_t = x_t + attn_t`` and ``y_t = h_t + m_t`` in a pre-norm block,
``y_t = x_t + attn_t + m_t`` in a parallel one.
"""

from __future__ import annotations

from derive.array import Array
from derive.graph import Graph
from derive.steps import Step, Table, vec

from .linear import Ids, entries


def residual(graph: Graph, stream: Ids, updates: list[Ids], symbol: str, block: int) -> Ids:
    """``stream + update + ...`` row by row (each T x d), named ``symbol`` (h or y) of ``block``."""
    total = Array(graph, stream)
    for update in updates:
        total = total + Array(graph, update)
    return total.named(entries(symbol, block=block)).ids()


def residual_step(case, block_no: int, sums: list[tuple[str, Ids]], replaced: tuple[str, ...] = (),
                  words: str | None = None) -> Step:
    """The step that shows residual sums of one block: each ``(formula, rows)``, the
    formula as the column's header (``h = x + attn``, ``y = u + m``). ``replaced`` names
    the outputs of the block's sublayers that have no residual connection (they replace
    the stream: ``m``); ``words`` replaces the sentence generated from both."""
    table = Table(["token"] + [formula for formula, _ in sums],
                  [[f"`{tok}`"] + [vec(rows[t]) for _, rows in sums] for t, tok in enumerate(case.tokens)],
                  title="Residual stream" + (f" (block {block_no})" if len(case.blocks) > 1 else ""))
    if words is None:
        formulas = " and ".join(f"{formula}" for formula, _ in sums)
        words = (f"The residual connection adds {'each' if len(sums) > 1 else 'the'} sublayer's output to the "
                 f"stream it read: {formulas}.")
        for out in replaced:
            words += f" {out} has no residual connection: it replaces the stream."
    return Step("residual", "The residual sum" + ("s" if len(sums) > 1 else ""), words, [table])
