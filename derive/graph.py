"""The derivation graph: named scalar quantities, each computed once from its parents.

A :class:`Node` holds its operation, its parents and its metadata (the chapter's name for
it); a :class:`Graph` is the list of nodes in creation order, which is a topological order.
The entries of one array are one record there rather than a Node each: a weight's are a
:class:`Weights` (read back as :class:`WeightEntry` views), and those of an elementwise
operation or a matrix product named whole are an :class:`Entries` run (read back as
:class:`Entry` views), evaluated at once; every scalar keeps its node id, its name and its
definition.
Values are exact :class:`flint.fmpq` wherever the value is rational and certified
:class:`flint.arb` balls elsewhere (DESIGN.md, "Rational where possible / Certified where
not"). Each operation also says how it passes a gradient back (its partial derivatives),
how it is written as a SymPy expression, and how its definition is printed as plain text
(:mod:`derive.plain`), in the spirit of micrograd's ``engine.py``.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, field
from dataclasses import fields as data_fields
from fractions import Fraction
from functools import cached_property
from itertools import chain, repeat

from flint import arb, ctx, fmpq, fmpq_mat, fmpz_mat

from . import formula as F
from . import plain as P
from .lazy import lazy
from .name import Fields, Name, Piece, json_symbol, json_symbol_of, name_of

sympy = lazy("sympy")  # for the exact forms (Op.sympy) only: a plain run never reads it

Value = fmpq | arb

GELU_C = fmpq(44715, 1000000)  # the cubic coefficient of GPT-2's gelu_new


class NeedPrecision(Exception):
    """A ball straddles a point where the operation is not smooth (ReLU at 0, a division
    by a ball containing 0): evaluate again at a higher working precision.

    Attributes, when a forward pass raised it (else None): ``reached``, the fraction of
    its nodes (0 to 1) the pass had evaluated when it stopped; ``node``, the id of the
    node whose operation could not decide; ``values``, the pass's values up to it (by
    node id: :class:`derive.evaluate.Pass`), from which its inputs' exact forms are built."""

    def __init__(self, reached: float | None = None, node: int | None = None, values=None):
        super().__init__()
        self.reached = reached
        self.node = node
        self.values = values


class Undefined(ArithmeticError):
    """An exact division by zero or square root of a negative number."""


def is_exact(v: Value) -> bool:
    """True when ``v`` is an exact rational (fmpq)."""
    return isinstance(v, fmpq)


def as_arb(v: Value) -> arb:
    """The ball for ``v`` at the current working precision."""
    return arb(v) if isinstance(v, fmpq) else v


def approx(v: Value) -> float:
    """A float near ``v``, for ordering rows on screen only (never for printed digits);
    +-inf past a float's range (an exact logit of 1e309), as a ball's midpoint gives."""
    if isinstance(v, fmpq):
        try:
            return float(v)
        except OverflowError:
            return float("inf") if v > 0 else float("-inf")
    return float(v.mid())


def is_zero(v: Value) -> bool:
    """True only when ``v`` is exactly zero."""
    return type(v) is fmpq and not v  # (``v == 0`` converts the 0: four times slower)


def to_fmpq(q: Fraction | int | fmpq) -> fmpq:
    """A :class:`fractions.Fraction` (or an int, or an fmpq) as a flint fmpq, exactly."""
    return fmpq(q.numerator, q.denominator) if isinstance(q, Fraction) else fmpq(q)


# --------------------------------------------------------------------------- operations

class Op:
    """One scalar operation: ``eval`` its value from the parents' values, ``partials``
    (d out / d parent_k, same order as the parents) and ``sympy`` (its exact form)."""

    smooth_at_rationals = False

    def eval(self, args: list[Value]) -> Value:
        raise NotImplementedError

    def partials(self, args: list[Value], out: Value) -> list[Value]:
        raise NotImplementedError

    def sympy(self, args: list[sympy.Expr]) -> sympy.Expr:
        raise NotImplementedError

    def hand(self, args: list[F.Node]) -> F.Node:
        """How a reader writes this operation on paper: a formula (:mod:`derive.formula`)
        over the parents as the reader writes them (their Names, or the printed numbers
        substituted), in the reader's order."""
        raise NotImplementedError

    def plain(self, args: list[P.Text]) -> P.Text:
        """The operation applied to its parents' texts (:mod:`derive.plain`): its
        definition in SymPy's string syntax, in the reader's order (``1/10*x + y``)."""
        raise NotImplementedError


class Lin(Op):
    """``out = const + sum_k c_k p_k`` with exact rational c_k: sums, means, residuals,
    differences, scaling by a rational (1/T, 1/d)."""

    def __init__(self, coeffs, const=fmpq(0)):
        self.coeffs = [c if type(c) is fmpq else to_fmpq(c) for c in coeffs]
        self.const = const if type(const) is fmpq else to_fmpq(const)

    def eval(self, args):
        terms = [a if c == 1 else c * a for c, a in zip(self.coeffs, args) if c != 0 and not is_zero(a)]
        if not terms:
            return self.const
        total = terms[0] if self.const == 0 else self.const + terms[0]  # a sum of one term is that term
        for term in terms[1:]:
            total = total + term
        return total

    def partials(self, args, out):
        return list(self.coeffs)

    def sympy(self, args):
        return _rat(self.const) + sympy.Add(*[_rat(c) * a for c, a in zip(self.coeffs, args)])

    def hand(self, args):
        items = [a if c == 1 else F.Neg(a) if c == -1 else F.Times(F.Rat(int(c.p), int(c.q)), a)
                 for c, a in zip(self.coeffs, args) if c != 0]
        if self.const != 0:
            items.append(F.number(Fraction(int(self.const.p), int(self.const.q))))
        return F.terms(*items)

    def plain(self, args):
        return P.add(*[P.times(P.number(c), a) for c, a in zip(self.coeffs, args) if c != 0], P.number(self.const))


class Dot(Op):
    """``out = sum_k a_k b_k`` over parents ``a_1..a_n, b_1..b_n``: matrix products with
    weights (x W), dot products of a query and a key (q . k), mixing values (sum a v)."""

    def eval(self, args):
        n = len(args) // 2
        total = fmpq(0)
        for a, b in zip(args[:n], args[n:]):
            if not ((type(a) is fmpq and not a) or (type(b) is fmpq and not b)):  # (is_zero, inlined)
                total = total + a * b
        return total

    def partials(self, args, out):
        n = len(args) // 2
        return list(args[n:]) + list(args[:n])

    def sympy(self, args):
        n = len(args) // 2
        return sympy.Add(*[a * b for a, b in zip(args[:n], args[n:])])

    def hand(self, args):
        n = len(args) // 2
        return F.terms(*[F.Times(a, b) for a, b in zip(args[:n], args[n:])])

    def plain(self, args):
        n = len(args) // 2
        return P.add(*[P.times(a, b) for a, b in zip(args[:n], args[n:])])


