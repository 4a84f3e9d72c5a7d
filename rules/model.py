"""The whole model, top to bottom, as GPT.forward reads in nanoGPT (seed 000's order):

    ids = tokenize(text);  x = E[ids] + P          (or a given X, + PE when positioned)
    the weights W_Q ... W_U, printed before the first block reads them
    for each block:  x = x + Attention(Norm(x));  x = x + MLP(Norm(x))
    f = Norm_f(x);  z = f_T W_U / T;  p = softmax(z);  L = -ln p(target)
    then dL/dtheta, one SGD step, and the same pass with the updated weights.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from derive.graph import Graph
from derive.steps import Step

from .attention import attention
from .block import final_norm, transformer_block
from .embedding import embedding
from .inputs import given_input
from .positions import positions
from .tokenize import tokens_step
from .training import training_steps
from .unembedding import given_logits, output_step, unembedding
from .weights import weights_step

if TYPE_CHECKING:
    from derive.case import Case


def model(graph: Graph, case: Case) -> tuple[list[Step], int | None, dict]:
    """Add the case's whole model to ``graph``; return its steps in order, the node of L
    (None without a loss) and the ids of the outputs (z, exp_z, p, sum, L)."""
    if case.logits is not None:  # a softmax exercise: no model
        outputs, steps = given_logits(graph, case)
        if outputs["L"] is not None:
            steps += training_steps(graph, case, [], outputs)
        return steps, outputs["L"], outputs
    if case.qkv is not None:  # an attention exercise: Q, K, V given, the heads' outputs are the result
        _, steps = attention(graph, case, 1, case.blocks[0], None)
        return steps, None, {"z": [], "exp_z": [], "p": [], "L": None, "rows": {}}
    E = []
    if case.X is not None:
        rows, first = given_input(graph, case)
        steps = [first]
    else:
        E, rows, embed_step = embedding(graph, case)
        steps = [tokens_step(case), embed_step]
    stream, pos_step = positions(graph, case, rows)
    added = case.conventions.positions not in ("none", "rotary")  # rotary: no vector added to X
    name = "x'" if case.X is not None and added else "x"
    if case.X is None or added:
        steps.append(pos_step)
    inputs = len(steps)  # the weights step goes here, once the whole model has made its weights
    for b, block in enumerate(case.blocks, 1):
        stream, name, block_steps = transformer_block(graph, case, b, block, stream, name)
        steps += block_steps
    if case.conventions.final_layernorm and (case.has_unembedding or case.X is None):
        stream, final = final_norm(graph, case, stream, name)
        steps.append(final)
    if not case.has_unembedding:
        steps.append(output_step(case, stream))
        return _with_weights(graph, case, steps, inputs), None, {"z": [], "exp_z": [], "p": [], "L": None, "rows": {}}
    outputs, head_steps = unembedding(graph, case, stream, E)
    steps = _with_weights(graph, case, steps + head_steps, inputs)
    if outputs["L"] is not None:
        steps += training_steps(graph, case, outputs["E"], outputs)
    return steps, outputs["L"], outputs


def _with_weights(graph: Graph, case: Case, steps: list[Step], at: int) -> list[Step]:
    """``steps`` with the weights step (rules/weights.py) at index ``at``, after the
    inputs and before the first block, when the model has weights no other step prints."""
    weights = weights_step(graph, case, steps)
    return steps if weights is None else steps[:at] + [weights] + steps[at:]
