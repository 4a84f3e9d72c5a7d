"""The worked example as Markdown with math for KaTeX or MathJax.

One section per step (``## Step N. Title``), tables as GitHub-flavoured Markdown tables
(numbers right-aligned, so fixed places line up on the point), equations as one display
block with ``aligned``, last-digit notes under each table. The math delimiters are chosen
by ``math``: ``dollars`` (``$...$`` and ``$$...$$``, the default of GitHub, Pandoc and
Jupyter) or ``brackets`` (``\\(...\\)`` and ``\\[...\\]``). Formulas never contain ``|``,
which would split a table cell (``\\mid`` is used instead).
"""

from __future__ import annotations

from .render_doc import DocumentRenderer, StepView, TableView
from .rounding import MINUS

DELIMITERS = {"dollars": ("$", "$", "$$", "$$"), "brackets": ("\\(", "\\)", "\\[", "\\]")}
MARKDOWN_SPECIALS = "\\`*_[]<>|"


class MarkdownRenderer(DocumentRenderer):
    """The Markdown printer of the document view (see :mod:`derive.render_doc`).

    Raises:
        ValueError: for a ``math`` other than ``dollars`` or ``brackets``.
    """

    output = "markdown"
    target = "katex"
    minus = MINUS

    def __init__(self, derivation, fmt, *, math: str = "dollars", **options):
        if math not in DELIMITERS:
            raise ValueError(f"unknown math delimiters {math!r}; expected dollars or brackets")
        super().__init__(derivation, fmt, **options)
        self.delimiters = DELIMITERS[math]
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

    def display(self, tex_math: str) -> str:
        """Display math on lines of its own."""
        _, _, left, right = self.delimiters
        return f"{left}\n{tex_math}\n{right}"

    def prose(self, text: str) -> str:
        return "".join("\\" + ch if ch in self.specials else ch for ch in text)

    def inline_math(self, tex_math: str) -> str:
        left, right, _, _ = self.delimiters
        return f"{left}{tex_math}{right}"

    def piece(self, piece: str) -> str:
        """A piece as a code span (Markdown shows HTML in it as text); in a table cell its
        ``|`` is written ``\\|``, which GitHub's tables read as a pipe inside the cell."""
        fence = "``" if "`" in piece else "`"
        if self.in_table:
            piece = piece.replace("|", "\\|")
        return f"{fence}{piece}{fence}"

    def mark(self, mark: str) -> str:
        return f"<sup>{mark}</sup>"


def render_markdown(derivation, fmt, steps=None, *, standalone: bool = True, math: str = "dollars",
                    **options) -> str:
    """The Markdown of ``steps`` (default: all) of ``derivation`` under ``fmt``; with
    ``standalone`` (the default) under a title and an opening sentence. ``math``:
    ``dollars`` or ``brackets``; ``options``: ``carry``, ``exact``, ``templates``."""
    return MarkdownRenderer(derivation, fmt, math=math, **options).render(steps, standalone)