class Mul(Op):
    """``out = a b``."""

    def eval(self, args):
        a, b = args
        return fmpq(0) if is_zero(a) or is_zero(b) else a * b

    def partials(self, args, out):
        return [args[1], args[0]]

    def sympy(self, args):
        return args[0] * args[1]

    def hand(self, args):
        return F.Times(*args)

    def plain(self, args):
        return P.times(*args)


class Div(Op):
    """``out = a / b`` (LayerNorm's (x - mu) / sigma, softmax's e^s / sum e^s)."""

    def eval(self, args):
        a, b = args
        if type(b) is fmpq:  # (is_exact and is_zero inlined: crane divides 12,500 times a pass)
            if not b:
                raise Undefined("division by zero")
        elif b.contains(0):
            raise NeedPrecision
        if a is b:  # e^s / (a sum of that one e^s): the first row of a causal head is exactly 1
            return fmpq(1)
        return fmpq(0) if type(a) is fmpq and not a else a / b

    def partials(self, args, out):
        a, b = args
        return [1 / b if is_exact(b) else arb(1) / b, -out / b]

    def sympy(self, args):
        return args[0] / args[1]

    def hand(self, args):
        return F.Over(*args)

    def plain(self, args):
        return P.over(*args)


class Sqrt(Op):
    """``out = sqrt(a)``, exact when a is the square of a rational (sigma = sqrt(var + eps))."""

    def eval(self, args):
        (a,) = args
        if is_exact(a):
            if a < 0:
                raise Undefined("square root of a negative number")
            if a.p.is_square() and a.q.is_square():
                return fmpq(a.p.isqrt(), a.q.isqrt())
            return arb(a).sqrt()
        if a < 0:
            raise Undefined("square root of a negative number")
        return a.sqrt()

    def partials(self, args, out):
        return [1 / (2 * out) if is_exact(out) else arb(1) / (2 * out)]

    def sympy(self, args):
        return sympy.sqrt(args[0])

    def hand(self, args):
        return F.sqrt(args[0])

    def plain(self, args):
        return P.call("sqrt", args[0])


class _Unary(Op):
    """A transcendental function f with f(0) = f0 exact; other arguments go through arb."""

    zero_value: fmpq = fmpq(0)

    def eval(self, args):
        (a,) = args
        if type(a) is fmpq:  # (is_zero and as_arb inlined)
            return self.ball(arb(a)) if a else self.zero_value
        return self.ball(a)

    def ball(self, x: arb) -> arb:
        raise NotImplementedError


class Exp(_Unary):
    """``out = e^a`` (e^s, e^z)."""

    zero_value = fmpq(1)

    def ball(self, x):
        return x.exp()

    def partials(self, args, out):
        return [out]

    def sympy(self, args):
        return sympy.exp(args[0])

    def hand(self, args):
        return F.exp(args[0])

    def plain(self, args):
        return P.call("exp", args[0])


class Log(Op):
    """``out = ln a`` in nats (the loss)."""

    def eval(self, args):
        (a,) = args
        if is_exact(a) and a == 1:
            return fmpq(0)
        if is_exact(a) and a <= 0:
            raise Undefined("logarithm of a number <= 0")
        return as_arb(a).log()

    def partials(self, args, out):
        return [1 / as_arb(args[0])]

    def sympy(self, args):
        return sympy.log(args[0])

    def hand(self, args):
        return F.ln(args[0])

    def plain(self, args):
        return P.call("log", args[0])


_SQRT_2_OVER_PI: dict[int, arb] = {}


def _sqrt_2_over_pi() -> arb:
    """sqrt(2/pi) as a ball at the working precision, made once per precision (3 us of
    the 11 us of one GELU at 128 bits; the same ball as made each time)."""
    c = _SQRT_2_OVER_PI.get(ctx.prec)
    if c is None:
        c = _SQRT_2_OVER_PI[ctx.prec] = (2 / arb.pi()).sqrt()
    return c


class GeluTanh(_Unary):
    """GPT-2's ``gelu_new``: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``
    (Hendrycks and Gimpel 2016, eq. for the tanh approximation)."""

    def ball(self, x):
        return x * (1 + self._t(x)) / 2

    @staticmethod
    def _t(x):
        return (_sqrt_2_over_pi() * (x + GELU_C * x * x * x)).tanh()

    def partials(self, args, out):
        x = as_arb(args[0])
        t = self._t(x)
        c = _sqrt_2_over_pi()
        return [(1 + t) / 2 + x * (1 - t * t) * c * (1 + 3 * GELU_C * x * x) / 2]

    def sympy(self, args):
        x = args[0]
        return x * (1 + sympy.tanh(sympy.sqrt(2 / sympy.pi) * (x + _rat(GELU_C) * x ** 3))) / 2

    def hand(self, args):
        return F.GeluTanh(args[0])

    def plain(self, args):
        x = args[0]  # 1/2*x*(1 + tanh(sqrt(2/pi)*(x + 44715/1000000*x**3)))
        cubic = P.add(x, P.times(P.number(GELU_C), P.power(x, P.number(3))))
        inner = P.times(P.call("sqrt", P.over(P.number(2), P.atom("pi"))), cubic)
        return P.times(P.number(Fraction(1, 2)), x, P.add(P.ONE, P.call("tanh", inner)))


class GeluErf(_Unary):
    """The exact GELU: ``0.5 x (1 + erf(x / sqrt 2))`` (Hendrycks and Gimpel 2016, eq. 1)."""

    def ball(self, x):
        return x * (1 + (x / arb(2).sqrt()).erf()) / 2

    def partials(self, args, out):
        x = as_arb(args[0])
        cdf = (1 + (x / arb(2).sqrt()).erf()) / 2
        pdf = (-(x * x) / 2).exp() / (2 * arb.pi()).sqrt()
        return [cdf + x * pdf]

    def sympy(self, args):
        x = args[0]
        return x * (1 + sympy.erf(x / sympy.sqrt(2))) / 2

    def hand(self, args):
        return F.GeluErf(args[0])

    def plain(self, args):
        x = args[0]  # 1/2*x*(1 + erf(x/sqrt(2)))
        return P.times(P.number(Fraction(1, 2)), x, P.add(P.ONE, P.call("erf", P.over(x, P.call("sqrt", P.number(2))))))


