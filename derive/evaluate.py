"""Evaluation on the graph: the forward pass, reverse mode, one SGD step, the pass again.

Each node is evaluated once from its parents' values (never by substituting everything
into one expression, which grows exponentially with depth). Rational nodes stay exact
fmpq; the others are arb balls at the working precision ``prec`` (bits). Reverse mode
accumulates ``dL/dnode`` from the loss back to the weights (the chain rule, as in
micrograd), and the SGD step is ``theta <- theta - eta dL/dtheta`` (seed 000, step 2b).
An :class:`Evaluator` keeps a graph's evaluations by precision and doubles the precision
until every branch is decided (DESIGN.md, "Correct rounding").
"""

from __future__ import annotations

import gc
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import groupby, repeat
from operator import is_, itemgetter

from flint import arb, ctx, fmpq

from .errors import EvaluationError, NotDerived
from .graph import Entries, Entry, Graph, NeedPrecision, Undefined, Value, Weights, as_arb, is_exact, is_zero
from .kernels import ZERO, Factor, plus, weight_factor
from .steps import Ref

START_PREC = 128  # bits; enough for 30 significant digits of the JSON ``value`` field
MAX_PREC = 128 * 2 ** 7


@dataclass(eq=False, repr=False)
class Pass(Sequence):
    """The values of every node of one forward pass, indexed by node id: ``values`` as
    the pass made them, None for the entries of a weight that only matrix kernels read
    (the pass needs no value of each: 7.1 million at d_model 768), which ``leaves``
    gives (the weight as the case gives it, or after the step); ``pass_[i]`` reads
    either."""

    values: list[Value | None]
    leaves: Mapping[int, Value] = field(default_factory=dict)
    needed: Set[int] | None = None  # (a pass of some nodes only, :func:`forward`: those; None: every node)

    def holds(self, i: int) -> bool:
        """Whether the pass has a value for node ``i`` (one made for some nodes only has
        none for the others: see :func:`forward`'s ``needed``)."""
        return self.needed is None or i in self.needed or self.values[i] is not None or i in self.leaves

    def __getitem__(self, i: int) -> Value:
        value = self.values[i]
        return self.leaves[i] if value is None else value

    def __len__(self) -> int:
        return len(self.values)


class LeafValues(Mapping):
    """Values of trainable leaves by node id (a derivative, or a weight after the step):
    a weight's entries kept together, one :class:`~derive.kernels.Factor` per
    :class:`~derive.graph.Weights` (rows x cols, row-major as its entries are numbered;
    its values made only when one is read: a derivative X^T G stays its two factors),
    any other trainable leaf (a given logit) on its own. A weight with no factor here
    has no such values (its derivative is not asked for): reading one of its ids raises
    KeyError.

    Args:
        graph: the graph whose weights the factors belong to.
        matrices: weights -> its values as a factor (rows x cols).
        others: node id -> value, for the trainable leaves outside the weights.
    """

    def __init__(self, graph: Graph, matrices: dict[Weights, Factor], others: dict[int, Value]):
        self.matrices, self.others = matrices, others
        self._weights = [w for w in graph.weights if w in matrices]
        self._starts = [w.start for w in self._weights]

    def weights_of(self, i: int) -> Weights | None:
        """The weight one of whose entries is node ``i``, among those held here (else None)."""
        k = bisect_right(self._starts, i) - 1
        if k >= 0:
            w = self._weights[k]
            if i < w.start + w.rows * w.cols:
                return w
        return None

    def __getitem__(self, i: int) -> Value:
        w = self.weights_of(i)
        if w is not None:
            return self.matrices[w].flat[i - w.start]
        return self.others[i]

    def reader(self) -> Callable[[int], Value]:
        """``self[i]`` for many ids in turn, the weight of the last id read tried first (a
        page or a rounding pass reads a weight's entries in a row: 413,000 look-ups at
        d_model 128, each a bisection and two calls before).

        Raises:
            KeyError: from the function, for an id not held here (as ``self[i]``)."""
        span = [0, 0, ()]  # the last weight's first id, its end, its values

        def read(i: int) -> Value:
            start, end, flat = span
            if start <= i < end:
                return flat[i - start]
            w = self.weights_of(i)
            if w is None:
                return self.others[i]
            span[:] = w.start, w.start + w.rows * w.cols, self.matrices[w].flat
            return span[2][i - w.start]
        return read

    def __iter__(self) -> Iterator[int]:
        for w in self._weights:
            yield from range(w.start, w.start + w.rows * w.cols)
        yield from self.others

    def __len__(self) -> int:
        return sum(w.rows * w.cols for w in self._weights) + len(self.others)


