"""The report of ``derive check`` is streamed (issue "work is bounded": a 100,000-line hand
file's report is never held whole) and prints each character as Rich prints the whole table
(the report as it was before it was streamed, built here with Rich's own Table).

Also: the JSON report, written a record at a time, is the text ``json.dumps(records,
indent=1)`` writes.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from derive import render_rich
from derive.case import load_case
from derive.check import STATUSES, Checker, Verdict
from derive.derivation import derive
from derive.render_rich import STATUS_STYLES, print_verdicts, render_verdicts

HAND = Path(__file__).parent / "hand"


def whole_table(verdicts, file: str) -> Group:
    """The report as one Rich table (the report before it was streamed)."""
    table = Table(title=escape(f"Check of {file}"), title_justify="left", show_lines=True)
    for column in ("line", "verdict", "what derive finds"):
        table.add_column(column, overflow="fold")
    for v in verdicts:
        table.add_row(Text(str(v.line)), Text(v.status, style=STATUS_STYLES[v.status]), Text(v.message))
    counts = {}
    for v in verdicts:
        counts[v.status] = counts.get(v.status, 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in counts.items())
    return Group(table, Text(f"{len(verdicts)} {'entry' if len(verdicts) == 1 else 'entries'}: {summary}"))


def console_of(out, width: int, color) -> Console:
    """A console writing to ``out``: without colours (``color`` False), a terminal's in a
    colour system (True: truecolor; or its name), or a terminal under NO_COLOR ("no color")."""
    system = None if not color else "truecolor" if color in (True, "no color") else color
    return Console(file=out, width=width, emoji=False, force_terminal=bool(color), color_system=system,
                   no_color=color == "no color")


def printed(pieces, width: int, color) -> str:
    out = io.StringIO()
    console = console_of(out, width, color)
    for piece in pieces:
        console.print(piece)
    return out.getvalue()


def printed_by_derive(verdicts, file: str, width: int, color) -> str:
    out = io.StringIO()
    print_verdicts(console_of(out, width, color), verdicts, file)
    return out.getvalue()


@pytest.fixture(scope="module")
def hand_verdicts():
    derivation = derive(load_case("cat-climbed"))
    return [v for name in ("seed_000.md", "seed_000_slips.md")
            for v in Checker(derivation).check_text((HAND / name).read_text(encoding="utf-8"))]


# messages a column must fold or wrap: a word wider than any column, wide characters (two
# cells each), line breaks, a tab, an empty message, trailing spaces, a line number of 12 digits
ODD = [Verdict(7, "", "wrong", "x" * 130), Verdict(123456789012, "", "correct", "权重 " * 40),
       Verdict(3, "", "unreadable", "two\nlines\n\nand a blank one"), Verdict(4, "", "not checked", "a\ttab"),
       Verdict(5, "", "explained", ""), Verdict(6, "", "convention", "spaces after   "),
       Verdict(8, "", "inherited", "−0.577 · 1.633 + ␣roof " * 9)]


@pytest.mark.parametrize("width", [200, 80, 41, 20, 9])
@pytest.mark.parametrize("color", [False, True, "standard", "256", "no color"])
def test_the_streamed_report_prints_as_the_whole_table(hand_verdicts, width, color, monkeypatch):
    monkeypatch.setattr(render_rich, "REPORT_ROWS", 7)  # several pieces
    for verdicts in (hand_verdicts, ODD, hand_verdicts[:1], hand_verdicts[:7], hand_verdicts[:8]):
        expected = printed([whole_table(verdicts, "hand [1].md")], width, color)
        assert printed(render_verdicts(verdicts, "hand [1].md"), width, color) == expected
        assert printed_by_derive(verdicts, "hand [1].md", width, color) == expected


def test_an_empty_report_says_so():
    out = printed_by_derive([], "h.md", 80, False)
    assert out.startswith("Check of h.md: no line of the file gives a number to check")


def test_the_json_report_is_json_dumps_of_the_records(tmp_path):
    for text in ("L = 0.928\nz_roof = 2.490\nsigma_5 = 0.866\n", "no number here\n"):
        (tmp_path / "h.md").write_text(text, encoding="utf-8")
        out = subprocess.run([sys.executable, "-m", "derive", "check", "cat-climbed", str(tmp_path / "h.md"),
                              "--format", "json"], capture_output=True, text=True, encoding="utf-8")
        records = json.loads(out.stdout)
        assert all(r["status"] in STATUSES for r in records)
        assert out.stdout == json.dumps(records, ensure_ascii=False, indent=1) + "\n"


def test_the_json_chunks_are_json_dumps_of_the_whole_list(hand_verdicts):
    """The JSON report, encoded a field at a time by json's C encoder (the indented
    encoder, pure Python, took 4 s of 100,000 lines), is byte for byte the stdlib's
    json.dumps(..., indent=1) of the whole list: derive's own verdicts, and verdicts with
    wide characters, line breaks, tabs, quotes, backslashes, control codes, lists of
    values and None."""
    from derive.check import json_chunks

    odd = ODD + [Verdict(9, 'a "q" \\ \x07\u2028', "wrong", "m", name="x_1", written=["0.5", "\u22121"],
                         expected=[], exact=["0.49"], origin=2, convention="half-even")]
    for verdicts in (hand_verdicts, odd, []):
        expected = json.dumps([v.as_dict() for v in verdicts], ensure_ascii=False, indent=1) + "\n"
        assert "".join(json_chunks(verdicts)) == expected
