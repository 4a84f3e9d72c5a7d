"""What the LaTeX, Markdown and HTML renderers share: one view of the steps.

Every renderer prints the same :class:`~derive.steps.Step` objects through the same
:class:`~derive.cells.Printer` (so the numbers are the ones ``derive run`` prints, rounded
once). :class:`DocumentRenderer` turns each step into a :class:`StepView`: its number,
its title and words (the rule's, or an author's template's, see :mod:`derive.templates`),
its tables with every cell typed (a number, a vector of numbers, an integer, a vocabulary
piece, text) and every column typed for alignment, the last-digit notes of each table and
of the equations (from :meth:`Printer.notes <derive.cells.Printer.notes>`, marked a, b,
c...), and with ``exact`` the exact form of every quantity. A subclass prints the views:
``document`` (the whole output), ``step``, ``table``, and the three kinds of running text
(``prose``, ``inline_math``, ``piece``); the equations are one TeX ``aligned`` block that
all three print (:meth:`DocumentRenderer.aligned`).

Shared policy: a note is printed once per document (:meth:`DocumentRenderer.marked_once`);
a renderer with a :attr:`~DocumentRenderer.row_limit` (LaTeX: 16) summarises a longer table
as its first and last rows around a gap row that counts the rows left out
(:func:`elide_rows`, :func:`omitted_sentence`), and ``all_rows`` turns that off.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .cells import Printer, refs_of
from .derivation import Derivation
from .graph import is_exact
from .lazy import lazy
from .notation import label_spans, number_tex, spans, tex
from .formula import Chain
from .name import after_step, cell_piece, grad_of
from .name_parser import parse_name
from .printing import RichText, counted, latex, plain_label
from .rounding import Format
from .steps import HEAD_ROWS, TAIL_ROWS, Ref, Step, Table, Vec
from .templates import Templates, Words

sympy = lazy("sympy")  # for the exact forms (--exact) only: a page without them never loads SymPy

SHORT_FORM = 40  # TeX characters: an exact form shorter than this shares its row with others
NOTE_LIMIT = 8  # the notes a summarised table shows (the rest are counted, see omitted_notes)
MODE_WORDS = {"half-away": "half away from zero", "half-even": "half to even", "down": "toward zero",
              "floor": "down (floor)", "ceiling": "up (ceiling)"}


def describe(fmt: Format) -> str:
    """The rounding in words: ``3 places, half away from zero``."""
    amount = (f"{fmt.places} place{'s' if fmt.places != 1 else ''}" if fmt.places is not None
              else f"{fmt.sig} significant figure{'s' if fmt.sig != 1 else ''}")
    return f"{amount}, {MODE_WORDS[fmt.mode]}"


def mark_name(n: int) -> str:
    """The mark of the n-th note (1-based): a, b, ..., z, aa, ab, ..."""
    name = ""
    while n > 0:
        n, r = divmod(n - 1, 26)
        name = chr(ord("a") + r) + name
    return name


def marked(notes) -> tuple[dict[Ref, str], list[tuple[str, RichText]]]:
    """The marks of a table's notes (:class:`~derive.cells.Note`, in order): each noted
    quantity's mark (that of its first note, see :func:`mark_name`), and the notes as
    (mark, rich text) to print under the table."""
    marks: dict[Ref, str] = {}
    for n, note in enumerate(notes, 1):
        for ref in note.refs:
            marks.setdefault(ref, mark_name(n))
    return marks, [(mark_name(n), note.parts) for n, note in enumerate(notes, 1)]


def elide_rows(rows: list, limit: int | None, head: int = HEAD_ROWS, tail: int = TAIL_ROWS) -> tuple[list, int]:
    """A large table's summary: its first ``head`` and last ``tail`` rows when it has more
    than ``limit`` rows (``limit`` None: every row). Returns (rows shown, how many rows are
    left out between them); a table of up to ``limit`` rows is returned whole, with 0."""
    if limit is None or len(rows) <= max(limit, head + tail):
        return list(rows), 0
    return list(rows[:head]) + list(rows[len(rows) - tail:]), len(rows) - head - tail


def omitted_sentence(omitted: int) -> str:
    """The words of a summarised table's gap row: ``… 56 rows omitted; --all-rows prints them``."""
    return f"\u2026 {counted(omitted, 'row')} omitted; --all-rows prints {'them' if omitted != 1 else 'it'}"