@dataclass(eq=False, repr=False)
class Evaluation:
    """Everything derive computes for a case at one working precision.

    Attributes:
        prec: working precision in bits.
        before: the forward pass with the case's weights.
        grads: dL/dtheta for every trainable leaf id (exact 0 where L does not depend on it).
        updated: the weights after one SGD step, by leaf id.
        after: the forward pass with the updated weights (None when there is no loss).
    """

    prec: int
    before: Pass
    grads: LeafValues | dict[int, Value]
    updated: LeafValues | dict[int, Value]
    after: Pass | None


def forward(graph: Graph, updated: LeafValues | None = None, kernels: bool = True,
            exact: Mapping[int, fmpq] | None = None, needed: Sequence[int] | None = None) -> Pass:
    """Evaluate every node in order at the current working precision.

    ``updated`` replaces trainable leaves' values (the weights after the step, for the
    pass after it). With ``kernels`` (the default), each matrix product the graph records
    (:class:`~derive.kernels.MatMul`) is computed in one call when its first node is
    reached, a weight it multiplies by read as one :class:`~derive.kernels.Factor`;
    without, node by node (the scalar path; the same numbers). ``exact``: nodes whose
    value is known to be a rational (a branch's input whose exact form simplifies to 0:
    :meth:`Evaluator.evaluation`), taken instead of their balls. ``needed``: the only
    nodes (no weight's entries) whose values are wanted, in order, with every node they
    depend on (:meth:`Graph.ancestor_operations` of what the page prints after the step:
    z, p and L; under the causal mask, the rows before the last of the last block's
    attention are not among them); every other node's value is None (:meth:`Pass.holds`),
    and a matrix product computes only its rows that hold a needed entry.

    Raises:
        NeedPrecision: a ball is too wide to decide a branch; evaluate at a higher precision.
        Undefined: an exact division by zero or similar, with the node's label.
    """
    groups = graph.kernels if kernels else {}
    weights = {w.start: w for w in graph.weights}
    moved = updated.matrices if updated is not None else {}
    others = updated.others if updated is not None else {}
    whole = graph.read_whole() if kernels else set()  # (weights no node reads entry by entry)

    def factor_of(w: Weights) -> Factor:
        """A weight's values in this pass as one factor: the case's own (kept by the
        weight, across passes and precisions), or the weight after the step."""
        return moved[w] if w in moved else weight_factor(w)

    exact = exact or {}
    values: list[Value] = []

    def made() -> Pass:
        """The values so far, with the weights only kernels read (whole)."""
        given = [w for w in graph.weights if w.start in whole and w not in moved]
        return Pass(values, LeafValues(graph, {**{w: weight_factor(w) for w in given}, **moved}, {}),
                    None if needed is None else wanted)

    wanted = frozenset() if needed is None else frozenset(needed)
    select = None if needed is None else wanted  # (the ids a run of entries computes: None, all)
    one_by_one = 0  # (the entries of a run that raised, up to here, are evaluated one at a time)
    nodes = graph.nodes.items  # (a weight's entries are skipped below: the rest are Nodes)
    # (a pass of some nodes skips from one needed node, weight or product to the next)
    stops = None if needed is None else sorted([*needed, *weights, *groups])
    while (i := len(values)) < len(nodes):  # (a kernel or a weight fills in many values at once)
        if stops is not None and i not in wanted and i not in weights and i not in groups:
            k = bisect_left(stops, i)
            values += repeat(None, (stops[k] if k < len(stops) else len(nodes)) - i)
            continue
        w = weights.get(i)
        if w is not None:  # a weight's entries at once
            if w.start in whole:  # (its kernels read the matrix whole: no value per entry is made)
                values += repeat(None, w.rows * w.cols)
            else:
                values += moved[w].flat if w in moved else w.values
            continue
        group = groups.get(i)
        if group is not None:
            values += group.forward(values, factor_of, None if needed is None else
                                    [any(j in wanted for j in row if j is not None) for row in group.members])
            for k in (k for k in exact if i <= k < len(values)):
                values[k] = exact[k]
            continue
        node = nodes[i]
        run = type(node) is Entries  # (a run of one elementwise operation: its entries from i on, at once)
        if run and i >= one_by_one:
            try:
                values += node.values(values, i, node.start + len(node), select, exact)
                continue
            except (Undefined, NeedPrecision):  # (then one at a time, below: the entry at fault raises, with its id)
                one_by_one = node.start + len(node)
        try:
            if run:
                values += node.values(values, i, i + 1, select, exact)
            elif node.op is None:
                values.append(others.get(i, node.leaf))
            elif i in exact:
                values.append(exact[i])
            else:
                values.append(node.op.eval([values[p] for p in node.parents]))
        except Undefined as exc:
            raise Undefined(f"{graph.nodes[i].meta.label}: {exc}", i) from None
        except NeedPrecision:
            raise NeedPrecision(i / len(nodes), i, made()) from None
    return made()


