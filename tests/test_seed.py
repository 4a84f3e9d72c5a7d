"""derive reproduces every number the seed 000 prints in its worked example.

The expected numbers below are transcribed from the TEXT of the seed page
(/work/shared/seeds/000_c4d6024fc6c69432.txt, "A worked example, step by step", steps 1-9,
and the training step of step 2b), with the seed's Unicode minus kept as written and
converted by :func:`num`. They are never taken from derive's output.

Numbers are compared with the ``decimal`` field of derive's JSON records (3 places, half
away from zero). The seed prints E, P and x with one decimal (``-0.5``, ``0.0``): those
are compared as numbers (the Fraction of the decimal text). ids, E[ids] and P_t have no
JSON record (the export has only the computed quantities, from x on), so they are read
from the cells of the steps derive prints (tokens, embedding, positions), rounded by the
same :meth:`Derivation.decimals` the JSON export uses.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path

import pytest
import sympy

from derive.case import load_case
from derive.derivation import derive
from derive.export_json import records
from derive.rounding import Format
from derive.steps import Ref, Vec

MINUS = "\u2212"  # the seed's minus sign


def num(text: str) -> str:
    """A number as the seed prints it, with the ASCII minus."""
    return text.strip().replace(MINUS, "-")


def nums(text: str) -> list[str]:
    """``[−0.5, 0.0, 1.0]`` as the seed prints a vector -> ``["-0.5", "0.0", "1.0"]``."""
    return [num(part) for part in text.strip().strip("[]").split(",")]


def rows(table: str) -> list[list[str]]:
    """The seed's tab-separated table lines (as on the page), split into cells."""
    return [line.split("\t") for line in table.strip("\n").splitlines()]


# ---------------------------------------------------------------------------------------
# The seed's numbers, as printed on the page (tab-separated, Unicode minus).

PIECES = ["the", "␣the", "␣cat", "␣dog", "␣climb", "ed", "␣roof", "␣wall", "␣sofa", "␣floor", ".", "<eot>"]

# Step 1
SEED_IDS = """\
`the`	`␣cat`	`␣climb`	`ed`	`␣the`
0	2	4	5	1"""

# Step 2b: the table E (id, token, c_1..c_4)
SEED_E = """\
0	`the`	−0.5	−0.5	0	1
1	`␣the`	−0.5	0	−0.5	1
2	`␣cat`	1	−0.5	0	−0.5
3	`␣dog`	1	−0.5	−0.5	0
4	`␣climb`	−0.5	1	0	−0.5
5	`ed`	0	0.5	−0.5	0
6	`␣roof`	0	−0.5	1	−0.5
7	`␣wall`	1	0	−1	0
8	`␣sofa`	0.5	−0.5	−0.5	0.5
9	`␣floor`	0.5	0	−0.5	0
10	`.`	0	0	1	−1
11	`<eot>`	0.5	−0.5	0.5	−0.5"""

# Step 2c: E[1] and the five reads E[ids]
SEED_E1 = "[-0.5, 0.0, -0.5, 1.0]"
SEED_E_IDS = """\
`the`	0	[−0.5, −0.5, 0.0, 1.0]
`␣cat`	2	[1.0, −0.5, 0.0, −0.5]
`␣climb`	4	[−0.5, 1.0, 0.0, −0.5]
`ed`	5	[0.0, 0.5, −0.5, 0.0]
`␣the`	1	[−0.5, 0.0, −0.5, 1.0]"""

