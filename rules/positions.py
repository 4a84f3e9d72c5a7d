"""Positions: ``x_t = E[id_t] + P_t`` (seed 000, step 3; seed 003, eq. 17.2).

P is either a table of learned weights, one row per position (positions count from 1),
or the sinusoids of Vaswani et al. 2017, section 3.5 (seeds 003 and 004):

    PE[pos, 2i] = sin(pos w_i),  PE[pos, 2i+1] = cos(pos w_i),  w_i = 1 / base^(2i/d)

interleaved as in the paper (or all sines then all cosines, ``concatenated``), with
pos = first_position + t - 1 for the t-th token (0 for the first, as in seed 004). The
sinusoids are exact (sin(1), cos(1/sqrt(10))) and are constants, not trained.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fractions import Fraction

from derive.array import Array
from derive.graph import Cos, Graph, Lin, Meta, Power, Sin
from derive.name import Name
from derive.registry import Convention, Operation, Param, register
from derive.steps import Step, Table, vec

from .linear import Ids, constant, entries, weight

if TYPE_CHECKING:
    from derive.case import Case


def sinusoids(graph: Graph, case: Case, T: int) -> Ids:
    """The T x d_model sinusoid rows PE[pos] (see the module docstring) as graph nodes."""
    conv = case.conventions
    d = case.d_model
    base = constant(graph, conv.sinusoid_base, "base")
    half = d // 2
    spacing = Fraction(2, d) if conv.sinusoid_spacing == "vaswani" else Fraction(1, half - 1)
    freqs = [graph.add(Power(-i * spacing), (base,), Meta(None, f"w_{i}")) for i in range(half)]
    rows = []
    for t in range(T):
        pos = conv.first_position + t
        row = [None] * d
        for i, w in enumerate(freqs):
            angle = graph.scratch(Lin([pos]), (w,), f"{pos} w_{i}")
            first, second = (2 * i, 2 * i + 1) if conv.sinusoid_layout == "interleaved" else (i, half + i)
            sin_col, cos_col = (first, second) if conv.sinusoid_order == "sin_cos" else (second, first)
            for col, op in ((sin_col, Sin()), (cos_col, Cos())):
                row[col] = graph.add(op, (angle,), Meta.of(Name("PE", position=pos, index=col),
                                                                   position=t + 1, index=col + 1))
        rows.append(row)
    return rows


def positions(graph: Graph, case: Case, rows: Ids) -> tuple[Ids, Step]:
    """Add the position rows (learned P as leaves, or sinusoids) and X = E[ids] + P; return
    (X, step). With ``positions = "none"``, X = E[ids]. For a given X the sums are
    x'_t = x_t + PE_t (symbol ``x2``), apart from the given rows x_t."""
    kind = case.conventions.positions
    if kind in ("none", "rotary"):
        words = "This model adds no position vector: X = E[ids]." + (
            " The positions enter each head later: its queries and keys are turned by angles that grow with "
            "the position (rotary embeddings)." if kind == "rotary" else "")
        return rows, Step("positions", "No positions" if kind == "none" else "No position vectors", words,
                          [Table(["token", "x_t = E[id]"], [[f"`{tok}`", vec(rows[t])] for t, tok in
                                                            enumerate(case.tokens)], short_exact=True)])
    P = weight(graph, "P", case.P) if kind == "learned" else sinusoids(graph, case, len(rows))
    # a given X keeps the name x; the sum with the positions is x' (symbol x2, as u' is u2)
    primes = 0 if case.X is None else 1
    X = (Array(graph, rows) + Array(graph, P[:len(rows)])).named(entries("x", primes=primes)).ids()
    columns = ["token", "E[id]", "P_t", "x_t = E[id] + P_t"] if case.X is None else \
        ["row", "x_t", "PE_t", "x'_t = x_t + PE_t"]
    table = Table(columns,
                  [[f"`{tok}`", vec(rows[t]), vec(P[t]), vec(X[t])] for t, tok in enumerate(case.tokens)],
                  title="X = E[ids] + P", short_exact=True)
    words = ("E does not say where the token is. Each position has a row of P, and the sum of "
             "the two rows is the row of X, the only thing the block receives.")
    if kind == "sinusoidal":
        conv = case.conventions
        f1, f2 = ("sin", "cos") if conv.sinusoid_order == "sin_cos" else ("cos", "sin")
        c1, c2 = ("2i", "2i+1") if conv.sinusoid_layout == "interleaved" else ("i", "d/2+i")
        w = "(2i/d)" if conv.sinusoid_spacing == "vaswani" else "(i/(d/2 - 1))"
        # (PE[pos,2i] with no space: the pages' formula finder reads text word by word, and
        # "PE[pos, 2i]" split the formula at the space, leaving ", 2i]" as prose)
        words += (f" Here P is the sinusoids: PE[pos,{c1}] = {f1}(pos w_i), PE[pos,{c2}] = {f2}(pos w_i), "
                  f"w_i = 1/{conv.sinusoid_base}^{w}, pos from {conv.first_position}.")
    return X, Step("positions", "The position table P and the matrix X", words, [table])