def gradient_leaves(graph: Graph, gradients: tuple[str, ...] | None = None) -> list[int]:
    """The trainable leaves whose ``dL/dtheta`` is derived: those of the weights named in
    ``gradients`` (``conventions.gradients``; None: every one), in the graph's order."""
    leaves = graph.param_leaves()
    return leaves if gradients is None else [i for i in leaves if graph.nodes[i].meta.param in gradients]


def backward(graph: Graph, values: list[Value], output: int, kernels: bool = True,
             gradients: tuple[str, ...] | None = None) -> LeafValues:
    """Reverse mode: ``dL/dtheta`` for the trainable leaves of the weights named in
    ``gradients`` (``conventions.gradients``; None: every one), where L is node ``output``.

    Adjoints that are exactly zero are never propagated, so a weight that L does not
    depend on gets an exact 0 (a token that is not in the sentence does not move). With
    ``kernels``, a recorded matrix product passes its adjoints back in one call when its
    last node is reached (its nodes are contiguous and none reads another, so every one
    of their adjoints is complete then), a weight's whole derivative as one matrix
    (``dW = X^T G``). A trainable leaf left out of ``gradients`` gets no adjoint: a
    product whose every weight is left out skips ``dW = X^T G``.
    """
    wanted = {w for w in graph.weights if gradients is None or w.param in gradients}
    idle = set() if gradients is None else set(graph.param_leaves()).difference(gradient_leaves(graph, gradients))
    adjoint: dict[int, Value] = {output: fmpq(1)}
    whole: dict[Weights, Factor] = {}  # a weight's derivative from the products that read it whole
    group_of = {}  # a product's member -> the product (its members are contiguous, and none reads another)
    if kernels:
        for group in graph.kernels.values():
            ids = group.ids
            if ids[-1] <= output:
                group_of.update(dict.fromkeys(ids, group))
    items = graph.nodes.items
    below = output + 1  # (the ids from here up are done: a product is done whole at its last member met)
    for i in reversed(graph.ancestor_operations(output)):  # (no other node has an adjoint; a weight's entries
        if i >= below:                                      # are leaves: nothing to pass on)
            continue
        node = items[i]
        group = group_of.get(i)
        if group is not None:
            below = group.start
            pop = adjoint.pop  # (an exact 0 where a member has no adjoint; is_zero inlined below)
            grad = [[ZERO if j is None else pop(j, ZERO) for j in row] for row in group.members]
            if any(type(g) is not fmpq or g for row in grad for g in row):
                scalars, matrices = group.backward(values, grad, weight_factor, idle)
                for p, d in scalars:
                    adjoint[p] = adjoint[p] + d if p in adjoint else d
                for w, dW in matrices:
                    whole[w] = dW if w not in whole else whole[w].plus(dW)
            continue
        if type(node) is Entries:
            node = Entry(node, i - node.start)
        g = adjoint.pop(i, None) if node.op is not None else adjoint.get(i)
        if g is None or node.op is None or is_zero(g):
            continue
        args = [values[p] for p in node.parents]
        for p, d in zip(node.parents, node.op.partials(args, values[i])):
            if is_zero(d) or (idle and p in idle):
                continue
            contribution = g * d
            adjoint[p] = adjoint[p] + contribution if p in adjoint else contribution
    matrices = {}
    loose = sorted(adjoint)  # (the adjoints left: of leaves read one by one)
    for w in graph.weights:
        if w not in wanted:
            continue
        end = w.start + w.rows * w.cols
        dW = whole.get(w)
        if dW is None:
            dW = Factor(w.rows, w.cols, [adjoint.get(j, ZERO) for j in range(w.start, end)])
        elif loose[bisect_left(loose, w.start):bisect_left(loose, end)]:  # entries also read one by one
            dW = Factor(w.rows, w.cols, [plus(d, adjoint[j]) if j in adjoint else d
                                         for j, d in enumerate(dW.flat, w.start)])
        matrices[w] = dW
    others = {leaf: adjoint.get(leaf, ZERO) for leaf in graph.loose_params() if leaf not in idle}
    return LeafValues(graph, matrices, others)


