"""Matrix kernels (derive/kernels.py) give the scalar path's numbers.

1. ``product`` against Python's fractions: exact entries equal the exact product, an entry
   is exact exactly when every term has an exact-zero factor or two exact factors, and
   every ball contains the exact product of the rationals the balls enclose.
2. Every bundled case and a few random ones: each quantity (forward, gradients, the
   weights after the step, the pass after) rounded to 30 significant digits is the same
   text with the kernels and node by node (``Evaluator.kernels = False``), it is an exact
   rational on both paths or on neither, and the dense layers are kernels (so the
   comparison is not empty).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from fractions import Fraction

import pytest
from flint import arb, ctx, fmpq

from derive.case import bundled_cases, load_case
from derive.derivation import VALUE_FORMAT, derive
from derive.graph import is_exact
from derive import kernels
from derive.kernels import product
from random_cases import write_case

SLOW = {"crane"}


def _q(x: Fraction) -> fmpq:
    return fmpq(x.numerator, x.denominator)


def _matrix(rng: random.Random, rows: int, cols: int, balls: float, zeros: float):
    """(values, exact Fractions, is-ball flags): entries k/7 (a ball holds k/7 at 64 bits, so
    it is never exact), some exactly 0."""
    values, exact, ball = [], [], []
    for _ in range(rows):
        v_row, e_row, b_row = [], [], []
        for _ in range(cols):
            x = Fraction(0) if rng.random() < zeros else Fraction(rng.randint(-20, 20) or 1, 7)
            is_ball = x != 0 and rng.random() < balls
            v_row.append(arb(_q(x)) if is_ball else _q(x))
            e_row.append(x)
            b_row.append(is_ball)
        values.append(v_row)
        exact.append(e_row)
        ball.append(b_row)
    return values, exact, ball


@pytest.mark.parametrize("integers", [False, True], ids=["arb_mat", "integers"])
@pytest.mark.parametrize("seed", range(40))
def test_product_matches_fractions_and_the_exactness_rule(seed, integers, monkeypatch):
    """Mixed factors, and a factor all balls (no zeros: activations times weights, the
    usual layer) beside an exact one with zero rows or columns, or beside balls; balls
    times an exact factor by arb_mat, or (``integers``) by the integer product of
    kernels._balls_times_exact, used from any size."""
    if integers:
        monkeypatch.setattr(kernels, "BALLS_TIMES_EXACT_MIN", 0)
    rng = random.Random(seed)
    T, n, m = rng.randint(1, 5), rng.randint(1, 6), rng.randint(1, 5)
    all_balls = seed % 4  # 1: A all balls, 2: B all balls, 3: both, 0: mixed
    with ctx.workprec(64):
        A, Ae, Ab = _matrix(rng, T, n, balls=1 if all_balls in (1, 3) else rng.choice((0, 0.3, 1)),
                            zeros=0 if all_balls in (1, 3) else 0.3)
        B, Be, Bb = _matrix(rng, n, m, balls=1 if all_balls in (2, 3) else rng.choice((0, 0.3)),
                            zeros=0 if all_balls in (2, 3) else rng.choice((0.4, 0.8)))
        C = product(A, B)
    with ctx.workprec(256):  # (a rational k/49 as a ball at 64 bits sticks out of a ball that holds it)
        for t in range(T):
            for c in range(m):
                want = sum((Ae[t][k] * Be[k][c] for k in range(n)), Fraction(0))
                inexact = any((Ab[t][k] and Be[k][c] != 0) or (Bb[k][c] and Ae[t][k] != 0) for k in range(n))
                got = C[t][c]
                if inexact:
                    assert isinstance(got, arb) and got.contains(_q(want)), (t, c)
                else:
                    assert isinstance(got, fmpq) and got == _q(want), (t, c)


def test_balls_times_exact_holds_every_product(monkeypatch):
    """The integer path (kernels._balls_times_exact) on balls of every kind: wide and
    narrow radii, a zero midpoint, midpoints 2^-300 beside 2^40, an exact ball, radii
    below a double's range, against weights with a common denominator of 3 * 2^k: each
    result holds the exact product of the rationals the balls were made from (their
    radii widened by hand), and a point of the balls' product near the edge."""
    monkeypatch.setattr(kernels, "BALLS_TIMES_EXACT_MIN", 0)
    with ctx.workprec(128):
        third = arb(1) / 3
        A = [[arb(1) / 3 + arb(0, 1e-3), arb(0, 2.0 ** -1070), arb(5)],
             [arb(2) ** -300 * third, arb(2) ** 40 * third, arb(-7, 2.0 ** -200)]]
        B = [[fmpq(1, 3), fmpq(-5, 12), fmpq(0)], [fmpq(7, 96), fmpq(1), fmpq(0)], [fmpq(-1, 6), fmpq(2, 3), fmpq(0)]]
        C = product(A, B)
        monkeypatch.setattr(kernels, "BALLS_TIMES_EXACT_MIN", 10 ** 9)
        D = product(A, B)  # (arb_mat's, for the same products)
    for t in range(2):
        for c in range(2):
            assert isinstance(C[t][c], arb) and C[t][c].overlaps(D[t][c])
            with ctx.workprec(400):
                for pick in (lambda a: a.mid(), lambda a: a.upper(), lambda a: a.lower()):
                    point = sum((pick(A[t][k]) * B[k][c] for k in range(3)), arb(0))
                    assert C[t][c].contains(point), (t, c)
        assert C[t][2] == 0 and isinstance(C[t][2], fmpq)  # (a column of exact zeros: an exact 0, as before)


