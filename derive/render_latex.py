"""The worked example as LaTeX: booktabs tables, numbers aligned on the decimal point
(siunitx ``S`` columns), equations in ``aligned``, last-digit notes under each table.

Without ``standalone`` the output is a fragment to ``\\input`` into a chapter whose
preamble loads :data:`PACKAGES` (the fragment's first lines say so); with it, a whole
``article`` that compiles alone with pdflatex. Steps are ``\\subsection*`` headings,
labelled ``derive:KEY`` for cross-references.
"""

from __future__ import annotations

import re

from .notation import SPACE, is_number
from .render_doc import Cell, DocumentRenderer, StepView, TableView

PACKAGES = r"""\usepackage[T1]{fontenc}
\usepackage{lmodern}
\usepackage{amsmath}
\usepackage{booktabs}
\usepackage{siunitx}
\usepackage{adjustbox}"""

STANDALONE = r"""\documentclass[11pt]{article}
%(packages)s
\usepackage[a4paper,margin=2cm]{geometry}
\setlength{\parindent}{0pt}
\setlength{\parskip}{0.5\baselineskip}
\begin{document}
%(body)s
\end{document}
"""

# Characters of running text that pdflatex (T1, utf8) needs spelled out.
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
ROWS_PER_PART = 40  # a longer table is cut into parts that each fit a page
CONTINUED = "% derive: the table above, continued"
NUMBER_PARTS = re.compile(r"^(-?)(\d+)(?:\.(\d+))?(?:e([-+]?)(\d+))?$")


def escape(text: str) -> str:
    """Running text for pdflatex: TeX's special characters and the Unicode signs derive
    prints (minus, ellipsis, middle dot, ...) spelled as commands; other characters
    outside Latin-1 are written ``[U+XXXX]`` (T1 fonts have no glyph for them)."""
    out = []
    for ch in text:
        if ch in TEXT_ESCAPES:
            out.append(TEXT_ESCAPES[ch])
        elif ord(ch) < 0x250 or ch in "\u2013\u2014\u2018\u2019\u201c\u201d":
            out.append(ch)
        else:
            out.append(f"[U+{ord(ch):04X}]")
    return "".join(out)


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


class LatexRenderer(DocumentRenderer):
    """The LaTeX printer of the document view (see :mod:`derive.render_doc`)."""

    output = "latex"
    target = "latex"
    minus = "-"

    def document(self, views: list[StepView], standalone: bool) -> str:
        title, opening = self.heading()
        body = "\n\n".join(self.step(v) for v in views)
        if not standalone:
            needs = "\n".join("% " + line for line in PACKAGES.splitlines())
            return (f"% derive: {escape(title)} -- {self.text(opening)}\n"
                    f"% This fragment needs, in the preamble:\n{needs}\n\n{body}\n")
        head = f"\\section*{{{escape(title)}}}\n{self.text(opening)}\n\n"
        return STANDALONE % {"packages": PACKAGES, "body": head + body}

    def step_frame(self, view: StepView, body: list[str]) -> str:
        heading = f"\\subsection*{{Step {view.number}. {self.text(view.words.title)}}}\\label{{derive:{view.anchor}}}"
        return "\n\n".join([heading] + body)

    def table(self, view: TableView) -> str:
        """A booktabs table in a ``center``, scaled down to the line width when wider."""
        specs, heads = [], []
        for j, (column, kind) in enumerate(zip(view.columns, view.kinds)):
            cells = [row[j] for row in view.rows if j < len(row)]
            if kind == "number":
                numbers = [c.numbers[0] for c in cells if c.kind == "number"]
                opts = [f"table-format={table_format([n.text for n in numbers])}", "retain-negative-zero",
                        "group-digits=none"]
                longest = max((n.mark for n in numbers), key=len, default="")
                if longest:
                    opts.append(f"table-space-text-post={{\\textsuperscript{{{'m' * len(longest)}}}}}")
                specs.append("S[" + ", ".join(opts) + "]")
                heads.append("{" + self.label(column) + "}")
            else:
                specs.append("r" if kind == "integer" else "l")
                heads.append(self.label(column))
        lines = []
        title = self.label(view.title) if view.title else ""
        for start in range(0, max(len(view.rows), 1), ROWS_PER_PART):
            # Each part is a minipage (its title and rows stay together on one page).
            lines += ["\\begin{center}", "\\begin{minipage}{\\linewidth}\\centering"]
            if start:
                lines.append(CONTINUED)
            if title:
                lines.append(f"\\textbf{{{title}}}{' (continued)' if start else ''}\\par\\smallskip")
            lines += ["\\begin{adjustbox}{max width=\\linewidth}", f"\\begin{{tabular}}{{{' '.join(specs)}}}",
                      "\\toprule", " & ".join(heads) + " \\\\", "\\midrule"]
            lines += [" & ".join(self.table_cell(c, k) for c, k in zip(row, view.kinds)) + " \\\\"
                      for row in view.rows[start:start + ROWS_PER_PART]]
            lines += ["\\bottomrule", "\\end{tabular}", "\\end{adjustbox}", "\\end{minipage}", "\\end{center}"]
        return "\n".join(lines + self.annotations(view.notes, view.exact))

    def display(self, tex_math: str) -> str:
        return "\\[\n" + tex_math + "\n\\]"

    def exact_display(self, forms: list[tuple[str, str]]) -> str:
        """Exact forms in an ``align*`` that may break across pages (a long list would
        not fit one)."""
        return ("{\\allowdisplaybreaks\n\\begin{align*}\n" + " \\\\\n".join(self.exact_rows(forms))
                + "\n\\end{align*}}")

    def table_cell(self, cell: Cell, kind: str) -> str:
        """A cell in a column of ``kind``: a bare number in an ``S`` column, anything else
        there in braces (siunitx leaves it as it is)."""
        if kind == "number" and cell.kind == "number":
            n = cell.numbers[0]
            if is_number(n.text):
                return n.text + (f"{{\\textsuperscript{{{n.mark}}}}}" if n.mark else "")
            return "{" + self.number_text(n) + "}"
        if cell.kind == "vector":
            return "$" + self.value_tex(cell) + "$"
        text = self.cell_text(cell)
        return "{" + text + "}" if kind == "number" else text

    def notes(self, notes) -> str:
        """Table notes: one small paragraph per note, led by its mark."""
        return ("{\\footnotesize\\sloppy\n"
                + "\n".join(f"\\textsuperscript{{{m}}}\\,{self.rich(t)}\\par" for m, t in notes) + "\n}")

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
