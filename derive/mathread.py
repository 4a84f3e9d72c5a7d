"""Reading math as people and derive write it: one Lark grammar for plain text
(``1.732*-0.816``, ``e^{2.400}``, ``-ln(0.395)``, ``dL/dE_i``), Unicode (``μ₅``, ``√0.75``,
``1.732·(−0.816)``, ``≈``) and LaTeX (``\\frac``, ``\\sqrt``, ``\\ln``, ``\\cdot``, ``\\mu'_{5}``,
``\\partial L / \\partial E_{i}``, ``p(\\texttt{\\textvisiblespace{}roof})``, ``0.964^{\\mathrm{a}}``).

:func:`read` turns a formula into a :class:`Chain` of expressions joined by relations
(``=``, ``≈``, ``rounds to``); the expressions are small frozen data classes:

- :class:`Num`: a written number, kept as written (its places matter), with a trailing
  ``…`` (cut digits) or a footnote mark (``0.964^{a}``);
- :class:`Sym`: a name: a base (``u``, ``mu``, ``attn``, ``GELU``), primes, and its
  scripts in the order written (``_5``, ``^{(1)}``, ``[1]``, ``^{f}``, ``_\\texttt{␣roof}``);
- :class:`Piece`: a vocabulary piece (``␣roof``);
- :class:`Call`, :class:`Bin`, :class:`Neg`, :class:`Vec`, :class:`Deriv` (a derivative of the
  loss, ``dL/dE_i``, ``\\frac{\\partial L}{\\partial E_{i}}``: :func:`_division`).

:func:`label` writes a name in the plain notation :func:`derive.names.find` reads
(``mu'_5``, ``sigma^f_5``, ``o_3^(1)[1]``, ``e^s_{5,3}``, ``p(␣roof)``, ``q_5.k_1``).
:func:`evaluate` computes an expression exactly (an ``fmpq``) where it is rational and
as a certified ``arb`` ball otherwise, names resolved by a callback.

Grammar: Lark's LALR parser (https://lark-parser.readthedocs.io); shift/reduce conflicts
resolve as shift, so ``x_1[1]`` reads ``[1]`` as the index of ``x_1``.
"""

from __future__ import annotations

import re
from copy import copy
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Callable

from flint import arb, ctx, fmpq
from lark import Lark, Token, Transformer
from lark.exceptions import LarkError

from .errors import DeriveError
from .graph import GeluErf, GeluTanh
from .name import CODE_SPAN_PATTERN, code_span_piece
from .name_parser import TEXTTT_PATTERN, TT_ESCAPES, texttt_piece
from .printing import excerpt, quoted

# how tightly each operation binds, as the grammar reads it (show writes parentheses from it):
# -a·b is -(a·b), -a^b is -(a^b); "index" is X[5]
PRECEDENCE = {"+": 1, "-": 1, "*": 3, "/": 3, "jux": 3, ".": 3, "^": 5, "index": 6}
NEGATION = 2
ATOM = 9
PREC = 256  # bits for a transcendental step of a reader's arithmetic
MAX_PREC = 2048  # bits: past this a value on (or within 10^-600 of) a rounding boundary is not decided
# The bounds of a hand computation (each makes a hostile line end in milliseconds):
MAX_LENGTH = 20_000  # characters of one formula
MAX_DIGITS = 100  # a value of 10^MAX_DIGITS or more in magnitude is too large for a hand computation:
#                   powers, e^x and n! are sized from logarithms before they are computed
MAX_NUMBER = 200  # digits of one written number (before and after the point)
MAX_NUMBER_EXPONENT = 100  # |e| of a written number in e notation (1e-05 is fine, 0.9e-999999999 is not)
GREEK = ("alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "iota", "kappa",
         "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "phi", "varphi", "chi", "psi", "omega",
         "Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Phi", "Psi", "Omega")
UNICODE_GREEK = {"μ": "mu", "σ": "sigma", "η": "eta", "ε": "eps", "θ": "theta", "π": "pi", "α": "alpha",
                 "β": "beta", "γ": "gamma", "δ": "delta", "λ": "lambda", "τ": "tau"}
FUNCTIONS = {"exp", "ln", "log", "sqrt", "tanh", "erf", "sin", "cos", "GELU_tanh", "GELU_erf", "factorial", "Max"}
SPACE = "\u2423"

GRAMMAR = r"""
?start: chain
chain: expr (REL expr)*

?expr: sum
?sum: term
    | sum PLUS term        -> add
    | sum MINUS term       -> sub
?term: product
    | MINUS term           -> neg
    | PLUS term            -> pos
?product: bare
    | product TIMES factor -> mul
    | product SLASH factor -> div
    | product DOT factor   -> dot
    | product bare_nv      -> jux
?factor: bare
    | MINUS factor         -> neg
    | PLUS factor          -> pos
?bare: bare_nv
    | vector script*       -> postfix
?bare_nv: atom script*     -> postfix
    | FUNC fscript* bare_nv -> func
    | SQRT bare_nv         -> sqrt
    | FRAC brace brace     -> frac
    | PARTIAL bare_nv      -> differential
?atom: NUMBER              -> number
    | WORD                 -> word
    | TILDED               -> tilded
    | GREEK                -> greek
    | PIECE                -> piece
    | COMMAND              -> command
    | "(" items ")"        -> paren
    | brace
vector: "[" items "]"
brace: "{" items "}"
script: "_" sarg           -> subscript
    | "^" sarg             -> superscript
    | POWER sarg           -> power
    | PRIME                -> prime
    | "[" items "]"        -> index
    | ELLIPSIS             -> cut
    | BANG                 -> factorial
    | PERCENT              -> percent
?fscript: "_" sarg        -> subscript
    | "^" sarg             -> superscript
?sarg: NUMBER              -> number
    | MINUS sarg           -> neg
    | WORD                 -> word
    | GREEK                -> greek
    | PIECE                -> piece
    | "(" items ")"        -> paren
    | brace
items: (item (SEP item)*)?
?item: chain

REL.3: "=" | "\u2248" | "\\approx" | "\\to" | "\u2192" | /rounds\s+to(?![A-Za-z])/
PLUS: "+"
MINUS: "-" | "\u2212"
POWER.4: "**"
TIMES.3: "*" | "\\cdot" | "\u00b7" | "\u22c5" | "\u00d7" | "\\times"
SLASH: "/"
DOT: "."
SEP.3: "," | "|" | "\\mid" | ";"
PRIME: "'" | "\u2032"
BANG: "!"
PERCENT.3: "%" | "\\%"
ELLIPSIS.3: "\u2026" | "..." | /\\[lc]?dots(?![A-Za-z])(\{\})?/
NUMBER: /\d+(\.\d+)?((\\mathrm\{e\}\{[-+\u2212]?\d+\})|(e[-+\u2212]?\d+(?![A-Za-z])))?/
FUNC.3: /\\(exp|ln|log|tanh|erf|sin|cos|max)(?![A-Za-z])/
SQRT.3: /\\sqrt(?![A-Za-z])/ | "\u221a"
FRAC.3: /\\[dt]?frac(?![A-Za-z])/
PARTIAL.3: /\\partial(?![A-Za-z])/ | "\u2202"
GREEK.2: /\\(varepsilon|epsilon|lambda|varphi|Lambda|alpha|gamma|delta|theta|kappa|sigma|omega|Gamma|Delta|Theta|Sigma|Omega|beta|zeta|iota|eta|rho|tau|phi|chi|psi|Phi|Psi|mu|nu|xi|pi|Xi|Pi)(?![A-Za-z])/
PIECE.2: /""" + CODE_SPAN_PATTERN + r"""/ | /"[^"\n]*"/ | /<(\\text\{)?[A-Za-z]+\}?>/ | /(?<=_)\./ | /(?<=\()\.(?=\))/ | /(?<=_|\()\[[A-Z]{2,}\]/ | /(?<=_\{)\.(?=\})/ | /""" + TEXTTT_PATTERN + r"""/ | /\u2423[^\s()\[\]{},`$]*/
TILDED.3: /\\tilde\{\s*[A-Za-z]\s*\}/ | /[A-Za-z](~|\u0303)/
WORD.1: /(\\(mathrm|text|operatorname|mathit|mathbf|mathsf)\{\s*[A-Za-z0-9_\u2423]+\s*\})|log(2|10)(?=\s*\()|[A-Za-z]+|[\u03b1-\u03c9]/
COMMAND.0: /\\[A-Za-z]+/
SPACING.3: /\\[,;:! ]/ | /\\q?quad(?![A-Za-z])/ | /\\(left|right|big|Big|bigl|bigr|Bigl|Bigr)(?![A-Za-z])/ | "&" | /\\displaystyle(?![A-Za-z])/
%ignore SPACING
%ignore /\s+/
"""


