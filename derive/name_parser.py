"""Reading a name back: one grammar (Lark) for the plain, Unicode and LaTeX notations.

:func:`parse_name` reads what :mod:`derive.printing` writes, in any of its three
notations, and the looser ways a reader writes the same names: braces or none
(``a_{5,3}``, ``a_5,3``), a column as ``[c]`` or as a second subscript (``h_5[1]`` =
``h_{5,1}``), Greek letters spelled out, as Unicode or as TeX (``sigma``, ``σ``,
``\\sigma``), ``u2`` for u', a head as ``^(1)`` or ``^{(1)}``, the ``·`` or ``\\cdot``
of a score, a vocabulary piece bare, in ``\\texttt{...}`` or ``\\text{...}``, and a
gradient as ``dL/dE_{3,1}``, ``∂L/∂E_{3,1}`` or ``\\partial L / \\partial E_{3,1}``. It
returns a :class:`~derive.name.Name`: what is compared is its fields.
"""

from __future__ import annotations

import re
from functools import lru_cache

from lark import Lark, Transformer, v_args
from lark.exceptions import LarkError

from .name import PIECE_INDEXED, PRIMED_LETTERS, SPACE, TEXT_ESCAPES, TT_SPELLED, Name, Piece

# A vocabulary piece in ``\\texttt{...}``, as derive writes one (:func:`derive.name.texttt` in
# formulas, the LaTeX chapter's table cells): its characters, TeX's specials escaped (``\\%``,
# ``\\{``) or spelled as commands (``\\textbackslash{}``, ``\\textperiodcentered\\allowbreak{}``,
# ``\\ensuremath{\\infty}``), ``{\\char"2423}``, ``-{}-``.
# (each character read one way: a command is its whole run of letters, a backslash before a
# letter is one: \ab{} read as \a, b, {} or as \ab{} made an unclosed \texttt{ exponential)
TEXTTT_PATTERN = (r'\\texttt\{(?:\{\\char"[0-9A-Fa-f]+\}|\\ensuremath\{\\[A-Za-z]+\}|\\[A-Za-z]+(?![A-Za-z])|\{\}'
                  r'|\\[^A-Za-z\n]|[^{}\\])*\}')
# every spelling derive writes for a character, in formulas (TT_SPELLED) and in the chapter's
# text (TEXT_ESCAPES), and the space mark's two; the longest first, so that a spelling that
# starts another (``\\textperiodcentered`` of ``\\textperiodcentered\\allowbreak{}``) is read whole
TT_SPELLINGS = {spelled: ch for table in (TT_SPELLED, TEXT_ESCAPES) for ch, spelled in table.items()} | {
    r"\textvisiblespace{}": SPACE, r'{\char"2423}': SPACE, r"\textperiodcentered{}": "\u00b7"}
_TT_SPELLING = re.compile("|".join(map(re.escape, sorted(TT_SPELLINGS, key=len, reverse=True)))
                          + r'|\{\\char"([0-9A-Fa-f]+)\}|\\([A-Za-z]+)\{\}|\\(.)|-\{\}-|\[U\+([0-9A-F]{4,6})\]')


def texttt_piece(body: str) -> str:
    """The vocabulary piece that the body of a ``\\texttt{...}`` spells, read in one pass
    (the inverse of :func:`derive.name.texttt` and of the LaTeX chapter's escaping of a
    table cell, :data:`derive.name.TEXT_ESCAPES`): ``\\textbackslash{}n`` is ``\\n``,
    ``50\\%`` is ``50%``, ``\\{x\\}`` is ``{x}``, ``a\\textperiodcentered\\allowbreak{}b`` is
    ``a·b``, ``x\\textminus{}y`` is ``x−y``, ``\\textvisiblespace{}`` and ``{\\char"2423}`` are
    ``␣``, ``-{}-`` is ``--``, ``[U+65E5]`` (a character outside Latin-1) is that character.
    An unknown command is kept as written."""
    def one(match: re.Match) -> str:
        code, command, escaped, unicode = match.groups()
        if match.group() in TT_SPELLINGS:
            return TT_SPELLINGS[match.group()]
        if command is not None:
            return match.group()
        if code is not None or unicode is not None:
            return chr(int(code or unicode, 16))
        return escaped if escaped is not None else "--"
    return _TT_SPELLING.sub(one, body)


