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

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain, compress

from flint import arb_mat, ctx, fmpq, fmpq_mat, fmpz_mat

from .graph import Value, is_zero
from .lazy import numpy

ZERO = fmpq(0)


class Factor:
    """One factor of :func:`product`: a rows x cols matrix of fmpq and arb values, with
    the forms a product reads (its values row-major, its exact part as an fmpq_mat, its
    balls as an arb_mat, which entries are balls or nonzero) made on first use and kept:
    a weight's factor is made once (:func:`weight_factor`) and read by every product and
    by reverse mode; a derivative X^T G or a weight after the step that is all balls is
    made only when something reads it (:meth:`made`), and a product by it can use how it
    is made instead (:func:`_times_step`).

    Args:
        rows, cols: the shape. flat: rows x cols values, row-major (fmpq exact, arb
            balls), or None when ``matrix`` gives them.
        kind: ``exact`` (every value an fmpq) or ``balls`` (every value an arb) when
            known, else found from ``flat``. matrix: the values as an fmpq_mat (exact)
            or an arb_mat (balls), when ``flat`` is None (and neither for the transpose
            of an exact factor, :meth:`transpose`: its matrices are made from the
            source's when asked for).
    """

    __slots__ = ("rows", "cols", "_flat", "_balls", "kind", "_exact", "_arb", "_live", "_lines", "_t", "_of", "_ints",
                 "how", "_make")

    def __init__(self, rows: int, cols: int, flat: list[Value] | None = None, kind: str | None = None,
                 matrix: fmpq_mat | arb_mat | None = None):
        self.rows, self.cols, self._flat = rows, cols, flat
        self._exact = matrix if kind == "exact" else None
        self._arb: dict[int, arb_mat] = {ctx.prec: matrix} if kind == "balls" and matrix is not None else {}
        self._balls = self._live = self._lines = self._t = self._of = self._ints = self.how = self._make = None
        if kind is None:
            self._balls = [type(v) is not fmpq for v in flat]
            kind = "exact" if True not in self._balls else "balls" if False not in self._balls else "mixed"
        self.kind = kind

    @classmethod
    def of_integers(cls, rows: int, cols: int, Z, d, sizes, make) -> "Factor":
        """An exact factor given as integers over a power of two (a safetensors file's
        weight, :meth:`derive.weights.FileMatrix.integers`): ``Z`` (a numpy int64 array or
        an fmpz_mat, rows x cols) over ``d``, ``sizes`` the values' absolute values as a
        numpy float64 array (each exactly its value's: the bound |B| of
        :func:`_balls_times_exact`); ``make()`` gives the fmpq_mat, made only if read.
        Which rows and columns hold a nonzero value is read from ``sizes``."""
        out = cls(rows, cols, kind="exact")
        out._make, out._ints = make, (Z, d, sizes)
        nonzero = sizes != 0
        out._lines = (nonzero.any(axis=1).tolist(), nonzero.any(axis=0).tolist())
        return out

    @classmethod
    def made(cls, rows: int, cols: int, how: tuple, make) -> "Factor":
        """A factor all balls whose arb_mat ``make()`` makes when something asks for it
        (at the working precision of now), and ``how`` says how it is made, for a
        product that can use that instead: ``("UV", U, V)`` (the product of two factors
        of rank r: a weight's derivative X^T G, r the tokens) or ``("step", W, D, eta)``
        (W - eta D: a weight after the SGD step)."""
        out = cls(rows, cols, kind="balls")
        prec = ctx.prec

        def at_prec():
            with ctx.workprec(prec):
                return make()

        out.how, out._make = how, at_prec
        return out

    @classmethod
    def of_rows(cls, M: list[list[Value]], cols: int | None = None) -> "Factor":
        """The factor of a matrix given as row lists (``cols``: the width of a matrix of no rows)."""
        return cls(len(M), len(M[0]) if M else (cols or 0), [v for row in M for v in row])

    @property
    def any_ball(self) -> bool:
        """Whether some value is a ball."""
        return self.kind != "exact"

    @property
    def all_ball(self) -> bool:
        """Whether every value is a ball (and there is one)."""
        return self.kind == "balls" and self.rows * self.cols > 0

    @property
    def flat(self) -> list[Value]:
        """The values, row-major (made from the matrix when the factor was given one)."""
        if self._flat is None:
            self._flat = (self.exact() if self.kind == "exact" else self.arb()).entries()
        return self._flat

    @property
    def balls(self) -> list[bool]:
        """Whether each value is a ball, row-major."""
        if self._balls is None:
            self._balls = [self.kind == "balls"] * (self.rows * self.cols)
        return self._balls

    def exact(self) -> fmpq_mat:
        """The exact entries as an fmpq_mat, each ball replaced by 0."""
        if self._exact is None:
            if self.kind == "exact" and self._of is not None:  # a transpose: the source's, transposed
                self._exact = self._of.exact().transpose()
            elif self.kind == "exact" and self._make is not None:  # (a weight's from its file: made when read)
                self._exact = self._make()
            else:
                flat = self.flat if self.kind == "exact" else [0 if b else v for v, b in zip(self.flat, self.balls)]
                self._exact = fmpq_mat(self.rows, self.cols, flat)
        return self._exact

    def arb(self) -> arb_mat:
        """Every entry as a ball at the current working precision (kept per precision:
        a rational that is not dyadic rounds differently at each; a ball is as it is)."""
        prec = ctx.prec
        if prec not in self._arb:
            if self.kind == "balls" and self._arb:
                return next(iter(self._arb.values()))
            if self._make is not None and self.kind == "balls":
                self._arb[prec] = self._make()
                return self._arb[prec]
            if self.kind == "exact":
                self._arb[prec] = self._of.arb().transpose() if self._of is not None else arb_mat(self.exact())
            else:
                self._arb[prec] = arb_mat(self.rows, self.cols, self.flat)
        return self._arb[prec]

    def live(self) -> list[bool]:
        """Whether each entry is a ball or a nonzero rational (a term it enters is not
        skipped), row-major."""
        if self._live is None:
            if self.kind == "balls" or (self.kind == "exact" and ZERO not in self.flat):  # (C compares, no loop)
                self._live = [True] * (self.rows * self.cols)
            elif self.kind == "exact":
                self._live = list(map(bool, self.flat))  # (fmpq's truth in C: no Python step per entry)
            else:  # (an entry that is no ball is an fmpq: its truth, in C)
                self._live = [b or bool(v) for v, b in zip(self.flat, self.balls)]
        return self._live

    def live_rows(self) -> list[bool]:
        """Whether each row holds a ball or a nonzero entry."""
        if self._of is not None:
            return self._of.live_cols()
        if self._lines is not None:
            return self._lines[0]
        live, n = self.live(), self.cols
        return [True in live[t * n:(t + 1) * n] for t in range(self.rows)]

    def live_cols(self) -> list[bool]:
        """Whether each column holds a ball or a nonzero entry."""
        if self._of is not None:
            return self._of.live_rows()
        if self._lines is not None:
            return self._lines[1]
        live, m = self.live(), self.cols
        return [True in live[c::m] for c in range(m)]

    def transpose(self) -> "Factor":
        """The transposed factor (cols x rows), made once (from the matrix when there is one)."""
        if self._t is None:
            if self.kind == "exact":  # (its matrices are the source's, transposed when first asked for)
                self._t = Factor(self.cols, self.rows, kind="exact")
            elif self.kind == "balls" and self._flat is None:
                self._t = Factor(self.cols, self.rows, kind="balls", matrix=self.arb().transpose())
            else:
                m = self.cols
                self._t = Factor(self.cols, self.rows, [v for c in range(m) for v in self.flat[c::m]])
            self._t._of = self
        return self._t

    def plus(self, other: "Factor") -> "Factor":
        """The entrywise sum (an exact 0 on either side leaves the other as it is)."""
        if self.kind == other.kind == "balls":
            return Factor(self.rows, self.cols, kind="balls", matrix=self.arb() + other.arb())
        return Factor(self.rows, self.cols, list(map(plus, self.flat, other.flat)))


