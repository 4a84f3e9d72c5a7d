"""The training step: dL/dtheta by reverse mode, one SGD step, the pass again
(seed 000, step 2b: ``E_{i,c} <- E_{i,c} - eta dL/dE_{i,c}``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fractions import Fraction

from derive.registry import Convention, Operation, register
from derive import formula as F
from derive.graph import Graph
from derive.name import Name
from derive.steps import Equation, Ref, Step, Table, vec

from .unembedding import loss_targets

if TYPE_CHECKING:
    from derive.case import Case


def training_steps(graph: Graph, case: Case, E, outputs: dict) -> list[Step]:
    """The gradient table (the rows of E, ``E``: its leaves, V x d_model, or [] when the
    case has none: the prompt's rows in order of first appearance, and with a tied W_U
    every other row too, since each is a column of W_U; then every other weight), the
    SGD update of those rows, and p(target) of each row the loss reads and L after."""
    eta = case.conventions.learning_rate
    if case.logits is not None:
        return list(_logit_steps(case, outputs)) + [after_step(case, outputs)]
    tied = case.W_U is None and bool(E)  # every row of E is also a column of W_U: every row moves
    seen = list(dict.fromkeys(case.ids))
    shown = seen + [i for i in range(len(E)) if i not in seen] if tied else seen
    rest = len(E) - len(shown)
    grad_rows = [[i, f"`{case.pieces[i]}`", vec(E[i], "grad")] for i in shown]
    E_i, dE_i = Name("E", param=True, position="i"), Name("E", param=True, position="i", grad=True)
    title = "Gradient of L for the rows of E" if tied else "Gradient of L for the rows of the prompt"
    tables = [Table(["id", "token", dE_i], grad_rows, title=title)] if shown else []
    by_param: dict[tuple, list[int]] = {}
    for leaf in graph.param_leaves():
        meta = graph.nodes[leaf].meta
        if meta.param != "E":
            by_param.setdefault((meta.block, meta.param), []).append(leaf)
    for (block, param), leaves in by_param.items():
        rows: dict[int, list[int]] = {}
        for leaf in leaves:
            rows.setdefault(graph.nodes[leaf].meta.position, []).append(leaf)
        grad = Name(param, param=True, grad=True)
        tables.append(Table(["row", grad], [[r, vec(ls, "grad")] for r, ls in rows.items()],
                            title=f"dL/d{param}" + (f" (block {block})" if block else "")))
    words = "Reverse mode from L back to every weight."
    if tied and len(shown) > len(seen):
        words += (" W_U is tied to E^T, so every row of E is also a column of W_U: the rows of tokens that are "
                  "not in the prompt get a derivative through the logits, and move too.")
    elif rest:
        words += (f" The other {rest} {'row' if rest == 1 else 'rows'} of E {'has' if rest == 1 else 'have'} "
                  "derivative exactly 0: a token that is not in the prompt does not move.")
    gradient = Step("gradient", "The gradient of the loss", words, tables)
    updates = [Table(["id", "token", E_i, dE_i, F.Terms(E_i, F.Neg(F.Times(F.number(eta), dE_i)))],
                     [[i, f"`{case.pieces[i]}`", vec(E[i]), vec(E[i], "grad"), vec(E[i], "updated")] for i in shown],
                     title=f"SGD step, eta = {eta}")] if shown else []
    sgd = Step("sgd", "One SGD step", f"Every weight moves against its derivative: theta <- theta - {eta} dL/dtheta.",
               updates)
    return [gradient, sgd, after_step(case, outputs)]


def _logit_steps(case: Case, outputs: dict) -> tuple[Step, Step]:
    """The gradient and the SGD step of a case that starts from logits, whose logits are
    the trained quantity: dL/dz_i = (p_i - y_i) / T with y the one-hot target (the
    derivative of the softmax cross-entropy; over ln 2 in bits)."""
    eta, T = case.conventions.learning_rate, case.conventions.temperature
    z, p = outputs["z"], outputs["p"]
    scale = ("" if T == 1 else f" / T") + (" / ln 2" if case.conventions.loss_log == "2" else "")
    grad = f"dL/dz = (p - y){scale}"
    rows = [[f"`{piece}`", Ref("before", z[c]), Ref("before", p[c]), int(c == case.target), Ref("grad", z[c])]
            for c, piece in enumerate(case.pieces)]
    table = Table(["token", "z", "p", "y", grad], rows, title="Gradient of L for the logits")
    words = (f"The logits are the trained quantity here. The derivative of the cross-entropy of the softmax is "
             f"{grad}, where y is 1 for the target and 0 elsewhere: the target's logit goes up, every other down.")
    update = Table(["token", "z", grad, f"z - {eta} dL/dz"],
                   [[f"`{piece}`", Ref("before", z[c]), Ref("grad", z[c]), Ref("updated", z[c])]
                    for c, piece in enumerate(case.pieces)], title=f"SGD step, eta = {eta}")
    return (Step("gradient", "The gradient of the loss", words, [table]),
            Step("sgd", "One SGD step", f"Every logit moves against its derivative: z <- z - {eta} dL/dz.", [update]))


def after_step(case: Case, outputs: dict) -> Step:
    """p(target) of each row the loss reads, and L, before and after the step."""
    L = outputs["L"]
    targets = loss_targets(case)
    equations, tables = [], []
    if len(targets) == 1:
        (t, target), = targets.items()
        piece, p = case.pieces[target], outputs["rows"][t]["p"][target]
        equations = [Equation(f"p({piece}) before", Ref("before", p)), Equation(f"p({piece}) after", Ref("after", p))]
    else:
        tables = [Table(["t", "target", "p_t(target) before", "p_t(target) after"],
                        [[t + 1, f"`{case.pieces[target]}`", Ref("before", outputs["rows"][t]["p"][target]),
                          Ref("after", outputs["rows"][t]["p"][target])] for t, target in targets.items()],
                        title="The targets' probabilities")]
    equations += [Equation("L before", Ref("before", L)), Equation("L after", Ref("after", L))]
    return Step("after", "After the step", "The same forward pass with the updated weights.", tables, equations)


TRAINING = register(Operation(
    name="training", kind="stage", title="Training step", stage=80, steps=("gradient", "sgd", "after"),
    symbols={"grad": "dL/dtheta of a weight", "updated": "a weight after the SGD step"},
    source="reverse mode (Linnainmaa 1970) and SGD; seed 000, step 2b",
    conventions=(
        Convention("learning_rate", Fraction(1, 10), "eta of the SGD step theta <- theta - eta dL/dtheta",
                   kind="number"),
        Convention("trained", None, '"all" or the weights the SGD step moves (the seed 000 trains only E)',
                   kind="weights"),
    ),
    forward=training_steps,
))
