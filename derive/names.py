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
"""

from __future__ import annotations

import re
import weakref
from functools import lru_cache

from .derivation import Derivation
from .errors import DeriveError
from .name import Fields, Name, after_step, grad_of, json_symbol
from .name_parser import parse_name
from .steps import Ref

HEAD = re.compile(r"\^\{?\((\d+)\)\}?")  # kept for derive.check: a head written as ^(h) or ^{(h)}
MAX_NAME = 120  # characters of a name (derive's longest, a LaTeX gradient of a spelled-out piece, is about 60)
EXPECTED = ("a name such as z_roof, a_{5,3} (of a head: explain --head, or a `Head 1` line in a checked file), "
            "h_5[1], sigma_5, u_5, p(␣roof), L")

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


def read(name: str) -> Name:
    """The Name written as ``name``.

    Raises:
        DeriveError: when the text is not a name.
    """
    parsed = _parsed(name)
    if parsed is None:
        raise DeriveError(f"no quantity is called {name!r}", expected=EXPECTED)
    return parsed


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


def _labelled(derivation: Derivation, label: str, block: int | None, head: int | None) -> int | None:
    """The one forward quantity whose own label is ``label`` in ``block`` and ``head`` (a
    quantity with no block or head is in every one), or None when none or several are: a
    quantity's label is read back as that quantity, so derive's own plain names are found
    without the Earley parser (about 16 ms a name)."""
    def index() -> dict[str, list[tuple]]:
        out: dict[str, list[tuple]] = {}
        for i, node in enumerate(derivation.graph.nodes):
            if node.meta.label and node.meta.symbol and not node.meta.param:  # what _search looks at
                out.setdefault(node.meta.label, []).append((i, node.meta.block, node.meta.head))
        return out
    near = [i for i, b, h in per_derivation(derivation, "labels", index).get(label, ())
            if (block is None or b in (None, block)) and (head is None or h in (None, head))]
    return near[0] if len(near) == 1 else None


def _find(derivation: Derivation, name: str | Name, block: int | None, head: int | None) -> list[Ref]:
    wanted = read(name) if isinstance(name, str) else name
    if wanted.fields.head is not None:
        head = wanted.fields.head
    found = _search(derivation, wanted, block, head, False) or _search(derivation, wanted, block, head, True)
    if not found:
        raise DeriveError(f"no quantity is called {str(name)!r}", expected=EXPECTED)
    keys = [derivation.graph.nodes[i].meta.name.key() for i in found]
    if len(set(keys)) < len(keys):
        groups = {(derivation.graph.nodes[i].meta.block, derivation.graph.nodes[i].meta.head) for i in found}
        where = ", ".join(f"block {b}" + (f" head {h}" if h else "") for b, h in sorted(groups, key=str))
        raise DeriveError(f"{str(name)!r} names quantities in several places ({where})",
                          expected="--block and/or --head to choose one")
    return [Ref("before", i) for i in found]


def _search(derivation: Derivation, wanted: Name, block: int | None, head: int | None, loose: bool) -> list[int]:
    """Node ids whose Name has the fields of ``wanted`` (head and block aside: they are
    compared with the node's own), or, for a name without a column, the row's components;
    with ``loose``, pieces compare without their ``␣``."""
    key: Fields = wanted.key(loose=loose).fields
    matches, rows = [], []
    for symbol in json_symbols(wanted):
        for i, meta, own, row in _keys(derivation, symbol, loose):
            if block is not None and meta.block not in (None, block):
                continue
            if head is not None and meta.head not in (None, head):
                continue
            if own == key:
                matches.append(i)
            elif key.index is None and row is not None and row == key:
                rows.append(i)
    return matches or rows


def _keys(derivation: Derivation, symbol: str, loose: bool) -> list[tuple]:
    """(node id, metadata, the fields its Name is looked up by, those of its row or None)
    of the quantities with ``symbol``, worked out once per derivation (a lookup compared
    every quantity's Name afresh)."""
    def compute() -> list[tuple]:
        return [(i, meta, meta.name.key(loose=loose).fields,
                 meta.name.key(index=False).fields if meta.name.fields.index is not None else None)
                for i, meta in _by_symbol(derivation).get(symbol, ())]
    return per_derivation(derivation, ("keys", symbol, loose), compute)