def omitted_notes(omitted: int) -> RichText:
    """The last note of a summarised table that had more than :data:`NOTE_LIMIT` notes."""
    return [f"\u2026 {counted(omitted, 'more note')} on cells of the rows shown "
            f"{'are' if omitted != 1 else 'is'} omitted (those cells are not marked); --all-rows prints "
            f"{'them' if omitted != 1 else 'it'}."]


@dataclass
class Number:
    """One printed number (the Printer's text, the format's minus sign) and its note mark."""

    text: str
    mark: str = ""


@dataclass
class Cell:
    """One typed cell: ``number`` (one Number), ``vector`` (several), ``integer``,
    ``piece`` (a vocabulary piece, no backticks), ``math`` (plain notation, e.g. ``-inf``)
    or ``text``."""

    kind: str  # number, vector, integer, piece, math, text; gap (the row of a summarised table's gap)
    text: str = ""
    numbers: list[Number] = field(default_factory=list)


@dataclass
class TableView:
    """A table ready to print: ``kinds`` types each column (``number``: decimals to align
    on the point, possibly with a few text cells; ``integer``; ``vector``; ``text``);
    ``notes`` are (mark, rich text); ``exact`` are (name, exact form) pairs in TeX. A
    summarised table (see :func:`elide_rows`) has ``omitted`` rows left out at row index
    ``gap``, where ``rows`` holds one gap row (every cell of kind ``gap``, the first one
    saying how many rows are omitted, see :func:`omitted_sentence`); its notes are those of
    the rows shown."""

    title: str
    columns: list[str]
    kinds: list[str]
    rows: list[list[Cell]]
    notes: list[tuple[str, RichText]] = field(default_factory=list)
    exact: list[tuple[str, str]] = field(default_factory=list)
    omitted: int = 0
    gap: int | None = None


@dataclass
class EquationView:
    """``lhs = value``, lhs in the plain notation, or a Name or formula (see
    :class:`derive.steps.Equation`)."""

    lhs: object
    value: Cell


@dataclass
class StepView:
    """A step ready to print: its number in the worked example, title and words (marked
    text, or raw output when ``words.raw``), tables, equations with their notes and, with
    ``exact``, the exact forms of the equations' quantities."""

    number: int
    key: str
    words: Words
    tables: list[TableView]
    equations: list[EquationView]
    notes: list[tuple[str, RichText]] = field(default_factory=list)
    exact: list[tuple[str, str]] = field(default_factory=list)
    anchor: str = ""  # unique in the case: the key, then key-2, key-3 for later steps of that key


