"""One printer for names and formulas, in three notations: plain text, Unicode, LaTeX.

Printers of a :class:`~derive.name.Name` and the ordered formula nodes of
:mod:`derive.formula`, dispatched on the class name along its MRO as SymPy's printers are
(``_print_Name``, ``_print_Terms``...), with no SymPy: a SymPy expression handed to them
(an exact form) is printed by SymPy's own ``sstr`` or ``latex``, imported then.

============  ==================  =====================  ==================================
quantity      plain (the labels)  Unicode                LaTeX
============  ==================  =====================  ==================================
u'_5[2]       ``u'_5[2]``         ``u′_5[2]``            ``u'_{5}[2]``
mu'_5         ``mu'_5``           ``μ′_5``               ``\\mu'_{5}``
mu^f_5        ``mu^f_5``          ``μ^f_5``              ``\\mu^{f}_{5}``
s_{5,3}       ``s_{5,3}``         ``s_{5,3}``            ``s_{5,3}``
q_5 . k_1     ``q_5.k_1``         ``q_5·k_1``            ``q_{5} \\cdot k_{1}``
e^{s_{5,3}}   ``e^s_{5,3}``       ``e^s_{5,3}``          ``e^{s_{5,3}}``
o_3^{(1)}[1]  ``o_3^(1)[1]``      ``o_3^(1)[1]``         ``o_{3}^{(1)}[1]``
z_␣roof       ``z_␣roof``         ``z_␣roof``            ``z_{\\texttt{\\textvisiblespace{}roof}}``
dL/dE_{3,1}   ``dL/dE_{3,1}``     ``∂L/∂E_{3,1}``        ``\\partial L / \\partial E_{3,1}``
============  ==================  =====================  ==================================

and formulas in the order the reader writes them: ``1.732·(-0.816) - 0.577·1.633``
(LaTeX ``1.732 \\cdot (-0.816) - 0.577 \\cdot 1.633``), ``3.395 / sqrt(2)``
(``3.395 / \\sqrt{2}``), ``e^2.400`` (``e^{2.400}``), ``ln(0.395)`` (``\\ln 0.395``): never
``+ -``, a negative term is a subtraction and a negative factor is parenthesised.

:func:`text`, :func:`unicode` and :func:`latex` print one expression; a note is *rich
text*, a list of prose strings and expressions (:func:`plain_text` joins it for a
terminal). The LaTeX has two dialects, which differ only in how a vocabulary piece is
spelled: ``latex`` (pdflatex, T1 fonts: ``\\textvisiblespace``) and ``katex``
(``\\char"2423``).
"""

from __future__ import annotations

import re
from functools import lru_cache

from .formula import (HALF, MINUS, Chain, Dec, Group, Iverson, Neg, Over, Pow, Rat, Terms, Times,
                      is_negative, negated)
from .name import PAIR_INDEXED, SPACE, Fields, Name, Piece, texttt

TARGETS = ("latex", "katex")
GREEK = {"mu": "\u03bc", "sigma": "\u03c3", "eta": "\u03b7", "theta": "\u03b8", "gamma": "\u03b3",
         "beta": "\u03b2", "epsilon": "\u03b5", "ell": "\u2113"}
PLAIN = {"ell": "l"}  # the plain notation's ASCII letter, as the loss table's header l_t and its words
OWN_SUBSCRIPT = re.compile(r"[A-Za-z]_")  # a weight named with a subscript: W_Q, W_1, b_O
UPRIGHT = ("attn", "PE")  # words printed upright in LaTeX
TILDED = {"q_rot": "q", "k_rot": "k"}  # a query or key turned by its position: q~ (RoFormer's R q)
# precedence of the formula nodes (higher binds tighter)
CHAIN, SUM, PRODUCT, POWER, ATOM = 0, 10, 20, 30, 100


def precedence_of(expr) -> int:
    """How tightly ``expr`` binds, to decide parentheses: a sum, a product, a power or an atom."""
    if isinstance(expr, Chain):
        return CHAIN
    if isinstance(expr, (Terms, Neg)):
        return SUM
    if isinstance(expr, (Times, Over)):
        return PRODUCT
    if isinstance(expr, Name):
        symbol = expr.fields.symbol
        if expr.fields.after:
            return SUM
        return {"sum_exp_s": SUM, "sum_exp_z": SUM, "sum_exp_z_over_T": SUM, "qk": PRODUCT,
                "qk_rot": PRODUCT}.get(symbol, ATOM)
    if type(expr) is Pow and expr.args[1] != HALF:
        return POWER
    return ATOM


