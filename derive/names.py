"""Finding a quantity by the name a reader writes: ``z_roof``, ``a_{5,3}``, ``h_5[1]``,
``sigma_5``, ``u_5``, ``p(␣roof)``, ``L``, in the plain, Unicode or LaTeX notation.

The name is read by the one grammar of :mod:`derive.name_parser` into a
:class:`~derive.name.Name`, and compared field by field with the Names of the graph's
quantities (:attr:`derive.graph.Meta.name`), never as text: braces, spaces, ``[c]`` for a
second subscript, Greek spelled out, ``u2`` for u' are all the same fields. A head written
in the name (``o_5^{(1)}``, ``a_{5,3}^{(1)}``) chooses the head, as ``--head`` does; a block
is chosen by ``--block``. A name without its column (``u_5``) gives the row. A piece's
``␣`` mark may be left out only when the name matches nothing with it kept: in a
vocabulary with both ``the`` and ``␣the``, ``z_the`` and ``z_␣the`` are different logits.
A name that matches nothing is answered with a few of the case's own names (:func:`expected`).
"""

from __future__ import annotations

import re
import weakref
from functools import lru_cache

from .derivation import Derivation
from .errors import DeriveError
from .name import OVER_T, Fields, Name, after_step, grad_of, json_symbol
from .name_parser import parse_name
from .printing import quoted
from .steps import Ref

HEAD = re.compile(r"\^\{?\((\d+)\)\}?")  # kept for derive.check: a head written as ^(h) or ^{(h)}
MAX_NAME = 120  # characters of a name (derive's longest, a LaTeX gradient of a spelled-out piece, is about 60)
HEAD_REMARK = "of a head: explain --head, or a `Head 1` line in a checked file"
# the kinds of quantity a hint names, in this order, as far as a case has them (its last row's,
# the loss's target piece): a logit, an attention weight, a residual entry, a norm's statistic,
# a normalised row, a probability, the loss; then, for a case without them, scores, queries,
# head outputs, inputs, MLP outputs, exponentials of logits
EXAMPLE_KINDS = ("z", "a", "h", "sigma", "rms", "u", "p", "L", "s", "q", "o", "x", "m", "exp_z",
                 "exp_z_over_T")
MAX_EXAMPLES = 7

_MEMO: dict[int, tuple] = {}  # id(derivation) -> (weak reference, {key: value computed once})


def json_symbols(name: Name) -> tuple[str, ...]:
    """The graph's ``symbol`` values a Name can be (its fields say which: u with a prime
    is ``u2``, a weight is ``param``)."""
    f = name.fields
    if f.param or f.grad or f.after:
        return ()  # weights, gradients and values after the step are not forward quantities
    return (json_symbol(name),)


def label_of(derivation: Derivation, ref: Ref) -> str:
    """The plain name of what ``ref`` points at, as derive prints it: the quantity's own
    label before the step (``E_{3,4}``, ``z_d``), ``dL/dE_{3,4}`` for its gradient (phase
    ``grad``), ``E_{3,4} after the step`` for its value after the SGD step (phase ``after``
    or ``updated``), from :func:`derive.name.grad_of` and :func:`derive.name.after_step`.
    A quantity without a Name (a partial sum) keeps its label with the same words."""
    meta = derivation.graph.nodes[ref.id].meta
    if ref.phase == "grad":
        return str(grad_of(meta.name)) if meta.name is not None else f"dL/d{meta.label}"
    if ref.phase in ("after", "updated"):
        return str(after_step(meta.name)) if meta.name is not None else f"{meta.label} after the step"
    return meta.label


def as_stepped(derivation: Derivation, ref: Ref) -> Ref:
    """A weight named in the pass after the SGD step (phase ``after`` of a leaf that is a
    parameter) as its value after the step, phase ``updated``, where the step's table
    prints it and the by-hand readings know it (theta - eta dL/dtheta); any other ref as it
    is. (The pass after the step reads its weights at those values.)"""
    node = derivation.graph.nodes[ref.id]
    return Ref("updated", ref.id) if ref.phase == "after" and node.op is None and node.meta.param else ref