# Step 3: token, E[id], P_t, x_t
SEED_X = """\
`the`	[−0.5, −0.5, 0.0, 1.0]	[0.0, 0.0, 0.0, 0.0]	[−0.5, −0.5, 0.0, 1.0]
`␣cat`	[1.0, −0.5, 0.0, −0.5]	[0.5, 0.0, −0.5, 0.0]	[1.5, −0.5, −0.5, −0.5]
`␣climb`	[−0.5, 1.0, 0.0, −0.5]	[0.0, 0.5, 0.0, −0.5]	[−0.5, 1.5, 0.0, −1.0]
`ed`	[0.0, 0.5, −0.5, 0.0]	[−0.5, 0.0, 0.5, 0.0]	[−0.5, 0.5, 0.0, 0.0]
`␣the`	[−0.5, 0.0, −0.5, 1.0]	[0.0, −0.5, 0.0, 0.5]	[−0.5, −0.5, −0.5, 1.5]"""

# Step 4
SEED_MU5, SEED_SIGMA5 = "0.000", "0.866"
SEED_U5 = "[-0.577, -0.577, -0.577, 1.732]"
SEED_U = """\
`the`	−0.816	−0.816	0.000	1.633
`␣cat`	1.732	−0.577	−0.577	−0.577
`␣climb`	−0.535	1.604	0.000	−1.069
`ed`	−1.414	1.414	0.000	0.000
`␣the`	−0.577	−0.577	−0.577	1.732"""

# Step 5: token, Q, K, V
SEED_QKV = """\
`the`	[1.633, −0.816, 1.633, −0.816]	[−0.816, 1.633, −0.816, 1.633]	[−0.816, −0.816, 0.000, 1.633]
`␣cat`	[−0.577, −0.577, −0.577, 1.732]	[−0.577, −0.577, 1.732, −0.577]	[1.732, −0.577, −0.577, −0.577]
`␣climb`	[−1.069, 1.604, −1.069, −0.535]	[1.604, −1.069, −0.535, −1.069]	[−0.535, 1.604, 0.000, −1.069]
`ed`	[0.000, 1.414, 0.000, −1.414]	[1.414, 0.000, −1.414, 0.000]	[−1.414, 1.414, 0.000, 0.000]
`␣the`	[1.732, −0.577, 1.732, −0.577]	[−0.577, 1.732, −0.577, 1.732]	[−0.577, −0.577, −0.577, 1.732]"""

# Step 6: q_5 of each head, then j, k_j, q_5.k_j, s_5j, e^s, a_5j
SEED_Q5 = {1: "[1.732, -0.577]", 2: "[1.732, -0.577]"}
SEED_HEADS = {
    1: """\
`the`	[−0.816, 1.633]	−2.357	−1.667	0.189	0.011
`␣cat`	[−0.577, −0.577]	−0.667	−0.471	0.624	0.035
`␣climb`	[1.604, −1.069]	3.395	2.400	11.027	0.622
`ed`	[1.414, 0.000]	2.449	1.732	5.652	0.319
`␣the`	[−0.577, 1.732]	−2.000	−1.414	0.243	0.014""",
    2: """\
`the`	[−0.816, 1.633]	−2.357	−1.667	0.189	0.016
`␣cat`	[1.732, −0.577]	3.333	2.357	10.559	0.882
`␣climb`	[−0.535, −1.069]	−0.309	−0.218	0.804	0.067
`ed`	[−1.414, 0.000]	−2.449	−1.732	0.177	0.015
`␣the`	[−0.577, 1.732]	−2.000	−1.414	0.243	0.020""",
}
SEED_CLIMB_ROW_HEAD1 = "[0.930, 0.063, 0.007, 0.000, 0.000]"
SEED_VERB_SHARE, SEED_SUBJECT_SHARE = "0.94", "0.88"  # ␣climb + ed (head 1), ␣cat (head 2)

# Step 7
SEED_O5 = {1: "[-0.739, 1.411]", 2: "[-0.521, -0.520]"}
SEED_A5 = "[-0.739, 1.411, -0.521, -0.520]"

