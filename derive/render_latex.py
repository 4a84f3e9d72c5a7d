"""The worked example as LaTeX: booktabs tables, numbers aligned on the decimal point
(siunitx ``S`` columns), equations in ``aligned``, last-digit notes under each table.

Without ``standalone`` the output is a fragment to ``\\input`` into a chapter whose
preamble loads :data:`PACKAGES` (the fragment's first lines say so); with it, a whole
``article`` that compiles alone with pdflatex. Steps are ``\\subsection*`` headings,
labelled ``derive:CASE:KEY`` for cross-references (see :meth:`LatexRenderer.step_label`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .lazy import lazy
from .name import TEXT_ESCAPES, t1_char
from .notation import SPACE, is_number, number_tex
from .printing import plain_label
from .steps import PART, ROW_LIMIT  # a longer table is summarised: its first and last rows (--all-rows: every row)
from .render_doc import Cell, DocumentRenderer, Number, StepView, TableView

sympy = lazy("sympy")  # for the exact forms (--exact) only: a page without them never loads SymPy

PACKAGES = r"""\usepackage[T1]{fontenc}
\usepackage{lmodern}
\usepackage{amsmath}
\usepackage{booktabs}
\usepackage{siunitx}"""

# Math sizes of an 11 pt document with no text below 8 pt: sub- and superscripts (also of
# the 9 and 10 pt tables and notes, and of a subscript's subscript) are set at 8 pt.
SIZES = r"""\DeclareMathSizes{14.4}{14.4}{10}{8}
\DeclareMathSizes{12}{12}{8}{8}
\DeclareMathSizes{10.95}{10.95}{8}{8}
\DeclareMathSizes{10}{10}{8}{8}
\DeclareMathSizes{9}{9}{8}{8}"""

STANDALONE = r"""\documentclass[11pt]{article}
%(packages)s
%(sizes)s
\usepackage[a4paper,margin=2cm]{geometry}
\setlength{\parindent}{0pt}
\setlength{\parskip}{0.5\baselineskip}
\begin{document}
%(body)s
\end{document}
"""

# The counter a step's \label refers to (\subsection* steps none): set to the step's number
# before its label, so \ref prints "Step N"'s N. Defined once in a book that \inputs several
# fragments.
STEP_COUNTER = r"\ifcsname c@derivestep\endcsname\else\newcounter{derivestep}\fi"

ROWS_PER_PART = 40  # a longer table is cut into parts that each fit a page

# Estimated widths in pt at \small (Latin Modern 10 pt), to split a table before TeX sees it:
# a digit 0.5 em, the point 5 mu, the minus sign 14 mu, a bracket 5 mu, a comma and its thin
# space 8 mu, a note mark's letter (8 pt), an average letter of text or typewriter, and a
# column's two \tabcolsep.
DIGIT, POINT, MINUS, BRACKET, COMMA, MARK, CHAR, TT_CHAR, PAD = 5.0, 2.78, 7.78, 2.78, 4.45, 4.5, 5.0, 5.25, 12.0
LINE_WIDTH = 483.0  # \linewidth of the standalone page: A4 less two 2 cm margins
TABLE_WIDTH = 440.0  # a column group is filled to this estimate (room for the estimate's error)
VECTOR_WIDTH = 340.0  # a wider vector is broken over lines (room for the key columns)
FORM_WIDTH = 380.0  # pt: an exact form estimated wider is broken over lines (see form_lines)
MATH_CHAR = 6.0  # pt: the estimated width of a visible character of a formula at 11 pt

# Math spaces as wide as what a vector entry lacks (so entries align on the point): a digit
# (9 mu = 0.5 em), the point (5 mu), the minus sign (14 mu), a mark's letter (about 8 mu).
# Only \; \: \, are used: derive check reads them as spaces.
DIGIT_SPACE, POINT_SPACE, MINUS_SPACE, MARK_SPACE = r"\;\:", r"\;", r"\;\;\:", r"\:\:"
NUMBER_PARTS = re.compile(r"^(-?)(\d+)(?:\.(\d+))?(?:e([-+]?)(\d+))?$")


def escape(text: str) -> str:
    """Running text for pdflatex: TeX's special characters and the Unicode signs derive
    prints (minus, ellipsis, middle dot, ...) spelled as commands, ``--`` kept two hyphens
    (TeX would set an en dash); other characters
    outside Latin-1 are written ``[U+XXXX]`` (T1 fonts have no glyph for them)."""
    out = [TEXT_ESCAPES.get(ch) or t1_char(ch) for ch in text]
    return "".join(out).replace("--", "-{}-")  # an option (--all-rows) as typed, not an en dash


def table_format(texts: list[str]) -> str:
    """siunitx's ``table-format`` for a column's numbers: ``-1.3``, ``2.4``, ``-1.2e-2``."""
    sign = integer = decimals = exp_digits = 0
    exp_sign = has_exp = False
    for t in texts:
        m = NUMBER_PARTS.match(t)
        if not m:
            continue
        sign |= bool(m.group(1))
        integer = max(integer, len(m.group(2)))
        decimals = max(decimals, len(m.group(3) or ""))
        if m.group(5):
            has_exp, exp_sign = True, exp_sign or m.group(4) == "-"
            exp_digits = max(exp_digits, len(m.group(5).lstrip("0") or "0"))
    spec = ("-" if sign else "") + str(max(integer, 1)) + (f".{decimals}" if decimals else "")
    return spec + (f"e{'-' if exp_sign else ''}{exp_digits}" if has_exp else "")


def text_width(text: str) -> float:
    """The estimated width in pt of ``text`` at ``\\small`` (a character T1 has no glyph
    for is printed as its 8 or more characters ``[U+XXXX]``, :func:`~derive.name.t1_char`)."""
    return CHAR * (len(text) if text.isascii() else sum(1 if ch in TEXT_ESCAPES else len(t1_char(ch)) for ch in text))


def number_width(text: str) -> float:
    """The estimated width in pt of a printed number at ``\\small`` (an exponent is
    printed by siunitx as a power of ten: about 4 characters more)."""
    m = NUMBER_PARTS.match(text.replace("\u2212", "-"))
    if not m:
        return text_width(text)
    width = MINUS * bool(m.group(1)) + DIGIT * len(m.group(2)) + (POINT + DIGIT * len(m.group(3)) if m.group(3) else 0)
    return width + (4 * CHAR + DIGIT * len(m.group(5)) if m.group(5) else 0)


@dataclass(frozen=True)
class VectorLayout:
    """The layout of a vector column, per entry position: whether some entry there is
    negative, the most digits before and after the point, the longest note mark, and the
    estimated width (pt); ``per_line`` entries on each line of a cell."""

    signs: tuple[bool, ...]
    ints: tuple[int, ...]
    decimals: tuple[int, ...]
    marks: tuple[int, ...]
    widths: tuple[float, ...]
    per_line: int = 0


def vector_layout(vectors: list[list[Number]]) -> VectorLayout:
    """The common layout of the vectors of one column (see :class:`VectorLayout`)."""
    size = max((len(v) for v in vectors), default=0)
    signs, ints, decimals, marks = [False] * size, [1] * size, [0] * size, [0] * size
    for vector in vectors:
        for i, n in enumerate(vector):
            m = NUMBER_PARTS.match(n.text)
            if m:
                signs[i] |= bool(m.group(1))
                ints[i] = max(ints[i], len(m.group(2)))
                decimals[i] = max(decimals[i], len(m.group(3) or ""))
            marks[i] = max(marks[i], len(n.mark))
    widths = [max([MINUS * s + DIGIT * k + (POINT + DIGIT * d if d else 0)]
                  + [number_width(v[i].text) for v in vectors if i < len(v)]) + MARK * mk
              for i, (s, k, d, mk) in enumerate(zip(signs, ints, decimals, marks))]
    return VectorLayout(tuple(signs), tuple(ints), tuple(decimals), tuple(marks), tuple(widths), size)


def uniform(layout: VectorLayout) -> VectorLayout:
    """``layout`` with every entry position in the widest one's layout (the lines of a
    broken vector then line up too)."""
    size = len(layout.widths)
    return replace(layout, signs=(any(layout.signs),) * size, ints=(max(layout.ints),) * size,
                   decimals=(max(layout.decimals),) * size, marks=(max(layout.marks),) * size,
                   widths=(max(layout.widths),) * size)


def padded_entry(n: Number, layout: VectorLayout, i: int) -> tuple[str, str]:
    """Entry ``i`` of a vector as math and the space that follows it, padded to the
    column's layout so the points of a column line up: before the number, a missing
    minus sign and digits; after it (the second string, set after the comma that follows
    the entry, which stays attached to its number), missing point, digits and mark."""
    m = NUMBER_PARTS.match(n.text)
    mark = r"^{\mathrm{" + n.mark + "}}" if n.mark else ""
    if not m or m.group(5):  # undecided, or an exponent: as it is
        return number_tex(n.text) + mark, ""
    left = (MINUS_SPACE if layout.signs[i] and not m.group(1) else "") + DIGIT_SPACE * (layout.ints[i] - len(m.group(2)))
    decimals = len(m.group(3) or "")
    right = DIGIT_SPACE * (layout.decimals[i] - decimals)
    if layout.decimals[i] and m.group(3) is None:
        right = POINT_SPACE + right
    return left + n.text + mark, right + MARK_SPACE * (layout.marks[i] - len(n.mark))


def vector_tex(numbers: list[Number], layout: VectorLayout) -> str:
    """A vector cell: ``$[a, b, c]$`` with its entries padded (:func:`padded_entry`, each
    entry's trailing space after its comma, or after the closing bracket); with more
    entries than ``layout.per_line``, one ``$...$`` per line joined by spaces (the column
    is just wide enough for one line, so TeX breaks there), each further line indented
    by the bracket's width."""
    entries = [padded_entry(n, layout, i) for i, n in enumerate(numbers)]
    per = layout.per_line or len(entries)
    last = len(entries) - 1
    lines = ["".join(entry + ("]" if k == last else ",") + pad + (" " if k % per != per - 1 and k != last else "")
                     for k, (entry, pad) in enumerate(entries[i:i + per], i))
             for i in range(0, len(entries), per)]
    return " ".join(("$[" if k == 0 else "$\\;") + line + "$" for k, line in enumerate(lines))


def tex_width(tex: str) -> float:
    """A formula's estimated width in pt: its visible characters (commands, braces,
    scripts' markers left out; a fraction counts both its parts, so this errs wide)."""
    text = re.sub(r"\\(left|right|frac|sqrt|mathrm|[bB]igl|[bB]igr|[bB]ig|quad)(?![A-Za-z])", "", tex)
    text = re.sub(r"\\[A-Za-z]+", "x", text)  # a command (\\mu, \\cdot) is one sign
    spaced = len(re.findall(r"(?<!\s)\s+[-+=]|(?<=[^{(\[^_\s])[-+=]", text))  # a binary sign's spaces: 1.5 signs more
    return MATH_CHAR * (len(re.sub(r"[{}^_&\s]", "", text)) + 1.5 * spaced)


def form_pieces(expr: sympy.Expr, printer: "sympy.printing.latex.LatexPrinter") -> list[str]:
    """An exact form as TeX pieces with a line break allowed between any two: the terms
    of a sum (``+ t``, ``- t``); a quotient ``n / d`` written ``n \\Big/ \\Bigl(d\\Bigr)``
    with the sums in it so split; a square root of a sum as ``\\Bigl(...\\Bigr)^{1/2}``.
    Fixed-size delimiters (``\\Bigl``, ``\\Bigr``) may open on one line and close on
    another; the value is the same expression (SymPy's term order)."""
    def group(x, open_, close):
        return [open_] + form_pieces(x, printer) + [close]

    def factors(x):
        out = []
        for f in (x.as_ordered_factors() if x.is_Mul else [x]):
            if f.is_Add:
                out += group(f, "\\Bigl(", "\\Bigr)")
            elif f.is_Pow and f.base.is_Add:
                out += group(f.base, "\\Bigl(", "\\Bigr)^{" + printer._print(f.exp) + "}")
            else:
                out.append(printer._print(f))
        return out

    if expr.is_Add:
        pieces = []
        for i, term in enumerate(printer._as_ordered_terms(expr, order=None)):
            sign = "" if i == 0 else "+ "
            if i and term.could_extract_minus_sign():
                sign, term = "- ", -term
            text = printer._print(term)
            if printer._needs_add_brackets(term):
                text = f"\\left({text}\\right)"
            pieces.append(sign + text)
        return pieces
    if expr.is_Pow and expr.base.is_Add and expr.exp == sympy.Rational(1, 2):
        return group(expr.base, "\\Bigl(", "\\Bigr)^{1/2}")
    numerator, denominator = sympy.fraction(expr)
    if denominator != 1 and (expr.has(sympy.Add)):
        top = group(numerator, "\\Bigl(", "\\Bigr)") if numerator.is_Add else factors(numerator)
        bottom = group(denominator, "\\Bigl(", "\\Bigr)") if denominator.is_Add \
            else ["\\Bigl("] + factors(denominator) + ["\\Bigr)"]
        return top + ["\\Big/"] + bottom
    if expr.is_Mul:
        return factors(expr)
    return [printer._print(expr)]


def form_lines(expr: sympy.Expr, names: dict, width: float = FORM_WIDTH) -> list[str]:
    """An exact form as TeX lines no wider than ``width`` (estimated, see
    :func:`tex_width`): SymPy's printing when it fits, else :func:`form_pieces` filled
    greedily into lines. A single piece wider than ``width`` stays whole."""
    from sympy.printing.latex import LatexPrinter

    printer = LatexPrinter({"symbol_names": names})
    whole = printer.doprint(expr)
    if tex_width(whole) <= width:
        return [whole]
    lines: list[str] = []
    for piece in form_pieces(expr, printer):
        if lines and tex_width(lines[-1] + piece) <= width:
            lines[-1] += " " + piece
        else:
            lines.append(piece)
    return lines


@dataclass
class Column:
    """A table column as LaTeX: its ``tabular`` spec, header, estimated width (pt, with its
    padding), kind (see :class:`~derive.render_doc.TableView`) and, for vectors, layout."""

    spec: str
    head: str
    width: float
    kind: str
    layout: VectorLayout | None = None

    @property
    def lines(self) -> int:
        """The lines a cell of this column takes: more than one for a broken vector."""
        if self.layout is None or not self.layout.per_line:
            return 1
        return -(-len(self.layout.widths) // self.layout.per_line)


def key_columns(kinds: list[str]) -> list[int]:
    """The columns each group of a split table repeats: those before the first number or
    vector column (token, id), or the first column alone when there are more than two."""
    first = next((j for j, k in enumerate(kinds) if k in ("number", "vector")), len(kinds))
    return list(range(first)) if 0 < first <= 2 else [0]


def column_groups(widths: list[float], keys: list[int], budget: float) -> list[list[int]]:
    """Split columns (estimated ``widths``) into groups no wider than ``budget``, each led
    by the ``keys`` columns, in order, as R and pandas print a wide frame; a column wider
    than the budget alone stays whole in its group."""
    base = sum(widths[k] for k in keys)
    groups, current, width = [], [], base
    for j in range(len(widths)):
        if j in keys:
            continue
        if current and width + widths[j] > budget:
            groups.append(keys + current)
            current, width = [], base
        current.append(j)
        width += widths[j]
    return groups + [keys + current] if current or not groups else groups


class LatexRenderer(DocumentRenderer):
    """The LaTeX printer of the document view (see :mod:`derive.render_doc`)."""

    output = "latex"
    target = "latex"
    minus = "-"
    row_limit = ROW_LIMIT

    def document(self, views: list[StepView], standalone: bool) -> str:
        title, opening = self.heading()
        body = "\n\n".join([STEP_COUNTER] + [self.step(v) for v in views])
        if not standalone:
            needs = "\n".join("% " + line for line in PACKAGES.splitlines())
            sizes = "\n".join("%   " + line for line in SIZES.splitlines())
            return (f"% derive: {escape(title)} -- {self.text(opening)}\n"
                    f"% This fragment needs, in the preamble:\n{needs}\n"
                    f"% Its tables and notes are set at \\small and \\footnotesize; in an 11 pt book, these keep\n"
                    f"% sub- and superscripts at 8 pt at the least:\n{sizes}\n\n{body}\n")
        head = f"\\section*{{{escape(title)}}}\n{self.text(opening)}\n\n"
        return STANDALONE % {"packages": PACKAGES, "sizes": SIZES, "body": head + body}

    def step_frame(self, view: StepView, body: list[str]) -> str:
        heading = (f"\\subsection*{{Step {view.number}. {self.text(view.words.title)}}}"
                   f"\\setcounter{{derivestep}}{{{view.number - 1}}}\\refstepcounter{{derivestep}}"
                   f"\\label{{{self.step_label(view)}}}")
        return "\n\n".join([heading] + body)

    def step_label(self, view: StepView) -> str:
        """A step's ``\\label``, unique in a book of several cases and steps:
        ``derive:CASE:KEY`` (``derive:cat-climbed:attention``; a key that occurs again in
        the case is ``KEY-2``, ...), the case's name kept to letters, digits and ``-``."""
        case = re.sub(r"[^A-Za-z0-9-]", "-", self.derivation.case.name)
        return f"derive:{case}:{view.anchor}"

    def table(self, view: TableView) -> str:
        """A booktabs table at ``\\small`` (never scaled): numbers aligned on the point
        (siunitx ``S`` columns, and the entries of a vector column padded to one layout,
        see :func:`vector_layout`); a vector too long for the line broken after a comma;
        a table wider than the line split into groups of columns, each repeating the key
        columns (token, id); a long one cut into parts of :data:`ROWS_PER_PART` lines. A
        summarised table's gap row spans the table."""
        columns = [self.column_layout(view, j) for j in range(len(view.columns))]
        keys = key_columns(view.kinds)
        groups = column_groups([c.width for c in columns], keys, TABLE_WIDTH)
        title = self.label(view.title) if view.title else ""
        lines = []
        for g, group in enumerate(groups):
            per_part = ROWS_PER_PART // max(columns[j].lines for j in group)
            for start in range(0, max(len(view.rows), 1), per_part):
                # Each part is a minipage (its title and rows stay together on one page).
                rows = view.rows[start:start + per_part]
                first = not g and not start
                lines += ["\\begin{center}", "\\begin{minipage}{\\linewidth}\\centering\\small"]
                lines.append(PART % {"continued": "" if first else "continued, ", "first": start + 1,
                                     "last": start + len(rows),
                                     "columns": " ".join(str(j + 1) for j in group),
                                     "keys": len([j for j in group if j in keys]) if g else 0})
                if title:
                    lines.append(f"\\textbf{{{title}}}{'' if first else ' (continued)'}\\par\\smallskip")
                lines += [f"\\begin{{tabular}}{{{' '.join(columns[j].spec for j in group)}}}", "\\toprule",
                          " & ".join(columns[j].head for j in group) + " \\\\", "\\midrule"]
                for row in rows:
                    if row and row[0].kind == "gap":
                        lines.append(f"\\multicolumn{{{len(group)}}}{{c}}{{{self.gap_text(row[0])}}} \\\\")
                    else:
                        lines.append(" & ".join(self.table_cell(row[j], columns[j]) for j in group) + " \\\\")
                lines += ["\\bottomrule", "\\end{tabular}", "\\end{minipage}", "\\end{center}"]
        return "\n".join(lines + self.annotations(view.notes, view.exact))

    def column_layout(self, view: TableView, j: int) -> "Column":
        """Column ``j``'s spec, header and estimated width (see :class:`Column`)."""
        kind = view.kinds[j]
        cells = [row[j] for row in view.rows if j < len(row) and row[j].kind != "gap"]
        head = self.label(view.columns[j])
        head_width = text_width(plain_label(view.columns[j]))
        if kind == "number":
            numbers = [c.numbers[0] for c in cells if c.kind == "number"]
            texts = [n.text for n in numbers if is_number(n.text)]
            opts = [f"table-format={table_format(texts)}", "retain-negative-zero", "group-digits=none"]
            longest = max((n.mark for n in numbers), key=len, default="")
            if longest:
                opts.append(f"table-space-text-post={{\\textsuperscript{{{'m' * len(longest)}}}}}")
            width = max([number_width(t) for t in texts] + [text_width(n.text) for n in numbers
                                                             if not is_number(n.text)]
                        + [text_width(c.text) for c in cells if c.kind != "number"], default=0)
            width += MARK * len(longest)
            return Column("S[" + ", ".join(opts) + "]", "{" + head + "}", max(width, head_width) + PAD, kind)
        if kind == "vector":
            layout = vector_layout([c.numbers for c in cells if c.kind == "vector"])
            size = len(layout.widths)
            width = sum(layout.widths) + COMMA * (size - 1) + 2 * BRACKET
            if width > VECTOR_WIDTH:  # broken over lines, every entry in the widest one's layout
                layout = uniform(layout)
                entry = layout.widths[0] + COMMA
                lines = -(-size // max(1, int((VECTOR_WIDTH - 2 * BRACKET) // entry)))
                layout = replace(layout, per_line=-(-size // lines))
                width = entry * layout.per_line + 2 * BRACKET
                spec = f">{{\\raggedright\\arraybackslash}}p{{{width + 4:.0f}pt}}"
            else:
                spec = "l"
            return Column(spec, head, max(width, head_width) + PAD, kind, layout)
        texts = [c.text for c in cells]
        width = max([text_width(t) * (TT_CHAR / CHAR if c.kind == "piece" else 1) for c, t in zip(cells, texts)],
                    default=0)
        return Column("r" if kind == "integer" else "l", head, max(width, head_width) + PAD, kind)

    def gap_text(self, cell: Cell) -> str:
        """The gap row of a summarised table: its sentence (how many rows are left out, see
        :func:`derive.render_doc.omitted_sentence`), the flag in typewriter type."""
        return self.prose(cell.text).replace("-{}-all-rows", "\\texttt{-{}-all-rows}")

    def form_tex(self, form, names: dict) -> str:
        """An exact form, broken over the rows of the alignment when it is long: the
        further lines ``&\\quad ...`` (see :func:`form_lines`)."""
        return " \\\\\n&\\quad ".join(form_lines(form, names))

    def display(self, tex_math: str) -> str:
        return "\\[\n" + tex_math + "\n\\]"

    def exact_display(self, forms: list[tuple[str, str]]) -> str:
        """Exact forms in ``align*`` blocks that may break across pages (a long list would
        not fit one): rows of short forms side by side in one block, rows of one form
        (broken over lines when long) in another (in one block a long form would widen the
        columns of the rows of three short forms beside it past the line)."""
        blocks: list[list[str]] = []
        for row in self.exact_rows(forms):
            if blocks and (row.count("&=") == 1) == (blocks[-1][-1].count("&=") == 1):
                blocks[-1].append(row)
            else:
                blocks.append([row])
        return "{\\allowdisplaybreaks\n" + "\n".join(
            "\\begin{align*}\n" + " \\\\\n".join(rows) + "\n\\end{align*}" for rows in blocks) + "}"

    def table_cell(self, cell: Cell, column: "Column") -> str:
        """A cell in ``column``: a bare number in an ``S`` column, anything else there in
        braces (siunitx leaves it as it is); a vector as math padded to the column's layout."""
        if column.kind == "number" and cell.kind == "number":
            n = cell.numbers[0]
            if is_number(n.text):
                return n.text + (f"{{\\textsuperscript{{{n.mark}}}}}" if n.mark else "")
            return "{" + self.number_text(n) + "}"
        if cell.kind == "vector":
            if column.layout is None:
                return "$" + self.value_tex(cell) + "$"
            return vector_tex(cell.numbers, column.layout)
        text = self.cell_text(cell)
        return "{" + text + "}" if column.kind == "number" else text

    def notes(self, notes) -> str:
        """Table notes: one small paragraph per note, led by its mark."""
        return ("{\\footnotesize\\sloppy\n"
                + "\n".join((f"\\textsuperscript{{{m}}}\\," if m else "") + f"{self.rich(t)}\\par" for m, t in notes)
                + "\n}")

    def prose(self, text: str) -> str:
        return escape(text)

    def inline_math(self, tex_math: str) -> str:
        return f"${tex_math}$"

    def piece(self, piece: str) -> str:
        return "\\texttt{" + escape(piece) + "}"

    def mark(self, mark: str) -> str:
        return f"\\textsuperscript{{{mark}}}"


def render_latex(derivation, fmt, steps=None, *, standalone: bool = False, **options) -> str:
    """The LaTeX of ``steps`` (default: all) of ``derivation`` under ``fmt``: a fragment,
    or with ``standalone`` a document that compiles alone with pdflatex. ``options``:
    ``carry``, ``exact``, ``templates`` (see :class:`~derive.render_doc.DocumentRenderer`)."""
    return LatexRenderer(derivation, fmt, **options).render(steps, standalone)
