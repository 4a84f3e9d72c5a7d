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


SUBLAYERS = (("attention", "ln1", "u", "h", attention), ("mlp", "ln2", "u2", "y", mlp))


def transformer_block(graph: Graph, case: Case, b: int, block: Block, x: Ids) -> tuple[Ids, list[Step]]:
    """Add block ``b`` (1-based) on the stream ``x`` (T x d_model); return its output and
    its steps (LayerNorm, Q/K/V, attention, mix, LayerNorm, MLP, residual sums)."""
    steps: list[Step] = []
    sums: dict[str, Ids] = {}
    stream = x
    for name, norm, normed, summed, sublayer in SUBLAYERS:
        if name not in block.sublayers:
            continue
        reads = stream
        if block.layernorm:
            reads, ln = layer_norm(graph, stream, case.conventions, norm, b, normed,
                                   block.vectors.get(f"{norm}_gain"), block.vectors.get(f"{norm}_bias"), case.tokens)
            steps.append(ln)
        out, sublayer_steps = sublayer(graph, case, b, block, reads)
        steps += sublayer_steps
        stream = sums[summed] = residual(graph, stream, out, summed, b)
    steps.append(residual_step(case, b, block, sums.get("h"), sums.get("y")))
    return stream, steps
