"""An independent reader of the seed 000 worked example, for the tests of derive's by-hand
notes, ``derive explain`` and ``derive check``.

Nothing here imports derive. The weights are typed from
/work/shared/reference/cat-climbed.md and the printed numbers from the seed page
(/work/shared/seeds/000_c4d6024fc6c69432.txt); the forward pass is written from the
conventions stated there, with every switch of the checker's convention list
(GELU erf/tanh, LayerNorm variance over n or n-1, eps inside the root or added to sigma,
scores over sqrt(d_k) or sqrt(d_model), mask before/after the softmax or none, loss in
nats or bits). Rational steps are exact :class:`fractions.Fraction`; the transcendental
ones (sqrt, exp, tanh, erf, log, sin, cos) are mpmath values at 400 bits turned into a
Fraction, far below any rounding boundary at the places the tests use.

``forward(..., carry=places)`` is the student who rounds every named quantity to
``places`` before using it (derive's ``--carry printed``).
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import mpmath

MINUS = "\u2212"

# ----------------------------------------------------------------------------- weights
# /work/shared/reference/cat-climbed.md, "Weights"
PIECES = ["the", "␣the", "␣cat", "␣dog", "␣climb", "ed", "␣roof", "␣wall", "␣sofa", "␣floor", ".", "<eot>"]
IDS = [0, 2, 4, 5, 1]
TARGET = 6
E = [[F(v) for v in row.split()] for row in """\
-0.5 -0.5 0 1
-0.5 0 -0.5 1
1 -0.5 0 -0.5
1 -0.5 -0.5 0
-0.5 1 0 -0.5
0 0.5 -0.5 0
0 -0.5 1 -0.5
1 0 -1 0
0.5 -0.5 -0.5 0.5
0.5 0 -0.5 0
0 0 1 -1
0.5 -0.5 0.5 -0.5""".splitlines()]
P = [[F(v) for v in row.split()] for row in """\
0 0 0 0
0.5 0 -0.5 0
0 0.5 0 -0.5
-0.5 0 0.5 0
0 -0.5 0 0.5""".splitlines()]
# W_U, one column per token (id order), as the reference lists them
W_U_COLUMNS = [[F(v) for v in col.split()] for col in """\
0 0 0 0
1 1 -1 -0.5
-0.5 -1 0 1
-0.5 -0.5 0 0.5
1 -0.5 -0.5 0
-1 0.5 0.5 -0.5
-0.5 1 0 1
-0.5 0.5 -0.5 0
-0.5 0 -0.5 0
0 0.5 -0.5 0
1 0 0 -1
-0.5 0 1 0""".splitlines()]
EPS = F(1, 100000)


# ----------------------------------------------------------------------------- numbers
PREC = 400  # bits for the transcendental steps (mpmath's global precision is left alone)


def _mp(q: F):
    return mpmath.mpf(q.numerator) / q.denominator


def _back(x) -> F:
    sign, man, exp, _ = x._mpf_
    return (-1 if sign else 1) * F(int(man)) * F(2) ** int(exp)


def _apply(function, q: F) -> F:
    """``function`` (an mpmath function) of a rational, at PREC bits, as a Fraction."""
    with mpmath.workprec(PREC):
        return _back(function(_mp(q)))


def _trim(q: F) -> F:
    """Keep exact short rationals; cut a long one to 2^-600 (still exact far past the
    places printed) so that Fractions stay small along the chain."""
    if q.denominator.bit_length() <= 1200:
        return q
    return F(round(q * 2 ** 600), 2 ** 600)


def sqrt(q: F) -> F:
    """sqrt of a rational, exact when it is a perfect square."""
    n, d = q.numerator, q.denominator
    rn, rd = math.isqrt(n), math.isqrt(d)
    if rn * rn == n and rd * rd == d:
        return F(rn, rd)
    return _apply(mpmath.sqrt, q)


def exp(q: F) -> F:
    """e^q."""
    return F(1) if q == 0 else _apply(mpmath.exp, q)


def ln(q: F) -> F:
    """Natural log."""
    return F(0) if q == 1 else _apply(mpmath.log, q)


def tanh(q: F) -> F:
    """tanh q."""
    return F(0) if q == 0 else _apply(mpmath.tanh, q)


def erf(q: F) -> F:
    """erf q."""
    return F(0) if q == 0 else _apply(mpmath.erf, q)


def sin(q: F) -> F:
    """sin q."""
    return F(0) if q == 0 else _apply(mpmath.sin, q)


def cos(q: F) -> F:
    """cos q."""
    return F(1) if q == 0 else _apply(mpmath.cos, q)


def PI() -> F:
    """pi, to PREC bits."""
    with mpmath.workprec(PREC):
        return _back(+mpmath.pi)


def rounded(q: F, places: int = 3) -> F:
    """q rounded half away from zero to ``places`` (the school rule, as the seed prints)."""
    scale = 10 ** places
    n = abs(q) * scale
    whole = n.numerator // n.denominator
    if n - whole >= F(1, 2):
        whole += 1
    return F(whole if q >= 0 else -whole, scale)


def text(q: F, places: int = 3) -> str:
    """The printed text of q at ``places`` (ASCII minus, no negative zero)."""
    r = rounded(q, places)
    digits = str(abs(r.numerator) * (10 ** places // r.denominator)).rjust(places + 1, "0")
    body = digits[:-places] + "." + digits[-places:] if places else digits
    return ("-" if r < 0 else "") + body


def texts(values, places: int = 3) -> list[str]:
    """The printed texts of several values."""
    return [text(v, places) for v in values]


def vector(values, places: int = 3) -> str:
    """``[a, b, c]`` as a hand computation writes a vector."""
    return "[" + ", ".join(texts(values, places)) + "]"


def is_tie(q: F, places: int = 3) -> bool:
    """True when q lies exactly half way between two numbers of ``places`` decimals."""
    scaled = abs(q) * 10 ** places
    return scaled - scaled.numerator // scaled.denominator == F(1, 2)


def printed(text_: str) -> F:
    """The exact value of a decimal as printed (the seed's Unicode minus allowed)."""
    return F(text_.strip().replace(MINUS, "-"))


# ----------------------------------------------------------------------------- the model
def gelu(x: F, form: str) -> F:
    """GELU in the tanh form (GPT-2's gelu_new) or the erf form; ReLU for ``relu``."""
    if form == "relu":
        return max(x, F(0))
    if form == "gelu_erf":
        return _trim(F(1, 2) * x * (1 + erf(x / sqrt(F(2)))))
    c = sqrt(2 / PI())
    return _trim(F(1, 2) * x * (1 + tanh(c * (x + F(44715, 1000000) * x ** 3))))


def layer_norm(row, variance: str, eps_placement: str, keep):
    """(mu, sigma, normalised row), each passed through ``keep`` (a student's rounding)."""
    n = len(row)
    mu = keep(sum(row, F(0)) / n)
    sq = sum(((x - mu) ** 2 for x in row), F(0))
    var = sq / (n - 1 if variance == "n-1" else n)
    sigma = keep(sqrt(var) + EPS if eps_placement == "sigma" else sqrt(var + EPS))
    return mu, sigma, [keep(_trim((x - mu) / sigma)) for x in row]


def forward(activation="gelu_tanh", variance="n", eps_placement="inside", score_scale="d_k",
            mask="causal", loss_log="e", carry: int | None = None, ids=IDS, positions=None) -> dict:
    """The forward pass of the reference model under the given conventions.

    ``carry``: None for exact values; an integer to round every named quantity to that
    many places before it is used (a student working from printed values).
    ``positions``: the rows added to E[ids] (default: the learned P of the reference).
    Returns a dict of named results (see the keys below); per-head values are indexed by
    head 1, 2 and 0-based rows/columns.
    """
    keep = (lambda q: q) if carry is None else (lambda q: rounded(q, carry))
    d, heads, T = 4, 2, len(ids)
    dk = d // heads
    pos = positions if positions is not None else P
    out: dict = {}
    x = [[keep(E[i][c] + pos[t][c]) for c in range(d)] for t, i in enumerate(ids)]
    out["x"] = x
    ln1 = [layer_norm(row, variance, eps_placement, keep) for row in x]
    out["mu"], out["sigma"], u = [r[0] for r in ln1], [r[1] for r in ln1], [r[2] for r in ln1]
    out["u"] = u
    Q = [[r[3], r[1], r[3], r[0]] for r in u]
    K = [[r[1], r[3], r[0], r[3]] for r in u]
    V = [list(r) for r in u]
    out["q"], out["k"], out["v"] = Q, K, V
    scale = sqrt(F(d if score_scale == "d_model" else dk))
    for name in ("qk", "s", "es", "a", "o"):
        out[name] = {}
    for h in range(1, heads + 1):
        cols = range((h - 1) * dk, h * dk)
        qk, s, es, a, o = [], [], [], [], []
        for i in range(T):
            seen = range(T) if mask in ("none", "causal_after_softmax") else range(i + 1)
            qk_i = {j: keep(sum((Q[i][c] * K[j][c] for c in cols), F(0))) for j in seen}
            s_i = {j: keep(_trim(qk_i[j] / scale)) for j in seen}
            es_i = {j: keep(exp(s_i[j])) for j in seen}
            total = keep(sum(es_i.values(), F(0)))
            a_i = [keep(_trim(es_i[j] / total)) if j in es_i and (mask == "none" or j <= i) else F(0)
                   for j in range(T)]
            o_i = [keep(sum((a_i[j] * V[j][c] for j in range(T)), F(0))) for c in cols]
            qk.append(qk_i), s.append(s_i), es.append(es_i), a.append(a_i), o.append(o_i)
        out["qk"][h], out["s"][h], out["es"][h], out["a"][h], out["o"][h] = qk, s, es, a, o
    attn = [[keep(v) for h in range(1, heads + 1) for v in out["o"][h][t]] for t in range(T)]
    hres = [[keep(x[t][c] + attn[t][c]) for c in range(d)] for t in range(T)]
    ln2 = [layer_norm(row, variance, eps_placement, keep) for row in hres]
    u2 = [r[2] for r in ln2]
    hidden = [[keep(v) for v in row + [-v for v in row]] for row in u2]
    g = [[keep(gelu(v, activation)) for v in row] for row in hidden]
    m = [[keep(row[c] + row[c + d]) for c in range(d)] for row in g]
    y = [[keep(hres[t][c] + m[t][c]) for c in range(d)] for t in range(T)]
    mu_f, sigma_f, f5 = layer_norm(y[-1], variance, eps_placement, keep)
    z = [keep(sum((f5[c] * W_U_COLUMNS[v][c] for c in range(d)), F(0))) for v in range(len(PIECES))]
    ez = [keep(exp(zv)) for zv in z]
    total = keep(sum(ez, F(0)))
    p = [keep(_trim(e / total)) for e in ez]
    L = -ln(p[TARGET])
    if loss_log == "2":
        L = L / ln(F(2))
    out.update(attn=attn, h=hres, mu2=[r[0] for r in ln2], sigma2=[r[1] for r in ln2], u2=u2, hidden=hidden,
               g=g, m=m, y=y, mu_f=mu_f, sigma_f=sigma_f, f=f5, z=dict(zip(PIECES, z)),
               ez=dict(zip(PIECES, ez)), p=dict(zip(PIECES, p)), L=keep(L))
    return out


def sinusoids(T: int, d: int = 4, base: int = 10000, first: int = 0, layout: str = "interleaved") -> list[list[F]]:
    """PE rows of Vaswani et al. 2017 (3.5): sin(pos w_i), cos(pos w_i), w_i = base^(-2i/d),
    interleaved (sin, cos per pair) or concatenated (all sines, then all cosines)."""
    rows = []
    for t in range(T):
        p = first + t
        sines, cosines = [], []
        for i in range(d // 2):
            with mpmath.workprec(PREC):
                w = _back(mpmath.power(base, mpmath.mpf(-2 * i) / d))
            sines.append(sin(p * w))
            cosines.append(cos(p * w))
        if layout == "interleaved":
            rows.append([v for pair in zip(sines, cosines) for v in pair])
        else:
            rows.append(sines + cosines)
    return rows


# ----------------------------------------------------------------------------- the seed's page
# Printed numbers typed from the seed 000 page (Unicode minus kept as on the page).
SEED_F5 = "−0.987, 0.928, −1.011, 1.069"
SEED_Q5 = {1: "1.732, −0.577", 2: "1.732, −0.577"}
# Step 6, per head: (token, k_j, q5.k_j, s_5j, e^s, a_5j)
SEED_HEADS = {1: """\
`the`	[−0.816, 1.633]	−2.357	−1.667	0.189	0.011
`␣cat`	[−0.577, −0.577]	−0.667	−0.471	0.624	0.035
`␣climb`	[1.604, −1.069]	3.395	2.400	11.027	0.622
`ed`	[1.414, 0.000]	2.449	1.732	5.652	0.319
`␣the`	[−0.577, 1.732]	−2.000	−1.414	0.243	0.014""", 2: """\
`the`	[−0.816, 1.633]	−2.357	−1.667	0.189	0.016
`␣cat`	[1.732, −0.577]	3.333	2.357	10.559	0.882
`␣climb`	[−0.535, −1.069]	−0.309	−0.218	0.804	0.067
`ed`	[−1.414, 0.000]	−2.449	−1.732	0.177	0.015
`␣the`	[−0.577, 1.732]	−2.000	−1.414	0.243	0.020"""}
# Step 9, the logits table: token, z, e^z, p
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
# Step 2b: the gradient rows (id, token, dL/dE_i) and the updated row of ␣the
SEED_GRADIENTS = """\
0	`the`	[−0.001, 0.000, 0.001, 0.000]
2	`␣cat`	[0.000, 0.000, 0.026, −0.026]
4	`␣climb`	[−0.001, 0.000, 0.001, 0.000]
5	`ed`	[0.002, 0.002, 0.000, −0.004]
1	`␣the`	[−0.011, 0.011, 0.027, −0.028]"""
SEED_THE_UPDATED = "−0.499, −0.001, −0.503, 1.003"
SEED_STEP8 = {"h_5": "−1.239, 0.911, −1.021, 0.980", "u'_5": "−1.102, 0.964, −0.892, 1.030",
              "GELU": "−0.149, 0.802, −0.166, 0.874, 0.952, −0.162, 0.726, −0.156",
              "m_5": "0.803, 0.640, 0.560, 0.718", "y_5": "−0.436, 1.551, −0.461, 1.698"}
SEED_O5 = {1: "−0.739, 1.411", 2: "−0.521, −0.520"}
SEED_U5 = "−0.577, −0.577, −0.577, 1.732"
SEED_SIGMA5 = "0.866"


def seed_rows(table: str) -> list[list[str]]:
    """The tab-separated rows of a table typed from the seed."""
    return [line.split("\t") for line in table.splitlines()]


def seed_vector(text_: str) -> list[F]:
    """``−0.577, 1.732`` (or with brackets) as exact values."""
    return [printed(v) for v in text_.strip().strip("[]").split(",")]


def token(cell: str) -> str:
    """`` `␣cat` `` -> ``␣cat``."""
    return cell.strip().strip("`")