def param_names(graph: Graph) -> set[str]:
    """The names of the graph's trainable leaves (its weights', and given logits')."""
    return {w.param for w in graph.weights} | {graph.nodes[i].meta.param for i in graph.loose_params()}


def _step(w: Weights, D: Factor, eta: fmpq) -> Factor:
    """A weight after one SGD step, ``W - eta dW``: an entry whose derivative is an exact
    0 keeps its exact value; a derivative all balls (the usual) is one arb_mat operation
    at the working precision, any other entry by entry."""
    if D.all_ball:  # (made when read: the pass after can multiply by W and by D's factors instead)
        W = weight_factor(w)
        return Factor.made(w.rows, w.cols, ("step", W, D, eta), lambda: W.arb() - D.arb() * arb(eta))
    return Factor(w.rows, w.cols, [v if is_zero(g) else v - eta * g for v, g in zip(w.values, D.flat)])


def evaluate(graph: Graph, loss: int | None, learning_rate: fmpq, prec: int,
             trained: tuple[str, ...] | None = None, kernels: bool = True,
             gradients: tuple[str, ...] | None = None, exact: Mapping[int, fmpq] | None = None,
             printed_after: tuple[int, ...] | None = None) -> Evaluation:
    """Forward pass, gradients of the loss node ``loss`` for the weights named in
    ``gradients`` (None: all of them; none of the graph's: the loss alone, no step and no
    pass after), one SGD step ``theta - eta dL/dtheta`` (seed 000, step 2b) on those of
    them named in ``trained`` (None: all) and the pass again, all at ``prec`` bits, with
    the graph's matrix kernels or (``kernels`` False) node by node; ``exact``: the
    forward pass's nodes known to be rationals (:func:`forward`; not the pass after the
    step, whose weights differ). The pass after the step computes only the nodes
    ``printed_after`` and what they depend on (its page prints z, p and L; the rows of
    attention before the last, under the causal mask, are not needed), or every node
    when it is None.

    Raises:
        NeedPrecision, Undefined: as :func:`forward`.
    """
    with ctx.workprec(prec):
        before = forward(graph, kernels=kernels, exact=exact)
        if loss is None or not any(gradients is None or p in gradients for p in param_names(graph)):
            return Evaluation(prec, before, {}, {}, None)
        grads = backward(graph, before.values, loss, kernels, gradients)
        matrices = {w: _step(w, dW, learning_rate) if trained is None or w.param in trained else weight_factor(w)
                    for w, dW in grads.matrices.items()}
        others = {leaf: before.values[leaf] if is_zero(g) or (trained is not None and graph.nodes[leaf].meta.param
                                                               not in trained)
                  else before.values[leaf] - learning_rate * g for leaf, g in grads.others.items()}
        updated = LeafValues(graph, matrices, others)
        try:
            after = forward(graph, updated, kernels,
                            needed=None if printed_after is None else graph.ancestor_operations(printed_after))
        except NeedPrecision as exc:  # (exact forms are of the pass before the step: more precision here)
            raise NeedPrecision(exc.reached) from None
    return Evaluation(prec, before, grads, updated, after)


