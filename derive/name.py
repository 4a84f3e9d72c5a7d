"""Names as data: what the chapter calls each quantity, as fields (SymPy symbols on request).

A :class:`Name` carries the fields a reader reads in a name:

    symbol    the letter or word: ``x``, ``u``, ``mu``, ``sigma``, ``q``, ``s``, ``a``, ``o``,
              ``attn``, ``h``, ``g``, ``m``, ``y``, ``f``, ``z``, ``p``, ``L``, ``PE``; a
              weight's own name (``E``, ``W_Q``, ``b_1``, ``ln1_gain``); or one of the
              compound quantities of the chapter: ``qk`` (q_i . k_j), ``exp_s`` (e^{s_{i,j}}),
              ``sum_exp_s`` (sum_j e^{s_{i,j}}), ``exp_z``, ``sum_exp_z``, under a temperature
              T ``exp_z_over_T`` (e^(z_j/T)) and ``sum_exp_z_over_T``, ``hidden`` (u'_t W_1)
    primes    u' is u with one prime (x' likewise)
    position  the row t (1-based), or a free letter (``t``, ``i``); for PE[pos, col], the
              paper's pos (from the case's first position)
    index     the column c (1-based; PE's from 0), the key j of a score, a free letter, or
              a vocabulary :class:`Piece` (z_␣roof, p(␣roof))
    head      the head h of o_t^{(h)} (only where the name writes it)
    block     the block (context: never printed)
    norm      which norm a statistic (mu, sigma, rms) belongs to: None for the one before
              attention (mu_5; the graph's ``ln1``), ``ln2`` (mu'_5), ``final`` (mu^f_5)
    after     the value after the SGD step
    param     a trainable weight (its entries are written E_{2,1}, (W_Q)_{1,3})
    grad      dL/d(the quantity)

Two Names are equal when their fields are, never by their text. :func:`name_of` gives the Name of a
graph node's metadata; the printers are in :mod:`derive.printing`, the parser in
:mod:`derive.name_parser`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import NamedTuple

SPACE = "\u2423"  # the vocabulary's mark of a leading space
NORMS = ("ln1", "ln2", "final")
# The norm of a statistic (mu, sigma, rms) is written as a mark: none for the norm before
# attention (ln1, the Name's norm None), a prime for the one before the MLP, ^f for the final.
NORM_MARKS = {None: "", "ln2": "'", "final": "^f"}
PRIMED_LETTERS = ("u", "x")  # letters whose prime is a prime (u' = LN(h), x' = x + PE)
PAIR_INDEXED = ("s", "a", "exp_s")  # written s_{i,j}: the query row and the key column
PIECE_INDEXED = ("z", "exp_z", "exp_z_over_T", "p")  # indexed by a vocabulary piece
COMPOUND = ("qk", "exp_s", "sum_exp_s", "exp_z", "sum_exp_z", "exp_z_over_T", "sum_exp_z_over_T", "hidden")
# e^z_j and their sum under a temperature T other than 1: e^(z_j/T) and sum_j e^(z_j/T) (at T = 1,
# the same quantities; a hand e^z_j at T != 1 names e^(z_j/T))
OVER_T = {"exp_z": "exp_z_over_T", "sum_exp_z": "sum_exp_z_over_T"}
PRIMED = {"x2": "x", "u2": "u"}  # JSON symbols of the primed quantities (x' = x + PE, u')
# Symbols whose position the chapter does not write (the logits belong to the last row).
UNPOSITIONED = ("z", "exp_z", "exp_z_over_T", "p", "sum_exp_z", "sum_exp_z_over_T", "L")
# The characters of a vocabulary piece that ``\texttt{...}`` spells as commands, for
# pdflatex (T1) and KaTeX alike; < > | also keep a piece from reading as HTML or as a
# Markdown table's column separator.
TT_SPELLED = {"\\": r"\textbackslash{}", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}",
              "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
              **{ch: "\\" + ch for ch in "{}$&#_%"}}
# Characters of running text that pdflatex (T1, utf8) needs spelled out (the LaTeX chapter's
# prose and table cells, :func:`derive.render_latex.escape`; read back by
# :func:`derive.name_parser.texttt_piece`).
TEXT_ESCAPES = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "%": r"\%", "#": r"\#",
    "_": r"\_", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}", SPACE: r"\textvisiblespace{}",
    "\u2212": r"\textminus{}", "\u2026": r"\ldots{}", "\u00b7": r"\textperiodcentered\allowbreak{}",
    "\u00d7": r"\texttimes{}", "\u221e": r"\ensuremath{\infty}", "\u2248": r"\ensuremath{\approx}",
    "\u2264": r"\ensuremath{\le}", "\u2265": r"\ensuremath{\ge}", "\u2260": r"\ensuremath{\ne}",
    "\u2190": r"\ensuremath{\leftarrow}", "\u2192": r"\ensuremath{\to}", "\u03c3": r"\ensuremath{\sigma}",
    "\u03bc": r"\ensuremath{\mu}", "\u03b7": r"\ensuremath{\eta}", "\u03b8": r"\ensuremath{\theta}",
    "\u03b5": r"\ensuremath{\varepsilon}", "\u2202": r"\ensuremath{\partial}",
}


def code_span(piece: str) -> str:
    """A vocabulary piece as a code span, as Markdown and the terminal write it: fenced by a
    run of backticks longer than any run in it, and padded with a space each side when it
    starts or ends with a backtick (or with spaces), which CommonMark strips (spec 0.31,
    6.1 Code spans): ``the`` is `` `the` ``, ``a`b`` is ````` ``a`b`` `````, ```x``` is
    ``` `` `x` `` ```. :func:`code_span_piece` reads it back."""
    fence = "`" * (max(map(len, re.findall("`+", piece)), default=0) + 1)
    pad = " " if piece[:1] == "`" or piece[-1:] == "`" or piece[:1] == piece[-1:] == " " else ""
    return f"{fence}{pad}{piece}{pad}{fence}"


def cell_piece(text: str) -> str | None:
    """The vocabulary piece of a rule's table cell or header, which the rules write between
    two backticks (`` `␣cat` ``, and `` `a`b` `` for the piece a`b), or None for other text."""
    return text[1:-1] if len(text) > 1 and text.startswith("`") and text.endswith("`") else None


def code_span_piece(span: str) -> str:
    """The piece a code span holds (the inverse of :func:`code_span`): its fence taken off,
    and one space each side when both ends have one and it is not all spaces."""
    fence = len(span) - len(span.lstrip("`"))
    body = span[fence:len(span) - fence]
    return body[1:-1] if len(body) > 2 and body[0] == body[-1] == " " and body.strip() else body


def _fenced(n: int) -> str:
    """The regular expression of a code span fenced by ``n`` (2 or more) backticks: a run of
    exactly n opens and closes it; runs of other lengths are its characters."""
    runs = f"`{{1,{n - 1}}}|`{{{n + 1},}}"
    return f"`{{{n}}}(?!`)(?:[^`]|(?<!`)(?:{runs})(?!`))+?(?<!`)`{{{n}}}(?!`)"


# A code span of up to three backticks (a piece with a run of two inside, as GPT-2's ``),
# the longer fences first: `the`, ``a`b``
CODE_SPAN_PATTERN = "|".join([_fenced(3), _fenced(2), "`[^`]*`"])


def t1_char(ch: str) -> str:
    """A character as pdflatex (T1 fonts, utf8) can set it: as it is when T1 has a glyph
    for it (below U+0250, and the dashes and quotes), else ``[U+XXXX]`` (a combining
    accent, an emoji, a joiner); :func:`derive.name_parser.texttt_piece` reads it back."""
    return ch if ord(ch) < 0x250 or ch in "\u2013\u2014\u2018\u2019\u201c\u201d" else f"[U+{ord(ch):04X}]"


def texttt(piece: str, target: str = "latex") -> str:
    """A vocabulary piece as ``\\texttt{...}``: TeX's special characters spelled (see
    ``TT_SPELLED``) and the space mark ␣ as ``\\textvisiblespace{}`` (``target``
    "latex", where a character T1 has no glyph for is ``[U+XXXX]``, :func:`t1_char`) or
    ``{\\char"2423}`` (KaTeX, where every other character is written as it is)."""
    latex = target == "latex"
    space = r"\textvisiblespace{}" if latex else r'{\char"2423}'
    return r"\texttt{" + "".join(space if ch == SPACE else TT_SPELLED.get(ch) or (t1_char(ch) if latex else ch)
                                 for ch in piece) + "}"


class Piece(NamedTuple):
    """A vocabulary piece used as an index (``␣roof`` in z_␣roof)."""

    text: str

    def loose(self) -> "Piece":
        """The piece without its ``␣`` marks (``z_roof`` as a reader may write it)."""
        return Piece(self.text.replace(SPACE, ""))


Index = int | str | Piece | None  # an int, a free letter (j, t), a piece, or nothing


@dataclass(frozen=True)
class Fields:
    """The data of a :class:`Name` (see the module docstring)."""

    symbol: str
    primes: int = 0
    position: int | str | None = None
    index: Index = None
    head: int | None = None
    block: int | None = None
    norm: str | None = None
    after: bool = False
    param: bool = False
    grad: bool = False


class Name:
    """The name of one quantity (or of a row, with ``index`` None), as data.

    ``Name("s", position=5, index=3)`` is s_{5,3}; ``Name("mu", position=5, norm="ln2")``
    is mu'_5; ``Name("u", primes=1, position=5, index=2)`` is u'_5[2];
    ``Name("z", index=Piece("␣roof"))`` is z_␣roof; ``Name("E", param=True, position=2,
    index=1, grad=True)`` is dL/dE_{2,1}. ``str(name)`` (and ``name.name``) is its plain
    text; equality and hashing use the fields; :meth:`sympy` gives the SymPy symbol, for
    arithmetic (SymPy is imported only then).

    Raises:
        ValueError: for an unknown norm (ln1 is written as None: no mark), or a negative
            number of primes.
    """

    __slots__ = ("fields",)

    def __init__(self, symbol: str, **values):
        data = Fields(symbol, **values)
        if data.norm not in NORM_MARKS:
            raise ValueError(f"unknown norm {data.norm!r}; expected ln2, final or None (before attention)")
        if data.primes < 0:
            raise ValueError(f"{symbol}: the number of primes must be >= 0")
        self.fields = data

    def __eq__(self, other) -> bool:
        return type(other) is Name and self.fields == other.fields

    def __hash__(self) -> int:
        return hash(self.fields)

    def __str__(self) -> str:
        from .printing import text
        return text(self)

    def __repr__(self) -> str:
        # (the call that makes it: Name('mu', position=5, norm='ln2'))
        f, defaults = self.fields, Fields.__dataclass_fields__
        given = [f"{k}={getattr(f, k)!r}" for k in defaults if k != "symbol" and getattr(f, k) != defaults[k].default]
        return f"Name({', '.join([repr(f.symbol), *given])})"

    @property
    def name(self) -> str:
        """The plain text (``mu'_5``), as a SymPy symbol's name."""
        return str(self)

    def __reduce__(self):
        return (_named, (vars_of(self.fields),))

    def __getattr__(self, attr):
        # the fields read as attributes: name.position, name.head, ...
        if attr in Fields.__dataclass_fields__:
            return getattr(object.__getattribute__(self, "fields"), attr)
        raise AttributeError(attr)

    def sympy(self):
        """This name as a SymPy symbol (:class:`derive.symbolic.NameSymbol`): it keeps the
        fields, works in SymPy's arithmetic and prints in the chapter's notation."""
        from .symbolic import NameSymbol
        return NameSymbol(self)

    def but(self, **changes) -> "Name":
        """This name with some fields changed (``name.but(head=None)``)."""
        return Name(**{**vars_of(self.fields), **changes})

    def key(self, *, index: bool = True, loose: bool = False) -> "Name":
        """The fields a lookup compares: without the block and the head (the context of a
        file or a command chooses those), without the index when ``index`` is False (a
        row), and with pieces without their ``␣`` when ``loose``."""
        changes = dict(block=None, head=None)
        if not index:
            changes["index"] = None
        elif loose and isinstance(self.fields.index, Piece):
            changes["index"] = self.fields.index.loose()
        return self.but(**changes)


def _named(values: dict) -> Name:
    """A Name from its fields (unpickling)."""
    return Name(**values)


def vars_of(data: Fields) -> dict:
    """The fields of a :class:`Fields` as a dict."""
    return {f.name: getattr(data, f.name) for f in fields(Fields)}


def name_of(meta) -> Name | None:
    """The Name of a graph node from its metadata (:class:`derive.graph.Meta`), or None for
    a scratch value.

    The JSON symbol gives the letter and primes (``u2`` is u'); a statistic's ``norm``
    gives its mark (mu, mu', mu^f; ``ln1`` is no mark: None); a weight is its parameter's name with the
    entry (row, column). The fields a label does not write are left out (the position of
    a logit, the head of a score), except the block, kept as context. Until the rules build
    Names themselves, q, k and v carry their head only when their label writes it (heads
    given one by one, whose columns count within the head).
    """
    symbol = meta.symbol
    if symbol is None:
        return None
    if symbol == "param":
        return Name(meta.param, param=True, position=meta.position, index=meta.index, block=meta.block)
    if symbol == "pe":  # the paper's PE[pos, col] counts from 0 and from the case's first position:
        from .name_parser import parse_name  # read from the label until the rules build the Name
        return parse_name(meta.label).but(block=meta.block)
    letter = PRIMED.get(symbol, symbol)
    # o^(h) always; q, k, v (and q~, k~) of a head given on its own; a layer's net^(l), g^(l) (rules/layers.py)
    shows_head = symbol in ("o", "net") or (symbol in ("q", "k", "v", "g", "q_rot", "k_rot") and "^(" in meta.label)
    index = Piece(meta.index) if symbol in PIECE_INDEXED and meta.index is not None else meta.index
    return Name(letter, primes=1 if symbol in PRIMED else 0,
                position=None if symbol in UNPOSITIONED else meta.position,
                index=None if symbol in ("L", "sum_exp_s", "sum_exp_z", "sum_exp_z_over_T") else index,
                head=meta.head if shows_head else None, block=meta.block,
                norm=None if meta.norm == "ln1" else meta.norm)


def json_symbol(name: Name) -> str:
    """The graph's (and the JSON's) ``symbol`` of a quantity with this Name: the letter,
    ``u2``/``x2`` for a primed one, ``pe`` for PE, ``param`` for a weight."""
    f = name.fields
    return json_symbol_of(f.symbol, f.primes, f.param)


def json_symbol_of(symbol: str, primes: int = 0, param: bool = False) -> str:
    """:func:`json_symbol` of a Name with these fields, without building it."""
    if param:
        return "param"
    if primes:
        return f"{symbol}2"
    return "pe" if symbol == "PE" else symbol


def grad_of(name: Name) -> Name:
    """dL/d(name)."""
    return name.but(grad=True)


def after_step(name: Name) -> Name:
    """The name of the same weight after the SGD step."""
    return name.but(after=True)


__all__ = ["Name", "Piece", "Fields", "name_of", "json_symbol", "json_symbol_of", "grad_of", "after_step", "SPACE", "NORM_MARKS", "NORMS", "PRIMED_LETTERS",
           "PAIR_INDEXED", "PIECE_INDEXED", "COMPOUND"]
