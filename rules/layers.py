"""A plain stack of linear layers, each with an optional bias and activation (an MLP
exercise; Goodfellow, Bengio and Courville 2016, section 6.1; "AI by Hand"'s two ReLU
layers):

    net^(1) = x W_1 + b_1,         g^(1) = act_1(net^(1))
    net^(l) = g^(l-1) W_l + b_l,   g^(l) = act_l(net^(l))          l = 2 .. n - 1
    m = act_n(g^(n-1) W_n + b_n)

A layer without an activation passes net^(l) on as it is (then it is the layer's output,
and the last layer's is m). The stack takes the MLP's place in a block (its norm slot
``ln2``, its residual sum y): ``sublayers = ["layers"]`` (or ``["attention", "layers"]``)
with one ``[[blocks.layers]]`` table per layer, ``W`` (the previous width x this layer's
width; d_model rows for the first, d_model columns for the last), optional ``b`` and
``activation`` (a registered activation, or ``"none"``, the default). Layer l's weights
are named W_l and b_l; its quantities carry the layer as a superscript, net^(l), g^(l)
(the JSON ``head`` field holds l).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from derive import registry
from derive.array import Array
from derive.graph import Graph
from derive.registry import Operation, Param, register
from derive.steps import Step, Table, vec

from .linear import Ids, entries, matrix_leaves, vector_leaves

if TYPE_CHECKING:
    from derive.case import Block, Case


def layers(graph: Graph, case: Case, block_no: int, block: Block, rows: Ids, reads: str = "x") -> tuple[Ids, list[Step]]:
    """Add the block's stack of linear layers on ``rows`` (T x d_model, named ``reads`` on
    the page); return m (T x d_model) and the step (a list of one)."""
    x, name = Array(graph, rows), reads
    parts: list[tuple[str, Array]] = []
    n = len(block.layers)
    for l, layer in enumerate(block.layers, 1):
        W = matrix_leaves(graph, f"W_{l}", block.matrices[f"W_{l}"], block_no)
        b = vector_leaves(graph, f"b_{l}", block.vectors.get(f"b_{l}"), block_no)
        net = x @ W + b if b else x @ W
        product = f"{name} W_{l}" + (f" + b_{l}" if b else "")
        last = l == n
        out_symbol, out_name = ("m", "m") if last else ("g", f"g^({l})")
        activation = layer["activation"]
        if activation == "none":  # the affine map is the layer's output
            symbol, out_name = (out_symbol, out_name) if last else ("net", f"net^({l})")
            x = net.named(entries(symbol, written_head=None if last else l, block=block_no))
            parts.append((f"{out_name} = {product}", x))
        else:
            net = net.named(entries("net", written_head=l, block=block_no))
            act = registry.get(activation, "activation")
            x = net.apply(act.op).named(entries(out_symbol, written_head=None if last else l, block=block_no))
            parts += [(f"net^({l}) = {product}", net), (f"{out_name} = {act.title}(net^({l}))", x)]
        name = out_name
    table = Table(["token"] + [title for title, _ in parts],
                  [[f"`{tok}`"] + [vec(part.ids()[t]) for _, part in parts] for t, tok in enumerate(case.tokens)],
                  title="Linear layers" + (f" (block {block_no})" if len(case.blocks) > 1 else ""))
    widths = " -> ".join(str(w) for w in [case.d_model] + [len(block.matrices[f"W_{l}"][0]) for l in range(1, n + 1)])
    acts = [f"{registry.get(layer['activation']).title} after W_{l}" for l, layer in enumerate(block.layers, 1)
            if layer["activation"] != "none"]
    biased = [l for l in range(1, n + 1) if f"b_{l}" in block.vectors]
    if n == 1:
        words = f"One linear layer (widths {widths}): it multiplies its input by W_1" + (" and adds b_1" if biased else "")
    else:
        words = (f"{n} linear layers one after the other (widths {widths}): each multiplies its input by its W_l"
                 + (" and adds its b_l" if len(biased) == n else
                    "".join(f"; layer {l} adds b_{l}" for l in biased)))
    words += f"; {', '.join(acts)}." if acts else "; no activation."
    return x.ids(), [Step("layers", "Linear layers", words, [table])]


LAYERS = register(Operation(
    name="layers", kind="sublayer", title="Linear layers", stage=33, steps=("layers",),
    symbols={"net": "net^(l) = (the previous layer's output) W_l + b_l; then g^(l) = act_l(net^(l)), and the "
                    "last layer's output is m (JSON head: the layer l)"},
    source="Goodfellow, Bengio and Courville 2016, Deep Learning, section 6.1 (a deep feedforward network)",
    params=(Param("W_l", ("d_(l-1)", "d_l"), "layer l's weights ([[blocks.layers]] W; the first has d_model rows, "
                                             "the last d_model columns); activation = \"none\" (default) or an "
                                             "activation's name after it"),
            Param("b_l", ("d_l",), "layer l's bias ([[blocks.layers]] b)", optional=True)),
    forward=layers,
))
