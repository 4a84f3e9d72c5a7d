"""Residual sums: ``h_t = x_t + attn_t`` and ``y_t = h_t + m_t`` (seed 000, step 8).

The block is pre-norm (GPT-2): each sublayer reads a LayerNorm of the stream and adds its
output back to the unnormalised stream.
"""

from __future__ import annotations

from derive.array import Array
from derive.graph import Graph

from .linear import Ids, entries


def residual(graph: Graph, stream: Ids, update: Ids, symbol: str, block: int) -> Ids:
    """``stream + update`` row by row (T x d); ``symbol`` is h (after attention) or y."""
    return (Array(graph, stream) + Array(graph, update)).named(entries(symbol, block=block)).ids()


def residual_step(case, block_no: int, block, h: Ids | None, y: Ids | None):
    """The step that shows the residual sums of one block: h = x + attn and/or y = h + m."""
    from derive.steps import Step, Table, vec

    columns, parts = ["token"], []
    if h is not None:
        columns.append("h = x + attn")
        parts.append(h)
    if y is not None:
        columns.append("y = h + m" if h is not None else "y = x + m")
        parts.append(y)
    table = Table(columns, [[f"`{tok}`"] + [vec(p[t]) for p in parts] for t, tok in enumerate(case.tokens)],
                  title="Residual stream" + (f" (block {block_no})" if len(case.blocks) > 1 else ""))
    return Step("residual", "The residual sums",
                "Each sublayer's output is added back to the stream it read.", [table])
