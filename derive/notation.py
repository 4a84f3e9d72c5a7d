"""The chapter's notation, from the plain text the rules write to TeX math.

The rules write their words, titles, column headers and equation names in plain text that
reads well in a terminal (``sigma_5``, ``s_{5,j}``, ``q_5 . k_j``, ``o^(1)``, ``dL/dE_i``,
``sqrt(d_k)``, ``u'_5``, ```␣roof```). The LaTeX, Markdown and HTML renderers print the
same names as math: :func:`tex` turns a plain formula into TeX (the names through SymPy's
LaTeX printer, so ``sigma`` is ``\\sigma`` and ``W_Q`` is ``W_{Q}``), and the two span
splitters say which parts of a text are math:

- :func:`spans` reads running text (a step's title and words, an author's template): where
  ``$...$`` marks a formula in the plain notation it splits there, else it finds the
  formulas word by word; backticks mark a vocabulary piece, the rest is prose.
- :func:`label_spans` reads a short *label* (a column header or a table title), where
  nothing is marked: words of two letters or more are prose (unless they are the
  chapter's names, such as ``mu``, ``sigma``, ``attn``), other tokens are math.

Two TeX dialects differ only in how a vocabulary piece is spelled: ``latex`` (pdflatex
with T1 fonts: ``\\textvisiblespace``) and ``katex`` (KaTeX's strict mode: ``\\char"2423``).
"""

from __future__ import annotations

import re
from functools import lru_cache

from .lazy import lazy
from .name import SPACE, texttt

sympy = lazy("sympy")  # loaded when an exact form is first asked for

TARGETS = ("latex", "katex")

# Names printed upright; the Greek letters come from SymPy's printer.
OPERATORS = {"sqrt": r"\sqrt", "ln": r"\ln", "log": r"\log", "exp": r"\exp", "sum": r"\sum",
             "tanh": r"\tanh", "max": r"\max", "min": r"\min", "sin": r"\sin", "cos": r"\cos"}
UPRIGHT = {"GELU", "ReLU", "LN", "softmax", "attn", "erf", "id", "ids", "var"}
GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda",
         "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "phi", "chi", "psi", "omega", "Gamma", "Delta",
         "Theta", "Lambda", "Xi", "Pi", "Sigma", "Phi", "Psi", "Omega"}
SYMBOLS = {"<=": r"\le", ">=": r"\ge", "<-": r"\leftarrow", "->": r"\to", "!=": r"\ne", "...": r"\dots",
           "*": r"\cdot", "\u00b7": r"\cdot", "\u00d7": r"\times", "|": r"\mid", "\\": r"\backslash",
           "\u2212": "-", "\u221e": r"\infty", "inf": r"\infty", "{": r"\{", "}": r"\}", "%": r"\%",
           "&": r"\&", "#": r"\#", "~": r"\sim", "\u2264": r"\le", "\u2190": r"\leftarrow", "\u2248": r"\approx"}
# The chapter's names that are math in a label even though they are words.
MATH_WORDS = GREEK | {"eps", "inf", "attn", "sqrt", "ln", "exp"}

SCRIPT = (r"(?:_\{[^{}]*\}|_(?:\d+|[A-Za-z]+)(?:,(?:\d+|[A-Za-z]+))*|\^\{[^{}]*\}|\^\([^()]*\)"
          r"|\^(?:\d+|[A-Za-z]+))")


@lru_cache(maxsize=None)
def _token() -> re.Pattern:
    """The plain notation's tokens, compiled on first use (a few milliseconds that a
    ``derive run``, which writes no TeX, does not spend)."""
    return re.compile(
        r"(?P<piece>`[^`]*`|" + SPACE + r"[^\s()\[\],`]*)"
        r"|(?P<partial>d(?P<num>[A-Za-z])/d(?P<den>[A-Za-z]+'*" + SCRIPT + r"{0,3}))"
        r"|(?P<number>\d+(?:\.\d+)?(?:e[-\u2212+]?\d+)?)(?:\^\((?P<power>[^()]*)\))?"
        r"|(?P<name>[A-Za-z]+(?P<tilde>~?)(?P<prime>'*)(?P<scripts>" + SCRIPT + r"{0,3})(?P<index>\[[^\[\]]*\])?)"
        r"|(?P<symbol><=|>=|<-|->|!=|\.\.\.)"
        r"|(?P<dot>(?<=\s)\.(?=\s))"
        r"|(?P<script>(?<=\))" + SCRIPT + ")"  # (W_O)_{1,1}: an entry of a bracketed weight
        r"|(?P<space>\s+)"
        r"|(?P<char>.)")