# ----------------------------------------------------------------------------- the tree
@dataclass(frozen=True)
class Num:
    """A written number: ``text`` as written (ASCII minus), ``cut`` when a ``…`` follows
    (the digits are cut, not rounded), ``mark`` a footnote letter written after it."""

    text: str
    cut: bool = False
    mark: str | None = None


@dataclass(frozen=True)
class Piece:
    """A vocabulary piece, ``␣`` marking a leading space."""

    text: str


@dataclass(frozen=True)
class Sym:
    """A name: ``base`` (a letter, a word or a Greek name spelled out), ``primes``, and
    ``scripts``: (``"_"``, ``"^"`` or ``"[]"``, content) in the order written; the
    content of ``[]`` is a tuple of expressions."""

    base: str
    primes: int = 0
    scripts: tuple = ()


@dataclass(frozen=True)
class Call:
    """A function applied: ``exp``, ``ln``, ``log`` (base in ``base``), ``sqrt``, ``tanh``,
    ``erf``, ``GELU_tanh``, ``GELU_erf``, or a name applied to an argument (``p(␣roof)``)."""

    name: str
    args: tuple
    base: object = None


@dataclass(frozen=True)
class Bin:
    """``a op b`` with op one of ``+ - * / ^ jux .`` (``jux``: written side by side)."""

    op: str
    a: object
    b: object


@dataclass(frozen=True)
class Neg:
    """``-a``."""

    a: object


@dataclass(frozen=True)
class Vec:
    """``[a, b, c]`` (``|`` may separate parts: ``[o^{(1)} | o^{(2)}]``)."""

    items: tuple


@dataclass(frozen=True)
class Paren:
    """``(a)`` or ``(a, b)``: kept, since ``o_5^{(1)}`` names a head."""

    items: tuple


@dataclass(frozen=True)
class Deriv:
    """``∂L/∂X`` or ``dL/dX``: the derivative of ``num`` with respect to ``den``."""

    num: object
    den: object


@dataclass(frozen=True)
class Differential:
    """``∂X`` (``\\partial X``): the top or the bottom of a derivative, read only as one
    (``∂L/∂X``, ``\\frac{\\partial L}{\\partial X}``); left alone it is not math."""

    of: object


@dataclass(frozen=True)
class Other:
    """Something the grammar reads but derive cannot evaluate (``\\sum``, ``…``)."""

    text: str


@dataclass(frozen=True)
class Chain:
    """``e0 r1 e1 r2 e2 ...``: expressions joined by relations (``=``, ``≈``, ``rounds to``)."""

    exprs: tuple
    rels: tuple


# ----------------------------------------------------------------------------- parsing
class _Build(Transformer):
    """The parse tree as the data classes above."""

    def chain(self, children):
        exprs = tuple(c for c in children if not isinstance(c, Token))
        rels = tuple(_relation(str(c)) for c in children if isinstance(c, Token))
        return Chain(exprs, rels)

    def add(self, c):
        return Bin("+", c[0], c[2])

    def sub(self, c):
        return Bin("-", c[0], c[2])

    def mul(self, c):
        a, b = c[0], c[2]
        if isinstance(a, Bin) and a.op in ("*", "jux") and isinstance(a.b, Sym) and isinstance(b, Sym) \
                and "." in (_joined(Bin("*", a.b, b)) or ""):
            return Bin(a.op, a.a, Bin("*", a.b, b))  # \sqrt{2} q_4 \cdot k_1: the score's product q_4 . k_1 first
        return _scientific(a, b) or Bin("*", a, b)

    def div(self, c):
        return _division(c[0], c[2])

    def dot(self, c):
        if not (isinstance(c[0], Sym) and isinstance(c[2], Sym)):
            raise _NotMath("a point stands between two numbers or does not join two names (q_5.k_1)")
        return Bin(".", c[0], c[2])

    def jux(self, c):
        return _juxtaposed(c[0], c[1])

    def neg(self, c):
        return Neg(c[1])

    def pos(self, c):
        return c[1]

    def func(self, c):
        name = _command(c[0])
        scripts, arg = c[1:-1], c[-1]
        if name == "max":  # \max\left(0, x\right): a ReLU as SymPy's LaTeX printer writes it, SymPy's Max
            return Call("Max", arg.items if isinstance(arg, Paren) else (_unwrap(arg),))
        base = next((s[1] for s in scripts if s[0] == "_"), None)
        power = next((s[1] for s in scripts if s[0] == "^"), None)
        out = Call(name, (_unwrap(arg),), base)
        return Bin("^", out, power) if power is not None else out

    def sqrt(self, c):
        return Call("sqrt", (_unwrap(c[1]),))

    def frac(self, c):
        return _division(_unwrap(c[1]), _unwrap(c[2]), braced=True)

    def differential(self, c):
        """``∂X``: a side of a derivative (:func:`_division` pairs two into a :class:`Deriv`)."""
        return Differential(c[1])

    def postfix(self, c):
        out, power = c[0], False
        for script in c[1:]:
            if power and script[0] == "^":
                out = _raise_exponent(out, script[1])  # 10^10^10 is 10^(10^10), as in Python's **
                continue
            before = out
            out = _attach(out, script)
            power = script[0] == "^" and isinstance(out, Bin) and out.op == "^" and out is not before
        return out

    def number(self, c):
        text = str(c[0]).replace("\u2212", "-")
        if "\\mathrm{e}" in text:
            mantissa, exponent = text.split("\\mathrm{e}")
            text = f"{mantissa}e{exponent.strip('{}')}"
        return Num(text)

    def dots(self, c):
        return Other("\u2026")

    def word(self, c):
        text = str(c[0])
        if text.startswith("\\"):
            text = text[text.index("{") + 1:-1].strip()
        if text in ("log2", "log10"):  # (only before a parenthesis: the lexer's WORD)
            return Sym(text)
        if text.startswith(SPACE) or (len(text) > 1 and "_" not in text and not text.isalpha()):
            return Piece(text)
        return Sym(UNICODE_GREEK.get(text, text))

    def tilded(self, c):
        """q~, \\tilde{q} or q with a combining tilde: the letter marked ``~`` (a query or key
        turned by its position)."""
        letter = next(ch for ch in str(c[0]).removeprefix("\\tilde") if ch.isalpha())
        return Sym(letter + "~")

    def greek(self, c):
        name = str(c[0])[1:]
        if name in ("varepsilon", "epsilon"):
            name = "eps"
        if name not in GREEK and name != "eps":
            return Other("\\" + name)
        return Sym(name)

    def piece(self, c):
        text = str(c[0])
        if text.startswith('"'):  # p("␣roof"), p(" roof"): a quoted piece, its space a ␣
            body = text[1:-1]
            return Piece(SPACE + body[1:] if body.startswith(" ") else body)
        if text.startswith("\\texttt{"):
            return Piece(texttt_piece(text[len("\\texttt{"):-1]))
        body = code_span_piece(text) if text.startswith("`") else text
        body = body.replace("\\text{", "").replace("}>", ">") if body.startswith("<") else body
        return Piece(body.replace("\\textvisiblespace{}", SPACE).replace("\\_", "_"))

    def command(self, c):
        return Other(str(c[0]))

    def paren(self, c):
        return Paren(tuple(c[0]))

    def vector(self, c):
        return Vec(tuple(c[0]))

    def brace(self, c):
        items = tuple(c[0])
        return items[0] if len(items) == 1 else Paren(items)

    def items(self, c):
        return [_unwrap(x) for x in c if not isinstance(x, Token)]

    def subscript(self, c):
        return ("_", _unwrap(c[0]))

    def superscript(self, c):
        return ("^", _unwrap(c[0]))

    def power(self, c):  # x**2, as SymPy writes a power (derive's exact forms)
        return ("^", _unwrap(c[1]))

    def prime(self, c):
        return ("'", None)

    def index(self, c):
        return ("[]", tuple(c[0]))

    def cut(self, c):
        return ("\u2026", None)

    def factorial(self, c):
        return ("!", None)

    def percent(self, c):
        return ("%", None)