def weight_factor(w) -> Factor:
    """The values of a weight (:class:`~derive.graph.Weights`) as given, as one
    :class:`Factor` (every value exact), made once and kept by the weight."""
    if w.factor is None:
        if w.ints is None:
            w.factor = Factor(w.rows, w.cols, w.values, kind="exact")
        else:  # (a safetensors file's: its integers and sizes as they are, its rationals made only if read)
            w.factor = Factor.of_integers(w.rows, w.cols, *w.ints, w.sizes, w.exact)
    return w.factor


def product_factor(A: Factor, B: Factor) -> Factor:
    """:func:`product` as a :class:`Factor`: two factors all balls give one arb_mat (no
    value made one by one: a weight's derivative X^T G in reverse mode); B's rows of
    exact zeros (G's rows for the tokens the loss does not reach) are left out first,
    with A's columns of the same index (their terms are skipped in every entry)."""
    if A.all_ball and B.all_ball:  # (made when read: a product by it can use its two factors instead)
        return Factor.made(A.rows, B.cols, ("UV", A, B), lambda: A.arb() * B.arb())
    if A.all_ball and B.kind == "mixed":  # B's rows of exact zeros leave out their terms of every entry (X^T G)
        live = B.live_rows()
        if not all(live):
            keep = [k for k in range(B.rows) if live[k]]
            if not keep:
                return Factor(A.rows, B.cols, [ZERO] * (A.rows * B.cols), kind="exact")
            n, m = A.cols, B.cols
            return product_factor(Factor(A.rows, len(keep), [A.flat[r * n + k] for r in range(A.rows) for k in keep]),
                                  Factor(len(keep), m, [v for k in keep for v in B.flat[k * m:(k + 1) * m]]))
    return Factor.of_rows(product(A, B), B.cols)