class Silu(_Unary):
    """SiLU (swish): ``x sigma(x) = x / (1 + e^-x)`` (Elfwing et al. 2018, eq. 1; Ramachandran
    et al. 2017; Llama's MLP activation); its derivative is ``sigma(x) (1 + x (1 - sigma(x)))``."""

    def ball(self, x):
        return x / (1 + (-x).exp())

    def partials(self, args, out):
        x = as_arb(args[0])
        s = 1 / (1 + (-x).exp())
        return [s * (1 + x * (1 - s))]

    def sympy(self, args):
        x = args[0]
        return x / (1 + sympy.exp(-x))

    def hand(self, args):
        return F.Over(args[0], F.Terms(F.number(1), F.exp(F.Neg(args[0]))))

    def plain(self, args):
        return P.over(args[0], P.add(P.ONE, P.call("exp", P.neg(args[0]))))


class Relu(Op):
    """``max(0, x)``; its derivative at 0 is taken as 0 (PyTorch's convention)."""

    def eval(self, args):
        (a,) = args
        return a if self._positive(a) else fmpq(0)

    def partials(self, args, out):
        return [fmpq(1) if self._positive(args[0]) else fmpq(0)]

    @staticmethod
    def _positive(a) -> bool:
        if is_exact(a):
            return a > 0
        if a.contains(0):
            raise NeedPrecision
        return a > 0

    def sympy(self, args):
        return sympy.Max(0, args[0])

    def hand(self, args):
        return F.relu(args[0])

    def plain(self, args):
        return P.call("Max", P.ZERO, args[0])


class Sin(_Unary):
    """``out = sin(a)`` (sinusoidal positions, Vaswani et al. 2017, section 3.5)."""

    def ball(self, x):
        return x.sin()

    def partials(self, args, out):
        return [as_arb(args[0]).cos()]

    def sympy(self, args):
        return _trig(sympy.sin, args[0], odd=True)

    def hand(self, args):
        return F.Sin(args[0])

    def plain(self, args):
        return P.call("sin", args[0])


def _trig(function, x: sympy.Expr, odd: bool) -> sympy.Expr:
    """``function(x)`` (SymPy's sin or cos) as SymPy builds it, without its evaluation where
    the result is known: for ``x`` a rational times real powers of positive rationals
    (``sqrt(10)/100``: a sinusoid's angle), sin(0) = 0, cos(0) = 1, sin(-x) = -sin(x),
    cos(-x) = cos(x) and nothing else applies (no multiple of pi, no i), the rules of
    ``sin.eval``/``cos.eval`` (sympy/functions/elementary/trigonometric.py). SymPy's
    evaluation looks for those and more at about 0.17 ms an angle: 1,024 of them in crane's
    exact forms."""
    sign = _number_sign(x) if sympy.core.parameters.global_parameters.evaluate else None
    if sign is None:
        return function(x)
    if sign == 0:
        return sympy.S.Zero if odd else sympy.S.One
    if sign > 0:
        return function(x, evaluate=False)
    return -function(-x, evaluate=False) if odd else function(-x, evaluate=False)


def _rational_sign(q: sympy.Rational) -> int:
    return (q.p > 0) - (q.p < 0)


def _number_sign(x: sympy.Expr) -> int | None:
    """The sign (-1, 0, 1) of a rational or a product of a rational and real powers of
    positive rationals (``-3*sqrt(10)/100``, ``10**(1/4)``); None for any other form."""
    if x.is_Rational:
        return _rational_sign(x)
    sign = 1
    for factor in x.args if x.is_Mul else (x,):
        if factor.is_Rational:
            sign *= _rational_sign(factor)
        elif not (factor.is_Pow and factor.base.is_Rational and factor.base.p > 0 and factor.exp.is_Rational):
            return None
    return sign


class Cos(_Unary):
    """``out = cos(a)`` (sinusoidal positions)."""

    zero_value = fmpq(1)

    def ball(self, x):
        return x.cos()

    def partials(self, args, out):
        return [-as_arb(args[0]).sin()]

    def sympy(self, args):
        return _trig(sympy.cos, args[0], odd=False)

    def hand(self, args):
        return F.Cos(args[0])

    def plain(self, args):
        return P.call("cos", args[0])


class Power(Op):
    """``out = a^e`` for a rational a > 0 and a fixed rational exponent e (the sinusoid
    frequencies w_i = base^(-2i/d)); exact when the result is rational (10000^(-1/2))."""

    def __init__(self, exponent: Fraction):
        self.exponent = to_fmpq(exponent)

    def eval(self, args):
        (a,) = args
        e = self.exponent
        if is_exact(a) and a > 0:
            exact = _rational_root(a ** int(e.p), int(e.q)) if e.p >= 0 else \
                _rational_root(1 / a ** int(-e.p), int(e.q))
            if exact is not None:
                return exact
        return (as_arb(e) * as_arb(a).log()).exp()

    def partials(self, args, out):
        return [self.exponent * as_arb(out) / as_arb(args[0])]

    def sympy(self, args):
        return args[0] ** _rat(self.exponent)

    def hand(self, args):
        return F.power(args[0], F.Rat(int(self.exponent.p), int(self.exponent.q)))

    def plain(self, args):
        return P.power(args[0], P.number(self.exponent))


def _rational_root(q: fmpq, n: int) -> fmpq | None:
    """The exact n-th root of a positive rational, or None when it is irrational."""
    p_root, q_root = q.p.root(n), q.q.root(n)
    if p_root ** n == q.p and q_root ** n == q.q:
        return fmpq(p_root, q_root)
    return None


class Greedy(Op):
    """Temperature 0: ``out = 1`` when parent ``index`` is the largest of the parents (the
    argmax; a tie goes to the lowest id), else 0. Its derivative is 0 everywhere."""

    def __init__(self, index: int):
        self.index = index

    def eval(self, args):
        return fmpq(1) if argmax(args) == self.index else fmpq(0)

    def partials(self, args, out):
        return [fmpq(0)] * len(args)

    def sympy(self, args):
        return sympy.Integer(1) if argmax_sympy(args) == self.index else sympy.Integer(0)

    def hand(self, args):
        return F.Iverson(self.index, *args)

    def plain(self, args):
        return P.Text(f"[argmax({', '.join(map(str, args))}) = {self.index}]", P.ATOM)  # as hand() writes it


def argmax(values: list[Value]) -> int:
    """The index of the largest value, the lowest index on an exact tie.

    Raises:
        NeedPrecision: when two balls overlap and cannot yet be ordered.
    """
    best = 0
    for i, v in enumerate(values[1:], 1):
        b = values[best]
        if is_exact(v) and is_exact(b):
            if v > b:
                best = i
            continue
        diff = as_arb(v) - as_arb(b)
        if diff > 0:
            best = i
        elif not diff < 0:
            raise NeedPrecision
    return best


def argmax_sympy(args: list[sympy.Expr]) -> int:
    """argmax over SymPy numbers (lowest index on a tie), for exact forms."""
    best = 0
    for i, a in enumerate(args[1:], 1):
        if (a - args[best]).evalf(50) > 0:
            best = i
    return best