class Evaluator:
    """The evaluations of one graph, computed on demand and kept by working precision.

    Args:
        graph: the quantities. loss: node id of L, or None (no gradients, no step).
        learning_rate: eta of the SGD step, exact. trained: the parameter names the step
            moves (None: all of them), as for :func:`evaluate`.
        file: the case file that errors name.
        explain: turns an :class:`Undefined` (node id in ``args[1]``) into the
            :class:`EvaluationError` the user sees, naming the field at fault; by default
            the error carries the Undefined's own message.
        gradients: the parameter names whose dL/dtheta is derived (None: all of them;
            an empty tuple: the loss alone), as for :func:`evaluate`.

    Attribute ``kernels`` (default True): evaluate recorded matrix products in one call;
    set it to False before the first evaluation for the scalar path (the same numbers).
    Attribute ``decide`` (default None): ``decide(node_id, values)``, the rational a
    quantity is by its exact form built from a pass's ``values``, or None (the exact
    path: :meth:`derive.exact.ExactForms.rational_in`); the evaluation asks it about the
    input of a branch no precision decides (a ReLU of an exact 0 made of square roots).
    """

    def __init__(self, graph: Graph, loss: int | None, learning_rate: fmpq,
                 trained: tuple[str, ...] | None = None, file: str | None = None,
                 explain: Callable[[Undefined], EvaluationError] | None = None,
                 gradients: tuple[str, ...] | None = None):
        self.graph = graph
        self.loss = loss
        self.learning_rate = learning_rate
        self.trained = trained
        self.gradients = gradients
        self.file = file
        self.explain = explain or (lambda exc: EvaluationError(str(exc.args[0]), file=file))
        self._evaluations: dict[int, Evaluation] = {}
        self._too_low: set[int] = set()  # precisions where a branch was undecided (NeedPrecision)
        self.kernels = True
        self.decide: Callable[[int, Pass], Fraction | None] | None = None
        self.exact: dict[int, fmpq] = {}  # branch inputs found rational by decide (the forward pass's)
        self._asked: set[int] = set()  # branch inputs decide was asked about
        self.printed_after: tuple[int, ...] | None = None  # the nodes the pass after the step is made for (None: all)

    @property
    def precisions(self) -> tuple[int, ...]:
        """The working precisions (bits) of the evaluations kept (the highest so far: see
        :meth:`evaluation`), lowest first."""
        return tuple(sorted(self._evaluations))

    def evaluation(self, prec: int = START_PREC) -> Evaluation:
        """The evaluation at ``prec`` bits, or at the first higher precision (doubling, up
        to MAX_PREC) where every branch (ReLU at 0, a division) is decided. An evaluation
        at a higher precision answers for a lower one and replaces it (one evaluation is
        kept: a wide model's holds gigabytes, and its balls are at least as narrow).

        A branch undecided at some precision first has its input's exact form asked
        (:attr:`decide`): an input that is a rational (an exact 0 that square roots make
        into balls, as the seed's pre-activation with ReLU) is taken as that rational and
        the evaluation made again at the same precision; else the precision goes up.

        Raises:
            EvaluationError: a branch is still undecided at MAX_PREC bits (naming the
                quantity), or the forward pass is undefined (from ``explain``).
        """
        kept = [p for p in self._evaluations if p >= prec]
        if kept:
            return self._evaluations[min(kept)]
        self._evaluations.clear()  # (before the new one is made: never two in memory)
        while prec not in self._evaluations:
            if prec in self._too_low:  # known to leave a branch undecided: never evaluated twice
                prec *= 2
                continue
            try:
                with gc_paused():
                    self._evaluations[prec] = evaluate(self.graph, self.loss, self.learning_rate, prec,
                                                       self.trained, self.kernels, self.gradients, self.exact,
                                                       self.printed_after)
            except NeedPrecision as exc:
                if self._decided(exc):
                    continue  # (the same precision again, the input taken exactly)
                if prec >= MAX_PREC:
                    where = f" ({self.graph.nodes[exc.node].meta.label}: its input is 0 or too near 0 to tell)" \
                        if exc.node is not None else ""
                    raise EvaluationError(f"a branch (ReLU at 0 or a division) cannot be decided{where}",
                                          file=self.file) from None
                self._too_low.add(prec)
                prec = next_precision(prec, exc.reached)
            except Undefined as exc:
                raise self.explain(exc) from None
        return self._evaluations[prec]

    def _decided(self, exc: NeedPrecision) -> bool:
        """Whether :attr:`decide` finds an input of the undecided branch ``exc`` names (a
        ball holding 0 in the pass before the step) to be a rational, each input asked
        once; those found go into :attr:`exact`."""
        if self.decide is None or exc.node is None or exc.values is None:
            return False
        found = False
        for p in dict.fromkeys(self.graph.nodes[exc.node].parents):
            v = exc.values[p]
            if p in self._asked or is_exact(v) or not as_arb(v).contains(0):
                continue
            self._asked.add(p)
            q = self.decide(p, exc.values)
            if q is not None:
                self.exact[p] = fmpq(q.numerator, q.denominator)
                found = True
        return found

    def value(self, ref: Ref, prec: int = START_PREC) -> Value:
        """The value (fmpq or arb) of one quantity at ``prec`` bits (see :meth:`evaluation`).

        Raises:
            NotDerived: for the derivative (or the value after the step) of a weight that
                ``gradients`` leaves out, or the pass after a step that has none.
        """
        ev = self.evaluation(prec)
        if ref.phase == "before":
            return ev.before[ref.id]
        if ref.phase == "after":
            if ev.after is None and self.loss is not None:
                raise NotDerived("conventions.gradients asks for no derivative: there is no SGD step and no pass "
                                 "after it", file=self.file)
            if ev.after is not None and not ev.after.holds(ref.id):  # (not among printed_after's ancestors)
                ev = self._whole_after(ev)
            return ev.after[ref.id]
        values = ev.grads if ref.phase == "grad" else ev.updated
        if ref.id not in values and self.loss is not None:
            param = self.graph.nodes[ref.id].meta.param
            raise NotDerived(f"conventions.gradients leaves out {param}: its derivative is not derived",
                             file=self.file)
        return values[ref.id]

    def _whole_after(self, ev: Evaluation) -> Evaluation:
        """``ev`` with its pass after the step made for every node (it was made for
        :attr:`printed_after` only: :func:`evaluate`), at the same precision; from now on
        every evaluation makes it whole. A branch that precision does not decide there
        (outside what the page prints) raises the precision as :meth:`evaluation` does."""
        self.printed_after = None
        try:
            with ctx.workprec(ev.prec), gc_paused():
                ev.after = forward(self.graph, ev.updated, self.kernels)
        except NeedPrecision:
            self._evaluations.clear()
            return self.evaluation(next_precision(ev.prec))
        except Undefined as exc:
            raise self.explain(exc) from None
        return ev

    def values(self, refs: Iterable[Ref], prec: int = START_PREC) -> list[Value]:
        """The value of each ref, in order, at ``prec`` bits, as :meth:`value` gives it, found
        by an index into the evaluation's arrays (a ref the arrays do not hold, such as the
        derivative of a weight ``gradients`` leaves out, goes to :meth:`value`, which raises
        as it says): rounding the 457,667 quantities of a wide block calls :meth:`value`
        for none of them.

        Raises:
            NotDerived: as :meth:`value`.
        """
        ev = self.evaluation(prec)
        tables = {"before": ev.before.values.__getitem__, "grad": _reader(ev.grads), "updated": _reader(ev.updated),
                  "after": None if ev.after is None else ev.after.values.__getitem__}
        out = []
        for phase, group in groupby(refs, key=itemgetter(0)):  # (a phase's refs at once, read in C)
            group = list(group)
            try:
                found = list(map(tables[phase], map(itemgetter(1), group)))
            except (LookupError, TypeError):  # (TypeError: no pass after the step)
                found = [None] * len(group)
            if any(map(is_, found, repeat(None))):  # (each missing value as value() gives it, or its error)
                found = [self.value(ref, prec) if value is None else value for ref, value in zip(group, found)]
            out += found
        return out