class _Formulas:
    """The formula nodes and names, printed the same way in every notation; the notation's
    own signs come from the class attributes and the ``_name_*`` hooks."""

    times = "\u00b7"
    minus = "-"
    open, close = "(", ")"
    fraction_precedence = SUM  # 1/4 as a factor: (1/4)·x in text, \frac{1}{4} \cdot x in LaTeX
    _methods: dict = {}  # expression class -> print method, one dict per printer class

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._methods = {}

    def doprint(self, expr) -> str:
        """``expr`` printed in this notation."""
        return self._print(expr)

    def _print(self, expr) -> str:
        """The print method for the expression's class: the first ``_print_<name>`` along
        its MRO (SymPy's rule), found once per class (crane's 3,715 notes print 350,000
        nodes); :meth:`_print_other` for a class with none."""
        cls = type(expr)
        if cls is Dec:  # the most common node (a printed number): no dispatch, nothing under it
            return self._print_Dec(expr)
        method = self._methods.get(cls)
        if method is None:
            method = next((m for m in (getattr(type(self), "_print_" + base.__name__, None) for base in cls.__mro__)
                           if m is not None), type(self)._print_other)
            self._methods[cls] = method
        return method(self, expr)

    def _print_str(self, expr: str) -> str:
        return expr

    def _print_other(self, expr) -> str:
        """A SymPy expression (an exact form), printed by :func:`sstr`."""
        return sstr(expr)

    # ------------------------------------------------------------------ numbers
    def _print_Dec(self, expr: Dec) -> str:
        return self._number(expr.text) + (self._ellipsis if expr.cut else "")

    def _number(self, text: str) -> str:
        return text

    def _paren(self, text: str) -> str:
        return f"{self.open}{text}{self.close}"

    def _precedence(self, expr) -> int:
        if type(expr) is Rat and expr.q != 1:
            return self.fraction_precedence
        return precedence_of(expr)

    def _wrap(self, expr, level: int, negative_too: bool = False) -> str:
        """``expr`` printed, in parentheses when it binds less tightly than ``level`` (or,
        with ``negative_too``, when it starts with a minus sign)."""
        text = self._print(expr)
        if self._precedence(expr) < level or (negative_too and is_negative(expr)):
            return self._paren(text)
        return text

    # ------------------------------------------------------------------ formula nodes
    def _print_Terms(self, expr: Terms) -> str:
        out = []
        for i, term in enumerate(expr.args):
            cls = type(term)
            if cls is Dec or (cls is Times and type(term.args[0]) is Dec):
                # a number or a product led by one (a reader's dot product: 0.453·0.453125 -
                # 0.516·(-0.171875)): never in parentheses; a negative one after the first
                # term is a subtraction of its digits, printed without building the negated term
                dec = term if cls is Dec else term.args[0]
                if i and dec.negative:
                    out.append(f" {self.minus} " + (self._unsigned(dec) if cls is Dec
                                                      else self._print_Times(term, unsigned=True)))
                else:
                    out.append((" + " if i else "") + self._print(term))
            elif i and is_negative(term):
                out.append(f" {self.minus} " + self._wrap(negated(term), SUM + 1, negative_too=True))
            else:
                out.append((" + " if i else "") + self._wrap(term, SUM + 1))
        return "".join(out)

    def _unsigned(self, dec: Dec) -> str:
        """A negative printed number without its minus sign (``dec.negated()`` printed)."""
        return self._number(dec.text[1:]) + (self._ellipsis if dec.cut else "")

    def _print_Neg(self, expr: Neg) -> str:
        return self.minus + self._wrap(expr.args[0], PRODUCT, negative_too=True)

    def _print_Times(self, expr: Times, unsigned: bool = False) -> str:
        """``a · b``; with ``unsigned``, the product of a negative number and the rest
        written without its minus sign (its :func:`~derive.formula.negated` printed)."""
        parts = []
        for i, f in enumerate(expr.args):
            if type(f) is Dec:  # an atom: parenthesised only when negative after the first factor
                if i:
                    parts.append(self._paren(self._print_Dec(f)) if f.negative else self._print_Dec(f))
                else:
                    parts.append(self._unsigned(f) if unsigned else self._print_Dec(f))
            else:
                parts.append(self._wrap(negated(f) if unsigned and not i else f, PRODUCT + 1 if i else PRODUCT,
                                        negative_too=i > 0))
        return self.times.join(parts)

    def _print_Over(self, expr: Over) -> str:
        top, bottom = expr.args
        return f"{self._wrap(top, PRODUCT)} / {self._wrap(bottom, POWER, negative_too=True)}"

    def _print_Group(self, expr: Group) -> str:
        return self._paren(self._print(expr.args[0]))

    def _print_Chain(self, expr: Chain) -> str:
        return " = ".join(self._print(a) for a in expr.args)

    def _print_Iverson(self, expr: Iverson) -> str:
        index, *values = expr.args
        return f"[{self._argmax}({', '.join(self._print(v) for v in values)}) = {self._print(index)}]"

    def _print_Function(self, expr) -> str:
        return expr.name + self._paren(", ".join(self._print(a) for a in expr.args))

    def _print_GeluTanh(self, expr) -> str:
        return self._gelu("tanh") + self._paren(self._print(expr.args[0]))

    def _print_GeluErf(self, expr) -> str:
        return self._gelu("erf") + self._paren(self._print(expr.args[0]))

    # ------------------------------------------------------------------ names
    def _print_Name(self, name: Name) -> str:
        f = name.fields
        if f.grad:
            return self._grad(self._print(name.but(grad=False)))
        if f.after:
            return self._after(self._print(name.but(after=False)))
        if f.param:
            return self._param(name)
        return self._print_fields(f)

    def _print_fields(self, f: Fields) -> str:
        """:meth:`_print_Name` of a quantity's own name (no weight, no gradient, no
        "after the step"), from its fields: a named array's entry is labelled without
        building its Name (:func:`label_of`)."""
        symbol = f.symbol
        if symbol in ("qk", "qk_rot"):  # q_i . k_j, or q~_i . k~_j with rotary positions
            q, k = ("q_rot", "k_rot") if symbol == "qk_rot" else ("q", "k")
            return (self._print(Name(q, position=f.position)) + self._dot
                    + self._print(Name(k, position=f.index)) + self._head(f.head))
        if symbol in ("exp_s", "exp_z"):
            inner = Name(symbol[-1], position=f.position, index=f.index)
            return self._exp_name(self._print(inner)) + self._head(f.head)
        if symbol == "exp_z_over_T":  # e^(z_j / T): the softmax's term under a temperature T
            return self._exp_over_T(self._print(Name("z", index=f.index)))
        if symbol in ("sum_exp_s", "sum_exp_z"):
            inner = Name(symbol[-1], position=f.position, index="j")
            return self._sum("j") + self._exp_name(self._print(inner)) + self._head(f.head)
        if symbol == "sum_exp_z_over_T":
            return self._sum("j") + self._exp_over_T(self._print(Name("z", index="j")))
        if symbol == "hidden":
            return self._hidden(self._print(Name("u", primes=1, position=f.position)), f.index)
        if symbol == "p" and isinstance(f.index, Piece):
            return "p" + self._paren(self._piece(f.index.text))
        base = (self._tilde(TILDED[symbol]) if symbol in TILDED else self._base(symbol)) + self._primes(f.primes)
        base += {"ln2": self._primes(1), "final": self._mark("f")}.get(f.norm, "")
        if isinstance(f.index, Piece):
            return base + self._piece_sub(self._piece(f.index.text))
        if symbol == "PE" and f.index is not None:  # the paper's PE[pos, col], both from 0
            return base + f"[{f.position},{f.index}]"
        if symbol in ("z", "exp_z") and f.index is not None:  # z_j: a free letter for the piece
            return base + self._sub(str(f.index))
        if symbol in PAIR_INDEXED and f.index is not None:
            return base + self._sub(f"{f.position},{f.index}") + self._head(f.head)
        out = base + (self._sub(str(f.position)) if f.position is not None else "") + self._head(f.head)
        return out + (f"[{f.index}]" if f.index is not None else "")

    def _param(self, name: Name) -> str:
        """A weight (``W_Q``), a row of it (``E_3``) or an entry (``E_{3,1}``): a weight
        whose own name has a subscript is bracketed first (``(W_Q)_{1,3}``, ``(b_O)_3``),
        so its entry's subscript does not run into the name's (``W_{Q1,3}``)."""
        f = name.fields
        base = self._base(f.symbol)
        if f.position is None:
            return base
        if OWN_SUBSCRIPT.match(f.symbol):
            base = self._paren(base)
        return base + self._sub(str(f.position) if f.index is None else f"{f.position},{f.index}")


