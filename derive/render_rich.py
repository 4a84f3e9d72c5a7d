"""The worked example as Rich tables, step by step (the seed 000's layout), and a greedy
generation (``derive generate``) as the logits step of each new token."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from rich.box import HEAVY_HEAD, Box
from rich.cells import cell_len
from rich.console import Group
from rich.control import strip_control_codes
from rich.markup import escape
from rich.markup import render as render_markup
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from .case import Case
from .cells import Note, Printer, refs_of, table_refs
from .derivation import Derivation
from .lazy import lazy
from .notation import unmarked
from .printing import counted, plain_label
from .rounding import Format
from .steps import Ref, Step, column_group

if TYPE_CHECKING:
    from rich.table import Table as RichTable

    from .generate import Generated

rich_table = lazy("rich.table")  # Rich's tables and padding: a page on a terminal only (a file or a pipe
rich_padding = lazy("rich.padding")  # prints its tables as plain lines, :meth:`WholeTable._plain_lines`)


def render_steps(derivation: Derivation, steps: list[Step], printer: Printer, exact: bool = False) -> Group:
    """A Rich renderable of ``steps``: a numbered heading, the words, each table and the
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
    return Group(*parts)


def render_generated(case: Case, steps: list[Generated], fmt: Format, carry: str = "exact"):
    """A Rich renderable of a greedy generation: per new token, the prompt it read, the
    logits and softmax table of that derivation (its step ``logits``, rounded and noted as
    by ``derive run`` under ``fmt`` and ``carry``) and the chosen token, ties named."""
    from .generate import quoted

    parts = [Text(f"Greedy generation: {counted(len(steps), 'new token')} after "
                  f"{quoted(case.pieces, case.ids)}, each the argmax of the logits (the most probable "
                  "token); a tie goes to the lowest id.")]
    for n, g in enumerate(steps, 1):
        d = g.derivation
        parts.append(Text(f"\nNew token {n} of {len(steps)}, after {quoted(case.pieces, d.case.ids)} "
                          f"({counted(len(d.case.ids), 'token')})", style="bold"))
        printer = Printer(d, fmt, carry)
        parts.append(render_steps(d, [s for s in d.steps if s.key == "logits"], printer))
        z = Ref("before", d.outputs["z"][g.chosen])
        p = Ref("before", d.outputs["p"][g.chosen])
        piece = case.pieces[g.chosen]
        line = (f"Chosen: {piece} (id {g.chosen}), the largest logit z = {printer.cell(z)}, "
                f"p = {printer.cell(p)}")
        if len(g.tied) > 1:
            names = " = ".join(f"z_{case.pieces[k]}" for k in g.tied)
            line += f". {names} exactly: the tie goes to the lowest id, {piece}"
        parts.append(Text(line + f" -> {quoted(case.pieces, list(d.case.ids) + [g.chosen])}"))
    return Group(*parts)


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

    A paragraph of characters one cell wide each (no tab or control code) is handed to
    Rich as the segments a Text would yield, one per line (crane: 3,715 notes of up to
    2,000 characters, 2.5 MB: a Text measures each word's cells again and copies the text
    line by line); on a page without styles (a file, a pipe), each line as the runs Rich
    measures without counting its characters (:func:`_plain_segments`). Any other
    paragraph is a Text.

    ``text``: the paragraph (newlines allowed); ``style``: a Rich style name or ``""``."""

    def __init__(self, text: str, style: str = ""):
        self.text, self.style = text, style

    def __rich_console__(self, console, options):
        width = options.max_width
        if options.no_wrap or options.overflow not in (None, "fold") or options.justify not in (None, "default") \
                or _cells(self.text.replace("\n", " ")) != len(self.text) or _WIDE_SPACE.search(self.text):
            fits = all(_fits(line, width) for line in self.text.split("\n"))
            yield Text(self.text, style=self.style, overflow="ignore" if fits else None)
            return
        plain = console.color_system is None
        style = console.get_style(self.style) if self.style and not plain else None
        new_line = Segment.line()
        for paragraph in self.text.split("\n"):
            for line in _divided(paragraph, width):
                if plain:
                    yield from _plain_segments(line)
                elif line:
                    yield Segment(line, style)
                yield new_line


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


def _one_cell_class() -> str:
    """A regex character class of the characters Rich knows one cell wide without
    looking them up (:data:`rich.cells._SINGLE_CELL_UNICODE_RANGES`; printable ASCII if
    this Rich has no such list)."""
    try:
        from rich.cells import _SINGLE_CELL_UNICODE_RANGES as ranges
    except ImportError:
        ranges = [(0x20, 0x7E)]
    return "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)


_RUNS = re.compile(f"[{_one_cell_class()}]+|[^{_one_cell_class()}]+")


def _plain_segments(line: str) -> list[Segment]:
    """One line of a page without styles as unstyled segments: its runs of characters
    Rich measures as a set (box drawing, ASCII, Latin) and the runs between them (a minus
    sign, an ellipsis: short, their widths cached by Rich). The same characters as one
    segment, which Rich measures character by character once a line holds a single
    character outside its set (crane's lines of 2,000 characters)."""
    return [Segment(run) for run in _RUNS.findall(line)]


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

    def __rich_console__(self, console, options):
        cells = [[c] + [r[i] for r in self.rows] for i, c in enumerate(self.columns)]
        need = [max(map(_longest_word, col)) for col in cells]  # the narrowest each column can be
        full = [max(map(len, col)) for col in cells]  # ... and its width on one line
        groups = _column_groups(need, options.max_width, self.BORDER, self.keys)
        for group in groups:
            title = self.title or ""
            data = [i - self.keys + 1 for i in group if i >= self.keys]  # (numbered as the data columns: c_1 is 1)
            if len(groups) > 1 and data:
                group_title = column_group(data[0], data[-1], len(self.columns) - self.keys)
                title = f"{title} {group_title}" if title else group_title
            widths = _fit([need[i] for i in group], [full[i] for i in group], options.max_width, self.BORDER)
            if title:  # on a line of its own: a narrow table (a column W_Q^(1), 4 x 1) does not fold it
                yield Line(title, style="table.title")
            fits = sum(w + self.BORDER for w in widths) + 1 <= options.max_width  # Rich narrows no column
            # a column whose every cell fits its width needs no wrapping: no_wrap prints the
            # same cells without Rich measuring them word by word
            whole = [fits and all(_fits(cell, w) for cell in cells[i]) for i, w in zip(group, widths)]
            columns, rows = [self.columns[i] for i in group], [[row[i] for i in group] for row in self.rows]
            if group and fits and all(_as_is(cell) for i in group for cell in cells[i]) \
                    and all(_fits(header, w) for header, w in zip(columns, widths)) \
                    and all(one or not any(_WIDE_SPACE.search(cell) or "\t" in cell for cell in cells[i])
                            for i, one in zip(group, whole)):
                box = HEAVY_HEAD.substitute(options, safe=console.safe_box)
                header = None if console.color_system is None else console.get_style("table.header")
                rows = [[[cell] if one else _divided(cell, w) for cell, one, w in zip(row, whole, widths)]
                        for row in rows]
                for k, line in enumerate(self._plain_lines(box, columns, widths, rows)):
                    if k == 1 and header:  # (the header row, its cells in the header style)
                        yield from self._header_segments(box, columns, widths, header)
                    else:
                        yield from _plain_segments(line)
                    yield Segment.line()
            else:
                yield self._rich_table(columns, widths, whole, rows)

    @staticmethod
    def _header_segments(box: Box, columns: list[str], widths: list[int], style: Style) -> list[Segment]:
        """The header row of :meth:`_plain_lines` in Rich's segments on a page with styles:
        each cell's padding and text in the header's ``style`` (``table.header``), each a
        segment of its own, as Rich's table renders them (its borders unstyled)."""
        out = [Segment(box.head_left)]
        for k, (text, w) in enumerate(zip(columns, widths)):
            if k:
                out.append(Segment(box.head_vertical))
            out += [Segment(" ", style), Segment(text + " " * (w - len(text)), style), Segment(" ", style)]
        return out + [Segment(box.head_right)]

    @staticmethod
    def _plain_lines(box: Box, columns: list[str], widths: list[int], rows: list[list[list[str]]]) -> list[str]:
        """The lines of :meth:`_rich_table` when every cell reads as it is (:func:`_as_is`),
        each header fits its column on one line and the columns fit the page, without
        styles (on a page with them, the header row's are :meth:`_header_segments`):
        Rich's box (its top, header separator and bottom rules), and each row's lines, a
        cell given as its lines (Rich's wrapping of it at its column's width, :func:`_divided`),
        each left-justified to the column's width between their two spaces of padding
        (a cell of fewer lines than its row's blank below them), joined by the box's
        verticals (the header's, the body's, the last row's)."""
        def line(left: str, vertical: str, right: str, texts: list[str]) -> str:
            return left + vertical.join(" " + t + " " * (w - len(t) + 1) for t, w in zip(texts, widths)) + right

        def row_lines(left: str, vertical: str, right: str, cells: list[list[str]]) -> list[str]:
            return [line(left, vertical, right, [cell[k] if k < len(cell) else "" for cell in cells])
                    for k in range(max(map(len, cells), default=1))]

        padded = [w + 2 for w in widths]
        lines = [box.get_top(padded), line(box.head_left, box.head_vertical, box.head_right, columns),
                 box.get_row(padded, "head", edge=True)]
        for row in rows[:-1]:
            lines += row_lines(box.mid_left, box.mid_vertical, box.mid_right, row)
        for row in rows[-1:]:
            lines += row_lines(box.foot_left, box.foot_vertical, box.foot_right, row)
        return lines + [box.get_bottom(padded)]

    @staticmethod
    def _rich_table(columns: list[str], widths: list[int], whole: list[bool], rows: list[list[str]]) -> RichTable:
        """Rich's table of one column group: the header words, each column's width (its
        text, without the padding), whether its every cell fits it (``no_wrap``), the
        rows' cells. Each cell is padded by itself (a space on either side, as the table's
        default padding (0, 1) pads it), so a cell of plain text that fits is one segment
        (:class:`PlainCell`): the same page, without a Padding rendered around each of
        crane's 18,587 cells."""
        out = rich_table.Table(show_lines=False, padding=0, box=HEAVY_HEAD)
        for header, w, no_wrap in zip(columns, widths, whole):
            out.add_column(rich_padding.Padding(escape(header), CELL_PADDING), justify="left", width=w + 2,
                           overflow="fold", no_wrap=no_wrap)
        for row in rows:
            out.add_row(*map(_cell, row))
        return out

    def natural_width(self) -> int:
        """The width of the table with every cell on one line."""
        return sum(max(map(len, [c] + [r[i] for r in self.rows])) + self.BORDER
                   for i, c in enumerate(self.columns)) + 1


CELL_PADDING = (0, 1)  # Rich's table's default padding: a space on either side of each cell


def _cell(text: str):
    """A body cell for Rich's table (see :meth:`WholeTable._rich_table`):
    :class:`PlainCell` when Rich would print ``text`` as it is (no markup bracket, emoji
    colon or backslash, one line of one-cell characters), else the escaped text (Rich
    parses it as markup and wraps it), padded."""
    if "[" in text or ":" in text or "\\" in text or "\n" in text or _cells(text) != len(text):
        return rich_padding.Padding(escape(text), CELL_PADDING)
    return PlainCell(text)


def _as_is(text: str) -> bool:
    """Whether a cell of Rich's table prints ``text`` as it is, its markup escaped
    (:func:`_cell`): one line of characters one cell wide each, which Rich's markup (with
    emoji codes off, as derive's consoles print) reads back as the same text."""
    return "\n" not in text and _cells(text) == len(text) \
        and (not _MARKUP.search(text) or render_markup(escape(text), emoji=False).plain == text)


_MARKUP = re.compile(r"[\[:\\]")  # a character Rich's markup may read: a bracket, an emoji colon, a backslash


class PlainCell:
    """A table cell of plain text that needs neither markup nor wrapping, with its padding
    (a space either side), rendered as the segment Rich's padded :class:`rich.text.Text`
    comes to when it fits its column: the text left-justified to the column's width
    between the two spaces, then the line's end. The same page without Rich parsing,
    measuring, copying and padding each of crane's 18,587 cells. A cell wider than its
    column, or a column justified otherwise, is rendered by Rich as the padded text it is.

    ``text``: one line of characters one cell wide each, none of ``[ : \\``
    (see :func:`_cell`)."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __rich_console__(self, console, options):
        text, width = self.text, options.max_width - 2
        if len(text) <= width and options.justify == "left" and not options.highlight:
            yield Segment(" " + text + " " * (width - len(text) + 1))
            yield Segment.line()
        else:
            yield rich_padding.Padding(text, CELL_PADDING)


def natural_width(renderable) -> int:
    """The widest of the tables in ``renderable`` (a Group, nested), each cell on one line;
    0 without tables: the width a file or a pipe needs to hold every table unsplit."""
    if isinstance(renderable, WholeTable):
        return renderable.natural_width()
    return max((natural_width(r) for r in getattr(renderable, "renderables", ())), default=0)


def _fits(text: str, width: int) -> bool:
    """Whether ``text`` is one line of at most ``width`` characters and terminal cells
    (Rich would not wrap it)."""
    return len(text) <= width and "\n" not in text and "\t" not in text and _cells(text) <= width


def _cells(text: str) -> int:
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


_ONE_CELL: set[str] = set()  # the characters :func:`_cells` has found one cell wide


def _longest_word(text: str) -> int:
    """The width of the longest run without a space: the narrowest a cell can wrap to."""
    return max((len(word) for word in text.split()), default=0)


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


def _exact_lines(derivation: Derivation, refs) -> list[Text]:
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
    return [Text("\n".join(lines), style="dim", no_wrap=True, overflow="ignore")] if lines else []


STATUS_STYLES = {"correct": "green", "explained": "cyan", "inherited": "yellow", "convention": "magenta",
                 "wrong": "bold red", "unreadable": "red", "not checked": "dim"}


VERDICT_COLUMNS = ("line", "verdict", "what derive finds")
REPORT_ROWS = 2000  # the rows of one piece of a streamed report (see render_verdicts)


def _verdict_table(file: str, widths: list[int] | None = None) -> RichTable:
    """The report's table, without rows (the columns fold: a word wider than its column
    folds, no digit is cut); with ``widths``, its column widths (padding included) are
    those: the widths the whole report's table takes (:meth:`_VerdictReport.widths`)."""
    table = rich_table.Table(title=escape(f"Check of {file}"), title_justify="left", show_lines=True)
    if widths is not None:
        table._calculate_column_widths = lambda console, options: list(widths)
    for column in VERDICT_COLUMNS:
        table.add_column(column, overflow="fold")
    return table


