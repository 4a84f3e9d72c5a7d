"""`derive run` never cuts a number (issue 10, item 1): at any width, piped or not, every
number of every table is printed whole; a table wider than the page is split into column
groups (the row's name repeated), never truncated with "…"."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from documents import CASES, ROOT, cli

DECIMAL = re.compile(r"[\u2212-]?\d+\.\d+(?:e[\u2212-]?\d+)?")
FAST = [c for c in CASES if c != "crane"]


def table_numbers(text: str) -> Counter:
    """The decimals in the body cells of the text's tables (lines led by │), counted."""
    cells = [cell for line in text.splitlines() if line.startswith("\u2502") for cell in line.split("\u2502")[1:-1]]
    assert not [c for c in cells if "\u2026" in c], "a cell is cut"
    return Counter(n for cell in cells for n in DECIMAL.findall(cell))


@pytest.mark.parametrize("case", FAST)
@pytest.mark.parametrize("options", [(), ("--sig", "5")])
def test_no_number_is_cut_at_any_width(case, options):
    whole = table_numbers(cli("run", case, *options, "--width", "100000"))
    assert sum(whole.values()) > 20
    for width in ("60", "80", "200"):
        text = cli("run", case, *options, "--width", width)
        assert max(map(len, text.splitlines())) <= int(width)
        assert table_numbers(text) == whole, width  # the same numbers, each whole, none lost


def test_a_narrow_page_splits_a_wide_table_into_column_groups():
    text = cli("run", "cat-climbed", "--sig", "5", "--width", "60", "--step", "embedding")
    assert "(columns 1-" in text and "of 4)" in text  # E (12 x 4): id, token, then the data c_1 .. c_4
    assert text.count("\u2502 11 \u2502") == 2  # the row's id is repeated in each group