def _relation(text: str) -> str:
    if text in ("=", "\\to", "\u2192"):
        return "="
    if text in ("\u2248", "\\approx"):
        return "\u2248"
    return "rounds to"


def _command(token) -> str:
    name = str(token).lstrip("\\")
    return "ln" if name == "ln" else name


def _unwrap(node):
    """A one-item chain is its expression."""
    if isinstance(node, Chain) and not node.rels:
        return node.exprs[0]
    return node


def _division(a, b, braced: bool = False):
    """``a / b``, or ``\\frac{a}{b}`` (``braced``): a derivative when both sides are
    differentials (``∂L/∂E_i``, ``dL/dE_i``, ``\\frac{\\partial L}{\\partial E_i}``,
    ``\\frac{dL}{dE_i}``; :func:`_differential`), also after a factor (``0.1·dL/dE_i``);
    anything else a quotient."""
    if isinstance(a, Bin) and a.op in ("*", "jux") and isinstance(_division(a.b, b, braced), Deriv):
        return Bin(a.op, a.a, _division(a.b, b, braced))
    top = _differential(a, braced)
    bottom = _differential(b, braced, lower=top == Sym("L"))
    if top is not None and bottom is not None:
        return Deriv(top, bottom)
    return Bin("/", a, b)


def _differential(node, braced: bool, lower: bool = False):
    """What ``node`` is the differential of, as the top or bottom of a derivative, or
    None: ``∂X`` (any name X); ``dX`` written as one word, X an upper-case name (``dL``,
    ``dE_i``, ``dW_Q``) or with ``lower`` (under ``dL``) a lower-case one (``dL/dz``); in
    ``\\frac``'s braces also ``d X`` and ``\\mathrm{d} X``, the braces closing what the
    ``d`` applies to."""
    if isinstance(node, Differential):
        return node.of
    if isinstance(node, Sym) and len(node.base) >= 2 and node.base[0] == "d" and \
            (node.base[1].isupper() or lower and node.base[1].isalpha()):
        return Sym(node.base[1:], node.primes, node.scripts)
    if braced and isinstance(node, Bin) and node.op == "jux" and node.a == Sym("d") and isinstance(node.b, Sym):
        return node.b
    return None


def _juxtaposed(a, b):
    """``f(x)`` for a function name, ``p(␣roof)`` for a name applied to a piece, else a
    product written side by side."""
    if isinstance(b, Paren) or _function(a):
        # an application binds tighter than what stands before it: 3.395 / sqrt(2), -ln(0.395),
        # \ln p(␣roof)
        if isinstance(a, Bin) and a.op in ("*", "/", ".", "jux") and _applicable(a.b):
            return Bin(a.op, a.a, _juxtaposed(a.b, b))
        if isinstance(a, Neg) and _applicable(a.a):
            return Neg(_juxtaposed(a.a, b))
        if isinstance(a, Call) and a.name in FUNCTIONS and len(a.args) == 1 and _applicable(a.args[0]):
            return Call(a.name, (_juxtaposed(a.args[0], b),), a.base)
    if isinstance(a, Sym) and isinstance(b, Paren) and not a.primes:
        name = _plain_base(a)
        if a.base in ("log", "ln") and len(a.scripts) == 1 and a.scripts[0][0] == "_":
            return Call("log", b.items, a.scripts[0][1])  # log_2(0.245)
        if a.base in ("log2", "log10") and not a.scripts:
            return Call("log", b.items, Num(a.base[3:]))  # log2(0.245), as Python's math.log2 writes it
        if name == "max" or name.lower() == "relu":  # max(0, x), ReLU(x): SymPy's Max, as \max reads
            return Call("Max", b.items if name == "max" else (Num("0"),) + b.items)
        if name in FUNCTIONS or name.upper() == "GELU" or name == "LN":
            return Call(name, b.items)
        if len(b.items) == 1 and isinstance(b.items[0], Piece):
            return Call(label(a), b.items)
        item = b.items[0] if len(b.items) == 1 else None
        if a.base == "p" and not a.scripts and isinstance(item, Sym) and not item.scripts and not item.primes:
            return Call("p", (Piece(item.base),))  # p(\text{the}), p(a): a piece, one letter or more
    if _function(a) and not isinstance(b, Paren):
        return Call(_plain_base(a), (b,))
    weight = b.a if isinstance(b, Bin) and b.op == "^" else b  # (W_1[1], or W_1[1]**3)
    if isinstance(weight, Sym) and weight.base == "W":  # u'_1W_1[1], derive's label of (u'_1 W_1)[1]
        if isinstance(a, Bin) and a.op in ("*", "/") and isinstance(a.b, Sym) and a.b.base == "u":
            return Bin(a.op, a.a, _juxtaposed(a.b, b))  # 1/2*u'_1W_1[1]: the product's last factor is the label
        if isinstance(a, Sym) and a.base == "u" and weight is not b:
            return Bin("^", _juxtaposed(a, weight), b.b)  # u'_1W_1[1]**3: the label's power
    if isinstance(a, Bin) and a.op in ("*", "/") and _is_sum(a.b):
        return Bin(a.op, a.a, _juxtaposed(a.b, b))  # e^s_{5,1}/sum_j e^s_{5,j}: over the sum
    if isinstance(a, Bin) and a.op == "/" and a.a == Sym("dL") and a.b == Sym("d") and isinstance(b, Sym):
        return Deriv(Sym("L"), b)  # dL/d(W_Q)_{2,1}, derive's label of a weight entry's derivative
    if isinstance(a, Sym) and not a.scripts and not a.primes and a.base != "e" and isinstance(b, Num) \
            and b.text.isdigit() and not b.mark:
        return Sym(a.base, 0, (("_", b),))  # x5, u5: the plain writing of x_5
    return Bin("jux", a, b)


def _function(node) -> bool:
    return isinstance(node, Sym) and _plain_base(node) in FUNCTIONS


def _applicable(node) -> bool:
    """A name that an argument in parentheses right after it applies to (a function, or
    ``p`` of ``p(␣roof)``)."""
    return isinstance(node, Sym) and not node.primes and (
        _plain_base(node) in FUNCTIONS or node.base in FUNCTIONS or node.base.upper() == "GELU"
        or (len(node.base) == 1 and not node.scripts))


def _plain_base(sym: Sym) -> str:
    """``GELU_tanh`` for the name ``GELU`` with the subscript ``tanh``."""
    if sym.scripts and all(kind == "_" for kind, _ in sym.scripts) and len(sym.scripts) == 1 and \
            isinstance(sym.scripts[0][1], Sym) and not sym.scripts[0][1].scripts:
        return f"{sym.base}_{sym.scripts[0][1].base}"
    return sym.base


def _scientific(mantissa, power) -> Num | None:
    """A number written in scientific notation, a mantissa times ten to an integer
    (``9.28 × 10^-1``, ``39.5·10^{-2}``), as the number it writes in e-notation
    (``9.28e-1``, read at its places as ``0.928``: a rounded value, not an exact product);
    None for any other product (a cut mantissa, ``3.95… × 10^-1``, stays a product)."""
    if not (isinstance(mantissa, Num) and mantissa.mark is None and not mantissa.cut and "e" not in mantissa.text.lower()
            and isinstance(power, Bin) and power.op == "^" and power.a == Num("10")):
        return None
    exponent, sign = power.b, ""
    if isinstance(exponent, Paren) and len(exponent.items) == 1:  # 10^(-2)
        exponent = exponent.items[0]
    if isinstance(exponent, Neg):
        exponent, sign = exponent.a, "-"
    if not (isinstance(exponent, Num) and exponent.text.isdigit() and exponent.text.isascii()
            and not exponent.cut and exponent.mark is None):
        return None
    return Num(f"{mantissa.text}e{sign}{exponent.text}")


def _percent(text: str) -> str:
    """A percentage as the fraction it writes, with its places: ``39.5`` -> ``0.395``."""
    limit = number_limit(text)
    if limit is not None:
        raise _NotMath(limit)
    return format(Decimal(text).scaleb(-2), "f")


def _raise_exponent(power: Bin, exponent) -> Bin:
    """``a^b`` followed by ``^c``: ``a^(b^c)`` (powers group from the right)."""
    if isinstance(power.b, Bin) and power.b.op == "^":
        return Bin("^", power.a, _raise_exponent(power.b, exponent))
    return Bin("^", power.a, Bin("^", power.b, exponent))


