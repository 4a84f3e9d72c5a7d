"""Greedy generation: append the most probable token and derive again (seed 000, step 9).

    next = argmax_c z_c      (the largest logit; the same token as argmax_c p_c at any T > 0)

A tie between logits goes to the lowest id, and the output says so. The argmax is
certified: the logits are compared as balls at rising working precision, and logits whose
balls still overlap are compared exactly (the same operations on equal numbers, as for two
tokens with identical rows of a tied E, or a SymPy zero test of their closed forms), so a
tie is declared only when it is exact. Each new token derives the whole case again on the
longer prompt (without the case's target: the loss belongs to the original prompt).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .case import SPACE, Case
from .derivation import EXACT_PATH_SIZE, START_PREC, Derivation, derive
from .errors import DeriveError, EvaluationError
from .graph import as_arb, is_exact
from .lazy import lazy
from .steps import Ref

sympy = lazy("sympy")  # loaded when an exact form is first asked for

ARGMAX_MAX_PREC = START_PREC * 2 ** 4  # past this, overlapping balls go to the exact comparison


@dataclass
class Choice:
    """The argmax of some quantities: ``index`` (the lowest on a tie) and ``tied``, every
    index whose value equals the largest exactly (``[index]`` when there is no tie)."""

    index: int
    tied: list[int]


def certified_argmax(derivation: Derivation, node_ids: list[int]) -> Choice:
    """The position in ``node_ids`` of the largest forward value, the lowest on an exact tie.

    Values are compared as certified balls, doubling the precision while two of them
    overlap (up to ARGMAX_MAX_PREC bits); values still overlapping then are compared
    exactly (:func:`exactly_equal`).

    Raises:
        EvaluationError: when two values overlap at every precision and cannot be shown
            equal (a difference smaller than 10^-600 that is not exactly 0).
    """
    prec = START_PREC
    while True:
        values = [derivation.value(Ref("before", i), prec) for i in node_ids]
        lowers = [v if is_exact(v) else as_arb(v).lower() for v in values]
        best_lower = max(lowers)
        candidates = [k for k, v in enumerate(values)
                      if (v >= best_lower if is_exact(v) else not as_arb(v).upper() < best_lower)]
        if len(candidates) == 1:
            return Choice(candidates[0], candidates)
        if all(is_exact(values[k]) for k in candidates):
            top = max(values[k] for k in candidates)
            tied = [k for k in candidates if values[k] == top]
            if len(tied) == len(candidates):
                return Choice(tied[0], tied)
        if prec >= ARGMAX_MAX_PREC:
            break
        prec *= 2
    tied = [k for k in candidates if exactly_equal(derivation, node_ids[candidates[0]], node_ids[k])]
    if len(tied) != len(candidates):
        labels = ", ".join(derivation.graph.nodes[node_ids[k]].meta.label for k in candidates)
        raise EvaluationError(f"cannot order {labels}: they agree to {ARGMAX_MAX_PREC} bits but are not "
                              "provably equal", file=derivation.case.path)
    return Choice(tied[0], tied)


def exactly_equal(derivation: Derivation, a: int, b: int) -> bool:
    """True when forward nodes ``a`` and ``b`` are provably equal: the same operation on
    parents that are pairwise equal (leaves with equal values), or a closed-form difference
    that SymPy simplifies to 0. False means "not shown equal"."""
    if _same_computation(derivation.graph, a, b, {}):
        return True
    diff = derivation.closed_form(a, EXACT_PATH_SIZE) - derivation.closed_form(b, EXACT_PATH_SIZE)
    return not diff.free_symbols and sympy.simplify(diff) == 0


def _same_computation(graph, a: int, b: int, memo: dict) -> bool:
    if a == b:
        return True
    key = (min(a, b), max(a, b))
    if key not in memo:
        na, nb = graph.nodes[a], graph.nodes[b]
        if na.op is None or nb.op is None:
            memo[key] = na.op is None and nb.op is None and na.leaf == nb.leaf
        else:
            memo[key] = (type(na.op) is type(nb.op) and vars(na.op) == vars(nb.op)
                         and len(na.parents) == len(nb.parents)
                         and all(_same_computation(graph, p, q, memo) for p, q in zip(na.parents, nb.parents)))
    return memo[key]


@dataclass
class Generated:
    """One new token: the derivation of the prompt so far (``derivation.case.ids``), the
    chosen id and the ids tied with it (lowest first; ``[chosen]`` without a tie)."""

    derivation: Derivation
    chosen: int
    tied: list[int]

    @property
    def text(self) -> str:
        """The prompt this step read, as text (see :func:`generated_text`)."""
        return _text(self.derivation.case.pieces, self.derivation.case.ids)


def check_room(case: Case, n: int) -> None:
    """Raise a :class:`DeriveError` when ``n`` new tokens do not fit: a case given as
    vectors X or without a vocabulary and W_U, a learned P without a row for every token
    read (the last new token is not read), or more tokens than ``model.context_length``."""
    if case.X is not None or not case.has_unembedding:
        raise DeriveError("greedy generation needs a prompt, a vocabulary and an output layer (E and W_U)",
                          file=case.path, field="input" if case.X is not None else "vocab",
                          expected="a case with [vocab], [prompt] and model.E, model.W_U")
    if n < 1:
        raise DeriveError(f"asked for {n} new tokens", expected="at least 1")
    read = len(case.ids) + n - 1  # the rows the last derivation reads
    if case.conventions.positions == "learned" and len(case.P) < read:
        more = (f" (model.context_length = {case.context_length}, but only rows 1-{len(case.P)} are given)"
                if case.context_length and case.context_length > len(case.P) else "")
        raise DeriveError(f"has {len(case.P)} rows; {n} new tokens after {len(case.ids)} read {read} "
                          f"positions{more}", file=case.path, field="model.P",
                          expected=f"at most {_tokens(len(case.P) - len(case.ids) + 1)}, or more rows of P")
    if case.context_length is not None and read > case.context_length:
        raise DeriveError(f"{n} new tokens after {len(case.ids)} read {read} positions",
                          file=case.path, field="model.context_length",
                          expected=f"at most {_tokens(case.context_length - len(case.ids) + 1)}")


def generate(case: Case, n: int) -> list[Generated]:
    """Greedy generation of ``n`` tokens: derive, take the argmax of the logits (the
    lowest id on an exact tie), append it, derive again. The case's target is dropped
    (no loss: each step is a forward pass).

    Raises:
        DeriveError: see :func:`check_room`; EvaluationError: an undefined forward pass,
            or logits that cannot be ordered.
    """
    check_room(case, n)
    ids = list(case.ids)
    out = []
    for _ in range(n):
        derivation = derive(replace(case, ids=list(ids), target=None))
        choice = certified_argmax(derivation, derivation.outputs["z"])
        out.append(Generated(derivation, choice.index, choice.tied))
        ids.append(choice.index)
    return out


def generated_text(case: Case, steps: list[Generated]) -> str:
    """The prompt followed by the generated tokens, as text: ``␣`` written as a space, and
    the words of a vocabulary without ``␣`` (whole words) joined by spaces."""
    return _text(case.pieces, list(case.ids) + [g.chosen for g in steps])


def _text(pieces: list[str], ids: list[int]) -> str:
    """The ids as text, ``␣`` written as a space; the words of a vocabulary whose pieces
    never carry ``␣`` (whole words, as the seed 003's) are joined by spaces."""
    joiner = "" if any(SPACE in p for p in pieces) else " "
    return joiner.join(pieces[i] for i in ids).replace(SPACE, " ")


def quoted(pieces: list[str], ids: list[int]) -> str:
    """The ids as text (see :func:`generated_text`) in double quotes: ``"the cat"``."""
    return f'"{_text(pieces, ids)}"'


__all__ = ["Choice", "Generated", "certified_argmax", "check_room", "exactly_equal", "generate",
           "generated_text", "quoted"]


def _tokens(n: int) -> str:
    return f"{n} new token{'' if n == 1 else 's'}"
