"""The pieces a Derivation delegates to, each on a graph of a few nodes and no case:
the Evaluator (precision escalation, undefined values), ExactForms and the Rounder.

Expected values are worked out here from the mathematics (sqrt(2) against a decimal
approximation by integer square roots, sin^2 + cos^2 = 1), not taken from derive.
"""

from __future__ import annotations

from fractions import Fraction
from math import isqrt

import pytest
import sympy

from derive.decimals import UNDECIDED, Rounder
from derive.errors import EvaluationError
from derive.evaluate import MAX_PREC, START_PREC, Evaluator, next_precision
from derive.exact import ExactForms
from derive.graph import Cos, Div, Graph, Lin, Meta, Mul, Relu, Sin, Sqrt
from derive.rounding import Format
from derive.steps import Ref

DIGITS = 45  # sqrt(2) - c for c = sqrt(2) cut after 45 decimals is below 2^-128 (about 3e-39)
C = Fraction(isqrt(2 * 10 ** (2 * DIGITS)), 10 ** DIGITS)  # floor(sqrt(2) 10^45) / 10^45


def sqrt2_graph() -> tuple[Graph, int, int]:
    """x = 2, r = sqrt(x), and the ids of r and of m = relu(r - C)."""
    g = Graph()
    x = g.leaf(Fraction(2), Meta("x", "x"))
    r = g.add(Sqrt(), [x], Meta("r", "r"))
    m = g.add(Relu(), [g.add(Lin([1], -C), [r], Meta("d", "d"))], Meta("m", "m"))
    return g, r, m


def test_evaluator_doubles_the_precision_until_a_branch_is_decided():
    g, r, m = sqrt2_graph()
    ev = Evaluator(g, None, Fraction(0))
    assert 0 < Fraction(2) - C * C  # C < sqrt(2): relu(r - C) is positive, decided only past 128 bits
    assert ev.evaluation().prec == 2 * START_PREC
    assert ev.precisions == (2 * START_PREC,)  # 128 bits could not decide, so nothing is kept there
    assert ev.value(Ref("before", m), 4 * START_PREC) > 0
    assert ev.precisions == (4 * START_PREC,)  # a higher evaluation replaces the lower one (one kept: GBs when wide)
    assert ev.evaluation().prec == 4 * START_PREC  # and answers for it


