"""The worked example as Markdown, with its math written so that a given renderer keeps it.

One section per step (``## Step N. Title``), tables as GitHub-flavoured Markdown tables
(numbers right-aligned, so fixed places line up on the point), equations as one display
block with ``aligned``, last-digit notes under each table. Formulas never contain ``|``,
which would split a table cell (``\\mid`` is used instead).

A Markdown processor that knows no math reads a formula's backslashes as escapes (``\\\\``
becomes ``\\``, ``\\{`` becomes ``{``) and its ``_`` and ``*`` as emphasis, so how a formula
is written depends on what renders the page, the ``flavor``:

``pandoc`` (the default, and derive's output before there were flavours)
    the TeX as it is, between ``$...$`` and ``$$...$$`` (Pandoc's ``tex_math_dollars``;
    also Jupyter, MathJax-aware processors and markdown-it's math plugins), or with
    ``math="brackets"`` between ``\\(...\\)`` and ``\\[...\\]`` (Pandoc's
    ``tex_math_single_backslash``).
``katex``
    for a plain CommonMark/GFM processor whose HTML KaTeX's auto-render then typesets:
    every backslash of the TeX and every ASCII punctuation character Markdown would act on
    is backslash-escaped (CommonMark gives the character itself back), and a display line
    that would open a list or a heading has its first character escaped, so the HTML
    holds the TeX unchanged. The delimiters are auto-render's own defaults, ``\\(...\\)``
    and ``\\[...\\]`` (written ``\\\\(`` ... in the Markdown), or with ``math="dollars"``
    ``$...$`` and ``$$...$$`` (auto-render with ``$`` added to its delimiters).
``github``
    GitHub's math: inline ``$`...`$`` (a code span, which Markdown leaves alone) and
    display math in a fenced ````` ```math ````` block; dollars only.
"""

from __future__ import annotations

import re

from .name import code_span
from .render_doc import DocumentRenderer, StepView, TableView
from .rounding import MINUS

# The delimiters, (inline left, inline right, display left, display right), as written in the Markdown.
DELIMITERS = {("pandoc", "dollars"): ("$", "$", "$$", "$$"),
              ("pandoc", "brackets"): ("\\(", "\\)", "\\[", "\\]"),
              ("katex", "dollars"): ("$", "$", "$$", "$$"),
              ("katex", "brackets"): ("\\\\(", "\\\\)", "\\\\[", "\\\\]"),
              ("github", "dollars"): ("$`", "`$", "```math", "```")}
FLAVORS = {"pandoc": ("dollars", "brackets"), "katex": ("brackets", "dollars"), "github": ("dollars",)}
"""Each flavour's math delimiters, its default first."""

MARKDOWN_SPECIALS = "\\`*_[]<>|"
COMMONMARK_ACTIVE = re.compile(r"[\\`*_\[\]<>&!~|#$]")  # punctuation CommonMark/GFM may act on inside a paragraph
# The start of a line that CommonMark could read as a block: a bullet (- +), a setext underline
# or thematic break (= -), an ordered list item (1. or 1) before a space).
BLOCK_START = re.compile(r"^([ \t]*)(?:([-+=])|(\d{1,9})([.)])(?=[ \t]|$))", re.M)


def katex_escaped(tex_math: str, display: bool = False) -> str:
    """``tex_math`` written so that a CommonMark (or GFM) processor gives it back unchanged
    in its HTML: each character of :data:`COMMONMARK_ACTIVE` backslash-escaped (CommonMark
    0.31, section 2.4: a backslash before ASCII punctuation gives the character), and for
    ``display`` math, whose lines stand alone, a line starting like a list item, a thematic
    break or a setext underline (:data:`BLOCK_START`) escaped there too.
    ``\\frac{a}{b} \\\\`` becomes ``\\\\frac{a}{b} \\\\\\\\``."""
    text = COMMONMARK_ACTIVE.sub(lambda m: "\\" + m.group(), tex_math)
    if not display:
        return text
    return BLOCK_START.sub(lambda m: m.group(1) + ("\\" + m.group(2) if m.group(2) else m.group(3) + "\\" + m.group(4)),
                           text)


