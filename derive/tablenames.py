"""What a table cell names: the quantity its column header and its row key mean together.

A chapter's table names its quantities the way a reader reads them: the header is a name
with a free index (``x_t``, ``k_j``, ``s_{5,j}``, ``∂L/∂E_i``) or a name whose row is
understood (``mu``, ``h``, ``Q`` head 1, ``o^{(1)}``, ``z``, ``GELU``), and the key columns
say which row (a token of the prompt, a vocabulary piece, an id, a row number):

- the free index (``t``, ``i``, ``j``) takes the row's position, or its id for a row of
  ``E`` (``E_i``, ``E[id]``); a name without a position gets it as a subscript (``mu`` ->
  ``mu_5``; ``e^{s}`` -> ``e^s_{5,j}``, the row of the title's ``row 5``; ``z`` -> ``z_␣roof``);
- a single number as subscript in a table of positions is a component (``u_1`` -> ``u_5[1]``);
- rows keyed by some of the prompt's tokens in any order (``| the | 0.612 |``, `` `␣cat` ``)
  are, where the name has no row per vocabulary piece (``mu``, ``sigma``, ``u_t``; ``z``
  and ``p`` have), the tokens' positions (:func:`token_position`); a token the prompt
  repeats does not say which position, and is not guessed;
- a norm's statistics (``mu``, ``sigma``, ``rms``: the quantities whose metadata names a
  norm slot) belong to the norm whose output the table shows (``u'`` -> ``mu'``, ``f`` ->
  ``rms^f``);
- ``∂L/∂X`` names the gradient of the row of X; a header that is a formula
  (``E_i - 1/10 ∂L/∂E_i``) is evaluated from the exact values of its names;
- a matrix with ``i \\ j`` keys and tokens as column headers is the title's ``a_{i,j}``;
  a row keyed ``id`` under token headers gives the prompt's ids; ``c_k`` columns under a
  title ``E`` (or ``W_Q``, ``b_1``, ... the weights step's) are the columns of that weight,
  and token columns under ``W_U`` its columns of those pieces.

:func:`cell_claim` returns what a cell must hold: the refs of the named quantity, or the
exact values a formula or a fact gives. Names are resolved by :func:`derive.names.find`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from . import mathread
from .derivation import Derivation
from .errors import DeriveError
from .handfile import TITLE_CONTEXT, Entry
from .mathread import Bin, Call, Deriv, Num, Paren, Piece, Sym
from .names import find, per_derivation
from .printing import listed, quoted, text
from .steps import Ref, Vec

FREE = ("t", "i", "j")


@dataclass
class Claim:
    """What a cell claims: ``refs`` (the quantity's components), or ``values`` (exact
    values, fmpq or arb) computed from a formula or a fact, with ``label`` naming them."""

    label: str
    refs: list[Ref] | None = None
    values: list | None = None


@dataclass
class _Row:
    position: int | None
    piece: str | None
    id: int | None
    number: int | None


def cell_claim(derivation: Derivation, entry: Entry) -> Claim:
    """The claim of a table entry (``entry.cell``).

    A ``y`` column in rows keyed by some of the prompt's tokens is the row's y_t (the block's
    output, ``y = h + m``) when the case has one and the cell writes as many numbers; else,
    and in rows keyed by vocabulary pieces, the one-hot target (:func:`_target_entry`).

    Raises:
        DeriveError: when the header or the row names nothing derive knows."""
    try:
        return _claim(derivation, entry)
    except DeriveError:
        page = _page_cell(derivation, entry.cell)
        if page is not None:
            return page
        if entry.values == ["0"] and masked_row(entry.cell.table, entry.cell.row):
            return _masked_key(entry.cell.table.header[entry.cell.column])
        target = _target_entry(derivation, entry)
        position = token_position(derivation, entry.cell.table, entry.cell.row)
        if position is None:
            if target is not None:
                return target
            raise
    try:
        claim = _claim(derivation, entry, position)  # rows keyed by some of the prompt's tokens: positions
    except DeriveError:
        if target is None:
            raise
        return target
    if target is not None and claim.refs is not None and len(claim.refs) != len(entry.values):
        return target  # (a 0 or a 1 under y, beside z and p: the target, though the prompt holds the row's piece)
    return claim


class AmbiguousRow(DeriveError):
    """A table row keyed by a token the prompt holds at several positions: the row does not
    say which position it is (every cell of the row raises the same)."""


def _masked_key(header: str) -> Claim:
    """A masked key's e^s (the column ``header``): exactly 0, as -inf before the softmax
    gives; no quantity, a fact."""
    return Claim(f"{header} of a masked key", values=[Fraction(0)])


def token_position(derivation: Derivation, table, r: int) -> int | None:
    """The prompt position (1-based) of data row ``r`` of a table whose key column holds
    tokens of the prompt, some of them in any order, written as pieces (`` `␣cat` ``) or
    as plain text (``the``): the position of the row's token. None when some row of every
    key column (but ``id``, ``row``, ``t``) is no token of the prompt (a table of
    vocabulary pieces, ``z_␣roof``), or the case has no tokens. The table's keys are read
    once (:func:`_token_places`), not once per cell.

    Raises:
        AmbiguousRow: when the row's token stands at several places of the prompt (``the``
            at 1 and 5 of "the cat sat on the [MASK]"): the row does not say which."""
    found = _token_places(derivation, table)
    if found is None:
        return None
    keys, places = found
    if len(places[r]) > 1:
        raise AmbiguousRow(f"the token {quoted(keys[r])} stands at positions {listed([str(p) for p in places[r]])} "
                           "of the prompt: the row does not say which",
                           expected="a row for each position in prompt order, or a `t` column")
    return places[r][0]


def _token_places(derivation: Derivation, table) -> tuple[list[str], list[list[int]]] | None:
    """The first key column of ``table`` (not ``id``, ``row``, ``t``) whose every row is a
    token of the prompt: its tokens, row by row, and the positions (1-based) of each in the
    prompt; None when no key column is. Worked out once per table and prompt."""
    tokens = tuple(derivation.case.tokens or ())
    memo = ("token places", tokens)
    if memo not in table.memo:
        table.memo[memo] = None
        for k in range(min(table.keys, len(table.header))):
            if _word(table.header[k]) in ("id", "row", "t", "position", "pos"):
                continue
            keys = [piece or row[k].strip() if k < len(row) else "" for piece, row in zip(_pieces(table, k), table.rows)]
            if tokens and all(key in tokens for key in keys):
                table.memo[memo] = keys, [[p + 1 for p, token in enumerate(tokens) if token == key] for key in keys]
                break
    return table.memo[memo]


def _pieces(table, k: int) -> list[str | None]:
    """The vocabulary piece each data row of ``table`` writes in column ``k`` (:func:`_piece`;
    None for a row that writes none or has no such column), read once per table."""
    memo = ("pieces", k)
    if memo not in table.memo:
        table.memo[memo] = [_piece(row[k]) if k < len(row) else None for row in table.rows]
    return table.memo[memo]


def _target_entry(derivation: Derivation, entry: Entry) -> Claim | None:
    """A ``y`` column in rows keyed by vocabulary pieces: the one-hot target of the loss
    (``dL/dz = p - y``), 1 for the target's piece and 0 for any other; None for any other
    cell (:func:`cell_claim` says when a y column is the target)."""
    case = derivation.case
    cell = entry.cell
    try:
        node = _header_node(cell.table.header[cell.column])
    except DeriveError:
        return None
    if node != Sym("y") or case.target is None:
        return None
    piece = _row(derivation, cell.table, cell.row).piece
    if piece is None:
        return None
    target = case.pieces[case.target]
    return Claim(f"y_{piece} (the one-hot target {target})", values=[Fraction(int(piece == target))])


def _claim(derivation: Derivation, entry: Entry, position: int | None = None) -> Claim:
    """The claim read from the header's name and the row's key (see :func:`cell_claim`);
    ``position``: the row's prompt position, read from its token (:func:`token_position`)."""
    cell = entry.cell
    table = cell.table
    case = derivation.case
    header = table.header[cell.column]
    context = _context(table.title + " " + header)
    head = context.get("head", entry.head)
    block = context.get("block", entry.block)
    row = _row(derivation, table, cell.row)
    if position is not None:
        row = _Row(position, None, row.id, row.number)
    column_piece = _piece(header)
    if column_piece is not None:  # a matrix of tokens x tokens, or the ids row
        position = _column_position(table, cell.column, case)
        if row.piece is None and row.position is None and _word(table.rows[cell.row][0]) == "id":
            return Claim(f"id of {column_piece}", values=[Fraction(case.ids[position - 1])])
        node = _title_name(table.title)
        param = _param_of(derivation, node) if node is not None else None
        if param is not None and row.number is not None and column_piece in case.pieces:  # W_U: a column a piece
            refs = param_row(derivation, param, row.number, block, head)
            return Claim(derivation.meta(refs[0]).label, refs=[refs[case.pieces.index(column_piece)]])
        if node is None or row.position is None:
            raise DeriveError(f"the column {quoted(header)} is a token but the table names no quantity")
        name = _label(_substitute(node, {"i": row.position, "j": position}))
        return _found(derivation, name, block, head)
    node = _header_node(header)
    if isinstance(node, Deriv):
        return _gradient(derivation, node, row, block, head)
    if not mathread.is_name(node):
        return _formula(derivation, node, row, block, head, header)
    if isinstance(node, Sym) and node.base == "c" and (_title_name(table.title) is not None or row.id is not None):
        # E (12 x 4), W_Q (4 x 4): the columns c_k of the weight the title names (of E itself when
        # no title names the matrix: rows keyed by id)
        matrix = _title_name(table.title) or Sym("E")
        param = _param_of(derivation, matrix) or _base(matrix)
        k = _number(node)
        refs = param_row(derivation, param, row.id + 1 if row.id is not None else row.number, block, head)
        if k is None or not 1 <= k <= len(refs):
            raise DeriveError(f"{param} has no column {quoted(header)}")
        return Claim(derivation.meta(refs[k - 1]).label, refs=[refs[k - 1]])
    if isinstance(node, Sym) and node.base == "P" and _param_of(derivation, node) is None:
        return Claim(f"P_{row.position}", refs=_sinusoid_row(derivation, row.position))
    param = _param_of(derivation, node)
    if param is not None:
        refs = _param_refs(derivation, param, row, block)
        return Claim(derivation.meta(refs[0]).label if row.piece is not None else
                     f"{param}_{_param_index(derivation, param, row)}", refs=refs)
    norm = _norm(derivation, table, entry.section)
    name = _label(_placed(node, row, norm, context.get("row") or len(case.ids), _statistics(derivation)))
    return _found(derivation, name, block, head)