# Step 8
SEED_H5 = "[-1.239, 0.911, -1.021, 0.980]"
SEED_U2_5 = "[-1.102, 0.964, -0.892, 1.030]"
SEED_HIDDEN5 = "[-1.102, 0.964, -0.892, 1.030, 1.102, -0.964, 0.892, -1.030]"
SEED_G5 = "[-0.149, 0.802, -0.166, 0.874, 0.952, -0.162, 0.726, -0.156]"
SEED_M5 = "[0.803, 0.640, 0.560, 0.718]"
SEED_Y5 = "[-0.436, 1.551, -0.461, 1.698]"

# Step 9
SEED_F5 = "[-0.987, 0.928, -1.011, 1.069]"
SEED_W_U_ROOF = "[-0.5, 1.0, 0.0, 1.0]"  # the factors of z_roof = f_5 . W_U^(6)
SEED_Z_ROOF = "2.491"
SEED_LOGITS = """\
`␣roof`	2.491	12.069	0.395
`␣wall`	1.463	4.318	0.141
`␣sofa`	0.999	2.715	0.089
`␣floor`	0.970	2.637	0.086
`␣cat`	0.634	1.886	0.062
`␣dog`	0.564	1.757	0.058
`␣the`	0.418	1.519	0.050
`ed`	0.410	1.507	0.049
`the`	0.000	1.000	0.033
`<eot>`	−0.518	0.596	0.020
`␣climb`	−0.945	0.389	0.013
`.`	−2.056	0.128	0.004"""
SEED_P_ROOF, SEED_L = "0.395", "0.928"  # "-ln 0.395 = 0.928" (step 2b and step 9)

# Step 2b: the training step
SEED_GRAD = """\
0	`the`	[−0.001, 0.000, 0.001, 0.000]
2	`␣cat`	[0.000, 0.000, 0.026, −0.026]
4	`␣climb`	[−0.001, 0.000, 0.001, 0.000]
5	`ed`	[0.002, 0.002, 0.000, −0.004]
1	`␣the`	[−0.011, 0.011, 0.027, −0.028]"""
SEED_ETA = "0.1"
SEED_UPDATED_THE = "[-0.499, -0.001, -0.503, 1.003]"
# the by-hand update of the ␣the row: (E value, eta, printed gradient, result)
SEED_UPDATE_LINES = r"""
-0.5 - 0.1 \cdot (-0.011) &= -0.499 \\ 0.0 - 0.1 \cdot (0.011) &= -0.001 \\
-0.5 - 0.1 \cdot (0.027) &= -0.503 \\ 1.0 - 0.1 \cdot (-0.028) &= 1.003
"""
SEED_P_ROOF_AFTER, SEED_L_AFTER = "0.396", "0.927"


# ---------------------------------------------------------------------------------------
# derive's numbers

@pytest.fixture(scope="module")
def derivation():
    return derive(load_case("cat-climbed"))


@pytest.fixture(scope="module")
def recs(derivation):
    return records(derivation, Format())


def find(recs, symbol, **where) -> dict:
    """The one record of ``symbol`` whose fields match ``where`` (after_step False unless given)."""
    where.setdefault("after_step", False)
    hits = [r for r in recs if r["symbol"] == symbol and all(r.get(k) == v for k, v in where.items())]
    assert len(hits) == 1, f"{len(hits)} records for {symbol} {where}"
    return hits[0]


def step(derivation, key):
    (found,) = [s for s in derivation.steps if s.key == key]
    return found


def table(derivation, key, title):
    (found,) = [t for t in step(derivation, key).tables if t.title == title]
    return found


def cell_decimals(derivation, cell: Vec) -> list[str]:
    """The rounded text (3 places, half away) of the quantities of a printed vector cell."""
    text = derivation.decimals(cell.refs, Format())
    return [text[r] for r in cell.refs]


def same_number(got: str, expected: str) -> bool:
    return Fraction(got) == Fraction(expected)


# ---------------------------------------------------------------------------------------
# The expectations: one (name, symbol, selector, expected text, how) per printed number.
# ``how`` is "text" (the 3-place decimal text is equal) or "number" (equal as numbers,
# for the seed's one-decimal prints of E, P and x).

