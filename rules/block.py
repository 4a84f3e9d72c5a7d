"""A transformer block: its sublayers (attention, MLP) in one of three layouts.

    pre_norm   (GPT-2; Radford et al. 2019; seed 000, steps 4-8):
               h = x + Attention(Norm_1(x)),    y = h + MLP(Norm_2(h))
    post_norm  (Vaswani et al. 2017, section 3.1: LayerNorm(x + Sublayer(x));
               torch.nn.TransformerEncoderLayer with norm_first=False):
               h = x + Attention(x),  u = Norm_1(h),    y = u + MLP(u),  u' = Norm_2(y)
    parallel   (GPT-J, GPT-NeoX with use_parallel_residual): both sublayers read x,
               y = x + Attention(Norm_1(x)) + MLP(Norm_2(x)), or with one shared norm
               (GPT-J, ``shared_norm = true``) y = x + Attention(u) + MLP(u), u = Norm_1(x)

A plain stack of linear layers (rules/layers.py, ``sublayers = ["layers"]``) may take
the MLP's place, with its norm slot and its residual sum.

``residual`` says which sublayers add their output back to the stream (true: all, false:
none, or a list such as ``["attention"]``); a sublayer without one replaces the stream
with its output (attn or m). Each norm slot is filled by a registered norm (LayerNorm by
default; ``conventions.norm`` for every slot, ``ln1``/``ln2`` per block). A block may run
only one sublayer (an attention exercise, or an MLP on its own), and may skip the norms
(``layernorm = false``), as exercises such as seed 004's hand-set head read the stream
directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from derive import registry
from derive.array import Array
from derive.graph import Graph
from derive.registry import Convention, Operation, register
from derive.steps import Step

from .attention import attention
from .layers import layers
from .linear import Ids, vector_leaves
from .mlp import mlp
from .norms import NormSlot
from .residual import residual, residual_step

if TYPE_CHECKING:
    from derive.case import Block, Case

# sublayer, its norm slot (key, output symbol, primes, step), the name of its sum, its output
# (a stack of linear layers takes the MLP's place: its slot, its sum, its output's name)
SUBLAYERS = (("attention", ("ln1", "u", 0, "layernorm"), "h", "attn", attention),
             ("mlp", ("ln2", "u", 1, "layernorm2"), "y", "m", mlp),
             ("layers", ("ln2", "u", 1, "layernorm2"), "y", "m", layers))
FINAL_SLOT = ("lnf", "f", 0, "final")
WHERE = {"attention": ("before attention", "after attention"), "mlp": ("before the MLP", "after the MLP"),
         "layers": ("before the layers", "after the layers")}


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


def slot(case: Case, spec: tuple, block: int | None, reads: str, where: str) -> NormSlot:
    """The norm slot ``spec`` (one of SUBLAYERS' or FINAL_SLOT) of ``block``, reading the
    rows named ``reads``; ``where`` ends its title (``before attention``)."""
    key, symbol, primes, step = spec
    return NormSlot(key, block, symbol, primes, reads, step, where, tuple(case.tokens))


def _norm(graph: Graph, case: Case, b: int, block: Block, spec: tuple, rows: Ids, reads: str, where: str,
          steps: list[Step]) -> tuple[Ids, str]:
    """The block's norm in slot ``spec`` on ``rows`` (named ``reads``); its step is appended
    to ``steps``; returns the output and its name (u, u')."""
    the_slot = slot(case, spec, b, reads, where)
    out, step = normalise(graph, case, rows, the_slot, block.norms[spec[0]], block.vectors)
    steps.append(step)
    return out, the_slot.name


def sequential(graph: Graph, case: Case, b: int, block: Block, x: Ids, x_name: str,
               post: bool) -> tuple[Ids, str, list[Step]]:
    """The sublayers one after the other, each normalising what it reads (pre-norm) or
    what it adds up to (post-norm); see the module docstring."""
    steps: list[Step] = []
    sums: list[tuple[str, Ids]] = []
    replaced: list[str] = []  # the outputs with no residual connection
    stream, name = x, x_name
    for sublayer_name, spec, summed, out_name, sublayer in SUBLAYERS:
        if sublayer_name not in block.sublayers:
            continue
        reads, reads_name = stream, name
        if block.layernorm and not post:
            reads, reads_name = _norm(graph, case, b, block, spec, stream, name, WHERE[sublayer_name][0], steps)
        out, sublayer_steps = sublayer(graph, case, b, block, reads, reads=reads_name)
        steps += sublayer_steps
        if sublayer_name in block.residual:
            stream = residual(graph, stream, [out], summed, b)
            sums.append((f"{summed} = {name} + {out_name}", stream))
            name = summed
            if post:  # the sum is shown before the norm that reads it
                steps.append(residual_step(case, b, sums[-1:]))
        else:  # the sublayer's output replaces the stream
            stream, name = out, out_name
            replaced.append(out_name)
        if block.layernorm and post:
            where = f"{WHERE[sublayer_name][1]}, of {sums[-1][0] if sublayer_name in block.residual else name}"
            stream, name = _norm(graph, case, b, block, spec, stream, name, where, steps)
    if sums and not post:
        steps.append(residual_step(case, b, sums, tuple(replaced)))
    return stream, name, steps


def parallel(graph: Graph, case: Case, b: int, block: Block, x: Ids, x_name: str) -> tuple[Ids, str, list[Step]]:
    """Attention and the MLP both read the block's input (normalised by their own norms,
    or by one shared norm), and their outputs are added to it at once."""
    steps: list[Step] = []
    outputs: list[Ids] = []
    names: list[str] = []
    shared = block.options.get("shared_norm", False)
    for sublayer_name, spec, _, out_name, sublayer in SUBLAYERS:
        if sublayer_name not in block.sublayers:
            continue
        reads, reads_name = x, x_name
        if block.layernorm:
            reuse = shared and sublayer_name != "attention" and "attention" in block.sublayers
            if reuse:  # GPT-J: the MLP reads the norm attention read
                reads, reads_name = shared_rows
            else:
                where = ("before attention and the MLP" if shared else WHERE[sublayer_name][0])
                spec = SUBLAYERS[0][1] if shared else spec
                reads, reads_name = _norm(graph, case, b, block, spec, x, x_name, where, steps)
                shared_rows = (reads, reads_name)
        out, sublayer_steps = sublayer(graph, case, b, block, reads, reads=reads_name)
        steps += sublayer_steps
        outputs.append(out)
        names.append(out_name)
    if not block.residual:
        y = residual(graph, outputs[0], outputs[1:], "y", b)
        formula = "y = " + " + ".join(names)
        words = f"The sublayers' outputs are added: {formula}; with no residual connection, {x_name} is not."
    else:
        y = residual(graph, x, outputs, "y", b)
        formula = "y = " + " + ".join([x_name] + names)
        words = f"Both sublayers read {x_name}, and the residual connection adds their outputs to it: {formula}."
    steps.append(residual_step(case, b, [(formula, y)], words=words))
    return y, "y", steps


def transformer_block(graph: Graph, case: Case, b: int, block: Block, x: Ids,
                      x_name: str = "x") -> tuple[Ids, str, list[Step]]:
    """Add block ``b`` (1-based) on the stream ``x`` (T x d_model, named ``x_name`` on the
    page) in the block's ``layout``; return its output, the output's name (h, y, u', attn,
    m) and its steps (norms, Q/K/V, attention, mix, MLP, residual sums)."""
    layout = block.options.get("layout", "pre_norm")
    if layout == "parallel":
        return parallel(graph, case, b, block, x, x_name)
    return sequential(graph, case, b, block, x, x_name, post=layout == "post_norm")


def final_norm(graph: Graph, case: Case, stream: Ids, name: str) -> tuple[Ids, Step]:
    """The norm before W_U (slot ``lnf``), on the last block's output named ``name``."""
    return normalise(graph, case, stream, slot(case, FINAL_SLOT, None, name, "before W_U"), case.final_norm,
                     case.final_vectors)


BLOCK = register(Operation(
    name="block", kind="stage", title="Transformer block", stage=30,
    source="Radford et al. 2019 (GPT-2): pre-norm, h = x + attn(norm(x)), y = h + mlp(norm(h)); "
           "Vaswani et al. 2017, section 3.1: post-norm; Wang and Komatsuzaki 2021 (GPT-J), Black et al. 2022 "
           "(GPT-NeoX): parallel",
    conventions=(Convention("norm", "layernorm", "the norm of every slot (a block's ln1/ln2 and [model] lnf "
                                                 "choose per slot)",
                            choices=lambda: registry.names("norm")),),
    options=(Convention("layout", "pre_norm", "how a block's sublayers, norms and residual sums are arranged",
                        choices={"pre_norm": "h = x + attn(Norm_1(x)), y = h + m(Norm_2(h)) (GPT-2)",
                                 "post_norm": "u = Norm_1(x + attn(x)), u' = Norm_2(u + m(u)) (Vaswani et al. "
                                              "2017; TransformerEncoderLayer norm_first=False)",
                                 "parallel": "y = x + attn(Norm_1(x)) + m(Norm_2(x)) (GPT-NeoX; GPT-J with "
                                             "shared_norm)"},
                        source="Vaswani et al. 2017, section 3.1; Xiong et al. 2020 (pre-norm); GPT-J"),
             Convention("shared_norm", False, "with layout = \"parallel\": attention and the MLP read one "
                                              "norm, ln1 (GPT-J's ln_1)",
                        kind="bool", source="Hugging Face GPTJBlock"),),
    steps=("layernorm", "layernorm2", "residual"),
    symbols={"u": "the norm before attention; post-norm: of h = x + attn",
             "u2": "u', the norm before the MLP; post-norm: of y = u + m",
             "h": "h = x + attn", "y": "y = h + m; post-norm: u + m; parallel: x + attn + m"},
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