def _attach(node, script):
    """One script written after ``node``: a footnote mark, cut digits, a power, a
    factorial or a part of a name."""
    kind, content = script
    if kind == "^" and isinstance(node, Sym) and node.base == "e" and not node.scripts and \
            isinstance(content, Paren) and len(content.items) == 1:
        content = content.items[0]  # e^{(z_{j})} is e^{z_j}: the parentheses of an exponent group, nothing more
    if kind == "^" and isinstance(node, Sym) and node.base == "e" and not node.scripts:
        content = _over_T(content)
    if kind == "!":
        return Call("factorial", (node,))
    if isinstance(node, Num) and kind == "%":
        return Num(_percent(node.text), node.cut, node.mark)  # 39.5% is 0.395, at 3 places
    if isinstance(node, Num):
        if kind == "\u2026":
            return Num(node.text, True, node.mark)
        if kind == "^" and isinstance(content, Sym) and len(content.base) <= 2 and content.base.isascii() \
                and content.base.isalpha() and content.base.islower() and not content.scripts and not content.primes:
            return Num(node.text, node.cut, content.base)  # 0.964^{a}, 0.963^{aa}: a footnote mark (27th on: aa, ab, ...)
        if kind == "^":
            return Bin("^", node, content)
        raise _NotMath(f"a number cannot carry {kind}")
    if isinstance(node, Paren) and len(node.items) == 1 and isinstance(node.items[0], Sym) and kind == "_":
        return _attach(node.items[0], script)  # (W_O)_{1,1}: an entry of the weight W_O
    if isinstance(node, Sym):
        if kind == "'":
            if node.scripts:  # u_5' is u'_5
                return Sym(node.base, node.primes + 1, node.scripts)
            return Sym(node.base, node.primes + 1, node.scripts)
        if kind == "^" and not _name_superscript(node, content):
            return Bin("^", node, content)
        if kind == "\u2026":
            raise _NotMath("a name cannot be cut")
        return Sym(node.base, node.primes, node.scripts + ((kind, content),))
    if isinstance(node, Other) and node.text == "\u2026" and kind == "\u2026":
        return node
    if kind == "^":
        return Bin("^", node, content)
    if kind == "_" and isinstance(node, (Sym, Paren)) or kind == "[]":
        return Bin("index", node, content)
    if kind == "_" and isinstance(node, Other):
        return node
    raise _NotMath(f"cannot attach {kind} here")


def _over_T(power):
    """An exponent of e read with a piece that ran on into ``/T``: ``z_␣roof/T`` (the lexer's
    ␣-piece runs to the next space or bracket) is z_␣roof over T, the softmax's term under a
    temperature as derive writes it, e^(z_␣roof/T); any other exponent as it is."""
    if not (isinstance(power, Sym) and power.base == "z" and power.scripts):
        return power
    kind, piece = power.scripts[-1]
    if kind != "_" or not isinstance(piece, Piece) or not piece.text.endswith("/T") or len(piece.text) < 3:
        return power
    return Bin("/", Sym("z", power.primes, power.scripts[:-1] + (("_", Piece(piece.text[:-2])),)), Sym("T"))


def _name_superscript(node: Sym, content) -> bool:
    """A superscript that is part of a name: a head ``^{(1)}``, a letter (``e^{s}``,
    ``mu^f``), ``T``; a number or an expression is a power (``x^{2}``, ``e^{2.400}``)."""
    if isinstance(content, Paren) and len(content.items) == 1 and isinstance(content.items[0], Num):
        return True
    if isinstance(content, Sym) and not content.scripts and content.base.isalpha() and len(content.base) == 1:
        return not (node.base == "e" and not node.scripts and content.base not in "sz")
    return False


class _NotMath(ValueError):
    """The text reads as words, not as a formula."""


class TooLong(DeriveError):
    """A formula longer than MAX_LENGTH characters: not read (its numbers may still be
    sized by :func:`number_limit`)."""


class TooDeep(DeriveError):
    """A formula that nests too deeply (brackets, signs or terms) for the grammar's tree walk."""


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(GRAMMAR, parser="lalr", lexer="contextual", maybe_placeholders=False)


SUBSCRIPTS = str.maketrans("₀₁₂₃₄₅₆₇₈₉₊₋₍₎", "0123456789+-()")
SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾ᶠ", "0123456789+-()f")


_SCRIPT_RUN = re.compile("[₀-₉₊₋₍₎]+|[⁰¹²³⁴-⁹⁺⁻⁽⁾ᶠ]+")


def _scripts(text: str) -> str:
    """Unicode sub- and superscripts (``μ₅``, ``o⁽¹⁾``) as ``_{5}`` and ``^{(1)}`` (each run of
    them one script)."""
    def script(run) -> str:
        sub = run.group(0)[0] in "₀₁₂₃₄₅₆₇₈₉₊₋₍₎"
        return ("_{" if sub else "^{") + run.group(0).translate(SUBSCRIPTS if sub else SUPERSCRIPTS) + "}"
    return _SCRIPT_RUN.sub(script, text)


def read(text: str) -> Chain:
    """The formula ``text`` as a :class:`Chain` (the tree is immutable: a formula read
    again, as in a file of repeated lines, comes from a cache).

    Raises:
        DeriveError: when the text is not a formula the grammar reads (the message says
            where); its subclass :class:`TooLong` when what the grammar would read of it
            (all but a plain value after its last relation, ``= [0.1, 0.2, ...]``, read at
            any length) is longer than MAX_LENGTH characters, :class:`TooDeep` when it nests
            too deeply to read.
    """
    chain = _read_or_error(text)
    if isinstance(chain, DeriveError):
        raise copy(chain)  # (a fresh exception each time: the one kept holds no traceback)
    return chain


@lru_cache(maxsize=1 << 16)
def _read_or_error(text: str) -> Chain | DeriveError:
    """:func:`_read`, or the error it raises, kept: a text that is no formula is tried again
    and again (a table's title, tried as a name for each of crane's 18,000 cells, took 1.4 s
    of checking crane's page to fail each time)."""
    try:
        return _read(text)
    except DeriveError as exc:
        exc.__traceback__ = exc.__context__ = exc.__cause__ = None
        return exc


# a written value the grammar would read as Num, Neg(Num) or a Vec of them (no e notation, marks
# or cut digits): read without the parser, as are formulas that end in one after a relation
_PLAIN_NUMBER = r"[-\u2212]?\d+(?:\.\d+)?"
_PLAIN_VALUE = re.compile(rf"\s*(?:({_PLAIN_NUMBER})|\[\s*({_PLAIN_NUMBER}(?:\s*,\s*{_PLAIN_NUMBER})*)\s*\])\s*")
_VALUE_TAIL = re.compile(rf"(=|\u2248|\\approx|\\to|\u2192|(?<!\S)rounds\s+to)({_PLAIN_VALUE.pattern})$")
# a piece written bare (␣roof) runs to the next space or bracket and may hold a relation
_LAST_RUN = re.compile(r"(?<![^\s()\[\]{},`$])[^\s()\[\]{},`$]*$")  # (tried where a run starts: linear)


def _plain_value(text: str):
    """The node of a plain written value (``0.395``, ``−0.5``, ``[0.1, -0.2]``), exactly as
    the grammar reads it, or None for anything else."""
    match = _PLAIN_VALUE.fullmatch(text)
    if match is None:
        return None
    def number(written: str):
        written = written.replace("\u2212", "-")
        return Neg(Num(written[1:])) if written.startswith("-") else Num(written)
    if match.group(1) is not None:
        return number(match.group(1))
    return Vec(tuple(number(n.strip()) for n in match.group(2).split(",")))


@lru_cache(maxsize=1 << 16)
def _read(text: str) -> Chain:
    value = _plain_value(text)  # (a plain value, or the one after a relation, is read at any length)
    if value is not None:
        return Chain((value,), ())
    tail = _VALUE_TAIL.search(text)
    if tail is not None and "\u2423" not in _LAST_RUN.search(text[:tail.start()]).group(0):
        # ``name = 0.395``: the name read (and remembered) apart from its value
        try:
            head = _formula(text[:tail.start()])
        except DeriveError:
            head = None  # (the whole formula gives the message)
        if head is not None:
            return Chain(head.exprs + (_plain_value(tail.group(2)),), head.rels + (_relation(tail.group(1)),))
    return _formula(text)


