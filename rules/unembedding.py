"""The next token: logits, softmax, loss (seed 000, step 9).

    z = f_t W_U / T_temp          (W_U = E^T when tied; one logit per vocabulary token)
    p_i = e^{z_i} / sum_j e^{z_j},   L = -ln p(target)   (nats; -log2 p in bits)

With ``loss = "mean"`` (the language-model loss, Hugging Face's ``labels = input_ids``):
row t of 1..T-1 predicts token t + 1, row T the target when the case gives one, and

    l_t = -ln p_t(next token),   L = (1/n) sum_t l_t   over the n rows that have a target.

A case may also start here, from given logits (a softmax or temperature exercise:
``[input] logits``): the logits are then the trained quantity, dL/dz = (p - onehot) / T.
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


def loss_targets(case: Case) -> dict[int, int]:
    """The target of every row the loss reads: {row (0-based): vocabulary id}. ``loss =
    "last"``: the last row and ``prompt.target``; ``"mean"``: row t predicts token t + 1
    (t < T - 1) and the last row the target when given. Empty without a loss."""
    last = len(case.tokens) - 1
    targets = {t: case.ids[t + 1] for t in range(last)} if case.conventions.loss == "mean" else {}
    if case.target is not None:
        targets[last] = case.target
    return targets


def unembedding(graph: Graph, case: Case, f: Ids, E: Ids) -> tuple[dict, list[Step]]:
    """Add the logits, e^z, p of the last row of ``f`` (T x d_model; and of every row the
    loss reads) and L; return their ids (``z``, ``exp_z``, ``p``, ``sum`` of the last row,
    ``rows``: the same for every row by 0-based index, ``L``, ``E``: the leaves of E) and
    the steps.

    The tied case uses the same leaves as E, so dL/dE collects the input and the output
    path. z names the logits, f W_U (Radford et al. 2019); under a temperature T the
    softmax reads z / T, a scratch value (a rational scaling): p = softmax(z / T), and e^z
    is e^(z / T), as for given logits."""
    if case.W_U is None and not E:  # a given X has no embedding step: the tied W_U still reads E
        E = weight(graph, "E", case.E)
    W_U = [list(col) for col in zip(*E)] if case.W_U is None else weight(graph, "W_U", case.W_U)
    last = len(f) - 1
    T_temp = case.conventions.temperature
    if T_temp == 0:
        out, steps = _greedy(graph, case, f, W_U)
        return out | {"E": E}, steps
    targets = loss_targets(case)
    rows = {}
    for t in sorted(set(targets) | {last}):
        z = (Array(graph, [f[t]]) @ Array(graph, W_U)).named(_logit(case, t + 1)("z"))
        scaled = z if T_temp == 1 else Array(graph, (z * (1 / T_temp)).ids())  # (z / T: a scratch value)
        rows[t] = softmax(graph, case, scaled, t + 1) | {"z": z.ids()[0]}
    out = rows[last] | {"rows": rows, "E": E}
    words = (f"The product by W_U{' (tied: E^T)' if case.W_U is None else ''} gives one score z per token"
             + ("; the softmax turns the scores into probabilities." if T_temp == 1 else
                f", the logits; the softmax of z / T turns them into probabilities: the temperature T = {T_temp} "
                "divides every logit first "
                + ("(T < 1 sharpens the distribution)." if T_temp < 1 else "(T > 1 flattens the distribution).")))
    steps = [logits_step(case, rows, words)]
    out["L"], loss = loss_step(graph, case, rows, targets)
    return out, steps + ([loss] if loss else [])


def given_logits(graph: Graph, case: Case) -> tuple[dict, list[Step]]:
    """A case that starts from logits (``[input] logits``, one per vocabulary piece): z as
    trainable leaves named z_piece (row 1), p = softmax(z / T) (T = 0: greedy; z / T is a
    scratch value: z names the given logits), the loss of the target when given; the ids
    as :func:`unembedding` returns them (``z``: the leaves) and the steps."""
    z = Array(graph, [[graph.leaf(v, Meta.of(Name("z", index=Piece(case.pieces[c])), position=1, param="z"))
                       for c, v in enumerate(case.logits)]])
    T_temp = case.conventions.temperature
    if T_temp == 0:
        p, table = _argmax(graph, case, z.ids()[0], 1, sort=False)
        words = ("T = 0 is greedy decoding: p = 1 for the largest logit (on a tie, the lowest id), 0 for every "
                 "other token. There is no loss and no training step at T = 0.")
        return {"z": z.ids()[0], "exp_z": [], "p": p, "sum": None, "L": None, "rows": {}, "E": []}, \
            [Step("logits", "The softmax (greedy)", words, [table])]
    scaled = z if T_temp == 1 else Array(graph, (z * (1 / T_temp)).ids())
    row = softmax(graph, case, scaled, 1) | {"z": z.ids()[0]}
    over = "z" if T_temp == 1 else "z/T"
    # z / T is not a named quantity (z names the given logits): the page shows e^(z/T) next to z
    columns = ["token", "z", f"e^({over})" if T_temp != 1 else "e^z", "p"]
    table = Table(columns, [[f"`{piece}`", Ref("before", row["z"][c]), Ref("before", row["exp_z"][c]),
                             Ref("before", row["p"][c])]
                            for c, piece in enumerate(case.pieces)], title="Softmax of the given logits",
                  short_exact=True)
    over_i, over_j = ("z_i", "z_j") if T_temp == 1 else ("z_i/T", "z_j/T")
    words = (f"p_i = e^({over_i}) / sum_j e^({over_j})"
             + (f": the temperature T = {T_temp} divides every logit first "
                + ("(T < 1 sharpens the distribution)." if T_temp < 1 else "(T > 1 flattens the distribution).")
                if T_temp != 1 else "."))
    step = Step("logits", "The softmax", words, [table], [Equation(f"sum_j e^({over_j})", Ref("before", row["sum"]))])
    targets = {0: case.target} if case.target is not None else {}
    L, loss = loss_step(graph, case, {0: row}, targets)
    return row | {"rows": {0: row}, "L": L, "E": []}, [step] + ([loss] if loss else [])


def softmax(graph: Graph, case: Case, z: Array, position: int) -> dict:
    """e^z, their sum and p = e^z / sum_j e^z_j of one row of logits ``z`` (1 x V, already
    named; under a temperature T other than 1, z / T, and the terms are named e^(z_j/T)),
    for the row ``position`` (1-based): the ids ``z``, ``exp_z``, ``p`` (V each) and
    ``sum``. The softmax of Bridle 1990; every logit enters its own exp (no shift by the
    maximum: the values are exact)."""
    exp = "exp_z" if case.conventions.temperature == 1 else "exp_z_over_T"
    e = z.exp().named(_logit(case, position)(exp))
    total = e.sum().named(lambda t, c: Meta.of(Name("sum_" + exp), position=position))
    p = (e / total).named(_logit(case, position)("p"))
    return {"z": z.ids()[0], "exp_z": e.ids()[0], "p": p.ids()[0], "sum": total.column()[0]}


def log_word(case: Case) -> str:
    """How the page writes the loss's logarithm: ``ln`` (nats) or ``log2`` (bits)."""
    return "log2" if case.conventions.loss_log == "2" else "ln"