def same_place_in_head(derivation: Derivation, node_id: int, head: int) -> int | None:
    """For a component of a row whose columns are split among the heads (q_5[1], q_5[2]
    in head 1; q_5[3], q_5[4] in head 2), the node id of the component at the same place
    within ``head``'s columns (q_5[3] for q_5[1]). None when the quantity belongs to no
    head, is no such component, or ``head`` has another number of columns.

    Raises:
        nothing: a name that is nowhere in ``head`` is None."""
    meta = derivation.graph.nodes[node_id].meta
    if meta.head is None or meta.name is None:
        return None
    placed = _by_head(derivation, meta.symbol, meta.block, meta.name.key(index=False).fields).get
    own, other = placed(meta.head, []), placed(head, [])
    if meta.name.fields.index is not None and len(own) == len(other) and node_id in own:
        return other[own.index(node_id)]  # q_5[1] of head 1 is q_5[3] of head 2
    return None


def _by_head(derivation: Derivation, symbol: str, block: int | None, row: Fields) -> dict[int, list[int]]:
    """The node ids of the row ``row`` (a Name's fields without its index) in ``block``,
    grouped by head, in order of their index (a quantity without a head is left out)."""
    def compute() -> dict[int, list[int]]:
        groups: dict[int, list[tuple]] = {}
        for i, meta, _, key in _keys(derivation, symbol, False):
            if key == row and meta.block == block and meta.head is not None and not meta.param:
                groups.setdefault(meta.head, []).append((str(meta.name.fields.index), i))
        return {h: [i for _, i in sorted(members, key=lambda m: (len(m[0]), m[0]))] for h, members in groups.items()}
    return per_derivation(derivation, ("by head", symbol, block, row), compute)


def per_derivation(derivation: Derivation, key, compute):
    """``compute()``, done once per derivation and ``key`` (an index of its names, the
    answer to a lookup); forgotten with the derivation.

    Raises:
        whatever ``compute`` raises (nothing is kept then)."""
    known = _MEMO.get(id(derivation))
    if known is None or known[0]() is not derivation:
        known = (weakref.ref(derivation, lambda _, k=id(derivation): _MEMO.pop(k, None)), {})
        _MEMO[id(derivation)] = known
    if key not in known[1]:
        known[1][key] = compute()
    return known[1][key]


def _by_symbol(derivation: Derivation) -> dict[str, list[tuple[int, object]]]:
    """The named quantities of a derivation grouped by their ``symbol`` (their Names are
    computed when a lookup first needs them)."""
    def groups() -> dict[str, list]:
        out: dict[str, list] = {}
        for i, node in enumerate(derivation.graph.nodes):
            if node.meta.symbol:
                out.setdefault(node.meta.symbol, []).append((i, node.meta))
        return out
    return per_derivation(derivation, "by symbol", groups)


def expected(derivation: Derivation) -> str:
    """The hint after "no quantity is called ...": a few of the case's own names, of
    different kinds (:data:`EXAMPLE_KINDS`, at most :data:`MAX_EXAMPLES`), each one that
    :func:`find` (so ``derive explain``) accepts as written; of a head's quantities (when the
    case has several heads), the first is followed by how to choose the head, the others
    write it (``a name such as z_␣roof, a_{5,1} (of a head: ...), h_5[1], sigma_5, u_5,
    p(␣roof), L``; ``a_{4,1} (of a head: ...), s_{4,3}^(1), q_4^(1)[1], o_4^(1)[1]``).
    Worked out once per derivation. A case none of whose quantities can be named alone
    (each in several blocks) gets words alone."""
    def compute() -> str:
        shown, remarked = [], False
        for name, in_head in _examples(derivation):
            if _accepted(derivation, name, None):
                shown.append(name)
            elif in_head is not None and _accepted(derivation, name, 1):
                shown.append(in_head if remarked else f"{name} ({HEAD_REMARK})")
                remarked = True
        if not shown:
            return "a name of a quantity as `derive run` prints it"
        return "a name such as " + ", ".join(shown[:MAX_EXAMPLES])
    return per_derivation(derivation, "expected", compute)