# TeX's \frac and its one-token arguments (\frac12 is \frac{1}{2}): a digit, a letter or a command
_FRAC_COMMAND = re.compile(r"\\[dt]?frac(?![A-Za-z])")
_TEX_ARGUMENT = re.compile(r"\s*(\{|\\[A-Za-z]+|[0-9A-Za-z])")
# LaTeX's thousands separator between digits: 1{,}000 (a group of three digits follows it; 1{,}5,
# a decimal comma, is not read)
_THOUSANDS = re.compile(r"(?<=\d)\{,\}(?=\d{3}(?!\d))")


def matching_braces(text: str) -> dict[int, int]:
    """The index of the ``}`` that closes each ``{`` of ``text`` (by index; an unclosed one
    is left out, a ``}`` with no ``{`` ignored), found in one pass."""
    closing, open_at = {}, []
    for k, ch in enumerate(text):
        if ch == "{":
            open_at.append(k)
        elif ch == "}" and open_at:
            closing[open_at.pop()] = k
    return closing


def _frac_arguments(text: str) -> str:
    """``text`` with each argument of ``\\frac`` (``\\dfrac``, ``\\tfrac``) that TeX reads as one
    token put in braces, as the grammar reads it: ``\\frac12`` -> ``\\frac{1}{2}``,
    ``\\frac1{2}``, ``\\frac{\\pi}2`` (TeX's rule for an undelimited argument: the next token,
    a character or a command, after spaces; so ``\\frac123`` is ``\\frac{1}{2}3``). Linear in
    the length: the braces are matched once."""
    if "frac" not in text:
        return text
    closing = matching_braces(text)
    inserts: list[tuple[int, str]] = []
    for command in _FRAC_COMMAND.finditer(text):
        k = command.end()
        for _ in range(2):
            token = _TEX_ARGUMENT.match(text, k)
            if token is None or token.group(1) == "{" and token.start(1) not in closing:
                break
            if token.group(1) == "{":
                k = closing[token.start(1)] + 1
            else:
                inserts += [(token.start(1), "{"), (token.end(1), "}")]
                k = token.end(1)
    if not inserts:
        return text
    out, done = [], 0
    for at, brace in sorted(inserts, key=lambda insert: insert[0]):  # (an inner \frac's come first)
        out += [text[done:at], brace]
        done = at
    return "".join(out) + text[done:]


@lru_cache(maxsize=1 << 16)
def _formula(text: str) -> Chain:
    """The formula read by the grammar (at most MAX_LENGTH characters); LaTeX's thousands
    separator (``1{,}000``) and one-token arguments of ``\\frac`` (:func:`_frac_arguments`)
    are read as TeX reads them."""
    if len(text) > MAX_LENGTH:
        raise TooLong(f"the formula is longer than {MAX_LENGTH} characters")
    for spelled, ch in TT_ESCAPES.items():  # the space mark as \\texttt spells it (the rest: texttt_piece)
        text = text.replace(spelled, ch)
    source = _scripts(_frac_arguments(_THOUSANDS.sub("", text)).replace('\\char"2423', SPACE).replace("\ufeff", ""))
    source = source.replace("\u221e", "\\infty ")  # ∞, as TeX writes it
    quick = _arithmetic(source)
    if quick is not None:
        return quick
    try:
        tree = _parser().parse(source)
        out = _Build().transform(tree)
    except LarkError as exc:
        where = getattr(exc, "column", None)
        cause = exc.orig_exc if hasattr(exc, "orig_exc") else exc
        if isinstance(cause, _NotMath):
            raise DeriveError(f"cannot read {quoted(text.strip())}: {cause}") from None
        at = f" at column {where}" if isinstance(where, int) and where > 0 else ""
        raise DeriveError(f"cannot read {quoted(text.strip())} as a formula{at}") from None
    except RecursionError:  # (150 nested brackets, a sum of 500 terms: the grammar's tree walk)
        raise TooDeep(f"cannot read {quoted(text.strip())}: it nests too deeply (brackets, signs or terms) "
                      "for derive to read") from None
    if ("\\partial" in source or "\u2202" in source) and _lone_differential(out):
        raise DeriveError(f"cannot read {quoted(text.strip())}: a \u2202 stands outside a derivative "
                          "(expected \u2202L/\u2202X or \\frac{\\partial L}{\\partial X})")
    return out if isinstance(out, Chain) else Chain((out,), ())


def _lone_differential(node) -> bool:
    """Whether a :class:`Differential` (``∂X``) stands anywhere in ``node`` but as a side of
    a derivative (walked without recursion: a formula may nest deeply)."""
    todo = [node]
    while todo:
        node = todo.pop()
        if isinstance(node, Differential):
            return True
        if not isinstance(node, Deriv):
            todo += _children(node)
    return False


# the tokens of :func:`_arithmetic`: a plain number (its digits cut when a … follows), a product
# or quotient sign, a sum's sign, a bracket, = or ≈
_ARITHMETIC_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?)(\u2026)?|(\\cdot|\\times|[*\u00b7\u22c5\u00d7/])"
                               r"|([-+\u2212])|([()])|(=|\u2248|\\approx))")
_ARITHMETIC_DEPTH = 200  # the deepest tree _arithmetic makes (a sum of 200 terms; deeper: the grammar, which
# reads about 400 levels and says "it nests too deeply" past them)


class _NotArithmetic(Exception):
    """The text is more than :func:`_arithmetic` reads: the grammar reads it."""


def _arithmetic(text: str) -> Chain | None:
    """The :class:`Chain` of a formula of plain numbers alone (``0.475 \\cdot 0.09375 -
    1.348 \\cdot (-0.234375) = 0.28…``: the sums of products of a by-hand note), exactly as
    the grammar reads it, or None for any other text (the grammar reads it: a name, a
    function, e notation, a footnote mark, a product written side by side, a bracket
    holding more than one sum, a tree deeper than :data:`_ARITHMETIC_DEPTH`).

    The grammar's rules, for these tokens: a chain of sums joined by = or ≈; a sum of
    terms, left to right; a term is a signed term (``-a b`` is ``-(a b)``) or a product
    of factors, left to right, its first factor unsigned and the others signed; a factor
    a number or a bracketed sum. A by-hand note on a wide page is a sum of 64 products:
    the grammar (Lark's LALR parser in Python) took 5.7 ms for each (crane: 2,680 of
    them, 15 s of a check of its page), this reading a tenth of that."""
    tokens, at = [], 0
    while at < len(text):
        match = _ARITHMETIC_TOKEN.match(text, at)
        if match is None:
            if text[at:].isspace():
                break
            return None
        number, cut, times, sign, bracket, relation = match.groups()
        if number is not None:
            tokens.append(("number", Num(number, cut is not None)))
        elif times is not None:
            tokens.append(("/" if times == "/" else "*", None))
        elif sign is not None:
            tokens.append(("+" if sign == "+" else "-", None))
        else:
            tokens.append((bracket or "rel", relation))
        at = match.end()
    if not tokens:
        return None
    tokens.append(("end", None))
    position = 0

    def kind() -> str:
        return tokens[position][0]

    def take():
        nonlocal position
        position += 1
        return tokens[position - 1]

    # each reading gives (the node, the depth of its tree), which stays within _ARITHMETIC_DEPTH
    def sum_():
        out, depth = term()
        while kind() in ("+", "-"):
            op = take()[0]
            right, right_depth = term()
            out, depth = Bin(op, out, right), deeper(max(depth, right_depth))
        return out, depth

    def signed(read):  # a sign, then what ``read`` reads (the grammar's neg and pos)
        negative = take()[0] == "-"
        out, depth = read()
        return (Neg(out), deeper(depth)) if negative else (out, depth)

    def term():
        if kind() in ("+", "-"):
            return signed(term)
        out, depth = bare()
        while kind() in ("*", "/"):
            op = take()[0]
            right, right_depth = factor()
            out = Bin("*", out, right) if op == "*" else _division(out, right)
            depth = deeper(max(depth, right_depth))
        if kind() in ("number", "("):  # written side by side: the grammar's rules for it
            raise _NotArithmetic
        return out, depth

    def factor():
        return signed(factor) if kind() in ("+", "-") else bare()

    def bare():
        if kind() == "number":
            return take()[1], 1
        if kind() != "(":
            raise _NotArithmetic
        take()
        inner, depth = sum_()
        if take()[0] != ")":
            raise _NotArithmetic
        return Paren((inner,)), deeper(depth)

    def deeper(depth: int) -> int:
        if depth >= _ARITHMETIC_DEPTH:
            raise _NotArithmetic
        return depth + 1

    try:
        exprs, rels = [sum_()[0]], []
        while kind() == "rel":
            rels.append(_relation(take()[1]))
            exprs.append(sum_()[0])
        if kind() != "end":
            raise _NotArithmetic
    except (_NotArithmetic, RecursionError):  # (5,000 brackets: the grammar says how deep is too deep)
        return None
    return Chain(tuple(exprs), tuple(rels))


