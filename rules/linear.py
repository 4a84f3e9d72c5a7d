"""Weights as graph leaves, and the affine map ``y = x W + b`` (row vectors).

Used by every rule that multiplies by a weight matrix: Q/K/V, W_O, the MLP, W_U.
"""

from __future__ import annotations

from fractions import Fraction

from derive.array import Array
from derive.graph import Dot, Graph, Meta

Ids = list[list[int]]


def weight(graph: Graph, name: str, matrix: list[list[Fraction]], block: int | None = None) -> Ids:
    """Add a weight matrix as trainable leaves; returns their ids, same shape
    (:meth:`derive.graph.Graph.weight`).

    Leaf metadata: ``param`` = name, ``position`` = 1-based row, ``index`` = 1-based column.
    """
    return graph.weight(name, matrix, block)


def bias(graph: Graph, name: str, vector: list[Fraction] | None, block: int | None = None) -> list[int] | None:
    """Add an optional bias (or LayerNorm gain) vector as trainable leaves (1 x n)."""
    if vector is None:
        return None
    return weight(graph, name, [vector], block)[0]


def matrix_leaves(graph: Graph, name: str, matrix: list[list[Fraction]], block: int | None = None) -> Array:
    """A weight matrix as trainable leaves (see :func:`weight`), as an :class:`~derive.array.Array`
    that a product reads as one matrix."""
    ids = weight(graph, name, matrix, block)
    return Array(graph, ids, weights=graph.weights[-1])


def entries(symbol: str, primes: int = 0, written_head: int | None = None, **context):
    """The metadata maker of a named T x n array: entry (t, c) (0-based) is the quantity
    ``Name(symbol, primes, position t + 1, index c + 1)`` (:mod:`derive.name`), with the
    head written in the name when ``written_head`` is given (``o_5^(1)[2]``), and the
    ``context`` the name does not write (block; the head of a score)."""
    return Meta.entries(symbol, primes, written_head, **context)


def vector_leaves(graph: Graph, name: str, vector: list[Fraction] | None, block: int | None = None):
    """An optional bias or gain vector as trainable leaves, a 1 x n :class:`~derive.array.Array`
    (None when the case does not give it)."""
    ids = bias(graph, name, vector, block)
    return None if ids is None else Array(graph, [ids], weights=graph.weights[-1])


def constant(graph: Graph, value, label: str) -> int:
    """A constant leaf (not trained), e.g. 1 for a bias term or sqrt(d_k)'s radicand."""
    return graph.leaf(Fraction(value), Meta(None, label))


def affine(graph: Graph, rows: Ids, W: Ids, b: list[int] | None, meta) -> Ids:
    """``out[t][c] = sum_k rows[t][k] W[k][c] + b[c]`` for every row t.

    ``meta(t, c)`` gives the metadata of output (t, c) (0-based). Shapes: rows T x n,
    W n x m, b m (or None); result T x m. A bias is folded into the same dot product as
    one more term ``b_c * 1``.
    """
    one = constant(graph, 1, "1") if b is not None else None
    out = []
    for t, row in enumerate(rows):
        out_row = []
        for c in range(len(W[0])):
            left = list(row) + ([b[c]] if b is not None else [])
            right = [W[k][c] for k in range(len(row))] + ([one] if b is not None else [])
            out_row.append(graph.add(Dot(), left + right, meta(t, c)))
        out.append(out_row)
    return out
