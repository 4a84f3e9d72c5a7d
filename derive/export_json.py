"""JSON export: one record per scalar quantity of the derivation.

The given weights come first, one ``given`` record per entry (the inputs the page prints
in its weights, embedding and positions steps), then the quantities in the order they are
computed.

Fields: ``symbol`` (given, x, pe, x2 (x' = x + PE for a given X), mu, sigma, u, q, k, v,
qk, s, exp_s, a, o, attn, h, u2, hidden, g, m, y, f, z, exp_z, p, L, grad, updated, and
sum_exp_s / sum_exp_z), ``label`` (the
chapter's name), ``block``, ``head``, ``position`` (1-based row), ``index`` (1-based
column, or the token piece for z, exp_z, p), ``norm`` (ln1, ln2, final for mu and sigma),
``param`` and ``token`` (for given, grad and updated: E, P, W_Q, ... and the E row's
piece), ``after_step`` (true for the forward pass after the SGD step), ``exact`` (text),
``decimal`` (correctly rounded under the run's format, as the tables print every number
but the given weights that fit the places, which they print as they are: ``-0.5`` for a
decimal ``-0.500``) and ``value`` (30 significant digits, correctly rounded from a
certified enclosure, half-even).
"""

from __future__ import annotations

from .derivation import VALUE_FORMAT, Derivation
from .rounding import Format


def records(derivation: Derivation, fmt: Format, only: set | None = None) -> list[dict]:
    """The records of every given weight and every named quantity, in the order they are
    computed; with ``only`` (a set of refs, e.g. those one step shows), of those alone."""
    given = set(derivation.given())
    refs = [r for r in derivation.given() + derivation.quantities() if only is None or r in only]
    decimals = derivation.decimals(refs, fmt)
    values = derivation.decimals(refs, VALUE_FORMAT)
    out = []
    for ref in refs:
        meta = derivation.meta(ref)
        symbol = "given" if ref in given else ref.phase if ref.phase in ("grad", "updated") else meta.symbol
        out.append({
            "symbol": symbol, "label": meta.label, "block": meta.block, "head": meta.head,
            "position": meta.position, "index": meta.index, "norm": meta.norm,
            "param": meta.param if symbol in ("given", "grad", "updated") else None, "token": meta.token,
            "after_step": ref.phase == "after",
            "exact": derivation.exact_text(ref), "decimal": decimals[ref], "value": values[ref],
        })
    return out