def surprisal(graph: Graph, case: Case, p: int, piece: str, meta: Meta) -> int:
    """The node -ln p (nats) or -log2 p = -ln p / ln 2 (bits, ``loss_log = "2"``) of the
    probability node ``p``, named ``meta``."""
    log_p = graph.scratch(Log(), (p,), f"ln p({piece})")
    if case.conventions.loss_log != "2":
        return graph.add(Lin([-1]), (log_p,), meta)
    ln2 = graph.scratch(Log(), (constant(graph, 2, "2"),), "ln 2")
    return graph.add(Div(), (graph.scratch(Lin([-1]), (log_p,), f"-ln p({piece})"), ln2), meta)


def loss_step(graph: Graph, case: Case, rows: dict, targets: dict[int, int]) -> tuple[int | None, Step | None]:
    """L and its step: -ln p(target) of the last row (``loss = "last"``), or the mean of
    l_t = -ln p_t(target_t) over the rows in ``targets`` (``"mean"``); (None, None) when
    no row has a target."""
    if not targets:
        return None, None
    log, unit = log_word(case), ("bits" if case.conventions.loss_log == "2" else "nats")
    if case.conventions.loss == "last":
        (t, target), = targets.items()
        piece = case.pieces[target]
        p = rows[t]["p"][target]
        L = surprisal(graph, case, p, piece, Meta.of(Name("L"), position=t + 1, index=piece))
        return L, Step("loss", "The loss", f"L = -{log} p(`{piece}`), in {unit}.",
                       equations=[Equation(Name("p", index=Piece(piece)), Ref("before", p)),
                                  Equation(f"L = -{log} p(`{piece}`)", Ref("before", L))])
    terms = {t: surprisal(graph, case, rows[t]["p"][target], case.pieces[target],
                          Meta.of(Name("ell", position=t + 1))) for t, target in targets.items()}
    n = len(terms)
    L = graph.add(Lin([Fraction(1, n)] * n), tuple(terms.values()), Meta.of(Name("L")))
    table = Table(["t", "token t", "target", "p_t(target)", "l_t"],
                  [[t + 1, f"`{case.tokens[t]}`", f"`{case.pieces[target]}`", Ref("before", rows[t]["p"][target]),
                    Ref("before", terms[t])] for t, target in targets.items()], title="The loss of each row")
    given = " and the last row the target" if case.target is not None else ""
    words = (f"The language-model loss: row t predicts the token at t + 1{given}; l_t = -{log} p_t(target), "
             f"and L is their mean over the {n} {'row' if n == 1 else 'rows'}, in {unit} "
             "(Hugging Face's loss when the labels are the input ids).")
    return L, Step("loss", "The loss", words, [table], [Equation(f"L = (1/{n}) sum_t l_t", Ref("before", L))])


