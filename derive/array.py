"""Arrays of graph nodes that read like the math: ``x.mean()``, ``x - mu``, ``x @ W + b``,
``.sqrt()``, ``.named("sigma")``.

A rule writes its forward pass over :class:`Array` (rows T x columns n of scalar
expressions) the way nanoGPT's ``Block.forward`` is written over tensors, and every
scalar still becomes one node of the derivation graph (:mod:`derive.graph`), so each
printed number keeps its name, its definition and its by-hand note.

Expressions are built lazily and become nodes only when a quantity is named or read by a
non-linear operation; linear combinations fuse into one :class:`~derive.graph.Lin` node and
sums of products into one :class:`~derive.graph.Dot` node (a bias folds in as ``b * 1``),
which is how a reader writes them on paper: ``x W + b`` is one dot product per entry, and
``var + eps`` one sum. Broadcasting follows NumPy for the shapes rules use: a T x 1 column
(``mu``) against a T x n array, and a 1 x n row (a bias, a gain) against T x n. An array
made by ``X @ W`` or ``X @ W + b`` remembers its factors, and when its entries become nodes
the graph also records them as one matrix product (:class:`~derive.kernels.MatMul`), which
the evaluation computes in one python-flint call instead of node by node. An array named
whole whose entries are one operation on nodes already in the graph (``e.exp()``,
``e / total``, ``x + attn``, ``X @ W``) never makes an expression per entry: its entries
become one run (:class:`~derive.graph.Entries`), unless something reads them one by one
first (they are then the expressions they always were).

An entry may be masked (None, :meth:`Array.masked`): it is never computed, elementwise
operations keep it masked, and sums and products skip it, which is how a causal mask
reads (scores above the diagonal do not exist; the softmax runs over the rest).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from fractions import Fraction
from typing import Callable

from flint import fmpq

from .graph import Div, Dot, Exp, Graph, Lin, Meta, Op, Operands, Sqrt, Weights, to_fmpq
from .kernels import MatMul


ZERO, ONE_Q = fmpq(0), fmpq(1)  # (a Linear's coefficients are fmpq: exact, and made in C)
DOT, DIV = Dot(), Div()  # (an operation without parameters is one object, which every node it makes shares)
ADD, SUBTRACT = Lin([ONE_Q, ONE_Q]), Lin([ONE_Q, -ONE_Q])  # (a + b and a - b as Linear writes them: one Lin each)


class Expr:
    """A scalar expression not yet in the graph (or a node that is)."""

    def node(self, graph: Graph, meta: Meta | None = None) -> int:
        """The node id of this expression, adding it (named ``meta``, else scratch) once."""
        raise NotImplementedError


@dataclass(eq=False)
class Node(Expr):
    """A node already in the graph."""

    id: int

    def node(self, graph, meta=None):
        if meta is not None:
            raise ValueError("a quantity is named where it is computed, before it is read")
        return self.id


@dataclass(eq=False)
class _Pending(Expr):
    """An operation applied to expressions; becomes one node the first time it is read."""

    op: Op | None
    args: list[Expr]
    done: int | None = None

    def node(self, graph, meta=None):
        if self.done is None:
            parents = [a.node(graph) for a in self.args]
            self.done = graph.add(self.op, parents, meta or Meta(None, "scratch"))
        elif meta is not None:
            raise ValueError("a quantity is named where it is computed, before it is read")
        return self.done


class Linear(_Pending):
    """``const + sum_k c_k e_k``: fuses into one Lin node."""

    def __init__(self, terms: list[tuple[fmpq, Expr]], const: fmpq = ZERO):
        self.terms, self.const = terms, const
        super().__init__(None, [e for _, e in terms])

    def node(self, graph, meta=None):
        if self.done is None and len(self.terms) == 1 and self.terms[0][0] == 1 and self.const == 0 and meta is None:
            return self.terms[0][1].node(graph)  # x + 0, 1 x: the same quantity
        self.op = Lin([c for c, _ in self.terms], self.const)
        return super().node(graph, meta)


class Products(_Pending):
    """``sum_k a_k b_k``: fuses into one Dot node (parents a_1..a_n, b_1..b_n).

    ``pairs`` is the list of (a_k, b_k), or a function that makes it: an entry of ``X @ W``
    lists its n pairs only if something reads them (a product over operands already in the
    graph takes its parents from the operands' ids instead: T m n pairs at d_model 128)."""

    def __init__(self, pairs: list[tuple[Expr, Expr]] | Callable[[], list[tuple[Expr, Expr]]]):
        self._pairs = pairs
        self.op, self.done = DOT, None

    @property
    def pairs(self) -> list[tuple[Expr, Expr]]:
        """The (a_k, b_k) of the sum, in order."""
        if callable(self._pairs):
            self._pairs = self._pairs()
        return self._pairs

    @property
    def args(self) -> list[Expr]:
        """The parents as :class:`~derive.graph.Dot` takes them: a_1..a_n, b_1..b_n."""
        pairs = self.pairs
        return [a for a, _ in pairs] + [b for _, b in pairs]


class _One(Expr):
    """The constant 1 a bias is multiplied by inside a dot product (one leaf per graph)."""

    def node(self, graph, meta=None):
        return graph.one()


ONE = _One()


def _linear(e: Expr) -> Linear:
    return e if isinstance(e, Linear) and e.done is None else Linear([(ONE_Q, e)])


def _add(a: Expr, b: Expr, sign: int = 1) -> Expr:
    """a + sign b, fusing sums of products (a bias term) and linear combinations."""
    if isinstance(a, Products) and a.done is None and sign == 1:
        extra = b.pairs if isinstance(b, Products) and b.done is None else [(b, ONE)]
        return Products(a.pairs + extra)
    la, lb = _linear(a), _linear(b)
    if sign == 1:
        return Linear(la.terms + lb.terms, la.const + lb.const)
    return Linear(la.terms + [(-c, e) for c, e in lb.terms], la.const - lb.const)


def _scale(a: Expr, c: fmpq) -> Expr:
    la = _linear(a)
    return Linear([(c * k, e) for k, e in la.terms], c * la.const)


class Array:
    """A T x n array of scalar expressions on one graph (rows of row vectors).

    Args:
        graph: the derivation graph the nodes go into.
        rows: T rows of n :class:`Expr` (or node ids, wrapped as :class:`Node`; None masks).
        product: ``(X, W, b)`` when the entries are those of ``X @ W (+ b)`` (b a 1 x m
            row, or None), set by ``@`` and ``+``: the graph then records the product as
            one kernel (:class:`~derive.kernels.MatMul`) when the entries are named.
        weights: the :class:`~derive.graph.Weights` whose entries ``rows`` are, all of
            them in order (a vector as one row), or None: a product by it reads the
            weight as one matrix (an array made from it, a slice or a transpose, does not).
    """

    def __init__(self, graph: Graph, rows, product: tuple | None = None, weights: Weights | None = None,
                 op: Op | None = None):
        self.graph = graph
        self._given, self._rows = rows, None  # (the entries as expressions: made when first read)
        self.product = product  # (X, W, b or None) when this array is X @ W (+ b): a kernel
        self.weights = weights
        self.op = op  # (set: entry (t, c) is op of the node ids rows[t][c], a tuple, not yet in the graph)
        self.lazy_product = False  # (set by @: the entries of X @ W, True where not masked, not made until read)
        self._all_ids: bool | None = None  # (whether rows are all node ids: found once, see _node_ids)
        self._expression: Callable | None = None  # (with op: an entry as an expression, see _elementwise)

    @classmethod
    def of_ids(cls, graph: Graph, ids: list[list[int | None]]) -> Array:
        """The array of the nodes ``ids`` (T rows of node ids, None where masked)."""
        out = cls(graph, ids)
        out._all_ids = True
        return out

    @property
    def rows(self) -> list[list[Expr | None]]:
        """The entries as expressions (a node id given is wrapped as :class:`Node`), made on
        first read: a weight multiplied as one matrix never needs them, nor an elementwise
        operation named whole (:meth:`_add_run`)."""
        if self._rows is None:
            if self.op is not None:
                op, expression = self.op, self._expression
                self._rows = [[None if p is None else expression([Node(i) for i in p]) if expression else
                               _Pending(op, [Node(i) for i in p]) for p in row] for row in self._given]
            elif self.lazy_product:
                X, W, _ = self.product
                self._rows = [[None if e is None else Products(partial(_entry_pairs, x, W, c)) for c, e in enumerate(row)]
                              for x, row in zip(X.rows, self._given)]
            else:
                self._rows = [[e if e is None or isinstance(e, Expr) else Node(e) for e in row] for row in self._given]
        return self._rows

    def _node_ids(self) -> list[list[int | None]] | None:
        """The entries' node ids (None where masked) when every entry is a node given by its
        id (a named array), else None."""
        if self.op is not None or self.lazy_product:
            return None
        if self._all_ids is None:
            self._all_ids = all(type(e) is int or e is None for row in self._given for e in row)
        return self._given if self._all_ids else None

    def _elementwise(self, op: Op, other: Array | None = None, expression: Callable | None = None) -> Array | None:
        """``op`` of each entry (and of ``other``'s, broadcast as :meth:`_zip` does) as an
        array that becomes one run of nodes when named (:meth:`_add_run`), or None unless
        every operand is a node already (the entries are then expressions, one by one).
        ``expression(args)``: the entry as an expression over its operands (:class:`Node`),
        should it be read one by one (default ``_Pending(op, args)``; a sum is a
        :class:`Linear`, which later linear operations fuse into)."""
        ids = self._node_ids()
        if ids is None:
            return None
        if other is None:
            out = Array(self.graph, [[None if i is None else (i,) for i in row] for row in ids], op=op)
        else:
            right = other._node_ids()
            if right is None:
                return None
            (T, n), (T2, n2) = self.shape, other.shape
            if T2 not in (1, T) or n2 not in (1, n):
                raise ValueError(f"shapes {T} x {n} and {T2} x {n2} do not broadcast")
            out = Array(self.graph, [[None if i is None or (j := right[t if T2 > 1 else 0][c if n2 > 1 else 0]) is None
                                      else (i, j) for c, i in enumerate(row)] for t, row in enumerate(ids)], op=op)
        out._expression = expression
        return out

    def _add_run(self, meta: Callable[[int, int], Meta] | None) -> list[list[int | None]]:
        """Add the entries of an elementwise operation over nodes (``op`` set) as one run
        (:meth:`Graph.add_entries`), in the order :meth:`named` adds entries one by one,
        named ``meta(t, c)`` (scratch values when None); from then on the array is those
        nodes. Returns their ids, None where masked."""
        where = [(t, c) for t, row in enumerate(self._given) for c, p in enumerate(row) if p is not None]
        parents = [p for row in self._given for p in row if p is not None]
        out = [[None] * len(row) for row in self._given]
        for (t, c), i in zip(where, self.graph.add_entries(self.op, parents, where, meta)):
            out[t][c] = i
        self._given, self.op, self._all_ids = out, None, True
        return out

    # ---------------------------------------------------------------- shape
    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns)."""
        rows = self._given
        return len(rows), len(rows[0]) if rows else 0

    def _map(self, f: Callable[[Expr], Expr]) -> Array:
        return Array(self.graph, [[None if e is None else f(e) for e in row] for row in self.rows])

    def masked(self, keep: Callable[[int, int], bool]) -> Array:
        """The same array with entry (t, c) masked (None) where ``keep(t, c)`` is false (0-based)."""
        lazy = (self.op is not None or self.lazy_product) and self._rows is None  # (its entries still not made)
        out = Array(self.graph, [[e if keep(t, c) else None for c, e in enumerate(row)]
                                 for t, row in enumerate(self._given if lazy else self.rows)], self.product,
                    op=self.op if lazy else None)
        out.lazy_product = lazy and self.lazy_product
        out._expression = self._expression if lazy else None
        return out

    def filled(self, value, meta: Callable[[int, int], Meta]) -> Array:
        """The masked entries of a named array replaced by leaves of the exact ``value``, named
        ``meta(t, c)``, added as one run (:meth:`Graph.add_entries`) in row-major order."""
        ids = self.ids()
        where = [(t, c) for t, row in enumerate(ids) for c, i in enumerate(row) if i is None]
        leaves = iter(self.graph.add_entries(None, [()] * len(where), where, meta, leaf=to_fmpq(Fraction(value)),
                                             masked=True))
        return Array(self.graph, [[next(leaves) if i is None else i for i in row] for row in ids])

    @property
    def T(self) -> Array:
        """The transpose (n x T)."""
        ids = self._node_ids()
        if ids is not None:
            return Array.of_ids(self.graph, [list(col) for col in zip(*ids)])
        return Array(self.graph, [list(col) for col in zip(*self.rows)])

    def cols(self, columns) -> Array:
        """The columns ``columns`` (0-based indices), in that order: a head's slice of Q."""
        ids = self._node_ids()
        if ids is not None:
            return Array.of_ids(self.graph, [[row[c] for c in columns] for row in ids])
        return Array(self.graph, [[row[c] for c in columns] for row in self.rows])

    def _zip(self, other, f: Callable[[Expr, Expr], Expr]) -> Array:
        """Elementwise f with NumPy broadcasting of a T x 1 column or a 1 x n row."""
        if not isinstance(other, Array):
            c = to_fmpq(Fraction(other))
            return self._map(lambda e: f(e, Linear([], c)))
        (T, n), (T2, n2) = self.shape, other.shape
        if T2 not in (1, T) or n2 not in (1, n):
            raise ValueError(f"shapes {T} x {n} and {T2} x {n2} do not broadcast")
        return Array(self.graph, [[_masked_or(f, e, other.rows[t if T2 > 1 else 0][c if n2 > 1 else 0])
                                   for c, e in enumerate(row)] for t, row in enumerate(self.rows)])

    # ---------------------------------------------------------------- arithmetic
    def __add__(self, other) -> Array:
        run = self._elementwise(ADD, other, lambda args: _add(*args)) if isinstance(other, Array) else None
        if run is not None:  # (a residual sum: nodes plus nodes)
            return run
        out = self._zip(other, _add)
        if self.product is not None and self.product[2] is None and isinstance(other, Array) \
                and other.shape == (1, self.shape[1]):
            out.product = (*self.product[:2], other)  # X @ W + b: the bias is one more term
        return out

    def __sub__(self, other) -> Array:
        run = self._elementwise(SUBTRACT, other, lambda args: _add(*args, -1)) if isinstance(other, Array) else None
        return run if run is not None else self._zip(other, lambda a, b: _add(a, b, -1))

    def __mul__(self, other) -> Array:
        """Elementwise product; a rational number scales (one Lin node)."""
        if not isinstance(other, Array):
            c = to_fmpq(Fraction(other))
            return self._map(lambda e: _scale(e, c))
        return self._zip(other, lambda a, b: Products([(a, b)]))

    __rmul__ = __mul__

    def __truediv__(self, other) -> Array:
        """Elementwise quotient; a rational number scales (one Lin node)."""
        if not isinstance(other, Array):
            return self * (1 / Fraction(other))
        run = self._elementwise(DIV, other)
        return run if run is not None else self._zip(other, lambda a, b: _Pending(DIV, [a, b]))

    def __matmul__(self, W: Array) -> Array:
        """``out[t][c] = sum_k x[t][k] W[k][c]``: one Dot node per entry (T x n @ n x m)."""
        n, m = W.shape
        if self.shape[1] != n:
            raise ValueError(f"cannot multiply {self.shape[0]} x {self.shape[1]} by {n} x {m}")
        out = Array(self.graph, [[True] * m for _ in range(self.shape[0])], product=(self, W, None))
        out.lazy_product = True  # (the entries are made only if read one by one: see rows)
        return out

    def sum(self) -> Array:
        """The sum of each row (T x 1); a row of products sums into one dot product."""
        out = []
        for row in self.rows:
            row = [e for e in row if e is not None]
            if all(isinstance(e, Products) and e.done is None for e in row):
                out.append([Products([p for e in row for p in e.pairs])])
            else:
                out.append([Linear([(ONE_Q, e) for e in row])])
        return Array(self.graph, out)

    def mean(self) -> Array:
        """The mean of each row (T x 1): ``(1/n) sum_j x_j``, one Lin node per row."""
        n = self.shape[1]
        share = fmpq(1, n)
        return Array(self.graph, [[Linear([(share, e) for e in row])] for row in self.rows])

    def apply(self, op: Op) -> Array:
        """A scalar operation on every entry (GELU, exp, ...)."""
        run = self._elementwise(op)
        return run if run is not None else self._map(lambda e: _Pending(op, [e]))

    def sqrt(self) -> Array:
        """The square root of every entry."""
        return self.apply(Sqrt())

    def exp(self) -> Array:
        """e to the power of every entry."""
        return self.apply(Exp())

    # ---------------------------------------------------------------- names
    def named(self, meta: Callable[[int, int], Meta]) -> Array:
        """Add every entry to the graph as a named quantity, ``meta(t, c)`` (0-based), row
        by row; masked entries stay masked. A matrix product ``X W (+ b)`` is also recorded
        as one kernel (see :func:`_product_layout`)."""
        return Array.of_ids(self.graph, self._nodes(meta))

    def ids(self) -> list[list[int | None]]:
        """The node ids (entries not yet in the graph are added as scratch values, a matrix
        product as one kernel, as in :meth:`named`; a masked entry is None)."""
        return self._nodes(None)

    def _nodes(self, meta: Callable[[int, int], Meta] | None) -> list[list[int | None]]:
        """The entries' node ids, adding them named ``meta(t, c)`` (scratch when None). The
        entries of ``X @ W (+ b)`` over operands in the graph get their parents straight
        from the operands' ids (the same parents, without one call per term) and are
        recorded as one kernel."""
        ids = self._node_ids() if meta is None else None
        if ids is not None:  # (nodes already: their ids, as the loop below would give them)
            return [list(row) for row in ids]
        graph, layout = self.graph, _product_layout(self)
        if layout is None and self.op is not None and self._rows is None:
            return self._add_run(meta)
        if layout is None:
            return [[None if e is None else e.node(graph, meta and meta(t, c)) for c, e in enumerate(row)]
                    for t, row in enumerate(self.rows)]
        rows, cols, bias = layout[:3]
        masked_cols = [None in col for col in cols]
        one = () if bias is None else (graph.one(),)  # (added before the entries, if it is new: they stay contiguous)
        parents, where, made = [], [], []
        lazy = self.lazy_product and self._rows is None  # (no entry made: nothing to mark as added)
        for t, row in enumerate(self._given if lazy else self.rows):
            x = rows[t]
            kept = [k for k, i in enumerate(x) if i is not None] if None in x else None
            if kept is not None:  # a masked operand's terms are left out (the row's ids, shared by its entries)
                x = [x[k] for k in kept]
            for c, e in enumerate(row):
                if e is None:
                    continue
                # parents x_t, (b_c,) w_c, (1,): as Products lists its pairs, a term whose x or w is masked left out
                w = cols[c]
                x_c = x
                if masked_cols[c]:
                    both = [k for k in (range(len(w)) if kept is None else kept) if w[k] is not None]
                    x_c, w = [rows[t][k] for k in both], [w[k] for k in both]
                elif kept is not None:
                    w = [w[k] for k in kept]
                parents.append(Operands(x_c, () if bias is None else (bias[c],), w, one))
                where.append((t, c))
                made.append(e)
        ids = [[None] * len(row) for row in self._given]
        for (t, c), e, i in zip(where, made, graph.add_entries(DOT, parents, where, meta)):  # (one run: see _add_run)
            ids[t][c] = i
            if not lazy:
                e.done = i
        _add_kernel(graph, layout, ids)
        if lazy:  # (from now on the array is these nodes)
            self._given, self.product, self.lazy_product, self._all_ids = ids, None, False, True
        return ids

    def column(self) -> list[int]:
        """The node ids of a T x 1 array, as a flat list."""
        return [row[0] for row in self.ids()]


