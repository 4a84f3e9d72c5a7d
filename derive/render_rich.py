"""derive's pages as Rich draws them: the worked example's page (:mod:`derive.page`)
where derive does not write it as text itself (on a terminal, with its styles; a
paragraph or a table that needs Rich's measure of wide characters or tabs), and the
report of ``derive check``."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from rich.box import HEAVY_HEAD
from rich.cells import cell_len
from rich.color import ColorSystem
from rich.console import Group
from rich.control import strip_control_codes
from rich.markup import escape
from rich.markup import render as render_markup
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from .lazy import lazy
from .page import ColumnGroup, ExactLines, Line, Page, Run, WholeTable, cell_width, fits_in

if TYPE_CHECKING:
    from rich.table import Table as RichTable

rich_table = lazy("rich.table")  # Rich's tables and padding: on a terminal, a table derive does not draw
rich_padding = lazy("rich.padding")  # (and the report of derive check)


def rich_page(page: Page) -> Group:
    """``page`` as a Rich renderable, each part as Rich prints it (:class:`RichLine`,
    :class:`RichTable`, and the exact forms as a dim :class:`rich.text.Text`)."""
    return Group(*map(rich_part, page.parts))


def rich_part(part):
    """One part of a page (:class:`derive.page.Line`, :class:`derive.page.WholeTable`,
    :class:`derive.page.ExactLines`) as a Rich renderable."""
    if isinstance(part, Line):
        return RichLine(part)
    if isinstance(part, WholeTable):
        return RichTable(part)
    assert isinstance(part, ExactLines), part
    return Text("\n".join(part.forms), style=part.style, no_wrap=True, overflow="ignore")


class RichLine:
    """A paragraph (:class:`derive.page.Line`) as :class:`rich.text.Text` prints it, in
    its style.

    A paragraph derive lays out (:meth:`derive.page.Line.runs`) is handed to Rich as the
    segments a Text would yield, one per line (crane: 3,715 notes of up to 2,000
    characters, 2.5 MB: a Text measures each word's cells again and copies the text line by
    line), :func:`_segments`. Any other paragraph is a Text."""

    def __init__(self, line: Line):
        self.line = line

    def __rich_console__(self, console, options):
        lines = self.line.runs(options.max_width)
        if lines is None or options.no_wrap or options.overflow not in (None, "fold") \
                or options.justify not in (None, "default"):
            text = self.line.text
            fits = all(fits_in(line, options.max_width) for line in text.split("\n"))
            yield Text(text, style=self.line.style, overflow="ignore" if fits else None)
            return
        yield from _segments(console, lines)


def _segments(console, lines: list[list[Run]]) -> list[Segment]:
    """Lines of runs (:data:`derive.page.Run`) as Rich's segments, each line ended: a run
    in a style as a segment in that style on a page with styles, any other as the segments
    Rich measures without counting their characters (:func:`_plain_segments`)."""
    plain, out, new_line = console.color_system is None, [], Segment.line()
    for line in lines:
        for text, style in line:
            if style and not plain:
                out.append(Segment(text, console.get_style(style)))
            else:
                out += _plain_segments(text)
        out.append(new_line)
    return out


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


class RichTable:
    """A :class:`derive.page.WholeTable` as Rich prints it: each column group's title (a
    :class:`RichLine`), then the group as derive draws it
    (:meth:`derive.page.WholeTable.drawn_runs`) when its every cell also reads as it is in
    Rich's markup (:func:`_as_is`), else as Rich's table (:func:`_rich_table`)."""

    def __init__(self, table: WholeTable):
        self.table = table

    def __rich_console__(self, console, options):
        box = HEAVY_HEAD.substitute(options, safe=console.safe_box)
        for group in self.table.layout(options.max_width):
            if group.title:
                yield RichLine(Line(group.title, style="table.title"))
            if group.drawn and all(map(_as_is, group.columns)) and all(_as_is(cell) for row in group.rows for cell in row):
                yield from _segments(console, WholeTable.drawn_runs(group, box))
            else:
                yield _rich_table(group)


def _rich_table(group: ColumnGroup) -> RichTable:
    """Rich's table of one column group: the header words, each column's width (its
    text, without the padding), whether its every cell fits it (``no_wrap``), the
    rows' cells. Each cell is padded by itself (a space on either side, as the table's
    default padding (0, 1) pads it), so a cell of plain text that fits is one segment
    (:class:`PlainCell`): the same page, without a Padding rendered around each of
    crane's 18,587 cells."""
    out = rich_table.Table(show_lines=False, padding=0, box=HEAVY_HEAD)
    for header, w, no_wrap in zip(group.columns, group.widths, group.whole):
        out.add_column(rich_padding.Padding(escape(header), CELL_PADDING), justify="left", width=w + 2,
                       overflow="fold", no_wrap=no_wrap)
    for row in group.rows:
        out.add_row(*map(_cell, row))
    return out


CELL_PADDING = (0, 1)  # Rich's table's default padding: a space on either side of each cell


