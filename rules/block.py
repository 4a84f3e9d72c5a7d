"""One pre-norm transformer block (GPT-2's layout; seed 000, steps 4-8):

    h = x + Attention(Norm_1(x)),   y = h + MLP(Norm_2(h))

With ``residual = false`` each sublayer's output replaces the stream (h = Attention(...)).

Each norm slot is filled by a registered norm (LayerNorm by default; ``conventions.norm``
for every slot, ``ln1``/``ln2`` per block). A block may run only one sublayer (an
attention exercise, or an MLP on its own), and may skip the norms (``layernorm = false``),
as exercises such as seed 004's hand-set head read the stream directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from derive import registry
from derive.array import Array
from derive.graph import Graph
from derive.registry import Convention, Operation, register
from derive.steps import Step

from .attention import attention
from .linear import Ids, vector_leaves
from .mlp import mlp
from .norms import NormSlot
from .residual import residual, residual_step

if TYPE_CHECKING:
    from derive.case import Block, Case

# sublayer, its norm slot (key, output symbol, name, statistics, step, title words), its sum
SUBLAYERS = (("attention", ("ln1", "u", 0, "layernorm", "before attention"), "h", attention),
             ("mlp", ("ln2", "u", 1, "layernorm2", "before the MLP"), "y", mlp))
OUTPUT_NAMES = {"attention": "attn", "mlp": "m"}  # a sublayer's output on the page, when not summed
FINAL_SLOT = ("lnf", "f", 0, "final", "before W_U")


def normalise(graph: Graph, case: Case, rows: Ids, slot: NormSlot, op_name: str,
              vectors: dict) -> tuple[Ids, Step]:
    """Run the norm ``op_name`` (a registered norm) on ``rows`` (T x d) in ``slot``, with
    the slot's weights from ``vectors`` (``ln1_gain``...); return the output and the step."""
    op = registry.get(op_name, "norm")
    weights = {p.name: vector_leaves(graph, f"{slot.key}_{p.name}", vectors.get(f"{slot.key}_{p.name}"),
                                     slot.block) for p in op.params}
    out, step = op.forward(Array(graph, rows), slot, case.conventions,
                           {k: v for k, v in weights.items() if v is not None})
    return out.ids(), step


def slot(case: Case, spec: tuple, block: int | None, reads: str) -> NormSlot:
    """The norm slot ``spec`` (one of SUBLAYERS' or FINAL_SLOT) of ``block``, reading ``reads``."""
    key, symbol, primes, step, where = spec
    return NormSlot(key, block, symbol, primes, reads, step, where, tuple(case.tokens))


def transformer_block(graph: Graph, case: Case, b: int, block: Block, x: Ids,
                      x_name: str = "x") -> tuple[Ids, str, list[Step]]:
    """Add block ``b`` (1-based) on the stream ``x`` (T x d_model, named ``x_name`` on the
    page); return its output, the output's name (h or y) and its steps (norm, Q/K/V,
    attention, mix, norm, MLP, residual sums)."""
    steps: list[Step] = []
    sums: dict[str, Ids] = {}
    stream, name = x, x_name
    for sublayer_name, spec, summed, sublayer in SUBLAYERS:
        if sublayer_name not in block.sublayers:
            continue
        reads = stream
        if block.layernorm:
            reads, norm_step = normalise(graph, case, stream, slot(case, spec, b, name), block.norms[spec[0]],
                                         block.vectors)
            steps.append(norm_step)
        out, sublayer_steps = sublayer(graph, case, b, block, reads)
        steps += sublayer_steps
        if block.residual:
            stream = sums[summed] = residual(graph, stream, out, summed, b)
            name = summed
        else:  # the sublayer's output replaces the stream
            stream, name = out, OUTPUT_NAMES[sublayer_name]
    if sums:
        steps.append(residual_step(case, b, block, sums.get("h"), sums.get("y")))
    return stream, name, steps


def final_norm(graph: Graph, case: Case, stream: Ids, name: str) -> tuple[Ids, Step]:
    """The norm before W_U (slot ``lnf``), on the last block's output named ``name``."""
    return normalise(graph, case, stream, slot(case, FINAL_SLOT, None, name), case.final_norm, case.final_vectors)


BLOCK = register(Operation(
    name="block", kind="stage", title="Transformer block", stage=30,
    source="Radford et al. 2019 (GPT-2): pre-norm, h = x + attn(norm(x)), y = h + mlp(norm(h))",
    conventions=(Convention("norm", "layernorm", "the norm of every slot (a block's ln1/ln2 and [model] lnf "
                                                 "choose per slot)",
                            choices=lambda: registry.names("norm")),),
    steps=("layernorm", "layernorm2", "residual"),
    symbols={"u": "the norm before attention", "u2": "u', the norm before the MLP", "h": "h = x + attn", "y": "y = h + m"},
    forward=transformer_block,
))

FINAL = register(Operation(
    name="final", kind="stage", title="Final norm", stage=60,
    source="Radford et al. 2019 (GPT-2): a norm after the last block, before W_U",
    conventions=(Convention("final_layernorm", True, "a norm before W_U", kind="bool"),),
    steps=("final",),
    symbols={"f": "the norm before W_U"},
    forward=final_norm,
))