def _check_sinusoids(case: Case) -> tuple[str, str, str] | None:
    """Sinusoids come in sine and cosine pairs (an even d_model); the tensor2tensor spacing
    divides by d/2 - 1 (d_model >= 4)."""
    conv, d = case.conventions, case.d_model
    if conv.positions != "sinusoidal":
        return None
    if d % 2:
        return "conventions.positions", f"sinusoids need an even d_model, not {d}", \
            'an even d_model, or positions = "learned"'
    if conv.sinusoid_spacing == "tensor2tensor" and d < 4:
        return "conventions.sinusoid_spacing", f"tensor2tensor spacing divides by d/2 - 1 = 0 (d_model = {d})", \
            'd_model >= 4, or sinusoid_spacing = "vaswani"'
    return None


POSITIONS = register(Operation(
    name="positions", kind="stage", title="Positions", stage=20, steps=("positions",),
    symbols={"x": "x_t = E[id_t] + P_t", "pe": "a sinusoid PE[pos, i]", "x2": "x'_t = x_t + PE_t (a given X with positions)"},
    source="Vaswani et al. 2017, section 3.5 (sinusoids); GPT-2 (a learned table); Su et al. 2021 (rotary)",
    params=(Param("P", ("positions", "d_model"), "the learned position table, one row per position"),),
    conventions=(
        Convention("positions", "learned", "the position vectors added to the rows",
                   choices={"learned": "a table model.P", "sinusoidal": "the sinusoids of Vaswani et al. 2017",
                            "none": "no positions (the default for [input] cases)",
                            "rotary": "none added: each head turns q and k by their positions (RoFormer; "
                                      "rules/rope.py)"}),
        Convention("sinusoid_layout", "interleaved", "the columns of the sinusoids",
                   choices={"interleaved": "PE[pos,2i] = sin(pos w_i), PE[pos,2i+1] = cos (the 2017 paper)",
                            "concatenated": "all sines, then all cosines"},
                   slips={"concatenated": "sinusoid columns concatenated instead of interleaved"},
                   applies=lambda conv: conv.positions == "sinusoidal",
                   source="Vaswani et al. 2017, section 3.5"),
        Convention("sinusoid_order", "sin_cos", "which of each sine and cosine pair comes first",
                   choices={"sin_cos": "sine first (the 2017 paper)", "cos_sin": "cosine first"},
                   applies=lambda conv: conv.positions == "sinusoidal"),
        Convention("sinusoid_spacing", "vaswani", "how the frequencies are spaced",
                   choices={"vaswani": "w_i = 1 / base^(2i/d), i = 0 .. d/2 - 1 (Vaswani et al. 2017, 3.5)",
                            "tensor2tensor": "w_i = 1 / base^(i/(d/2 - 1)) (tensor2tensor's "
                                             "get_timing_signal_1d; d_model >= 4)"},
                   applies=lambda conv: conv.positions == "sinusoidal"),
        Convention("sinusoid_base", Fraction(10000), "the base of the sinusoids, w_i = 1 / base^(2i/d)",
                   kind="positive", source="Vaswani et al. 2017, section 3.5"),
        Convention("first_position", 0, "pos of the first token in the sinusoids (seed 004: PE[0])", kind="count"),
    ),
    forward=positions,
    check=lambda case: _check_sinusoids(case),
))
