"""A derived case: the graph the rules build, its steps, and its numbers on demand.

:func:`derive` builds the whole worked example in the seed 000's order (tokens, E, X,
per block LayerNorm / Q,K,V / heads / mix / residual / LayerNorm / MLP, final LayerNorm,
logits, loss, gradient, SGD step, the pass after). :class:`Derivation` holds the result
and answers for it through three objects with one job each: an
:class:`~derive.evaluate.Evaluator` (the evaluations by working precision, doubled until
every branch is decided), :class:`~derive.exact.ExactForms` (exact forms, SymPy) and a
:class:`~derive.decimals.Rounder` (correctly rounded decimals: precision escalation, the
exact path for values sitting on a rounding boundary, and ``undecided`` for what remains;
DESIGN.md, "Correct rounding").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from itertools import compress
from typing import TYPE_CHECKING

from . import registry
from .case import Case
from .decimals import UNDECIDED, Rounder
from .errors import CaseError, EvaluationError
from .evaluate import (MAX_PREC, START_PREC, Evaluation, Evaluator, Undefined, gc_paused, gradient_leaves,
                       param_names)
from .exact import CLOSED_FORM_SIZE, EXACT_PATH_SIZE, ExactForms
from .graph import Div, Graph, Meta, to_fmpq
from .rounding import Format
from .steps import Ref, Step, refs_of_ids

if TYPE_CHECKING:  # (the exact forms' type; SymPy is loaded only when one is built)
    import sympy

VALUE_FORMAT = Format(places=None, sig=30, mode="half-even")  # the JSON ``value`` field
# the symbols of what the page prints after the SGD step (besides L): the last row's logits and softmax
AFTER_SYMBOLS = frozenset({"z", "exp_z", "exp_z_over_T", "p", "L"})


@dataclass(eq=False, repr=False)
class Derivation:
    """A case's derivation graph, its steps, and its numbers on demand.

    Attributes:
        case: the validated case; graph: the DAG of quantities; steps: in the seed's order.
        loss: node id of L (None without a target); outputs: ids of z, exp_z, p, L.
        display_format: how a notebook display rounds (see :mod:`derive.notebook`).
        evaluator, forms, rounder: the values, exact forms and decimals (the methods
            below delegate to them).
    """

    case: Case
    graph: Graph
    steps: list[Step]
    loss: int | None
    outputs: dict
    display_format: Format = field(default_factory=Format, repr=False)
    evaluator: Evaluator = field(init=False, repr=False, compare=False)
    forms: ExactForms = field(init=False, repr=False, compare=False)
    rounder: Rounder = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        conv = self.case.conventions
        self.evaluator = Evaluator(self.graph, self.loss, to_fmpq(conv.learning_rate), conv.trained,
                                   file=self.case.path, explain=partial(_undefined, self.case, self.graph),
                                   gradients=conv.gradients)
        self.forms = ExactForms(self.graph, self.evaluator, conv.learning_rate)
        self.evaluator.decide = self.forms.rational_in  # (a branch no precision decides: its input's exact form)
        self.evaluator.printed_after = _printed_after(self.outputs)
        self.rounder = Rounder(self.evaluator, self.forms, file=self.case.path)
        for step in self.steps:  # a step displays itself in a notebook through its derivation
            step.derivation = self

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
        """The evaluation at ``prec`` bits or higher (:meth:`Evaluator.evaluation`).

        Raises:
            EvaluationError: the forward pass is undefined (e.g. LayerNorm of a constant
                row with eps = 0), naming the case file and the field.
        """
        return self.evaluator.evaluation(prec)

    def value(self, ref: Ref, prec: int = START_PREC):
        """The value (fmpq or arb) of one quantity at ``prec`` bits."""
        return self.evaluator.value(ref, prec)

    @property
    def precisions(self) -> tuple[int, ...]:
        """The working precisions (bits) of the evaluations kept (the highest so far), lowest first."""
        return self.evaluator.precisions

    # ------------------------------------------------------------------ rounding
    def decimals(self, refs, fmt: Format) -> dict[Ref, str]:
        """Correctly rounded text for each ref; ``undecided`` where no precision up to
        MAX_PREC and no exact simplification decides the last digit (:class:`Rounder`)."""
        return self.rounder.decimals(refs, fmt)

    def decimals_each(self, refs, fmts: list[Format]) -> list[dict[Ref, str]]:
        """:meth:`decimals` under each of ``fmts``, from one evaluation where one serves
        them all (:meth:`Rounder.decimals_each`)."""
        return self.rounder.decimals_each(refs, fmts)

    def decimal(self, ref: Ref, fmt: Format) -> str:
        """Correctly rounded text of one quantity (see :meth:`decimals`)."""
        return self.rounder.decimal(ref, fmt)

    # ------------------------------------------------------------------ exact forms
    def closed_form(self, node_id: int, limit: int = CLOSED_FORM_SIZE) -> sympy.Expr:
        """The exact SymPy form of a forward quantity (:meth:`ExactForms.closed_form`)."""
        return self.forms.closed_form(node_id, limit)

    def definition(self, node_id: int) -> sympy.Expr:
        """The quantity's operation applied to its parents, named by their labels."""
        return self.forms.definition(node_id)

    def exact_text(self, ref: Ref) -> str:
        """The exact form as text: the fraction, a compact closed form, or the definition."""
        return self.forms.exact_text(ref)

    def fraction_text(self, ref: Ref) -> str | None:
        """The value as a fraction when it is rational, else None (:meth:`ExactForms.fraction_text`)."""
        return self.forms.fraction_text(ref)

    # ------------------------------------------------------------------ catalogue
    def meta(self, ref: Ref) -> Meta:
        """The metadata of the quantity a ref points at."""
        return self.graph.nodes[ref.id].meta

    def given(self) -> list[Ref]:
        """Every given weight (E, P, W_Q, ..., b_2, a norm's gain and bias, W_U), entry by
        entry in the order the graph holds them: the JSON's ``given`` records. Given
        inputs (X, Q/K/V, logits, attention weights) are named quantities instead (see
        :meth:`quantities`)."""
        return [Ref("before", i) for i in self.graph.param_leaves() if self.graph.nodes[i].meta.symbol == "param"]

    def gradient_leaves(self) -> list[int]:
        """The ids of the weight entries whose dL/dtheta is derived: every one, or those of
        the weights ``conventions.gradients`` names; none without a loss."""
        if self.loss is None:
            return []
        return gradient_leaves(self.graph, self.case.conventions.gradients)

    def quantities(self, derivatives: bool = True) -> list[Ref]:
        """Every named scalar quantity in the order it is computed: the forward pass,
        then dL/dtheta and theta after the step for every weight with a derivative
        (:meth:`gradient_leaves`; left out when ``derivatives`` is False: the activations
        alone), then the forward pass after the step (none when no weight has one: the
        loss alone)."""
        with gc_paused():  # (a ref per quantity, all kept: a wide block's 457,667 set off full collections)
            ids, symbols = self.graph.symbols()  # (the weights' entries are "param": not among the operations)
            named = {symbol: bool(symbol) and symbol != "param" for symbol in set(symbols)}
            refs = list(refs_of_ids("before", compress(ids, map(named.__getitem__, symbols))))
            gradients = self.case.conventions.gradients
            if self.loss is not None and any(gradients is None or p in gradients for p in param_names(self.graph)):
                if derivatives:
                    leaves = self.gradient_leaves()
                    refs += [*refs_of_ids("grad", leaves), *refs_of_ids("updated", leaves)]
                refs += refs_of_ids("after", compress(ids, map(AFTER_SYMBOLS.__contains__, symbols)))
        return refs