NUMBER = re.compile(r"^[-\u2212]?\d+(?:\.\d+)?(?:e[-\u2212+]?\d+)?$")
TIMES = re.compile(r"(?<=\d) x (?=\d)")


def _glue(parts: list[str]) -> str:
    """The TeX pieces joined, with a space where a control word would run into a letter
    (``\\mid`` then ``b`` is ``\\mid b``, not the undefined ``\\midb``)."""
    out = ""
    for part in parts:
        if part[:1].isalpha() and re.search(r"\\[A-Za-z]+$", out):
            out += " "
        out += part
    return out


def tex(text: str, target: str = "latex") -> str:
    """TeX math (no delimiters) for a formula in the plain notation.

    ``sigma_5`` -> ``\\sigma_{5}``; ``(x_5 - mu) / sigma`` -> ``\\frac{x_{5} - \\mu}{\\sigma}``;
    ``q_5 . k_j / sqrt(2)`` -> ``q_{5} \\cdot k_{j} / \\sqrt{2}``; ``dL/dE_i`` ->
    ``\\partial L / \\partial E_{i}``; words become ``\\text{...}``; a vocabulary piece
    becomes typewriter text in the ``target`` dialect (``latex`` or ``katex``).
    """
    return _Tex(target).formula(TIMES.sub(" \u00d7 ", text))


def spans(text: str) -> list[tuple[str, str]]:
    """Split running text (a step's title or words) into ``(kind, text)`` spans: ``prose``,
    ``math`` (plain notation) and ``piece`` (a vocabulary piece, without backticks).

    Text with ``$...$`` marks is split at the marks. Unmarked text (the rules write
    for the terminal) is read word by word: a word with a subscript, a superscript, an
    index, a function call or ``=``, a Greek name, ``-inf``, or a single capital letter is
    math; so is a lone lowercase letter, a number or an operator next to an operator or a
    formula; a math word's trailing comma or colon stays prose. ``subtract its mean mu,
    divide by sigma = sqrt(variance + eps)`` gives math ``mu`` and ``sigma = sqrt(variance
    + eps)``; ``a one-hot vector`` stays prose.
    """
    if "$" not in text or text.count("$") % 2:
        return _prose_spans(text)
    out: list[tuple[str, str]] = []
    for n, part in enumerate(text.split("$")):
        if n % 2:
            out.append(("math", part))
        else:
            out += _pieces(part)
    return [s for s in out if s[1]]


OPERATOR_WORDS = {"=", "+", "-", "/", "<", ">", "<=", ">=", "<-", "->", ".", "*", "|", "\u00b7", "\u00d7"}
FUNCTION_WORDS = {"sum", "ln", "-ln", "sqrt", "exp", "log"}
MATH_SIGNAL = re.compile(r"[_^\[]|[A-Za-z0-9]\(|^-?inf$|[A-Za-z]/d?[A-Za-z]|=")