def _expectations() -> list[tuple]:
    out = []

    def vector(name, symbol, values, how="text", index_from=1, **where):
        for c, value in enumerate(values, index_from):
            out.append((f"{name}[{c}]", symbol, dict(where, index=c), value, how))

    # Step 3: x_t (E[id] and P_t are checked from the printed cells, see test_e_ids_p)
    for t, (_tok, _e, _p, x) in enumerate(rows(SEED_X), 1):
        vector(f"x_{t}", "x", nums(x), "number", position=t)
    # Step 4
    out.append(("mu_5 (ln1)", "mu", dict(position=5, norm="ln1"), SEED_MU5, "text"))
    out.append(("sigma_5 (ln1)", "sigma", dict(position=5, norm="ln1"), SEED_SIGMA5, "text"))
    vector("u_5 (equation)", "u", nums(SEED_U5), position=5)
    for t, (_tok, *u) in enumerate(rows(SEED_U), 1):
        vector(f"u_{t}", "u", [num(v) for v in u], position=t)
    # Step 5
    for t, (_tok, q, k, v) in enumerate(rows(SEED_QKV), 1):
        for symbol, values in (("q", q), ("k", k), ("v", v)):
            vector(f"{symbol}_{t}", symbol, nums(values), position=t)
    # Step 6: q_5 of each head, then each head's table for row 5
    for head in (1, 2):
        vector(f"head {head} q_5", "q", nums(SEED_Q5[head]), index_from=2 * head - 1, position=5, head=head)
        for j, (_tok, k, qk, s, es, a) in enumerate(rows(SEED_HEADS[head]), 1):
            vector(f"head {head} k_{j}", "k", nums(k), index_from=2 * head - 1, position=j, head=head)
            for symbol, value in (("qk", qk), ("s", s), ("exp_s", es), ("a", a)):
                out.append((f"head {head} {symbol}_5,{j}", symbol, dict(position=5, index=j, head=head),
                            num(value), "text"))
    vector("head 1 a_3 (masked row of ␣climb)", "a", nums(SEED_CLIMB_ROW_HEAD1), position=3, head=1)
    # Step 7
    for head in (1, 2):
        vector(f"o_5^({head})", "o", nums(SEED_O5[head]), position=5, head=head)
    vector("a_5 (joined, attn)", "attn", nums(SEED_A5), position=5)
    # Step 8
    vector("h_5", "h", nums(SEED_H5), position=5)
    vector("u'_5", "u2", nums(SEED_U2_5), position=5)
    vector("u'_5 W_1", "hidden", nums(SEED_HIDDEN5), position=5)
    vector("GELU", "g", nums(SEED_G5), position=5)
    vector("m_5", "m", nums(SEED_M5), position=5)
    vector("y_5", "y", nums(SEED_Y5), position=5)
    # Step 9
    vector("f_5", "f", nums(SEED_F5), position=5)
    out.append(("z_roof (equation)", "z", dict(index="␣roof"), SEED_Z_ROOF, "text"))
    for tok, z, ez, p in rows(SEED_LOGITS):
        piece = tok.strip("`")
        for symbol, value in (("z", z), ("exp_z", ez), ("p", p)):
            out.append((f"{symbol}({piece})", symbol, dict(index=piece), num(value), "text"))
    out.append(("p(␣roof) in -ln 0.395", "p", dict(index="␣roof"), SEED_P_ROOF, "text"))
    out.append(("L", "L", {}, SEED_L, "text"))
    # Step 2b: the gradient of the prompt's rows of E, the updated ␣the row, the pass after
    for token_id, tok, grad in rows(SEED_GRAD):
        vector(f"dL/dE[{token_id}] ({tok.strip('`')})", "grad", nums(grad), param="E",
               position=int(token_id) + 1, token=tok.strip("`"))
    vector("E[1] after the step", "updated", nums(SEED_UPDATED_THE), param="E", position=2, token="␣the")
    out.append(("p(␣roof) after the step", "p", dict(index="␣roof", after_step=True), SEED_P_ROOF_AFTER, "text"))
    out.append(("L after the step", "L", dict(after_step=True), SEED_L_AFTER, "text"))
    return out


