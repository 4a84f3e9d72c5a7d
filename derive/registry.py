"""The registry of the model's operations: the only list of what a case can contain.

Each module in ``rules/`` declares one or more :class:`Operation` objects with
:func:`register`: its name, its kind (``norm``, ``activation``, ``sublayer``, ``stage``),
its parameters (:class:`Param`: name, shape, trainable), its conventions
(:class:`Convention`: field, choices, default, one-line meaning, source), the step keys
its page produces, and its forward function. Everything that lists operations reads it:
case validation (:mod:`derive.case`), ``--step`` choices, the checker's conventions, the
JSON symbols, ``derive params`` and the docs' field list (``docs/operations.md``).

This module is part of the engine: it imports nothing of derive above it, and knows no
operation by name. The operations are registered when :mod:`derive.rules` is imported
(it imports every module of its folder); :func:`load` does that.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

KINDS = ("stage", "sublayer", "norm", "activation")


@dataclass(frozen=True, eq=False)
class Convention:
    """A switch that changes printed digits (DESIGN.md, "Conventions are explicit switches").

    Attributes:
        field: the key in the case's ``[conventions]`` table (``layernorm_variance``).
        default: the value when the case does not say (an exact Fraction for numbers).
        meaning: one line: what the switch does.
        kind: how the value is read: ``choice`` (one of ``choices``), ``number`` (any exact
            number), ``nonnegative``, ``positive``, ``count`` (an integer >= 0), ``bool``,
            ``weights`` (``"all"`` or a list of weight names), ``choice_or_positive``
            (one of ``choices`` or an exact number > 0), or ``choice_or_matrix`` (one of
            ``choices`` or a matrix of 0 and 1, read as a tuple of rows of ints).
        choices: for ``choice``: each accepted value with its one-line meaning; a callable
            returning that mapping when the choices are other operations (activations).
        slips: the choices (or, for a number, the values) a reader may use by mistake, with the
            phrase the checker prints when a written value fits one (``"LayerNorm variance
            over n-1 instead of n"``; a temperature of 1, the temperature left out).
        source: where the formula or the convention comes from (paper, section, library).
        applies: for the checker: whether the case has the part this switch changes
            (a predicate on the case's conventions); None: always.
        expected: what an error message says a valid value is, where the kind's words are
            not enough (``eps >= 0``).
    """

    field: str
    default: Any
    meaning: str
    kind: str = "choice"
    choices: dict[str, str] | Callable[[], dict[str, str]] | None = None
    slips: dict[Any, str] = field(default_factory=dict)
    source: str = ""
    applies: Callable[[Any], bool] | None = None
    expected: str = ""

    def options(self) -> dict[str, str]:
        """The accepted values with their meanings (``choice`` kinds only; else empty)."""
        if self.choices is None:
            return {}
        return self.choices() if callable(self.choices) else dict(self.choices)


@dataclass(frozen=True, eq=False)
class Param:
    """A weight of an operation.

    Attributes:
        name: the name in the case file and on the page (``W_Q``; a norm's ``gain`` is
            written with its slot's prefix, ``ln1_gain``).
        shape: the dimensions by name, ``("d_model", "d_mlp")``; a vector has one.
        meaning: one line. trainable: whether the SGD step may move it.
        optional: absent means none (a bias 0, a gain 1).
        needs: the option of its operation that must be true for the weight to exist
            (attention's W_Q needs ``projections``).
    """

    name: str
    shape: tuple[str, ...]
    meaning: str
    trainable: bool = True
    optional: bool = False
    needs: str | None = None


@dataclass(frozen=True, eq=False)
class Operation:
    """One operation of the model, declared in one place by its module in ``rules/``.

    Attributes:
        name: the key a case selects it by (``layernorm``, ``gelu_erf``, ``attention``).
        kind: ``stage`` (a fixed part of the pipeline: tokens, embedding, positions,
            logits...), ``sublayer`` (runs inside a block: attention, mlp), ``norm`` (may
            fill a norm slot: before attention, before the MLP, before W_U) or
            ``activation`` (an elementwise map of the MLP).
        title: how the page names it (``LayerNorm``, ``GELU (tanh form)``).
        source: the paper and equation of its formula.
        params: its weights. conventions: the switches it reads.
        steps: the step keys its page produces, in order (``--step`` choices).
        stage: its place in the pipeline (orders the step keys).
        forward: the function that adds it to a graph (its signature depends on the kind;
            see the modules of ``rules/``). op: for an activation, the scalar graph
            operation it applies. glu: for an activation, the field's name of the gated
            MLP it makes (Shazeer 2020: ``SwiGLU`` for SiLU, ``GeGLU`` for GELU, ``ReGLU``
            for ReLU).
        symbols: the JSON ``symbol`` of each quantity it names, with its meaning.
        options: for a sublayer, settings a block states for it (a field of the
            ``[[blocks]]`` table, read as a :class:`Convention` of that kind:
            attention's ``projections = false``).
        check: a last check of a loaded case the operation needs (a predicate that returns
            None, or the field, the message and what was expected: sinusoids need an even
            d_model).
        dims: for a sublayer, the named dimensions its options fix before its weights are
            read (``dims(options, dims)``: attention's d_kv is d_model unless kv_heads says
            otherwise).
        undefined: for a norm, when its divisor can be 0: the convention field that
            prevents it (eps) and the message's end, with ``{eps}`` for its value
            (``"is of a constant row: its variance is 0 and eps = {eps}, ..."``).
    """

    name: str
    kind: str
    title: str
    source: str
    params: tuple[Param, ...] = ()
    conventions: tuple[Convention, ...] = ()
    steps: tuple[str, ...] = ()
    stage: float = 0
    forward: Callable | None = None
    op: Any = None
    glu: str = ""
    symbols: dict[str, str] = field(default_factory=dict)
    undefined: tuple[str, str] | None = None
    options: tuple[Convention, ...] = ()
    check: Callable[[Any], tuple[str, str, str] | None] | None = None
    dims: Callable[[dict, dict], dict] | None = None


OPERATIONS: dict[str, Operation] = {}


def register(operation: Operation) -> Operation:
    """Add an operation to the registry and return it.

    Raises:
        ValueError: when the name is taken or the kind unknown, or when a convention field
            is declared twice with different defaults.
    """
    if operation.kind not in KINDS:
        raise ValueError(f"operation {operation.name!r}: unknown kind {operation.kind!r}")
    if OPERATIONS.get(operation.name, operation) is not operation:
        raise ValueError(f"operation {operation.name!r} is registered twice")
    for conv in operation.conventions:
        other = next((c for c in conventions() if c.field == conv.field), None)
        if other is not None and other is not conv:
            raise ValueError(f"convention {conv.field!r} is declared by two operations")
    OPERATIONS[operation.name] = operation
    return operation


def load() -> dict[str, Operation]:
    """Import :mod:`derive.rules` (which registers every operation) and return the registry."""
    importlib.import_module("derive.rules")
    return OPERATIONS


def operations(kind: str | None = None) -> list[Operation]:
    """The registered operations (of one kind), in pipeline order."""
    return sorted((op for op in OPERATIONS.values() if kind is None or op.kind == kind),
                  key=lambda op: op.stage)


def get(name: str, kind: str | None = None) -> Operation:
    """The operation called ``name``.

    Raises:
        KeyError: when no operation (of that kind) has that name.
    """
    op = OPERATIONS.get(name)
    if op is None or (kind is not None and op.kind != kind):
        raise KeyError(name)
    return op


def names(kind: str) -> dict[str, str]:
    """The names of the operations of one kind with their titles (a choice list)."""
    return {op.name: op.title for op in operations(kind)}


def conventions() -> list[Convention]:
    """Every declared convention, once, in pipeline order."""
    seen: dict[str, Convention] = {}
    for op in operations():
        for conv in op.conventions:
            seen.setdefault(conv.field, conv)
    return list(seen.values())


def step_keys() -> list[str]:
    """Every step key any operation's page can produce, in pipeline order."""
    return list(dict.fromkeys(key for op in operations() for key in op.steps))


def symbols() -> dict[str, str]:
    """Every JSON ``symbol`` a registered operation names, with its meaning, in pipeline order."""
    return {symbol: meaning for op in operations() for symbol, meaning in op.symbols.items()}