@pytest.mark.parametrize("seed", range(6))
def test_integer_product_is_exact(seed):
    """kernels.integer_product (float64 products of 16-bit limbs) against Python's own
    integers: any size of M (signs, zeros, 1 to 1,500 bits), Z up to 2^62 - 1, empty shapes."""
    import numpy as np

    rng = random.Random(seed)
    T, n, m = rng.randint(0, 4), rng.randint(1, 40), rng.randint(0, 5)
    bits = rng.choice([1, 15, 16, 17, 64, 200, 1500])
    M = [rng.choice([0, 1, -1]) * rng.getrandbits(bits) for _ in range(T * n)]
    zbits = rng.choice([1, 16, 33, 62])
    Zrows = [[rng.choice([0, 1, -1]) * rng.getrandbits(zbits) for _ in range(m)] for _ in range(n)]
    if m and n:
        Zrows[0][0] = (1 << 62) - 1  # the largest Z taken
    Z = np.array(Zrows, dtype=np.int64).reshape(n, m)
    want = [sum(M[t * n + k] * Zrows[k][c] for k in range(n)) for t in range(T) for c in range(m)]
    assert kernels.integer_product(M, T, n, Z) == want


def test_integer_product_is_exact_at_its_largest_sums():
    """Every limb at its largest (2^16 - 1, one sign) over a long inner dimension: the
    float64 sums reach n 2^32, where a product that were not exact would show."""
    import numpy as np

    n = 1 << 13
    M = [(1 << 64) - 1] * n + [-((1 << 64) - 1)] * n
    Z = np.full((n, 2), (1 << 62) - 1, dtype=np.int64)
    Z[:, 1] = -Z[:, 1]
    big = n * ((1 << 64) - 1) * ((1 << 62) - 1)
    assert kernels.integer_product(M, 2, n, Z) == [big, -big, -big, big]


def test_rows_of_exact_zeros_are_left_out():
    """A gradient whose rows are exact zeros but one (a token the loss does not reach):
    G W^T gives exact-zero rows and the others' products, and X^T G (product_factor)
    leaves those rows' terms out, every entry still a ball holding the exact sum."""
    with ctx.workprec(128):
        third = arb(1) / 3
        G = [[fmpq(0), fmpq(0), fmpq(0)], [third, third * 2, arb(-1) / 7], [fmpq(0), fmpq(0), fmpq(0)]]
        W = [[fmpq(1, 2), fmpq(-3, 4), fmpq(1)], [fmpq(5, 8), fmpq(0), fmpq(-1, 3)]]  # 2 x 3: G W^T is 3 x 2
        dX = product(G, [list(col) for col in zip(*W)])
        X = [[third, arb(2).sqrt()], [arb(5) / 9, third * 4], [arb(1) / 11, arb(3).sqrt()]]  # 3 x 2
        dW = kernels.product_factor(kernels.Factor.of_rows([list(c) for c in zip(*X)]), kernels.Factor.of_rows(G))
    assert all(isinstance(v, fmpq) and v == 0 for t in (0, 2) for v in dX[t])
    for c in range(2):
        want = third * W[c][0] + third * 2 * W[c][1] + arb(-1) / 7 * W[c][2]
        assert isinstance(dX[1][c], arb) and dX[1][c].overlaps(want)
    assert (dW.rows, dW.cols, dW.kind) == (2, 3, "balls")
    for k in range(2):
        for c in range(3):
            assert dW.flat[k * 3 + c].overlaps(X[1][k] * G[1][c])


def test_a_zero_weight_column_keeps_an_irrational_row_exact():
    with ctx.workprec(128):
        root = arb(2).sqrt()
        C = product([[root, root / 3]], [[fmpq(0), fmpq(1)], [fmpq(0), fmpq(-1, 2)]])
    assert C[0][0] == 0 and isinstance(C[0][0], fmpq)
    assert isinstance(C[0][1], arb) and (C[0][1] - root * 5 / 6).contains(0)


def test_no_rows_and_a_bad_shape():
    assert product([], [[fmpq(1)]]) == []
    with pytest.raises(ValueError):
        product([[fmpq(1), fmpq(2)]], [[fmpq(1)]])


def _texts(case, kernels: bool) -> tuple[dict, int]:
    derivation = derive(load_case(str(case)))
    derivation.evaluator.kernels = kernels
    refs = derivation.quantities() + derivation.given()
    texts = derivation.decimals(refs, VALUE_FORMAT)
    exact = {(r.phase, r.id): is_exact(derivation.value(r)) for r in refs}
    return {(r.phase, r.id): (t, exact[r.phase, r.id]) for r, t in texts.items()}, len(derivation.graph.kernels)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
                                  for n in sorted(bundled_cases())])