def _examples(derivation: Derivation) -> list[tuple[str, str | None]]:
    """(name, the name with head 1 written in it, or None when it is no head's) of one
    quantity of each kind of :data:`EXAMPLE_KINDS` the case has: the last position's first
    component (of a normalised row, the whole row: ``u_5``), of head 1 for a head's; the
    logit and probability of the loss's target piece (else the first piece)."""
    groups = _by_symbol(derivation)
    target = next((meta.index for _, meta in groups.get("L", ())), None)
    out = []
    for symbol in EXAMPLE_KINDS:
        metas = [meta for _, meta in groups.get(symbol, ()) if not meta.param and meta.head in (None, 1)]
        if not metas:
            continue
        last = max(m.position or 0 for m in metas)
        meta = next((m for m in metas if target is not None and m.index == target), None) or \
            min((m for m in metas if (m.position or 0) == last), key=lambda m: (len(str(m.index)), str(m.index)))
        name = meta.label.rsplit("[", 1)[0] if symbol == "u" else meta.label
        out.append((name, str(meta.name.but(head=1)) if meta.head is not None else None))
    return out


def _accepted(derivation: Derivation, name: str, head: int | None) -> bool:
    """:func:`find` of ``name`` (in ``head``, no block) finds it in one place (never raising:
    a hint is being made)."""
    wanted = _parsed(name)
    found = _found(derivation, wanted, None, head) if wanted is not None else []
    return bool(found) and _places(derivation, found) is None


def read(name: str, derivation: Derivation | None = None) -> Name:
    """The Name written as ``name``.

    Raises:
        DeriveError: when the text is not a name (the hint names ``derivation``'s own
            quantities, :func:`expected`, when it is given).
    """
    parsed = _row_name(derivation, name) if derivation is not None else None
    if parsed is None:
        parsed = _parsed(name)
    if parsed is None:
        raise DeriveError(f"no quantity is called {quoted(name)}", expected=expected(derivation) if derivation is not None
                          else "a name in the chapter's notation, as `derive run` prints it")
    return parsed


def _row_name(derivation: Derivation, text: str) -> Name | None:
    """The Name of the row of named quantities whose label, less its column, is ``text``
    (``o_51^(1)`` of o_51^(1)[1] ...), when that Name writes ``text``; else None. A row's
    own text is read back as its Name without the Earley parser (several milliseconds a
    name: checking crane's own page parsed 583 rows, 2.3 s); the rows are indexed once per
    derivation, from the index of labels (:func:`_labels`)."""
    def index() -> dict[str, int]:
        out: dict[str, int] = {}
        for label, places in _labels(derivation).items():
            if label[-1] == "]":
                out.setdefault(label[:label.rindex("[")], places[0][0])
        return out
    i = per_derivation(derivation, "rows", index).get(text)
    if i is None:
        return None
    row = derivation.graph.nodes[i].meta.name.but(index=None, block=None)  # (a name's text writes no block)
    return row if str(row) == text else None


@lru_cache(maxsize=1 << 14)
def _parsed(name: str) -> Name | None:
    """The Name, or None when the text is not one (a failure is remembered too: a file's
    unknown name comes back on every line). A text longer than MAX_NAME characters is none
    (the Earley parser's time grows faster than the length: 3,000 letters took seconds)."""
    if len(name) > MAX_NAME:
        return None
    try:
        return parse_name(name)
    except ValueError:
        return None


