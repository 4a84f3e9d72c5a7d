"""Evaluation on the graph: the forward pass, reverse mode, one SGD step, the pass again.

Each node is evaluated once from its parents' values (never by substituting everything
into one expression, which grows exponentially with depth). Rational nodes stay exact
fmpq; the others are arb balls at the working precision ``prec`` (bits). Reverse mode
accumulates ``dL/dnode`` from the loss back to the weights (the chain rule, as in
micrograd), and the SGD step is ``theta <- theta - eta dL/dtheta`` (seed 000, step 2b).
"""

from __future__ import annotations

from dataclasses import dataclass

from flint import ctx, fmpq

from .graph import Graph, NeedPrecision, Undefined, Value, is_zero


@dataclass
class Pass:
    """The values of every node of one forward pass, indexed by node id."""

    values: list[Value]


@dataclass
class Evaluation:
    """Everything derive computes for a case at one working precision.

    Attributes:
        prec: working precision in bits.
        before: the forward pass with the case's weights.
        grads: dL/dtheta for every trainable leaf id (exact 0 where L does not depend on it).
        updated: the weights after one SGD step, by leaf id.
        after: the forward pass with the updated weights (None when there is no loss).
    """

    prec: int
    before: Pass
    grads: dict[int, Value]
    updated: dict[int, Value]
    after: Pass | None


def forward(graph: Graph, overrides: dict[int, Value] | None = None) -> Pass:
    """Evaluate every node in order at the current working precision.

    ``overrides`` replaces leaf values (the updated weights for the pass after the step).

    Raises:
        NeedPrecision: a ball is too wide to decide a branch; evaluate at a higher precision.
        Undefined: an exact division by zero or similar, with the node's label.
    """
    overrides = overrides or {}
    values: list[Value] = []
    for i, node in enumerate(graph.nodes):
        if node.op is None:
            values.append(overrides.get(i, node.leaf))
            continue
        try:
            values.append(node.op.eval([values[p] for p in node.parents]))
        except Undefined as exc:
            raise Undefined(f"{node.meta.label}: {exc}", i) from None
    return Pass(values)


def backward(graph: Graph, values: list[Value], output: int) -> dict[int, Value]:
    """Reverse mode: ``dL/dtheta`` for every trainable leaf, where L is node ``output``.

    Adjoints that are exactly zero are never propagated, so a weight that L does not
    depend on gets an exact 0 (a token that is not in the sentence does not move).
    """
    adjoint: dict[int, Value] = {output: fmpq(1)}
    for i in range(output, -1, -1):
        node = graph.nodes[i]
        g = adjoint.pop(i, None) if node.op is not None else adjoint.get(i)
        if g is None or node.op is None or is_zero(g):
            continue
        args = [values[p] for p in node.parents]
        for p, d in zip(node.parents, node.op.partials(args, values[i])):
            if is_zero(d):
                continue
            contribution = g * d
            adjoint[p] = adjoint[p] + contribution if p in adjoint else contribution
    return {leaf: adjoint.get(leaf, fmpq(0)) for leaf in graph.param_leaves()}


def evaluate(graph: Graph, loss: int | None, learning_rate: fmpq, prec: int,
             trained: tuple[str, ...] | None = None) -> Evaluation:
    """Forward pass, gradients of the loss node ``loss``, one SGD step on the weights named
    in ``trained`` (None: all of them) and the pass again, all at ``prec`` bits.

    Raises:
        NeedPrecision, Undefined: as :func:`forward`.
    """
    with ctx.workprec(prec):
        before = forward(graph)
        if loss is None:
            return Evaluation(prec, before, {}, {}, None)
        grads = backward(graph, before.values, loss)
        updated = {}
        for leaf, g in grads.items():
            moves = not is_zero(g) and (trained is None or graph.nodes[leaf].meta.param in trained)
            updated[leaf] = before.values[leaf] - learning_rate * g if moves else before.values[leaf]
        after = forward(graph, updated)
    return Evaluation(prec, before, grads, updated, after)


__all__ = ["Evaluation", "Pass", "NeedPrecision", "Undefined", "backward", "evaluate", "forward"]
