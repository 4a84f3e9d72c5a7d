"""The MLP sublayer (Vaswani et al. 2017, eq. 2, with GPT-2's GELU; seed 000, step 8):

    hidden = u' W_1 + b_1,   g = GELU(hidden) (or ReLU),   m = g W_2 + b_2

GELU is the tanh form by default (GPT-2's gelu_new,
0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))), or the erf form 0.5 x (1 + erf(x / sqrt 2)).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from derive import registry
from derive.array import Array
from derive.graph import Graph
from derive.printing import counted
from derive.registry import Convention, Operation, Param, register
from derive.steps import Step, Table, vec

from .linear import Ids, entries, matrix_leaves, vector_leaves

if TYPE_CHECKING:
    from derive.case import Block, Case

def mlp(graph: Graph, case: Case, block_no: int, block: Block, u2: Ids, reads: str = "u'") -> tuple[Ids, list[Step]]:
    """Add one block's MLP on the rows ``u2`` (T x d_model, named ``reads`` on the page: u'
    in a pre-norm block); return m (T x d_model) and its step (a list of one, like
    :func:`~derive.rules.attention.attention`)."""
    M, Vb = block.matrices, block.vectors
    W_1, W_2 = (matrix_leaves(graph, name, M[name], block_no) for name in ("W_1", "W_2"))
    b_1, b_2 = (vector_leaves(graph, name, Vb.get(name), block_no) for name in ("b_1", "b_2"))
    activation = registry.get(case.conventions.activation, "activation")

    x = Array(graph, u2)
    hidden = (x @ W_1 + b_1 if b_1 else x @ W_1).named(entries("hidden", block=block_no))
    g = hidden.apply(activation.op).named(entries("g", block=block_no))
    mixed = g
    gated = block.options.get("gated", False)
    if gated:  # GLU (Shazeer 2020): the activation gates a second projection, entry by entry
        W_3 = matrix_leaves(graph, "W_3", M["W_3"], block_no)
        b_3 = vector_leaves(graph, "b_3", Vb.get("b_3"), block_no)
        up = (x @ W_3 + b_3 if b_3 else x @ W_3).named(entries("up", block=block_no))
        mixed = (g * up).named(entries("gated", block=block_no))
    m = mixed @ W_2 + b_2 if b_2 else mixed @ W_2
    after = block.options.get("output_activation", "none")
    if after != "none":  # an activation after W_2 too (an MLP exercise)
        m = m.apply(registry.get(after, "activation").op)
    m = m.named(entries("m", block=block_no))

    name = activation.title
    product = ("(g * up)" if gated else "g") + " W_2" + (" + b_2" if b_2 else "")
    out_name = product if after == "none" else f"{registry.get(after).title}({product})"
    parts = [(f"{reads} W_1" + (" + b_1" if b_1 else ""), hidden), (name, g)]
    if gated:
        parts += [(f"up = {reads} W_3" + (" + b_3" if b_3 else ""), up), ("gated = g * up", mixed)]  # (its notes: gated_t[c])
    parts.append((f"m = {out_name}", m))
    ids = [p.ids() for _, p in parts]
    table = Table(["token"] + [title for title, _ in parts],
                  [[f"`{tok}`"] + [vec(col[t]) for col in ids] for t, tok in enumerate(case.tokens)],
                  title="MLP" + (f" (block {block_no})" if len(case.blocks) > 1 else ""))
    resize = "widens" if block.d_mlp > case.d_model else "narrows" if block.d_mlp < case.d_model else "takes"
    words = (f"The MLP {resize} each row to {counted(block.d_mlp, 'number')} with W_1, applies {name} to each, "
             + (f"multiplies it entry by entry with {reads} W_3 (a gated unit, {activation.glu or 'GLU'}), "
                if gated else "")
             + f"and brings it back to {case.d_model} with W_2"
             + ("." if after == "none" else f", then applies {registry.get(after).title} again."))
    m = m.ids()
    return m, [Step("mlp", "MLP", words, [table])]


MLP = register(Operation(
    name="mlp", kind="sublayer", title="MLP", stage=32, steps=("mlp",),
    symbols={"hidden": "u' W_1 + b_1", "g": "the activation of hidden", "m": "g W_2 + b_2",
             "up": "u' W_3 + b_3 (a gated MLP)", "gated": "g * up, entry by entry (a gated MLP)"},
    source="Vaswani et al. 2017, eq. 2, with GPT-2's GELU",
    params=(Param("W_1", ("d_model", "d_mlp"), "widens each row to d_mlp"),
            Param("b_1", ("d_mlp",), "the bias of W_1", optional=True),
            Param("W_3", ("d_model", "d_mlp"), "the gated MLP's second projection (up)", needs="gated"),
            Param("b_3", ("d_mlp",), "the bias of W_3", optional=True, needs="gated"),
            Param("W_2", ("d_mlp", "d_model"), "brings it back to d_model"),
            Param("b_2", ("d_model",), "the bias of W_2", optional=True)),
    conventions=(Convention("activation", "gelu_tanh", "the elementwise map between W_1 and W_2",
                            choices=lambda: registry.names("activation"),
                            slips={"gelu_erf": "GELU in the erf form instead of the tanh form",
                                   "gelu_tanh": "GELU in the tanh form instead of the erf form"},
                            applies=lambda conv: conv.activation.startswith("gelu"),
                            source="Hendrycks and Gimpel 2016"),),
    options=(Convention("gated", False, "a gated MLP: m = (act(u' W_1 + b_1) * (u' W_3 + b_3)) W_2 + b_2, "
                                        "SwiGLU with SiLU, GeGLU with GELU (Llama's w1, w3, w2)",
                        kind="bool", source="Shazeer 2020, GLU Variants Improve Transformer, eq. 6"),
             Convention("output_activation", "none", "an activation after W_2 as well (an MLP exercise: "
                                                     "ReLU after both layers)",
                        choices=lambda: {"none": "m = g W_2 + b_2"} | registry.names("activation")),),
    forward=mlp,
))
