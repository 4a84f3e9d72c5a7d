"""The worked example as a page of text: ``derive run``'s and ``derive generate``'s
page, step by step (the seed 000's layout). Its parts are paragraphs (:class:`Line`: a
step's heading and words, an equation, a note), tables that never cut a cell
(:class:`WholeTable`) and the exact forms under a table (:class:`ExactLines`), laid out
at a page's width.

Each line of the page is a list of runs, a piece of text and its style's name (a
segment, as Rich prints it). derive writes the page itself (:meth:`Page.text`) wherever
that gives Rich's own page, character for character and style for style: a page whose
paragraphs and tables hold characters one terminal cell wide each, to a file or a pipe
(the text alone) or on a terminal (the styles as their ANSI codes, :data:`SGR`). Any other
page (a wide character, a tab) is drawn by Rich, :func:`derive.render_rich.rich_page`;
tests/test_rich_width.py compares the two. This module imports none of Rich's console,
text or table code: a plain ``derive run`` does not pay for them."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from rich.box import HEAVY_HEAD, Box
from rich.cells import cell_len

from .cells import Note, Printer, refs_of, table_refs
from .notation import unmarked
from .printing import counted, plain_label
from .steps import Ref, column_group

if TYPE_CHECKING:
    from .case import Case
    from .derivation import Derivation
    from .generate import Generated
    from .rounding import Format
    from .steps import Step


Run = tuple[str, str]  # a piece of a line and the name of its style ("" for none): a segment, as Rich prints it

# Rich's default theme's styles a page uses, as their ECMA-48 SGR parameters (the codes Rich
# writes on a terminal whatever its colour system: bold, dim and italic are no colours)
SGR = {"bold": "1", "dim": "2", "italic": "3", "table.title": "3", "table.header": "1"}


class Page:
    """A page: its parts in order (:class:`Line`, :class:`WholeTable`, :class:`ExactLines`).

    ``parts``: the list, which a caller may extend (a heading first)."""

    def __init__(self, parts: list):
        self.parts = parts

    def runs(self, width: int) -> list[list[Run]] | None:
        """The page's lines at ``width``, each as its runs, as Rich prints the page; None
        when a part needs Rich (see each part's ``runs``)."""
        out = []
        for part in self.parts:
            lines = part.runs(width)
            if lines is None:
                return None
            out += lines
        return out

    def text(self, width: int, styles: bool = False) -> str | None:
        """The page at ``width`` as Rich prints it, each line ended by a line feed: the text
        alone, or with ``styles`` each styled run in its ANSI codes (:data:`SGR`, as Rich's
        :meth:`rich.style.Style.render` writes them: the codes, the text, a reset); None
        when a part needs Rich, or a style is not one of :data:`SGR`'s."""
        lines = self.runs(width)
        if lines is None or styles and any(style not in SGR for line in lines for _, style in line if style):
            return None
        if not styles:
            return "".join("".join(text for text, _ in line) + "\n" for line in lines)
        return "".join("".join(f"\x1b[{SGR[style]}m{text}\x1b[0m" if style and text else text for text, style in line)
                       + "\n" for line in lines)

    def natural_width(self) -> int:
        """The widest of the page's tables with each cell on one line; 0 without tables:
        the width a file or a pipe needs to hold every table unsplit."""
        return max((p.natural_width() for p in self.parts if isinstance(p, WholeTable)), default=0)


def render_steps(derivation: Derivation, steps: list[Step], printer: Printer, exact: bool = False) -> Page:
    """The page of ``steps``: a numbered heading, the words, each table and the
    equations; with ``exact``, every quantity's exact form under its table."""
    parts = []
    numbers = {id(s): n for n, s in enumerate(derivation.steps, 1)}
    for step in steps:
        parts.append(Line(f"\nStep {numbers.get(id(step), '')}. {step.title}", style="bold"))
        parts.append(Line(unmarked(step.words)))
        for table in step.tables:
            rows = printer.rows(table)  # (sorted as printed: the logits by size)
            notes = printer.notes([r for row in rows for c in row for r in refs_of(c)])  # numbered as the cells show
            marks = _marks(notes)
            parts.append(_table(table, rows, printer, marks))
            parts += _note_lines(notes)
            if exact:
                parts += _exact_lines(derivation, table_refs(table))
        eq_refs = [r for eq in step.equations for r in refs_of(eq.rhs)]
        notes = printer.notes(eq_refs)
        marks = _marks(notes)
        for eq in step.equations:
            parts.append(Line(f"{unmarked(plain_label(eq.lhs))} = {printer.cell(eq.rhs, marks=marks)}"))
        parts += _note_lines(notes)
        if exact and step.equations:
            parts += _exact_lines(derivation, eq_refs)
    return Page(parts)


def render_generated(case: Case, steps: list[Generated], fmt: Format, carry: str = "exact") -> Page:
    """The page of a greedy generation: per new token, the prompt it read, the
    logits and softmax table of that derivation (its step ``logits``, rounded and noted as
    by ``derive run`` under ``fmt`` and ``carry``) and the chosen token, ties named."""
    from .generate import quoted

    parts = [Line(f"Greedy generation: {counted(len(steps), 'new token')} after "
                  f"{quoted(case.pieces, case.ids)}, each the argmax of the logits (the most probable "
                  "token); a tie goes to the lowest id.")]
    for n, g in enumerate(steps, 1):
        d = g.derivation
        parts.append(Line(f"\nNew token {n} of {len(steps)}, after {quoted(case.pieces, d.case.ids)} "
                          f"({counted(len(d.case.ids), 'token')})", style="bold"))
        printer = Printer(d, fmt, carry)
        parts += render_steps(d, [s for s in d.steps if s.key == "logits"], printer).parts
        z = Ref("before", d.outputs["z"][g.chosen])
        p = Ref("before", d.outputs["p"][g.chosen])
        piece = case.pieces[g.chosen]
        line = (f"Chosen: {piece} (id {g.chosen}), the largest logit z = {printer.cell(z)}, "
                f"p = {printer.cell(p)}")
        if len(g.tied) > 1:
            names = " = ".join(f"z_{case.pieces[k]}" for k in g.tied)
            line += f". {names} exactly: the tie goes to the lowest id, {piece}"
        parts.append(Line(line + f" -> {quoted(case.pieces, list(d.case.ids) + [g.chosen])}"))
    return Page(parts)


SUPERSCRIPTS = str.maketrans("0123456789", "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def _marks(notes: list[Note]) -> dict:
    """Each noted quantity's mark: the superscript number of its first note."""
    marks = {}
    for n, note in enumerate(notes, 1):
        for ref in note.refs:
            marks.setdefault(ref, str(n).translate(SUPERSCRIPTS))
    return marks


def _note_lines(notes: list[Note]) -> list["Line"]:
    return [Line(f"  {str(n).translate(SUPERSCRIPTS)} {note.text}", style="italic") for n, note in enumerate(notes, 1)]


class Line:
    """A paragraph of plain text in one Rich style (a heading, a step's words, an
    equation, a note), printed as :class:`rich.text.Text` prints it: wrapped at its spaces
    to the page's width (Rich's own word division, :func:`rich._wrap.divide_line`, as
    :func:`_breaks` computes it for such text).

    ``text``: the paragraph (newlines allowed); ``style``: a Rich style name or ``""``."""

    def __init__(self, text: str, style: str = ""):
        self.text, self.style = text, style

    def runs(self, width: int) -> list[list[Run]] | None:
        """The paragraph's lines at ``width``, as Rich wraps it (:func:`_divided`), each one
        run in the paragraph's style (an empty line none), when its every character is one
        cell wide and none is a space other than ASCII's (the same lines, without Rich
        measuring each word: crane has 3,715 notes of up to 2,000 characters); None for any
        other paragraph (Rich wraps it, :func:`derive.render_rich.rich_page`)."""
        if cell_width(self.text.replace("\n", " ")) != len(self.text) or _WIDE_SPACE.search(self.text):
            return None
        return [[(line, self.style)] if line else []
                for paragraph in self.text.split("\n") for line in _divided(paragraph, width)]


_WIDE_SPACE = re.compile(r"(?=\s)[^\x00-\x7f]")  # a space Rich's word division sees that ASCII does not


def _divided(paragraph: str, width: int) -> list[str]:
    """The lines :meth:`rich.text.Text.wrap` makes of one paragraph (no newline) of
    characters one cell wide each, none of them a non-ASCII space, at ``width`` with the
    default justification and the ``fold`` overflow: Rich's break offsets
    (:func:`_breaks`), each line's spaces past the width taken off
    (:meth:`rich.text.Text.rstrip_end`)."""
    if len(paragraph) <= width:
        return [paragraph]
    lines, start = [], 0
    for end in _breaks(paragraph, width) + [len(paragraph)]:
        line = paragraph[start:end]
        if len(line) > width:
            line = line[:len(line) - min(len(line) - width, len(line) - len(line.rstrip()))]
        lines.append(line)
        start = end
    return lines


_NOT_SPACE = re.compile(r"[^ ]")


def _breaks(text: str, width: int) -> list[int]:
    """:func:`rich._wrap.divide_line` (``fold=True``) of a line whose only space is `` ``
    and whose every character is one cell wide: the offsets where Rich starts a new line,
    found a line at a time instead of a word at a time.

    Rich's words are runs of non-spaces with the spaces after them (the first also with
    the spaces before it); a word stays on the line when its end without those spaces is
    at most ``width`` past the line's start. The first word that is not is at the line's
    ``width``-th offset (or the next word after the spaces there): it starts the next
    line, or, longer than ``width`` by itself, is folded into pieces of ``width``
    characters (its spaces after it included), the next line starting at its last piece."""
    breaks, line, n = [], 0, len(text)
    first = _NOT_SPACE.search(text)
    while first is not None and line + width < n:
        limit = line + width
        if text[limit] == " ":  # every word ending before the spaces there fits: the next one breaks
            following = _NOT_SPACE.search(text, limit)
            if following is None:
                break
            start = following.start()
        else:  # the word through the limit breaks
            start = text.rfind(" ", 0, limit) + 1
        if start <= first.start():
            start = 0  # the first word holds the spaces before it
        stripped_end = text.find(" ", _NOT_SPACE.search(text, start).start())
        stripped_end = n if stripped_end < 0 else stripped_end
        if stripped_end - start > width:  # folded
            end = _NOT_SPACE.search(text, stripped_end)
            end = n if end is None else end.start()
            pieces = range(start, end, width)
            breaks += [p for p in pieces if p]
            line = pieces[-1]
        else:
            breaks.append(start)
            line = start
    return breaks


def _table(table, rows: list[list], printer: Printer, marks: dict) -> "WholeTable":
    """The table's ``rows`` (in the order printed, :meth:`Printer.rows`) as cell text, marked."""
    return WholeTable(table.title, [printer.literal(c) if isinstance(c, str) else plain_label(c) for c in table.columns],
                      [[printer.cell(c, table.short_exact, marks) for c in row] for row in rows], _keys(rows))


def _keys(rows: list[list]) -> int:
    """How many leading columns of a table's ``rows`` name the row (``id``, ``token``,
    ``row``): those before the first column with a number or a vector in any row, at least
    one (the column every group repeats); in a table of no quantity (crane's 64 tokens
    and their ids), the first alone, so that it splits into column groups."""
    width = max(map(len, rows), default=0)
    first = next((j for j in range(width) if any(j < len(r) and refs_of(r[j]) for r in rows)), None)
    return 1 if first is None else max(first, 1)  # (a table of no quantity, tokens and their ids: its first)


class ColumnGroup(NamedTuple):
    """One column group of a :class:`WholeTable` at a page's width (:meth:`WholeTable.layout`)."""

    title: str  # the table's title and, when split, which columns the group holds; "" for none
    columns: list[str]  # the headers
    widths: list[int]  # each column's width, its padding and borders not included
    whole: list[bool]  # per column: whether its every cell fits its width on one line
    rows: list[list[str]]  # the rows' cells in the group's columns
    drawn: bool  # whether derive draws it (:meth:`WholeTable.drawn_runs`), else Rich's table does


class WholeTable:
    """A table that never cuts a cell: printed whole when it fits the width, else split
    into column groups that do (the first column, the row's name, repeated in each), as R
    and pandas print wide frames. A cell wraps only at its spaces (a vector after its
    commas), never inside a number, unless one column and the row's name are wider than the
    page by themselves: their digits then fold onto the next line (all of them printed).

    ``columns``: the header words; ``rows``: the cells as text (not Rich markup); ``keys``:
    how many leading columns name the row (``id``, ``token``) rather than hold its data. A
    column group's title counts the data columns alone, ``(columns 2-3 of 4)`` for c_2 and
    c_3 of W_Q, so that column 2 is the weight's column 2."""

    BORDER = 3  # a column's padding (1 + 1) and its right border; the table adds 1 on the left

    def __init__(self, title: str | None, columns: list[str], rows: list[list[str]], keys: int = 1):
        self.title, self.columns, self.rows, self.keys = title, columns, rows, keys

    def layout(self, width: int) -> list[ColumnGroup]:
        """The table at ``width``: its column groups in order, each with its columns'
        widths (the widest narrowed first, none below its longest word, :func:`_fit`) and
        whether derive draws it (:meth:`drawn_runs`)."""
        cells = [[c] + [r[i] for r in self.rows] for i, c in enumerate(self.columns)]
        need = [max(map(_longest_word, col)) for col in cells]  # the narrowest each column can be
        full = [max(map(cell_width, col)) for col in cells]  # ... and its width on one line (terminal cells: an
        # emoji or a CJK character is two, as Rich's table measures it)
        groups = _column_groups(need, width, self.BORDER, self.keys)
        out = []
        for group in groups:
            title = self.title or ""
            data = [i - self.keys + 1 for i in group if i >= self.keys]  # (numbered as the data columns: c_1 is 1)
            if len(groups) > 1 and data:
                group_title = column_group(data[0], data[-1], len(self.columns) - self.keys)
                title = f"{title} {group_title}" if title else group_title
            widths = _fit([need[i] for i in group], [full[i] for i in group], width, self.BORDER)
            fits = sum(w + self.BORDER for w in widths) + 1 <= width  # Rich narrows no column
            # a column whose every cell fits its width needs no wrapping: no_wrap prints the
            # same cells without Rich measuring them word by word
            whole = [fits and all(fits_in(cell, w) for cell in cells[i]) for i, w in zip(group, widths)]
            columns, rows = [self.columns[i] for i in group], [[row[i] for i in group] for row in self.rows]
            drawn = bool(group) and fits and all(_one_line(cell) for i in group for cell in cells[i]) \
                and all(one or not any(_WIDE_SPACE.search(cell) or "\t" in cell for cell in cells[i])
                        for i, one in zip(group, whole))
            out.append(ColumnGroup(title, columns, widths, whole, rows, drawn))
        return out

    def runs(self, width: int) -> list[list[Run]] | None:
        """The table's lines at ``width``: each column group's title (a line of its own in
        the ``table.title`` style: a narrow table, a column W_Q^(1) 4 x 1, does not fold it),
        then the group as derive draws it; None when a title or a group needs Rich."""
        out = []
        for group in self.layout(width):
            title = Line(group.title, style="table.title").runs(width) if group.title else []
            if title is None or not group.drawn:
                return None
            out += title + self.drawn_runs(group, HEAVY_HEAD)
        return out

    @staticmethod
    def drawn_runs(group: ColumnGroup, box: Box) -> list[list[Run]]:
        """A column group derive draws (``group.drawn``: every cell, headers included, one
        line of characters one cell wide each, the columns fit the page, a cell that wraps
        has neither a tab nor a space other than ASCII's), as Rich's table of it
        (:func:`derive.render_rich._rich_table`) prints it in ``box``: its top rule, the
        header row, its separator, each row's lines and the bottom rule.

        Each cell is Rich's wrapping of it at its column's width (:func:`_divided`), each
        of its lines left-justified to that width between two spaces of padding, a cell of
        fewer lines than its row's blank below them (a header: above them, as Rich aligns a
        header), joined by the box's verticals (the header's, the body's, the last row's).
        A line is one run without a style, but the header row's: each header's padding and
        text in the ``table.header`` style, three runs (a blank line one), as Rich's
        segments are."""
        widths = group.widths

        def line(left: str, vertical: str, right: str, texts: list[str]) -> list[Run]:
            return [(left + vertical.join(" " + t + " " * (w - len(t) + 1) for t, w in zip(texts, widths)) + right, "")]

        def head(texts: list[str | None]) -> list[Run]:
            out = [(box.head_left, "")]
            for k, (t, w) in enumerate(zip(texts, widths)):
                if k:
                    out.append((box.head_vertical, ""))
                out += [(" " * (w + 2), "table.header")] if t is None else \
                    [(" ", "table.header"), (t + " " * (w - len(t)), "table.header"), (" ", "table.header")]
            return out + [(box.head_right, "")]

        def row_lines(left: str, vertical: str, right: str, cells: list[list[str]]) -> list[list[Run]]:
            return [line(left, vertical, right, [cell[k] if k < len(cell) else "" for cell in cells])
                    for k in range(max(map(len, cells), default=1))]

        header = [[header] if one else _divided(header, w) for header, one, w in zip(group.columns, group.whole, widths)]
        height = max(map(len, header), default=1)
        header = [[None] * (height - len(cell)) + cell for cell in header]
        rows = [[[cell] if one else _divided(cell, w) for cell, one, w in zip(row, group.whole, widths)]
                for row in group.rows]
        padded = [w + 2 for w in widths]
        lines = [[(box.get_top(padded), "")], *(head([cell[k] for cell in header]) for k in range(height)),
                 [(box.get_row(padded, "head", edge=True), "")]]
        for row in rows[:-1]:
            lines += row_lines(box.mid_left, box.mid_vertical, box.mid_right, row)
        for row in rows[-1:]:
            lines += row_lines(box.foot_left, box.foot_vertical, box.foot_right, row)
        return lines + [[(box.get_bottom(padded), "")]]

    def natural_width(self) -> int:
        """The width of the table with every cell on one line."""
        return sum(max(map(cell_width, [c] + [r[i] for r in self.rows])) + self.BORDER
                   for i, c in enumerate(self.columns)) + 1


def _one_line(text: str) -> bool:
    """Whether ``text`` is one line of characters one terminal cell wide each."""
    return "\n" not in text and cell_width(text) == len(text)


def fits_in(text: str, width: int) -> bool:
    """Whether ``text`` is one line of at most ``width`` characters and terminal cells
    (Rich would not wrap it)."""
    return len(text) <= width and "\n" not in text and "\t" not in text and cell_width(text) <= width


def cell_width(text: str) -> int:
    """:func:`rich.cells.cell_len` of ``text``: its length when each of its distinct
    characters is one cell wide by Rich's own measure (a note of 2,000 characters has a
    few dozen distinct ones; each character is measured once per run), else Rich's count."""
    chars = set(text)
    if chars <= _ONE_CELL:
        return len(text)
    if all(cell_len(c) == 1 for c in chars - _ONE_CELL):
        _ONE_CELL.update(chars)
        return len(text)
    return cell_len(text)


_ONE_CELL: set[str] = set()  # the characters :func:`cell_width` has found one cell wide


def _longest_word(text: str) -> int:
    """The width in terminal cells of the longest run without a space: the narrowest a
    cell can wrap to."""
    return max(map(len if cell_width(text) == len(text) else cell_width, text.split()), default=0)


def _fit(need: list[int], full: list[int], width: int, border: int) -> list[int]:
    """Column widths for a table of at most ``width``: each column its one-line width
    ``full``, the widest narrowed first, none below ``need`` (its longest word). When the
    columns at their longest words are still wider than the page, the widest of them is
    narrowed further (at least 1), its longest words folded, every character printed:
    handed a table wider than the page, Rich would narrow the columns its own way (the
    row's name narrowed to nothing: 30 places at 40 columns printed the gradient's rows
    without their tokens)."""
    widths = list(full)
    excess = sum(w + border for w in widths) + 1 - width
    while excess > 0:
        slack = [(w - n, i) for i, (w, n) in enumerate(zip(widths, need)) if w > n]
        if not slack:
            break
        _, i = max((widths[i], i) for _, i in slack)
        widths[i] -= 1
        excess -= 1
    while excess > 0 and max(widths, default=0) > 1:  # (the widest folds: the last of the widest, a data column)
        _, i = max((w, i) for i, w in enumerate(widths))
        widths[i] -= 1
        excess -= 1
    return widths


def _column_groups(need: list[int], width: int, border: int, keys: int = 1) -> list[list[int]]:
    """Column indices in groups that fit ``width``: the ``keys`` columns that name the row
    (id, token) in every group, then as many of the rest, in order, as fit (at least one
    per group)."""
    keys = max(1, min(keys, len(need) - 1))
    if len(need) < 2 or sum(n + border for n in need) + 1 <= width:
        return [list(range(len(need)))]
    start = sum(n + border for n in need[:keys]) + 1
    groups, group, used = [], list(range(keys)), start
    for i in range(keys, len(need)):
        if len(group) > keys and used + need[i] + border > width:
            groups.append(group)
            group, used = list(range(keys)), start
        group.append(i)
        used += need[i] + border
    return groups + [group]


def _exact_lines(derivation: Derivation, refs) -> list[ExactLines]:
    """The exact forms of ``refs`` under a table (``derive run --exact``), one line each,
    never wrapped (a form of SymPy's syntax has runs without a space longer than the page:
    folded, its numbers could not be read back); a derivative without a closed form, whose
    exact text is its own name, has none (the line read dL/d(W_Q)_{1,1} = dL/d(W_Q)_{1,1},
    as the LaTeX and Markdown pages leave it out)."""
    lines = []
    for ref in dict.fromkeys(refs):
        meta = derivation.meta(ref)
        prefix = {"grad": "dL/d", "updated": "after the step: ", "after": "after the step: "}.get(ref.phase, "")
        form = derivation.exact_text(ref)
        if form != prefix + meta.label:
            lines.append(f"  {prefix}{meta.label} = {form}")
    return [ExactLines(lines)] if lines else []


class ExactLines:
    """The exact forms under a table, printed dim, each on one line however wide the page
    (as :class:`rich.text.Text` prints them with ``no_wrap`` and the ``ignore`` overflow).

    ``forms``: the lines, without their line's end."""

    style = "dim"

    def __init__(self, forms: list[str]):
        self.forms = forms

    def runs(self, width: int) -> list[list[Run]] | None:
        """The lines as they are (at any ``width``), each one run in the ``dim`` style; None
        when one holds a tab or a control code Rich's Text takes out (it expands the one,
        drops the others)."""
        if any(_TEXT_CONTROLS.search(form) for form in self.forms):
            return None
        return [[(form, self.style)] for form in self.forms]


_TEXT_CONTROLS = re.compile("[\t\x07\x08\x0b\x0c\x0d]")  # (rich.control.strip_control_codes's, and a tab)


