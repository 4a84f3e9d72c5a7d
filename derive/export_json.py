"""JSON export: one record per scalar quantity of the derivation.

The given weights come first, one ``given`` record per entry (the inputs the page prints
in its weights, embedding and positions steps), then the quantities in the order they are
computed.

Fields: ``symbol`` (given, x, pe, x2 (x' = x + PE for a given X), mu, sigma, u, q, k, v,
qk, s, exp_s, a, o, attn, h, u2, hidden, g, m, y, f, z, exp_z (exp_z_over_T, e^(z/T), under a
temperature T other than 1), p, L, grad, updated, and sum_exp_s / sum_exp_z / sum_exp_z_over_T),
``label`` (the chapter's name), ``block``, ``head``, ``position`` (1-based row), ``index``
(1-based column, or the token piece for z, exp_z, exp_z_over_T, p), ``norm`` (ln1, ln2, final for mu and sigma),
``param`` and ``token`` (for given, grad and updated: E, P, W_Q, ... and the E row's
piece), ``after_step`` (true for the forward pass after the SGD step), ``exact`` (text in
SymPy's string syntax, :meth:`~derive.exact.ExactForms.exact_text`: the fraction of a
rational value, a small closed form built by SymPy (``sqrt(750010)/1000``), else the
quantity's definition printed from the graph in the reader's order (its inputs' labels,
``x_1[1]*(W_Q)_{1,1} + x_1[2]*(W_Q)_{2,1}``, :mod:`derive.plain`); ``dL/dW`` for a
gradient, ``W - eta*dL/dW`` for a weight after the step, a definition followed by
``(with the updated weights)`` after the step),
``decimal`` (correctly rounded under the run's format, as the tables print every number
but the given weights that fit the places, which they print as they are: ``-0.5`` for a
decimal ``-0.500``) and ``value`` (30 significant digits, correctly rounded from a
certified enclosure, half-even).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from .derivation import VALUE_FORMAT, Derivation
from .rounding import Format


def iter_records(derivation: Derivation, fmt: Format, only: set | None = None,
                 exact_forms: bool = True) -> Iterator[dict]:
    """The records of every given weight and every named quantity, in the order they are
    computed, one at a time (a large case's list is never held whole); with ``only`` (a
    set of refs, e.g. those one step shows), of those alone. Without ``exact_forms`` the
    ``exact`` field is the fraction of a rational value and None for any other (its
    closed form, built with SymPy, and definition are about a quarter of a large case's
    export time).

    Every value is rounded before this returns, so a rounding error
    (:class:`~derive.errors.EvaluationError`) is raised here, before the first record."""
    given = set(derivation.given())
    refs = [r for r in derivation.given() + derivation.quantities() if only is None or r in only]
    decimals, values = derivation.decimals_each(refs, [fmt, VALUE_FORMAT])
    exact = derivation.exact_text if exact_forms else derivation.fraction_text

    def one(ref) -> dict:
        meta = derivation.meta(ref)
        symbol = "given" if ref in given else ref.phase if ref.phase in ("grad", "updated") else meta.symbol
        return {
            "symbol": symbol, "label": meta.label, "block": meta.block, "head": meta.head,
            "position": meta.position, "index": meta.index, "norm": meta.norm,
            "param": meta.param if symbol in ("given", "grad", "updated") else None, "token": meta.token,
            "after_step": ref.phase == "after",
            "exact": exact(ref), "decimal": decimals[ref], "value": values[ref],
        }

    return (one(ref) for ref in refs)


def records(derivation: Derivation, fmt: Format, only: set | None = None, exact_forms: bool = True) -> list[dict]:
    """:func:`iter_records` as a list."""
    return list(iter_records(derivation, fmt, only, exact_forms))


def json_chunks(rows) -> Iterator[str]:
    """The text of ``json.dumps(list(rows), ensure_ascii=False, indent=1) + "\\n"``, one
    record at a time, for writing as it is made. A record of scalars (every record of
    :func:`iter_records`) is written by the json module's C encoder, whose separators put
    each field on its own line as ``indent=1`` does (indent itself takes the module's
    pure-Python encoder, several times slower: about 1 s of crane's); any other row by
    ``indent``."""
    first = True
    for row in rows:
        if not _SCALARS.issuperset(map(type, row.values())):
            body = json.dumps(row, ensure_ascii=False, indent=1).replace("\n", "\n ")
        else:
            body = _FLAT.encode(row)
            body = "{\n  " + body[1:-1] + "\n }" if row else body
        yield ("[\n " if first else ",\n ") + body
        first = False
    yield "[]\n" if first else "\n]\n"


_SCALARS = frozenset((str, int, float, bool, type(None)))  # what a record's fields hold
_FLAT = json.JSONEncoder(ensure_ascii=False, separators=(",\n  ", ": "))  # the fields of a record, one a line
