"""Reading a hand computation: the lines ``derive check`` accepts.

A hand-computation file mixes, one per line:

- named lines in the chapter's notation: ``u_5 = [-0.577, -0.577, -0.577, 1.732]``,
  ``p(␣roof) = 0.395``, ``L = -ln 0.395 = 0.928`` (the last ``=`` gives the value);
- free arithmetic: ``1.732*-0.816 + -0.577*1.633 = -2.357``, ``e^{2.400} = 11.023``;
- a Markdown table copied from a chapter: the first column names the row (a token such as
  `` `␣cat` `` or a position), each other header names the quantity (``z``, ``e^z``, ``p``,
  ``s_{5,j}``, ``a_{5,j}``, ``q_5 · k_j``, ``u_1``, ``mu``, ``sigma``, ``Q``, ``x_t``);
- LaTeX ``aligned`` lines, as in the seed 000's step 8 (``h_5 &= x_5 + a_5 = [...] \\``),
  and display lines such as its step 4 (``\\[\\mu = 0.000,\\quad \\sigma = 0.866,\\quad u_5 = ...\\]``);
- context lines that choose the head or block of what follows: ``Head 1``, ``# head 2``,
  ``block 2`` (or write the head in the name: ``a_{5,3}^{(1)}``).

:func:`parse` turns the text into :class:`Entry` objects (a name or an arithmetic
expression, and the written values), or a message for a line it cannot read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

MINUS = "\u2212"

NUMBER = re.compile(r"[-\u2212]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
VALUE = re.compile(r"^\s*(\[[^\]]*\]|[-\u2212]?\d[\d.eE+-]*)\s*[.,;]?\s*$")
CONTEXT = re.compile(r"^[#\s*]*(head|block)\s+(\d+)\b", re.IGNORECASE)
LATEX_WORDS = [(r"\mathrm", ""), (r"\text", ""), (r"\operatorname", ""), (r"\left", ""), (r"\right", ""),
               (r"\sigma", "sigma"), (r"\mu", "mu"), (r"\cdot", "·"), (r"\times", "·"), (r"\,", ""),
               (r"\;", ""), (r"\ ", " "), (r"\quad", " "), ("$", ""), (r"\(", ""), (r"\)", ""),
               (r"\[", ""), (r"\]", ""),
               ("&", ""), (r"\to", "=")]


@dataclass
class Entry:
    """One thing to check.

    Attributes:
        line: 1-based line number in the file; source: that line's text.
        name: the quantity's name (None for free arithmetic); expr: the arithmetic's
            left-hand side (None for a named value).
        values: the written values (several for a vector), as written.
        head, block: the context in force (None when not given).
        error: a message when the line could not be read (nothing else is set).
    """

    line: int
    source: str
    name: str | None = None
    expr: str | None = None
    values: list[str] = field(default_factory=list)
    head: int | None = None
    block: int | None = None
    error: str | None = None


def clean_latex(text: str) -> str:
    """Plain text from the chapter's LaTeX: ``\\mathrm{LN}`` -> ``LN``, ``\\sigma`` -> ``sigma``."""
    text = re.sub(r"\\(?:mathrm|text|operatorname|mathit|mathbf)\{([^{}]*)\}", r"\1", text)
    for latex, plain in LATEX_WORDS:
        text = text.replace(latex, plain)
    return text


def split_values(text: str) -> list[str] | None:
    """The numbers of a written value (``0.395`` or ``[a, b, c]``), or None if it is not one
    (each number must be whole: ``0.3.95`` or ``.395`` is not a number)."""
    if not VALUE.match(text):
        return None
    body = text.strip().rstrip(".,;").strip()
    if body.startswith("["):
        body = body[1:-1] if body.endswith("]") else None
    if body is None:
        return None
    numbers = [n.strip() for n in body.split(",")]
    if not all(re.fullmatch(NUMBER.pattern, n) for n in numbers):
        return None
    return [n.replace("\u2212", "-") for n in numbers] or None