def logits_step(case: Case, rows: dict, words: str) -> Step:
    """The logits step: the last row's z, e^z (e^(z/T) under a temperature T) and p by
    token (sorted), and, when the loss reads other rows, z and p of every row (rows:
    positions, columns: tokens)."""
    out = rows[max(rows)]
    exp = "e^z" if case.conventions.temperature == 1 else "e^(z/T)"  # (z / T is a scratch value: z names the logits)
    tables = [Table(["token", "z", exp, "p"],
                    [[f"`{case.pieces[c]}`", Ref("before", out["z"][c]), Ref("before", out["exp_z"][c]),
                      Ref("before", out["p"][c])] for c in range(len(case.pieces))],
                    title="Logits and softmax" + (f", row {max(rows) + 1}" if len(rows) > 1 else ""), sort_by=1)]
    if len(rows) > 1:  # one column per row t (T is usually smaller than V)
        for key, title in (("z", "Logits z_t of every row t"), ("p", "Probabilities p_t of every row t")):
            tables.append(Table(["token"] + [f"{key}_{t + 1}" for t in rows],
                                [[f"`{piece}`"] + [Ref("before", row[key][c]) for row in rows.values()]
                                 for c, piece in enumerate(case.pieces)], title=title))
    return Step("logits", "The next token", words, tables)


def _logit(case: Case, position: int):
    """The metadata maker of one quantity per vocabulary piece of row ``position``
    (1-based; z, e^z, p): ``_logit(case, 5)("z")(0, c)`` is z_piece of row 5."""
    return lambda symbol: lambda t, c: Meta.of(Name(symbol, index=Piece(case.pieces[c])), position=position)


def _greedy(graph: Graph, case: Case, f: Ids, W_U: Ids) -> tuple[dict, list[Step]]:
    """T = 0: the logits, and p = 1 for their argmax (lowest id on a tie), 0 elsewhere."""
    last = len(f) - 1
    z = affine(graph, [f[last]], W_U, None, lambda t, c: _logit(case, last + 1)("z")(0, c))[0]
    p, table = _argmax(graph, case, z, last + 1, sort=True)
    words = ("T = 0 is greedy decoding: the next token is the argmax of the logits (on a tie, the lowest id), "
             "with p = 1; every other token gets 0. There is no loss and no training step at T = 0.")
    return {"z": z, "exp_z": [], "p": p, "sum": None, "L": None, "rows": {}}, \
        [Step("logits", "The next token (greedy)", words, [table])]