def _page_cell(derivation: Derivation, cell) -> Claim | None:
    """The quantity derive's own page prints in this cell: a table of the derivation's
    steps with the same title and header whose row has the same key (the page calls the
    rows of a given X ``k_j`` and ``output`` when no W_K or block output exists; a table
    printed sorted, the logits by size, holds it in another row), else None."""
    table = cell.table
    for step in derivation.steps:
        for page in step.tables:
            width = len(table.header) if table.origin_columns is None else max(table.origin_columns) + 1
            if _plain(page.title) != _plain(table.title) or len(page.columns) < width \
                    or (table.origin_columns is None and len(page.columns) != width):
                continue
            row, column = table.row_at(cell.row), table.column_at(cell.column)
            if _plain(page.columns[column]) != _plain(table.header[cell.column]):
                continue
            key = _plain(table.rows[cell.row][0])
            if row >= len(page.rows) or _plain(page.rows[row][0]) != key:  # (a table printed sorted, the logits
                rows = [k for k, r in enumerate(page.rows) if _plain(r[0]) == key]  # by size: its row by its key)
                if len(rows) != 1:
                    continue
                row = rows[0]
            found = page.rows[row][column]
            if found == "0" and "masked" in page.rows[row]:  # (a column group of the page: "masked" in another)
                return _masked_key(table.header[cell.column])
            refs = found.refs if isinstance(found, Vec) else [found] if isinstance(found, Ref) else None
            if refs:
                return Claim(derivation.meta(refs[0]).label if len(refs) == 1 else _row_label(derivation, refs),
                             refs=list(refs))
    return None