GRAMMAR = r"""
?start: quantity

?quantity: thing
         | thing AFTER                          -> after
         | DEE "L" "/" DEE thing                -> grad
         | "\\frac" "{" DEE "L" "}" "{" DEE thing "}"  -> grad

?thing: name
      | name DOT name                           -> dot
      | exp_name
      | SUM ("_" letter | "_" "{" letter "}")? exp_name  -> sum
      | "p" "(" piece ")"                       -> prob
      | "p" "\\left(" piece "\\right)"          -> prob
      | name WEIGHT1 index?                     -> hidden
      | "(" name WEIGHT1 ")" index?             -> hidden
      | "{" name "}" subscript                  -> entry
      | "(" name ")" subscript                  -> entry

exp_name: "e" "^" name
        | "e" "^" "{" name "}"
        | "e" "^" "(" name "/" "T" ")"          -> exp_over_t
        | "e" "^" "{" name "/" "T" "}"          -> exp_over_t

name: base primes mark? subscript* head? index? head?
    | base primes mark? head subscript+ index?  // a head written first: a^{(1)}_{5,3}
    | ZED "_" piece                             -> logit
    | ZED "_" "{" piece "}"                     -> logit

base: WORD | GREEK_TEX | GREEK_CHAR | UPRIGHT | TILDED
primes: PRIME*
mark: "^" "f" | "^" "{" "f" "}"
subscript: "_" (INT | LETTER)
         | "_" "{" items "}"
         | "_" INT ("," item)+
head: "^" "(" INT ")" | "^" "{" "(" INT ")" "}"
index: "[" items "]"
items: item ("," item)*
?item: INT | LETTER
letter: LETTER

piece: PIECE | TEXTTT | TEXT

DEE: "d" | "\u2202" | "\\partial"
DOT: "." | "\u00b7" | "\\cdot" | "*"
SUM: "sum" | "\u03a3" | "\u2211" | "\\sum"
WEIGHT1: /W_(1|\{1\})/
AFTER: /(\\ )?(\\text\{)?\(?after( the step)?\)?\}?/
ZED: "z"
WORD: /[A-Za-z]+[0-9]?(_(gain|bias))?/
TILDED: /\\tilde\{[qk]\}|[qk](~|\u0303)/
GREEK_TEX: /\\(mu|sigma|eta|theta|gamma|beta|epsilon|varepsilon|ell)(?![A-Za-z])/
GREEK_CHAR: /[\u03bc\u03c3\u03b7\u03b8\u03b3\u03b2\u03b5\u2113]/
UPRIGHT: /\\(mathrm|text|operatorname)\{[A-Za-z0-9\\_]+\}/
PRIME: "'" | "\u2032"
INT: /\d+/
LETTER: /[A-Za-z]/
PIECE: /[^\s{}\\]+/
TEXTTT: /""" + TEXTTT_PATTERN + r"""/
TEXT: /\\text\{[^{}]*\}/

%ignore /\s+/
%ignore /\\[ ,;!]/
"""

GREEK = {"\u03bc": "mu", "\u03c3": "sigma", "\u03b7": "eta", "\u03b8": "theta", "\u03b3": "gamma", "\u03b2": "beta",
         "\u03b5": "epsilon", "varepsilon": "epsilon", "\u2113": "ell",
         "l": "ell"}  # the plain notation writes the loss of one row l_t (printing.PLAIN)
TT_ESCAPES = {r"\textvisiblespace{}": SPACE, r'{\char"2423}': SPACE}  # the space mark, read anywhere
LEGACY_PRIMED = {"u2": "u", "x2": "x"}  # the JSON symbols of u' and x'


class NotAName(ValueError):
    """Text that is not a name in any of the three notations."""


