"""What a reader gets by redoing each step from the printed, rounded numbers.

DESIGN.md, "Last-digit disagreements": a reader recomputes every quantity from the
printed (rounded) values of its inputs. For each quantity on the page, :class:`ByHand`
computes that reader's result exactly (rational arithmetic on the printed decimals; a
certified ball where the step is transcendental), rounds it under the run's format, and
compares it with the correctly rounded exact value. A :class:`Reading` records both
calculations; it is *noteworthy* when the last digits differ or when the reader's exact
result sits on a rounding tie (seed 000: from the printed f_5,
``z_roof = 0.4935 + 0.928 + 0 + 1.069 = 2.4905``, a tie at 3 places; the exact
2.49067... gives 2.491).

Inputs a reader does not see printed (scratch values such as x - mu, or a sum of e^s
that no table shows) are computed by the reader from their own inputs, unrounded. The
given numbers (the weights, printed by the weights, embedding and positions steps, and
given inputs) are taken as printed: exactly when a table prints them whole (``-0.5``;
crane's 0.484375 at 3 places), else with the digits the table shows (a float32 weight
0.300000011920928955078125 is 0.300 to the reader at 3 places); a constant no table
shows (the 1 a bias multiplies) is exact. With ``carry="printed"`` every step is
recomputed from the previous step's printed values (the way a student works on paper),
and the chain's drift from the exact values is reported cell by cell.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from flint import arb, ctx, fmpq

from . import formula as F
from .derivation import Derivation
from .evaluate import MAX_PREC, START_PREC, LeafValues, Pass, forward, progress
from .errors import NotDerived
from .graph import Dot, Lin, NeedPrecision, Operands, Undefined, Value, Weights, is_exact, to_fmpq
from .kernels import Factor, MatMul
from .name import Name, after_step, grad_of
from .printing import RichText, plain_text, text
from .rounding import Format, decade_fraction, format_value
from .steps import Ref

_UNSEEN = object()  # a node not yet in ByHand._taken
READER_PREC = 256  # bits for the reader's transcendental steps (e^s of a printed s), doubled up to
# MAX_PREC until every digit the note writes is certified (e^1000 has 435 digits before the point)
CARRY_MODES = ("exact", "printed")
PASSES = ("before", "after")  # the forward passes a reader recomputes: before the SGD step and after it


@dataclass(eq=False)
class Reading:
    """One quantity, recomputed by a reader from the printed inputs.

    Attributes:
        ref: the quantity; quantity: its metadata (:attr:`name` is its Name).
        sources: (metadata, printed number) of each input the reader takes from the page
            (:attr:`inputs` gives their Names).
        formula: the reader's arithmetic as a formula (:mod:`derive.formula`): the
            operation over the printed numbers, then its result (``Chain``), in the order
            the reader writes it.
        reader: the reader's result rounded under the run's format.
        correct: the correctly rounded exact value (what derive prints).
        exact_digits: the exact value with two more digits than printed (``2.49067…``).
        tie: the reader's exact result lies on a rounding boundary (half modes).
        value: the reader's unrounded result (fmpq, or a ball for a transcendental step).
        remark: words after the calculation (`` (not trained)``), or empty.
        own: the Names of the values the formula writes that no table prints, which the
            reader works out from the printed ones, unrounded (``e^z_j after the step``: a
            Name whose index is ``j`` stands for a row of them), said with the formula.
    """

    ref: Ref
    quantity: object  # the node's Meta, or the Name itself (its Name is computed when asked)
    sources: list  # (Meta or Name, formula) of each input the reader takes from the page
    formula: F.Node
    reader: str
    correct: str
    exact_digits: str
    tie: bool
    value: Value = None
    remark: str = ""
    own: tuple = ()

    @property
    def name(self) -> Name:
        """The quantity's :class:`~derive.name.Name`."""
        return _name(self.quantity)

    @property
    def inputs(self) -> list[tuple[Name, F.Node]]:
        """(Name, printed number) of each input the reader takes from the page."""
        return [(_name(q), e) for q, e in self.sources]

    @property
    def label(self) -> str:
        """The quantity's name in the plain notation."""
        return text(self.name)

    @property
    def calculation(self) -> str:
        """The reader's arithmetic in the plain notation, ending in its unrounded result."""
        return text(self.formula) + self.remark

    @property
    def differs(self) -> bool:
        """The reader's last digit is not the correct one."""
        return self.reader != self.correct

    @property
    def noteworthy(self) -> bool:
        """Worth a note under the table: a different last digit, or a tie."""
        return self.differs or self.tie

    def note_parts(self) -> RichText:
        """The note under the table as rich text (prose and formulas): both calculations
        and why they differ."""
        parts: RichText = [self.name, ": ", *self.whence(), ", ", self.formula]
        if self.remark:
            parts.append(self.remark)
        return parts + self._outcome() + ["."]

    def _outcome(self) -> RichText:
        """After the reader's result: how it rounds (a tie, another digit) and how the exact
        value rounds."""
        if self.tie:
            parts: RichText = [", exactly on a tie at this rounding, which gives ", printed(self.reader)]
        elif self.differs:
            parts = [", which rounds to ", printed(self.reader)]
        else:
            parts = []
        return parts + ["; the exact value ", printed(self.exact_digits), " rounds to ", printed(self.correct)]

    def note(self) -> str:
        """The note in the plain notation (see :meth:`note_parts`)."""
        return plain_text(self.note_parts())

    def brief(self) -> str:
        """The note without its calculation, in the plain notation, for a message about the
        quantity: ``from the printed inputs: 2.4905, exactly on a tie at this rounding, which
        gives 2.491; the exact value 2.49067… rounds to 2.491``."""
        result = self.formula.args[-1] if isinstance(self.formula, F.Chain) else self.formula
        return plain_text([*self.whence(), ": ", result] + self._outcome())

    def whence(self) -> RichText:
        """Where the reader's numbers come from: ``from the printed inputs``, and the values
        the reader works out that no table prints (:attr:`own`), named: ``from the printed
        inputs and the reader's own unrounded e^z_j after the step (not printed)``."""
        if not self.own:
            return ["from the printed inputs"]
        names: RichText = [part for k, n in enumerate(self.own) for part in ([", "] if k else []) + [n]]
        return ["from the printed inputs and the reader's own unrounded ", *names, " (not printed)"]