def page_equation(derivation: Derivation, name: str) -> list[Ref]:
    """The quantities an equation of derive's own page gives for ``name`` (``q_6^{(1)}``
    of a case whose queries are the given rows).

    Raises:
        DeriveError: when no equation of the page has that left side."""
    for step in derivation.steps:
        for equation in step.equations:
            if isinstance(equation.lhs, str) and "=" in equation.lhs or _plain(equation.lhs) != _plain(name):
                continue
            rhs = equation.rhs
            refs = rhs.refs if isinstance(rhs, Vec) else [rhs] if isinstance(rhs, Ref) else None
            if refs:
                return list(refs)
    raise DeriveError(f"no quantity is called {quoted(name)}")


def _plain(written) -> str:
    """A title, header or key as comparable text: the plain notation with the marks of
    Markdown and LaTeX (``$``, braces, backslashes, backticks, spaces) removed."""
    written = written if isinstance(written, str) else text(written)
    written = written.replace("\\textvisiblespace", "\u2423")
    return re.sub(r"\\(mathrm|texttt|text)|[$\\{}`\s_]", "", written).lower()


def _row_label(derivation: Derivation, refs: list[Ref]) -> str:
    return derivation.meta(refs[0]).label.rsplit("[", 1)[0]


# ----------------------------------------------------------------------------- rows and headers
def _context(text: str) -> dict:
    """``head 1``, ``block 2``, ``row 5`` written in a title or a header."""
    return {m.group(1).lower(): int(m.group(2)) for m in TITLE_CONTEXT.finditer(text)}