class DocumentRenderer:
    """Print a derivation's steps as a document (subclasses: LaTeX, Markdown, HTML).

    Args:
        derivation: the derived case.
        fmt: the rounding; its minus sign is replaced by the renderer's :attr:`minus`.
        carry: ``exact`` or ``printed`` (see :class:`derive.byhand.ByHand`).
        exact: also print every quantity's exact form (SymPy's LaTeX printer).
        templates: an author's words (:class:`~derive.templates.Templates`), or None.
        all_rows: print every row of a large table (default: a table longer than the
            renderer's :attr:`row_limit` shows its first and last rows, see :func:`elide_rows`).

    Raises:
        EvaluationError: when the case's forward pass is undefined.
    """

    output = ""  # the format's name for templates: latex, markdown, html
    target = "katex"  # the TeX dialect of its formulas (see derive.notation)
    minus = "-"  # the minus sign of numbers printed as text
    row_limit: int | None = None  # a longer table is summarised (None: never)

    def __init__(self, derivation: Derivation, fmt: Format, *, carry: str = "exact", exact: bool = False,
                 templates: Templates | None = None, all_rows: bool = False):
        self.derivation = derivation
        self.fmt = replace(fmt, minus=self.minus)
        self.printer = Printer(derivation, self.fmt, carry)
        self.exact = exact
        self.templates = templates
        if all_rows:
            self.row_limit = None
        self.noted: dict[tuple, int] = {}  # each note printed so far (its cells and words): its step
        self.numbers = {id(s): n for n, s in enumerate(derivation.steps, 1)}
        seen: dict[str, int] = {}
        self.anchors = {}  # each step's label: its key, key-2 for the second step with that key, ...
        for s in derivation.steps:
            seen[s.key] = seen.get(s.key, 0) + 1
            self.anchors[id(s)] = s.key if seen[s.key] == 1 else f"{s.key}-{seen[s.key]}"

    # ------------------------------------------------------------------ the whole output
    def render(self, steps: list[Step] | None = None, standalone: bool = True) -> str:
        """The document of ``steps`` (default: every step); ``standalone`` for a whole
        document, else a fragment to include in one."""
        self.noted = {}
        views = [self.step_view(s) for s in (self.derivation.steps if steps is None else steps)]
        return self.document(views, standalone)

    def document(self, views: list[StepView], standalone: bool) -> str:
        raise NotImplementedError

    def step(self, view: StepView) -> str:
        """One step: its frame (the numbered heading) around the words, the tables, the
        equations, their notes and, with ``exact``, the exact forms."""
        body = [self.words_block(view)] + [self.table(t) for t in view.tables]
        if view.equations:
            body.append(self.display(self.aligned(view)))
        body += self.annotations(view.notes, view.exact)
        return self.step_frame(view, [part for part in body if part])

    def annotations(self, notes: list[tuple[str, RichText]], exact: list[tuple[str, str]]) -> list[str]:
        """What follows a table or a step's equations: the notes, then the exact forms."""
        return ([self.notes(notes)] if notes else []) + ([self.exact_display(exact)] if exact else [])

    def exact_display(self, forms: list[tuple[str, str]]) -> str:
        """Exact forms as display math."""
        return self.display(self.exact_aligned(forms))

    def words_block(self, view: StepView) -> str:
        """The step's words as a paragraph."""
        return self.words(view)

    def heading(self) -> tuple[str, str]:
        """The document's title and its opening sentence (marked text)."""
        case = self.derivation.case
        return case.title, (f"The worked example of the case `{case.name}`, step by step: every number is "
                            f"correctly rounded to {describe(self.fmt)}.")

    # ------------------------------------------------------------------ views
    def step_view(self, step: Step) -> StepView:
        """The view of one step (see :class:`StepView`)."""
        eq_refs = [r for eq in step.equations for r in refs_of(eq.rhs)]
        number = self.numbers.get(id(step), 0)
        tables = [self.table_view(t, number) for t in step.tables]  # printed before the equations' notes
        marks, notes = self.marked_once(self.printer.notes(eq_refs), number)
        equations = [EquationView(eq.lhs, self.cell(eq.rhs, False, marks)) for eq in step.equations]
        words = Words(step.title, step.words)
        if self.templates is not None:
            context = {"step": step, "number": number, "case": self.derivation.case, "fmt": self.fmt,
                       "eq": {plain_label(eq.lhs): self.printer.cell(eq.rhs) for eq in step.equations},
                       "value": self.value}
            words = self.templates.words(step.key, self.output, words, context)
        return StepView(number, step.key, words, tables, equations, notes,
                        self.exact_forms(eq_refs) if self.exact else [], self.anchors.get(id(step), step.key))

    def table_view(self, table: Table, number: int = 0) -> TableView:
        """The view of one table: rows in the printed order, cells and columns typed; a
        table longer than :attr:`row_limit` summarised (see :func:`elide_rows`), its notes
        and exact forms those of the rows shown, at most :data:`NOTE_LIMIT` notes. ``number`` is the step's (for
        :meth:`marked_once`)."""
        shown, omitted = elide_rows(self.printer.rows(table), self.row_limit)
        refs = [r for row in shown for c in row for r in refs_of(c)]
        notes = self.printer.notes(refs)
        cut = len(notes) - NOTE_LIMIT if omitted and len(notes) > NOTE_LIMIT else 0
        marks, notes = self.marked_once(notes[:len(notes) - cut], number)
        if cut:
            notes.append(("", omitted_notes(cut)))
        rows = [[self.cell(c, table.short_exact, marks) for c in row] for row in shown]
        kinds = [column_kind([row[j] for row in rows if j < len(row)]) for j in range(len(table.columns))]
        gap = None
        if omitted:
            gap = HEAD_ROWS
            rows.insert(gap, [Cell("gap", omitted_sentence(omitted))]
                        + [Cell("gap", "\u22ee") for _ in table.columns[1:]])
        return TableView(table.title, list(table.columns), kinds, rows, notes,
                         self.exact_forms(refs) if self.exact else [], omitted, gap)

    def cell(self, cell, short_exact: bool, marks: dict[Ref, str]) -> Cell:
        """Type one cell of the step model (a Ref, a Vec, an int or a str)."""
        if isinstance(cell, Ref):
            return Cell("number", numbers=[Number(self.printer.number(cell, short_exact), marks.get(cell, ""))])
        if isinstance(cell, Vec):
            return Cell("vector", numbers=[Number(self.printer.number(r, short_exact), marks.get(r, ""))
                                           for r in cell.refs])
        if isinstance(cell, int) and not isinstance(cell, bool):
            return Cell("integer", text=str(cell))
        text = str(cell)
        if (piece := cell_piece(text)) is not None:
            return Cell("piece", text=piece)
        if text == "-inf":
            return Cell("math", text=text)
        return Cell("text", text=text)

    def marked_once(self, notes, number: int) -> tuple[dict[Ref, str], list[tuple[str, RichText]]]:
        """:func:`marked`, with each note printed once per document: a note already printed
        (the same cells, the same words, e.g. a softmax row's sum under both tables of a
        head, or a row's note under its table and again under the step's equations) is
        left out, and its cells are not marked again. ``number`` is the current step's
        (kept with each note printed, for a template or a renderer that points back)."""
        fresh = []
        for note in notes:
            key = (tuple(note.refs), note.text)
            if key not in self.noted:
                self.noted[key] = number
                fresh.append(note)
        return marked(fresh)

    def value(self, name: str) -> str:
        """The printed value of a quantity by the chapter's name (for templates):
        one number, or ``[a, b, ...]`` for a row.

        Raises:
            DeriveError: when no quantity has that name (see :func:`derive.names.find`).
        """
        from .names import find

        refs = find(self.derivation, name)
        texts = [self.printer.number(r) for r in refs]
        return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"

    # ------------------------------------------------------------------ exact forms
    def exact_forms(self, refs) -> list[tuple[str, str]]:
        """(name, exact form) in TeX for each quantity whose exact form is known: a
        rational, or a forward quantity's closed form or definition (SymPy's printer)."""
        out = []
        for ref in dict.fromkeys(refs):
            form = self.exact_expr(ref)
            if form is None:
                continue
            names = {s: self.symbol_tex(s.name) for s in form.free_symbols}
            name = self.derivation.meta(ref).name
            if ref.phase == "grad":
                name = grad_of(name)
            elif ref.phase in ("updated", "after"):
                name = after_step(name)
            label, written = latex(name, self.target), self.form_tex(form, names)
            if written != label:  # (e^{s_{4,1}} = e^{s_{4,1}}, a name that is its own form, says nothing)
                out.append((label, written))
        return out

    def form_tex(self, form: sympy.Expr, names: dict) -> str:
        """An exact form as TeX (SymPy's printer; ``names``: each symbol's TeX). A renderer
        may break a long one over the rows of its alignment."""
        return sympy.latex(form, symbol_names=names)

    def symbol_tex(self, label: str) -> str:
        """A quantity's label in an exact form (a SymPy symbol named by the label) as TeX:
        its Name, read back by the parser, printed by :func:`derive.printing.latex`."""
        try:
            return latex(parse_name(label), self.target)
        except ValueError:
            return tex(label, self.target)

    def exact_expr(self, ref: Ref) -> sympy.Expr | None:
        """The exact value as a SymPy expression, or None where derive has no closed form
        (an irrational gradient, a quantity after the step)."""
        v = self.derivation.value(ref)
        if is_exact(v):
            return sympy.Rational(int(v.p), int(v.q))
        if ref.phase != "before":
            return None
        form = self.derivation.closed_form(ref.id)
        return self.derivation.definition(ref.id) if isinstance(form, sympy.Symbol) else form

    # ------------------------------------------------------------------ shared printing
    def text(self, marked: str) -> str:
        """Marked text (a step's title or words) in the output format."""
        return self._join(spans(marked))

    def label(self, label) -> str:
        """A column header or a table title in the output format: a Name or a formula as
        math (:func:`derive.printing.latex`), plain text split by
        :func:`derive.notation.label_spans`."""
        if not isinstance(label, str):
            return self.inline_math(latex(label, self.target))
        return self._join(label_spans(label))

    def _join(self, parts) -> str:
        out = []
        for kind, t in parts:
            if kind == "math":
                out.append(self.inline_math(tex(t, self.target)))
            elif kind == "piece":
                out.append(self.piece(t))
            else:
                out.append(self.prose(t))
        return "".join(out)

    def rich(self, parts: RichText) -> str:
        """Rich text (a note: prose strings and formulas) in the output format: the prose
        as prose, each formula as inline math printed by :func:`derive.printing.latex`."""
        return "".join(self.prose(p) if isinstance(p, str) else self.inline_math(latex(p, self.target))
                       for p in parts)

    def words(self, view: StepView) -> str:
        """The step's words in the output format (a raw template's output as it is)."""
        return view.words.words if view.words.raw else self.text(view.words.words)

    def aligned(self, view: StepView) -> str:
        """The step's equations as one TeX ``aligned`` block (without display delimiters),
        each ``lhs &= value`` with a formula's right side kept: ``u_{5} &= \\frac{x_{5} -
        \\mu}{\\sigma} = [...]``. Empty when the step has no equations."""
        lines = []
        for eq in view.equations:
            if isinstance(eq.lhs, str):
                left, _, rest = eq.lhs.partition(" = ")
                left, rest = tex(left, self.target), tex(rest, self.target) if rest else ""
            else:  # a Name, or a formula Chain(name, definition, ...)
                sides = eq.lhs.args if isinstance(eq.lhs, Chain) else (eq.lhs,)
                left = latex(sides[0], self.target, display=True)
                rest = latex(Chain(*sides[1:]), self.target, display=True) if len(sides) > 1 else ""
            lines.append(left + " &= " + (rest + " = " if rest else "") + self.value_tex(eq.value))
        if not lines:
            return ""
        return "\\begin{aligned}\n" + " \\\\\n".join(lines) + "\n\\end{aligned}"

    def exact_rows(self, forms: list[tuple[str, str]]) -> list[str]:
        """Exact forms as rows of an alignment, ``name &= form``: up to three short ones
        side by side (``... & name &= form``), a long one alone."""
        rows, row = [], []
        for name, form in forms:
            pair = f"{name} &= {form}"
            if len(form) > SHORT_FORM:
                rows += [" & ".join(row)] if row else []
                rows.append(pair)
                row = []
                continue
            row.append(pair)
            if len(row) == 3:
                rows.append(" & ".join(row))
                row = []
        return rows + ([" & ".join(row)] if row else [])

    def exact_aligned(self, forms: list[tuple[str, str]]) -> str:
        """Exact forms as one TeX ``aligned`` block (see :meth:`exact_rows`)."""
        if not forms:
            return ""
        return "\\begin{aligned}\n" + " \\\\\n".join(self.exact_rows(forms)) + "\n\\end{aligned}"

    def value_tex(self, cell: Cell) -> str:
        """A cell as TeX math: a number, ``[a, b, c]``, or the text's notation."""
        if cell.kind in ("number", "vector"):
            numbers = [number_tex(n.text) + (r"^{\mathrm{" + n.mark + "}}" if n.mark else "") for n in cell.numbers]
            return numbers[0] if cell.kind == "number" else "[" + ", ".join(numbers) + "]"
        if cell.kind == "piece":
            return tex(f"`{cell.text}`", self.target)
        return tex(cell.text, self.target)

    def number_text(self, number: Number) -> str:
        """A number as text (not math) in the output format, with its mark."""
        return self.prose(number.text) + (self.mark(number.mark) if number.mark else "")

    def cell_text(self, cell: Cell) -> str:
        """A cell as text in the output format (tables of Markdown and HTML)."""
        if cell.kind == "number":
            return self.number_text(cell.numbers[0])
        if cell.kind == "vector":
            return "[" + ", ".join(self.number_text(n) for n in cell.numbers) + "]"
        if cell.kind == "piece":
            return self.piece(cell.text)
        if cell.kind == "math":
            return self.inline_math(tex(cell.text, self.target))
        return self.prose(cell.text)

    # ------------------------------------------------------------------ per format
    def step_frame(self, view: StepView, body: list[str]) -> str:
        """The numbered heading (or frame) of a step around its parts."""
        raise NotImplementedError

    def table(self, view: TableView) -> str:
        """A table with its title, its notes and, with ``exact``, the exact forms."""
        raise NotImplementedError

    def notes(self, notes: list[tuple[str, RichText]]) -> str:
        """Notes (rich text, see :meth:`rich`), each led by its mark."""
        raise NotImplementedError

    def display(self, tex_math: str) -> str:
        """Display math."""
        raise NotImplementedError

    def prose(self, text: str) -> str:
        """Plain text, escaped for the format."""
        raise NotImplementedError

    def inline_math(self, tex_math: str) -> str:
        """TeX math inside running text."""
        raise NotImplementedError

    def piece(self, piece: str) -> str:
        """A vocabulary piece (``␣`` marks a leading space) in running text."""
        raise NotImplementedError

    def mark(self, mark: str) -> str:
        """A note mark after a number in running text."""
        raise NotImplementedError


def column_kind(cells: list[Cell]) -> str:
    """How a column is aligned: ``number`` when it holds numbers (and perhaps a few text
    cells such as ``masked``), ``integer``, ``vector`` or ``text``."""
    kinds = {c.kind for c in cells}
    if "number" in kinds and kinds <= {"number", "text", "math", "piece"}:
        return "number"
    if kinds == {"integer"}:
        return "integer"
    if "vector" in kinds:
        return "vector"
    return "text"