def _node_id(e: Expr | None) -> int | None:
    """The node id of an expression already in the graph, else None (also for a masked entry)."""
    if isinstance(e, Node):
        return e.id
    return e.done if isinstance(e, _Pending) else None


def _materialized(array: Array) -> list[list[int | None]] | None:
    """The node ids of an array whose entries are all in the graph (None where masked),
    else None."""
    ids = array._node_ids()
    if ids is not None:  # (a named array: its ids as given, with no expression made per entry)
        return [row if type(row) is list else list(row) for row in ids]
    ids = [[_node_id(e) for e in row] for row in array.rows]
    for row, id_row in zip(array.rows, ids):
        for e, i in zip(row, id_row):
            if i is None and e is not None:
                return None
    return ids


def _product_layout(array: Array) -> tuple | None:
    """``(rows, cols, bias, weight, bias_weight)`` when ``array`` is ``X @ W`` or
    ``X @ W + b`` (its ``product``) whose entries are not yet in the graph, over X, W and
    b already in it: rows: T lists of n node ids of X, cols: m sequences of n node ids of
    W (None where an operand is masked: the product skips that term; a weight's column,
    a range of its ids), bias: m node ids or None; weight, bias_weight: the
    :class:`~derive.graph.Weights` W and b are, whole, or None. Else None (the entries
    are then evaluated one by one, as always)."""
    if array.product is None:
        return None
    X, W, b = array.product
    if not (array.lazy_product and array._rows is None) and \
            not all(e is None or (isinstance(e, Products) and e.done is None) for row in array.rows for e in row):
        return None
    rows, bias = _materialized(X), None if b is None else _materialized(b)
    if rows is None or (b is not None and (bias is None or None in bias[0])):
        return None
    w = W.weights
    if w is not None:  # column c of a weight: its ids start + c, start + c + m, ...
        cols = [range(w.start + c, w.start + w.rows * w.cols, w.cols) for c in range(w.cols)]
    else:
        ids = _materialized(W)
        if ids is None:
            return None
        cols = [list(col) for col in zip(*ids)]
    return rows, cols, None if b is None else bias[0], w, None if b is None else b.weights