def _verdict_cells(verdict) -> tuple[str, str, str]:
    """One verdict's row: its cells' texts, as Rich's Text keeps them (control codes
    dropped; Text, not markup: nothing to parse, nothing to escape)."""
    return str(verdict.line), verdict.status, _without_controls(verdict.message)


# Rich's strip_control_codes, kept for each message: a long file repeats a few thousand messages
# (100,000 lines: 141,000 verdicts, 1,363 messages; 0.4 s of str.translate by a dict, twice)
_without_controls = lru_cache(maxsize=1 << 14)(strip_control_codes)


class _VerdictRows:
    """A piece of the report's table: the title, the top edge and the header (``first``),
    the rows of ``verdicts``, a line under each but the file's last row, and the bottom edge
    (``last``), each character as Rich's whole table prints it (tests/test_check_report.py
    compares the two). A cell is rendered once per text (a long file repeats its messages);
    a line number that fits its column is written directly; on a console without colours,
    each line of the table is one segment."""

    def __init__(self, report: "_VerdictReport", verdicts, first: bool, last: bool):
        self.report, self.verdicts, self.first, self.last = report, verdicts, first, last

    def __rich_console__(self, console, options):
        report = self.report
        table, widths = report.table, report.widths(console, options)
        box = table.box.substitute(options, safe=console.safe_box if table.safe_box is None else table.safe_box)
        new_line = Segment.line()
        if self.first:  # (the table without rows, less its bottom edge)
            for line in list(Segment.split_lines(console.render(_verdict_table(report.file, widths), options)))[:-1]:
                yield from line
                yield new_line
        plain = console.color_system is None  # (no style is printed: the text alone)
        left, right, divider = Segment(box.mid_left), Segment(box.mid_right + "\n"), Segment(box.mid_vertical)
        rule = Segment(box.get_row(widths, "row", edge=True) + "\n")
        for k, verdict in enumerate(self.verdicts):
            texts = _verdict_cells(verdict)
            if plain:  # (a row whose line number's cell is one line: that cell, then the rest of the row, made once)
                number = report.cell(console, options, 0, texts[0], widths[0])
                if len(number) == 1:
                    tail = report.tail(console, options, texts[1], texts[2], widths, divider.text, right.text)
                    yield Segment(left.text + "".join(segment.text for segment in number[0]) + tail[0])
                    for more in tail[1:]:
                        yield Segment(left.text + " " * widths[0] + more)
                    if not (self.last and k == len(self.verdicts) - 1):
                        yield rule
                    continue
            cells = [report.cell(console, options, i, text, widths[i]) for i, text in enumerate(texts)]
            height = max(1, *(len(cell) for cell in cells))
            if any(len(cell) != height for cell in cells):
                cells = [Segment.set_shape(Segment.align_top(cell, width, height, Style.null()), width, height)
                         for cell, width in zip(cells, widths)]
            for line in range(height):
                segments = [left, *cells[0][line], divider, *cells[1][line], divider, *cells[2][line], right]
                if plain:
                    yield Segment("".join(segment.text for segment in segments))
                else:
                    yield from segments
            if not (self.last and k == len(self.verdicts) - 1):
                yield rule
        if self.last:
            yield Segment(box.get_bottom(widths))
            yield new_line


