"""Residual sums: ``h_t = x_t + attn_t`` and ``y_t = h_t + m_t`` (seed 000, step 8).

The block is pre-norm (GPT-2): each sublayer reads a LayerNorm of the stream and adds its
output back to the unnormalised stream.
"""

from __future__ import annotations

from derive.graph import Graph, Lin, Meta

from .linear import Ids


def residual(graph: Graph, stream: Ids, update: Ids, symbol: str, block: int) -> Ids:
    """``stream + update`` row by row (T x d); ``symbol`` is h (after attention) or y."""
    return [[graph.add(Lin([1, 1]), (a, b), Meta(symbol, f"{symbol}_{t + 1}[{c + 1}]", block=block,
                                                   position=t + 1, index=c + 1))
             for c, (a, b) in enumerate(zip(ra, rb))] for t, (ra, rb) in enumerate(zip(stream, update))]