# ----------------------------------------------------------------------------- names
def is_name(node) -> bool:
    """True for a name (``u_5``, ``p(␣roof)``, ``q_5 · k_1``, ``∂L/∂E_i``, ``L before``); a
    derivative is a name when it is the loss's (derive computes no other: ``∂z/∂E_i`` is not)."""
    if isinstance(node, Sym):
        return not _infinite(node)  # (inf: a number, if not one derive evaluates)
    if isinstance(node, Deriv):
        return node.num == Sym("L")
    if isinstance(node, Call):
        return node.name not in FUNCTIONS and len(node.args) == 1 and isinstance(node.args[0], Piece)
    if isinstance(node, Bin) and node.op in (".", "*", "jux"):
        return _joined(node) is not None or _sum_name(node)
    return _exp_name(node) or _indexed_row(node) is not None or _sum_name(node)


def _sum_name(node) -> bool:
    """``\\sum_{j} e^{z_{j}}`` (``\\sum_{j} e^{(z_{j})}``, ``\\sum_{j} e^{(z_{j}/T)}``): the name of
    a softmax's denominator, a sum of powers of e over names."""
    return isinstance(node, Bin) and node.op == "jux" and _is_sum(node.a) and isinstance(node.b, Bin) \
        and node.b.op == "^" and node.b.a == Sym("e") and bool(names(node.b.b))


def _is_sum(node) -> bool:
    """A sum sign: ``\\sum`` (its subscript dropped) or ``sum_j`` written as a word."""
    return node == Other("\\sum") or isinstance(node, Sym) and node.base == "sum" \
        and not node.primes and all(kind == "_" for kind, _ in node.scripts)


def _indexed_row(node) -> str | None:
    """The label of ``(u'_5 W_1)[3]`` (``u'_5W_1[3]``), as derive's LaTeX writes it, or None."""
    if not (isinstance(node, Bin) and node.op == "index" and isinstance(node.a, Paren) and len(node.a.items) == 1):
        return None
    inner = node.a.items[0]
    if not (isinstance(inner, Bin) and inner.op == "jux") or _joined(inner) is None:
        return None
    return _joined(inner) + "[" + ",".join(_script_text(c) for c in node.b) + "]"


def _exp_name(node) -> bool:
    """``e^{s_{5,3}}`` and ``e^{z_j}``: the names of e^s and e^z as derive's LaTeX writes them;
    ``e^{z_j/T}`` (``e^(z_j/T)``), the softmax's term under a temperature T."""
    if not (isinstance(node, Bin) and node.op == "^" and isinstance(node.a, Sym) and node.a.base == "e"
            and not node.a.scripts):
        return False
    power = node.b
    if isinstance(power, Bin) and power.op == "/" and power.b == Sym("T"):  # (z_j / T)
        return isinstance(power.a, Sym) and power.a.base == "z"
    return isinstance(power, Sym) and power.base in ("s", "z")


def _joined(node) -> str | None:
    """The label of ``q_5 · k_1`` (``q_5.k_1``) or ``u'_5 W_1`` (``u'_5W_1``), None for
    anything else."""
    if not (isinstance(node.a, Sym) and isinstance(node.b, Sym)):
        return None
    if (node.a.base, node.b.base) in (("q", "k"), ("q~", "k~")):
        if any(kind == "[]" for kind, _ in node.a.scripts + node.b.scripts):
            return None  # q_5[1]*k_2[1]: a product of two components, not the score q_5 . k_2
        return label(node.a) + "." + label(node.b)
    if node.op == "jux":
        return label(node.a) + label(node.b)
    return None


def label(node) -> str:
    """A name in the plain notation of derive's labels (see the module docstring).

    Raises:
        DeriveError: when ``node`` is not a name."""
    if isinstance(node, Sym):
        out = node.base + "'" * node.primes
        for kind, content in node.scripts:
            if kind == "[]":
                out += "[" + ",".join(_script_text(c) for c in content) + "]"
            elif isinstance(content, Paren) and kind == "^":
                out += "^(" + ",".join(_script_text(c) for c in content.items) + ")"
            else:
                body = _script_text(content)
                out += kind + (body if len(body) == 1 or isinstance(content, Piece) or body.isalnum()
                               else "{" + body + "}")
        return out
    if isinstance(node, Call) and is_name(node):
        return f"{node.name}({node.args[0].text})"
    if isinstance(node, Bin) and (joined := _joined(node)) is not None:
        return joined
    if isinstance(node, Deriv) and is_name(node):
        return f"dL/d{label(node.den)}"
    if _exp_name(node):
        return "e^" + (f"({label(node.b.a)}/T)" if isinstance(node.b, Bin) else label(node.b))
    if _indexed_row(node) is not None:
        return _indexed_row(node)
    if _sum_name(node):
        return "sum_j " + (label(node.b) if _exp_name(node.b) else f"e^({show(node.b.b)})")
    raise DeriveError(f"{show(node)} is not a name")


def _script_text(node) -> str:
    if isinstance(node, Num):
        return node.text
    if isinstance(node, Piece):
        return node.text
    if isinstance(node, Paren):
        return ",".join(_script_text(c) for c in node.items)
    if isinstance(node, Sym):
        return label(node)
    if isinstance(node, Bin) and node.op in ("+", "-"):
        return _script_text(node.a) + node.op + _script_text(node.b)
    return show(node)


def show(node) -> str:
    """An expression in the plain notation (for messages), as it was written: parentheses
    only where the reader wrote them (:class:`Paren`) or where the grouping needs them
    (``\\frac{1+2}{3}`` is ``(1 + 2) / 3``), never around a sum in a sum or a product in a
    product (``0.935 + 1.004 + 4.010``, ``1.732·-0.816 + -0.577·1.633``)."""
    if isinstance(node, Chain):
        out = show(node.exprs[0])
        for rel, e in zip(node.rels, node.exprs[1:]):
            out += f" {rel} {show(e)}"
        return out
    if isinstance(node, Num):
        return node.text + ("\u2026" if node.cut else "")
    if isinstance(node, Piece):
        return node.text
    if isinstance(node, Sym) or isinstance(node, Deriv) and is_name(node):
        return label(node)
    if isinstance(node, Deriv):
        return f"d{show(node.num)}/d{show(node.den)}"
    if isinstance(node, Call) and node.name == "factorial":
        return _operand(node.args[0], ATOM) + "!"
    if isinstance(node, Call):
        base = f"_{show(node.base)}" if node.base is not None else ""
        return f"{node.name}{base}(" + ", ".join(show(a) for a in node.args) + ")"
    if isinstance(node, Neg):
        return "-" + _operand(node.a, NEGATION + 1)
    if isinstance(node, Bin):
        if node.op == "index":
            return f"{show(node.a)}[{show(node.b)}]"
        op = {"jux": " ", ".": " . ", "*": "\u00b7", "^": "^"}.get(node.op, f" {node.op} ")
        level = PRECEDENCE[node.op]
        left, right = (level + 1, level) if node.op == "^" else (level, level + 1)  # a^b^c is a^(b^c)
        if level == PRECEDENCE["*"] and isinstance(node.a, Bin) and node.a.op == "/":
            left += 1  # (2 / 3)·4: the spaced slash would read 2 / (3·4)
        return _operand(node.a, left) + op + _right_operand(node.b, right)
    if isinstance(node, Vec):
        return "[" + ", ".join(show(i) for i in node.items) + "]"
    if isinstance(node, Paren):
        return "(" + ", ".join(show(i) for i in node.items) + ")"
    if isinstance(node, Other):
        return node.text
    return str(node)


def _operand(node, least: int) -> str:
    """``node`` shown as an operand that binds at least as tightly as ``least`` (see
    :data:`PRECEDENCE`), in parentheses when it binds more loosely."""
    text = show(node)
    return f"({text})" if _precedence(node) < least else text