def _prose_spans(text: str) -> list[tuple[str, str]]:
    tokens: list[list[str]] = []  # [text, kind]
    for word in re.split(r"(\s+)", text):
        if not word:
            continue
        if word.isspace():
            tokens.append([word, "space"])
            continue
        lead, core, trail = _peel(word)
        tokens += [[lead, "prose"]] if lead else []
        tokens.append([core, _prose_kind(core)])
        tokens += [[trail, "prose"]] if trail else []
    words = [t for t in tokens if t[1] != "space"]
    for i, t in enumerate(words):  # letters, numbers, operators and functions side with formulas
        left = words[i - 1][1] if i else None
        right = words[i + 1][1] if i + 1 < len(words) else None
        if t[1] in ("letter", "number"):
            t[1] = "math" if "op" in (left, right) else "prose"
        elif t[1] == "func":
            t[1] = "math" if right in ("math", "letter", "number", "func") else "prose"
    for i, t in enumerate(words):
        if t[1] == "op":
            left = words[i - 1][1] if i else None
            right = words[i + 1][1] if i + 1 < len(words) else None
            t[1] = "math" if {left, right} & {"math", "op"} else "prose"
    for i, t in enumerate(tokens):  # a space between two math words is math
        if t[1] == "space":
            left, right = tokens[i - 1][1] if i else None, tokens[i + 1][1] if i + 1 < len(tokens) else None
            t[1] = "math" if left == right == "math" else "prose"
    out: list[tuple[str, str]] = []
    for word, kind in tokens:
        for k, part in (_pieces(word) if kind == "prose" else [(kind, word)]):
            _append(out, k, part)
    for i in range(len(out) - 1):  # a formula's closing parenthesis, peeled off its last word
        kind, part = out[i]
        missing = part.count("(") - part.count(")")
        closing = len(out[i + 1][1]) - len(out[i + 1][1].lstrip(")"))
        if kind == "math" and missing > 0 and out[i + 1][0] == "prose" and closing:
            n = min(missing, closing)
            out[i], out[i + 1] = ("math", part + ")" * n), ("prose", out[i + 1][1][n:])
    return [s for s in out if s[1]]


def _peel(word: str) -> tuple[str, str, str]:
    """A word's unbalanced opening parenthesis and its trailing punctuation, split off."""
    lead = trail = ""
    while word.startswith("(") and word.count("(") > word.count(")"):
        lead, word = lead + "(", word[1:]
    while word and (word[-1] in ",;:!?" or (word[-1] == "." and word not in ("...", "."))
                    or (word[-1] == ")" and word.count(")") > word.count("("))):
        trail, word = word[-1] + trail, word[:-1]
    return lead, word, trail


def _prose_kind(word: str) -> str:
    if not word:
        return "prose"
    if word.startswith("`") or word.startswith(SPACE) and len(word) > 1:
        return "math" if "(" in word else "prose"
    if word in OPERATOR_WORDS:
        return "op"
    if word in FUNCTION_WORDS:
        return "func"
    if re.fullmatch(r"-?\d+(?:\.\d+)?(?:e-?\d+)?(?:/\d+)?", word):
        return "number"
    if re.fullmatch(r"[a-z]", word) or word == "attn":  # attn: a name, math beside an operator (x + attn)
        return "letter"
    if re.fullmatch(r"[A-Z]", word) or word in GREEK or word == "eps" or MATH_SIGNAL.search(word):
        return "math"
    return "prose"


def label_spans(text: str) -> list[tuple[str, str]]:
    """Split an unmarked label (a column header, a table title) into spans, as :func:`spans`.

    ``Head 1, weights a_5,j`` -> prose ``Head 1, weights ``, math ``a_5,j``;
    ``x_t = E[id] + P_t`` is all math; ``E (12 x 4)`` -> math ``E``, prose `` (12 × 4)``.
    Numbers and operators side with the math on both sides of them, else with the prose.
    """
    words = [w for w in re.split(r"(\s+)", TIMES.sub(" \u00d7 ", text)) if w]
    kinds = [_label_kind(w) for w in words]
    for i, kind in enumerate(kinds):
        if kind == "neutral":
            left = next((k for k in reversed(kinds[:i]) if k not in ("neutral", "space")), None)
            right = next((k for k in kinds[i + 1:] if k not in ("neutral", "space")), None)
            sides = {left, right} - {None}
            kinds[i] = "math" if sides == {"math"} else "prose"
    for i, kind in enumerate(kinds):  # a space between two math words is math
        if kind == "space":
            left, right = kinds[i - 1] if i else None, kinds[i + 1] if i + 1 < len(kinds) else None
            kinds[i] = "math" if left == right == "math" else "prose"
    out: list[tuple[str, str]] = []
    for word, kind in zip(words, kinds):
        if kind == "prose":
            for k, t in _pieces(word):
                _append(out, k, t)
        else:
            _append(out, kind, word[1:-1] if kind == "piece" else word)
    return out