EXPECTATIONS = _expectations()


@pytest.mark.parametrize("name, symbol, where, expected, how", EXPECTATIONS, ids=[e[0] for e in EXPECTATIONS])
def test_seed_number(recs, name, symbol, where, expected, how):
    got = find(recs, symbol, **where)["decimal"]
    if how == "number":
        assert same_number(got, expected), f"{name}: derive {got}, seed {expected}"
    else:
        assert got == expected, f"{name}: derive {got}, seed {expected}"


def test_tokens_and_ids(derivation):
    pieces, ids = rows(SEED_IDS)
    seed_tokens = [p.strip("`") for p in pieces]
    seed_ids = [int(i) for i in ids]
    case = derivation.case
    assert case.pieces == PIECES
    assert case.tokens == seed_tokens
    assert case.ids == seed_ids
    (printed,) = step(derivation, "tokens").tables
    assert printed.columns[1:] == pieces
    assert printed.rows == [["id"] + seed_ids]


def test_table_e(derivation):
    """Step 2b's table E, as derive prints it (embedding step, full table)."""
    full = table(derivation, "embedding", "E (12 x 4)")
    seed = rows(SEED_E)
    assert len(full.rows) == len(seed) == 12
    for got, (token_id, tok, *values) in zip(full.rows, seed):
        assert got[0] == int(token_id) and got[1] == tok
        text = derivation.decimals(got[2:], Format())
        for ref, value in zip(got[2:], values):
            assert same_number(text[ref], num(value)), f"E[{token_id}]: {text[ref]} vs {value}"
    # E[1] = one-hot(1) E, printed in step 2c
    assert [Fraction(c) for c in nums(SEED_E1)] == [Fraction(num(v)) for v in seed[1][2:]]


def test_e_ids_p(derivation):
    """E[ids] (step 2c) and E[id], P_t (step 3), from the cells derive prints."""
    e_ids = table(derivation, "embedding", "E[ids]")
    for got, (tok, token_id, e) in zip(e_ids.rows, rows(SEED_E_IDS), strict=True):
        assert got[0] == tok and got[1] == int(token_id)
        assert list(map(Fraction, cell_decimals(derivation, got[2]))) == list(map(Fraction, nums(e)))
    x_table = table(derivation, "positions", "X = E[ids] + P")
    for got, (tok, e, p, x) in zip(x_table.rows, rows(SEED_X), strict=True):
        assert got[0] == tok
        for cell, values in ((got[1], e), (got[2], p), (got[3], x)):
            assert list(map(Fraction, cell_decimals(derivation, cell))) == list(map(Fraction, nums(values)))


def test_w_u_roof_column(derivation):
    """The factors of z_roof = f_5 . W_U^(6) printed in step 9."""
    case = derivation.case
    roof = case.pieces.index("␣roof")
    assert [row[roof] for row in case.W_U] == list(map(Fraction, nums(SEED_W_U_ROOF)))


def test_eta(derivation):
    assert derivation.case.conventions.learning_rate == Fraction(SEED_ETA)


def test_shapes_and_conventions(derivation):
    """"h = 2 heads, the mask on and T = 1"; E is V x d = 12 x 4; s = q.k / sqrt(2)."""
    case = derivation.case
    assert (len(case.E), len(case.E[0])) == (12, 4)
    assert case.heads == 2 and case.d_k == 2
    assert case.conventions.mask == "causal" and case.conventions.temperature == 1
    assert case.target == PIECES.index("␣roof")


