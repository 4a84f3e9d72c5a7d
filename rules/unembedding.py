"""The next token: logits, softmax, loss (seed 000, step 9).

    z = f_T W_U / T_temp          (W_U = E^T when tied; one logit per vocabulary token)
    p_i = e^{z_i} / sum_j e^{z_j},   L = -ln p(target)   (nats)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fractions import Fraction

from derive.registry import Convention, Operation, Param, register
from derive.array import Array
from derive.name import Name, Piece
from derive.graph import Div, Graph, Greedy, Lin, Log, Meta
from derive.steps import Equation, Ref, Step, Table, vec

from .linear import Ids, affine, constant, weight

if TYPE_CHECKING:
    from derive.case import Case


def unembedding(graph: Graph, case: Case, f: Ids, E: Ids) -> tuple[dict, list[Step]]:
    """Add logits, e^z, p and L for the last row of ``f``; return their ids and the steps.

    The tied case uses the same leaves as E, so dL/dE collects the input and the output
    path. Temperature divides the logits (a rational scaling)."""
    if case.W_U is None and not E:  # a given X has no embedding step: the tied W_U still reads E
        E = weight(graph, "E", case.E)
    W_U = [list(col) for col in zip(*E)] if case.W_U is None else weight(graph, "W_U", case.W_U)
    last = len(f) - 1
    T_temp = case.conventions.temperature
    if T_temp == 0:
        return _greedy(graph, case, f, W_U)
    logit = _logit(case, last)
    z = Array(graph, [f[last]]) @ Array(graph, W_U)
    if T_temp != 1:
        z = z * (1 / T_temp)
    z = z.named(logit("z"))
    e = z.exp().named(logit("exp_z"))
    total = e.sum().named(lambda t, c: Meta.of(Name("sum_exp_z"), position=last + 1))
    p = (e / total).named(logit("p"))
    z, exp_z, p, total = z.ids()[0], e.ids()[0], p.ids()[0], total.column()[0]
    inv_T = 1 / T_temp
    out = {"z": z, "exp_z": exp_z, "p": p, "sum": total, "L": None}
    table = Table(["token", "z", "e^z", "p"],
                  [[f"`{case.pieces[c]}`", Ref("before", z[c]), Ref("before", exp_z[c]), Ref("before", p[c])]
                   for c in range(len(case.pieces))], title="Logits and softmax", sort_by=1)
    steps = [Step("logits", "The next token",
                  f"The product by W_U{' (tied: E^T)' if case.W_U is None else ''} gives one score z per token"
                  + (f", divided by the temperature T = {case.conventions.temperature}" if inv_T != 1 else "")
                  + "; the softmax turns the scores into probabilities.", [table])]
    if case.target is not None:
        piece = case.pieces[case.target]
        log_p = graph.scratch(Log(), (p[case.target],), f"ln p({piece})")
        meta = Meta.of(Name("L"), position=last + 1, index=piece)
        if case.conventions.loss_log == "2":
            ln2 = graph.scratch(Log(), (constant(graph, 2, "2"),), "ln 2")
            out["L"] = graph.add(Div(), (graph.scratch(Lin([-1]), (log_p,), f"-ln p({piece})"), ln2), meta)
        else:
            out["L"] = graph.add(Lin([-1]), (log_p,), meta)
        unit = "bits, L = -log2 p" if case.conventions.loss_log == "2" else "nats"
        steps.append(Step("loss", "The loss", f"L = -ln p({piece}), in {unit}.",
                          equations=[Equation(f"p({piece})", Ref("before", p[case.target])),
                                     Equation(f"L = -ln p({piece})", Ref("before", out["L"]))]))
    return out, steps


def _logit(case: Case, last: int):
    """The metadata maker of one quantity per vocabulary piece of the last row (z, e^z, p):
    ``_logit(case, 4)("z")(0, c)`` is z_piece of row 5, its index the piece."""
    return lambda symbol: lambda t, c: Meta.of(Name(symbol, index=Piece(case.pieces[c])), position=last + 1)


def _greedy(graph: Graph, case: Case, f: Ids, W_U: Ids) -> tuple[dict, list[Step]]:
    """T = 0: the logits, and p = 1 for their argmax (lowest id on a tie), 0 elsewhere."""
    last = len(f) - 1
    z = affine(graph, [f[last]], W_U, None, lambda t, c: _logit(case, last)("z")(0, c))[0]
    p = [graph.add(Greedy(c), z, _logit(case, last)("p")(0, c)) for c in range(len(z))]
    table = Table(["token", "z", "p"], [[f"`{case.pieces[c]}`", Ref("before", z[c]), Ref("before", p[c])]
                                        for c in range(len(case.pieces))], title="Logits, greedy", sort_by=1)
    words = ("T = 0 is greedy decoding: the next token is the argmax of the logits (on a tie, the lowest id), "
             "with p = 1; every other token gets 0. There is no loss and no training step at T = 0.")
    return {"z": z, "exp_z": [], "p": p, "sum": None, "L": None}, [Step("logits", "The next token (greedy)",
                                                                         words, [table])]


def output_step(case: Case, f: Ids) -> Step:
    """The last step of a case without a vocabulary: the output rows."""
    table = Table(["row", "output"], [[f"`{tok}`", vec(f[t])] for t, tok in enumerate(case.tokens)],
                  title="Output")
    return Step("output", "The output", "The stream after the last block.", [table])


UNEMBEDDING = register(Operation(
    name="logits", kind="stage", title="Logits, softmax, loss", stage=70, steps=("logits", "loss", "output"),
    symbols={"z": "a logit", "exp_z": "e^z", "sum_exp_z": "the sum of e^z", "p": "a probability", "L": "the loss"},
    source="Radford et al. 2019 (GPT-2): z = f W_U, p = softmax(z / T), L = -ln p(target)",
    params=(Param("W_U", ("d_model", "V"), 'the unembedding, or "tied" (W_U = E^T)'),),
    conventions=(
        Convention("temperature", Fraction(1), "T dividing the logits; 0 is greedy (argmax, ties to the lowest id)",
                   kind="nonnegative", expected="a temperature T >= 0 (0 is greedy)"),
        Convention("loss_log", "e", "the logarithm of the loss",
                   choices={"e": "L = -ln p, in nats", "2": "L = -log2 p, in bits"},
                   slips={"2": "log base 2 (bits) instead of the natural log"}),
    ),
    forward=unembedding,
))
