"""A derived case: the graph the rules build, its steps, and its numbers on demand.

:func:`derive` builds the whole worked example in the seed 000's order (tokens, E, X,
per block LayerNorm / Q,K,V / heads / mix / residual / LayerNorm / MLP, final LayerNorm,
logits, loss, gradient, SGD step, the pass after). :class:`Derivation` evaluates it at a
working precision, rounds every requested quantity correctly, doubles the precision for
the ones a ball cannot decide, takes the exact path for values sitting on a rounding
boundary, and reports what remains as undecided (DESIGN.md, "Correct rounding").
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction

import sympy
from flint import fmpq

from .case import Case
from .errors import EvaluationError
from .evaluate import Evaluation, NeedPrecision, Undefined, evaluate
from .graph import Div, Graph, Meta, is_exact, to_fmpq
from .rounding import Format, TooLarge, format_fraction, format_value
from .steps import Ref, Step

START_PREC = 128  # bits; enough for 30 significant digits of the JSON ``value`` field
MAX_PREC = 128 * 2 ** 7
CLOSED_FORM_SIZE = 40  # a closed form larger than this is shown as its definition
EXACT_PATH_SIZE = 4000  # the largest closed form the exact path simplifies
VALUE_FORMAT = Format(places=None, sig=30, mode="half-even")
UNDECIDED = "undecided"


@dataclass
class Derivation:
    """A case's derivation graph, its steps and its evaluations (cached by precision).

    Attributes:
        case: the validated case; graph: the DAG of quantities; steps: in the seed's order.
        loss: node id of L (None without a target); outputs: ids of z, exp_z, p, L.
    """

    case: Case
    graph: Graph
    steps: list[Step]
    loss: int | None
    outputs: dict
    _evaluations: dict[int, Evaluation] = field(default_factory=dict, repr=False)
    _forms: dict[int, dict] = field(default_factory=dict, repr=False)
    _rationals: dict[int, Fraction | None] = field(default_factory=dict, repr=False)
    display_format: Format = field(default_factory=Format, repr=False)  # how notebooks round

    def __post_init__(self):
        for step in self.steps:  # a step displays itself in a notebook through its derivation
            step.derivation = self

    # ------------------------------------------------------------------ notebooks
    def step(self, key: str) -> Step:
        """The step ``key`` (see ``derive run --step``).

        Raises:
            KeyError: when the case has no such step.
        """
        for step in self.steps:
            if step.key == key:
                return step
        raise KeyError(f"no step {key!r}; the steps are {', '.join(s.key for s in self.steps)}")

    # ------------------------------------------------------------------ evaluation
    def evaluation(self, prec: int = START_PREC) -> Evaluation:
        """The evaluation at ``prec`` bits, or at the first higher precision where every
        branch (ReLU at 0, a division) is decided.

        Raises:
            EvaluationError: the forward pass is undefined (e.g. LayerNorm of a constant
                row with eps = 0), naming the case file and the field.
        """
        while prec not in self._evaluations:
            try:
                conv = self.case.conventions
                with gc_paused():
                    self._evaluations[prec] = evaluate(self.graph, self.loss, to_fmpq(conv.learning_rate),
                                                       prec, conv.trained)
            except NeedPrecision:
                if prec >= MAX_PREC:
                    raise EvaluationError("a branch (ReLU at 0 or a division) cannot be decided",
                                          file=self.case.path) from None
                prec *= 2
            except Undefined as exc:
                raise self._undefined(exc) from None
        return self._evaluations[prec]

    def _undefined(self, exc: Undefined) -> EvaluationError:
        node_id = exc.args[1] if len(exc.args) > 1 else None
        node = self.graph.nodes[node_id] if node_id is not None else None
        if node is not None and isinstance(node.op, Div):
            sigma = self.graph.nodes[node.parents[1]].meta
            if sigma.symbol == "sigma":
                where = f"row {sigma.position}" + (f" of block {sigma.block}" if sigma.block else "")
                return EvaluationError(
                    f"the LayerNorm ({sigma.norm}) of {where} is of a constant row: its variance is 0 and "
                    f"eps = {self.case.conventions.layernorm_eps}, so sigma = 0 and (x - mu) / sigma divides by zero",
                    file=self.case.path, field="conventions.layernorm_eps", expected="eps > 0")
        return EvaluationError(str(exc.args[0]), file=self.case.path)

    def value(self, ref: Ref, prec: int = START_PREC):
        """The value (fmpq or arb) of one quantity at ``prec`` bits."""
        ev = self.evaluation(prec)
        if ref.phase == "before":
            return ev.before.values[ref.id]
        if ref.phase == "after":
            return ev.after.values[ref.id]
        return (ev.grads if ref.phase == "grad" else ev.updated)[ref.id]

    # ------------------------------------------------------------------ rounding
    def decimals(self, refs, fmt: Format) -> dict[Ref, str]:
        """Correctly rounded text for each ref; ``undecided`` where no precision up to
        MAX_PREC and no exact simplification decides the last digit."""
        out: dict[Ref, str] = {}
        pending = list(dict.fromkeys(refs))
        prec = START_PREC
        while pending and prec <= MAX_PREC:
            ev_prec = self.evaluation(prec).prec
            still = []
            for ref in pending:
                try:
                    text = format_value(self.value(ref, ev_prec), fmt)
                except TooLarge as exc:
                    raise EvaluationError(f"{self.meta(ref).label}: {exc}", file=self.case.path) from None
                if text is None and prec == START_PREC:
                    # A ball that still touches a rounding boundary at START_PREC bits is
                    # almost always a rational sitting on it (an e^s / e^s = 1 weight times
                    # a rational value): try its exact form before re-evaluating the whole
                    # graph at up to MAX_PREC bits (seven passes, minutes on a large case).
                    text = self._exact_rational(ref, fmt)
                if text is None:
                    still.append(ref)
                else:
                    out[ref] = text
            pending, prec = still, max(prec, ev_prec) * 2
        for ref in pending:
            out[ref] = self._exact_path(ref, fmt)
        return out

    def decimal(self, ref: Ref, fmt: Format) -> str:
        """Correctly rounded text of one quantity (see :meth:`decimals`)."""
        return self.decimals([ref], fmt)[ref]

    def _exact_path(self, ref: Ref, fmt: Format) -> str:
        """Decide a value a ball cannot: simplify its closed form to a rational."""
        text = self._exact_rational(ref, fmt)
        if text is not None:
            return text
        return f"{UNDECIDED} at 10^-{fmt.places}" if fmt.places is not None else UNDECIDED

    def _exact_rational(self, ref: Ref, fmt: Format) -> str | None:
        """The correctly rounded text of a forward quantity whose closed form (at most
        EXACT_PATH_SIZE operations) simplifies to a rational, else None. Each quantity's
        form is simplified once; the answer is remembered."""
        if ref.phase != "before":
            return None
        known = self._rationals.get(ref.id, False)
        if known is False:
            form = self.closed_form(ref.id, EXACT_PATH_SIZE)
            simple = form if form.free_symbols else sympy.simplify(form)
            known = Fraction(int(simple.p), int(simple.q)) if simple.is_Rational else None
            self._rationals[ref.id] = known
        return None if known is None else format_fraction(known, fmt)

    # ------------------------------------------------------------------ exact forms
    def closed_form(self, node_id: int, limit: int = CLOSED_FORM_SIZE) -> sympy.Expr:
        """The exact SymPy form of a forward quantity: a Rational when the value is rational,
        else its operation applied to its parents' forms while the tree stays within
        ``limit`` operations; past that, a symbol named after the quantity."""
        return self._form(node_id, limit, self._forms.setdefault(limit, {}))[0]

    def _form(self, node_id: int, limit: int, memo: dict) -> tuple[sympy.Expr, int]:
        if node_id in memo:
            return memo[node_id]
        node = self.graph.nodes[node_id]
        v = self.value(Ref("before", node_id))
        if is_exact(v):
            result = (sympy.Rational(int(v.p), int(v.q)), 1)
        else:
            parts = [self._form(p, limit, memo) for p in node.parents]
            form, size = sympy.Symbol(node.meta.label), limit + 1
            if all(part_size <= limit for _, part_size in parts):
                built = node.op.sympy([f for f, _ in parts])
                built_size = _tree_size(built, limit)
                if built_size <= limit:  # SymPy's own simplification often keeps it small
                    form, size = built, built_size
            result = (form, size)
        memo[node_id] = result
        return result

    def definition(self, node_id: int) -> sympy.Expr:
        """The quantity's operation applied to its parents, named by their labels."""
        node = self.graph.nodes[node_id]
        if node.op is None:
            return sympy.Rational(int(node.leaf.p), int(node.leaf.q))
        return node.op.sympy([self._named(p) for p in node.parents])

    def _named(self, node_id: int) -> sympy.Expr:
        node = self.graph.nodes[node_id]
        if node.op is None and not node.meta.param:
            return sympy.Rational(int(node.leaf.p), int(node.leaf.q))
        if node.meta.symbol is None and node.op is not None:
            return self.definition(node_id)
        return sympy.Symbol(node.meta.label)

    def exact_text(self, ref: Ref) -> str:
        """The exact form as text: the fraction, a compact closed form, or the definition."""
        v = self.value(ref)
        if is_exact(v):
            return str(sympy.Rational(int(v.p), int(v.q)))
        label = self.graph.nodes[ref.id].meta.label
        if ref.phase == "grad":
            return f"dL/d{label}"
        if ref.phase == "updated":
            return f"{label} - {self.case.conventions.learning_rate}*dL/d{label}"
        if ref.phase == "after":
            return f"{sympy.sstr(self.definition(ref.id))} (with the updated weights)"
        rational = self._rationals.get(ref.id)
        if isinstance(rational, Fraction):  # found exact by the exact path of the rounding
            return str(rational)
        form = self.closed_form(ref.id)
        if isinstance(form, sympy.Symbol):
            form = self.definition(ref.id)
        return sympy.sstr(form)

    # ------------------------------------------------------------------ catalogue
    def meta(self, ref: Ref) -> Meta:
        """The metadata of the quantity a ref points at."""
        return self.graph.nodes[ref.id].meta

    def quantities(self) -> list[Ref]:
        """Every named scalar quantity in the order it is computed: the forward pass,
        then dL/dtheta and theta after the step for every weight, then the forward pass
        after the step."""
        named = [i for i, n in enumerate(self.graph.nodes) if n.meta.symbol and n.meta.symbol != "param"]
        refs = [Ref("before", i) for i in named]
        if self.loss is not None:
            leaves = self.graph.param_leaves()
            refs += [Ref("grad", i) for i in leaves] + [Ref("updated", i) for i in leaves]
            refs += [Ref("after", i) for i in named if self.graph.nodes[i].meta.symbol in ("z", "exp_z", "p", "L")]
        return refs


def _tree_size(expr: sympy.Expr, limit: int) -> int:
    """The number of nodes of a SymPy expression tree, counted up to limit + 1."""
    count = 0
    for _ in sympy.preorder_traversal(expr):
        count += 1
        if count > limit:
            break
    return count


@contextmanager
def gc_paused():
    """Pause Python's cyclic garbage collector for a block (building or evaluating a
    graph), and restart it after, if it was running. Building and evaluating a large
    case create hundreds of thousands of objects that stay alive, and every full
    collection walks all of them, so the collections cost time that grows faster than
    the graph; nothing is lost: a cycle made meanwhile is collected once the collector
    runs again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def derive(case: Case) -> Derivation:
    """Build the derivation graph and the steps of ``case`` (see the module docstring)."""
    with gc_paused():
        return _build(case)


def _build(case: Case) -> Derivation:
    """The body of :func:`derive`: the rules' model (``rules/model.py``) on a new graph."""
    from .rules.model import model

    graph = Graph()
    steps, loss, outputs = model(graph, case)
    return Derivation(case, graph, steps, loss, outputs)