def _label_kind(word: str) -> str:
    if word.isspace():
        return "space"
    if word.startswith("`") and word.endswith("`") and len(word) > 1:
        return "piece"
    bare = word.strip("(),.:;")
    if re.fullmatch(r"[A-Za-z][A-Za-z-]+", bare) and bare not in MATH_WORDS:
        return "prose"
    if re.fullmatch(r"[\d.,()\u00d7=+\-/|:;]*", word) or word == "...":
        return "neutral"
    return "math"


def _append(out: list, kind: str, text: str) -> None:
    if out and out[-1][0] == kind:
        out[-1] = (kind, out[-1][1] + text)
    else:
        out.append((kind, text))


def unmarked(text: str) -> str:
    """Running text or a label for a terminal: each backtick-marked vocabulary piece
    without its marks (``L = -ln p(`␣roof`)`` -> ``L = -ln p(␣roof)``); text with an odd
    number of backticks as it is (as :func:`spans` reads it)."""
    return "".join(part for _, part in _pieces(text))


def _pieces(text: str) -> list[tuple[str, str]]:
    """Prose with backtick pieces split out."""
    out = []
    for n, part in enumerate(text.split("`") if text.count("`") % 2 == 0 else [text]):
        out.append(("piece" if n % 2 else "prose", part))
    return [s for s in out if s[1]]


@lru_cache(maxsize=None)
def symbol_tex(name: str) -> str:
    """A bare name (no scripts) through SymPy's LaTeX printer: ``sigma`` -> ``\\sigma``;
    ``eps`` is the chapter's epsilon; other words are upright. A Greek letter's name and an
    ASCII letter are written as SymPy writes them (``\\`` and the name; the letter) without
    loading SymPy (half a second of a page without exact forms; tests/test_notation.py
    holds the two to SymPy's own)."""
    if name == "eps":
        return r"\varepsilon"
    if name == "inf":
        return r"\infty"
    if name in GREEK:
        return "\\" + name
    if len(name) == 1 and name.isascii() and name.isalpha():
        return name
    if len(name) == 1:
        return sympy.latex(sympy.Symbol(name))
    if name in OPERATORS:
        return OPERATORS[name]
    if name in UPRIGHT:
        return r"\mathrm{" + name + "}"
    return r"\text{" + name + "}"