def _rat(q: fmpq) -> sympy.Rational:
    return sympy.Rational(int(q.p), int(q.q))


# --------------------------------------------------------------------------- nodes

class _Label:
    """The ``label`` field of :class:`Meta`: the text given, or, for a quantity made by
    :meth:`Meta.of` or :meth:`Meta.entry`, the plain printing of its Name, made on first
    read (a wide model has hundreds of thousands of entries, most of whose labels nothing
    prints; Meta.of keeps the Name it was given until then). A data-class field whose
    default is a descriptor reads and writes through it (dataclasses docs,
    "Descriptor-typed fields"). A weight's entry is a :class:`WeightEntry`, labelled
    alike."""

    NAMED = object()  # the label a Meta.of gets until it is read: the plain printing of the Name given

    def __get__(self, meta, owner=None):
        if meta is None:
            return None  # the field's default (a scratch value's label is always given)
        label = meta.__dict__["_label"]
        if label is _Label.NAMED:
            from .printing import label_of, text

            named = meta.__dict__.pop("_named", None)
            if type(named) is tuple:  # (Meta.entries: symbol, primes, written head; the row and column are the entry's)
                symbol, primes, head = named
                label = label_of(Fields(symbol, primes=primes, position=meta.position, index=meta.index, head=head))
            else:
                label = text(named)
            meta.__dict__["_label"] = label
        return label

    def __set__(self, meta, value):
        meta.__dict__["_label"] = value


@dataclass(eq=False)
class Meta:
    """What a quantity is called: JSON ``symbol``, ``block``, ``head``, ``position``
    (1-based row), ``index`` (1-based column or a token piece), ``norm`` (which LayerNorm:
    ln1, ln2, final), ``param`` (for leaves: E, P, W_Q, ...), ``token`` (the piece of
    an E row or a logit), and ``label``, the chapter's
    name for it (``s_{5,3}``). Quantities with ``symbol`` None are scratch values."""

    symbol: str | None
    label: str = _Label()
    block: int | None = None
    head: int | None = None
    position: int | None = None
    index: int | str | None = None
    norm: str | None = None
    param: str | None = None
    token: str | None = None

    @cached_property
    def name(self) -> Name | None:
        """The quantity's :class:`~derive.name.Name` (its fields: symbol, primes, position,
        index, head, block, norm, ...), computed from these fields (``u2`` is u', a
        statistic's ``norm`` gives mu, mu', mu^f); None for a scratch value. Its plain
        printing is the label."""
        return name_of(self)

    @classmethod
    def of(cls, name: Name, **context) -> "Meta":
        """The metadata of a quantity called ``name``: its JSON symbol, its label (the
        Name's plain printing), its block, position, index and norm from the Name, and the
        ``context`` the name does not write (``head`` of a score, ``position`` of a logit,
        ``norm="ln1"`` of a statistic before attention, ``token``) as keyword fields.
        ``Meta.of(Name("s", position=5, index=3), head=1, block=1)`` is s_{5,3} of head 1.

        Raises:
            TypeError: for a keyword that is not a field of Meta.
        """
        f = name.fields
        fields = dict(block=f.block, head=f.head, position=f.position, norm=f.norm,
                      index=f.index.text if isinstance(f.index, Piece) else f.index,
                      param=f.symbol if f.param else None)
        meta = cls(json_symbol(name), _Label.NAMED, **{**fields, **context})
        meta.__dict__["_named"] = name  # the label is its printing, made on first read
        return meta

    @classmethod
    def entry(cls, symbol: str, row: int, column: int, primes: int = 0, written_head: int | None = None,
              **context) -> "Meta":
        """The metadata of entry (row, column) (1-based) of a named array: the same as
        ``Meta.of(Name(symbol, primes=primes, position=row, index=column, head=written_head),
        **context)``, without building the Name until the label is read (see :meth:`entries`).

        Raises:
            TypeError: for a keyword that is not a field of Meta.
        """
        return cls.entries(symbol, primes, written_head, **context)(row - 1, column - 1)

    @classmethod
    def entries(cls, symbol: str, primes: int = 0, written_head: int | None = None,
                **context) -> Callable[[int, int], "Meta"]:
        """The metadata maker of a named array: ``(t, c)`` (0-based) gives
        :meth:`entry` ``(symbol, t + 1, c + 1, primes, written_head, **context)``. Each
        entry's fields are one copy of a dictionary made here, its row and column set in
        it, and its Name (made when the label is first read) is described by a tuple every
        entry shares: 1 us an entry, where its fields one by one and a ``partial`` of its
        Name took 9 us (254,000 entries at d_model 768; crane names 40,000).

        Raises:
            TypeError: for a keyword that is not a field of Meta.
        """
        if not context.keys() <= _META_FIELDS:
            raise TypeError(f"Meta.entry got fields Meta does not have: {sorted(context.keys() - _META_FIELDS)}")
        template = dict(symbol=json_symbol_of(symbol, primes), _label=_Label.NAMED, block=None, head=written_head,
                        position=None, index=None, norm=None, param=None, token=None,
                        _named=(symbol, primes, written_head))
        template.update(context)
        where = {k: context[k] for k in ("position", "index") if k in context}  # (given: they stand)
        new = cls.__new__

        def make(t: int, c: int) -> "Meta":
            meta = new(cls)
            fields = template.copy()
            fields["position"], fields["index"] = t + 1, c + 1
            if where:
                fields.update(where)
            meta.__dict__ = fields
            return meta

        return make


_META_FIELDS = frozenset(f.name for f in data_fields(Meta))


class Weights:
    """One weight matrix (or vector, one row) of the case as trainable leaves: the entries
    (r, c) (0-based) are the node ids ``start + r cols + c``, each a :class:`WeightEntry`.

    Attributes:
        param: the weight's name (E, W_Q, b_1, ln1_gain...). block: its block (None for E,
            P, W_U). rows, cols: its shape. start: the id of entry (0, 0).
        heads, tokens, labels: what is known of single entries, by offset k = r cols + c:
            the head whose slice a hand-set per-head weight is, the piece an E row
            embeds, and the labels printed so far (made on first read).
        factor: the values as one :class:`~derive.kernels.Factor` (made by the first
            product that reads the whole matrix, :func:`derive.kernels.weight_factor`).
        ints, sizes: the values as integers over a power of two, ``(Z, d)`` (a numpy
            int64 array or an fmpz_mat, and an fmpz: :meth:`derive.weights.FileMatrix.integers`), and their absolute values as a numpy float64 array
            (each exactly its value's), when the case read them so (a safetensors
            file's matrix), else None.

    Args:
        values: the entries, exact, row-major (rows x cols fmpq), or None when ``ints``
            gives them (they are then made when first read: :attr:`values`).
    """

    __slots__ = ("param", "block", "rows", "cols", "start", "_values", "heads", "tokens", "labels", "factor", "_exact",
                 "ints", "sizes")

    def __init__(self, param: str, block: int | None, rows: int, cols: int, start: int, values: list[fmpq] | None,
                 ints: tuple | None = None, sizes=None):
        self.param, self.block, self.rows, self.cols, self.start = param, block, rows, cols, start
        self._values, self.ints, self.sizes = values, ints, sizes
        self.heads: dict[int, int] = {}
        self.tokens: dict[int, str] = {}
        self.labels: dict[int, str] = {}
        self.factor = self._exact = None

    @property
    def values(self) -> list[fmpq]:
        """The entries, exact, row-major (rows x cols fmpq; from :meth:`exact` the first
        time when the case gave them as integers)."""
        if self._values is None:
            self._values = self.exact().entries()
        return self._values

    def exact(self) -> fmpq_mat:
        """The values as one fmpq_mat (rows x cols), made once."""
        if self._exact is None:
            if self._values is None:
                Z, d = self.ints
                self._exact = fmpq_mat(Z if type(Z) is fmpz_mat else fmpz_mat(Z.tolist())) / d
            else:
                self._exact = fmpq_mat(self.rows, self.cols, self._values)
        return self._exact