class _VerdictReport:
    """What the pieces of one report share: the table, its column widths and the cells
    rendered so far."""

    def __init__(self, verdicts, file: str):
        self.verdicts, self.file, self.table = verdicts, file, _verdict_table(file)
        self._widths: dict[int, list[int]] = {}
        self._cells: dict[tuple, list] = {}
        self._tails: dict[tuple, list[str]] = {}

    def widths(self, console, options) -> list[int]:
        """The column widths Rich gives the whole table at ``options``' width: Rich's own
        calculation on a table of the header and, per column, the cell of the longest word
        and the cell of the longest line (a column's width depends on those two alone),
        found among the column's distinct texts (the line numbers: the largest is the
        longest; a long file repeats its verdicts' messages)."""
        if options.max_width not in self._widths:
            columns = [{str(max(v.line for v in self.verdicts))}, {v.status for v in self.verdicts},
                       {_without_controls(m) for m in {v.message for v in self.verdicts}}]
            rows: dict[str, list[str]] = {"word": [], "line": []}  # per column, its widest cell's text
            for texts in columns:
                measured = {}
                for text in texts:
                    line = max(map(cell_len, text.splitlines()), default=0)
                    measured[text] = (line, max(map(cell_len, text.split()), default=line))
                rows["line"].append(max(sorted(texts), key=lambda t: measured[t][0]))
                rows["word"].append(max(sorted(texts), key=lambda t: measured[t][1]))
            proxy = _verdict_table(self.file)
            for key in ("word", "line"):
                proxy.add_row(*(_verdict_text(text, i) for i, text in enumerate(rows[key])))
            self._widths[options.max_width] = proxy._calculate_column_widths(
                console, options.update_width(options.max_width - proxy._extra_width))
        return self._widths[options.max_width]

    def width(self, console, options) -> int:
        """The whole table's width at ``options``: its columns' and its borders'."""
        return sum(self.widths(console, options)) + self.table._extra_width

    def tail(self, console, options, status: str, message: str, widths: list[int], divider: str,
             right: str) -> list[str]:
        """The text of a row of the table without styles after its line number's cell, a
        line at a time: the divider, the verdict's cell, the divider, the message's cell and
        the right edge (with the line's end), the shorter cell filled with blank lines below
        it as Rich's table fills it. Made once per verdict and message (a long file repeats
        them)."""
        key = (status, message, widths[1], widths[2])
        if key not in self._tails:
            verdict, said = (self.cell(console, options, i, text, widths[i]) for i, text in ((1, status), (2, message)))
            height = max(len(verdict), len(said), 1)
            verdict, said = (["".join(s.text for s in line) for line in cell] + [" " * width] * (height - len(cell))
                             for cell, width in ((verdict, widths[1]), (said, widths[2])))
            self._tails[key] = [divider + v + divider + m + right for v, m in zip(verdict, said)]
        return self._tails[key]

    def cell(self, console, options, column: int, text: str, width: int) -> list[list[Segment]]:
        """A cell's lines at ``width`` (padding included), as Rich's table renders them."""
        if column == 0 and text.isdigit() and text.isascii() and len(text) <= width - 2:
            return [[Segment(" " + text + " " * (width - 1 - len(text)))]]
        key = (column, text, width)
        if key not in self._cells:
            spec = self.table.columns[column]
            self._cells[key] = console.render_lines(
                rich_padding.Padding(_verdict_text(text, column), self.table.padding), options.update(
                    width=width, justify=spec.justify, no_wrap=spec.no_wrap, overflow=spec.overflow, height=None,
                    highlight=spec.highlight), style=console.get_style(spec.style or "") + Style.null())
        return self._cells[key]