def _argmax(graph: Graph, case: Case, z: list[int], position: int, sort: bool) -> tuple[list[int], Table]:
    """T = 0 on one row of logits ``z`` (V ids, row ``position``): p_c = 1 for the argmax
    (the lowest id on a tie), 0 elsewhere, and the table of z and p (sorted by z or not)."""
    p = [graph.add(Greedy(c), z, _logit(case, position)("p")(0, c)) for c in range(len(z))]
    table = Table(["token", "z", "p"], [[f"`{piece}`", Ref("before", z[c]), Ref("before", p[c])]
                                        for c, piece in enumerate(case.pieces)], title="Logits, greedy",
                  sort_by=1 if sort else None)
    return p, table


def output_step(case: Case, f: Ids) -> Step:
    """The last step of a case without a vocabulary: the output rows."""
    table = Table(["row", "output"], [[f"`{tok}`", vec(f[t])] for t, tok in enumerate(case.tokens)],
                  title="Output")
    return Step("output", "The output", "The stream after the last block.", [table])


def _check_loss(case: Case) -> tuple[str, str, str] | None:
    """``loss = "mean"`` needs next tokens: a prompt (not a given X) of two or more tokens,
    or a target."""
    if case.conventions.loss != "mean" or case.conventions.temperature == 0:
        return None
    if not case.pieces:  # no vocabulary: the case ends with the output rows, no logits and no loss
        return "conventions.loss", '"mean" but the case has no vocabulary, so no logits and no loss', \
            'no loss field, or a case with [vocab] and an output layer'
    if case.logits is not None:
        return "conventions.loss", '"mean" reads the rows of a prompt, and given logits are one row', \
            'loss = "last" (the default)'
    if not loss_targets(case):
        return ("conventions.loss", '"mean" has no row with a target' +
                (" (a given X has no next tokens)" if case.X is not None else " (one token and no prompt.target)"),
                "a prompt of two or more tokens, a prompt.target, or loss = \"last\"")
    return None


UNEMBEDDING = register(Operation(
    name="logits", kind="stage", title="Logits, softmax, loss", stage=70, steps=("logits", "loss", "output"),
    symbols={"z": "a logit", "exp_z": "e^z", "sum_exp_z": "the sum of e^z",
             "exp_z_over_T": "e^(z/T), the softmax's term under a temperature T other than 1",
             "sum_exp_z_over_T": "the sum of e^(z/T)", "p": "a probability",
             "ell": "the loss of one row t, -ln p_t of its target (loss = mean)", "L": "the loss"},
    source="Radford et al. 2019 (GPT-2): z = f W_U, p = softmax(z / T), L = -ln p(target)",
    params=(Param("W_U", ("d_model", "V"), 'the unembedding, or "tied" (W_U = E^T)'),),
    conventions=(
        Convention("temperature", Fraction(1), "T dividing the logits; 0 is greedy (argmax, ties to the lowest id)",
                   kind="nonnegative", expected="a temperature T >= 0 (0 is greedy)",
                   slips={Fraction(1): "the temperature left out (the softmax of z instead of z / T)"}),
        Convention("loss_log", "e", "the logarithm of the loss",
                   choices={"e": "L = -ln p, in nats", "2": "L = -log2 p, in bits"},
                   slips={"2": "log base 2 (bits) instead of the natural log"}),
        Convention("loss", "last", "which rows the loss reads",
                   choices={"last": "L = -ln p(target) of the last row (prompt.target)",
                            "mean": "the language-model loss: the mean over rows t of -ln p_t(token t + 1), "
                                    "and of the last row's -ln p(target) when the case gives one"},
                   source="Hugging Face transformers, GPT2LMHeadModel(input_ids, labels=input_ids): the logits "
                          "of rows 1..T-1 against the labels shifted by one, cross-entropy averaged"),
    ),
    forward=unembedding,
    check=_check_loss,
))