class _Own:
    """A field of one weight entry kept by its :class:`Weights` (a dict by offset, named
    after the field: ``head`` in ``heads``), so that every view of the entry reads it."""

    def __set_name__(self, owner, name):
        self.store = name + "s"

    def __get__(self, entry, owner=None):
        return self if entry is None else getattr(entry.weights, self.store).get(entry.k)

    def __set__(self, entry, value):
        getattr(entry.weights, self.store)[entry.k] = value


class WeightEntry:
    """Entry k (row-major offset) of a :class:`Weights`: the graph's node for it (a leaf:
    ``op`` None, no parents, ``leaf`` its exact value) and its metadata (``meta`` is the
    entry itself, with the fields of :class:`Meta`: symbol ``param``), without a Node, a
    Meta and their dictionaries for every entry of every matrix (a quarter of a million
    at d_model 128). What an entry holds of its own (its head, its token, its label once
    printed) is kept by its :class:`Weights`, so an entry is a view: two views of the
    same entry say the same."""

    __slots__ = ("weights", "k")
    op = None
    parents = ()
    symbol = "param"
    norm = None
    masked = False

    def __init__(self, weights: Weights, k: int):
        self.weights, self.k = weights, k

    @property
    def meta(self) -> "WeightEntry":
        """The entry itself (it has the fields of a :class:`Meta`)."""
        return self

    @property
    def leaf(self) -> fmpq:
        """The entry's exact value, as the case gives it."""
        return self.weights.values[self.k]

    @property
    def param(self) -> str:
        """The weight's name."""
        return self.weights.param

    @property
    def block(self) -> int | None:
        """The weight's block (None outside the blocks)."""
        return self.weights.block

    @property
    def position(self) -> int:
        """The 1-based row."""
        return self.k // self.weights.cols + 1

    @property
    def index(self) -> int:
        """The 1-based column."""
        return self.k % self.weights.cols + 1

    head = _Own()  # the head whose own slice a hand-set per-head weight's entry is (else None)
    token = _Own()  # the piece an entry of E's row embeds (else None)

    @property
    def name(self) -> Name:
        """The entry's :class:`~derive.name.Name`: W_{r,c} of its block (:func:`~derive.name.name_of`)."""
        return name_of(self)

    @property
    def label(self) -> str:
        """The chapter's name of the entry, printed (``(W_Q)_{1,2}``), made on first read."""
        labels = self.weights.labels
        if self.k not in labels:
            from .printing import text

            labels[self.k] = text(Name(self.param, param=True, position=self.position, index=self.index))
        return labels[self.k]


class Entries:
    """A run of nodes that one elementwise operation makes over an array (a head's e^s,
    its weights a = e^s / sum): node ``start + k`` is ``op`` applied to the node ids
    ``parents[k]``, entry ``where[k]`` = (t, c) (0-based) of the array, named ``meta(t, c)``
    (:meth:`Meta.entries`; a scratch value when ``meta`` is None). With ``op`` None the
    entries are leaves, each of the exact value ``leaf`` (the weights a causal mask sets
    to 0). ``masked``: the leaves stand for entries a mask hides (set to ``leaf``
    by :meth:`derive.array.Array.filled`, never computed). The graph's list holds this record at each of its ids, and a read of one gives an
    :class:`Entry` (as a weight's entries are :class:`WeightEntry` views): no Node and no
    Meta is made per entry until something reads it, and a pass evaluates the run in one
    comprehension (crane's attention is 25,000 such entries). ``symbol``: the entries' JSON
    symbol (None for scratch values); ``metas``: the metadata made so far, by k (kept, so
    that every read of an entry gets the same Meta)."""

    __slots__ = ("op", "start", "parents", "where", "meta", "metas", "symbol", "leaf", "masked")

    def __init__(self, op: Op | None, start: int, parents: list[tuple[int, ...]], where: list[tuple[int, int]],
                 meta: Callable[[int, int], "Meta"] | None, leaf: fmpq | None = None, masked: bool = False):
        self.op, self.start, self.parents, self.where, self.meta, self.leaf = op, start, parents, where, meta, leaf
        self.masked = masked
        self.metas: dict[int, Meta] = {}
        self.symbol = None if meta is None or not where else self.meta_of(0).symbol

    def __len__(self) -> int:
        return len(self.where)

    def meta_of(self, k: int) -> "Meta":
        """The metadata of entry k, made on first read."""
        meta = self.metas.get(k)
        if meta is None:
            meta = self.metas[k] = Meta(None, "scratch") if self.meta is None else self.meta(*self.where[k])
        return meta

    def values(self, values: list[Value], lo: int, hi: int, wanted: Set[int] | None, exact: Mapping[int, fmpq]) \
            -> list[Value | None]:
        """The values of the ids ``lo`` to ``hi - 1`` (members) from the pass's ``values``
        so far: each entry's operation on its parents' values (an exact rational given in
        ``exact`` taken instead; None for an id outside ``wanted``, when given), as
        :func:`derive.evaluate.forward` evaluates a node.

        Raises:
            NeedPrecision, Undefined: as the operation does, for some entry (which one:
                evaluate them one at a time)."""
        if self.op is None:
            return [None if wanted is not None and i not in wanted else self.leaf for i in range(lo, hi)]
        evaluate, start = self.op.eval, self.start
        if wanted is None and not exact:
            return [evaluate([values[p] for p in parents]) for parents in self.parents[lo - start:hi - start]]
        return [None if wanted is not None and i not in wanted else exact[i] if i in exact else
                evaluate([values[p] for p in self.parents[i - start]]) for i in range(lo, hi)]