def _verdict_text(text: str, column: int) -> Text:
    """A cell of the report as Rich Text: the verdict in its colour."""
    return Text(text, style=STATUS_STYLES[text]) if column == 1 else Text(text)


def print_verdicts(console, verdicts, file: str) -> None:
    """Print the report of ``derive check`` (:func:`render_verdicts`) on ``console``, a piece
    at a time. A piece of the table that prints no colour and fits the console's width (Rich
    would neither style nor crop its lines) is written as its text, without Rich's handling
    of each line: the same characters (tests/test_check_report.py)."""
    for piece in render_verdicts(verdicts, file):
        if isinstance(piece, _VerdictRows) and console.color_system is None and \
                piece.report.width(console, console.options) <= console.width:
            console.file.write("".join(segment.text for segment in piece.__rich_console__(console, console.options)))
        else:
            console.print(piece)


def render_verdicts(verdicts, file: str):
    """The report of ``derive check``, in pieces to print in turn (a Rich renderable each):
    one row per checked entry, in a table whose pieces print as one (each character as
    Rich prints the whole table), and a count per verdict. The pieces are made as they are
    printed: a long file's report is never held whole, as text or as Rich segments."""
    if not verdicts:
        yield Text(f"Check of {file}: no line of the file gives a number to check "
                   "(expected lines such as `sigma_5 = 0.866` or a table of numbers)")
        return
    report = _VerdictReport(verdicts, file)
    for start in range(0, len(verdicts), REPORT_ROWS):
        yield _VerdictRows(report, verdicts[start:start + REPORT_ROWS], start == 0,
                           start + REPORT_ROWS >= len(verdicts))
    counts = {}
    for v in verdicts:
        counts[v.status] = counts.get(v.status, 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in counts.items())
    yield Text(f"{len(verdicts)} {'entry' if len(verdicts) == 1 else 'entries'}: {summary}")
