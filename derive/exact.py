"""Exact forms of a graph's quantities, as SymPy expressions.

A quantity whose value is rational is that Rational. Any other forward quantity is its
operation applied to its parents' forms (``sqrt(3)/2``, ``exp(2/5)/(1 + exp(2/5))``) while
the tree stays small; past that it is its *definition*, the operation applied to its
parents' names (``-log(p(␣roof))``), which the text of :meth:`ExactForms.exact_text`
prints straight from the graph in the reader's order (:mod:`derive.plain`, no SymPy).
The rounding's exact path asks whether a larger form (up to EXACT_PATH_SIZE operations)
simplifies to a rational (DESIGN.md, "Correct rounding").
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import NamedTuple

from flint import fmpq

from . import plain
from .evaluate import Evaluator
from .graph import Dot, Exp, GeluErf, GeluTanh, Graph, Lin, Silu, Sqrt, approx, is_exact
from .isolated import OverBudget, budget, isolated_map
from .lazy import lazy
from .printing import sstr
from .steps import Ref

sympy = lazy("sympy")  # loaded when an exact form is first asked for


CLOSED_FORM_SIZE = 40  # a closed form larger than this is shown as its definition
EXACT_PATH_SIZE = 4000  # the largest closed form the exact path simplifies
GRADIENT_FORM_NODES = 200  # a derivative whose quantity more quantities read than this has no exact form
EXACT_PATH_SECONDS = 2.0  # the CPU time the exact path may spend on one quantity (then: undecided)
EXACT_PATH_TOTAL = 3.0  # the CPU time it may spend on one derivation's quantities together (then: undecided)
FORM_SECONDS = 0.5  # the CPU time SymPy may take to build one closed form (then: the quantity's definition)
SLOW_FORMS = 4  # after this many forms given up, every quantity is shown by its definition
KINKS = ("DiracDelta", "sign", "Piecewise", "Derivative", "Subs")  # SymPy classes: no exact derivative
EXACT_PATH_EXPONENT = 10_000  # an exponential of an argument larger than this is built unevaluated
SQRT_BITS = 512  # a square root of a rational whose numerator or denominator is longer has no compact closed form
# (SymPy factors the integers under a square root: seconds for the 2,100 bits of sigma^2 + eps with
# eps = 1.5e641, just under FORM_SECONDS each time; the bundled cases' are at most 20 bits). The exact
# path's forms (EXACT_PATH_SIZE, bounded by its own budgets) still build them: a tiny value's exact 0.


def exponent_size(op, size: float) -> float:
    """How large an argument the exponential inside ``op``'s closed form gets when the op's
    input is about ``size`` in absolute value: e^x and SiLU: size; the exact GELU's erf:
    size^2 / 2; GPT-2's tanh GELU: sqrt(2/pi) 0.044715 size^3; other ops: 0. SymPy decides
    whether 1 + tanh(-y) is 0 by evaluating it at about 1.44 y bits, and it asks while
    merely building the form: the form of a quantity past EXACT_PATH_EXPONENT is built
    unevaluated, and a form that holds one is never simplified (GELU of -10^15 in a W_1
    entry, whose 1 + tanh(-7e43) is e^-1.4e44: 12 s to build cat-climbed's forms for the
    JSON). A form in which it cancels (times a weight of exactly 0) is simplified as any
    other."""
    size = min(abs(size), 1e100)
    if isinstance(op, (Exp, Silu)):
        return size
    if isinstance(op, GeluErf):
        return size * size / 2
    if isinstance(op, GeluTanh):
        return 0.0357 * size ** 3
    return 0.0


class ExactForms:
    """The exact forms of one graph's quantities, each built once per size limit.

    Args:
        graph: the quantities. evaluator: their values (a form is a Rational where the
            value is exact). learning_rate: eta, as the case gives it, printed in the exact
            form of a weight after the SGD step.
    """

    def __init__(self, graph: Graph, evaluator: Evaluator, learning_rate):
        self.graph = graph
        self.evaluator = evaluator
        self.learning_rate = learning_rate
        self._forms: dict[int, dict] = {}
        self._rationals: dict[Ref, Fraction | None] = {}
        self._exact_spent = 0.0  # CPU seconds the exact path has spent (at most EXACT_PATH_TOTAL, then no more)
        self._steep_forms: set[sympy.Expr] = set()  # forms built unevaluated (see exponent_size)
        self._slow: set[int] = set()  # quantities whose form was given up past FORM_SECONDS; past SLOW_FORMS, no more are built
        self._names: dict[Way, dict] = {}  # how a definition writes each parent (see _named)
        self._split: dict[sympy.Expr, tuple | None] = {}  # a part of a sum -> _terms(part)
        self._sizes: dict[sympy.Expr, int] = {}  # a term of a sum -> its tree size (to EXACT_PATH_SIZE + 1)
        self._symbols: dict[int, sympy.Expr] = {}  # a quantity -> a symbol standing for it (see _standing_for)
        self._texts: dict[sympy.Expr, str] = {}  # a closed form -> its text (crane: 3,032 forms, 1,919 distinct)

    def closed_form(self, node_id: int, limit: int = CLOSED_FORM_SIZE) -> sympy.Expr:
        """The exact SymPy form of a forward quantity: a Rational when the value is rational,
        else its operation applied to its parents' forms while the tree stays within
        ``limit`` operations (an exponential past EXACT_PATH_EXPONENT unevaluated, see
        :func:`exponent_size`); past that, a symbol named after the quantity."""
        form = self._closed(node_id, limit)
        return sympy.Symbol(self.graph.nodes[node_id].meta.label) if form is None else form

    def _closed(self, node_id: int, limit: int = CLOSED_FORM_SIZE) -> sympy.Expr | None:
        """:meth:`closed_form`, None for a quantity past ``limit``."""
        values = self.evaluator.evaluation().before  # (what evaluator.value reads, taken once: the Pass by id)
        form = self._form(node_id, limit, self._forms.setdefault(limit, {}), values)[0]
        return form

    def _form(self, node_id: int, limit: int, memo: dict, values) -> tuple[sympy.Expr | None, int]:
        """(the closed form, its size), or (None, limit + 1) for a form past ``limit``;
        ``values``: the forward pass's values by node id, at the starting precision or
        above (only whether each is exact is read, and an exact one's fraction)."""
        if node_id in memo:
            return memo[node_id]
        v = values[node_id]
        if is_exact(v):
            result = (sympy.Rational(int(v.p), int(v.q)), 1)
        else:
            node = self.graph.nodes[node_id]
            parts = []
            for p in node.parents:  # (up to the first too large: this form is then its name)
                part, part_size = self._form(p, limit, memo, values)
                if part_size > limit:
                    break
                parts.append(part)
            form, size = None, limit + 1
            if len(parts) == len(node.parents) and len(self._slow) < SLOW_FORMS and node_id not in self._slow \
                    and not self._sum_over(node, parts, limit) \
                    and not (limit <= CLOSED_FORM_SIZE and _huge_root(node.op, parts)):
                steep = self._steep(node_id, values)
                try:
                    with budget(FORM_SECONDS) as mine:  # (SymPy tests a 2,000-digit integer for primality in a sqrt)
                        with sympy.evaluate(not steep):
                            built = node.op.sympy(parts)
                        built_size = _tree_size(built, limit)
                    if steep:
                        self._steep_forms.add(built)
                except OverBudget as stop:
                    if stop.owner is not mine:  # (an outer budget's stop: not this form's)
                        raise
                    self._slow.add(node_id)  # the quantity keeps its name (its definition is printed)
                    built, built_size = form, size
                if built_size <= limit:  # SymPy's own simplification often keeps it small
                    form, size = built, built_size
            result = (form, size)
        memo[node_id] = result
        return result

    def _sum_over(self, node, parts: list[sympy.Expr], limit: int) -> bool:
        """Whether the form of a sum (a Lin or Dot node) certainly has more than ``limit``
        nodes, known without building it (building such sums was most of crane's closed-form
        time: q = sum_k x_k W_k over 16 sines). SymPy's Add collects the terms ``c*s`` of
        its arguments by ``s`` (``Add.flatten``, sympy/core/add.py: numbers into one, an Add
        argument's own terms taken in), and a rational factor keeps each ``s`` as it is
        (``Mul.flatten`` distributes it over an Add by ``_keep_coeff`` and keeps it apart
        from the other factors, numeric powers included). So the form is an Add of the
        ``s`` whose coefficients do not cancel, and of the number if not 0, each term at
        least as large as its ``s``: the sum of those sizes (+ 1 for the Add) is a lower
        bound. False (not known) for another operation, a product of two irrational parts,
        or a part ``c*(a + b)`` (a rational may cancel c and free the Add's terms)."""
        op = node.op
        if isinstance(op, Lin):
            pairs = [(c, f) for c, f in zip(op.coeffs, parts)]
        elif isinstance(op, Dot):
            n = len(parts) // 2
            pairs = []
            for a, b in zip(parts[:n], parts[n:]):
                if not (a.is_Rational or b.is_Rational):
                    return False
                pairs.append((b, a) if b.is_Rational else (a, b))
        else:
            return False
        number, terms = op.const if isinstance(op, Lin) else fmpq(0), {}
        for c, f in pairs:
            c = fmpq(int(c.p), int(c.q))
            if c == 0:
                continue
            split = self._split.get(f, False)
            if split is False:
                split = self._split[f] = _terms(f)
            if split is None:
                return False
            number += c * split[0]
            for s, k in split[1].items():
                terms[s] = terms.get(s, 0) + c * k
        kept = [s for s, k in terms.items() if k != 0]
        least = int(len(kept) + (number != 0) > 1) + (number != 0)  # the Add node, the number
        for s in kept:
            size = self._sizes.get(s)
            if size is None:
                size = self._sizes[s] = _tree_size(s, EXACT_PATH_SIZE)
            least += size
            if least > limit:
                return True
        return False

    def rationals(self, refs, seconds: float = EXACT_PATH_SECONDS,
                  total: float = EXACT_PATH_TOTAL) -> dict[Ref, Fraction | None]:
        """The rational each quantity is, where its exact form (at most EXACT_PATH_SIZE
        operations) simplifies to one, else None: a forward quantity's closed form, a
        derivative dL/dtheta's (:meth:`_gradient_form`), a weight after the step theta -
        eta dL/dtheta from its derivative's; None for the pass after the step, and also
        when SymPy takes more than ``seconds`` of CPU time over it (at most
        EXACT_PATH_SECONDS), or once the exact path has spent EXACT_PATH_TOTAL on the
        derivation's quantities (a case of many ties stays bounded, its later ones
        undecided), or ``total`` on these. The simplifications run in a forked child
        process (:func:`~derive.isolated.isolated_map`), so a stop never leaves this
        process's SymPy half-updated. Each quantity is simplified once; one given up under
        a shorter budget than EXACT_PATH_SECONDS (the rounding's early try) may be tried
        again with more."""
        out: dict[Ref, Fraction | None] = {}
        todo = []
        for ref in dict.fromkeys(refs):
            known = self._rationals.get(ref, False) if ref.phase != "after" else None
            if known is False:
                todo.append(ref)
            else:
                out[ref] = known
        if todo:
            seconds = min(seconds, EXACT_PATH_SECONDS)
            # (simplify imports sympy.physics.units at its first call, 0.17 s: once here, not in each child)
            import sympy.physics.units  # noqa: F401
            left = max(min(total, EXACT_PATH_TOTAL - self._exact_spent), 0.0)
            outcomes = isolated_map(self._simplified, todo, seconds, left)
            for ref, outcome in zip(todo, outcomes):
                self._exact_spent += outcome.seconds
                out[ref] = outcome.value
                if outcome.done or seconds >= EXACT_PATH_SECONDS:
                    self._rationals[ref] = outcome.value
        return out

    def known_rational(self, ref: Ref) -> Fraction | None:
        """The rational :meth:`rationals` has found ``ref`` to be, else None (not tried, or
        not rational): nothing is simplified here."""
        known = self._rationals.get(ref)
        return known if isinstance(known, Fraction) else None

    def rational(self, node_id: int) -> Fraction | None:
        """:meth:`rationals` of one forward quantity, with the full budget."""
        ref = Ref("before", node_id)
        return self.rationals([ref])[ref]

    def _simplified(self, ref: Ref) -> Fraction | None:
        """The rational a quantity's exact form simplifies to, else None (see
        :meth:`rationals`; no budget here: run by it in a child process under one)."""
        if ref.phase == "updated":  # theta - eta dL/dtheta (a weight whose derivative is undecided moved)
            derivative = self._simplified(Ref("grad", ref.id))
            if derivative is None:
                return None
            leaf = self.graph.nodes[ref.id].leaf
            return Fraction(int(leaf.p), int(leaf.q)) - Fraction(self.learning_rate) * derivative
        form = self.closed_form(ref.id, EXACT_PATH_SIZE) if ref.phase == "before" else self._gradient_form(ref.id)
        return self._rational_of(form)

    def _rational_of(self, form: sympy.Expr | None) -> Fraction | None:
        """The rational ``form`` simplifies to (``sympy.simplify``), else None; None without
        simplifying for no form, a form with a symbol in it (a quantity past the size
        limit), or one holding an exponential built unevaluated or a huge power (see
        :func:`exponent_size`, :func:`_huge_power`). No budget here: its callers run it in a
        child process under one."""
        if form is None:
            return None
        steep = bool(self._steep_forms) and form.has(*self._steep_forms)
        if form.free_symbols or steep or _huge_power(form):
            return None
        simple = sympy.simplify(form)
        return Fraction(int(simple.p), int(simple.q)) if simple.is_Rational else None

    def _gradient_form(self, node_id: int) -> sympy.Expr | None:
        """dL/dtheta as a closed form, for theta a quantity (a weight's entry, a given
        logit): the loss's closed form built with theta as a symbol (every quantity that
        reads it, in the graph's order, from its operation's form; the others from their
        own closed forms, or first as symbols, which decides a derivative that is 0 whatever
        they are), differentiated by SymPy (the chain rule, Rumelhart et al. 1986: what
        reverse mode computes node by node) and taken at theta's own form. None with
        no loss, when the derivative holds another kink than a ReLU's step (taken as 0 at
        0, as derive's ReLU), when more than GRADIENT_FORM_NODES quantities read theta (a weight of a
        whole block: its form would pass EXACT_PATH_SIZE, after seconds of building), or
        when a form passes EXACT_PATH_SIZE operations."""
        loss = self.evaluator.loss
        if loss is None or node_id > loss:
            return None
        # (first with every irrational quantity read that does not read theta as a symbol: a derivative 0
        # there is 0 whatever they are, found without building e^x over their forms, whose terms' signs
        # SymPy tests by evaluating them: 2.5 s for random-18's W_Q_{2,1}, 0 since one query's softmax is 1;
        # and a quantity in whose form theta cancelled is read as a constant, so that random-16's W_K of
        # block 1, read by more than GRADIENT_FORM_NODES quantities, is found 0 too)
        theta = sympy.Dummy("theta")
        if self._derivative(node_id, loss, theta, self._standing_for, pruned=True) == 0:
            return sympy.Integer(0)
        derivative = self._derivative(node_id, loss, theta, lambda p: self.closed_form(p, EXACT_PATH_SIZE))
        if derivative is None or derivative.has(*(getattr(sympy, kink) for kink in KINKS)):
            return None
        return derivative.subs(theta, self.closed_form(node_id, EXACT_PATH_SIZE))

    def _derivative(self, node_id: int, loss: int, theta: sympy.Expr, constant: Callable[[int], sympy.Expr],
                    pruned: bool = False) -> sympy.Expr | None:
        """d loss / d theta (SymPy's diff) for theta the quantity ``node_id``: the forms of
        the quantities that read theta (in the graph's order, up to ``loss``) built from
        theta and their parents' forms, ``constant(p)`` for a parent whose form does not
        hold theta (one in which theta cancelled included). None when more than
        GRADIENT_FORM_NODES quantities read theta (with ``pruned``, counting only those
        whose form holds it) or a form passes EXACT_PATH_SIZE operations. A ReLU's step is
        taken as 0 at 0."""
        nodes = self.graph.nodes
        forms = {node_id: theta}

        def built(i: int, parents: list[int]) -> bool:  # (False: past EXACT_PATH_SIZE)
            if any(p in forms for p in parents):  # (else theta cancelled on the way)
                form = nodes[i].op.sympy([forms[p] if p in forms else constant(p) for p in parents])
                if _tree_size(form, EXACT_PATH_SIZE) > EXACT_PATH_SIZE:
                    return False
                if form.has(theta):
                    forms[i] = form
            return True

        reading = {node_id: None}  # theta and the quantities that read it, with their parents
        for i in range(node_id + 1, loss + 1):
            node = nodes[i]
            if node.op is not None:
                parents = list(node.parents)
                if any(p in (forms if pruned else reading) for p in parents):
                    reading[i] = parents
                    if len(reading) > GRADIENT_FORM_NODES or (pruned and not built(i, parents)):
                        return None
        if not pruned and not all(built(i, parents) for i, parents in list(reading.items())[1:]):
            return None
        if loss not in forms:
            return sympy.Integer(0)
        # (a ReLU's derivative is SymPy's Heaviside step, 1/2 at 0 unless told: derive's ReLU,
        # PyTorch's, has 0 there)
        return sympy.diff(forms[loss], theta).replace(sympy.Heaviside, lambda x, *_: sympy.Heaviside(x, 0))

    def _standing_for(self, node_id: int) -> sympy.Expr:
        """A forward quantity's rational value, or a real symbol standing for it (one per
        quantity and graph)."""
        v = self.evaluator.evaluation().before[node_id]
        if is_exact(v):
            return sympy.Rational(int(v.p), int(v.q))
        return self._symbols.setdefault(node_id, sympy.Dummy(real=True))

    def _steep(self, node_id: int, values) -> bool:
        """Whether a quantity's operation is an exponential whose argument passes
        EXACT_PATH_EXPONENT (:func:`exponent_size`), judged from its input's value in
        ``values`` (the forward pass, by node id)."""
        node = self.graph.nodes[node_id]
        if node.op is None or len(node.parents) != 1:
            return False
        return exponent_size(node.op, approx(values[node.parents[0]])) > EXACT_PATH_EXPONENT

    def rational_in(self, node_id: int, values) -> Fraction | None:
        """The rational a forward quantity is, where its exact form (at most EXACT_PATH_SIZE
        operations, built from ``values``: a pass up to the quantity, by node id, of which
        only whether a value is exact is read, and an exact one's fraction) simplifies to
        one within EXACT_PATH_SECONDS of CPU time and what is left of EXACT_PATH_TOTAL, in a
        forked child (:func:`~derive.isolated.isolated_map`); else None. What the evaluation
        asks about a branch's input no precision decides (:attr:`derive.evaluate.Evaluator.decide`)."""
        def simplified(_):
            return self._rational_of(self._form(node_id, EXACT_PATH_SIZE, {}, values)[0])

        import sympy.physics.units  # noqa: F401  (as rationals: once here, not in the child)
        left = max(EXACT_PATH_TOTAL - self._exact_spent, 0.0)
        outcome = isolated_map(simplified, [node_id], EXACT_PATH_SECONDS, left)[0]
        self._exact_spent += outcome.seconds
        return outcome.value

    def definition(self, node_id: int) -> sympy.Expr:
        """The quantity's operation applied to its parents, named by their labels (a
        constant parent by its value, a scratch parent by its own definition), as a SymPy
        expression (SymPy orders its terms: the LaTeX pages print it)."""
        return self._defined(node_id, SYMPY)

    def definition_text(self, node_id: int) -> str:
        """The definition (see :meth:`definition`) as text in SymPy's string syntax, printed
        straight from the graph in the reader's order with no SymPy (:mod:`derive.plain`):
        ``x_1[1]*(W_Q)_{1,1} + x_1[2]*(W_Q)_{2,1}``, ``sqrt(1/4*((h_1[1] - mu_1)**2 + ...)
        + 1/100000)``."""
        return str(self._defined(node_id, PLAIN))

    def _defined(self, node_id: int, way: "Way"):
        node = self.graph.nodes[node_id]
        if node.op is None:
            return way.number(node.leaf)
        memo = self._names.setdefault(way, {})  # (each parent named once: see _named)
        return way.apply(node.op, [memo[p] if p in memo else self._named(p, way) for p in node.parents])

    def _named(self, node_id: int, way: "Way"):
        """A parent as a definition writes it (each parent once per way: a weight or a
        scratch sum is read by many definitions)."""
        memo = self._names.setdefault(way, {})
        known = memo.get(node_id)
        if known is None:
            node = self.graph.nodes[node_id]
            if node.op is None and not node.meta.param:
                known = way.number(node.leaf)
            elif node.meta.symbol is None and node.op is not None:
                known = self._defined(node_id, way)
            else:
                known = way.name(node.meta.label)
            memo[node_id] = known
        return known

    def fraction_text(self, ref: Ref) -> str | None:
        """The value as a fraction (``-3/8``, ``0``) when it is rational, else None: the
        cheap part of :meth:`exact_text`, with no SymPy."""
        v = self.evaluator.value(ref)
        if not is_exact(v):
            return None
        return str(int(v.p)) if v.q == 1 else f"{int(v.p)}/{int(v.q)}"

    def exact_text(self, ref: Ref) -> str:
        """The exact form as text in SymPy's string syntax: the fraction, a compact closed
        form (printed by ``sympy.sstr``), or the definition (:meth:`definition_text`, in
        the reader's order); ``dL/dW`` for a gradient, ``W - eta*dL/dW`` for a weight after
        the step, and a definition followed by ``(with the updated weights)`` for a
        quantity after the step. A forward quantity the exact path has already found
        rational (see :meth:`rational`) is that fraction."""
        fraction = self.fraction_text(ref)
        if fraction is not None:
            return fraction
        label = self.graph.nodes[ref.id].meta.label
        if ref.phase == "grad":
            return f"dL/d{label}"
        if ref.phase == "updated" or (ref.phase == "after" and self.graph.nodes[ref.id].op is None):
            # (a leaf of the pass after the step, such as a given logit, is the weight after the step)
            return f"{label} - {self.learning_rate}*dL/d{label}"
        if ref.phase == "after":
            return f"{self.definition_text(ref.id)} (with the updated weights)"
        rational = self._rationals.get(ref)
        if isinstance(rational, Fraction):
            return str(rational)
        form = self._closed(ref.id)
        if form is None:
            return self.definition_text(ref.id)
        text = self._texts.get(form)
        if text is None:  # (SymPy orders an Add's terms by evaluating them: once per form)
            steep = bool(self._steep_forms) and form.has(*self._steep_forms)
            # (a form holding an exponential past EXACT_PATH_EXPONENT keeps its terms in the order
            # built: evaluating exp(4*10^1300) to order them took SymPy seconds a term)
            text = self._texts[form] = sstr(form, order="none") if steep else sstr(form)
        return text


class Way(NamedTuple):
    """How :meth:`ExactForms._defined` writes a definition: a constant leaf's value
    (``number``, from an fmpq), a named parent (``name``, from its label) and an operation
    applied to its parents (``apply(op, args)``)."""

    number: Callable
    name: Callable
    apply: Callable


SYMPY = Way(lambda q: sympy.Rational(int(q.p), int(q.q)), lambda label: sympy.Symbol(label),
            lambda op, args: op.sympy(args))
PLAIN = Way(plain.number, plain.atom, lambda op, args: op.plain(args))


def _terms(form: sympy.Expr) -> tuple[fmpq, dict] | None:
    """A closed form as SymPy's Add collects it: its number and the coefficient of each
    other term ``s`` (``as_coeff_Mul``: ``-3*sqrt(2)/4`` is -3/4 of sqrt(2)); None when a
    coefficient is not rational or a term is ``c*(a + b)``."""
    number, terms = fmpq(0), {}
    for arg in form.args if form.is_Add else (form,):
        c, s = arg.as_coeff_Mul()
        if not c.is_Rational or s.is_Add:
            return None
        if s is sympy.S.One:
            number += fmpq(int(c.p), int(c.q))
        else:
            terms[s] = terms.get(s, 0) + fmpq(int(c.p), int(c.q))
    return number, terms


def _huge_root(op, parts: list) -> bool:
    """Whether ``op`` is a square root of a rational past :data:`SQRT_BITS` (no compact
    closed form for a page or the JSON, and SymPy would factor its integers to build one)."""
    if not isinstance(op, Sqrt) or not parts[0].is_Rational:
        return False
    return max(abs(int(parts[0].p)).bit_length(), int(parts[0].q).bit_length()) > SQRT_BITS


def _tree_size(expr: sympy.Expr, limit: int) -> int:
    """The number of nodes of a SymPy expression tree, counted up to limit + 1."""
    count = 0
    for _ in sympy.preorder_traversal(expr):
        count += 1
        if count > limit:
            break
    return count


HUGE_EXPONENT = 1000  # e^x with |x| beyond this: no simplification (SymPy would evaluate e^(10^10))


def _huge_power(form: sympy.Expr) -> bool:
    """Whether the form holds an e^x with a number |x| > HUGE_EXPONENT: SymPy's simplify
    evaluates such powers digit by digit (e^(10^10): minutes) and cannot make them rational."""
    for power in form.atoms(sympy.exp):
        x = power.args[0]
        if x.is_number and abs(x.evalf(5)) > HUGE_EXPONENT:
            return True
    return False