def test_a_pipe_gets_the_width_its_tables_need():
    done = subprocess.run([sys.executable, "-m", "derive", "run", "cat-climbed", "--sig", "5"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={"PATH": ""})
    assert done.returncode == 0, done.stderr
    whole = table_numbers(cli("run", "cat-climbed", "--sig", "5", "--width", "100000"))
    assert table_numbers(done.stdout) == whole
    assert "(columns" not in done.stdout  # nothing needed splitting (Rich alone would print 80 columns)


@pytest.mark.slow
def test_crane_is_printed_whole_at_80():
    assert table_numbers(cli("run", "crane", "--width", "80")) == table_numbers(cli("run", "crane", "--width", "100000"))


def _page(renderable, width: int, color: bool) -> str:
    import io

    from rich.console import Console

    console = Console(width=width, record=True, file=io.StringIO(), color_system="truecolor" if color else None,
                      force_terminal=color)
    console.print(renderable, crop=False)  # (as derive prints a page: an exact form is never cut)
    return console.file.getvalue()


@pytest.mark.parametrize("case", ["cat-climbed", "woodchuck"])
def test_lines_and_cells_that_fit_print_as_rich_wraps_them(case, monkeypatch):
    """A paragraph (page.Line: lines derive divides, or a Text) or a table column
    (WholeTable: cells padded by themselves, as PlainCell or markup) whose text fits the
    page is handed to Rich unwrapped: the page is the same, byte for byte and style for
    style, as with rich.text.Text paragraphs and Rich's own table (its padding, columns
    that wrap, markup cells), at widths where cells fold, wrap and fit, and for text with wide,
    combining and zero-width characters, tabs, non-ASCII spaces, runs of spaces and words
    longer than the page. A table whose every cell fits and reads as it is is drawn by
    derive (WholeTable.drawn_lines, its header row in the header style on a page with
    styles), character for character and style for style as Rich draws it. And the page
    derive writes as text itself (Page.text: a file or a pipe, and a terminal with its
    ANSI codes) is Rich's page, byte for byte, wherever derive writes it."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    from derive import render_rich
    from derive.cells import Printer
    from derive.page import Line, Page, WholeTable, render_steps
    from derive.render_rich import rich_page
    from derive.rounding import Format
    from documents import derivation_of

    def rich_own_table(group):  # Rich's table as it comes: its own padding, every column
        out = Table(show_lines=False)  # wrapping its cells, each cell markup that Rich parses
        for header, width in zip(group.columns, group.widths):
            out.add_column(escape(header), justify="left", width=width, overflow="fold")
        for row in group.rows:
            out.add_row(*map(escape, row))
        return out

    derivation = derivation_of(case)
    texts = [("\u6f22\u5b57 " * 30, "italic"), ("a\tb " * 20, ""), ("\nStep 1. x\ny " * 3, "bold"), ("word " * 50, ""),
             ("e\u0301 " * 40, ""), ("a\u200db " * 40, "dim"),  # combining and zero-width characters
             ("  \u00b9 x_1: from the printed inputs, " + "\u22120.816\u00b7(\u22120.5) + 0.25\u2026 " * 40, "italic"),
             ("x" * 130 + " " + "\u00b7" * 70 + " y", ""),  # words longer than the page fold
             ("a   b    " * 30 + "   \n\n  lead " * 3 + "end  ", "dim"),  # runs of spaces, blank lines
             ("\u00a0word\u2003" * 40, "bold")]  # spaces that are not ASCII
    paragraphs = [Line(text, style=style) for text, style in texts]
    tables = [WholeTable("wide", ["id", "\u6f22\u5b57"], [["1", "\u6f22\u5b57" * 9], ["2", "x y"]]),
              WholeTable("t", ["a", "b"], [["1" * 50, "2 3 " * 20]]),
              WholeTable("cells", ["a", "b", "c"], [["\u22120.816\u00b9", " 1 ", ":smile: x:y:"], ["a\\", "[1, 2]", "[b]x[/b]"],
                                                   ["\u00b7\u2026", "\u00a0x\u00a0", "a\tb"]]),
              WholeTable("as they are", ["E[id]", "i \\ j", "x_1 \u2208 [a, b]"],  # markup Rich reads back as it is
                         [["[1, 2]", " \u22120.5\u00b9", "x: y"], ["\u2423a", "", "[ab]"], ["a b", "z\u2026 ", "\\[b]"]]),
              WholeTable("no rows", ["a", "b"], []),
              # cells that wrap under headers that fit (drawn by derive): runs of spaces, a word
              # folded, a row of one line beside rows of several; a wrapped cell with a space
              # that is not ASCII, and a header that wraps (Rich's table)
              WholeTable("wraps", ["k", "v", "w"], [["1", "x  y   z " * 10 + "w" * 45, "[1, 2] "],
                                                    ["2", "short", "a b " * 30], ["3", "[q]", ":"]]),
              WholeTable("wraps too", ["k", "a long header of words " * 4], [["1", "a\u00a0b c " * 12]]),
              WholeTable("no space", ["k", "v"], [["1", "a\u00a0b c " * 12], ["2", "x\ty " * 30]])]
    pages = [render_steps(derivation, derivation.steps, Printer(derivation, Format(places=3))),
             Page(paragraphs + tables)] + [Page([part]) for part in paragraphs + tables] \
        + [render_steps(derivation, derivation.steps[-3:], Printer(derivation, Format(places=3)), exact=True)]
    written = []
    for width in (40, 60, 120, 300):
        for color in (False, True):
            for page in pages:
                ours = _page(rich_page(page), width, color)
                with monkeypatch.context() as patched:  # (no cell drawn by derive: Rich's own table throughout,
                    patched.setattr(render_rich, "_rich_table", rich_own_table)  # every paragraph a Text)
                    patched.setattr(render_rich, "_as_is", lambda text: False)
                    patched.setattr(render_rich, "RichLine", lambda line: Text(line.text, style=line.style))
                    assert ours == _page(rich_page(page), width, color), (case, width, color)
                text = page.text(width, styles=color)
                if text is not None:
                    assert text == ours, (case, width, color)
                    written.append((page, width, color))
    for color in (False, True):  # (the derivation's page at every width, with styles and without, and most parts
        assert [w for page, w, c in written if page is pages[0] and c == color] == [40, 60, 120, 300]  # by
        assert len([w for page, w, c in written if c == color]) >= 4 * 9  # themselves: those with a wide
        # character or a tab are Rich's; and the exact forms under the last steps' tables)
        assert [w for page, w, c in written if page is pages[-1] and c == color] == [40, 60, 120, 300]


def test_line_breaks_are_rich_word_division():
    """page._breaks, which finds a paragraph's line breaks a line at a time, gives
    Rich's own word division (rich._wrap.divide_line, folding words longer than the
    width) on random text of words, runs of spaces, leading and trailing spaces and words
    longer than the width."""
    import random

    from rich._wrap import divide_line

    from derive.page import _breaks

    rng = random.Random(12)
    for _ in range(20_000):
        alphabet = rng.choice([" ab", "  abcdef", " a", "a", "   x", " abcdefghijklmnop", " \u2212\u2026a"])
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        width = rng.randint(1, 15)
        assert _breaks(text, width) == divide_line(text.encode("ascii", "replace").decode(), width, fold=True), \
            (text, width)


def _cells_by_row(text: str) -> list[list[str]]:
    """The body rows of a Rich table with a line between rows (│ cells, ├ rules): each
    row's cells, each cell's lines joined with no space (a folded or wrapped word whole
    again; the spaces are compared apart)."""
    rows, current = [], None
    for line in text.splitlines():
        if line.startswith("\u2502"):
            cells = [c.strip() for c in line.split("\u2502")[1:-1]]
            current = [""] * len(cells) if current is None else current
            current = [a + b for a, b in zip(current, cells)]
        elif current is not None:
            rows.append(current)
            current = None
    return rows


@pytest.mark.parametrize("columns", ["40", "50"])
def test_check_report_cuts_no_digit_at_any_width(tmp_path, columns):
    """A verdict whose message holds a number wider than the report's column (a value at
    30 places on a 50-column terminal) is folded onto the next line, every digit kept: the
    column's text is the message (the JSON's) to the character, spaces aside. Before, Rich's
    default cut the number with "…" (0.92773796789551512623329459… for
    0.92773796789551512623329459590645…)."""
    hand = tmp_path / "hand.md"
    hand.write_text("L = 0.927680575926400000000000000000\nsigma_5 = 0.866\n", encoding="utf-8")
    env = {**os.environ, "COLUMNS": columns}
    run = [sys.executable, "-m", "derive", "check", "cat-climbed", str(hand)]
    report = subprocess.run(run, capture_output=True, text=True, env=env).stdout
    messages = [v["message"] for v in json.loads(subprocess.run(run + ["--format", "json"], capture_output=True,
                                                                text=True, env=env).stdout)]
    assert max(map(len, report.splitlines())) <= int(columns)
    assert any(len(n) > int(columns) - 20 for m in messages for n in DECIMAL.findall(m))  # wider than its column
    assert [row[2].replace(" ", "") for row in _cells_by_row(report)] == [m.replace(" ", "") for m in messages]


def test_params_table_cuts_no_number_at_a_narrow_width():
    """derive params at 50 and 30 columns: each count whole on one line (38,597,376, not
    38,59… and not folded over two lines), the table split into column groups as derive
    run's tables are; at 20 columns (Rich's table left the column empty) every digit is
    printed, folded."""
    run = [sys.executable, "-m", "derive", "params", "cat-climbed"]
    wide = subprocess.run(run, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}).stdout
    counts = re.findall(r"\d{1,3}(?:,\d{3})+", wide)
    assert len(counts) >= 8 and "124,439,808" in counts
    for columns in ("50", "30", "20"):
        narrow = subprocess.run(run, capture_output=True, text=True, env={**os.environ, "COLUMNS": columns}).stdout
        assert "\u2026" not in narrow and max(map(len, narrow.splitlines())) <= int(columns)
        if columns != "20":
            assert re.findall(r"\d{1,3}(?:,\d{3})+", narrow) == counts, columns
        else:  # the last column's cells, their folded lines joined: every count
            group = narrow[narrow.index("(column 4 of 4)"):]
            cells = "".join(line.split("\u2502")[2].strip() for line in group.splitlines()
                            if line.startswith("\u2502"))
            assert cells == "".join(counts)


# ----------------------------------------- notes numbered in the order their cells are printed
SUPERSCRIPT_DIGITS = "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"


def _superscript(text: str) -> int:
    return int("".join(str(SUPERSCRIPT_DIGITS.index(c)) for c in text))


def test_the_logits_notes_are_numbered_as_their_cells_are_printed():
    """The logits table is sorted by logit (␣roof first, as the seed's step 13 prints it),
    its notes were numbered by vocabulary id (z_␣the ¹ on the seventh row, z_␣roof ⁷ on
    the first). Read row by row, left to right, the marks now count 1, 2, 3, ... and each
    note names the quantity of the cell that carries its mark, as the Markdown and LaTeX
    chapters letter them a, b, c."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "hand"))
    from hand_reference import SEED_LOGITS, seed_rows, token
    text = cli("run", "cat-climbed", "--places", "2", "--step", "logits", "--width", "400")
    lines = text.splitlines()
    rows = [[c.strip() for c in line.split("\u2502")[1:-1]] for line in lines if line.startswith("\u2502")]
    assert [r[0].strip("`") for r in rows] == [token(r[0]) for r in seed_rows(SEED_LOGITS)]
    marked = [(row[0].strip("`"), column, _superscript(m.group(0)))
              for row in rows for column, cell in zip(("z", "e^z", "p"), row[1:])
              for m in re.finditer(f"[{SUPERSCRIPT_DIGITS}]+", cell)]
    assert len(marked) >= 5
    assert [n for _, _, n in marked] == list(range(1, len(marked) + 1))
    notes = {_superscript(m.group(1)): m.group(2) for m in
             (re.match(f"^  ([{SUPERSCRIPT_DIGITS}]+) ([^:]+):", line) for line in lines) if m}
    for piece, column, n in marked:
        assert notes[n] == f"{column}_{piece}", (n, notes[n])
    assert marked[0][:2] == ("␣roof", "z")  # the first row's logit: the tie 2.495 (seed f_5 at 2 places)


def test_a_column_group_counts_the_data_columns():
    """A split table's title counted its row-label column: W_Q (4 x 4, the case's d_model)
    split at 40 columns said "(columns 2-4 of 5)" over c_1 .. c_3. Each group's title now
    names the columns its headers c_a .. c_b are, of d_model = 4."""
    text = cli("run", "cat-climbed", "--sig", "5", "--width", "40", "--step", "weights")
    lines = text.splitlines()
    titles = [(k, re.search(r"\((?:columns (\d+)-(\d+)|column (\d+)) of (\d+)\)$", line))
              for k, line in enumerate(lines) if line.startswith("W_Q")]
    assert len(titles) >= 2 and all(m for _, m in titles)
    seen = []
    for k, m in titles:
        first, last = (int(m.group(1)), int(m.group(2))) if m.group(1) else (int(m.group(3)),) * 2
        assert int(m.group(4)) == 4
        header = next(line for line in lines[k:] if line.startswith("\u2503"))
        assert [c.strip() for c in header.split("\u2503")[2:-1]] == [f"c_{c}" for c in range(first, last + 1)]
        seen += range(first, last + 1)
    assert seen == [1, 2, 3, 4]


def test_a_table_wider_than_the_page_keeps_its_row_names():
    """At 30 places on a 40-column page the gradient's table (id, token, a vector of four
    30-place numbers) is wider than the page even at its longest words: the vector's digits
    fold (all of them printed), the id and the token keep their width. Rich, handed the
    wider table, had narrowed the id column to nothing and folded the tokens. The prompt's
    pieces and their ids are the seed's (step 2: the cat climbed the = 0 2 4 5 1)."""
    text = cli("run", "cat-climbed", "--places", "30", "--width", "40", "--step", "gradient")
    assert max(map(len, text.splitlines())) <= 40
    table = text.split("Gradient of L for the rows of the prompt", 1)[1].split("\u2514", 1)[0]
    for i, piece in zip((0, 2, 4, 5, 1), ("the", "\u2423cat", "\u2423climb", "ed", "\u2423the")):
        assert re.search(rf"\u2502 {i}\s+\u2502 `{piece}`\s+\u2502", table), (i, piece)


def test_emoji_codes_are_printed_as_written(tmp_path):
    """Rich reads ``:smile:`` as an emoji by default: a vocabulary piece or a title written so
    is printed as written, in the title, the token tables and the logits table."""
    seed = (ROOT / "cases" / "cat-climbed.toml").read_text(encoding="utf-8")
    case = tmp_path / "emoji.toml"
    case.write_text(seed.replace('".", "<eot>"', '":smile:", "<eot>"')
                    .replace('title = "the cat climbed the"', 'title = "the cat :smile:"'), encoding="utf-8")
    text = cli("run", str(case), "--width", "200")
    assert "\N{SMILING FACE WITH OPEN MOUTH AND SMILING EYES}" not in text
    assert text.startswith("the cat :smile:  (")
    assert text.count(":smile:") >= 3  # the title, E's row, the logits table's row


def test_a_table_of_no_quantity_splits_into_column_groups():
    """crane's tokens and ids (64 columns, no quantity in any) at 80 columns: split into
    column groups, each repeating the row's name (its first column), every token and id
    printed whole; it was one table of 65 columns squeezed to nothing (no token, no id)."""
    from derive.case import load_case

    case = load_case("crane")
    text = cli("run", "crane", "--step", "tokens", "--width", "80")
    assert max(map(len, text.splitlines())) <= 80
    assert text.count("(columns ") >= 5 and f"of {len(case.ids)})" in text
    ids = [int(cell) for line in text.splitlines() if line.startswith("\u2502 id ")
           for cell in line.strip("\u2502").split("\u2502")[1:]]
    assert ids == list(case.ids)


@pytest.mark.parametrize("env", [{}, {"FORCE_COLOR": "1"}])
def test_the_title_line_is_printed_as_written(tmp_path, env):
    """The page's first line, the case's title, is text, not Rich markup: a title holding
    ``[bold]x[/bold]`` or ``[MASK]`` printed ``A x [MASK]`` (Rich took the tags), to a pipe
    and on a terminal alike; ``derive generate``'s too."""
    title = "A [bold]x[/bold] [MASK] :smile: title"
    text = (ROOT / "cases" / "woodchuck.toml").read_text(encoding="utf-8")
    case = tmp_path / "titled.toml"
    case.write_text(re.sub(r'(?m)^title = .*$', f'title = "{title}"', text), encoding="utf-8")
    for command in (["run"], ["generate", "-n", "1"]):
        done = subprocess.run([sys.executable, "-m", "derive", *command, str(case)], capture_output=True, text=True,
                              cwd=ROOT, env={**os.environ, **env}, timeout=300)
        assert done.returncode == 0, done.stderr
        first = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout.splitlines()[0])
        assert first == f"{title}  (woodchuck, 3 places, half-away)", (command, env, first)


