"""One pre-norm transformer block (GPT-2's layout; seed 000, steps 4-8):

    h = x + Attention(LN(x)),   y = h + MLP(LN(h))

A block may run only one sublayer (an attention exercise, or an MLP on its own), and may
skip the LayerNorms (``layernorm = false``), as exercises such as seed 004's hand-set head
read the stream directly.
"""

from __future__ import annotations

from derive.case import Block, Case
from derive.graph import Graph
from derive.steps import Step

from .attention import attention
from .layernorm import layer_norm
from .linear import Ids
from .mlp import mlp
from .residual import residual, residual_step


def transformer_block(graph: Graph, case: Case, b: int, block: Block, x: Ids) -> tuple[Ids, list[Step]]:
    """Add block ``b`` (1-based) on the stream ``x`` (T x d_model); return its output and
    its steps (LayerNorm, Q/K/V, attention, mix, LayerNorm, MLP, residual sums)."""
    conv, v, tokens = case.conventions, block.vectors, case.tokens
    steps: list[Step] = []
    h = x
    if "attention" in block.sublayers:
        u = x
        if block.layernorm:
            u, ln1 = layer_norm(graph, x, conv, "ln1", b, "u", v.get("ln1_gain"), v.get("ln1_bias"), tokens)
            steps.append(ln1)
        attn, attn_steps = attention(graph, case, b, block, u)
        steps += attn_steps
        h = residual(graph, x, attn, "h", b)
    y = h
    if "mlp" in block.sublayers:
        u2 = h
        if block.layernorm:
            u2, ln2 = layer_norm(graph, h, conv, "ln2", b, "u2", v.get("ln2_gain"), v.get("ln2_bias"), tokens)
            steps.append(ln2)
        m, mlp_step = mlp(graph, case, b, block, u2)
        steps.append(mlp_step)
        y = residual(graph, h, m, "y", b)
    steps.append(residual_step(case, b, block, h if "attention" in block.sublayers else None,
                               y if "mlp" in block.sublayers else None))
    return y, steps