class TextPrinter(_Formulas):
    """The plain notation (what derive's labels and terminal notes write): ``mu'_5``,
    ``q_5.k_1``, ``e^s_{5,3}``, ``1.732·(-0.816)``, ``sqrt(2)``, ``ln(0.395)``."""

    _ellipsis = "\u2026"
    _dot = "."
    _argmax = "argmax"

    def _number(self, text: str) -> str:
        # (a number as a table prints it, -0.817 with the Unicode minus, in the plain notation's ASCII)
        return text.replace(MINUS, "-")

    def _base(self, symbol: str) -> str:
        return PLAIN.get(symbol, symbol)

    def _tilde(self, letter: str) -> str:
        return letter + "~"

    def _primes(self, n: int) -> str:
        return "'" * n

    def _mark(self, mark: str) -> str:
        return "^" + mark

    def _sub(self, body: str) -> str:
        return f"_{{{body}}}" if "," in body else f"_{body}"


    def _piece_sub(self, piece: str) -> str:
        return "_" + piece

    def _head(self, head) -> str:
        return f"^({head})" if head is not None else ""

    def _piece(self, piece: str) -> str:
        return piece

    def _exp_name(self, inner: str) -> str:
        return "e^" + inner

    def _exp_over_T(self, inner: str) -> str:
        return f"e^({inner}/T)"

    def _sum(self, letter: str) -> str:
        return f"sum_{letter} "

    def _hidden(self, row: str, index) -> str:
        return f"{row}W_1" + (f"[{index}]" if index is not None else "")

    def _grad(self, inner: str) -> str:
        return f"dL/d{inner}"

    def _after(self, inner: str) -> str:
        return f"{inner} after the step"

    def _gelu(self, form: str) -> str:
        return f"GELU_{form}"

    def _print_Exp(self, expr) -> str:
        (x,) = expr.args
        return "e^" + self._wrap(x, ATOM, negative_too=True)

    def _print_Ln(self, expr) -> str:
        return "ln" + self._paren(self._print(expr.args[0]))

    def _print_Pow(self, expr) -> str:
        base, e = expr.args
        if e == HALF:
            return self._root(base)
        return self._wrap(base, ATOM, negative_too=True) + "^" + self._paren(self._print(e))

    def _root(self, base) -> str:
        return "sqrt" + self._paren(self._print(base))

    def _print_Max(self, expr) -> str:
        return "max" + self._paren(", ".join(self._print(a) for a in expr.args))

    def _print_Rat(self, expr: Rat) -> str:
        return f"{expr.p}/{expr.q}" if expr.q != 1 else str(expr.p)