def _word(text: str) -> str:
    return text.replace("$", "").replace(" ", "").strip("{}").lower()


def _piece(text: str, vocabulary=()) -> str | None:
    """The vocabulary piece a cell or header writes (`` `␣cat` ``, ``\\texttt{...}``), or
    bare text that is exactly one of ``vocabulary``'s pieces (``the``, as a reader keys a
    row), else None."""
    if not any(mark in text for mark in ("`", "\\texttt", "\u2423")):
        return text.strip() if text.strip() in vocabulary else None
    try:
        node = mathread.read(text).exprs[0]
    except DeriveError:
        return None
    return node.text if isinstance(node, Piece) else None


def _row(derivation: Derivation, table, r: int) -> _Row:
    """Where data row ``r`` of ``table`` stands: a position of the prompt (when the key
    column lists the prompt's tokens in order), a vocabulary piece, an id or a row number."""
    case = derivation.case
    keys = {_word(table.header[k]): table.rows[r][k] for k in range(table.keys) if k < len(table.rows[r])}
    out = _Row(None, None, None, None)
    for word, cell in keys.items():
        if word == "id" and cell.strip().isdigit():
            out.id = int(cell)
        elif word == "row" and cell.strip().isdigit():
            out.number = int(cell)
        elif word in ("t", "position", "pos") and cell.strip().isdigit():
            out.position = int(cell)
        elif _piece(cell, case.pieces or ()) is not None:
            if _in_prompt_order(table, _pieces, list(keys).index(word), case.tokens):
                out.position = table.row_at(r) + 1
            else:
                out.piece = _piece(cell, case.pieces or ())
    if out.position is None and out.id is not None and out.piece is None \
            and _in_prompt_order(table, _ids, list(keys).index("id"), case.ids):
        out.position = table.row_at(r) + 1
    return out


def _in_prompt_order(table, read, k: int, prompt) -> bool:
    """Whether a table's key column ``k``, read by ``read`` (:func:`_pieces` or :func:`_ids`),
    lists the prompt (its tokens or its ids) in order: every row, each at its place in the
    whole table (a part of it, or rows omitted between). Worked out once per table, column
    and prompt."""
    prompt = list(prompt or ())
    memo = ("in prompt order", read.__name__, k, tuple(prompt))
    if memo not in table.memo:
        keys = read(table, k)
        if table.origin_rows is None and table.origin_columns is None:
            table.memo[memo] = keys == prompt
        else:
            places = [table.row_at(r) for r in range(len(keys))]
            table.memo[memo] = bool(keys) and all(p < len(prompt) and key == prompt[p] for p, key in zip(places, keys))
    return table.memo[memo]


def _ids(table, k: int) -> list[int | None]:
    """The id each data row of ``table`` writes in column ``k`` (None for a row that writes
    no whole number), read once per table."""
    memo = ("ids", k)
    if memo not in table.memo:
        table.memo[memo] = [int(row[k]) if row[k].strip().isdigit() else None for row in table.rows]
    return table.memo[memo]


def _column_position(table, column: int, case) -> int:
    """The prompt position of a token column (the header tokens in prompt order; a part of
    a wide table holds some of its columns)."""
    return table.column_at(column) - table.keys + 1


def masked_row(table, row: int) -> bool:
    """Whether data row ``row`` of ``table`` has a cell that says ``masked`` (a row of
    scores the mask hides); the rows worked out once per table (each cell asks)."""
    if "masked rows" not in table.memo:
        table.memo["masked rows"] = {r for r, cells in enumerate(table.rows)
                                     if any(c.strip().lower() == "masked" for c in cells)}
    return row in table.memo["masked rows"]


