"""What a fresh user's trial of ``derive check`` found (issue 11), each line with its right
verdict. Values from the seed page (/work/shared/seeds/000_c4d6024fc6c69432.txt):
p(␣roof) = 0.395 (exactly 0.39544…), L = 0.928, sigma_5 = 0.866 (sqrt(0.75) = 0.86602…).
"""

from __future__ import annotations

import pytest

from derive.case import load_case
from derive.check import Checker
from derive.derivation import derive


@pytest.fixture(scope="module")
def derivation():
    return derive(load_case("cat-climbed"))


def verdict(derivation, line: str):
    found = Checker(derivation).check_text(line)
    assert len(found) == 1, [(v.status, v.message) for v in found]
    return found[0]


@pytest.mark.parametrize("line,status,says", [
    ("L = 0.5 = 0.928", "wrong", "0.5 = 0.928 does not hold"),  # was correct (0.5 ignored)
    ("L = 0.928 = 0.929", "wrong", "0.928 = 0.929 does not hold"),
    ("sigma_5 = 0.8660 = 0.866", "correct", ""),
    ("sigma_5 = 0.87 = 0.866", "correct", ""),  # 0.866 rounds to 0.87
    ("sigma_5 = 0.866 = 0.88", "wrong", "0.866 = 0.88 does not hold"),
])
def test_a_chain_of_written_numbers_must_agree(derivation, line, status, says):
    found = verdict(derivation, line)
    assert found.status == status and says in found.message, found.message


@pytest.mark.parametrize("line,status", [
    ("p(␣roof) = 0.395 (39.5%)", "correct"),  # was wrong: "0.395 (0.395) is 0.156025…"
    ("p(␣roof) = 0.395 (≈ 39.5%)", "correct"),
    ("p(␣roof) = 0.395 (40.5%)", "wrong"),
    ("p(␣roof) = 0.396 (39.6%)", "wrong"),
])
def test_a_percentage_after_the_value(derivation, line, status):
    assert verdict(derivation, line).status == status


def test_two_letter_note_marks_are_marks(derivation):
    """The 27th note of a table is marked aa: ``0.395^{\\mathrm{aa}}`` is 0.395 with a mark."""
    assert verdict(derivation, r"$p(\texttt{\textvisiblespace{}roof}) = 0.395^{\mathrm{aa}}$").status == "correct"


CARRIED = r"""\textbf{Head 2, weights $a_{i,j}$}\par\smallskip
\begin{tabular}{l S S S S S}
\toprule
$i \backslash j$ & {\texttt{the}} & {\texttt{\textvisiblespace{}cat}} & {\texttt{\textvisiblespace{}climb}} & {\texttt{ed}} & {\texttt{\textvisiblespace{}the}} \\
\midrule
\texttt{the} & 1.000 & 0.000 & 0.000 & 0.000 & 0.000 \\
\texttt{\textvisiblespace{}cat} & 0.977 & 0.023 & 0.000 & 0.000 & 0.000 \\
\texttt{\textvisiblespace{}climb} & 0.279 & 0.094 & 0.627 & 0.000 & 0.000 \\
\texttt{ed} & 0.033 & 0.302 & 0.494{\textsuperscript{a}} & 0.170 & 0.000 \\
\texttt{\textvisiblespace{}the} & 0.016 & 0.882 & 0.067 & 0.015 & 0.020 \\
\bottomrule
\end{tabular}
{\footnotesize\sloppy
\textsuperscript{a}\,$a_{4,3}$: carried from the printed values, $0.494$ ($2.910 / 5.885 = WORKING\ldots$); from the exact values, $0.495$.\par
}
"""


@pytest.mark.parametrize("working,cell,note", [("0.49447", "explained", "explained"), ("0.49547", "wrong", "wrong")])
def test_a_value_carried_from_the_printed_values_is_explained_by_its_note(derivation, working, cell, note):
    """``derive latex --carry printed``: head 2's a_{4,3} is 0.494 from the printed e^s
    (2.910 / 5.885 = 0.494475…), 0.495 from the exact ones (0.49455…). The note's working is
    checked; only a note whose arithmetic holds explains the cell. (The other rows are the
    table as derive writes it, for its rows to stand at their positions; not judged here.)"""
    found = Checker(derivation).check_text(CARRIED.replace("WORKING", working))
    cells = [v for v in found if v.name == "a_{4,3}" and v.written == ["0.494"]]
    notes = [v for v in found if v.line == 14]
    assert len(cells) == 1 and cells[0].status == cell, [(v.line, v.status, v.message) for v in found]
    assert len(notes) == 1 and notes[0].status == note, notes[0].message


@pytest.mark.parametrize("line,status", [("L = 0.928 nats", "correct"), ("L = 0.928 nat.", "correct"),
                                         ("L = 0.930 nats", "wrong")])
def test_the_loss_with_its_unit(derivation, line, status):
    """L = 0.928 (the seed page's loss, in nats) written with its unit after it (0.929 is explained: -ln 0.395)."""
    assert verdict(derivation, line).status == status


@pytest.mark.parametrize("text", ["", "\n  \n", "\ufeff"])
def test_an_empty_file_says_so(tmp_path, text):
    """An empty file (or blank lines alone) is bad input: one line naming the file, exit 2 (it exited 0)."""
    from typer.testing import CliRunner

    from derive.cli import app
    empty = tmp_path / "empty.txt"
    empty.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["check", "cat-climbed", str(empty)], env={"COLUMNS": "300"})
    assert result.exit_code == 2 and result.output.strip().splitlines() == [
        f"error: {empty}: the file is empty (expected lines of a hand computation, such as `sigma_5 = 0.866`)"]


def test_a_file_without_numbers_says_so(tmp_path):
    from typer.testing import CliRunner

    from derive.cli import app
    words = tmp_path / "words.txt"
    words.write_text("Some words about attention.\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["check", "cat-climbed", str(words)])
    assert result.exit_code == 0 and "no line of the file gives a number to check" in " ".join(result.output.split())