class UnicodePrinter(TextPrinter):
    """The Unicode notation, one line: ``μ′_5``, ``q_5·k_1``, ``∂L/∂E_{3,1}``, ``√2``,
    ``−0.577`` (the Unicode minus)."""

    minus = MINUS
    _dot = "\u00b7"

    def _number(self, text: str) -> str:
        return text.replace("-", MINUS)

    def _base(self, symbol: str) -> str:
        return GREEK.get(symbol, symbol)

    def _tilde(self, letter: str) -> str:
        return letter + "\u0303"

    def _primes(self, n: int) -> str:
        return "\u2032" * n

    def _sum(self, letter: str) -> str:
        return f"\u03a3_{letter} "

    def _grad(self, inner: str) -> str:
        return f"\u2202L/\u2202{inner}"

    def _hidden(self, row: str, index) -> str:
        return f"({row} W_1)" + (f"[{index}]" if index is not None else "")

    def _root(self, base) -> str:
        return "\u221a" + self._wrap(base, ATOM, negative_too=True)

    def _print_Rat(self, expr: Rat) -> str:
        # (an integer keeps its ASCII minus, as SymPy's str printer wrote it)
        return f"{expr.p}/{expr.q}".replace("-", MINUS) if expr.q != 1 else str(expr.p)