def decimal_places(number: str) -> int | None:
    """The places a written number is given to (``0.395`` -> 3, ``9.28e-1`` -> 3), or None
    when it has no digits after the point (``1``, ``11e0``, ``1.5e2``)."""
    mantissa, _, exponent = number.lower().partition("e")
    if "." not in mantissa:
        return None
    places = len(mantissa.split(".", 1)[1]) - int(exponent or 0)
    return places if places >= 0 else None


def parse(text: str) -> list[Entry]:
    """All entries of a hand-computation file, in order (see the module docstring)."""
    entries: list[Entry] = []
    context = {"head": None, "block": None}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("|"):
            j = i
            while j < len(lines) and lines[j].strip().startswith("|"):
                j += 1
            entries += _table(lines[i:j], i + 1, context)
            i = j
            continue
        if r"\begin{aligned}" in line:
            j = i
            while j < len(lines) and r"\end{aligned}" not in lines[j]:
                j += 1
            block = " ".join(lines[i:j + 1])
            body = block.split(r"\begin{aligned}", 1)[1].split(r"\end{aligned}", 1)[0]
            for part in body.split(r"\\"):
                if part.strip():
                    entries.append(_equation(clean_latex(part), i + 1, part.strip(), context))
            i = j + 1
            continue
        match = CONTEXT.match(stripped)
        if match:
            context[match.group(1).lower()] = int(match.group(2))
        elif stripped and not stripped.startswith("#") and "=" in stripped:
            for part in clean_latex(stripped).split(",  ") if r"\quad" in stripped else [clean_latex(stripped)]:
                entries.append(_equation(part, i + 1, stripped, context))
        i += 1
    return entries


def _equation(text: str, line: int, source: str, context: dict) -> Entry:
    """``name = ... = value`` or ``expression = value``."""
    parts = [p.strip() for p in text.strip().rstrip(".,;").split("=")]
    entry = Entry(line, source, head=context["head"], block=context["block"])
    if len(parts) < 2 or not parts[-1]:
        entry.error = "expected `name = value` or `arithmetic = value`"
        return entry
    values = split_values(parts[-1])
    if values is None:
        entry.error = f"cannot read the value {parts[-1]!r}: expected a number such as 0.395 or a vector [a, b]"
        return entry
    undotted = [v for v in values if decimal_places(v) is None]
    if undotted:
        entry.error = (f"the number {undotted[0]} has no digits after the point, so its rounding is unknown: "
                       f"write it with its places (e.g. {_with_places(undotted[0])})")
        return entry
    entry.values = values
    head = parts[0]
    if not head:
        entry.error = "nothing before the `=`: expected `name = value` or `arithmetic = value`"
        return entry
    if is_arithmetic(head):
        entry.expr = head
    else:
        entry.name = head
    return entry


def _with_places(number: str) -> str:
    """``2`` -> ``2.000``, ``11e0`` -> ``11.000``: a number written with 3 places."""
    try:
        return f"{Decimal(number.replace(MINUS, '-')):.3f}"
    except InvalidOperation:
        return number + ".000"


def is_arithmetic(text: str) -> bool:
    """True for free arithmetic (numbers, operators and functions such as e^, exp, sqrt,
    ln, tanh, erf), False for a name (``e^s_{5,3}``, ``z_roof``)."""
    rest = re.sub(r"\b(exp|sqrt|ln|log|tanh|erf|sin|cos|pi)\b|e\^", "", text)
    return any(ch.isdigit() for ch in text) and not any(ch.isalpha() for ch in rest)


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _table(rows: list[str], first_line: int, context: dict) -> list[Entry]:
    """A Markdown table: one entry per (row, column) cell, named from the header."""
    header = [clean_latex(c).replace("`", "").strip() for c in _cells(rows[0])]
    entries = []
    for offset, row in enumerate(rows[1:], 1):
        cells = _cells(row)
        if all(set(c) <= set("-: ") for c in cells):
            continue  # the separator row
        key = cells[0].replace("`", "").strip()
        for column, cell in zip(header[1:], cells[1:]):
            values = split_values(cell)
            if values is None or not column:
                continue
            name = column.split("=", 1)[0].strip()
            entries.append(_equation(f"{{row:{key}}}{name} = {cell}", first_line + offset,
                                     rows[offset].strip(), context))
    return entries
