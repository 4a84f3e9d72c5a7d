"""Finding a quantity by the name a reader writes: ``z_roof``, ``a_{5,3}``, ``h_5[1]``,
``sigma_5``, ``u_5``, ``p(␣roof)``, ``L``.

Names are matched loosely: braces, spaces and the ``␣`` mark are ignored, ``[c]`` and
``,c`` mean the same column (``h_5[1]`` = ``h_{5,1}``), Greek letters may be written out
(``σ`` = ``sigma``), and ``u'`` may be written ``u2``. A head is given as ``^(1)``, or
separately; a block separately. A name that names a whole row (``u_5``) gives the row.
The ``␣`` mark is ignored only when the name matches nothing with it kept: in a
vocabulary with both ``the`` and ``␣the``, ``z_the`` and ``z_␣the`` are different logits.
"""

from __future__ import annotations

import re

from .derivation import Derivation
from .errors import DeriveError
from .steps import Ref

GREEK = {"σ": "sigma", "μ": "mu", "η": "eta"}
HEAD = re.compile(r"\^\{?\((\d+)\)\}?")


def normalize(name: str, keep_space_mark: bool = False) -> str:
    """The loose form of a name used for matching (see the module docstring); with
    ``keep_space_mark`` the ``␣`` of a vocabulary piece is kept."""
    text = name.strip()
    for greek, latin in GREEK.items():
        text = text.replace(greek, latin)
    text = HEAD.sub("", text)
    text = text.replace("\\cdot", ".").replace("·", ".").replace("\u2423", "\u2423" if keep_space_mark else "").replace("{", "").replace("}", "").replace(" ", "")
    text = text.replace("[", ",").replace("]", "").replace("u2_", "u'_").replace("\u2212", "-")
    return text.lower() if text not in ("L",) else text


def head_of(name: str) -> int | None:
    """The head written in a name as ``^(h)``, or None."""
    match = HEAD.search(name)
    return int(match.group(1)) if match else None


def _row_key(label: str) -> str:
    """``x_5[1]`` -> ``x_5``: the row a component belongs to."""
    return label.split("[", 1)[0]


def find(derivation: Derivation, name: str, block: int | None = None, head: int | None = None) -> list[Ref]:
    """The forward quantities called ``name`` (one, or a row's components in order).
    A head written in the name (``o_5^{(1)}``) wins over ``head`` (a file's context).

    Raises:
        DeriveError: when nothing has that name, or several quantities in different blocks
            or heads do and ``block``/``head`` do not choose one; the message lists them.
    """
    head = head_of(name) if head_of(name) is not None else head  # a head written in the name wins
    found = _search(derivation, name, block, head, True) or _search(derivation, name, block, head, False)
    if not found:
        raise DeriveError(f"no quantity is called {name!r}",
                          expected="a name such as z_roof, a_{5,3} (with --head), h_5[1], sigma_5, u_5, p(␣roof), L")
    labels = [derivation.graph.nodes[i].meta.label for i in found]
    if len(set(labels)) < len(labels):
        groups = {(derivation.graph.nodes[i].meta.block, derivation.graph.nodes[i].meta.head) for i in found}
        where = ", ".join(f"block {b}" + (f" head {h}" if h else "") for b, h in sorted(groups, key=str))
        raise DeriveError(f"{name!r} names quantities in several places ({where})",
                          expected="--block and/or --head to choose one")
    return [Ref("before", i) for i in found]


def _search(derivation: Derivation, name: str, block: int | None, head: int | None, strict: bool) -> list[int]:
    """Node ids whose label is ``name`` (or whose row it names), the ``␣`` mark kept when
    ``strict``."""
    key = normalize(name, strict)
    matches, rows = [], []
    for i, node in enumerate(derivation.graph.nodes):
        meta = node.meta
        if not meta.symbol or meta.symbol == "param":
            continue
        if block is not None and meta.block not in (None, block):
            continue
        if head is not None and meta.head not in (None, head):
            continue
        if normalize(meta.label, strict) == key:
            matches.append(i)
        elif normalize(_row_key(meta.label), strict) == key and "[" in meta.label:
            rows.append(i)
    return matches or rows