def _right_operand(node, least: int) -> str:
    """:func:`_operand` on the right of an operator, where a minus sign groups what it
    negates: ``2 + -3``, ``1.732·-0.816``, ``2^-1`` (but ``e^(-2.4·2)``)."""
    if isinstance(node, Neg) and _precedence(node.a) >= max(least, NEGATION + 1):
        return "-" + show(node.a)
    return _operand(node, least)


def _precedence(node) -> int:
    """How tightly ``node`` binds as written: a binary operation's :data:`PRECEDENCE`, a
    negation's :data:`NEGATION`, anything else (a number, a name, a call, parentheses) an atom."""
    if isinstance(node, Bin):
        return PRECEDENCE.get(node.op, ATOM)
    return NEGATION if isinstance(node, Neg) else ATOM


def numbers(node) -> list[Num]:
    """Every written number in ``node``, in order."""
    if isinstance(node, Num):
        return [node]
    out = []
    for child in _children(node):
        out += numbers(child)
    return out


CONSTANTS = {"pi"}


def _constant(node) -> bool:
    return isinstance(node, Sym) and not node.scripts and not node.primes and node.base in CONSTANTS


def names(node) -> list:
    """Every name in ``node`` (outermost first); ``e`` of ``e^x`` and ``pi`` are constants."""
    if isinstance(node, Bin) and node.op == "^" and isinstance(node.a, Sym) and node.a.base == "e" \
            and not node.a.scripts:
        return names(node.b)
    if _constant(node) or _infinite(node):
        return []
    if is_name(node):
        return [node]
    out = []
    for child in _children(node):
        out += names(child)
    return out


def _children(node) -> tuple:
    if isinstance(node, Chain):
        return node.exprs
    if isinstance(node, (Vec, Paren)):
        return node.items
    if isinstance(node, Call):
        return node.args + ((node.base,) if node.base is not None else ())
    if isinstance(node, Bin):
        return (node.a, node.b)
    if isinstance(node, Neg):
        return (node.a,)
    if isinstance(node, (Deriv, Differential)):
        return (node.num, node.den) if isinstance(node, Deriv) else (node.of,)
    return ()


# ----------------------------------------------------------------------------- evaluation
class Beyond(ValueError):
    """A value outside the bounds of a hand computation (MAX_DIGITS, MAX_NUMBER,
    MAX_NUMBER_EXPONENT): derive does not evaluate it, and says so."""


class TooLarge(Beyond):
    """A value of 10^MAX_DIGITS or more in magnitude, found from logarithms without
    computing it; ``sign`` is +1 or -1, 0 when unknown."""

    def __init__(self, what: str, sign: int = 0):
        self.sign = sign
        super().__init__(f"{excerpt(what)} is larger than 10^{MAX_DIGITS} in magnitude, too large for a hand computation")


def number_limit(text: str) -> str | None:
    """Why a written number is beyond a hand computation (more than MAX_NUMBER digits, or an
    e-notation exponent beyond +-MAX_NUMBER_EXPONENT), or None when it is within bounds.
    Read from the text alone, so ``0.9e-999999999`` costs nothing."""
    if len(text) <= MAX_NUMBER and "e" not in text and "E" not in text:
        return None  # (the common case, asked for every written number: no digit to count)
    mantissa, _, exponent = text.replace("\u2212", "-").lower().partition("e")
    digits = sum(ch.isdigit() for ch in mantissa)
    if digits > MAX_NUMBER:
        return f"the number {text[:12]}... has {digits} digits (derive reads at most {MAX_NUMBER})"
    if exponent and (len(exponent.lstrip("+-")) > 6 or abs(int(exponent)) > MAX_NUMBER_EXPONENT):
        return (f"the number {text[:24]} has the exponent {exponent[:12]} (derive reads exponents from "
                f"-{MAX_NUMBER_EXPONENT} to {MAX_NUMBER_EXPONENT})")
    return None


def evaluate(node, resolve: Callable | None = None, gelu: str = "gelu_tanh", prec: int = PREC):
    """The value of an expression: an ``fmpq`` when it is rational, else an ``arb`` ball
    at ``prec`` bits. ``resolve(name_node)`` gives a name's value (fmpq or arb); ``GELU``
    without a form is ``gelu``. A nonzero part below 10^-MAX_DIGITS in magnitude (e^{-300})
    is a ball around 0 of that radius.

    Raises:
        TooLarge: the value is 10^MAX_DIGITS or more in magnitude (sized before computing:
            10^10^10, 99999999!, e^{100000});
        Beyond: a part is beyond a hand computation (see :func:`number_limit`, or a value
            above 10^MAX_DIGITS inside a sum);
        ValueError: when the value is undefined (a division by zero, ln of a number <= 0)
            or not a number derive evaluates; DeriveError from ``resolve``."""
    with ctx.workprec(prec):
        value = _eval(node, resolve, gelu)
        if _sign(value) and (abs(value) if isinstance(value, fmpq) else arb(value).abs_lower()) >= LARGE:
            raise TooLarge(show(node), _sign(value))
        return value


LARGE = fmpq(10) ** MAX_DIGITS
LN_LARGE = MAX_DIGITS * 2.302585092994046  # ln(10^MAX_DIGITS)


def _tiny() -> arb:
    """A nonzero value below 10^-MAX_DIGITS in magnitude: 0, within that radius."""
    return arb(0, fmpq(1, int(LARGE.p)))


def _sign(value) -> int:
    """+1, -1, or 0 when the value is 0 or its sign is not known."""
    if isinstance(value, fmpq):
        return (value > 0) - (value < 0)
    return 1 if value > 0 else -1 if value < 0 else 0


def _eval(node, resolve, gelu):
    if isinstance(node, Num):
        return _fmpq(node.text)
    if _constant(node):
        return arb.pi()
    if _infinite(node):
        raise ValueError("derive evaluates no infinity but in e^-inf, which is exactly 0")
    if is_name(node):
        if resolve is None:
            raise ValueError(f"{show(node)} is a name, not a number")
        if isinstance(node, Bin):  # u'_5 W_1[4] is one label; W_2_{1,1} g_1[1] is a product
            try:
                return resolve(node)
            except DeriveError:
                return _eval(node.a, resolve, gelu) * _eval(node.b, resolve, gelu)
        return resolve(node)
    if isinstance(node, Paren) and len(node.items) == 1:
        return _eval(node.items[0], resolve, gelu)
    if isinstance(node, Bin) and node.op == "jux" and node.a == Other("\\sum") and resolve is not None:
        # a softmax's denominator, sum_j e^{z_j} or sum_j e^{s_{5,j}}: the quantity of that name
        return resolve(Sym(f"sum_j {label(node.b)}", 0, ()))
    if isinstance(node, Neg):
        try:
            return -_eval(node.a, resolve, gelu)
        except TooLarge as big:
            raise TooLarge(show(node), -big.sign) from None
    if isinstance(node, Bin) and node.op == "^":
        return _power(node, resolve, gelu)
    if isinstance(node, Bin):
        a, b = _inner(node.a, resolve, gelu), _inner(node.b, resolve, gelu)
        if node.op == "+":
            return a + b
        if node.op == "-":
            return a - b
        if node.op in ("*", "jux", "."):
            return a * b
        if node.op == "/":
            if _is_zero(b):
                raise ValueError("it is undefined (a division by zero)")
            if isinstance(a, fmpq) and isinstance(b, fmpq):
                return a / b
            if arb(b).contains(0):
                raise Beyond(f"its divisor {show(node.b)} is too close to 0 to evaluate")
            return arb(a) / arb(b)
        raise ValueError(f"derive cannot evaluate {show(node)}")
    if isinstance(node, Call):
        return _call(node, resolve, gelu)
    raise ValueError(f"derive cannot evaluate {show(node)}")


def _inner(node, resolve, gelu):
    """An operand of a sum, product or quotient: a value too large for a hand computation
    there is not evaluated (its size alone does not give the result's)."""
    try:
        return _eval(node, resolve, gelu)
    except TooLarge as big:
        raise Beyond(str(big)) from None


def _fmpq(text: str) -> fmpq:
    limit = number_limit(text)
    if limit is not None:
        raise Beyond(limit)
    mantissa, _, exponent = text.lower().partition("e")
    negative = mantissa.startswith("-")
    whole, _, frac = mantissa.lstrip("-+").partition(".")
    value = fmpq(int(whole + frac or "0"), 10 ** len(frac))
    if exponent:
        e = int(exponent)
        value = value * fmpq(10) ** e if e >= 0 else value / fmpq(10) ** -e
    return -value if negative else value