def test_update_by_hand(recs):
    """The seed's by-hand lines (-0.5 - 0.1 * (-0.011) = -0.499, ...): their inputs are the
    printed E row, eta and gradient, and derive's updated row is their right-hand side.
    (With the rounded gradient the sum itself is -0.4989, which rounds to -0.499.)"""
    import re

    lines = [re.findall(r"-?\d+\.\d+", part) for part in SEED_UPDATE_LINES.split(r"\\")]
    seed_grad = nums(rows(SEED_GRAD)[-1][2])
    e_row = [num(v) for v in rows(SEED_E)[1][2:]]
    assert len(lines) == 4
    for c, (e, eta, g, new) in enumerate(lines, 1):
        assert Fraction(e) == Fraction(e_row[c - 1]) and eta == SEED_ETA and g == seed_grad[c - 1]
        assert new == nums(SEED_UPDATED_THE)[c - 1]
        by_hand = Decimal(e) - Decimal(eta) * Decimal(g)
        assert str(by_hand.quantize(Decimal("0.001"), rounding=ROUND_HALF_UP)) == new
        assert find(recs, "updated", param="E", position=2, index=c)["decimal"] == new


def test_shares_two_places(derivation, recs):
    """'␣climb + ed = 0.94' (head 1) and '␣cat with 0.88' (head 2), at 2 places."""
    two = records(derivation, Format(places=2))
    assert find(two, "a", position=5, head=2, index=2)["decimal"] == SEED_SUBJECT_SHARE
    verb = sum(Decimal(find(recs, "a", position=5, head=1, index=j)["value"]) for j in (3, 4))
    assert str(verb.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)) == SEED_VERB_SHARE


def test_every_prompt_row_of_e_has_a_gradient_record(recs):
    grads = [r for r in recs if r["symbol"] == "grad" and r["param"] == "E"]
    assert len(grads) == 48
    assert {(r["position"], r["token"]) for r in grads} == {(i + 1, p) for i, p in enumerate(PIECES)}


# ---------------------------------------------------------------------------------------
# Exact forms

def test_sigma5_exact(recs):
    rec = find(recs, "sigma", position=5, norm="ln1")
    got = sympy.sympify(rec["exact"])
    expected = sympy.sqrt(sympy.Rational(3, 4) + sympy.Rational(1, 100000))
    assert sympy.simplify(got - expected) == 0
    assert rec["exact"] == "sqrt(750010)/1000"


def test_z_the_exactly_zero(recs):
    rec = find(recs, "z", index="the")
    assert rec["exact"] == "0"
    assert rec["decimal"] == "0.000"


@pytest.mark.parametrize("token_id", [3, 6, 7, 8, 9, 10, 11])
def test_rows_not_in_prompt_have_zero_gradient(recs, token_id):
    for c in range(1, 5):
        rec = find(recs, "grad", param="E", position=token_id + 1, index=c)
        assert rec["token"] == PIECES[token_id]
        assert rec["exact"] == "0", f"dL/dE[{token_id}][{c}] = {rec['exact']}"
        upd = find(recs, "updated", param="E", position=token_id + 1, index=c)
        assert upd["exact"] != "" and Fraction(upd["decimal"]) == Fraction(num(rows(SEED_E)[token_id][c + 1]))


def test_json_export_matches_api(derivation, recs):
    """`derive run cat-climbed --format json` gives the records the Python API gives."""
    import json

    out = subprocess.run(derive_command() + ["run", "cat-climbed", "--format", "json"],
                         capture_output=True, text=True, env=cli_env(), timeout=300)
    assert out.returncode == 0, out.stderr
    exported = json.loads(out.stdout)
    assert [(r["label"], r["decimal"], r["exact"]) for r in exported] == \
           [(r["label"], r["decimal"], r["exact"]) for r in recs]


# ---------------------------------------------------------------------------------------
# CLI smoke tests