def product(A: list[list[Value]] | Factor, B: list[list[Value]] | Factor) -> list[list[Value]]:
    """``C = A B`` for a T x n matrix A and an n x m matrix B of fmpq and arb values (row
    lists or :class:`Factor`), with the scalar path's exactness: C[t][c] is an exact fmpq
    when every term A[t][k] B[k][c] has an exact 0 factor or two exact factors, else an
    arb ball at the current working precision.

    Raises:
        ValueError: when the inner sizes differ.
    """
    if not isinstance(A, Factor):
        if any(len(row) != len(A[0]) for row in A):
            raise ValueError("the rows of a factor differ in length")
        A = Factor.of_rows(A, B.rows if isinstance(B, Factor) else len(B))
    if not isinstance(B, Factor):
        B = Factor.of_rows(B)
    T, n, m = A.rows, B.rows, B.cols
    if A.cols != n:
        raise ValueError(f"cannot multiply {T} x {A.cols} by {n} x {m}")
    if T == 0 or m == 0:
        return [[] for _ in range(T)]
    if A.kind == "mixed":  # rows of exact zeros (a token the loss does not reach): their outputs are exact zeros
        live = A.live_rows()
        if not all(live):
            keep = [t for t in range(T) if live[t]]
            out = [[ZERO] * m for _ in range(T)]
            if keep:
                rows = Factor(len(keep), n, [v for t in keep for v in A.flat[t * n:(t + 1) * n]])
                for t, row in zip(keep, product(rows, B)):
                    out[t] = row
            return out
    if A.all_ball or B.all_ball:
        return _product_of_balls(A, B)
    exact = (A.exact() * B.exact()).entries()
    if not (A.any_ball or B.any_ball):
        return [exact[t * m:(t + 1) * m] for t in range(T)]
    # how many terms of each entry are balls (a ball times a nonzero, or a nonzero times a ball)
    ball_terms = None
    if A.any_ball:
        ball_terms = fmpz_mat(T, n, A.balls) * fmpz_mat(n, m, B.live())
    if B.any_ball:
        more = fmpz_mat(T, n, A.live()) * fmpz_mat(n, m, B.balls)
        ball_terms = more if ball_terms is None else ball_terms + more
    inexact = ball_terms.entries()
    if not any(inexact):
        return [exact[t * m:(t + 1) * m] for t in range(T)]
    balls = (A.arb() * B.arb()).entries()
    out = [b if k else e for e, b, k in zip(exact, balls, inexact)]
    return [out[t * m:(t + 1) * m] for t in range(T)]