class TexPrinter(_Formulas):
    """The LaTeX notation (math mode, no delimiters): ``\\mu'_{5}``, ``q_{5} \\cdot k_{1}``,
    ``e^{s_{5,3}}``, ``1.732 \\cdot (-0.816)``, ``\\sqrt{2}``, ``\\ln 0.395``; the setting
    ``target`` (``latex`` or ``katex``) chooses how a vocabulary piece is spelled, and
    ``display`` writes a quotient as ``\\frac`` (display math) instead of ``a / b`` (a
    formula in running text).

    Raises:
        ValueError: for an unknown target.
    """

    fraction_precedence = ATOM
    times = " \\cdot "
    _ellipsis = "\\ldots"
    _dot = " \\cdot "
    _argmax = "\\operatorname{argmax}"

    def __init__(self, settings=None):
        self._settings = {"target": "latex", "display": False, **(settings or {})}
        if self._settings["target"] not in TARGETS:
            raise ValueError(f"unknown TeX target {self._settings['target']!r}; expected one of {', '.join(TARGETS)}")

    def _number(self, text: str) -> str:
        text = text.replace(MINUS, "-")
        if "e" in text:
            mantissa, exponent = text.split("e")
            return mantissa + r"\mathrm{e}{" + exponent + "}"
        return text

    def _base(self, symbol: str) -> str:
        if symbol in GREEK:
            return "\\" + symbol
        if symbol in UPRIGHT:
            return r"\mathrm{" + symbol + "}"
        if "_" in symbol:  # a weight: W_Q, b_1, ln1_gain
            head, rest = symbol.split("_", 1)
            if head.isalpha() and len(head) == 1:
                return f"{head}_{{{rest}}}"
            return r"\mathrm{" + symbol.replace("_", r"\_") + "}"
        return symbol if len(symbol) == 1 else r"\mathrm{" + symbol + "}"

    def _primes(self, n: int) -> str:
        return "'" * n

    def _tilde(self, letter: str) -> str:
        return r"\tilde{" + letter + "}"

    def _mark(self, mark: str) -> str:
        return "^{" + mark + "}"

    def _sub(self, body: str) -> str:
        return "_{" + body + "}"


    def _piece_sub(self, piece: str) -> str:
        return "_{" + piece + "}"

    def _head(self, head) -> str:
        return "^{(" + str(head) + ")}" if head is not None else ""

    def _piece(self, piece: str) -> str:
        return texttt(piece, self._settings["target"])

    def _exp_name(self, inner: str) -> str:
        return "e^{" + inner + "}"

    def _exp_over_T(self, inner: str) -> str:
        return "e^{" + inner + "/T}"

    def _sum(self, letter: str) -> str:
        return r"\sum_{" + letter + "} "

    def _hidden(self, row: str, index) -> str:
        return f"({row} W_{{1}})" + (f"[{index}]" if index is not None else "")

    def _grad(self, inner: str) -> str:
        return r"\partial L / \partial " + inner

    def _after(self, inner: str) -> str:
        return inner + r"\ \text{after the step}"

    def _gelu(self, form: str) -> str:
        return r"\mathrm{GELU}_{" + ("\\tanh" if form == "tanh" else r"\mathrm{erf}") + "}"

    def _print_Over(self, expr: Over) -> str:
        if not self._settings["display"]:
            return super()._print_Over(expr)
        return r"\frac{" + self._print(expr.args[0]) + "}{" + self._print(expr.args[1]) + "}"

    def _print_other(self, expr) -> str:
        """A SymPy expression (an exact form), printed by SymPy's ``latex``."""
        import sympy
        return sympy.latex(expr)

    def _print_Function(self, expr) -> str:
        # (SymPy's LaTeX of sin x and cos x: \sin{\left(x \right)})
        return "\\" + expr.name + "{\\left(" + ", ".join(self._print(a) for a in expr.args) + " \\right)}"

    def _print_Exp(self, expr) -> str:
        return "e^{" + self._print(expr.args[0]) + "}"

    def _print_Ln(self, expr) -> str:
        (x,) = expr.args
        if precedence_of(x) == ATOM and not is_negative(x):
            return r"\ln " + self._print(x)
        return r"\ln" + self._paren(self._print(x))

    def _print_Pow(self, expr) -> str:
        base, e = expr.args
        if e == HALF:
            return r"\sqrt{" + self._print(base) + "}"
        return self._wrap(base, ATOM, negative_too=True) + "^{" + self._print(e) + "}"

    def _print_Max(self, expr) -> str:
        return r"\max" + self._paren(", ".join(self._print(a) for a in expr.args))

    def _print_Rat(self, expr: Rat) -> str:
        sign = "-" if expr.p < 0 else ""
        return f"{sign}\\frac{{{abs(expr.p)}}}{{{expr.q}}}" if expr.q != 1 else str(expr.p)