@dataclass(eq=False)
class SumNote:
    """A softmax row whose printed weights (attention) or probabilities (p) do not add up
    to 1: ``row`` names it (a_{5,j}, or p) and ``where`` says which head (and block), in words."""

    row: Name
    where: str
    refs: list[Ref]
    terms: list[str]
    total: str

    @property
    def label(self) -> str:
        """The row's name and place in the plain notation."""
        return text(self.row) + self.where

    def note_parts(self) -> RichText:
        """The note as rich text: the printed terms and their sum."""
        what = "probabilities" if self.row.fields.symbol == "p" else "weights"
        return [self.row, self.where, f": the printed {what} add up to ",
                F.Chain(F.Terms(*[F.Dec(t) for t in self.terms]), F.Dec(self.total)),
                ", not 1: each is rounded on its own."]

    def note(self) -> str:
        """The note in the plain notation."""
        return plain_text(self.note_parts())


def _name(quantity) -> Name:
    """The Name of a node's metadata, or the Name itself."""
    return quantity if isinstance(quantity, Name) else quantity.name


def _among(ids: list[int], i: int) -> bool:
    """Whether ``i`` is in the sorted list ``ids`` (by bisection)."""
    k = bisect_left(ids, i)
    return k < len(ids) and ids[k] == i


def printed(digits: str) -> F.Node | str:
    """A number as printed (``-0.817``; ``2.49067…``, cut short; ``-7/16`` exact) as a
    formula; text that is not a number (``undecided``) stays words."""
    try:
        return F.Dec(digits, cut=digits.endswith("\u2026"))
    except ValueError:
        ratio = _RATIO.match(digits)
        return F.Rat(int(ratio[1]), int(ratio[2])) if ratio else digits


MAX_READ_EXPONENT = 100_000  # a printed decimal with a larger exponent is not read as a number
_RATIO = re.compile(r"(-?\d+)/(\d+)$")
_EXPONENT = re.compile(r"[eE]([+-]?\d+)$")


@lru_cache(maxsize=1 << 16)
def printed_fraction(text: str) -> Fraction:
    """The exact value of a printed decimal (Unicode minus and ``e`` notation allowed).

    Raises:
        ValueError: for text that is not a number (``undecided at 10^-3``), or a number
            whose exponent is beyond +-MAX_READ_EXPONENT (a softmax weight of e^-1e300
            printed as ``3.7e-307...``: its exact fraction would never be computed).
    """
    text = text.replace("\u2212", "-")
    exponent = _EXPONENT.search(text) if "e" in text or "E" in text else None
    if exponent is not None and (len(exponent[1]) > 7 or abs(int(exponent[1])) > MAX_READ_EXPONENT):
        raise ValueError(f"exponent beyond {MAX_READ_EXPONENT}")
    return Fraction(text)


def is_number(text: str | None) -> bool:
    """True when ``text`` is a printed number, False for None or ``undecided ...``."""
    if text is None:
        return False
    try:
        printed_fraction(text)
    except ValueError:
        return False
    return True


MAX_SUM_PLACES = 60  # a softmax sum note is written when its total has at most this many places
# (terms printed to 3 figures as 3.72e-434295 add up to 1 + 3.72e-434295: no reader sees that)


def exact_text(q: Fraction, max_places: int = 12) -> str:
    """A rational as a terminating decimal when it has one of at most ``max_places``
    places (``0.4935``), else ``p/q``."""
    return _ratio_text(q.numerator, q.denominator, max_places)