class MarkdownRenderer(DocumentRenderer):
    """The Markdown printer of the document view (see :mod:`derive.render_doc`), for the
    renderer ``flavor`` (``pandoc``, ``katex`` or ``github``, see the module docstring)
    with the delimiters ``math`` (``dollars`` or ``brackets``; default the flavour's first
    in :data:`FLAVORS`).

    Raises:
        ValueError: for an unknown flavour, or delimiters the flavour does not read.
    """

    output = "markdown"
    target = "katex"
    minus = MINUS

    def __init__(self, derivation, fmt, *, flavor: str = "pandoc", math: str | None = None, **options):
        if flavor not in FLAVORS:
            raise ValueError(f"unknown Markdown flavour {flavor!r}; expected one of {', '.join(FLAVORS)}")
        math = math or FLAVORS[flavor][0]
        if math not in FLAVORS[flavor]:
            raise ValueError(f"the {flavor} flavour writes math between {' or '.join(FLAVORS[flavor])}, not {math}")
        super().__init__(derivation, fmt, **options)
        self.flavor = flavor
        self.delimiters = DELIMITERS[flavor, math]
        self.specials = MARKDOWN_SPECIALS + ("$" if math == "dollars" else "")
        self.in_table = False

    def document(self, views: list[StepView], standalone: bool) -> str:
        title, opening = self.heading()
        body = "\n\n".join(self.step(v) for v in views)
        head = f"# {self.prose(title)}\n\n{self.text(opening)}\n\n" if standalone else ""
        return head + body + "\n"

    def step_frame(self, view: StepView, body: list[str]) -> str:
        return "\n\n".join([f"## Step {view.number}. {self.text(view.words.title)}"] + body)

    def table(self, view: TableView) -> str:
        """A Markdown table, its title in bold above it and its notes below."""
        align = {"number": "--:", "integer": "--:"}
        lines = [f"**{self.label(view.title)}**", ""] if view.title else []
        self.in_table = True  # a piece's | is escaped inside its code span (GFM tables)
        lines.append("| " + " | ".join(self.label(c) for c in view.columns) + " |")
        lines.append("|" + "|".join(align.get(k, ":--") for k in view.kinds) + "|")
        lines += ["| " + " | ".join(self.cell_text(c) for c in row) + " |" for row in view.rows]
        self.in_table = False
        return "\n\n".join(["\n".join(lines)] + self.annotations(view.notes, view.exact))

    def notes(self, notes) -> str:
        """One line per note, led by its mark (a hard line break between them)."""
        return "  \n".join(f"{self.mark(m)} {self.rich(t)}" for m, t in notes)

    def math_text(self, tex_math: str, display: bool = False) -> str:
        """A formula's TeX as the flavour writes it: escaped for ``katex``; for ``github``
        a backtick (a piece's, in ``\\texttt``) spelled ``{\\char"60}``, since GitHub's
        inline math is a code span that a backtick would end."""
        if self.flavor == "katex":
            return katex_escaped(tex_math, display)
        return tex_math.replace("`", '{\\char"60}') if self.flavor == "github" else tex_math

    def display(self, tex_math: str) -> str:
        """Display math on lines of its own (a fenced block for ``github``)."""
        _, _, left, right = self.delimiters
        return f"{left}\n{self.math_text(tex_math, display=True)}\n{right}"

    def prose(self, text: str) -> str:
        return "".join("\\" + ch if ch in self.specials else ch for ch in text)

    def inline_math(self, tex_math: str) -> str:
        left, right, _, _ = self.delimiters
        return f"{left}{self.math_text(tex_math)}{right}"

    def piece(self, piece: str) -> str:
        """A piece as a code span (Markdown shows HTML in it as text); in a table cell its
        ``|`` is written ``\\|``, which GitHub's tables read as a pipe inside the cell.
        A piece with backticks is fenced by a longer run of them, and padded with a space
        each side when it starts or ends with a backtick (or with spaces), which
        CommonMark strips (spec 0.31, 6.1 Code spans): ```x``` is ``` `` `x` `` ```."""
        span = code_span(piece)
        return span.replace("|", "\\|") if self.in_table else span

    def mark(self, mark: str) -> str:
        return f"<sup>{mark}</sup>"


def render_markdown(derivation, fmt, steps=None, *, standalone: bool = True, flavor: str = "pandoc",
                    math: str | None = None, **options) -> str:
    """The Markdown of ``steps`` (default: all) of ``derivation`` under ``fmt``; with
    ``standalone`` (the default) under a title and an opening sentence. ``flavor``:
    ``pandoc``, ``katex`` or ``github``; ``math``: ``dollars`` or ``brackets`` (default
    the flavour's); ``options``: ``carry``, ``exact``, ``templates``. Raises
    :class:`ValueError` as :class:`MarkdownRenderer` does."""
    return MarkdownRenderer(derivation, fmt, flavor=flavor, math=math, **options).render(steps, standalone)