class Entry:
    """Entry k of an :class:`Entries`: the graph's node for it, with a Node's fields
    (``op``, ``parents``, ``meta``, ``leaf``) read from the run."""

    __slots__ = ("entries", "k")

    def __init__(self, entries: Entries, k: int):
        self.entries, self.k = entries, k

    @property
    def op(self) -> Op | None:
        """The run's operation (None: a leaf)."""
        return self.entries.op

    @property
    def parents(self) -> tuple[int, ...]:
        """The ids the entry's operation reads, in order."""
        return self.entries.parents[self.k]

    @property
    def meta(self) -> "Meta":
        """The entry's metadata (made on first read, then kept)."""
        return self.entries.meta_of(self.k)

    @property
    def leaf(self) -> fmpq | None:
        """A leaf entry's exact value (None for an operation's)."""
        return self.entries.leaf

    @property
    def masked(self) -> bool:
        """Whether the entry is one a mask hides (a leaf set to its value, never computed)."""
        return self.entries.masked


class Operands(Sequence):
    """The parents of an entry of a matrix product ``x_t W (+ b)`` as
    :class:`Dot` takes them: x_t's n ids, (b_c,), column c of W's n ids, (1,), read from
    the row's and the column's id lists, which every entry of that row or column shares
    (a tuple of 2n + 2 ids per entry is 50 MB at d_model 128). A sequence of ints like
    the tuple it stands for (equal to it, hashed alike)."""

    __slots__ = ("x", "b", "w", "one")

    def __init__(self, x: list[int], b: tuple[int, ...], w: list[int], one: tuple[int, ...]):
        self.x, self.b, self.w, self.one = x, b, w, one

    def __len__(self) -> int:
        return len(self.x) + len(self.b) + len(self.w) + len(self.one)

    def __iter__(self):
        return chain(self.x, self.b, self.w, self.one)

    def __getitem__(self, i):
        if isinstance(i, slice) or not -len(self) <= i < len(self):
            return tuple(self)[i]
        i %= len(self)
        for part in (self.x, self.b, self.w, self.one):
            if i < len(part):
                return part[i]
            i -= len(part)

    def __eq__(self, other) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, Operands) else other)

    def __hash__(self) -> int:
        return hash(tuple(self))


def _parts(parents, shared: set[int]) -> list:
    """A node's parents in parts: an entry of a matrix product's (:class:`Operands`) as its
    row's ids, its column's ids and the bias terms, leaving out a row or column whose list
    (shared by the entries that read it) is already in ``shared`` (its ids already met),
    which it then joins; any other node's parents as one part."""
    if type(parents) is not Operands:
        return [parents]
    parts = [parents.b, parents.one]
    for part in (parents.x, parents.w):
        if id(part) not in shared:
            shared.add(id(part))
            parts.append(part)
    return parts


@dataclass(slots=True, eq=False)
class Node:
    """One quantity: ``op`` applied to ``parents`` (node ids: a tuple, or the
    :class:`Operands` of a matrix product's entry), or a leaf when ``op`` is None (a given
    input or a constant; a given logit, with ``meta.param`` set, is trainable). A weight's
    entry is a :class:`WeightEntry` instead, with the same fields."""

    op: Op | None
    parents: tuple[int, ...]
    meta: Meta
    leaf: fmpq | None = None
    masked = False  # (not a field: a node is no masked entry; an Entry of a masked run is)


class Nodes(Sequence):
    """The graph's nodes by id: a :class:`Node` per operation or leaf, and a weight's
    entries as :class:`WeightEntry` views made when read (the list holds the
    :class:`Weights` itself at each of its ids: 8 bytes an entry, not an object each,
    7.1 million at d_model 768). Iterating gives the views too. ``items`` is that list:
    a loop over ids that are no weight's entries (:meth:`Graph.operations`) reads it
    directly, without a Python call per read."""

    __slots__ = ("items",)

    def __init__(self):
        self.items: list = []

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i):
        if type(i) is slice:
            return [self[k] for k in range(*i.indices(len(self.items)))]
        item = self.items[i]
        if type(item) is Weights:
            return WeightEntry(item, (i if i >= 0 else i + len(self.items)) - item.start)
        if type(item) is Entries:
            return Entry(item, (i if i >= 0 else i + len(self.items)) - item.start)
        return item

    def __iter__(self):
        for i, item in enumerate(self.items):
            kind = type(item)
            yield WeightEntry(item, i - item.start) if kind is Weights else Entry(item, i - item.start) \
                if kind is Entries else item

    def append(self, node: "Node") -> None:
        """Add a node at the next id."""
        self.items.append(node)

    def add_weights(self, w: Weights) -> None:
        """Give the ids from ``w.start`` to ``w``'s entries (``w.start`` is the next id)."""
        self.items += [w] * (w.rows * w.cols)

    def add_entries(self, run: Entries) -> None:
        """Give the ids from ``run.start`` to ``run``'s entries (``run.start`` is the next id)."""
        self.items += [run] * len(run)