def _product_of_balls(A: Factor, B: Factor) -> list[list[Value]]:
    """:func:`product` when a factor is all balls (activations times exact weights, the
    usual dense layer): a term with a ball factor is a ball term unless its other factor
    is an exact 0, so C[t][c] is a ball exactly when the other factor's column c (A all
    balls) or row t (B all balls) is not all exact zeros, and else an exact 0 (no term
    is left). The same balls as the general path (the same arb_mat product), without
    its exact product and its count of ball terms."""
    T, m = A.rows, B.cols
    balls = None
    if A.all_ball and B.kind == "exact" and B.rows * B.cols >= BALLS_TIMES_EXACT_MIN:
        balls = _balls_times_exact(A, B)
    elif A.all_ball and B.how is not None and B.how[0] == "step" and B.how[2].how is not None \
            and B.how[2].how[0] == "UV" and B.rows * B.cols >= BALLS_TIMES_EXACT_MIN:
        balls = _times_step(A, B)
    if balls is None and B._of is not None and B.kind == "exact" and not B._arb:
        # G W^T in reverse mode, W a weight: (W G^T)^T, with no arb_mat of W^T beside W's (340 MB at d_model 768)
        balls = (B._of.arb() * A.arb().transpose()).transpose().entries()
    elif balls is None:
        balls = (A.arb() * B.arb()).entries()
    live_rows, live_cols = [True] * T, [True] * m
    if A.all_ball:  # a column of B of exact zeros leaves an exact 0
        if not B.all_ball:
            live_cols = B.live_cols()
    else:  # B all balls: a row of A of exact zeros leaves an exact 0
        live_rows = A.live_rows()
    if all(live_rows) and all(live_cols):
        return [balls[t * m:(t + 1) * m] for t in range(T)]
    return [[balls[t * m + c] if live_rows[t] and live_cols[c] else ZERO for c in range(m)] for t in range(T)]


BALLS_TIMES_EXACT_MIN = 1 << 16  # entries of an exact factor from which _balls_times_exact is used (it loads numpy)
MAX_SPREAD = 4096  # bits between a factor's smallest and largest midpoint exponents in _balls_times_exact


def _balls_times_exact(A: Factor, B: Factor) -> list[Value] | None:
    """The balls of ``A B`` (row-major) for A all balls (T x n) and B exact (n x m): an
    activation times a weight, the bulk of a wide model's work, at about a fifth of
    ``arb_mat`` multiplication's cost, or None when A's midpoints are too far apart in
    size or not finite (then arb_mat multiplies, as before).

    Each ball of A is m_tk +- r_tk; the midpoints are exact binary numbers, written
    M_tk 2^e0 with integers M (e0 the least exponent), and B = Z / d with integers Z and
    a common denominator d (``fmpq_mat.numer_denom``). Then

        A B = (M Z) 2^e0 / d  +-  R,   R_tc = sum_k r_tk |b_kc|,

    the first term an exact integer matrix product (FLINT's fmpz_mat), made a ball at the
    working precision (arb_mat of an fmpq_mat: each entry rounded, its rounding in its
    radius); R is bounded above in float64 (numpy): each r_tk read as a double and
    widened by 2^-50 (a radius too small for a double counts as 2^-1074), |b_kc| as
    |Z_kc| / d in doubles widened by 2^-50, their product summed and widened by
    (n + 2) 2^-52 (the error of any order of summing n + 1 nonnegative products,
    Higham, "Accuracy and Stability of Numerical Algorithms", 2002, eq. 3.5), plus
    n 2^-1074 for products that underflow. Every point of A's balls times B lies in the
    result, as with arb_mat (the balls can differ in their last bits).
    """
    np = numpy()

    T, n, m = A.rows, A.cols, B.cols
    flat = A.flat
    if not all(v.is_finite() for v in flat):
        return None
    pairs = [v.mid().man_exp() for v in flat]
    exps = [int(e) for man, e in pairs if man != 0]
    if not exps:
        e0 = 0
    else:
        e0 = min(exps)
        if max(exps) - e0 > MAX_SPREAD:
            return None
    M = [int(man) << (int(e) - e0) if man != 0 else 0 for man, e in pairs]
    known = _integers(B)
    if known is None:
        return None
    Z, d, absB = known
    if type(Z) is fmpz_mat:
        MZ = fmpz_mat(T, n, M) * Z
    else:  # (a file's weight as int64: no fmpz per entry of it)
        MZ = fmpz_mat(T, m, integer_product(M, T, n, Z))
    mid = fmpq_mat(MZ) / d
    mid = mid * fmpq(2) ** e0 if e0 >= 0 else mid / fmpq(2) ** -e0
    tiny, wide = 2.0 ** -1074, 1 + 2.0 ** -50
    radii = np.array([float(v.rad()) for v in flat], dtype=np.float64).reshape(T, n)
    exact = np.array([v.is_exact() for v in flat], dtype=bool).reshape(T, n)
    radii = np.where(exact, 0.0, radii * wide + tiny)  # (tiny: a radius a double reads short, below 2^-1022)
    if not np.isfinite(radii).all():  # (an infinite radius times a zero weight would be NaN: arb_mat's way)
        return None
    with np.errstate(over="ignore"):
        R = (radii @ absB) * (1 + (n + 2) * 2.0 ** -52) + n * tiny
    from flint import arb

    spread = arb_mat(T, m, [arb(0, r) for r in R.ravel().tolist()])
    return (arb_mat(mid) + spread).entries()