def derive_command() -> list[str]:
    """The installed ``derive`` script next to this interpreter, else ``python -m derive``."""
    script = Path(sys.executable).with_name("derive")
    if script.exists():
        return [str(script)]
    found = shutil.which("derive")
    return [found] if found else [sys.executable, "-m", "derive"]


def cli_env() -> dict:
    env = dict(os.environ)
    env.update(COLUMNS="100", NO_COLOR="1", TERM="dumb")
    return env


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(derive_command() + list(args), capture_output=True, text=True, env=cli_env(),
                          timeout=300)


@pytest.fixture(scope="module")
def full_text():
    out = run_cli("run", "cat-climbed")
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_cli_run(full_text):
    for text in ("0.622", "2.491", "12.069", "0.395", "0.928", "0.396", "0.927", MINUS,
                 "0.930", "−0.499", "1.003", "−0.739", "1.411"):
        assert text in full_text, text
    for n in range(1, 10):
        assert f"Step {n}." in full_text


def test_cli_one_step():
    out = run_cli("run", "cat-climbed", "--step", "attention")
    assert out.returncode == 0, out.stderr
    assert "The attention of each head" in out.stdout
    assert "0.622" in out.stdout and "0.882" in out.stdout
    assert out.stdout.count("Step ") == 1
    for other in ("From text to ids", "Query, Key, Value", "LayerNorm", "12.069", "The gradient"):
        assert other not in out.stdout, other


def test_cli_unknown_step():
    out = run_cli("run", "cat-climbed", "--step", "nope")
    assert out.returncode != 0


def test_cli_exact():
    out = run_cli("run", "cat-climbed", "--exact")
    assert out.returncode == 0, out.stderr
    assert "sqrt(750010)/1000" in out.stdout


def test_cli_cases():
    out = run_cli("cases")
    assert out.returncode == 0, out.stderr
    assert "cat-climbed" in out.stdout


@pytest.mark.parametrize("command, options", [
    ([], ["--help", "run", "cases"]),
    (["run"], ["--step", "--exact", "--places", "--sig", "--rounding", "--signed-zero", "--format",
               "--output", "-o", "--help"]),
    (["cases"], ["--help"]),
])
def test_cli_help(command, options):
    out = run_cli(*command, "--help")
    assert out.returncode == 0, out.stderr
    for option in options:
        assert option in out.stdout, option


@pytest.mark.parametrize("argv, commands", [
    (["run", "cat-climbed"], ["run"]),
    (["--debug", "check", "cat-climbed", "-"], ["check"]),
    (["import", "x"], ["import"]),  # (a command whose name is not its function's)
    ([], None), (["--help"], None), (["rn", "cat-climbed"], None),  # every command listed or suggested
])
def test_cli_builds_the_command_asked_for(argv, commands):
    """``derive ARGV`` hands typer the command named alone (typer builds every command it
    holds before running one); with none named, or a name that is no command, all of them."""
    import typer.main

    from derive.cli import app, for_command

    built = typer.main.get_command(for_command(argv))
    everything = typer.main.get_command(app)
    assert sorted(built.commands) == (commands or sorted(everything.commands))
    assert len(everything.commands) == 11 and for_command(argv).registered_callback is app.registered_callback


def test_cli_one_command_runs_as_with_all():
    """The same output through derive's entry point (the command asked for built alone) as
    through the whole app (every command built), and --debug before the command still read."""
    def python(code: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", "import sys; from derive.cli import app, main; " + code],
                              capture_output=True, text=True, env=cli_env(), timeout=300)

    every = python("sys.argv = ['derive', 'run', 'cat-climbed', '--step', 'loss']; app()")
    one = python("sys.argv = ['derive', '--debug', 'run', 'cat-climbed', '--step', 'loss']; main()")
    assert one.returncode == every.returncode == 0 and one.stdout == every.stdout and "L = " in one.stdout