def _printed_after(outputs: dict) -> tuple[int, ...] | None:
    """The ids of what the page prints after the SGD step, from the rules' ``outputs``:
    L and each target row's z, e^z, their sum and p (the quantities :meth:`Derivation.quantities`
    lists after the step); the pass after the step is made for them and what they depend
    on (:attr:`derive.evaluate.Evaluator.printed_after`). None without a loss."""
    if outputs.get("L") is None:
        return None
    ids = [outputs["L"]]
    for row in outputs["rows"].values():
        for part in row.values():
            ids += part if isinstance(part, list) else [part]
    return tuple(ids)


def _undefined(case: Case, graph: Graph, exc: Undefined) -> EvaluationError:
    """The user's error for an undefined forward pass (node id in ``exc.args[1]``): a
    division by a norm's statistic = 0 (LayerNorm's sigma, or another norm's) names the row and
    the eps field the norm declares (its registered ``undefined``); any other, the quantity."""
    node_id = exc.args[1] if len(exc.args) > 1 else None
    node = graph.nodes[node_id] if node_id is not None else None
    if node is not None and isinstance(node.op, Div):
        stat = graph.nodes[node.parents[1]].meta
        if stat.norm is not None:  # a norm's statistic (sigma, rms) of one row is 0
            slot = "lnf" if stat.norm == "final" else stat.norm
            op = registry.get(case.final_norm if slot == "lnf" else case.blocks[stat.block - 1].norms[slot])
            if op.undefined is not None:
                field, message = op.undefined
                eps = getattr(case.conventions, field)
                where = f"row {stat.position}" + (f" of block {stat.block}" if stat.block else "")
                return EvaluationError(f"the {op.title} ({stat.norm}) of {where} {message.format(eps=eps)}",
                                       file=case.path, field=f"conventions.{field}", expected="eps > 0")
    return EvaluationError(str(exc.args[0]), file=case.path)


__all__ = ["CLOSED_FORM_SIZE", "EXACT_PATH_SIZE", "MAX_PREC", "START_PREC", "UNDECIDED", "VALUE_FORMAT",
           "Derivation", "derive", "gc_paused"]


def derive(case: Case) -> Derivation:
    """Build the derivation graph and the steps of ``case`` (see the module docstring)."""
    with gc_paused():
        return _build(case)


def _build(case: Case) -> Derivation:
    """The body of :func:`derive`: the rules' model (``rules/model.py``) on a new graph."""
    from .rules.model import model

    graph = Graph()
    steps, loss, outputs = model(graph, case)
    _check_weight_names(case, graph)
    return Derivation(case, graph, steps, loss, outputs)


def _check_weight_names(case: Case, graph: Graph) -> None:
    """``conventions.gradients`` and ``conventions.trained`` name only weights this case
    has (a name it lacks would silently leave the whole training step out, or move nothing).

    Raises:
        CaseError: naming the field, the weights it lacks and the weights the case has (a
            tied W_U: name E; given logits: no weight, only "all" or [])."""
    weights = list(dict.fromkeys(w.param for w in graph.weights))
    for setting in ("gradients", "trained"):
        missing = [name for name in getattr(case.conventions, setting) or () if name not in weights]
        if not missing:
            continue
        if case.logits is not None:
            expected = ('"all" or [] (the logits are given: the case has no weight' +
                        (', and dL/dz is derived unless [])' if setting == "gradients" else ')'))
        else:
            expected = "a list of this case's weights: " + ", ".join(weights)
            if "W_U" in missing and case.W_U is None and "E" in weights:
                expected += " (W_U is tied to E, W_U = E^T: name E)"
        raise CaseError(f"names {', '.join(missing)}, which this case does not have", file=case.path,
                        field=f"conventions.{setting}", expected=expected)