def _cell(text: str):
    """A body cell for Rich's table (see :meth:`WholeTable._rich_table`):
    :class:`PlainCell` when Rich would print ``text`` as it is (no markup bracket, emoji
    colon or backslash, one line of one-cell characters), else the escaped text (Rich
    parses it as markup and wraps it), padded."""
    if "[" in text or ":" in text or "\\" in text or "\n" in text or cell_width(text) != len(text):
        return rich_padding.Padding(escape(text), CELL_PADDING)
    return PlainCell(text)


def _as_is(text: str) -> bool:
    """Whether a cell of Rich's table prints ``text`` as it is, its markup escaped
    (:func:`_cell`): one line of characters one cell wide each, which Rich's markup (with
    emoji codes off, as derive's consoles print) reads back as the same text."""
    return "\n" not in text and cell_width(text) == len(text) \
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
    or as the text a console writes (:meth:`text`), each line of the table is one segment
    of that text, the rest of a row after its line number made once per verdict and
    message."""

    def __init__(self, report: "_VerdictReport", verdicts, first: bool, last: bool):
        self.report, self.verdicts, self.first, self.last = report, verdicts, first, last

    def __rich_console__(self, console, options):
        yield from self._lines(console, options, _written(console) if console.color_system is None else None)

    def text(self, console) -> str:
        """The piece as the text ``console`` writes for it, its styles in their ANSI codes
        (:func:`_written`): Rich's rendering of each segment, made once per distinct row
        (100,000 lines on a terminal: 141,000 rows, a few thousand distinct)."""
        return "".join(segment.text for segment in self._lines(console, console.options, _written(console)))

    def _lines(self, console, options, write):
        """The piece's segments; with ``write`` (segments to the text written), each line
        as one segment of its text."""
        report = self.report
        table, widths = report.table, report.widths(console, options)
        box = table.box.substitute(options, safe=console.safe_box if table.safe_box is None else table.safe_box)
        new_line = Segment.line()
        if self.first:  # (the table without rows, less its bottom edge)
            for line in list(Segment.split_lines(console.render(_verdict_table(report.file, widths), options)))[:-1]:
                if write is None:
                    yield from line
                    yield new_line
                else:
                    yield Segment(write(line) + "\n")
        left, right, divider = Segment(box.mid_left), Segment(box.mid_right + "\n"), Segment(box.mid_vertical)
        rule = Segment(box.get_row(widths, "row", edge=True) + "\n")
        for k, verdict in enumerate(self.verdicts):
            texts = _verdict_cells(verdict)
            if write is not None:  # (a row whose line number's cell is one line: that cell, then the rest of the row)
                number = report.cell(console, options, 0, texts[0], widths[0])
                if len(number) == 1:
                    tail = report.tail(console, options, texts[1], texts[2], widths, divider.text, right.text, write)
                    yield Segment(left.text + write(number[0]) + tail[0])
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
                if write is None:
                    yield from segments
                else:
                    yield Segment(write(segments))
            if not (self.last and k == len(self.verdicts) - 1):
                yield rule
        if self.last:
            yield Segment(box.get_bottom(widths))
            yield new_line


COLOR_SYSTEMS = {"standard": ColorSystem.STANDARD, "256": ColorSystem.EIGHT_BIT, "truecolor": ColorSystem.TRUECOLOR,
                 "windows": ColorSystem.WINDOWS}  # Console.color_system's names


def _written(console):
    """A function of segments to the text ``console`` writes for them, as its
    :meth:`rich.console.Console._render_buffer` does: each styled segment in its style's
    ANSI codes for the console's colour system (colours taken out under ``NO_COLOR``);
    on a console without colours, the text alone."""
    if console.color_system is None:
        return lambda segments: "".join(segment.text for segment in segments)
    system = COLOR_SYSTEMS[console.color_system]
    no_color = console.no_color

    def write(segments) -> str:
        if no_color:
            segments = Segment.remove_color(segments)
        return "".join(style.render(text, color_system=system) if style else text for text, style, _ in segments)
    return write


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
             right: str, write) -> list[str]:
        """The text of a row of the table after its line number's cell, a line at a time,
        as ``write`` writes each line's segments (:func:`_written`: ``console``'s): the
        divider, the verdict's cell, the divider, the message's cell and the right edge
        (with the line's end), the shorter cell filled with blank lines below it as Rich's
        table fills it. Made once per verdict and message (a long file repeats them)."""
        key = (status, message, widths[1], widths[2], console.color_system, console.no_color)
        if key not in self._tails:
            verdict, said = (self.cell(console, options, i, text, widths[i]) for i, text in ((1, status), (2, message)))
            height = max(len(verdict), len(said), 1)
            verdict, said = ([write(line) for line in cell] + [" " * width] * (height - len(cell))
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
    at a time. A piece of the table that fits the console's width (Rich would crop none of
    its lines), on a console without colours or a terminal's, is written as the text the
    console would write (:meth:`_VerdictRows.text`: its colours' codes made once per row
    text), without Rich's handling of each segment: the same characters
    (tests/test_check_report.py)."""
    for piece in render_verdicts(verdicts, file):
        if isinstance(piece, _VerdictRows) and (console.color_system is None or console.is_terminal) \
                and not console.legacy_windows and not console.is_jupyter and not console.record \
                and piece.report.width(console, console.options) <= console.width:
            console.file.write(piece.text(console))
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