def _ratio_text(numerator: int, denominator: int, max_places: int = 12) -> str:
    """:func:`exact_text` of numerator/denominator (in lowest terms, denominator > 0),
    without building a Fraction (a reader's value is a python-flint fmpq)."""
    places = _places(denominator)
    if places is None or places > max_places:
        return f"{numerator}/{denominator}"
    digits = str(abs(numerator) * 10 ** places // denominator).rjust(places + 1, "0")
    body = digits[:-places] + "." + digits[-places:] if places else digits
    return ("-" if numerator < 0 else "") + body


def _places_of(q: Fraction) -> int | None:
    """The places a terminating decimal needs (the larger power of 2 or 5 in its
    denominator: 3/8 needs 3); None for any other rational. In O(log) divisions: a sum of
    probabilities of about 10^-434294 has a denominator of 1.4 million bits."""
    return _places(q.denominator)


def _places(den: int) -> int | None:
    """:func:`_places_of` of a rational with the denominator ``den`` (a small one looked
    up: a page's products of printed numbers and weights share a few dozen)."""
    return _small_places(den) if den.bit_length() <= 256 else _count_places(den)


@lru_cache(maxsize=4096)
def _small_places(den: int) -> int | None:
    return _count_places(den)


def _count_places(den: int) -> int | None:
    twos = (den & -den).bit_length() - 1
    den >>= twos
    powers = [5]  # 5, 5^2, 5^4, ... while they divide den
    while den % powers[-1] == 0:
        powers.append(powers[-1] ** 2)
    fives = 0
    for k in reversed(range(len(powers) - 1)):
        if den % powers[k] == 0:
            den, fives = den // powers[k], fives + 2 ** k
    return max(twos, fives) if den == 1 else None


def is_tie(q: Fraction, fmt: Format) -> bool:
    """True when the exact rational ``q`` lies on a rounding boundary of a half mode
    (its digit after the last printed place is exactly 5, nothing after)."""
    return _is_tie(q.numerator, q.denominator, fmt)


def _is_tie(numerator: int, denominator: int, fmt: Format) -> bool:
    """:func:`is_tie` of numerator/denominator (denominator > 0), in integers: the
    value scaled to the last printed place is k + 1/2 exactly when twice its remainder
    modulo 1 is 1."""
    if fmt.mode not in ("half-away", "half-even") or numerator == 0:
        return False
    places = fmt.places
    if places is None:
        places = fmt.sig - 1 - decade_fraction(Fraction(numerator, denominator))
    if places >= 0:
        numerator *= 10 ** places
    else:
        denominator *= 10 ** -places
    return 2 * (numerator % denominator) == denominator


def _decimal_at_places(fmt: Format) -> re.Pattern | None:
    """The text of a number printed in plain decimals at ``fmt.places`` (``−0.817``, and
    no scientific form), or None when the format counts significant figures."""
    if fmt.places is None:
        return None
    return re.compile(re.escape(fmt.minus) + r"?\d+" + (rf"\.\d{{{fmt.places}}}" if fmt.places else ""))


class _Leaves:
    """The leaves outside the weights as :func:`derive.evaluate.forward` reads them
    (``others.get(i, default)``): each one's value from ``given`` (:meth:`ByHand._given_value`)."""

    def __init__(self, given):
        self._given = given

    def get(self, node_id: int, default=None) -> Value:
        return self._given(node_id)[0]


class _Read:
    """``values[i]``: the value ``read(i)`` of node i, read as :meth:`derive.kernels.MatMul.forward`
    reads a list of values by node id."""

    __slots__ = ("read",)

    def __init__(self, read):
        self.read = read

    def __getitem__(self, node_id: int) -> Value:
        return self.read(node_id)


def logit_gradient_of(derivation: Derivation, ref: Ref) -> tuple[Ref, int] | None:
    """For dL/dz_i of a case that starts from logits (its trained quantity, phase ``grad``),
    p_i and y_i (1 for the target's piece, else 0); None for any other quantity, or at
    T = 0 (no softmax to differentiate)."""
    case, outputs = derivation.case, derivation.outputs
    if ref.phase != "grad" or case.logits is None or ref.id not in outputs["z"] or not case.conventions.temperature:
        return None
    c = outputs["z"].index(ref.id)
    return Ref("before", outputs["p"][c]), int(c == case.target)


def logit_gradient(p: F.Node, y: int, derivation: Derivation) -> F.Node:
    """dL/dz_i = (p_i - y_i) / T, over ln 2 in bits, written over ``p`` (p_i as printed, or
    its exact digits): the derivative of the softmax cross-entropy with temperature T
    (Hinton et al. 2015, eq. 2), as the gradient's table of :func:`rules.training._logit_steps`
    writes it."""
    conventions = derivation.case.conventions
    formula = F.Over(F.Group(F.Terms(p, F.Neg(F.number(y)))), F.number(conventions.temperature))
    return F.Over(formula, F.ln(2)) if conventions.loss_log == "2" else formula


class ByHand:
    """The reader's recomputation of the quantities printed on a page.

    Args:
        derivation: the derived case.
        fmt: the run's format (places or significant figures, mode).
        printed: the correctly rounded text of every quantity on the page, by ref (what
            :class:`~derive.cells.Printer` computed); these are the reader's inputs.
        carry: ``exact`` (each step from unrounded parents, the seed's way; the default)
            or ``printed`` (each step from the previous step's printed values).
        whole: the numbers a table prints as they are, by Ref, with that text (a given
            weight that fits the places plus :data:`~derive.rounding.GIVEN_EXTRA_PLACES`,
            ``-0.5``, ``0.484375``, and a sum of them, x_t = E[id] + P_t, ``0.5625``): the
            reader takes them exactly, wherever else a table prints them rounded, and none
            is worth a note (printed exactly, it has no last digit to explain); another
            number, as ``printed`` rounds it.
        phase: the forward pass whose quantities this reader recomputes, ``before`` the SGD
            step (the default; also the step itself, phase ``updated``) or ``after`` it, where
            a weight is taken as the SGD step's table prints it after the step. Either reader
            hands a quantity of the other pass to the other's (:meth:`reading`), made when
            first asked, so one ByHand reads both passes with the same code.

    Raises:
        ValueError: for an unknown carry mode or pass.
    """

    def __init__(self, derivation: Derivation, fmt: Format, printed: dict[Ref, str], carry: str = "exact",
                 whole: dict[Ref, str] | None = None, phase: str = "before", passes: dict[str, ByHand] | None = None):
        if carry not in CARRY_MODES:
            raise ValueError(f"unknown carry mode {carry!r}; expected one of {', '.join(CARRY_MODES)}")
        if phase not in PASSES:
            raise ValueError(f"unknown pass {phase!r}; expected one of {', '.join(PASSES)}")
        self.derivation = derivation
        self.graph = derivation.graph
        self.fmt = fmt
        self.printed = printed
        self.carry = carry
        self.whole = whole or {}
        self.phase = phase
        self._passes = passes if passes is not None else {}  # the reader of each pass, shared by both
        self._passes[phase] = self
        self._givens: dict[int, tuple] = {}
        self._prec = READER_PREC  # the reader's working precision (bits) for the current reading
        self._raw: dict[tuple[int, int], Value] = {}
        self._inputs: dict[tuple[int, int], tuple] = {}  # (precision, node) -> _input
        self._owns: dict[tuple[int, int], tuple] = {}  # (precision, node) -> the unprinted nodes its _input writes
        self._taken: dict[int, Value | None] = {}  # the value a reader takes from the page (None: computes it)
        self._sizes: dict[tuple, int] | None = None  # the softmax rows' sizes (:meth:`_row_sizes`)
        self._chain: dict[int, str] | None = None
        self._exprs: dict[tuple[int, int], F.Node] = {}  # an exact reader's value (p, q) -> its number
        self._shared: dict[tuple[int, int], tuple] = {}  # (precision, id of a row's or column's ids) -> values
        self._kernel_starts = sorted(self.graph.kernels)  # the first ids of the matrix products (:meth:`_kernel_of`)
        self._kernel_ends = [start + len(self.graph.kernels[start].ids) for start in self._kernel_starts]
        self._products: dict[tuple[int, int], list | None] = {}  # (precision, kernel start) -> its entries' values
        self._weights: dict[int, Factor] = {}  # a weight's start -> its values as the reader takes them
        self._intervals: dict[str, tuple | None] = {}  # a printed text -> (lo, hi) (see _rounds_as_printed)
        self._plain = _decimal_at_places(fmt)
        self._page_ids: frozenset[int] | None = None  # the nodes of this pass printed on the page (:meth:`_make_in_order`)
        self._passes_made: dict[int, Pass | None] = {}  # precision -> the reader's pass (:meth:`_reader_pass`)

    # ------------------------------------------------------------------ reader inputs
    def _input_value(self, node_id: int) -> Value:
        """The value of :meth:`_input`, without its formula (which costs far more). A
        leaf's or a printed value is looked up once per node (crane's readings ask 485,000
        times for about 20,000 nodes); the reader's own unrounded value, once per node and
        precision (:meth:`_raw_value`)."""
        try:
            value = self._taken[node_id]
        except KeyError:
            node = self.graph.nodes[node_id]
            if node.op is None:
                value = self._given_value(node_id)[0]
            else:
                shown = self._shown(node_id)
                value = None if shown is None else fmpq(shown.numerator, shown.denominator)
            self._taken[node_id] = value
        return self._raw_value(node_id) if value is None else value

    def _input_values(self, parents) -> list[Value]:
        """:meth:`_input_value` of each of ``parents``, the values already taken looked up
        here (a reading of crane's q asks for 32 parents, most of them taken before). A
        matrix product's entry (:class:`~derive.graph.Operands`) takes its row's and its
        column's values as listed once per precision for every entry that shares them
        (crane's x_t W_Q: a row read by 8 entries, a column by 64)."""
        if type(parents) is not Operands:
            return self._values_of(parents)
        return self._shared_values(parents.x) + self._values_of(parents.b) + self._shared_values(parents.w) \
            + self._values_of(parents.one)

    def _values_of(self, parents) -> list[Value]:
        taken, out = self._taken, []
        for p in parents:
            value = taken.get(p, _UNSEEN)
            out.append(self._input_value(p) if value is _UNSEEN or value is None else value)
        return out

    def _shared_values(self, part: list[int]) -> list[Value]:
        """:meth:`_values_of` a row's or a column's ids, a list the graph shares among the
        entries of a matrix product, made once per list and precision."""
        known = self._shared.get((self._prec, id(part)))
        if known is None or known[0] is not part:
            known = self._shared[self._prec, id(part)] = (part, self._values_of(part))
        return known[1]

    def _input(self, node_id: int) -> tuple[Value, F.Node, object]:
        """What the reader uses for a parent, as (value, formula, source): the printed value
        when it is on the page, the exact weight for a leaf, else the reader's own unrounded
        computation (written out when it is short); ``source`` is the metadata of a parent
        the reader takes from the page (an operation's), None for a leaf (a weight, a given
        input, a constant: not a source). Built once per node and precision (a printed row
        enters every note of the next step's row)."""
        key = (self._prec, node_id)
        if key not in self._inputs:
            self._inputs[key] = self._build_input(node_id)
        return self._inputs[key]

    def _build_input(self, node_id: int) -> tuple[Value, F.Node, object]:
        """:meth:`_input`, built."""
        node = self.graph.nodes[node_id]
        if node.op is None:
            return *self._given(node_id), None
        shown = self._shown(node_id)
        if shown is not None:
            return fmpq(shown.numerator, shown.denominator), F.Dec(self._shown_text(node_id)), node.meta
        value = self._raw_value(node_id)
        if (node.meta.symbol is None and len(node.parents) <= 2) or (isinstance(node.op, Lin) and len(node.parents) <= 12):
            # a scratch step or an unprinted sum: the reader writes it out
            hand = node.op.hand([self._input(p)[1] for p in node.parents])
            self._owns[self._prec, node_id] = self._own_of(node.parents)
            return value, hand, node.meta
        self._owns[self._prec, node_id] = (node_id,)  # a value of the reader's own, written as a number
        return value, self._value_expr(value), node.meta

    def _own_of(self, parents) -> tuple:
        """The unprinted nodes whose values the inputs ``parents`` write as numbers (built by
        :meth:`_input` at this precision), each once, in order."""
        owns, prec = self._owns, self._prec
        return tuple(dict.fromkeys(i for p in parents for i in owns.get((prec, p), ())))

    def _own_names(self, node_ids) -> tuple:
        """The Names of ``node_ids`` (:meth:`_own_of`), a row of them with the same name
        but for the index written once with the index ``j`` (``e^z_j after the step``)."""
        names = [_name(self._named(self.graph.nodes[i].meta)) for i in node_ids]
        rows: dict = {}
        for n in names:
            if n is not None:
                rows.setdefault(n.but(index=None), []).append(n)
        return tuple(dict.fromkeys(group[0] if len(group) == 1 else row.but(index="j") for row, group in rows.items()))

    def _given(self, node_id: int) -> tuple[fmpq, F.Node]:
        """A leaf (a weight, a given input, a constant) as the reader takes it, as (value,
        formula): :meth:`_given_value`, written as printed (``F.Dec``) or as its exact
        number (``-1/2``).

        Raises:
            Undefined: as :meth:`_given_value`."""
        value, text = self._given_value(node_id)
        return value, F.Dec(text) if text is not None else F.number(Fraction(int(value.p), int(value.q)))

    def _given_value(self, node_id: int) -> tuple[fmpq, str | None]:
        """A leaf as the reader takes it, as (value, the printed text it is read from, or
        None when it is taken exactly): exactly when a table prints it whole (``-0.5``,
        ``0.484375``) or no table shows it (the 1 of a bias), else as printed (a float32
        weight rounded to the places). In the pass after the step, a weight the step moved
        is taken as the SGD step's table prints it (``E_{2,1}`` after the step: −0.499),
        any other as before it. Made once per leaf, without the formula (a weight's values
        fill a matrix for the pass after the step: :meth:`_reader_pass`).

        Raises:
            Undefined: a weight after the step that no table prints with digits and whose
                value is not exact: the reader has no number to take."""
        known = self._givens.get(node_id)
        if known is None:
            ref, value = self._leaf(node_id)
            exact = Fraction(int(value.p), int(value.q)) if is_exact(value) else None
            text = self.printed.get(ref) if ref is not None else None
            if ref not in self.whole and is_number(text) and printed_fraction(text) != exact:
                q = printed_fraction(text)
                known = fmpq(q.numerator, q.denominator), text.replace("\u2212", "-")
            elif exact is None:
                raise Undefined(f"{self.graph.nodes[node_id].meta.label} after the step is printed with no digits")
            else:
                known = value, None
            self._givens[node_id] = known
        return known

    def _leaf(self, node_id: int) -> tuple[Ref | None, Value]:
        """Where the page prints a leaf of this reader's pass (None: nowhere) and the leaf's
        exact value there: before the step, the weight as given; after it, the weight after
        the step, whose table (``updated``) prints every weight the step moves; one it does
        not move is printed where it is given."""
        leaf = self.graph.nodes[node_id].leaf
        if self.phase == "before":
            return Ref("before", node_id), leaf
        if Ref("updated", node_id) in self.printed:
            return Ref("updated", node_id), self.derivation.value(Ref("updated", node_id))
        value = self.derivation.value(Ref("after", node_id))
        return (Ref("before", node_id) if is_exact(value) and value == leaf else None), value

    def _shown(self, node_id: int) -> Fraction | None:
        """The value a reader sees printed for a node of this reader's pass, or None (not on
        the page, or printed as undecided: then the reader has no digits to use)."""
        text = self._shown_text(node_id, strict=False)
        return printed_fraction(text) if is_number(text) else None

    def _shown_text(self, node_id: int, strict: bool = True) -> str | None:
        """The text a reader sees printed for a node (with ``carry="printed"``, the
        student's chain of this reader's pass), with the ASCII minus; None when it is not
        on the page (a KeyError with ``strict``)."""
        if self.carry == "printed" and self.graph.nodes[node_id].meta.symbol:
            text = self.chain()[node_id]
        else:
            ref = Ref(self.phase, node_id)
            text = self.printed[ref] if strict else self.printed.get(ref)
            whole = self.whole.get(ref)  # (a number printed whole somewhere, x_1 = 0.5625, is read whole where
            if whole is not None and (not is_number(text) or printed_fraction(whole) != printed_fraction(text)):
                text = whole  # the rounding elsewhere changed it: 0.563; -0.500 is -0.5 as printed)
        return None if text is None else text.replace("\u2212", "-")

    def _make_in_order(self, node_id: int) -> None:
        """Make the reader's own values (:meth:`_raw_value`) of everything ``node_id`` reads
        up to the values printed on the page, in the graph's order, each from parents made
        before it. The pass before the step prints every named quantity, so a reader's own
        value reaches back a scratch step or two; the pass after it prints p and L alone, so
        a reader of p works through the whole pass from the weights after the step, which a
        chain of calls from p down would follow as deep as the model (100 blocks exceed
        Python's stack).

        Where nothing between the weights and ``node_id`` is printed, those values are the
        forward pass from the weights as the reader takes them (:meth:`_reader_pass`: one
        product per matrix, not one reading per entry; crane's p after took a quarter of
        its page), unless that pass is undefined or undecided somewhere.

        Raises:
            NeedPrecision, Undefined: as :meth:`_raw_value`, for a value the reader needs."""
        if (self._prec, node_id) in self._raw:
            return
        if self._page_ids is None:  # (with carry="printed", the student's chain is the page)
            self._page_ids = frozenset(r.id for r, text in self.printed.items()
                                       if r.phase == self.phase and is_number(text)) \
                | (frozenset(i for i, text in self.chain().items() if is_number(text)) if self.carry == "printed"
                   else frozenset())
        reached = self.graph.ancestors(node_id, stop=self._page_ids)
        needed = reached - self._page_ids
        whole = self._reader_pass(node_id) if reached & self._page_ids <= {node_id} else None
        nodes = self.graph.nodes
        for i in sorted(needed):
            if nodes[i].op is not None:
                if whole is not None:
                    self._raw.setdefault((self._prec, i), whole[i])
                else:
                    self._raw_value(i)

    def _reader_pass(self, node_id: int) -> Pass | None:
        """A forward pass (:func:`derive.evaluate.forward`) that holds ``node_id`` and
        everything it reads, from every leaf as the reader takes it (:meth:`_given_value`:
        a weight as printed in this pass, a matrix as one :meth:`_weight_factor`) at the
        reader's precision: the reader's own value of each quantity the page does not print
        in between. After the step, a pass of what the page prints there and what that reads
        (:attr:`derive.evaluate.Evaluator.printed_after`), as the pass after the step is
        made, unless ``node_id`` is not among them; else every node. Once per precision
        (made again whole for a node the first did not hold); None when the pass is
        undefined or a ball undecided anywhere in it (the reader's values are then made one
        by one, and only those that read it fail)."""
        made = self._passes_made.get(self._prec, False)
        if made is False or (made is not None and not made.holds(node_id)):
            graph = self.graph
            printed = self.derivation.evaluator.printed_after
            needed = graph.ancestor_operations(printed) if self.phase == "after" and printed is not None \
                and made is False else None
            if needed is not None and not _among(needed, node_id):
                needed = None
            leaves = LeafValues(graph, {w: self._weight_factor(w) for w in graph.weights}, _Leaves(self._given_value))
            try:
                with ctx.workprec(self._prec):
                    self._passes_made[self._prec] = forward(graph, leaves, needed=needed)
            except (Undefined, NeedPrecision):
                self._passes_made[self._prec] = None
        return self._passes_made[self._prec]

    def _raw_value(self, node_id: int) -> Value:
        """The reader's own value of an operation's node, from their inputs
        (:meth:`_input_value`), at the reader's precision; made once per node and precision.

        Raises:
            NeedPrecision: a ball is too wide to decide a branch (Div by a ball holding 0).
            Undefined: the step is undefined from the reader's inputs.
        """
        key = (self._prec, node_id)
        if key not in self._raw:
            with ctx.workprec(self._prec):
                self._raw[key] = self._evaluate(node_id)
        return self._raw[key]

    def _evaluate(self, node_id: int) -> Value:
        """:meth:`_raw_value`, computed: an entry of a matrix product (:class:`~derive.kernels.MatMul`)
        read from the whole product's exact values (:meth:`_product_values`), else the node's
        operation on its inputs' values (also an entry that is a ball, whose radius
        depends on the order of its sum: the same ball as the node's own sum)."""
        kernel = self._kernel_of(node_id)
        if kernel is not None:
            values = self._product_values(kernel)
            if values is not None and type(values[node_id - kernel.start]) is fmpq:
                return values[node_id - kernel.start]
        node = self.graph.nodes[node_id]
        return node.op.eval(self._input_values(node.parents))

    def _kernel_of(self, node_id: int) -> MatMul | None:
        """The matrix product whose entry node ``node_id`` is, or None."""
        k = bisect_right(self._kernel_starts, node_id) - 1
        return self.graph.kernels[self._kernel_starts[k]] if k >= 0 and node_id < self._kernel_ends[k] else None

    def _product_values(self, kernel: MatMul) -> list[Value] | None:
        """The reader's values of every entry of ``kernel`` (its T x m members, in id
        order), computed as one product of the reader's T x n left factor and n x m right
        factor (:meth:`derive.kernels.MatMul.forward`: one fmpq_mat product when both are
        exact) at the reader's precision; once per product and precision. None when an
        input is undefined or undecided for the reader (each entry is then computed on its
        own, and only the entries that read that input fail)."""
        key = (self._prec, kernel.start)
        if key not in self._products:
            try:
                self._products[key] = kernel.forward(_Read(self._input_value), self._weight_factor)
            except (Undefined, NeedPrecision):
                self._products[key] = None
        return self._products[key]

    def _weight_factor(self, weights: Weights) -> Factor:
        """A weight's values as the reader takes them (:meth:`_given`: exact, or as printed),
        rows x cols as one exact :class:`~derive.kernels.Factor`; made once."""
        if weights.start not in self._weights:
            ids = range(weights.start, weights.start + weights.rows * weights.cols)
            self._weights[weights.start] = Factor(weights.rows, weights.cols, [self._given_value(i)[0] for i in ids],
                                                  kind="exact")
        return self._weights[weights.start]

    def _value_expr(self, v: Value) -> F.Node:
        """A reader's result as a formula's number (see :meth:`value_text`); an exact one
        made once per page (crane's notes write 80,000 products, 35,000 of them distinct)."""
        if not is_exact(v):
            return printed(self.value_text(v))
        key = (int(v.p), int(v.q))  # (an fmpq's own hash costs several times more)
        known = self._exprs.get(key)
        if known is None:
            known = self._exprs[key] = printed(self.value_text(v))
        return known

    def digits_expr(self, v: Value) -> F.Node:
        """The value's digits as a formula's number (:meth:`digits`, as
        :func:`printed` writes it: ``2.49067…``, cut short), for a calculation written
        out with the exact inputs (``derive explain``).

        Raises:
            NeedPrecision: as :meth:`digits`."""
        return printed(self.digits(v))

    def value_text(self, v: Value) -> str:
        """A reader's result as they write it: a terminating decimal exactly (``2.4905``),
        anything else (``11027/17735``, a ball) as its digits (``0.62176…``, :meth:`digits`).

        Raises:
            NeedPrecision: as :meth:`digits`."""
        if is_exact(v):
            text = _ratio_text(int(v.p), int(v.q))
            if "/" not in text:
                return text
        return self.digits(v)

    def digits(self, v: Value, nearest: bool = True) -> str:
        """The value ``v`` (an exact fmpq or a certified arb ball) with two more places (or
        significant figures) than the run's format prints, cut (not rounded), and an
        ellipsis: z_roof's 2.49067… at 3 places; every digit certified by the ball; a value
        that ends within those places exactly, as it is (``-0.4989``). With ``nearest``, a
        ball the cut cannot decide gives the nearest value at those places instead (a ball
        on a boundary of the cut).

        Raises:
            NeedPrecision: the ball decides neither the cut nor (with ``nearest``) the nearest
                value at those places (evaluate again at a higher precision).
        """
        places = (self.fmt.places if self.fmt.places is not None else self.fmt.sig) + 2
        text = format_value(v, Format(places=places, mode="down"))
        if text is None and not nearest:
            raise NeedPrecision
        if text is None:  # a ball on a boundary of the cut (-log2 0.5 = 1): the nearest value there
            text = format_value(v, Format(places=places, mode="half-even"))
        if text is None:
            raise NeedPrecision
        if is_exact(v) and Fraction(text) == Fraction(int(v.p), int(v.q)):
            return exact_text(Fraction(int(v.p), int(v.q)))
        return text + "\u2026"

    def exact_digits(self, ref: Ref) -> str | None:
        """:meth:`digits` of the exact value of ``ref`` (any phase), evaluated at a higher
        precision until every digit is certified; None when none up to MAX_PREC does. A
        value the rounding's exact path has found rational is that fraction's digits (a
        weight whose derivative is exactly 0, on a tie: 0.5625, not the ball's 0.56250…)."""
        rational = self.derivation.forms.known_rational(ref)
        if rational is not None:
            return self.digits(to_fmpq(rational))
        prec = START_PREC
        while True:
            try:  # (the nearest value for a ball on a cut only when no higher precision is left:
                # -2 + 1e-299 is -1.99999…, not -2.00000…)
                return self.digits(self.derivation.value(ref, prec), nearest=prec >= MAX_PREC)
            except NeedPrecision:
                if prec >= MAX_PREC:
                    return None
                prec *= 2

    # ------------------------------------------------------------------ readings
    def reading(self, ref: Ref, noteworthy: bool = False) -> Reading | None:
        """The reader's recomputation of one printed quantity, or None when it has no
        by-hand form (a given weight, a gradient) or no decided digits; with
        ``noteworthy``, also None when it would not be worth a note (the reader's digits
        are the printed ones and no tie): decided from the values alone, before any
        formula is built (crane: 34,184 readings, a few hundred notes).

        A quantity of the forward pass, before the SGD step or after it, is its operation
        on the printed values of its inputs in that pass (``L after = -ln(0.396)``, from
        the printed p(␣roof) after the step); a weight after the step (phase ``updated``)
        is the SGD step from the printed weight and gradient (:meth:`_sgd_reading`)."""
        if ref in self.printed and not is_number(self.printed[ref]):
            return None
        if ref.phase == "grad":
            return self._logit_gradient_reading(ref, noteworthy)
        phase = "before" if ref.phase == "updated" else ref.phase  # (the step reads the weights before it)
        if phase != self.phase:
            reader = self._reader_of(phase)
            return None if reader is None else reader.reading(ref, noteworthy)
        if ref.phase == "updated":
            return self._sgd_reading(ref, noteworthy)
        if self.graph.nodes[ref.id].op is None:
            return None
        self._prec = READER_PREC
        while True:  # the reader's precision doubles until every digit the note writes is certain
            try:
                return self._forward_reading(ref, noteworthy)
            except Undefined:
                return None  # from the printed inputs the step is undefined (ln 0.000, a / 0)
            except NeedPrecision:
                if self._prec >= MAX_PREC:
                    return None  # no certified digits to write
                self._prec *= 2

    def _reader_of(self, phase: str) -> ByHand | None:
        """The reader of the pass ``phase`` (this one's sibling, sharing the page and made
        once), or None for a phase no reader recomputes (a gradient) or a pass after the
        step that the case does not derive (``conventions.gradients`` asks for none)."""
        if phase not in PASSES or self.derivation.loss is None:
            return None
        if phase not in self._passes:
            try:
                self.derivation.value(Ref(phase, self.derivation.loss))
            except NotDerived:
                return None
            ByHand(self.derivation, self.fmt, self.printed, self.carry, self.whole, phase, self._passes)
        return self._passes[phase]

    def _named(self, meta):
        """A node's metadata as a Reading names it: its own in the pass before the step,
        its Name after the step in the pass after it (``L after the step``); a scratch
        value without a Name keeps its metadata."""
        return meta if self.phase == "before" or meta.name is None else after_step(meta.name)

    def _forward_reading(self, ref: Ref, noteworthy: bool) -> Reading | None:
        """:meth:`reading` of a forward quantity at the reader's precision ``self._prec``.

        Raises:
            NeedPrecision: a digit the note would write is not certified at this precision.
            Undefined: the step is undefined from the printed inputs.
        """
        node = self.graph.nodes[ref.id]
        if self.phase == "after":
            self._make_in_order(ref.id)
        value = self._raw_value(ref.id)  # (the value first: its formula costs far more)
        if noteworthy and self._rounds_as_printed(ref, value):
            return None  # (most readings: decided without the reader's text)
        rounded = self._rounded(ref, value) if noteworthy else None
        if rounded is not None and not rounded[3]:
            return None
        inputs, prec = self._inputs, self._prec  # (the inputs already built, looked up here)
        parts = [inputs.get((prec, p)) or self._input(p) for p in node.parents]
        chain = [node.op.hand([e for _, e, _ in parts])]
        if isinstance(node.op, Dot):
            n = len(parts) // 2
            products = [a[0] * b[0] for a, b in zip(parts[:n], parts[n:])]
            if all(is_exact(p) for p in products) and n > 1:
                chain.append(F.Terms(*[self._value_expr(p) for p in products]))
        chain.append(self._value_expr(value))
        sources = [(self._named(meta), e) for _, e, meta in parts if meta is not None]
        reading = self._finish(ref, self._named(node.meta), sources, F.Chain(*chain), value, rounded=rounded)
        if reading is not None:
            reading.own = self._own_names(self._own_of(node.parents))
        return reading

    def _sgd_reading(self, ref: Ref, noteworthy: bool = False) -> Reading | None:
        """:meth:`reading` of a weight after the step, theta - eta dL/dtheta from the
        printed weight and its printed gradient (:meth:`_gradient`: a gradient no table
        prints that is exactly 0 is 0, so the weight does not move); the weight itself when
        the step does not move it (``1 (derivative 0)``, ``(not trained)``). None when the
        reader has no gradient to take; with ``noteworthy``, also when the reader's digits
        are the printed ones and no tie, decided before the formula is built."""
        g = self._gradient(ref.id)
        if g is None:
            return None
        node = self.graph.nodes[ref.id]
        eta = self.derivation.case.conventions.learning_rate
        given = self._given_value(ref.id)[0]  # the weight as printed
        before = Fraction(int(given.p), int(given.q))
        exact = self.derivation.value(ref)
        moved = not (is_exact(exact) and exact == node.leaf)
        value = before - eta * g if moved else before
        reader = fmpq(value.numerator, value.denominator)
        if noteworthy and self._rounds_as_printed(ref, reader):
            return None
        rounded = self._rounded(ref, reader) if noteworthy else None
        if rounded is not None and not rounded[3]:
            return None
        shown = self.printed.get(Ref("grad", ref.id))  # (the derivative as its table prints it: -0.050, not -0.05)
        gradient = printed(shown.replace("\u2212", "-")) if shown is not None else F.number(g)
        # the weight as its table of weights prints it, given (the seed's 0.0 - 0.1·(0.011)), else as printed
        written = (self.whole.get(Ref("before", ref.id)) or self._shown_text(ref.id, strict=False) or "").replace(
            "\u2212", "-")
        weight = printed(written) if is_number(written) and printed_fraction(written) == before else F.number(before)
        step = F.Terms(weight, F.Neg(F.Times(F.number(eta), F.Group(gradient))))
        formula = F.Chain(step, F.number(value)) if moved else weight
        trained = self.derivation.case.conventions.trained
        still = " (not trained)" if trained is not None and node.meta.param not in trained else " (derivative 0)"
        return self._finish(ref, after_step(node.meta.name), [(grad_of(node.meta.name), gradient)],
                            formula, reader, "" if moved else still, rounded)

    def _logit_gradient_reading(self, ref: Ref, noteworthy: bool = False) -> Reading | None:
        """:meth:`reading` of dL/dz_i in a case that starts from logits, :func:`logit_gradient`
        over the printed p_i (the gradient's table writes (p - y) / T); None for any other
        derivative (a weight's: the chain rule through the whole pass has no by-hand form)
        or for p printed without digits."""
        found = logit_gradient_of(self.derivation, ref)
        shown = self.printed.get(found[0]) if found else None
        if shown is None or not is_number(shown):
            return None
        (p, y), conventions = found, self.derivation.case.conventions
        written = printed(shown.replace("\u2212", "-"))
        exact = (printed_fraction(shown) - y) / conventions.temperature
        prec = READER_PREC
        while True:  # (in bits, over ln 2: the reader's precision doubles until the digits are certain)
            with ctx.workprec(prec):
                value = fmpq(exact.numerator, exact.denominator)
                if conventions.loss_log == "2":
                    value = arb(value) / arb(2).log()
                try:
                    rounded = self._rounded(ref, value) if noteworthy else None
                    if rounded is not None and not rounded[3]:
                        return None
                    return self._finish(ref, grad_of(self.graph.nodes[ref.id].meta.name),
                                        [(self.graph.nodes[p.id].meta, written)],
                                        F.Chain(logit_gradient(written, y, self.derivation), self._value_expr(value)),
                                        value, rounded=rounded)
                except NeedPrecision:
                    if prec >= MAX_PREC:
                        return None
                    prec *= 2

    def _gradient(self, leaf: int) -> Fraction | None:
        """dL/dtheta of the weight ``leaf`` as the reader takes it: as printed; 0 when no
        table prints it and it is exactly 0 (a row of E that no token of the prompt reads:
        the gradient step leaves it out, and its sentence says its derivative is 0); None
        when it is printed without digits (undecided), not printed and not exactly 0, or
        not derived (``conventions.gradients``)."""
        ref = Ref("grad", leaf)
        text = self.printed.get(ref)
        if text is not None:
            return printed_fraction(text) if is_number(text) else None
        try:
            exact = self.derivation.value(ref)
        except NotDerived:
            return None
        return Fraction(0) if is_exact(exact) and exact == 0 else None

    def _rounds_as_printed(self, ref: Ref, value: Value) -> bool:
        """Whether the reader's value lies strictly inside the interval of the numbers that
        round to the printed digits of ``ref`` (c - h, c + h), c the printed number and h
        half a unit of its last place, in a half mode at fixed places: then every rounding
        of it gives those digits and none is a tie, so it is not worth a note (what
        :meth:`_rounded` would find, at any precision, without making the reader's text).
        False when that is not certain (a ball that reaches a bound, a printed zero, whose
        sign is the value's, a number in scientific form, significant figures, another
        mode): :meth:`_rounded` then decides."""
        text = self.printed.get(ref)
        if text is None or self._plain is None or self.fmt.mode not in ("half-away", "half-even"):
            return False
        bounds = self._intervals.get(text, _UNSEEN)
        if bounds is _UNSEEN:
            bounds = self._intervals[text] = self._interval(text)
        return bounds is not None and bounds[0] < value < bounds[1]

    def _interval(self, text: str) -> tuple[fmpq, fmpq] | None:
        """(c - h, c + h) for a printed decimal c at the run's places (h half a unit of its
        last place), or None for a zero or text that is not such a decimal."""
        if not self._plain.fullmatch(text):
            return None
        c = printed_fraction(text)
        if c == 0:
            return None
        c, h = fmpq(c.numerator, c.denominator), fmpq(1, 2 * 10 ** self.fmt.places)
        return c - h, c + h

    def _rounded(self, ref: Ref, value: Value) -> tuple[str, str, bool, bool]:
        """(the reader's value rounded, the printed value, whether the reader's is on a tie,
        whether it is worth a note: other digits or a tie, see :attr:`Reading.noteworthy`).

        Raises:
            NeedPrecision: the reader's value does not decide its rounding at ``self._prec``."""
        reader = format_value(value, self.fmt)
        if reader is None:
            raise NeedPrecision
        reader = reader.replace("-", self.fmt.minus)
        correct = self.printed.get(ref) or self.derivation.decimal(ref, self.fmt)
        tie = is_exact(value) and _is_tie(int(value.p), int(value.q), self.fmt)
        return reader, correct, tie, tie or reader != correct

    def _finish(self, ref: Ref, quantity, sources, formula: F.Node, value: Value,
                remark: str = "", rounded: tuple | None = None) -> Reading | None:
        """The Reading, or None when the exact value's digits cannot be certified;
        ``rounded``: :meth:`_rounded` of ``value`` when already made.

        Raises:
            NeedPrecision: the reader's value does not decide its rounding at ``self._prec``.
        """
        reader, correct, tie, _ = rounded or self._rounded(ref, value)
        exact_digits = self.exact_digits(ref)
        if exact_digits is None or not is_number(correct):
            return None
        return Reading(ref, quantity, sources, formula, reader, correct, exact_digits, tie, value, remark)

    def readings(self, refs) -> list[Reading]:
        """The readings of ``refs`` that are worth a note (a different digit or a tie); a
        number printed whole (:attr:`whole`, x_t = 0.5625) is worth none."""
        out = []
        meter = progress()
        for ref in dict.fromkeys(refs):
            r = None if ref in self.whole else self.reading(ref, noteworthy=True)
            meter.advance()
            if r is not None and r.noteworthy:
                out.append(r)
        return out

    def sum_notes(self, refs) -> list[SumNote]:
        """Softmax rows (attention weights a_{i,.} of one head, or p) all printed in
        ``refs`` whose printed values do not add up to 1. A row of attention weights the
        case gives (``attention_weights``: a reader's mixing weights, not a softmax, printed
        as given) has no such note; a softmax row's masked entries are exact 0 leaves."""
        groups: dict[tuple, list[Ref]] = {}
        sizes = self._row_sizes()
        for ref in dict.fromkeys(refs):
            meta = self.derivation.meta(ref)
            if ref.phase in ("before", "after") and meta.symbol in ("a", "p"):
                groups.setdefault((ref.phase, meta.symbol, meta.block, meta.head, meta.position), []).append(ref)
        notes = []
        for (phase, symbol, block, head, position), members in groups.items():
            if len(members) != sizes[(symbol, block, head, position)] \
                    or all(self.graph.nodes[r.id].op is None for r in members):  # (given: no softmax)
                continue
            terms = [self.carried(r).replace("\u2212", "-") for r in members]
            if not all(is_number(t) for t in terms):
                continue
            total = sum(printed_fraction(t) for t in terms)
            if total != 1 and (_places_of(total) or 0) <= MAX_SUM_PLACES:
                if symbol == "p":  # p_t when the loss reads several rows (loss = "mean"), else p
                    several = len(self.derivation.outputs.get("rows") or {}) > 1
                    row, where = Name("p", position=position if several else None), " (softmax over the vocabulary)"
                else:
                    row = Name("a", position=position, index="j")
                    where = f" of head {head}" + (f", block {block}" if block and len(self.derivation.case.blocks) > 1
                                                  else "")
                notes.append(SumNote(row, where, members, terms,
                                      exact_text(total, MAX_SUM_PLACES)))
        return notes

    def _row_sizes(self) -> dict[tuple, int]:
        """The number of entries of each softmax row in the graph, by (symbol, block, head,
        position): the keys of an attention row (masked ones included, whether the case
        starts from a prompt, from X or from Q, K, V), the pieces of a p row."""
        if self._sizes is None:  # once per page: the graph has a node per scalar (crane: 47 tables)
            sizes: dict[tuple, int] = {}
            for node in self.graph.nodes:
                m = node.meta
                if m.symbol in ("a", "p"):
                    key = (m.symbol, m.block, m.head, m.position)
                    sizes[key] = sizes.get(key, 0) + 1
            self._sizes = sizes
        return self._sizes

    # ------------------------------------------------------------------ carry printed
    def chain(self) -> dict[int, str]:
        """``carry = printed``: every named quantity of this reader's pass recomputed from
        its inputs' chain values and rounded, in order, from the weights as the page prints
        them (after the step: as the SGD step's table prints them, :meth:`_given_value`);
        returns its printed text by node id. The chain is
        recomputed at a doubled precision while a rounding is undecided (up to MAX_PREC;
        past it, the exact value's text stands for that digit)."""
        prec = READER_PREC
        while self._chain is None:
            try:
                self._chain = self._chain_at(prec, last=prec >= MAX_PREC)
            except NeedPrecision:
                prec *= 2
        return self._chain

    def _chain_at(self, prec: int, last: bool) -> dict[int, str]:
        """:meth:`chain` at ``prec`` bits.

        Raises:
            NeedPrecision: a rounding is undecided at ``prec`` (unless ``last``).
        """
        chain: dict[int, str] = {}
        values: dict[int, Value] = {}
        with ctx.workprec(prec):
            for i, node in enumerate(self.graph.nodes):
                if node.op is None:
                    try:
                        values[i] = self._given_value(i)[0]  # a weight as printed
                    except Undefined:  # (after the step, printed with no digits: its exact value)
                        values[i] = self._leaf(i)[1]
                    continue
                try:
                    v = node.op.eval([values[p] for p in node.parents])
                except NeedPrecision:
                    if not last:
                        raise
                    v = self.derivation.value(Ref(self.phase, i))  # carry the exact value
                except Undefined:  # undefined from printed values: carry the exact value
                    v = self.derivation.value(Ref(self.phase, i))
                if node.meta.symbol:
                    text = format_value(v, self.fmt)
                    if text is None and not last:
                        raise NeedPrecision
                    text = text or self.derivation.decimal(Ref(self.phase, i), self.fmt)
                    chain[i] = text
                    if is_number(text):  # an undecided digit is carried unrounded
                        q = printed_fraction(text)
                        v = fmpq(q.numerator, q.denominator)
                values[i] = v
        return chain

    def carried(self, ref: Ref) -> str:
        """The text a student working from printed values writes for ``ref`` (carry =
        printed): in the pass before the step and in the pass after it (:meth:`chain`, each
        pass's own); the exact value's text otherwise, and for gradients and the step."""
        if self.carry == "printed" and ref.phase in PASSES:
            reader = self if ref.phase == self.phase else self._reader_of(ref.phase)
            if reader is not None and ref.id in reader.chain():
                return reader.chain()[ref.id].replace("-", self.fmt.minus)
        return self.printed[ref]


__all__ = ["ByHand", "Reading", "SumNote", "printed", "is_tie", "exact_text", "is_number", "printed_fraction", "CARRY_MODES"]