def _header_node(header: str):
    """The name or formula a column header writes (``x_t = E[id] + P_t`` names ``x_t``;
    ``Q head 1`` names ``Q``; ``GELU (tanh form)`` names ``GELU``), read once per header text.

    Raises:
        DeriveError: when the header reads as neither."""
    found = _header_read(header)
    if isinstance(found, DeriveError):
        raise DeriveError(found.detail, expected=found.expected)
    return found


@lru_cache(maxsize=1 << 12)
def _header_read(header: str):
    """:func:`_header_node`'s node, or the error it raises."""
    try:
        return _header_parsed(header)
    except DeriveError as exc:
        return DeriveError(exc.detail, expected=exc.expected)


def _header_parsed(header: str):
    text = TITLE_CONTEXT.sub("", header)
    text = re.sub(r"\([a-z][a-z\s]*\)\s*$", "", text).strip()  # (words in brackets; one run, read once)
    for candidate in (text, text.split("=", 1)[0]):
        try:
            chain = mathread.read(candidate)
        except DeriveError:
            continue
        first = chain.exprs[0]
        return first
    raise DeriveError(f"cannot read the column header {quoted(header)}")


def _title_name(title: str):
    """The name a table title writes in math, between ``$`` or ``\\(`` and ``\\)``
    (``Head 1, weights $a_{i,j}$`` -> a_{i,j})."""
    formulas = [a or b for a, b in re.findall(r"\$([^$]*)\$|\\\(((?:(?!\\[()]).)*)\\\)", title)]  # (\( not nested)
    for formula in formulas or [title]:
        try:
            node = mathread.read(formula).exprs[0]
        except DeriveError:
            continue
        while isinstance(node, Bin) and node.op == "jux":
            node = node.a  # E (12 x 4)
        if mathread.is_name(node):
            return node
    return None


def _norm(derivation: Derivation, table, section: str) -> str:
    """The norm slot of a table's statistics: ``'`` when it shows u', ``^f`` when f, else
    the slot whose step the table's title or the section's heading names (``LayerNorm
    before the MLP``: ``'``); ``""`` (the first norm) when nothing says. Worked out once
    per table and section (each of its cells asks: a table of 4,000 columns read every
    header for every cell, 16 s)."""
    memo = ("norm", section)
    if memo not in table.memo:
        table.memo[memo] = _norm_of(derivation, table, section)
    return table.memo[memo]


def _norm_of(derivation: Derivation, table, section: str) -> str:
    for header in table.header:
        try:
            node = _header_node(header)
        except DeriveError:
            continue
        if isinstance(node, Sym) and node.base == "u" and node.primes:
            return "'"
        if isinstance(node, Sym) and node.base == "f":
            return "^f"
    for text in (table.title, section):
        slot = norm_slot(derivation, text)
        if slot is not None:
            return {"ln2": "'", "final": "^f"}.get(slot[1], "")
    return ""


def norm_slot(derivation: Derivation, text: str) -> tuple[int | None, str] | None:
    """The norm (block, slot: ``ln1``, ``ln2`` or ``final``) of the step a heading or a
    table title names (``## Step 9. LayerNorm before the MLP``, ``LayerNorm before the MLP,
    block 1``): the step whose title it ends with, once its head and block words are set
    aside; None when it names no step with a norm's quantities. Worked out once per text
    and derivation (every cell of a table asks)."""
    return per_derivation(derivation, ("norm slot", text), lambda: _norm_slot(derivation, text))


def _norm_slot(derivation: Derivation, text: str) -> tuple[int | None, str] | None:
    wanted = _plain_words(TITLE_CONTEXT.sub("", text).rstrip(" ,;:"))
    if not wanted:
        return None
    for step in derivation.steps:
        if not wanted.endswith(_plain_words(step.title)):
            continue
        for table in step.tables:
            for cell in (c for row in table.rows for c in row):
                if hasattr(cell, "phase") and derivation.meta(cell).norm:
                    return derivation.meta(cell).block, derivation.meta(cell).norm
    return None


def _plain_words(text: str) -> str:
    """A heading or a step title without its markup and spaces (``Step 11. LayerNorm before
    $W_{U}$`` -> ``step11.layernormbeforewu``), to compare them."""
    return re.sub(r"[$\\{}_\s#*]", "", text).lower()


def _number(node: Sym) -> int | None:
    subs = [c for kind, c in node.scripts if kind == "_"]
    if len(subs) == 1 and isinstance(subs[0], Num) and subs[0].text.isdigit():
        return int(subs[0].text)
    return None