@v_args(inline=True)
class _ToName(Transformer):
    """The parse tree to a :class:`Name`: the chapter's conventions decide the fields
    (a weight's first subscript is part of its name, a statistic's mark is its norm)."""

    def base(self, token):
        text = str(token)
        if token.type == "TILDED":  # q~: a query or key turned by its position (rotary)
            return ("q" if "q" in text else "k") + "_rot"
        if text.startswith("\\"):
            inner = re.match(r"\\(?:mathrm|text|operatorname)\{(.*)\}$", text)
            text = inner.group(1).replace("\\_", "_") if inner else text[1:]
        return GREEK.get(text, text)

    def primes(self, *marks):
        return len(marks)

    def mark(self):
        return "f"

    def subscript(self, *parts):
        items = []
        for p in parts:
            items += p if isinstance(p, list) else [p]
        return ("sub", [_item(i) for i in items])

    def items(self, *parts):
        return list(parts)

    def head(self, number):
        return ("head", int(number))

    def index(self, items):
        return ("index", [_item(i) for i in items])

    def letter(self, token):
        return str(token)

    def piece(self, token):
        text = str(token)
        if text.startswith("\\texttt{"):
            return Piece(texttt_piece(text[len("\\texttt{"):-1]))
        if text.startswith("\\text{"):
            return Piece(text[len("\\text{"):-1])
        return Piece(text)

    def name(self, symbol, primes, *rest):
        mark = None
        if rest and rest[0] == "f":
            mark, rest = "f", rest[1:]
        subs, head, index = [], None, None
        for kind, value in rest:
            if kind == "sub":
                subs += value
            elif kind == "head":
                head = value
            else:
                index = value
        return _build(symbol, primes, mark, subs, head, index)

    def logit(self, _z, piece):
        return Name("z", index=piece)

    def exp_name(self, inner):
        if inner.fields.symbol not in ("s", "z"):
            raise NotAName(f"e^{inner} is not a quantity of the chapter (e^s or e^z)")
        return inner.but(symbol="exp_" + inner.fields.symbol)

    def exp_over_t(self, inner):
        if inner.fields.symbol != "z":
            raise NotAName(f"e^({inner}/T) is not a quantity of the chapter (e^(z_j/T), the softmax's term under "
                           "a temperature T)")
        return inner.but(symbol="exp_z_over_T")

    def dot(self, left, _dot, right):
        pair = (left.fields.symbol, right.fields.symbol)
        if pair not in (("q", "k"), ("q_rot", "k_rot")):
            raise NotAName("a dot product names a score only as q_i . k_j (or q~_i . k~_j)")
        return Name("qk" if pair == ("q", "k") else "qk_rot", position=left.fields.position, index=right.fields.position,
                    head=left.fields.head or right.fields.head)

    def sum(self, _sum, *rest):
        inner = rest[-1]
        symbol = "sum_" + inner.fields.symbol
        position = inner.fields.position if symbol == "sum_exp_s" else None
        return Name(symbol, position=position, head=inner.fields.head)

    def prob(self, piece):
        return Name("p", index=piece)

    def hidden(self, row, _weight, index=None):
        column = index[1][0] if index is not None else None
        return Name("hidden", position=row.fields.position, index=column)

    def entry(self, matrix, subscript):
        values = subscript[1]
        if not matrix.fields.param or matrix.fields.position is not None or len(values) not in (1, 2):
            raise NotAName(f"({matrix})_{{...}} names a row or an entry of a weight: one or two subscripts")
        return matrix.but(position=values[0], index=values[1] if len(values) == 2 else None)

    def after(self, thing, _words):
        return thing.but(after=True)

    def grad(self, _d1, _d2, thing):
        return thing.but(grad=True)


def _item(token):
    text = str(token)
    return int(text) if text.isdigit() else text


def _build(symbol: str, primes: int, mark: str | None, subs: list, head: int | None, index: list | None) -> Name:
    """The Name of a simple name (a letter, its marks, its subscripts and index)."""
    if symbol in LEGACY_PRIMED:
        symbol, primes = LEGACY_PRIMED[symbol], primes + 1
    if symbol in ("W", "b") and subs and isinstance(subs[0], (int, str)) and len(subs) >= 1:
        symbol, subs = f"{symbol}_{subs[0]}", subs[1:]  # W_Q, W_1, b_O: the weight's own name
    numbers = subs + (index or [])
    if len(numbers) > 2:
        raise NotAName(f"{symbol} has more than two subscripts and indices")
    position, column = (numbers + [None, None])[:2]
    values = dict(head=head)
    if (primes and symbol not in PRIMED_LETTERS) or mark:  # a statistic: mu'_5, sigma^f_5, rms'_5
        if primes > 1 or (primes and mark):
            raise NotAName(f"{symbol}: a statistic is {symbol}, {symbol}' or {symbol}^f")
        return Name(symbol, position=position, index=column, norm="final" if mark else "ln2", **values)
    if symbol in ("E", "P") or symbol.startswith(("W_", "b_", "ln1_", "ln2_", "lnf_")):
        return Name(symbol, param=True, position=position, index=column, **values)
    if symbol in PIECE_INDEXED and position is not None:  # z_a: a one-letter piece
        return Name(symbol, index=Piece(str(position)), **values)
    return Name(symbol, primes=primes, position=position, index=column, **values)


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(GRAMMAR, parser="earley", lexer="dynamic_complete", ambiguity="resolve")


@lru_cache(maxsize=4096)
def parse_name(text: str) -> Name:
    """The Name written as ``text`` in the plain, Unicode or LaTeX notation.

    Raises:
        ValueError: when ``text`` is not a name (the message says what was expected).
    """
    try:
        tree = _parser().parse(text.strip())
        return _ToName().transform(tree)
    except NotAName:
        raise
    except LarkError as exc:
        if isinstance(getattr(exc, "orig_exc", None), NotAName):
            raise exc.orig_exc from None
        raise NotAName(f"{text!r} is not a name: expected one such as z_roof, a_{{5,3}}, h_5[1], "
                         f"mu'_5, o_3^(1)[1], p(␣roof), dL/dE_{{2,1}}") from None


__all__ = ["parse_name", "GRAMMAR"]