_TEXT = TextPrinter()
_UNICODE = UnicodePrinter()
_TEX = {(target, display): TexPrinter({"target": target, "display": display})
        for target in TARGETS for display in (False, True)}


def text(expr) -> str:
    """``expr`` (a Name, a formula, a number) in the plain notation."""
    return _TEXT.doprint(expr)


def label_of(fields: Fields) -> str:
    """:func:`text` of ``Name(**fields)`` for a quantity's own name (``fields.param``,
    ``grad`` and ``after`` false), without building the Name (a SymPy symbol took 9 us: the
    JSON export of crane labels 46,000 entries)."""
    return _TEXT._print_fields(fields)


def unicode(expr) -> str:
    """``expr`` in the Unicode notation."""
    return _UNICODE.doprint(expr)


def latex(expr, target: str = "latex", display: bool = False) -> str:
    """``expr`` as TeX math (no delimiters) in the dialect ``target`` (``latex`` or
    ``katex``); with ``display``, quotients as ``\\frac`` (see :class:`TexPrinter`).

    Raises:
        KeyError: for an unknown target.
    """
    return _TEX[target, display].doprint(expr)


def counted(n: int, noun: str) -> str:
    """A count and its noun, plural unless it is one: ``1 row``, ``2 rows``, ``0 rows``
    (a regular plural, an ``s``: every noun the pages count is regular)."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def listed(names: list[str]) -> str:
    """Names once each, in order, joined as prose: ``E``, ``E and P``, ``W_Q, W_K and W_V``."""
    names = list(dict.fromkeys(names))
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


ECHO = 60  # characters of a reader's line a message repeats, at most


def excerpt(text: str, limit: int = ECHO) -> str:
    """``text`` cut to its first ``limit`` characters, with ``…`` when cut: what a message
    repeats of a reader's line (a line of 20,000 characters is not repeated whole)."""
    return text if len(text) <= limit else text[:limit] + "\u2026"


def quoted(text: str, limit: int = ECHO) -> str:
    """A reader's text for a message, as written, between single quotes: ``'\\frac{1}{2}'``
    (repr's quoting doubled every backslash of the LaTeX and switched to double quotes for
    a text with an apostrophe, ``"mu'_5"``); cut to ``limit`` characters as :func:`excerpt`
    cuts it (``'0.1 + 0.1 + …'``)."""
    return f"'{excerpt(text, limit)}'"


def plain_label(label) -> str:
    """A column header or an equation's left side in the plain notation: a rule's text as
    it is, a Name or a formula through :func:`text`."""
    return label if isinstance(label, str) else text(label)


# ---------------------------------------------------------------------- rich text
RichText = list  # of str (prose) and formulas or Names (math)


def plain_text(parts: RichText) -> str:
    """Rich text joined for a terminal: prose as it is, math in the plain notation."""
    return "".join(p if isinstance(p, str) else text(p) for p in parts)


def unicode_text(parts: RichText) -> str:
    """Rich text joined with the math in the Unicode notation."""
    return "".join(p if isinstance(p, str) else unicode(p) for p in parts)


def sstr(form, **settings) -> str:
    """``sympy.sstr`` of an exact form, with Euler's number written ``exp(1)`` (SymPy writes
    ``E``, which a page reads as the embedding table E: ``e^z_a = E`` of the softmax case);
    SymPy's string syntax still (``sympify`` reads ``exp(1)`` back as E)."""
    return _exact_printer()(settings).doprint(form)


@lru_cache(maxsize=1)
def _exact_printer():
    """SymPy's StrPrinter with :func:`sstr`'s one change, made when first needed (SymPy's
    printers load with SymPy)."""
    from sympy.printing.str import StrPrinter

    class ExactStrPrinter(StrPrinter):
        def _print_Exp1(self, expr):
            return "exp(1)"
    return ExactStrPrinter


__all__ = ["TextPrinter", "UnicodePrinter", "TexPrinter", "text", "label_of", "unicode", "latex", "plain_text", "unicode_text",
           "plain_label", "counted", "sstr",
           "RichText", "TARGETS", "precedence_of"]

