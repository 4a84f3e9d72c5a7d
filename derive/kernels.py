"""Matrix kernels under the graph: a whole matrix product evaluated in one python-flint call.

A dense layer ``Y = X W + b`` is T x m Dot nodes of the graph (one named quantity per
printed number, each with its parents, definition and by-hand note), but evaluating it
node by node is T m n interpreted steps. A :class:`MatMul` records that a contiguous run
of Dot nodes is such a product, and :func:`product` computes it as ``fmpq_mat`` (exact
rationals) or ``arb_mat`` (balls at the working precision ``flint.ctx.prec``) products, so
the forward pass fills in the T x m values at once and reverse mode passes the gradient
back as ``dX = G W^T``, ``dW = X^T G``, ``db = 1^T G`` (DESIGN.md, "Matrix kernels under
the graph").

The values are those of the scalar path (:meth:`derive.graph.Dot.eval`) as numbers: an
entry is an exact fmpq exactly when the scalar path's is (every term a_k b_k is either
skipped, because a factor is an exact 0, or a product of two exact rationals: a zero
weight column keeps an irrational row's output an exact 0), with the same exact value;
every other entry is a certified ball that contains the same real number (its radius may
differ in the last bits from the scalar sum's, and rounding asks for more precision where
a ball does not decide a digit, as it always does).
"""

from __future__ import annotations

from dataclasses import dataclass

from flint import arb_mat, fmpq, fmpq_mat, fmpz_mat

from .graph import Value

ZERO = fmpq(0)


def product(A: list[list[Value]], B: list[list[Value]]) -> list[list[Value]]:
    """``C = A B`` for a T x n matrix A and an n x m matrix B of fmpq and arb values (row
    lists), with the scalar path's exactness: C[t][c] is an exact fmpq when every term
    A[t][k] B[k][c] has an exact 0 factor or two exact factors, else an arb ball at the
    current working precision.

    Raises:
        ValueError: when the inner sizes differ.
    """
    T, n, m = len(A), len(B), len(B[0]) if B else 0
    if any(len(row) != n for row in A):
        raise ValueError(f"cannot multiply {T} x {len(A[0]) if A else 0} by {n} x {m}")
    if T == 0 or m == 0:
        return [[] for _ in range(T)]
    flat_a = [v for row in A for v in row]
    flat_b = [v for row in B for v in row]
    ball_a = [type(v) is not fmpq for v in flat_a]
    ball_b = [type(v) is not fmpq for v in flat_b]
    any_a, any_b = True in ball_a, True in ball_b
    if (any_a and False not in ball_a) or (any_b and False not in ball_b):
        return _product_of_balls(T, n, m, flat_a, flat_b, ball_a, ball_b)
    qa = fmpq_mat(T, n, [0 if b else v for v, b in zip(flat_a, ball_a)] if any_a else flat_a)
    qb = fmpq_mat(n, m, [0 if b else v for v, b in zip(flat_b, ball_b)] if any_b else flat_b)
    exact = (qa * qb).entries()
    if not (any_a or any_b):
        return [exact[t * m:(t + 1) * m] for t in range(T)]
    # how many terms of each entry are balls (a ball times a nonzero, or a nonzero times a ball)
    ball_terms = None
    if any_a:
        ball_terms = fmpz_mat(T, n, ball_a) * fmpz_mat(n, m, [b or v != 0 for v, b in zip(flat_b, ball_b)])
    if any_b:
        more = fmpz_mat(T, n, [b or v != 0 for v, b in zip(flat_a, ball_a)]) * fmpz_mat(n, m, ball_b)
        ball_terms = more if ball_terms is None else ball_terms + more
    inexact = ball_terms.entries()
    if not any(inexact):
        return [exact[t * m:(t + 1) * m] for t in range(T)]
    balls = ((arb_mat(T, n, flat_a) if any_a else arb_mat(qa))
             * (arb_mat(n, m, flat_b) if any_b else arb_mat(qb))).entries()
    out = [b if k else e for e, b, k in zip(exact, balls, inexact)]
    return [out[t * m:(t + 1) * m] for t in range(T)]