def _reader(values: LeafValues | dict[int, Value]) -> Callable[[int], Value]:
    """A look-up of one id at a time in ``values`` (:meth:`LeafValues.reader`, or a dict's)."""
    return values.reader() if isinstance(values, LeafValues) else values.__getitem__


def next_precision(prec: int, reached: float | None = None) -> int:
    """The working precision (bits) to evaluate at after ``prec`` left a branch undecided:
    twice ``prec``; or, when the forward pass had got only a fraction ``reached`` of its
    way, the first doubling at least ``1.25 prec / reached``, at most 8 times ``prec``:
    the bits a ball loses grow with the depth of the model (about 30 a block at d_model
    768, measured on the bench's synthetic blocks: 128 bits leave 91 after one block, 65
    after two), so a pass that ran out a third of its way needs about three times the
    bits, and each attempt short of it costs a partial pass (a 12-block forward pass at
    d_model 768 stopped at 128 and at 256 bits: 45 s of its 140). Never past MAX_PREC."""
    factor = 2
    if reached is not None and 0 < reached:
        while factor < 8 and prec * factor * reached < 1.25 * prec:
            factor *= 2
    return min(prec * factor, MAX_PREC)


class Progress:
    """Where long work reports how far it has got (issue 13, item 5): :meth:`advance` after
    each quantity rounded (:class:`~derive.decimals.Rounder`) or read again by hand
    (:class:`~derive.byhand.ByHand`). This one does nothing; the CLI puts a Rich progress
    bar on stderr in its place while a command runs (:func:`reporting`)."""

    def advance(self, n: int = 1) -> None:
        """``n`` more quantities done."""