def _add_kernel(graph: Graph, layout: tuple, members: list[list[int | None]]) -> None:
    """Record a product laid out as ``layout`` (:func:`_product_layout`) whose entries
    became the nodes ``members``, when those ids are contiguous (nothing else was added
    between them), as one :class:`~derive.kernels.MatMul`."""
    ids = [i for row in members for i in row if i is not None]
    if ids and ids == list(range(ids[0], ids[0] + len(ids))):
        rows, cols, bias, weight, bias_weight = layout
        graph.add_kernel(MatMul(ids[0], rows, cols, bias, members, weight, bias_weight))


def _entry_pairs(row: list[Expr | None], W: Array, c: int) -> list[tuple[Expr, Expr]]:
    """The terms (x_k, W_{k,c}) of entry c of ``row @ W``, leaving out a masked operand's."""
    return [(x, w[c]) for x, w in zip(row, W.rows) if x is not None and w[c] is not None]


def _masked_or(f, a, b):
    """f(a, b), or masked when either is."""
    return None if a is None or b is None else f(a, b)


def leaves(graph: Graph, values: list[list[Fraction]], meta: Callable[[int, int], Meta]) -> Array:
    """Exact leaves (weights or constants), named ``meta(r, c)``."""
    return Array(graph, [[graph.leaf(v, meta(r, c)) for c, v in enumerate(row)] for r, row in enumerate(values)])