LIMB = 16  # bits of a limb in integer_product
MAX_INNER = 1 << 17  # the longest inner dimension integer_product takes


def integer_product(M: list[int], T: int, n: int, Z) -> list[int]:
    """The exact integer product ``M Z`` (T x m, row-major Python ints) of a T x n matrix
    of integers M of any size (row-major) and an n x m numpy int64 matrix Z with
    |Z| < 2^62, made of float64 matrix products (numpy, BLAS) that are exact.

    M and Z are split into signed limbs of 16 bits, M = sum_i M_i 2^(16 i) and
    Z = sum_j Z_j 2^(16 j) (|M_i|, |Z_j| < 2^16), and all the products M_i Z_j are one
    float64 matrix product of the stacked limbs. Each is exact: every product of two
    entries is an integer below 2^32 in size, so every partial sum of a row times a
    column, in any order and with or without fused multiply-adds, is an integer below
    n 2^32 <= 2^49 for n <= 2^17 (:data:`MAX_INNER`), which a double holds exactly (16
    times inside its 53 bits, for a BLAS that forms sums of sums). The limb products of
    each weight 2^(16 k) are added in int64 (at most 4 of them: below 2^51), carried
    into 16-bit limbs, and each entry is read from its limbs' bytes.

    Raises:
        ValueError: for an inner dimension past :data:`MAX_INNER` or a Z too large.
    """
    np = numpy()

    m = Z.shape[1]
    if n > MAX_INNER:
        raise ValueError(f"integer_product: inner dimension {n} > {MAX_INNER}")
    mask = (1 << LIMB) - 1
    size = max(max(map(abs, M), default=0).bit_length(), 1)
    limbs_M = -(-size // LIMB)
    raw = b"".join(abs(x).to_bytes(2 * limbs_M, "little") for x in M)
    sign_M = np.array([(x > 0) - (x < 0) for x in M], dtype=np.float64)
    Ml = np.frombuffer(raw, dtype="<u2").reshape(T * n, limbs_M).T * sign_M  # (limbs_M, T n), signed limbs
    Ml = Ml.reshape(limbs_M * T, n)
    Zabs, sign_Z = np.abs(Z), np.sign(Z)
    top = int(Zabs.max()) if Zabs.size else 0
    if top >= 1 << 62:
        raise ValueError("integer_product: |Z| >= 2^62")
    limbs_Z = max(-(-top.bit_length() // LIMB), 1)
    Zl = np.concatenate([((Zabs >> (LIMB * j)) & mask) * sign_Z for j in range(limbs_Z)], axis=1).astype(np.float64)
    P = (Ml @ Zl).reshape(limbs_M, T, limbs_Z, m)  # (exact integers below 2^49)
    K = limbs_M + limbs_Z
    C = np.zeros((K, T, m), dtype=np.int64)
    for i in range(limbs_M):
        for j in range(limbs_Z):
            C[i + j] += P[i, :, j, :].astype(np.int64)
    for k in range(K - 1):  # carry: limbs 0 .. K-2 in [0, 2^16), the top one signed
        carry = C[k] >> LIMB  # (an arithmetic shift: floor)
        C[k] -= carry << LIMB
        C[k + 1] += carry
    low = np.ascontiguousarray(C[:K - 1].reshape(K - 1, T * m).T).astype("<u2").tobytes()
    width = 2 * (K - 1)
    shift = LIMB * (K - 1)
    return [int.from_bytes(low[e * width:(e + 1) * width], "little") + (int(h) << shift)
            for e, h in enumerate(C[K - 1].ravel().tolist())]


def _times_step(A: Factor, B: Factor) -> list[Value]:
    """The balls of ``A B`` (row-major) for A all balls and B = W - eta U V, a weight
    after the SGD step whose derivative is ``X^T G`` kept as its factors U (n x r), V
    (r x m) (:func:`product_factor`): ``A W - eta (A U) V``, the same number for every
    point of the balls, with A W the product by the exact weight (its integer product,
    :func:`_balls_times_exact`) and two products of rank r instead of T n m ball
    multiplications by W's balls."""
    _, W, D, eta = B.how
    _, U, V = D.how
    from flint import arb

    AW = arb_mat(A.rows, B.cols, [v for row in product(A, W) for v in row])
    return (AW - (A.arb() * U.arb()) * V.arb() * arb(eta)).entries()


def _integers(B: Factor):
    """An exact factor as integers: ``(Z, d, |B|)`` with B = Z / d (Z an fmpz_mat, or a
    numpy int64 array for a file's weight, :func:`weight_factor`; d an fmpz) and |B| the
    entries' sizes as float64 bounded above (numpy, n x m), or None
    when they pass a double's range; kept by the factor (a transpose: its source's,
    transposed)."""
    if B._of is not None and B._of.kind == "exact":
        known = _integers(B._of)
        return None if known is None else (known[0].transpose(), known[1], known[2].T)
    if B._ints is None:
        np = numpy()

        Z, d = B.exact().numer_denom()
        wide = 1 + 2.0 ** -50
        with np.errstate(over="ignore"):
            absB = np.abs(np.array(Z.entries(), dtype=np.float64).reshape(B.rows, B.cols)) * (wide / float(d)) * wide
        finite = d.bit_length() < 1000 and bool(np.isfinite(absB).all())
        B._ints = (Z, d, absB) if finite else False
    return B._ints or None


def transpose(M: list[list]) -> list[list]:
    """The transpose of a matrix given as row lists."""
    return [list(col) for col in zip(*M)]


@dataclass(eq=False, repr=False)
class MatMul:
    """A run of Dot nodes that together are ``Y = X W (+ b)``.

    Attributes:
        start: the id of the first Dot node; the members are the ids start, start + 1,
            ... in row-major order of ``members``.
        rows: T rows of n node ids (X; row t of the left factor; None where masked).
        cols: m columns of n node ids (W; column c of the right factor; None where masked).
        bias: m node ids of the bias (each entered as ``b_c * 1``), or None.
        members: T x m node ids of Y, None where an entry is masked (not computed).
        weight: the :class:`~derive.graph.Weights` whose whole matrix W is (``cols`` are
            its columns, in order), or None: its values are then read as one
            :class:`Factor` per pass, and its derivative given back as one matrix.
        bias_weight: likewise for b (a weight vector, one row), or None.
    """

    start: int
    rows: list[list[int]]
    cols: list
    bias: list[int] | None
    members: list[list[int | None]]
    weight: object = field(default=None)
    bias_weight: object = field(default=None)

    @property
    def ids(self) -> list[int]:
        """The member node ids in order (contiguous, from ``start``)."""
        return [i for row in self.members for i in row if i is not None]

    def forward(self, values: list[Value], factor_of, rows: list[bool] | None = None) -> list[Value | None]:
        """The members' values, in member order, from the values of ``rows``, ``cols`` and
        ``bias`` (a masked operand counts as an exact 0: its term is skipped);
        ``factor_of(weights)`` gives a weight's :class:`Factor` in this pass. The bias is
        added to ``X W`` entry by entry (an exact 0 on either side leaves the other).
        ``rows``: which rows of Y to compute (T flags; None: all), the others' members
        None (a pass of some nodes only: :func:`derive.evaluate.forward`)."""
        kept = range(len(self.rows)) if rows is None else [t for t, keep in enumerate(rows) if keep]
        if not kept:
            return [None] * len(self.ids)
        Y = dict(zip(kept, product(self._left(values, kept), self._right(values, factor_of))))
        if self.bias is not None:
            b = [values[i] for i in self.bias]
            Y = {t: list(map(plus, row, b)) for t, row in Y.items()}
        none = [None] * len(self.cols)  # (a row not computed)
        return list(compress(chain.from_iterable(Y.get(t, none) for t in range(len(self.members))), self._unmasked))

    @cached_property
    def _unmasked(self) -> list[bool]:
        """Whether each entry of Y, row-major, is a member (not masked)."""
        return [i is not None for row in self.members for i in row]

    def _left(self, values: list[Value], kept: Sequence[int] | None = None) -> Factor:
        """X (T x n, or the rows ``kept`` of it) as values, an exact 0 for a masked operand."""
        rows = self.rows if kept is None else [self.rows[t] for t in kept]
        read = values.__getitem__
        return Factor.of_rows([list(map(read, row)) if None not in row else [ZERO if i is None else values[i] for i in row]
                               for row in rows], len(self.cols[0]))

    def _right(self, values: list[Value], factor_of) -> Factor:
        """W (n x m) as values (the weight's own factor when it is one)."""
        if self.weight is not None:
            return factor_of(self.weight)
        return Factor.of_rows(transpose([[ZERO if i is None else values[i] for i in col] for col in self.cols]))

    def backward(self, values: list[Value], grad: list[list[Value]], factor_of, idle: set[int] = frozenset()) \
            -> tuple[list[tuple[int, Value]], list[tuple[object, Factor]]]:
        """The contributions of this product to the adjoints of its inputs, given the
        members' adjoints ``grad`` (T x m; exact 0 where none): ``dX = G W^T``,
        ``dW = X^T G``, ``db = 1^T G``. Returns ``(scalars, matrices)``: ``(node id, d)``
        pairs, exact zeros left out (as the scalar path skips a zero partial), and for
        a :attr:`weight` (or :attr:`bias_weight`) ``(weights, dW)`` with dW its whole
        derivative as a :class:`Factor` (exact zeros included). The ids in ``idle`` (weights whose
        derivative is not asked for) get nothing: a factor or bias all of whose ids are
        idle is not computed. A row of ``grad`` that is all exact zeros (a row the loss does
        not read: every row of a causal attention's last block but the last) is left out
        of every product: its terms are exact zeros, which the products skip."""
        scalars, matrices = [], []
        live = [t for t, row in enumerate(grad) if any(type(g) is not fmpq or g for g in row)]  # (not is_zero)
        G = Factor.of_rows([grad[t] for t in live], len(self.cols))
        X = None if len(live) == len(grad) else live  # (the rows of X the products read)
        if not _all_idle(self.rows, idle):
            W = self._right(values, factor_of)
            for t, row in zip(live, product(G, W.transpose())):
                scalars += [(i, d) for i, d in zip(self.rows[t], row) if i is not None and not is_zero(d)
                            and i not in idle]
        if self.weight is not None:
            if self.weight.start not in idle:
                matrices.append((self.weight, product_factor(self._left(values, X).transpose(), G)))
        elif not _all_idle(self.cols, idle):
            for col_ids, col in zip(self.cols, transpose(product(self._left(values, X).transpose(), G))):
                scalars += [(i, d) for i, d in zip(col_ids, col) if i is not None and not is_zero(d) and i not in idle]
        if self.bias is not None and not _all_idle([self.bias], idle):
            (sums,) = product([[fmpq(1)] * len(live)], G)
            if self.bias_weight is not None:
                matrices.append((self.bias_weight, Factor(1, len(sums), sums)))
            else:
                scalars += [(i, d) for i, d in zip(self.bias, sums) if not is_zero(d) and i not in idle]
        return scalars, matrices


def _all_idle(ids, idle: set[int]) -> bool:
    """Whether every (unmasked) id of a factor is in ``idle`` (then its adjoint is not computed)."""
    return bool(idle) and all(i is None or i in idle for row in ids for i in row)


def plus(a: Value, b: Value) -> Value:
    """a + b, an exact 0 on either side leaving the other as it is (the scalar path's
    skipped term: an exact value stays exact, a ball stays the same ball)."""
    return b if is_zero(a) else a if is_zero(b) else a + b
