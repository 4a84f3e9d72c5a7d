"""The training step: dL/dtheta by reverse mode, one SGD step, the pass again
(seed 000, step 2b: ``E_{i,c} <- E_{i,c} - eta dL/dE_{i,c}``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fractions import Fraction

from derive.registry import Convention, Operation, register
from derive import formula as F
from derive.graph import Graph
from derive.name import Name
from derive.printing import counted, listed
from derive.steps import Equation, Ref, Step, Table, vec

from .attention import head_name
from .unembedding import loss_targets

if TYPE_CHECKING:
    from derive.case import Case


def training_steps(graph: Graph, case: Case, E, outputs: dict) -> list[Step]:
    """The gradient tables (the rows of E, ``E``: its leaves, V x d_model, or [] when the
    case has none: the prompt's rows in order of first appearance, and with a tied W_U
    every other row too, since each is a column of W_U; then every other weight), the
    SGD step of every trained weight that L reaches, and p(target) of each row the loss
    reads and L after.

    Only the weights ``conventions.gradients`` names get a derivative (all by default);
    when it names none of the model's, there is no training step (the loss alone: []).

    Every sentence is generated from the case and the graph: which weights
    ``conventions.trained`` moves, how many rows of E have derivative exactly 0 (the rows
    of tokens outside the prompt, when W_U is not tied); the SGD tables hold every row of a
    trained weight that has a path to L (a row without one has derivative exactly 0)."""
    eta = case.conventions.learning_rate
    derived = _derived(case)
    if case.logits is not None:
        # (given logits: no weight to name, so gradients is "all" or [], the loss alone)
        return list(_logit_steps(case, outputs)) + [after_step(case, outputs)] if case.conventions.gradients != () else []
    weights = {key: rows for key, rows in _weight_rows(graph).items() if derived(key[2])}
    if not derived("E"):
        E = []
    if not E and not weights:  # conventions.gradients names none of the model's weights: the loss alone
        return []
    reached = graph.ancestors(outputs["L"])
    tied = case.W_U is None and bool(E)  # every row of E is also a column of W_U: every row has a path to L
    seen = list(dict.fromkeys(case.ids)) if E else []
    shown = seen + [i for i in range(len(E)) if i not in seen] if tied else seen
    E_i, dE_i = Name("E", param=True, position="i"), Name("E", param=True, position="i", grad=True)
    title = "Gradient of L for the rows of E" if tied else "Gradient of L for the rows of the prompt"
    grad_rows = [[i, f"`{case.pieces[i]}`", vec(E[i], "grad")] for i in shown]
    tables = ([Table(["id", "token", dE_i], grad_rows, title=title)] if shown else []) + [
        Table(["row", Name(param, param=True, grad=True)], [[r, vec(ls, "grad")] for r, ls in rows.items()],
              title=f"dL/d{param}" + _whose(case, block, head))
        for (block, head, param), rows in weights.items()]
    present = list(dict.fromkeys((["E"] if E else []) + [param for _, _, param in weights]))
    gradient = Step("gradient", "The gradient of the loss", _gradient_words(case, E, seen, shown, present), tables)
    trains = _trains(case)
    moving = [i for i in shown if trains("E") and any(leaf in reached for leaf in E[i])]
    updates = [Table(["id", "token", E_i, dE_i, F.Terms(E_i, F.Neg(F.Times(F.number(eta), dE_i)))],
                     [[i, f"`{case.pieces[i]}`", vec(E[i]), vec(E[i], "grad"), vec(E[i], "updated")] for i in moving],
                     title=f"SGD step, eta = {eta}")] if moving else []
    for (block, head, param), rows in weights.items():
        moved = {r: ls for r, ls in rows.items() if trains(param) and any(leaf in reached for leaf in ls)}
        if moved:
            W, dW = Name(param, param=True), Name(param, param=True, grad=True)
            updates.append(Table(["row", F.Terms(W, F.Neg(F.Times(F.number(eta), dW)))],
                                 [[r, vec(ls, "updated")] for r, ls in moved.items()],
                                 title=f"{param} after the step" + _whose(case, block, head)))
    sgd = Step("sgd", "One SGD step", _sgd_words(case, present, "theta", "weight"), updates)
    return [gradient, sgd, after_step(case, outputs)]


def _weight_rows(graph: Graph) -> dict[tuple, dict[int, Sequence[int]]]:
    """The leaves of every weight but E, by (block, head, name) in the graph's order (head
    None but for a head's own weight, given with the head), then by row (1-based):
    ``{(1, None, "W_Q"): {1: [leaf, ...], ...}, ...}``."""
    out: dict[tuple, dict[int, list[int]]] = {}
    for w in graph.weights:
        if w.param != "E":
            for r in range(w.rows):
                ids = range(w.start + r * w.cols, w.start + (r + 1) * w.cols)
                if not w.heads:  # (the usual: shared by the heads; a row's ids, a range)
                    rows = out.setdefault((w.block, None, w.param), {})
                    rows[r + 1] = [*rows[r + 1], *ids] if r + 1 in rows else ids
                    continue
                for i in ids:
                    out.setdefault((w.block, w.heads.get(i - w.start), w.param), {}).setdefault(r + 1, []).append(i)
    for leaf in graph.loose_params():  # a trainable leaf of its own (given logits: the case has no weight)
        meta = graph.nodes[leaf].meta
        out.setdefault((meta.block, None, meta.param), {}).setdefault(meta.position, []).append(leaf)
    return out


def _whose(case: Case, block: int | None, head: int | None) -> str:
    """A weight table's title after the weight: its head when it is a head's own
    (`` of head 3 (hand set)``, as the weights step names it), its block."""
    return (f" of {head_name(case.blocks[block - 1], head)}" if head else "") + (f" (block {block})" if block else "")


def _derived(case: Case):
    """Whether dL/dtheta of a weight of this name is derived (``conventions.gradients``)."""
    gradients = case.conventions.gradients
    return lambda name: gradients is None or name in gradients


def _trains(case: Case):
    """Whether the SGD step moves a weight of this name (``conventions.trained``)."""
    trained = case.conventions.trained
    return lambda name: trained is None or name in trained


def _gradient_words(case: Case, E, seen: list[int], shown: list[int], present: list[str]) -> str:
    """The gradient step's words: which weights get a derivative (every one, or the
    ``present`` ones ``conventions.gradients`` names); with a tied W_U, why the rows outside
    the prompt have a derivative (and whether they move); untied, how many rows of E have none."""
    words = "Reverse mode from L back to every weight." if case.conventions.gradients is None else \
        (f"Reverse mode from L back to {listed(present)}, as conventions.gradients asks: the derivatives of the "
         "other weights are not derived, and they do not move.")
    rest = len(E) - len(shown)
    if len(shown) > len(seen):
        words += (" W_U is tied to E^T, so every row of E is also a column of W_U: the rows of tokens that are "
                  "not in the prompt get a derivative through the logits"
                  + (", and move too." if _trains(case)("E") else " (E is not trained: they do not move)."))
    elif rest:
        words += (f" The other {counted(rest, 'row')} of E {'has' if rest == 1 else 'have'} "
                  "derivative exactly 0: a token that is not in the prompt does not move.")
    return words


def _sgd_words(case: Case, present: list[str], theta: str, what: str) -> str:
    """The SGD step's words: the rule, and which of the ``present`` weights (names, in
    order) ``conventions.trained`` moves; ``theta`` and ``what`` name the trained quantity
    (``theta``, ``weight``; ``z``, ``logit``)."""
    eta = case.conventions.learning_rate
    rule = f"{theta} <- {theta} - eta dL/d{theta}"  # (eta: the table's title gives it; 1/10 dL/dtheta would read as a quotient)
    trains = _trains(case)
    moved = [name for name in present if trains(name)]
    if moved == present and case.conventions.gradients is None:
        return f"Every {what} moves against its derivative: {rule}."
    if moved == present:
        one = len(moved) == 1
        return (f"{listed(moved)} {'moves' if one else 'move'} against {'its derivative' if one else 'their derivatives'}"
                f": {rule}; every {what} without a derivative keeps its value.")
    if not moved and case.conventions.gradients is not None and case.conventions.trained:
        return (f"conventions.trained names {listed(list(case.conventions.trained))}, but conventions.gradients "
                f"derives only {listed(present)}: no {what} has both, so the step moves nothing, and the pass "
                "after it is the pass before.")
    if not moved:
        return (f"No {what} is trained here (conventions.trained names none of {', '.join(present)}): the step "
                "moves nothing, and the pass after it is the pass before.")
    one = len(moved) == 1
    return (f"Only {listed(moved)} {'is' if one else 'are'} trained (conventions.trained): "
            f"{'it moves' if one else 'they move'} against {'its derivative' if one else 'their derivatives'}, {rule}; "
            f"every other {what} keeps its value.")


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
    moves = _trains(case)("z")
    words = (("The logits are the trained quantity here. " if moves else
              "The logits are the inputs here, and not trained (conventions.trained leaves out z). ")
             + f"The derivative of the cross-entropy of the softmax is {grad}, where y is 1 for the target and 0 "
             + ("elsewhere: the target's logit goes up, every other down." if moves and len(case.pieces) > 1 else
                "elsewhere."))
    update = Table(["token", "z", grad, F.Terms(Name("z"), F.Neg(F.Times(F.number(eta), Name("z", grad=True))))],
                   [[f"`{piece}`", Ref("before", z[c]), Ref("grad", z[c]), Ref("updated", z[c])]
                    for c, piece in enumerate(case.pieces)], title=f"SGD step, eta = {eta}")
    return (Step("gradient", "The gradient of the loss", words, [table]),
            Step("sgd", "One SGD step", _sgd_words(case, ["z"], "z", "logit"), [update] if moves else []))


def after_step(case: Case, outputs: dict) -> Step:
    """p(target) of each row the loss reads, and L, before and after the step."""
    L = outputs["L"]
    targets = loss_targets(case)
    equations, tables = [], []
    if len(targets) == 1:
        (t, target), = targets.items()
        piece, p = case.pieces[target], outputs["rows"][t]["p"][target]
        equations = [Equation(f"p(`{piece}`) before", Ref("before", p)),
                     Equation(f"p(`{piece}`) after", Ref("after", p))]
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
        Convention("gradients", None, '"all" or the weights whose dL/dtheta is derived (a large model: ["W_U"] '
                   'for one layer\'s, [] for the loss alone, with no step); a weight left out does not move',
                   kind="weights"),
    ),
    forward=training_steps,
))