def _is_zero(v) -> bool:
    return v == 0 if isinstance(v, fmpq) else bool(v.is_zero())


def _log10_size(base, exponent) -> arb:
    """log10 |base^exponent| (base nonzero), as a ball."""
    return arb(exponent) * arb(base).abs_lower().log() / arb(10).log() if not isinstance(base, fmpq) else \
        arb(exponent) * arb(abs(base)).log() / arb(10).log()


INFINITIES = ("inf", "infty", "infinity")  # an infinity's plain spellings (\\infty and ∞ are read as TeX's)


def _infinite(node) -> int:
    """+1 for an infinity (``inf``, ``\\infty``, ``∞``), -1 for minus one, 0 for any other node."""
    if isinstance(node, Neg):
        return -_infinite(node.a)
    if isinstance(node, Paren) and len(node.items) == 1:
        return _infinite(node.items[0])
    return int(node == Other("\\infty") or isinstance(node, Sym) and node.base in INFINITIES and not node.scripts
               and not node.primes)


def infinite_in(node) -> bool:
    """Whether an infinity stands anywhere in ``node`` (``e^{-\\infty}``: arithmetic
    without a number that still claims a value, e^-inf = 0)."""
    return bool(_infinite(node)) or any(infinite_in(child) for child in _children(node))


def _power(node: Bin, resolve, gelu):
    """``a^b``, sized from log10 |a^b| = b log10 |a| before it is computed; e^-inf is
    exactly 0 (a masked score's e^s)."""
    if isinstance(node.a, Sym) and node.a.base == "e" and not node.a.scripts:
        if _infinite(node.b) < 0:
            return fmpq(0)
        try:
            return _exp(_eval(node.b, resolve, gelu), node)
        except TooLarge as big:
            if big.sign > 0:
                raise TooLarge(show(node), 1) from None
            if big.sign < 0:
                return _tiny()
            raise Beyond(str(big)) from None
    try:
        base = _eval(node.a, resolve, gelu)
    except TooLarge as big:
        return _power_of_large(node, big, _inner(node.b, resolve, gelu))
    try:
        exponent = _eval(node.b, resolve, gelu)
    except TooLarge as big:
        return _large_power(node, base, big)
    if _is_zero(base):
        if _sign(exponent) > 0:
            return fmpq(0)
        if _is_zero(exponent):
            return fmpq(1)
        raise ValueError("it is undefined (a division by zero)")
    whole = isinstance(exponent, fmpq) and exponent.q == 1
    if not whole and not (arb(base) > 0):
        raise ValueError(f"{show(node)} is not a real number derive evaluates")
    size = _log10_size(base, exponent)
    if size > MAX_DIGITS:
        raise TooLarge(show(node), -1 if whole and _sign(base) < 0 and int(exponent.p) % 2 else 1)
    if size < -MAX_DIGITS:
        return _tiny()
    if whole:
        e = int(exponent.p)
        return base ** e if e >= 0 else 1 / (base ** -e)
    if isinstance(exponent, fmpq) and exponent == fmpq(1, 2):
        return _sqrt(base)
    return _exp(arb(exponent) * arb(base).log(), node)


def _power_of_large(node: Bin, big: TooLarge, exponent):
    """``a^b`` for an ``a`` of 10^MAX_DIGITS or more: large for b > 0, tiny for b < 0."""
    if _is_zero(exponent):
        return fmpq(1)
    if _sign(exponent) < 0:
        return _tiny()
    if _sign(exponent) > 0 and isinstance(exponent, fmpq) and exponent.q == 1:
        raise TooLarge(show(node), big.sign if int(exponent.p) % 2 else 1 if big.sign else 0)
    raise Beyond(str(big))


def _large_power(node: Bin, base, big: TooLarge):
    """``a^b`` for a ``b`` of 10^MAX_DIGITS or more in magnitude (10^10^10, 2^(2^(2^32)))."""
    if _is_zero(base):
        if big.sign > 0:
            return fmpq(0)
        raise ValueError("it is undefined (a division by zero)")
    if base == 1 if isinstance(base, fmpq) else False:
        return fmpq(1)
    if not (arb(base) > 0) or big.sign == 0:
        raise Beyond(str(big))
    above_one = arb(base) > 1
    if not above_one and not (arb(base) < 1):
        raise Beyond(str(big))
    if above_one == (big.sign > 0):
        raise TooLarge(show(node), 1)
    return _tiny()


def _exp(x, node=None):
    """e^x, sized first: above 10^MAX_DIGITS is too large, below 10^-MAX_DIGITS tiny."""
    if _is_zero(x):
        return fmpq(1)
    if arb(x) > LN_LARGE:
        raise TooLarge(show(node) if node is not None else "e^x", 1)
    if arb(x) < -LN_LARGE:
        return _tiny()
    return arb(x).exp()


def _sqrt(x):
    if isinstance(x, fmpq) and x >= 0:
        p, q = int(x.p), int(x.q)
        rp, rq = _isqrt(p), _isqrt(q)
        if rp is not None and rq is not None:
            return fmpq(rp, rq)
    if arb(x) < 0:
        raise ValueError("the square root of a negative number is not a real number")
    return arb(x).sqrt()


def _isqrt(n: int) -> int | None:
    from math import isqrt
    r = isqrt(n)
    return r if r * r == n else None


def _factorial(node: Call, x):
    """n! for a whole n >= 0, sized by log10 n! = lgamma(n + 1) / ln 10 first."""
    if not (isinstance(x, fmpq) and x.q == 1 and x >= 0):
        raise ValueError(f"{show(node)}: a factorial takes a whole number >= 0")
    if (arb(x) + 1).lgamma() / arb(10).log() > MAX_DIGITS:
        raise TooLarge(show(node), 1)
    from math import factorial
    return fmpq(factorial(int(x.p)))


def _max(values: list):
    """The largest of ``values`` (exact fractions or balls).

    Raises:
        ValueError: when two balls overlap, so that which is larger is not decided."""
    best = values[0]
    for value in values[1:]:
        if isinstance(best, fmpq) and isinstance(value, fmpq):
            best = max(best, value)
        elif arb(value) > arb(best):
            best = value
        elif not arb(value) <= arb(best):
            raise ValueError("Max of values too close to tell which is larger")
    return best


def _call(node: Call, resolve, gelu):
    name = node.name
    if name == "Max":  # Max(0, u'_1W_1[4]): a ReLU as SymPy writes it (derive run --exact)
        return _max([_inner(arg, resolve, gelu) for arg in node.args])
    if len(node.args) != 1:
        raise ValueError(f"{name} takes one argument")
    if name == "exp" and _infinite(node.args[0]) < 0:
        return fmpq(0)  # exp(-inf): e^-inf, exactly 0
    if name in ("exp", "factorial"):
        try:
            x = _eval(node.args[0], resolve, gelu)
        except TooLarge as big:
            if name == "exp" and big.sign < 0:
                return _tiny()
            if big.sign > 0:
                raise TooLarge(show(node), 1) from None
            raise Beyond(str(big)) from None
        return _exp(x, node) if name == "exp" else _factorial(node, x)
    x = _inner(node.args[0], resolve, gelu)
    if name in ("ln", "log"):
        if not (arb(x) > 0):
            raise ValueError(f"it is undefined ({name} of a number <= 0)")
        if isinstance(x, fmpq) and x == 1:
            return fmpq(0)
        value = arb(x).log()
        if node.base is not None:
            value = value / arb(_inner(node.base, resolve, gelu)).log()
        return value
    if name == "sqrt":
        return _sqrt(x)
    if _is_zero(x) and name in ("tanh", "erf", "sin", "GELU_tanh", "GELU_erf", "GELU"):
        return fmpq(0)
    if name == "cos" and _is_zero(x):
        return fmpq(1)
    ball = arb(x)
    if name == "tanh":
        return ball.tanh()
    if name == "erf":
        return ball.erf()
    if name == "sin":
        return ball.sin()
    if name == "cos":
        return ball.cos()
    if name.upper() == "GELU":
        name = "GELU_erf" if gelu == "gelu_erf" else "GELU_tanh"
    if name == "GELU_tanh":
        return GeluTanh().ball(ball)
    if name == "GELU_erf":
        return GeluErf().ball(ball)
    raise ValueError(f"derive cannot evaluate the function {name}")
