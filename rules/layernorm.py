"""LayerNorm of each row on its own (seed 003, eq. 17.3; Ba et al. 2016):

    mu = (1/d) sum_j x_j,   sigma = sqrt((1/d) sum_j (x_j - mu)^2 + eps),
    u_j = gamma_j (x_j - mu) / sigma + beta_j

by default with the biased variance (divide by d) and eps inside the square root; the
conventions ``layernorm_variance = "n-1"`` and ``layernorm_eps_placement = "sigma"``
(sigma = sqrt(var) + eps) give the variants readers use by mistake. Without a gain gamma
and bias beta (the seed 000 toy), u_j = (x_j - mu) / sigma.
"""

from __future__ import annotations

from fractions import Fraction

from derive.case import Conventions
from derive.graph import Div, Dot, Graph, Lin, Meta, Sqrt
from derive.steps import Equation, Ref, Step, Table, vec

from .linear import Ids, bias, constant

NORM_TITLES = {"ln1": "before attention", "ln2": "before the MLP", "final": "before W_U"}


def layer_norm(graph: Graph, rows: Ids, conv: Conventions, norm: str, block: int | None,
               symbol: str, gain: list[Fraction] | None = None,
               shift: list[Fraction] | None = None, tokens: list[str] | None = None) -> tuple[Ids, Step]:
    """Normalise each row of ``rows`` (T x d) under the case's conventions ``conv``;
    return the output (T x d) and the step.

    ``norm`` (ln1, ln2, final) and ``block`` tag mu and sigma; ``symbol`` names the
    output (u, u2, f). Gains and biases, when given, are trainable leaves named
    ``ln1_gain``... (``lnf_gain`` for the final one).
    """
    d = len(rows[0])
    prefix = "lnf" if norm == "final" else norm
    g = bias(graph, f"{prefix}_gain", gain, block)
    b = bias(graph, f"{prefix}_bias", shift, block)
    name = {"u": "u", "u2": "u'", "f": "f"}[symbol]
    stat = {"ln1": "{}_{}", "ln2": "{}'_{}", "final": "{}^f_{}"}[norm]
    eps = conv.layernorm_eps
    inside = conv.layernorm_eps_placement == "inside"
    divisor = d - 1 if conv.layernorm_variance == "n-1" else d
    mus, sigmas, out = [], [], []
    for t, row in enumerate(rows):
        tag = dict(block=block, position=t + 1, norm=norm)
        mu = graph.add(Lin([Fraction(1, d)] * d), row, Meta("mu", stat.format("mu", t + 1), **tag))
        centred = [graph.scratch(Lin([1, -1]), (x, mu), f"x_{t + 1}[{j + 1}] - mu") for j, x in enumerate(row)]
        var = graph.scratch(Lin([Fraction(1, divisor)], eps if inside else 0),
                            (graph.scratch(Dot(), centred + centred, "sum sq"),), f"var_{t + 1}")
        sigma_meta = Meta("sigma", stat.format("sigma", t + 1), **tag)
        if inside:
            sigma = graph.add(Sqrt(), (var,), sigma_meta)
        else:
            sigma = graph.add(Lin([1], eps), (graph.scratch(Sqrt(), (var,), f"sqrt(var_{t + 1})"),), sigma_meta)
        u_row = []
        for j, c in enumerate(centred):
            meta = Meta(symbol, f"{name}_{t + 1}[{j + 1}]", block=block, position=t + 1, index=j + 1)
            if g is None and b is None:
                u_row.append(graph.add(Div(), (c, sigma), meta))
                continue
            u = graph.scratch(Div(), (c, sigma), f"normalised {t + 1},{j + 1}")
            one = constant(graph, 1, "1") if g is None or b is not None else None
            left = [u] + ([b[j]] if b is not None else [])
            right = ([g[j]] if g is not None else [one]) + ([one] if b is not None else [])
            u_row.append(graph.add(Dot(), left + right, meta))
        mus.append(mu)
        sigmas.append(sigma)
        out.append(u_row)
    tokens = tokens or [str(t + 1) for t in range(len(rows))]
    table = Table(["token", "mu", "sigma"] + [f"{name}_{j + 1}" for j in range(d)],
                  [[f"`{tok}`", Ref("before", mus[t]), Ref("before", sigmas[t])]
                   + [Ref("before", u) for u in out[t]] for t, tok in enumerate(tokens)],
                  title=f"LayerNorm {NORM_TITLES[norm]}" + (f", block {block}" if block else ""))
    T = len(rows)
    equations = [Equation(stat.format("mu", T), Ref("before", mus[-1])),
                 Equation(stat.format("sigma", T), Ref("before", sigmas[-1])),
                 Equation(f"{name}_{T} = (x_{T} - mu) / sigma", vec(out[-1]))]
    words = ("Each row is normalised on its own: subtract its mean mu, divide by "
             + ("sigma = sqrt(variance + eps)" if inside else "sigma = sqrt(variance) + eps")
             + f", with the variance over {'d' if divisor == d else 'd - 1'} and eps = {float(eps):g}.")
    key = {"ln1": "layernorm", "ln2": "layernorm2", "final": "final"}[norm]
    return out, Step(key, f"LayerNorm {NORM_TITLES[norm]}", words, [table], equations)