def find(derivation: Derivation, name: str | Name, block: int | None = None, head: int | None = None) -> list[Ref]:
    """The forward quantities called ``name`` (one, or a row's components in order).
    A head written in the name (``o_5^{(1)}``) wins over ``head`` (a file's context).

    Raises:
        DeriveError: when nothing has that name, or several quantities in different blocks
            or heads do and ``block``/``head`` do not choose one; the message lists them.
    """
    if isinstance(name, str):  # a file names the same quantities again and again
        own = _labelled(derivation, name, block, head)
        if own is not None:
            return [Ref("before", own)]
        return list(per_derivation(derivation, ("find", name, block, head), lambda: _find(derivation, name, block, head)))
    return _find(derivation, name, block, head)


def hidden_by_mask(meta) -> str:
    """Why a score is masked, in the words every page and report uses: ``the mask hides key
    j from query i`` (``meta``: the metadata of the score's weight a_{i,j}, or of an entry
    that stands for it)."""
    return f"the mask hides key {meta.index} from query {meta.position}"


def masked_score(derivation: Derivation, name: str | Name, block: int | None = None,
                 head: int | None = None) -> list[Ref]:
    """A score the mask hides, ``s_{i,j}`` with key j hidden from query i: -inf by the mask,
    never computed, so the graph holds no quantity of that name (rules/attention.py); what
    stands for it is its weight a_{i,j}, a leaf of exactly 0 marked masked
    (:attr:`derive.graph.Entry.masked`). Returns that weight (one Ref), or [] when ``name``
    is no score (``s`` with a row and a key) or its weight is no masked one; call it only
    when :func:`find` has found nothing (under ``causal_after_softmax`` every score exists).
    A head written in the name wins over ``head``, as in :func:`find`.

    Raises:
        DeriveError: when the masked score is in several blocks or heads and ``block``/
            ``head`` do not choose one (the message names them, as :func:`find`'s does).
    """
    wanted = _parsed(name) if isinstance(name, str) else name
    if wanted is None or json_symbols(wanted) != ("s",) or not isinstance(wanted.fields.position, int) \
            or not isinstance(wanted.fields.index, int):
        return []
    found = [i for i in _found(derivation, wanted.but(symbol="a"), block, head) if derivation.graph.nodes[i].masked]
    where = _places(derivation, found) if found else None
    if where is not None:
        raise DeriveError(f"{quoted(str(name))} names quantities in several places ({where})",
                          expected="--block and/or --head to choose one")
    return [Ref("before", i) for i in found]


def _labelled(derivation: Derivation, label: str, block: int | None, head: int | None) -> int | None:
    """The one forward quantity whose own label is ``label`` in ``block`` and ``head`` (a
    quantity with no block or head is in every one), or None when none or several are: a
    quantity's label is read back as that quantity, so derive's own plain names are found
    without the Earley parser (about 16 ms a name)."""
    near = [i for i, b, h in _labels(derivation).get(label, ())
            if (block is None or b in (None, block)) and (head is None or h in (None, head))]
    return near[0] if len(near) == 1 else None


def _over_T(derivation: Derivation, wanted: Name) -> Name | None:
    """The Name under a temperature T other than 1 of e^z_j or of their sum (``e^(z_j/T)``,
    ``sum_j e^(z_j/T)``: what the softmax reads, :func:`derive.rules.unembedding.softmax`)
    when ``wanted`` is one of those and the case has it; else None."""
    if wanted.fields.symbol not in OVER_T or derivation.case.conventions.temperature in (0, 1):
        return None
    scaled = wanted.but(symbol=OVER_T[wanted.fields.symbol])
    return scaled if _found(derivation, scaled, None, None) else None