def test_a_pass_stopped_early_jumps_further_than_a_doubling():
    """A branch undecided an eighth of the way through the pass: the precision after 128
    bits is the first doubling with 1.25 x 128 / (1/8) = 1280 bits or more, capped at 8 x
    128; stopped at the last node, one doubling."""
    g, r, m = sqrt2_graph()  # (4 nodes; the ReLU is node 3)
    for k in range(20):  # 20 nodes after it: the pass stops at 3 of 24
        m = g.add(Lin([1], 1), [m], Meta(f"n{k}", f"n{k}"))
    ev = Evaluator(g, None, Fraction(0))
    assert ev.evaluation().prec == 8 * START_PREC
    assert next_precision(128, 3 / 24) == 1024 and next_precision(128, 0.75) == 256
    assert next_precision(128, 0.5) == 512  # (2 x 0.5 < 1.25: a doubling alone leaves no margin)
    assert next_precision(128) == 256 and next_precision(MAX_PREC // 2, 0.01) == MAX_PREC


def test_evaluator_gives_up_at_max_prec_naming_the_file():
    g = Graph()
    r = g.add(Sqrt(), [g.leaf(Fraction(2), Meta("x", "x"))], Meta("r", "r"))
    square = g.add(Mul(), [r, r], Meta("s", "s"))  # sqrt(2)^2 is a ball around 2 at any precision
    g.add(Relu(), [g.add(Lin([1], -2), [square], Meta("d", "d"))], Meta("m", "m"))
    with pytest.raises(EvaluationError, match="cannot be decided") as info:
        Evaluator(g, None, Fraction(0), file="tiny.toml").evaluation()
    assert info.value.file == "tiny.toml" and "(m: its input is 0 or too near 0 to tell)" in str(info.value)
    assert MAX_PREC > START_PREC


def test_a_branch_on_an_exact_zero_is_decided_by_its_exact_form():
    """relu(sqrt(2)^2 - 2): no precision decides the ball around 0, the input's exact form
    does (sqrt(2)^2 - 2 = 0), and m is exactly 0, at the first precision."""
    g = Graph()
    r = g.add(Sqrt(), [g.leaf(Fraction(2), Meta("x", "x"))], Meta("r", "r"))
    square = g.add(Mul(), [r, r], Meta("s", "s"))
    d = g.add(Lin([1], -2), [square], Meta("d", "d"))
    m = g.add(Relu(), [d], Meta("m", "m"))
    ev = Evaluator(g, None, Fraction(0))
    ev.decide = ExactForms(g, ev, Fraction(0)).rational_in
    values = ev.evaluation()
    assert values.prec == START_PREC and values.before[m] == 0 and values.before[d] == 0


def undefined_graph() -> Graph:
    g = Graph()
    one = g.leaf(Fraction(1), Meta("a", "a"))
    zero = g.leaf(Fraction(0), Meta("b", "b"))
    g.add(Div(), [one, zero], Meta("q", "q_1"))
    return g


def test_evaluator_reports_an_undefined_value():
    with pytest.raises(EvaluationError, match="q_1: division by zero") as info:
        Evaluator(undefined_graph(), None, Fraction(0), file="tiny.toml").evaluation()
    assert info.value.file == "tiny.toml"


def test_evaluator_lets_the_caller_name_the_field():
    def explain(exc):
        return EvaluationError("b is 0", file="tiny.toml", field="b", expected="b != 0")

    with pytest.raises(EvaluationError, match="field b: b is 0"):
        Evaluator(undefined_graph(), None, Fraction(0), explain=explain).evaluation()


def half_graph() -> tuple[Graph, int]:
    """h = (sin(1)^2 + cos(1)^2) / 2: exactly 1/2, but a ball around it at any precision,
    and a form SymPy leaves as it is until it is simplified."""
    g = Graph()
    one = g.leaf(Fraction(1), Meta("x", "x"))
    s, c = g.add(Sin(), [one], Meta("s", "s")), g.add(Cos(), [one], Meta("c", "c"))
    squares = [g.add(Mul(), [v, v], Meta(None, f"{v}^2")) for v in (s, c)]
    return g, g.add(Lin([Fraction(1, 2), Fraction(1, 2)]), squares, Meta("h", "h"))


def pieces(g: Graph) -> tuple[Evaluator, ExactForms, Rounder]:
    ev = Evaluator(g, None, Fraction(0))
    forms = ExactForms(g, ev, Fraction(1, 10))
    return ev, forms, Rounder(ev, forms)


def test_rounder_takes_the_exact_path_on_a_boundary():
    g, h = half_graph()
    ev, forms, rounder = pieces(g)
    ref = Ref("before", h)
    assert forms.exact_text(ref) == "cos(1)**2/2 + sin(1)**2/2"  # before the exact path ran
    assert rounder.decimal(ref, Format(places=0)) == "1"  # 1/2 rounds half away from zero to 1
    assert rounder.decimal(ref, Format(places=0, mode="half-even")) == "0"  # and half to even to 0
    assert rounder.decimal(ref, Format(places=3)) == "0.500"
    assert forms.rational(h) == Fraction(1, 2)
    assert forms.exact_text(ref) == "1/2"  # known exactly now
    assert ev.precisions == (START_PREC,)  # decided without evaluating again


def test_an_exact_zero_of_balls_at_significant_figures_takes_the_exact_path_first():
    """sin(1)^2 + cos(1)^2 - 1 is exactly 0, a ball around 0 at every precision, which
    significant figures never decide: its exact form settles it at the first precision
    (30 figures start at 164 bits), with no evaluation above it."""
    g, h = half_graph()
    zero = g.add(Lin([2], -1), [h], Meta("z", "z"))
    ev, forms, rounder = pieces(g)
    assert rounder.decimal(Ref("before", zero), Format(places=None, sig=30)) == "0." + "0" * 29  # 30 figures
    assert ev.precisions == (64 + int(30 * 3.33),)


def test_rounder_decides_by_precision_where_a_ball_can():
    g, r, m = sqrt2_graph()
    _, _, rounder = pieces(g)
    # sqrt(2) = 1.41421356237309504880168872420969807856967187537694...
    assert rounder.decimal(Ref("before", r), Format(places=20)) == "1.41421356237309504880"
    assert rounder.decimal(Ref("before", r), Format(places=None, sig=3)) == "1.41"
    assert UNDECIDED not in rounder.decimals([Ref("before", r), Ref("before", m)], Format(places=50)).values()


def test_exact_forms():
    g, r, m = sqrt2_graph()
    ev, forms, _ = pieces(g)
    assert forms.closed_form(r) == sympy.sqrt(2)
    assert forms.closed_form(m) == sympy.Max(0, sympy.sqrt(2) - sympy.Rational(C.numerator, C.denominator))
    assert forms.definition(m) == sympy.Max(0, sympy.Symbol("d"))  # the parent by its name
    assert forms.exact_text(Ref("before", 0)) == "2"
    assert forms.rational(r) is None  # sqrt(2) is irrational


def _angles() -> list[sympy.Expr]:
    """Angles as a sinusoid or RoPE builds them (a position times base^(-2i/d)), and others."""
    import random

    rnd = random.Random(7)
    R = sympy.Rational
    angles = [R(0), R(1), R(-1), R(1, 2), R(-7, 3), sympy.sqrt(10) / 10, -sympy.sqrt(10) / 10,
              sympy.Integer(10) ** R(1, 4), -3 * sympy.Integer(10) ** R(3, 4) / 7, sympy.sqrt(R(2, 3)),
              R(10 ** 30 + 7, 3), sympy.pi / 6, -sympy.pi, sympy.I, sympy.Symbol("x"), sympy.sqrt(2) + 1]
    for _ in range(200):
        c, b, e = R(rnd.randint(-50, 50), rnd.randint(1, 40)), R(rnd.randint(1, 30), rnd.randint(1, 30)), \
            R(rnd.randint(-5, 5), rnd.randint(1, 6))
        angles.append(c * b ** e)
    return angles


@pytest.mark.parametrize("op, function", [(Sin(), sympy.sin), (Cos(), sympy.cos)])
def test_a_sine_form_is_the_one_sympy_evaluates(op, function):
    """Sin and Cos build their forms without SymPy's evaluation where its result is known
    (graph._trig): the same expression tree as sympy.sin/cos evaluated, for every angle."""
    for x in _angles():
        assert sympy.srepr(op.sympy([x])) == sympy.srepr(function(x)), x


def test_a_form_stopped_by_its_budget_is_given_up(monkeypatch):
    """A closed form whose SymPy operation passes FORM_SECONDS is given up (the quantity is
    printed by its definition), for good; the other forms are as before."""
    from derive import exact

    g, r, m = sqrt2_graph()
    _, forms, _ = pieces(g)
    relu = type(g.nodes[m].op)
    built = relu.sympy
    def stalls(self, parts):
        while True:
            pass

    monkeypatch.setattr(exact, "FORM_SECONDS", 0.05)
    monkeypatch.setattr(relu, "sympy", stalls)
    assert forms.closed_form(m) == sympy.Symbol("m")
    monkeypatch.setattr(relu, "sympy", built)
    assert forms.closed_form(r) == sympy.sqrt(2)
    assert forms.closed_form(g.nodes[m].parents[0]) == sympy.sqrt(2) - sympy.Rational(C.numerator, C.denominator)
    assert forms.closed_form(m) == sympy.Symbol("m")  # (given up once: its definition from then on)


def test_a_derivative_through_a_relu_at_0_takes_derives_convention():
    """dL/dx for L = r/8, r = relu(x): at x = 1 the exact path gives 1/8; at x = 0 SymPy's
    own derivative is Heaviside(0) = 1/2 (of 1/8: 1/16), while derive's ReLU takes 0 there
    (PyTorch's convention): the exact path gives 0, the evaluation's value."""
    from flint import fmpq

    from derive.graph import Relu

    for x_value, expected in ((Fraction(1), Fraction(1, 8)), (Fraction(0), Fraction(0))):
        g = Graph()
        x = g.leaf(x_value, Meta("x", "x", param="x"))
        r = g.add(Relu(), [x], Meta("r", "r"))
        loss = g.add(Lin([Fraction(1, 8)]), [r], Meta("L", "L"))
        ev = Evaluator(g, loss, fmpq(1, 10))
        forms = ExactForms(g, ev, Fraction(1, 10))
        assert forms._simplified(Ref("grad", x)) == expected
        assert ev.value(Ref("grad", x)) == fmpq(expected.numerator, expected.denominator)