@dataclass(eq=False, repr=False)
class Graph:
    """The derivation DAG; node ids are list indices in creation (topological) order.
    ``kernels`` maps the first id of a run of Dot nodes that form one matrix product to
    its :class:`derive.kernels.MatMul` (see :meth:`add_kernel`); ``weights`` lists the
    case's weights (:class:`Weights`, see :meth:`weight`), whose entries are the nodes
    from their ``start``."""

    nodes: Nodes = field(default_factory=Nodes)
    _one: int | None = field(default=None, repr=False)
    kernels: dict = field(default_factory=dict, repr=False)  # start id -> kernels.MatMul
    weights: list[Weights] = field(default_factory=list, repr=False)  # the case's weights, in order
    _loose: list[int] = field(default_factory=list, repr=False)  # the trainable leaves outside the weights
    _read_whole: tuple | None = field(default=None, repr=False)  # (nodes then, read_whole()), made once
    _first: tuple | None = field(default=None, repr=False)  # (nodes then, first_readers()), made once
    _ancestor_operations: dict = field(default_factory=dict, repr=False)  # node -> (nodes then, ancestor_operations)
    # block -> query heads per key/value head, where they share keys and values (grouped-query attention,
    # kv_heads): the k, v (and k~) of key/value head g carry head g, which query heads (g-1) group + 1 ... read
    head_groups: dict[int, int] = field(default_factory=dict, repr=False)

    def add_kernel(self, group) -> None:
        """Record that the Dot nodes ``group.ids`` (contiguous, from ``group.start``) are
        one matrix product, a :class:`derive.kernels.MatMul` the evaluation computes in one
        call (the nodes stay as they are)."""
        self.kernels[group.start] = group

    def add(self, op: Op | None, parents, meta: Meta, leaf: fmpq | None = None) -> int:
        """Append a node and return its id."""
        items = self.nodes.items
        items.append(Node(op, parents if type(parents) is Operands else tuple(parents), meta, leaf))
        return len(items) - 1

    def leaf(self, value: Fraction, meta: Meta) -> int:
        """A given input or a constant with an exact value (a weight of the case is a
        :meth:`weight`; a leaf with ``meta.param`` set, given logits, is trainable too)."""
        i = self.add(None, (), meta, to_fmpq(value))
        if meta.param:
            self._loose.append(i)
        return i

    def weight(self, param: str, matrix: list[list[Fraction]], block: int | None = None) -> list[range]:
        """Add a weight matrix (rows x cols; a vector is one row) as trainable leaves, one
        :class:`Weights` whose entries are :class:`WeightEntry` nodes; returns their ids,
        same shape (a range per row). Entry (r, c)'s metadata: ``param`` = name, ``position`` = r + 1,
        ``index`` = c + 1, ``block``. ``matrix``: rows of exact numbers, or a matrix with
        ``integers()`` and ``floats()`` (a safetensors file's, :class:`derive.weights.FileMatrix`),
        read whole.

        Raises:
            ValueError: for rows of different lengths.
        """
        whole = getattr(matrix, "integers", None)  # a safetensors file's matrix: all at once, no Fraction per entry
        start = len(self.nodes)
        if whole is not None:
            Z, d = whole()
            rows, cols = (Z.nrows(), Z.ncols()) if type(Z) is fmpz_mat else Z.shape
            w = Weights(param, block, rows, cols, start, None, (Z, d), abs(matrix.floats()))
        else:
            rows, cols = len(matrix), len(matrix[0]) if matrix else 0
            if any(len(row) != cols for row in matrix):
                raise ValueError(f"the rows of {param} differ in length")
            # (each distinct number converted once: the case reader gives one object per number it read, and a
            # wide case's hundreds of thousands of entries share a few hundred; each object converted is kept
            # alive here, so that its id stands for it until the end)
            known: dict[int, fmpq] = {}
            converted = []

            def convert(v) -> fmpq:
                converted.append(v)
                q = known[id(v)] = to_fmpq(v)
                return q
            look = known.get
            values = [q if (q := look(id(v))) is not None else convert(v) for row in matrix for v in row]
            w = Weights(param, block, rows, cols, start, values)
        self.weights.append(w)
        self.nodes.add_weights(w)
        ids = range(start, start + rows * cols)
        return [ids[r * cols:(r + 1) * cols] for r in range(rows)]

    def one(self) -> int:
        """The constant leaf 1 (added once): a bias enters a dot product as ``b * 1``."""
        if self._one is None:
            self._one = self.leaf(Fraction(1), Meta(None, "1"))
        return self._one

    def key_head(self, block: int | None, head: int) -> int:
        """The key/value head that query head ``head`` (1-based) of ``block`` reads: under
        grouped-query attention (:attr:`head_groups`, g query heads per key/value head)
        head (h - 1) // g + 1 (of 4 heads sharing 2, heads 3 and 4 read key/value head 2);
        else ``head`` itself."""
        return (head - 1) // self.head_groups.get(block, 1) + 1

    def add_entries(self, op: Op | None, parents: list[tuple[int, ...]], where: list[tuple[int, int]],
                    meta: Callable[[int, int], Meta] | None, leaf: fmpq | None = None, masked: bool = False) -> range:
        """Append the nodes of one elementwise operation over an array, entry k being ``op``
        of ``parents[k]`` at (t, c) = ``where[k]``, named ``meta(t, c)`` (scratch values when
        None), or leaves of value ``leaf`` when ``op`` is None (``masked``: entries a mask
        hides), as one :class:`Entries`; returns their ids."""
        run = Entries(op, len(self.nodes), parents, where, meta, leaf, masked)
        self.nodes.add_entries(run)
        return range(run.start, run.start + len(run))

    def scratch(self, op: Op, parents, label: str) -> int:
        """An unnamed intermediate (not exported)."""
        return self.add(op, parents, Meta(None, label))

    def operations(self) -> list[int]:
        """The ids of every node but the weights' entries (whose only readers are here),
        in order: what a scan for the readers of a weight needs to look at."""
        ids, at = [], 0
        for w in self.weights:
            ids += range(at, w.start)
            at = w.start + w.rows * w.cols
        return ids + list(range(at, len(self.nodes)))

    def symbols(self) -> tuple[list[int], list[str | None]]:
        """:meth:`operations` and the JSON symbol of each (None for a scratch value), a
        run's read once for all its entries."""
        ids, symbols = self.operations(), []
        for _, item in self._walk(ids):
            if type(item) is Entries:
                symbols += repeat(item.symbol, len(item))
            else:
                symbols.append(item.meta.symbol)
        return ids, symbols

    def _walk(self, ids: list[int] | None = None, backwards: bool = False) -> Iterator[tuple[int, "Node | Entries"]]:
        """``(id, node)`` for each of :meth:`operations` (``ids``, when given) in order (or
        last first), a run once, ``(its first id, the run)`` (``(its last id, the run)``
        backwards: its ids are contiguous)."""
        ids, items = self.operations() if ids is None else ids, self.nodes.items
        k, step = (len(ids) - 1, -1) if backwards else (0, 1)
        while 0 <= k < len(ids):
            item = items[ids[k]]
            yield ids[k], item
            k += step * (len(item) if type(item) is Entries else 1)

    def param_leaves(self) -> list[int]:
        """Ids of the trainable leaves (the weights' entries, and given logits), in order."""
        ids = list(chain.from_iterable(range(w.start, w.start + w.rows * w.cols) for w in self.weights))
        return sorted(ids + self._loose) if self._loose else ids

    def loose_params(self) -> list[int]:
        """Ids of the trainable leaves that are no weight's entries (given logits), in order."""
        return list(self._loose)

    def ancestors(self, node: int | tuple[int, ...], stop: Set[int] = frozenset()) -> set[int]:
        """Ids of ``node`` (or of each node of a tuple) and of every node it depends on. A
        weight outside this set has derivative exactly 0 with respect to ``node`` (no path
        reaches it): the only leaves reverse mode can move. With ``stop``, the nodes it
        names are in the set but what they depend on is not (unless another path reaches
        it): a reader who takes those values from the page (:class:`derive.byhand.ByHand`)
        needs nothing behind them."""
        reached = self._reached(node, stop, True)
        if not stop:  # (its operations, which a pass or reverse mode for node visits: not searched for again)
            self._ancestor_operations[node] = (len(self.nodes), [i for i in self.operations() if i in reached])
        return reached

    def _reached(self, node: int | tuple[int, ...], stop: Set[int], columns: bool) -> set[int]:
        """:meth:`ancestors`; without ``columns``, leaving out the entries of a weight that
        a matrix product reads as a column (a range of its ids: 7 million at d_model 768)."""
        todo = list(node) if type(node) is tuple else [node]
        seen, shared = set(todo), set()
        items = self.nodes.items
        while todo:
            fresh = set()
            i = todo.pop()
            item = items[i]  # (a node's parents, read without a view: a run's entry's, a weight's entry's none)
            kind = type(item)
            parents = item.parents if kind is Node else item.parents[i - item.start] if kind is Entries else ()
            for part in _parts(parents, shared):
                if type(part) is range:  # a weight's column: leaves, with no parents to visit
                    if columns:
                        seen.update(part)
                else:
                    fresh |= set(part) - seen  # one set operation per part, not per parent
            seen |= fresh
            todo += fresh - stop if stop else fresh
        return seen

    def ancestor_operations(self, node: int | tuple[int, ...]) -> list[int]:
        """The ids of :meth:`ancestors` of ``node`` (or of each node of a tuple) but the
        weights' entries, in order, made once per node and graph (do not change the list):
        the nodes a pass for ``node`` evaluates, and reverse mode visits, one by one (a
        wide model's millions of weight entries are neither kept nor visited)."""
        known = self._ancestor_operations.get(node)
        if known is None or known[0] != len(self.nodes):
            # (a node of the tuple whose ancestors are known already, L among what the page prints after the
            # step: the search stops at them, every one of whose own ancestors is among them)
            behind = next((self._ancestor_operations[i][1] for i in (node if type(node) is tuple else ())
                           if self._ancestor_operations.get(i, (None,))[0] == len(self.nodes)), [])
            stop = set(behind)
            reached = self._reached(node, stop, False) | stop
            known = self._ancestor_operations[node] = (len(self.nodes), [i for i in self.operations() if i in reached])
        return known[1]

    def read_whole(self) -> set[int]:
        """The ``start`` of every weight that only matrix-product kernels read, each as one
        matrix (:class:`derive.kernels.MatMul` with that ``weight``): no node reads one of
        its entries one by one, so a pass with the kernels needs no value of each entry
        (made once per graph, when it is complete)."""
        if self._read_whole is None or self._read_whole[0] != len(self.nodes):
            whole = {group.weight.start for group in self.kernels.values() if group.weight is not None}
            inside = sorted((group.start, group.start + len(group.ids)) for group in self.kernels.values())
            starts = [start for start, _ in inside]
            _, _, alone = self.first_readers()
            whole -= alone.keys()  # (an entry read one by one)
            weight_starts = [w.start for w in self.weights]
            for i, node in self._walk():  # a product's entry that no kernel computes reads its column itself
                parents = node.parents  # (a run's: a list; a kernel computes a product whose entries are a run)
                if type(parents) is Operands and type(parents.w) is range:
                    k = bisect_right(starts, i) - 1
                    if k < 0 or i >= inside[k][1]:
                        whole.discard(weight_starts[bisect_right(weight_starts, parents.w.start) - 1])
            self._read_whole = (len(self.nodes), whole)
        return self._read_whole[1]

    def first_readers(self) -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
        """The first node reading each weight entry (the order in which a page meets the
        weights): ``(by_id, by_weight, alone)``, by_id: for every weight entry some node
        reads one by one, the id of the first such node; by_weight: for every weight some matrix
        product reads as one matrix (:class:`Operands` whose column is a range of its
        ids), its ``start`` and the first such product's entry (not entry by entry: 2.4
        million at d_model 768); alone: for every weight one of whose entries some node
        reads one by one, its ``start`` and the first such node. Made once per graph, when
        it is complete."""
        if self._first is not None and self._first[0] == len(self.nodes):
            return self._first[1]
        first: dict[int, int] = {}
        whole: dict[int, int] = {}
        shared: dict[int, tuple[int, list[int]]] = {}  # a row's or a column's id list: its first reader
        starts = {w.start + c: w.start for w in self.weights for c in range(w.cols)}  # column c's first id
        items = self.nodes.items
        def products(entries: list[tuple[int, Operands]]) -> None:  # (entries of matrix products, last first)
            shared.update({id(operands.x): (i, operands.x) for i, operands in entries})
            columns = [type(operands.w) is range and operands.w.start in starts for _, operands in entries]
            whole.update({starts[operands.w.start]: i for (i, operands), column in zip(entries, columns) if column})
            shared.update({id(operands.w): (i, operands.w) for (i, operands), column in zip(entries, columns)
                           if not column})
            for i, operands in entries:
                if operands.b or operands.one:
                    first.update(dict.fromkeys(operands.b + operands.one, i))

        weight = bytearray(len(items))  # (1 at a weight's entry)
        for w in self.weights:
            weight[w.start:w.start + w.rows * w.cols] = b"\x01" * (w.rows * w.cols)

        def reads_weights(run: Entries) -> bool:  # (a product of activations by activations (q k^T, a v) reads none)
            kernel = self.kernels.get(run.start)
            if kernel is None or kernel.weight is not None or kernel.bias is not None:
                return True
            return any(weight[i] for ids in (kernel.rows, kernel.cols) for line in ids for i in line if i is not None)

        for i, item in self._walk(backwards=True):  # backwards, so the first reader is written last
            if type(item) is Entries:  # (a run, whole, from its last entry)
                if type(item.parents[0]) is Operands:
                    if reads_weights(item):
                        products(list(zip(range(i, item.start - 1, -1), reversed(item.parents))))
                else:
                    read = list(chain.from_iterable(item.parents))
                    readers = list(chain.from_iterable(map(repeat, range(item.start, i + 1), map(len, item.parents))))
                    first.update(zip(reversed(read), reversed(readers)))
            elif type(item.parents) is Operands:
                products([(i, item.parents)])
            else:
                first.update(dict.fromkeys(item.parents, i))
        read_in_lists: dict[int, int] = {}  # (each id of a row or column: its first reader, in C, last first)
        for i, part in sorted(shared.values(), key=lambda item: item[0], reverse=True):
            if any(map(weight.__getitem__, part)):  # (a row or column of activations: no weight entry to find)
                read_in_lists.update(dict.fromkeys(part, i))
        for p in read_in_lists.keys() & first.keys():  # (read both ways: the first of the two)
            read_in_lists[p] = min(read_in_lists[p], first[p])
        first.update(read_in_lists)
        ids = sorted(first)  # (the weights' entries read one by one, found per weight by bisection)
        by_id, alone = {}, {}
        for w in self.weights:
            found = ids[bisect_left(ids, w.start):bisect_left(ids, w.start + w.rows * w.cols)]
            if found:
                readers = list(map(first.__getitem__, found))
                by_id.update(zip(found, readers))
                alone[w.start] = min(readers)
        self._first = (len(self.nodes), (by_id, whole, alone))
        return by_id, whole, alone