@pytest.mark.parametrize("env", [{"COLUMNS": "70"}, {"COLUMNS": "100", "NO_COLOR": "1"}, {"TERM": "dumb"}])
def test_a_terminal_page_is_richs_page(env):
    """On a terminal, derive writes the page itself, with its styles' ANSI codes (bold
    headings, italic notes and titles, bold headers), without loading Rich's console: the
    bytes are those Rich's console prints of the same page on that terminal (its width
    from COLUMNS, NO_COLOR changing no style of the page's; a dumb terminal: no styles at 80
    columns, which Rich prints)."""
    import io
    import pty

    from rich.console import Console

    from derive.cells import Printer
    from derive.page import Line, render_steps
    from derive.render_rich import rich_page
    from derive.rounding import MINUS, Format
    from documents import derivation_of

    pid, fd = pty.fork()
    if pid == 0:  # (the child: derive on the terminal)
        os.chdir(ROOT)
        os.environ.pop("COLUMNS", None)
        os.environ.update({"TERM": "xterm-256color", **env})
        os.execv(sys.executable, [sys.executable, "-X", "importtime", "-m", "derive", "run", "cat-climbed"])
    got = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            break
        if not chunk:
            break
        got += chunk
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    got = got.decode("utf-8").replace("\r\n", "\n")
    imported = {line.split("|")[-1].strip() for line in got.splitlines() if line.startswith("import time:")}
    page_text = "".join(line + "\n" for line in got.splitlines() if not line.startswith("import time:"))
    derivation = derivation_of("cat-climbed")
    page = render_steps(derivation, derivation.steps, Printer(derivation, Format(minus=MINUS)))
    page.parts.insert(0, Line(f"{derivation.case.title}  (cat-climbed, 3 places, half-away)"))
    width = int(env.get("COLUMNS", 80))
    console = Console(width=width, file=io.StringIO(), force_terminal=True, emoji=False,
                      color_system=None if env.get("TERM") == "dumb" else "standard")
    console.print(rich_page(page), crop=False)
    assert page_text == console.file.getvalue()
    assert ("\x1b[1m" in page_text) == (env.get("TERM") != "dumb")
    assert ("rich.console" in imported) == (env.get("TERM") == "dumb")  # (derive wrote it, but on a dumb terminal)