def _product_of_balls(T: int, n: int, m: int, flat_a: list[Value], flat_b: list[Value], ball_a: list[bool],
                      ball_b: list[bool]) -> list[list[Value]]:
    """:func:`product` when a factor is all balls (activations times exact weights, the
    usual dense layer): a term with a ball factor is a ball term unless its other factor
    is an exact 0, so C[t][c] is a ball exactly when the other factor's column c (A all
    balls) or row t (B all balls) is not all exact zeros, and else an exact 0 (no term
    is left). The same balls as the general path (the same arb_mat product), without
    its exact product and its count of ball terms."""
    any_a, any_b = True in ball_a, True in ball_b
    a = arb_mat(T, n, flat_a) if any_a else arb_mat(fmpq_mat(T, n, flat_a))
    b = arb_mat(n, m, flat_b) if any_b else arb_mat(fmpq_mat(n, m, flat_b))
    balls = (a * b).entries()
    live_rows, live_cols = [True] * T, [True] * m
    if False not in ball_a:  # A all balls: a column of B of exact zeros leaves an exact 0
        if not any_b:
            cols = fmpq_mat(n, m, flat_b).transpose().entries()
            live_cols = [any(cols[c * n:(c + 1) * n]) for c in range(m)]
        elif False in ball_b:
            live_cols = [any(ball_b[k * m + c] or flat_b[k * m + c] != 0 for k in range(n)) for c in range(m)]
    elif not any_a:  # B all balls, A exact: a row of A of exact zeros leaves an exact 0
        live_rows = [any(flat_a[t * n:(t + 1) * n]) for t in range(T)]
    else:  # B all balls, A mixed
        live_rows = [any(ball_a[k] or flat_a[k] != 0 for k in range(t * n, (t + 1) * n)) for t in range(T)]
    return [[balls[t * m + c] if live_rows[t] and live_cols[c] else ZERO for c in range(m)] for t in range(T)]


def transpose(M: list[list]) -> list[list]:
    """The transpose of a matrix given as row lists."""
    return [list(col) for col in zip(*M)]


@dataclass
class MatMul:
    """A run of Dot nodes that together are ``Y = X W (+ b)``.

    Attributes:
        start: the id of the first Dot node; the members are the ids start, start + 1,
            ... in row-major order of ``members``.
        rows: T rows of n node ids (X; row t of the left factor; None where masked).
        cols: m columns of n node ids (W; column c of the right factor; None where masked).
        bias: m node ids of the bias (each entered as ``b_c * 1``), or None.
        members: T x m node ids of Y, None where an entry is masked (not computed).
    """

    start: int
    rows: list[list[int]]
    cols: list[list[int]]
    bias: list[int] | None
    members: list[list[int | None]]

    @property
    def ids(self) -> list[int]:
        """The member node ids in order (contiguous, from ``start``)."""
        return [i for row in self.members for i in row if i is not None]

    def forward(self, values: list[Value]) -> list[Value]:
        """The members' values, in member order, from the values of ``rows``, ``cols`` and
        ``bias`` (a masked operand counts as an exact 0: its term is skipped)."""
        X, W = self._factors(values)
        if self.bias is not None:  # one more column of X (all 1) and one more row of W (b)
            X = [row + [fmpq(1)] for row in X]
            W = W + [[values[i] for i in self.bias]]
        Y = product(X, W)
        return [Y[t][c] for t, row in enumerate(self.members) for c, i in enumerate(row) if i is not None]

    def _factors(self, values: list[Value]) -> tuple[list[list[Value]], list[list[Value]]]:
        """X (T x n) and W (n x m) as values, an exact 0 for a masked operand."""
        X = [[ZERO if i is None else values[i] for i in row] for row in self.rows]
        W = transpose([[ZERO if i is None else values[i] for i in col] for col in self.cols])
        return X, W

    def backward(self, values: list[Value], grad: list[list[Value]], idle: set[int] = frozenset()) \
            -> list[tuple[int, Value]]:
        """The contributions ``(node id, d)`` of this product to the adjoints of its inputs,
        given the members' adjoints ``grad`` (T x m; exact 0 where none): ``dX = G W^T``,
        ``dW = X^T G``, ``db = 1^T G``. Exact zeros are left out (as the scalar path
        skips a zero partial), and so are the ids in ``idle`` (weights whose derivative is
        not asked for): a factor or bias all of whose ids are idle is not computed."""
        X, W = self._factors(values)
        out = []
        if not _all_idle(self.rows, idle):
            for row_ids, row in zip(self.rows, product(grad, transpose(W))):
                out += [(i, d) for i, d in zip(row_ids, row) if i is not None and not _is_zero(d) and i not in idle]
        if not _all_idle(self.cols, idle):
            for col_ids, col in zip(self.cols, transpose(product(transpose(X), grad))):
                out += [(i, d) for i, d in zip(col_ids, col) if i is not None and not _is_zero(d) and i not in idle]
        if self.bias is not None and not _all_idle([self.bias], idle):
            (sums,) = product([[fmpq(1)] * len(grad)], grad)
            out += [(i, d) for i, d in zip(self.bias, sums) if not _is_zero(d) and i not in idle]
        return out


def _all_idle(ids: list[list[int | None]], idle: set[int]) -> bool:
    """Whether every (unmasked) id of a factor is in ``idle`` (then its adjoint is not computed)."""
    return bool(idle) and all(i is None or i in idle for row in ids for i in row)


def _is_zero(v: Value) -> bool:
    return isinstance(v, fmpq) and v == 0