def _labels(derivation: Derivation) -> dict[str, list[tuple[int, int | None, int | None]]]:
    """The named forward quantities (no weight: what :func:`_search` looks at) by their
    label, each as (node id, block, head), in the graph's order; worked out once per
    derivation."""
    def index() -> dict[str, list[tuple]]:
        out: dict[str, list[tuple]] = {}
        for i, node in enumerate(derivation.graph.nodes):
            if node.meta.label and node.meta.symbol and not node.meta.param:
                out.setdefault(node.meta.label, []).append((i, node.meta.block, node.meta.head))
        return out
    return per_derivation(derivation, "labels", index)


def _find(derivation: Derivation, name: str | Name, block: int | None, head: int | None) -> list[Ref]:
    wanted = read(name, derivation) if isinstance(name, str) else name
    found = _found(derivation, wanted, block, head)
    if not found:
        scaled = _over_T(derivation, wanted)
        if scaled is not None:  # e^z_a where the softmax reads e^(z_a/T)
            raise DeriveError(f"no quantity is called {quoted(str(name))}: the softmax divides the logits by the "
                              f"temperature T = {derivation.case.conventions.temperature} first", expected=str(scaled))
        raise DeriveError(f"no quantity is called {quoted(str(name))}", expected=expected(derivation))
    where = _places(derivation, found)
    if where is not None:
        raise DeriveError(f"{quoted(str(name))} names quantities in several places ({where})",
                          expected="--block and/or --head to choose one")
    return [Ref("before", i) for i in found]


def _found(derivation: Derivation, wanted: Name, block: int | None, head: int | None) -> list[int]:
    """The node ids :func:`_search` gives for ``wanted``, its pieces kept or else loose; a
    head written in the name wins over ``head``."""
    if wanted.fields.head is not None:
        head = wanted.fields.head
    return _search(derivation, wanted, block, head, False) or _search(derivation, wanted, block, head, True)


def _places(derivation: Derivation, found: list[int]) -> str | None:
    """The blocks and heads (``block 1 head 1, block 1 head 2``) when ``found`` holds the
    same name more than once, else None."""
    metas = [derivation.graph.nodes[i].meta for i in found]
    keys = [meta.name.key() for meta in metas]
    if len(set(keys)) == len(keys):
        return None
    groups = {(meta.block, meta.head) for meta in metas}
    return ", ".join(f"block {b}" + (f" head {h}" if h else "") for b, h in sorted(groups, key=str))


def _search(derivation: Derivation, wanted: Name, block: int | None, head: int | None, loose: bool) -> list[int]:
    """Node ids whose Name has the fields of ``wanted`` (head and block aside: they are
    compared with the node's own), or, for a name without a column, the row's components;
    with ``loose``, pieces compare without their ``␣``."""
    key: Fields = wanted.key(loose=loose).fields
    matches, rows = [], []
    graph = derivation.graph
    for symbol in json_symbols(wanted):
        for i, meta, own, row in _keys(derivation, symbol, loose):
            if block is not None and meta.block not in (None, block):
                continue
            if head is not None and meta.head not in (None, graph.key_head(meta.block, head) if symbol in SHARED
                                                      else head):
                continue
            if own == key:
                matches.append(i)
            elif key.index is None and row is not None and row == key:
                rows.append(i)
    return matches or rows


# a key/value head's quantities, which the query heads of its group share: a query head's are those of
# the key/value head it reads (Graph.key_head; the page's "K head 3" of 4 heads sharing 2: key/value head 2's)
SHARED = ("k", "v", "k_rot")


def _keys(derivation: Derivation, symbol: str, loose: bool) -> list[tuple]:
    """(node id, metadata, the fields its Name is looked up by, those of its row or None)
    of the quantities with ``symbol``, worked out once per derivation (a lookup compared
    every quantity's Name afresh)."""
    def compute() -> list[tuple]:
        return [(i, meta, meta.name.key(loose=loose).fields,
                 meta.name.key(index=False).fields if meta.name.fields.index is not None else None)
                for i, meta in _by_symbol(derivation).get(symbol, ())]
    return per_derivation(derivation, ("keys", symbol, loose), compute)