def test_columns_zero_is_not_a_page_of_no_width():
    """COLUMNS=0 (or a COLUMNS that is not a number) is not read: derive run printed
    nothing at all and exited 0, as did derive cases, params and check, Rich taking it for a
    page of no width (a trial's finding). A pipe then gets the page it gets without it. A
    COLUMNS under 20 gives the page at 20, where every digit is still printed (a trial's
    finding: COLUMNS=1 printed tables of borders alone)."""
    def out(args, columns):
        env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
        if columns is not None:
            env["COLUMNS"] = columns
        done = subprocess.run([sys.executable, "-m", "derive", *args], capture_output=True, text=True, cwd=ROOT,
                              env=env, input="L = 0.928\n", timeout=300)
        return done.stdout
    for args in (["run", "softmax"], ["cases"], ["params", "cat-climbed"], ["check", "cat-climbed", "-"]):
        plain = out(args, None)
        assert len(plain.splitlines()) > 3
        assert out(args, "0") == plain, args
    assert out(["run", "softmax"], "abc") == out(["run", "softmax"], None)
    for args in (["run", "cat-climbed"], ["params", "crane"], ["check", "cat-climbed", "-"]):  # (narrower than 20:
        assert out(args, "1") == out(args, "19") == out(args, "20"), args  # the page at 20; at COLUMNS=1 Rich
    # drew tables of borders without a number in them)


def test_a_wide_token_is_not_wrapped_in_its_cell(tmp_path):
    """A token of characters two terminal cells wide (木头🪵) was measured as its length:
    Rich's table, given a column of 4 for its 6 cells (with the backquotes), wrapped it
    as `木头🪵 over ` on every row that named it (a trial's finding). Columns are measured
    in terminal cells: the token is whole on one line, and each table line is as wide as
    its table's top rule."""
    from rich.cells import cell_len

    text = (ROOT / "cases" / "woodchuck.toml").read_text(encoding="utf-8")
    case = tmp_path / "wide.toml"
    case.write_text(text.replace('"woodchuck", "would"', '"\u6728\u5934\U0001fab5", "would"', 1), encoding="utf-8")
    for width in ("100000", "80"):
        page = cli("run", str(case), "--width", width)
        lines = page.splitlines()
        assert page.count("`\u6728\u5934\U0001fab5`") > 5 and "`\u6728\u5934\U0001fab5 " not in page
        top = None
        for line in lines:
            if line[:1] in "\u250f\u250c":
                top = cell_len(line)
            elif line[:1] in "\u2503\u2502\u2521\u2514\u2517" and top is not None:
                assert cell_len(line) == top, line