class _Tex:
    """One conversion of the plain notation to TeX (see :func:`tex`)."""

    def __init__(self, target: str):
        if target not in TARGETS:
            raise ValueError(f"unknown TeX target {target!r}; expected one of {', '.join(TARGETS)}")
        self.target = target

    def formula(self, text: str) -> str:
        text = text.strip()
        if " = " in text:
            return " = ".join(self.formula(side) for side in text.split(" = "))
        frac = self._fraction(text)
        if frac is not None:
            return frac
        out, tokens = [], list(_token().finditer(text))
        i = 0
        while i < len(tokens):
            m = tokens[i]
            kind = next(k for k in ("piece", "partial", "number", "name", "symbol", "dot", "script", "space", "char")
                        if m.group(k) is not None)
            if kind == "name" and m.group("name") in OPERATORS and i + 1 < len(tokens) and tokens[i + 1].group() == "(":
                inner, i = self._group(text, tokens, i + 1)
                name = m.group("name")
                out.append(r"\sqrt{" + self.formula(inner) + "}" if name == "sqrt"
                           else OPERATORS[name] + r"\left(" + self.formula(inner) + r"\right)")
                continue
            out.append(self._token(kind, m, tokens, i))
            i += 1
        return _glue(out).strip()

    def _fraction(self, text: str) -> str | None:
        """``(a) / b`` at the top level, with a parenthesised numerator, as ``\\frac``."""
        m = re.fullmatch(r"\((.*)\)\s*/\s*([^\s()/]+)", text)
        if m and _balanced(m.group(1)):
            return r"\frac{" + self.formula(m.group(1)) + "}{" + self.formula(m.group(2)) + "}"
        return None

    def _group(self, text: str, tokens: list, start: int) -> tuple[str, int]:
        """The text inside the parenthesis opening at token ``start``, and the token after it."""
        depth = 0
        for j in range(start, len(tokens)):
            depth += {"(": 1, ")": -1}.get(tokens[j].group(), 0)
            if depth == 0:
                return text[tokens[start].end():tokens[j].start()], j + 1
        return text[tokens[start].end():], len(tokens)

    def _token(self, kind: str, m: re.Match, tokens: list, i: int) -> str:
        t = m.group()
        if kind == "piece":
            return self.piece(t.strip("`"))
        if kind == "partial":
            return r"\partial " + m.group("num") + r" / \partial " + self._name(m.group("den"))
        if kind == "number":  # 10000^(2i/d): the exponent in braces, not parentheses
            power = m.group("power")
            base = m.group("number")
            return number_tex(base) + ("^{" + self.formula(power) + "}" if power is not None else "")
        if kind == "name":
            return self._name(t)
        if kind == "symbol":
            return SYMBOLS[t]
        if kind == "dot":
            return r"\cdot"
        if kind == "script":
            body = t[2:-1] if t[1] == "{" else t[1:]
            return t[0] + "{" + self.formula(body) + "}"
        if kind == "space":  # kept between a word and a name, a number or a bracket
            around = [tokens[j] for j in (i - 1, i + 1) if 0 <= j < len(tokens)]
            words = [t for t in around if t.group("name") and symbol_tex(_base(t.group())).startswith(r"\text")]
            operands = [t for t in around if t.group("name") or t.group("piece") or t.group("number")
                        or t.group() in "()[]"]
            return r"\ " if words and len(operands) == 2 else " "
        return SYMBOLS.get(t, t if t.isascii() else r"\text{" + t + "}")

    def _name(self, t: str) -> str:
        m = re.fullmatch(r"([A-Za-z]+)(~?)('*)(" + SCRIPT + r"{0,3})(\[[^\[\]]*\])?", t)
        base, tilde, prime, scripts, index = m.groups()  # q~: a query turned by its position
        out, marks = (r"\tilde{" + symbol_tex(base) + "}" if tilde else symbol_tex(base)) + prime, ""
        for script in re.findall(SCRIPT, scripts or ""):
            mark, body = script[0], script[1:]
            if body.startswith("{") and body.endswith("}"):
                body = body[1:-1]
            if mark in marks:  # W_O_{1,1}: the entry (W_O)_{1,1}, not a double subscript
                out, marks = "(" + out + ")", ""
            out += mark + "{" + self.formula(body) + "}"
            marks += mark
        if index:
            out += "[" + self.formula(index[1:-1]) + "]"
        return out

    def piece(self, piece: str) -> str:
        """A vocabulary piece as typewriter text (``␣`` spelled for the target)."""
        return texttt(piece, self.target)


def _base(name: str) -> str:
    return re.match(r"[A-Za-z]+", name).group()


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def number_tex(text: str) -> str:
    """A printed number inside math: ``-0.577`` as is (ASCII minus), ``1.2e-06`` as
    ``1.2\\mathrm{e}{-06}``; anything else (``undecided at 10^-3``) as text."""
    text = text.replace("\u2212", "-")
    if not NUMBER.match(text):
        return r"\text{" + text.replace("^", r"\textasciicircum{}") + "}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        return mantissa + r"\mathrm{e}{" + exponent + "}"
    return text


def is_number(text: str) -> bool:
    """True when ``text`` is one printed number (either minus sign, optional exponent)."""
    return bool(NUMBER.match(text))