def _base(node) -> str:
    return mathread.label(node).split("_")[0] if not isinstance(node, Sym) else node.base


# ----------------------------------------------------------------------------- names
def _substitute(node, values: dict):
    """``node`` with the free indices in ``values`` replaced by numbers."""
    if isinstance(node, Sym):
        if not node.scripts and node.base in values:
            return Num(str(values[node.base]))
        return Sym(node.base, node.primes, tuple((kind, _substitute_script(c, values)) for kind, c in node.scripts))
    if isinstance(node, Bin):
        return Bin(node.op, _substitute(node.a, values), _substitute(node.b, values))
    return node


def _substitute_script(content, values):
    if isinstance(content, tuple):
        return tuple(_substitute(c, values) for c in content)
    if isinstance(content, Paren):
        return Paren(tuple(_substitute(c, values) for c in content.items))
    return _substitute(content, values)


def _free(node) -> bool:
    """True when the name has a free index (t, i, j) in a subscript."""
    if isinstance(node, Bin):
        return _free(node.a) or _free(node.b)
    if not isinstance(node, Sym):
        return False
    for kind, content in node.scripts:
        items = content if isinstance(content, tuple) else content.items if isinstance(content, Paren) else (content,)
        if kind in ("_", "[]") and any(isinstance(c, Sym) and c.base in FREE and not c.scripts for c in items):
            return True
    return False


def _statistics(derivation: Derivation) -> set[str]:
    """The symbols of the norms' per-row statistics (mu, sigma, rms): the quantities whose
    metadata names a norm slot (ln1, ln2, final)."""
    return per_derivation(derivation, "statistics",
                          lambda: {n.meta.symbol for n in derivation.graph.nodes if n.meta.norm and n.meta.symbol})


def _placed(node, row: _Row, norm: str, attention_row: int, statistics=frozenset()):
    """The header's name for one row (see the module docstring); ``statistics`` are the
    symbols that take the table's norm mark (``rms`` in a table of u' is ``rms'``)."""
    position = row.position
    if row.piece is not None:
        if isinstance(node, Sym) and node.base == "p" and not node.scripts:
            return Call("p", (Piece(row.piece),))
        if isinstance(node, Bin) and node.op == "^" and isinstance(node.b, Bin) and node.b.op == "/":
            return Bin("^", node.a, Bin("/", _with_sub(node.b.a, Piece(row.piece)), node.b.b))  # e^(z/T)
        return _with_sub(node, Piece(row.piece))
    if position is None:
        raise DeriveError("the row is neither a token of the prompt nor a vocabulary piece")
    if _free(node):
        return _substitute(node, {"t": position, "i": position, "j": position})
    if isinstance(node, Bin):  # u' W_1: the row is the first name's
        return Bin(node.op, _placed(node.a, row, norm, attention_row, statistics), node.b)
    if not isinstance(node, Sym):
        return node
    component = _number(node)
    if component is not None and node.base in ("u", "f", "x", "h", "y", "m", "g", "attn"):
        return Sym(node.base, node.primes, ((("_", Num(str(position)))), ("[]", (Num(str(component)),))))
    if node.base == "e" and any(kind == "^" for kind, _ in node.scripts):  # e^s of the title's row
        return _with_sub(node, Paren((Num(str(attention_row)), Num(str(position)))))
    if node.base in ("Q", "K", "V"):
        node = Sym(node.base.lower(), node.primes, node.scripts)
    if node.base in ("GELU", "ReLU", "SiLU"):
        node = Sym("g")
    if node.base in statistics and norm and not node.primes:
        node = Sym(node.base, 1, node.scripts) if norm == "'" else Sym(node.base, 0, (("^", Sym("f")),) + node.scripts)
    return _with_sub(node, Num(str(position)))


def _with_sub(node, content):
    """``node`` with a subscript added in front of its head and index (``o^{(1)}`` ->
    ``o_5^{(1)}``; ``mu^f`` -> ``mu^f_5``)."""
    if not isinstance(node, Sym):
        raise DeriveError(f"{mathread.show(node)} does not name one quantity per row")
    scripts = list(node.scripts)
    at = next((k for k, (kind, c) in enumerate(scripts) if kind == "[]" or
               (kind == "^" and isinstance(c, Paren))), len(scripts))
    scripts.insert(at, ("_", content))
    return Sym(node.base, node.primes, tuple(scripts))