_progress = Progress()


def progress() -> Progress:
    """The :class:`Progress` long work reports to now (by default one that does nothing)."""
    return _progress


@contextmanager
def reporting(meter: Progress):
    """Make ``meter`` the one :func:`progress` returns for a block, and restore the previous after."""
    global _progress
    previous, _progress = _progress, meter
    try:
        yield meter
    finally:
        _progress = previous


@contextmanager
def gc_paused():
    """Pause Python's cyclic garbage collector for a block (building or evaluating a
    graph), and restart it after, if it was running. Building and evaluating a large
    case create hundreds of thousands of objects that stay alive, and every full
    collection walks all of them, so the collections cost time that grows faster than
    the graph; nothing is lost: a cycle made meanwhile is collected once the collector
    runs again. The objects made meanwhile join the oldest generation when the block
    ends (``gc.freeze()`` then ``gc.unfreeze()``: two list splices), as if they had
    survived the young collections they skipped; left young, the first collection after
    would walk every one of them (2 s for the 7 million weight entries of d_model 768).
    When a command has already set objects aside (:func:`set_aside`, by
    :func:`derive.cli.derived`, until it ends), these join them instead. (Known from a flag,
    not from ``gc.get_freeze_count()``, which walks every object set aside: 0.16 s a call in
    a process of 3 million objects, 2.8 s of a 5 s run inside a long test worker.)"""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if not _set_aside:
            gc.unfreeze()
        if enabled:
            gc.enable()


_set_aside = False  # whether a command has set its objects aside (see set_aside)


def set_aside(on: bool) -> None:
    """Set every object alive aside from the collector's full passes (``gc.freeze``), or
    give them back (``gc.unfreeze``), and remember which (read by :func:`gc_paused`)."""
    global _set_aside
    if on:
        gc.freeze()
    else:
        gc.unfreeze()
    _set_aside = on


__all__ = ["MAX_PREC", "START_PREC", "Evaluation", "Evaluator", "Pass", "NeedPrecision", "Progress", "Undefined",
           "next_precision", "backward", "evaluate", "forward", "gc_paused", "set_aside", "gradient_leaves", "param_names", "progress", "reporting"]
