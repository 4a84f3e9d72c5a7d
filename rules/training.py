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

if TYPE_CHECKING:
    from derive.case import Case


def training_steps(graph: Graph, case: Case, E, outputs: dict) -> list[Step]:
    """The gradient table (rows of E in the prompt, in order of first appearance, then
    every other weight), the SGD update of those rows, and p(target) and L after."""
    eta = case.conventions.learning_rate
    seen = list(dict.fromkeys(case.ids))
    rest = len(case.pieces) - len(seen)
    grad_rows = [[i, f"`{case.pieces[i]}`", vec(E[i], "grad")] for i in seen]
    E_i, dE_i = Name("E", param=True, position="i"), Name("E", param=True, position="i", grad=True)
    tables = [Table(["id", "token", dE_i], grad_rows, title="Gradient of L for the rows of the prompt")]
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
    if rest and case.W_U is not None:  # tied, every row of E is also a column of W_U: it moves too
        words += (f" The other {rest} {'row' if rest == 1 else 'rows'} of E {'has' if rest == 1 else 'have'} "
                  "derivative exactly 0: a token that is not in the sentence does not move.")
    gradient = Step("gradient", "The gradient of the loss", words, tables)
    updates = [Table(["id", "token", E_i, dE_i, F.Terms(E_i, F.Neg(F.Times(F.number(eta), dE_i)))],
                     [[i, f"`{case.pieces[i]}`", vec(E[i]), vec(E[i], "grad"), vec(E[i], "updated")] for i in seen],
                     title=f"SGD step, eta = {eta}")]
    sgd = Step("sgd", "One SGD step", f"Every weight moves against its derivative: theta <- theta - {eta} dL/dtheta.",
               updates)
    target = case.pieces[case.target]
    p, L = outputs["p"][case.target], outputs["L"]
    after = Step("after", "After the step", f"The same forward pass with the updated weights.",
                 equations=[Equation(f"p({target}) before", Ref("before", p)),
                            Equation(f"p({target}) after", Ref("after", p)),
                            Equation("L before", Ref("before", L)), Equation("L after", Ref("after", L))])
    return [gradient, sgd, after]


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