def _label(node) -> str:
    return mathread.label(node)


def _found(derivation: Derivation, name: str, block, head) -> Claim:
    """The quantity ``name`` of the title's head, or when that head has none of its own,
    the one quantity of that name the heads share (k~ of a multi-query case's head 2 is
    head 1's).

    Raises:
        DeriveError: when nothing, or several quantities of other heads, have that name."""
    try:
        return Claim(name, refs=find(derivation, name, block, head))
    except DeriveError:
        if head is None:
            raise
        return Claim(name, refs=find(derivation, name, block, None))


# ----------------------------------------------------------------------------- weights and formulas
def _param_of(derivation: Derivation, node) -> str | None:
    """The weight matrix a header names (``E_i``, ``E[id]``, ``P_t``), else None."""
    if not isinstance(node, Sym):
        return None
    params = per_derivation(derivation, "params",
                            lambda: {derivation.graph.nodes[i].meta.param for i in derivation.graph.param_leaves()})
    subs = [c for kind, c in node.scripts if kind == "_"]
    if subs and f"{node.base}_{mathread.show(subs[0])}" in params:
        return f"{node.base}_{mathread.show(subs[0])}"  # W_Q, b_1
    return node.base if node.base in params else None


def _param_index(derivation: Derivation, param: str, row: _Row) -> int | None:
    """The row of a weight a table row means: E's row is the token's id (+1) (written as
    the id, the prompt position or the vocabulary piece), P's the position, any other
    weight's the row number; a weight of one row (the given logits z of a softmax case, one
    per piece) has that row whatever the key."""
    if param == "E":
        if row.id is not None:
            return row.id + 1
        if row.position is not None:
            return derivation.case.ids[row.position - 1] + 1
        if row.piece is not None and row.piece in derivation.case.pieces:  # a row keyed by its token alone
            return derivation.case.pieces.index(row.piece) + 1
    if row.number is None and row.position is None:
        graph = derivation.graph
        rows = {graph.nodes[i].meta.position for i in per_derivation(derivation, "param leaves", graph.param_leaves)
                if graph.nodes[i].meta.param == param}
        if len(rows) == 1:
            return next(iter(rows))
    return row.number or row.position


def _param_refs(derivation: Derivation, param: str, row: _Row, block, head=None) -> list[Ref]:
    """The leaves of the weight ``param`` a table row means (:func:`_param_index`); in a
    row keyed by a vocabulary piece whose weight is indexed by pieces (``z_a``), that
    piece's leaf alone.

    Raises:
        DeriveError: when the weight has no such row or piece."""
    refs = param_row(derivation, param, _param_index(derivation, param, row), block, head)
    if row.piece is None or not any(isinstance(derivation.meta(r).index, str) for r in refs):
        return refs
    mine = [r for r in refs if derivation.meta(r).index == row.piece]
    if not mine:
        raise DeriveError(f"{param} has no entry for the piece {quoted(row.piece)}")
    return mine


def in_context(graph, ids: list[int], block: int | None, head: int | None) -> list[int]:
    """Of weight entries ``ids``, those a line in ``block`` and ``head`` reads: of that
    block (or of none), and, when ``head`` is given, that head's own when it has its own
    (hand set, numbered from column 1), else those the heads share."""
    ids = [i for i in ids if block is None or graph.nodes[i].meta.block in (None, block)]
    if head is None:
        return ids
    own = [i for i in ids if graph.nodes[i].meta.head == head]
    return own or [i for i in ids if graph.nodes[i].meta.head is None]


def param_row(derivation: Derivation, param: str, row: int | None, block, head=None) -> list[Ref]:
    """The leaves of one row (1-based) of the weight matrix ``param``, in column order (of
    the head's own weight when ``head`` is given and heads have their own: W_Q of head 3).

    Raises:
        DeriveError: when the matrix has no such row."""
    graph = derivation.graph
    rows = per_derivation(derivation, "param rows", lambda: _param_rows(graph))
    leaves = in_context(graph, rows.get((param, row), []), block, head)
    if not leaves:
        raise DeriveError(f"{param} has no row {row}")
    # a weight shared by some heads (its columns split among them) comes before a head's own
    # (crane: W_Q's 16 columns for heads 1 and 2, then the hand-set head's one column)
    return [Ref("before", i) for i in sorted(leaves, key=lambda i: (graph.nodes[i].meta.head is not None,
                                                                     graph.nodes[i].meta.head or 0,
                                                                     graph.nodes[i].meta.index))]