def test_bundled_case_numbers_are_the_scalar_paths(name):
    with_kernels, groups = _texts(name, True)
    scalar, _ = _texts(name, False)
    assert with_kernels == scalar
    case = load_case(name)
    if case.blocks and "W_Q" in case.blocks[0].matrices:
        assert groups > 0  # the dense layers went through the kernels


@pytest.mark.parametrize("seed", [3, 11, 27, 40])
def test_random_case_numbers_are_the_scalar_paths(seed, tmp_path):
    path = write_case(seed, tmp_path)
    with_kernels, groups = _texts(path, True)
    scalar, _ = _texts(path, False)
    assert groups > 0
    assert with_kernels == scalar


@pytest.mark.parametrize("case", ["woodchuck", "encoder-post-norm", 3, 27, "safetensors"])
def test_wide_model_paths_give_the_scalar_paths_numbers(case, tmp_path, monkeypatch):
    """The paths a wide model takes (balls times an exact weight as an integer product,
    the pass after as A W - eta (A X^T) G, a weight with no value per entry in either
    pass, a safetensors file's weights as integers over a power of two), forced at every
    size: every quantity to 30 figures as node by node."""
    monkeypatch.setattr(kernels, "BALLS_TIMES_EXACT_MIN", 0)
    steps = []
    real = kernels._times_step
    monkeypatch.setattr(kernels, "_times_step", lambda A, B: steps.append(1) or real(A, B))
    if case == "safetensors":  # (bench/synthetic.py: the weights in a file, as the bench's wide blocks)
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
        from synthetic import write_case as write_synthetic

        name = str(write_synthetic(tmp_path, safetensors=True, d_model=8, heads=2, d_mlp=16, tokens=4, vocab=6,
                                   blocks=1, trained=True))
    else:
        name = str(write_case(case, tmp_path)) if isinstance(case, int) else case
    with_kernels, groups = _texts(name, True)
    scalar, _ = _texts(name, False)
    assert groups > 0 and steps  # (the pass after went through A W - eta (A X^T) G)
    assert with_kernels == scalar


@pytest.mark.parametrize("name", ["cat-climbed", "cat-climbed-llama"])
def test_weight_labels_printed_on_demand_are_the_names_printing(name):
    from derive.graph import Meta
    from derive.name import Name
    from derive.printing import text

    graph = derive(load_case(name)).graph
    leaves = [graph.nodes[i].meta for i in graph.param_leaves() if graph.nodes[i].meta.symbol == "param"]
    assert leaves
    for meta in leaves:
        name = Name(meta.param, param=True, position=meta.position, index=meta.index)
        made = Meta.of(name, block=meta.block, token=meta.token)  # E rows carry their piece
        for field in ("symbol", "label", "block", "head", "position", "index", "norm", "param", "token"):
            assert getattr(meta, field) == getattr(made, field), field
        assert meta.label == text(name)


def test_leaf_values_read_in_any_order_as_one_by_one():
    """``LeafValues.reader`` (the weight of the last id tried first) gives what indexing
    gives, for every derivative and weight after the step of cat-climbed's trained weights,
    read in order, in reverse and shuffled (jumping between weights), and raises KeyError
    for an id that is not a trained leaf, as indexing does."""
    ev = derive(load_case("cat-climbed")).evaluation()
    for values in (ev.grads, ev.updated):
        ids = list(values)
        assert len({values.weights_of(i).param for i in ids}) > 1  # (several weights to jump between)
        expected = {i: values[i] for i in ids}
        shuffled = ids[:]
        random.Random(5).shuffle(shuffled)
        for order in (ids, ids[::-1], shuffled):
            read = values.reader()
            assert all(read(i) is expected[i] or read(i) == expected[i] for i in order)
        with pytest.raises(KeyError):
            values.reader()(max(ids) + 10 ** 6)


def test_a_weight_keeps_every_entry_whoever_shares_its_object():
    """``Graph.weight`` converts each distinct number object once: entries that are one
    object (as the case reader gives a repeated number), equal numbers as distinct objects,
    ints, a zero, and rows made afresh (objects that would die at once, their ids reused if
    not kept) all keep their own values."""
    from derive.graph import Graph

    third = Fraction(1, 3)
    rows = [[third, third, Fraction(1, 3), 0], [Fraction(-2, 5), 7, third, Fraction(0)]]
    rows += [[Fraction(k, 7) for k in range(4 * r, 4 * r + 4)] for r in range(3)]

    class Fresh(list):  # a row whose entries are new objects each time it is read
        def __iter__(self):
            return (Fraction(v) for v in list.__iter__(self))

    rows.append(Fresh([Fraction(k, 11) for k in range(4)]))
    graph = Graph()
    ids = graph.weight("W", rows)
    got = [[graph.weights[-1].values[i - ids[0][0]] for i in row] for row in ids]
    assert got == [[fmpq(v.numerator, v.denominator) if isinstance(v, Fraction) else fmpq(v) for v in row]
                   for row in rows]