def param_rows(derivation: Derivation, param: str, block, head=None) -> int:
    """How many rows the weight matrix ``param`` has (of the head's own weight when
    ``head`` is given and heads have their own), 0 when the case has no such weight."""
    rows = per_derivation(derivation, "param rows", lambda: _param_rows(derivation.graph))
    return len({row for (name, row), leaves in rows.items() if name == param and in_context(
        derivation.graph, leaves, block, head)})


def _param_rows(graph) -> dict[tuple[str, int | None], list[int]]:
    """The weights' leaves by (parameter, row), in id order: one pass over the leaves for
    every row a check looks up (crane's page: 46,000 cells, 6,000 leaves)."""
    rows: dict[tuple[str, int | None], list[int]] = {}
    for i in graph.param_leaves():
        meta = graph.nodes[i].meta
        rows.setdefault((meta.param, meta.position), []).append(i)
    return rows


def _gradient(derivation: Derivation, node: Deriv, row: _Row, block, head=None) -> Claim:
    """``∂L/∂X`` in a row: the gradient of row (id or row number) of the weight X (of the
    head the table names, when it has its own).

    Raises:
        DeriveError: for a derivative of anything but the loss L (``∂z/∂E``): derive's
            gradients are the loss's alone."""
    if node.num != Sym("L"):
        raise DeriveError(f"{quoted(mathread.show(node))} is not a derivative of the loss L "
                          "(derive's gradients are dL/dX)")
    den = node.den
    param = mathread.label(den).split("_{")[0].split("[")[0] if not isinstance(den, Sym) else \
        den.base + "".join("_" + mathread.show(c) for kind, c in den.scripts
                           if kind == "_" and not (isinstance(c, Sym) and c.base in FREE))
    refs = [Ref("grad", r.id) for r in _param_refs(derivation, param, row, block, head)]
    where = row.piece if row.piece is not None and len(refs) == 1 else _param_index(derivation, param, row)
    return Claim(f"dL/d{param}_{where}", refs=refs)


def _sinusoid_row(derivation: Derivation, position: int | None) -> list[Ref]:
    """The row of fixed sinusoidal positions (``PE[t, i]``) of a prompt position."""
    graph = derivation.graph
    ids = [i for i, n in enumerate(graph.nodes) if n.meta.symbol == "pe" and n.meta.position == position]
    if not ids:
        raise DeriveError(f"P has no row {position}")
    return [Ref("before", i) for i in sorted(ids, key=lambda i: graph.nodes[i].meta.index)]


def _formula(derivation: Derivation, node, row: _Row, block, head, header: str) -> Claim:
    """A header that is a formula over rows (``E_i - 1/10 ∂L/∂E_i``): its value per
    component, from the exact values of the names in it. ``u' W_1 + b_1`` names the MLP's
    hidden row, which derive labels ``u'_t W_1`` bias included."""
    rows: dict = {}
    if isinstance(node, Bin) and node.op == "+" and mathread.is_name(node.a) and _param_of(derivation, node.b) \
            and len({derivation.graph.nodes[i].meta.position for i in derivation.graph.param_leaves()
                     if derivation.graph.nodes[i].meta.param == _param_of(derivation, node.b)}) == 1:
        name = _label(_placed(node.a, row, "", len(derivation.case.ids)))
        return _found(derivation, name, block, head)

    def refs_of(name_node):
        if isinstance(name_node, Deriv):
            return _gradient(derivation, name_node, row, block, head).refs
        param = _param_of(derivation, name_node)
        if param is not None:
            return _param_refs(derivation, param, row, block, head)
        return find(derivation, _label(_placed(name_node, row, "", len(derivation.case.ids))), block, head)

    for name_node in mathread.names(node):
        rows[name_node] = [derivation.value(r) for r in refs_of(name_node)]
    sizes = {len(v) for v in rows.values()}
    if len(sizes) != 1:
        raise DeriveError(f"cannot evaluate the column {quoted(header)} row by row")
    (size,) = sizes
    values = []
    for c in range(size):
        try:
            values.append(mathread.evaluate(node, lambda n: rows[n][c], derivation.case.conventions.activation))
        except (ValueError, KeyError) as exc:
            raise DeriveError(f"cannot evaluate the column {quoted(header)}: {exc}") from None
    return Claim(mathread.show(node), values=values)
