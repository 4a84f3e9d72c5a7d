"""The round trip (issues 8 and 11): derive's own outputs, fed to ``derive check``, give no
line judged wrong and no unreadable line, and every number derive writes in a table or an
equation is judged correct or explained.

Every bundled case is written by the CLI as the terminal's text (``derive run``), as Markdown in each flavour (pandoc, the
default; katex, whose TeX is backslash-escaped for KaTeX's auto-render; github, with
``$`...`$`` and ```` ```math ```` blocks) and as LaTeX (a chapter, and ``--standalone``), then
checked in-process (crane, 64 tokens and a 3 MB chapter, as text, Markdown and LaTeX only,
marked slow). The floor of good verdicts is counted from the derivation itself, not
from the checker: one per table cell and per equation whose value is a quantity (a row of
numbers is one cell); each must be judged. A deliberately altered number (p(␣roof), 0.395 on
the seed page /work/shared/seeds/000_c4d6024fc6c69432.txt, written 0.396) must be judged
wrong in every format, so the round trip can fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from derive.case import load_case
from derive.check import FAILING, Checker
from derive.derivation import derive
from derive.steps import Ref, Vec

GOOD = ("correct", "explained")

FORMATS = [("run", []), ("markdown", []), ("markdown", ["--flavor", "katex"]), ("markdown", ["--flavor", "github"]),
           ("latex", []), ("latex", ["--standalone"])]
QUICK = ["cat-climbed", "softmax"]  # the seed case, and a case that starts from logits
# about 1 to 5 s each per format (woodchuck, encoder-post-norm, cat-climbed-llama: 10 to 30 s)
SLOW = ["attention-qkv", "raschka-simplified", "yeh-small", "softmax-temperature", "woodchuck", "encoder-post-norm",
        "cat-climbed-llama"]
MATRIX = [pytest.param(case, command, options, id=f"{case}-{command}{''.join(options)}",
                       marks=[pytest.mark.slow] if case in SLOW else [])
          for case in QUICK + SLOW for command, options in FORMATS]
# other writings: delimiters, exact forms (a softmax weight exactly 1/2 of a ball e^{√2} / (2 e^{√2})), significant
# figures (notes whose inputs and "exact value" are written with cut digits)
OTHERS = [
    ("cat-climbed", "markdown", ["--math", "brackets"]),
    ("cat-climbed", "markdown", ["--flavor", "katex", "--math", "dollars"]),
    ("attention-qkv", "markdown", ["--flavor", "github", "--exact"]),
    ("encoder-post-norm", "markdown", ["--sig", "4"]),
]
EXACT = [  # (run --exact: its exact forms in SymPy's syntax, x**2, read back; a trial found 478 lines unreadable)
    ("cat-climbed", "run", ["--exact"], 1100, 575),
    ("cat-climbed", "markdown", ["--exact"], 1100, 575),
    ("cat-climbed", "latex", ["--exact"], 1100, 575),
]


def write(tmp_path: Path, case: str, command: str, options: list[str]) -> Path:
    """The chapter derive writes (through its CLI), as a file."""
    out = tmp_path / f"{Path(case).stem}.{ {'markdown': 'md', 'latex': 'tex'}.get(command, 'txt')}"
    script = Path(sys.executable).with_name("derive")
    cli = [str(script)] if script.exists() else [sys.executable, "-m", "derive"]
    done = subprocess.run(cli + [command, case, "-o", str(out)] + options, capture_output=True, text=True,
                          env=dict(os.environ, COLUMNS="200"), timeout=600)
    assert done.returncode == 0, done.stderr
    return out


_WRITTEN: dict = {}


def chapter(factory, case: str, command: str, options: list[str]) -> str:
    """The text derive writes for a bundled case, written once per test session (the
    round trip and the altered number read the same file)."""
    key = (case, command, tuple(options))
    if key not in _WRITTEN:
        _WRITTEN[key] = write(factory.mktemp("chapter"), case, command, options).read_text(encoding="utf-8")
    return _WRITTEN[key]


_DERIVED: dict = {}


def derived(case: str):
    if case not in _DERIVED:
        _DERIVED[case] = derive(load_case(case))
    return _DERIVED[case]


def written_values(derivation) -> int:
    """How many values derive writes in its tables and equations: the cells and right
    sides that are a quantity or a row of them (counted from the steps, not from a page)."""
    cells = sum(isinstance(cell, (Ref, Vec)) for step in derivation.steps for table in step.tables
                for row in table.rows for cell in row)
    return cells + sum(isinstance(eq.rhs, (Ref, Vec)) for step in derivation.steps for eq in step.equations)


def round_trip(tmp_path, case, command, options, good_floor, line_floor, text=None):
    text = text if text is not None else write(tmp_path, case, command, options).read_text(encoding="utf-8")
    verdicts = Checker(derived(case)).check_text(text)
    bad = [(v.line, v.status, v.source, v.message) for v in verdicts if v.status in FAILING]
    assert not bad, bad[:5]
    good = [v for v in verdicts if v.status in GOOD]
    assert len(good) >= good_floor, len(good)
    assert len({v.line for v in good}) >= line_floor
    return verdicts


@pytest.mark.parametrize("case,command,options", MATRIX)
def test_round_trip(tmp_path_factory, case, command, options):
    """No wrong, no unreadable line; every value of a table or an equation judged (the notes
    under the tables come on top: a reader's calculation, explained, never wrong)."""
    verdicts = round_trip(None, case, command, options, 0, 0, chapter(tmp_path_factory, case, command, options))
    good = [v for v in verdicts if v.status in GOOD]
    notes = [v for v in good if v.status == "explained" and "printed inputs" in v.message]
    assert len(good) - len(notes) >= written_values(derived(case)), (len(good), len(notes))
    if case in ("cat-climbed", "woodchuck"):
        assert notes


@pytest.mark.slow
@pytest.mark.parametrize("command", ["run", "markdown", "latex"])
def test_round_trip_crane(tmp_path_factory, command):
    """crane (64 tokens, three heads of which one is hand-set with its own W_Q beside the two
    that split one): every verdict correct or explained, none "not checked". Its LaTeX cuts
    the wide and long tables into parts (the comment before each tabular says which rows and
    columns) and summarises tables of more than 16 rows (``… 56 rows omitted``): the ids row
    of the prompt's 4th part and the rows after a gap are read in their place; the block's
    dL/dW_Q rows hold W_Q's 16 columns then the hand-set head's one."""
    verdicts = round_trip(None, "crane", command, [], 0, 0, chapter(tmp_path_factory, "crane", command, []))
    assert {v.status for v in verdicts} <= set(GOOD), [(v.line, v.status) for v in verdicts if v.status not in GOOD][:5]
    good = [v for v in verdicts if v.status in GOOD]
    notes = [v for v in good if v.status == "explained" and "printed inputs" in v.message]
    if command != "latex":  # (the LaTeX summarises its long tables)
        assert len(good) - len(notes) >= written_values(derived("crane")), (len(good), len(notes))
    else:
        assert len(good) > 3000


@pytest.mark.parametrize("case,command,options", OTHERS, ids=[f"{c}-{m}{''.join(o)}" for c, m, o in OTHERS])
def test_round_trip_other_writings(tmp_path, case, command, options):
    verdicts = round_trip(tmp_path, case, command, options, 0, 0)
    good = [v for v in verdicts if v.status in GOOD]
    notes = [v for v in good if v.status == "explained" and "printed inputs" in v.message]
    assert len(good) - len(notes) >= written_values(derived(case)), (len(good), len(notes))


ODD_PIECES = str(Path(__file__).parent / "cases" / "odd_pieces.toml")


@pytest.mark.parametrize("command,options", [pytest.param(c, o, id=f"{c}{''.join(o)}") for c, o in FORMATS])
def test_round_trip_with_pieces_that_markup_escapes(tmp_path, command, options):
    """The seed's numbers under pieces that the chapters write with escapes (a|b, {x}, 50%,
    R&D, and a backslash before n; tests/cases/odd_pieces.toml): a Markdown row's ``\\|`` is a
    pipe inside its cell, not a column, and ``\\texttt{50\\%}``, ``\\texttt{R\\&D}``,
    ``\\texttt{\\{x\\}}`` and ``\\texttt{\\textbackslash{}n}`` are the pieces: nothing wrong
    or unreadable, every value judged, and the rows of the prompt's tokens are its positions."""
    verdicts = round_trip(tmp_path, ODD_PIECES, command, options, 0, 0)
    good = [v for v in verdicts if v.status in GOOD]
    notes = [v for v in good if v.status == "explained" and "printed inputs" in v.message]
    assert len(good) - len(notes) >= written_values(derived(ODD_PIECES)), (len(good), len(notes))
    names = {v.name for v in good}
    assert {"x_2", "mu_3", "p(a|b)", "p({x})", "p(50%)", "p(R&D)", "p(\\n)"} <= names, sorted(map(str, names))


# odd_pieces.toml with the pieces a|b, {x}, 50%, R&D and \n changed for others that the
# chapters write with markup: a backtick (Markdown's and the terminal's ``a`b`` span), a dollar
# (TeX's \$, kept in a `$5` code span) and the signs ·, − and × (LaTeX's \textperiodcentered,
# \textminus, \texttimes commands), the ids and numbers kept
MORE_ODD_PIECES = {"a|b": "a`b", "{x}": "$5", "50%": "a\u00b7b", "R&D": "x\u2212y", "\\\\n": "2\u00d7x"}


@pytest.mark.parametrize("command,options", [pytest.param(c, o, id=f"{c}{''.join(o)}") for c, o in FORMATS])
def test_round_trip_with_pieces_written_as_commands_or_code(tmp_path, command, options):
    """derive's own chapters of the seed's numbers under the pieces a`b, $5, a·b, x−y and 2×x
    (:data:`MORE_ODD_PIECES`) read back whole: nothing wrong or unreadable, every value judged,
    the logits of each piece by its name. Before, the column ``a`b`` (Markdown's double
    backticks) was unreadable, the cell reader took the $ out of `$5` and \\$5, and LaTeX's
    ``\\texttt{a\\textperiodcentered\\allowbreak{}b}`` read as the piece atextperiodcentered..."""
    text = Path(ODD_PIECES).read_text(encoding="utf-8").replace('name = "odd-pieces"', 'name = "odd-pieces-2"')
    pieces = text[text.index("pieces = ["):].split("\n", 1)[0]
    for old, new in MORE_ODD_PIECES.items():
        pieces = pieces.replace(f'"{old}"', f'"{new}"')
    case = tmp_path / "odd_pieces_2.toml"
    case.write_text(text.replace(text[text.index("pieces = ["):].split("\n", 1)[0], pieces), encoding="utf-8")
    derivation = derive(load_case(str(case)))
    assert derivation.case.pieces[2:8] == ["a`b", "$5", "a\u00b7b", "x\u2212y", "\u2423roof", "2\u00d7x"]
    out = write(tmp_path, str(case), command, options)
    verdicts = Checker(derivation).check_text(out.read_text(encoding="utf-8"))
    bad = [(v.line, v.status, v.source, v.message) for v in verdicts if v.status in FAILING]
    assert not bad, bad[:5]
    good = [v for v in verdicts if v.status in GOOD]
    notes = [v for v in good if v.status == "explained" and "printed inputs" in v.message]
    assert len(good) - len(notes) >= written_values(derivation), (len(good), len(notes))
    names = {str(v.name) for v in good}
    assert {"p(a`b)", "p($5)", "p(a\u00b7b)", "p(x\u2212y)", "p(2\u00d7x)", "x_2", "mu_4"} <= names, sorted(names)


def norm_case(tmp_path: Path, name: str, edit) -> str:
    """cat-climbed with its norms changed by ``edit`` (a function of the TOML text), as a file."""
    text = (Path(__file__).parents[1] / "cases" / "cat-climbed.toml").read_text(encoding="utf-8")
    path = tmp_path / f"{name}.toml"
    path.write_text(edit(text.replace('name = "cat-climbed"', f'name = "{name}"')), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("name,edit", [
    ("cat-rmsnorm", lambda t: t.replace("[conventions]\n", '[conventions]\nnorm = "rmsnorm"\n', 1)),
    ("cat-mixed", lambda t: t.replace("[model]\n", '[model]\nlnf = "rmsnorm"\n', 1)
     .replace("[[blocks]]\n", '[[blocks]]\nln1 = "layernorm"\nln2 = "rmsnorm"\n', 1)),
])
def test_round_trip_rmsnorm(tmp_path, name, edit):
    """The rms column of each norm table is that norm's rms (rms'_5 before the MLP, rms^f_5
    before W_U), and each norm sentence's eps is its own norm's (rmsnorm_eps = 1e-6,
    layernorm_eps = 1e-5 in the mixed case)."""
    case = norm_case(tmp_path, name, edit)
    verdicts = round_trip(tmp_path, case, "markdown", [], 480, 200)
    eps = [v.message.rpartition(": ")[2] for v in verdicts if v.name == "eps"]  # (after the formula quoted)
    assert "eps = 0.000001 in this case" in eps
    assert ("eps = 0.00001 in this case" in eps) == (name == "cat-mixed")
    rms = {v.name for v in verdicts if v.name and v.name.startswith("rms")}
    assert {"rms'_5", "rms^f_5"} <= rms


@pytest.mark.parametrize("command", ["run", "markdown", "latex"])
def test_round_trip_with_a_temperature(tmp_path, command):
    """A model case at T = 2: its logits table (sorted by z, its column e^(z/T)) reads back
    from derive's own page, every row by its token, each e^(z_j/T) by that name (the page's
    table matched by its key, not its place: it was 'no quantity is called T_roof' for each
    of its 12 rows)."""
    case = norm_case(tmp_path, "cat-hot", lambda t: t.replace("temperature = 1", "temperature = 2", 1))
    verdicts = round_trip(tmp_path, case, command, [], 600, 200)
    exp = [v for v in verdicts if v.name and v.name.startswith("e^(z_") and v.status == "correct"]
    assert len(exp) >= 10, [v.name for v in verdicts if v.name and v.name.startswith("e^")]


@pytest.mark.slow
@pytest.mark.parametrize("case,command,options,good_floor,line_floor", EXACT,
                         ids=[f"{c}-{m}{''.join(o)}" for c, m, o, _, _ in EXACT])
def test_round_trip_exact(tmp_path, case, command, options, good_floor, line_floor):
    verdicts = round_trip(tmp_path, case, command, options, good_floor, line_floor)
    # p(the) = e^{z_the} / sum_j e^{z_j}: the softmax's sum is the quantity of that name
    assert not [(v.line, v.message) for v in verdicts if v.status == "not checked"]


def test_an_altered_number_is_wrong(tmp_path_factory):
    """p(␣roof) is 0.395 on the seed page (/work/shared/seeds/000...): written 0.396 in the
    logits table, in the loss display, and a note's arithmetic changed, each is wrong."""
    text = chapter(tmp_path_factory, "cat-climbed", "markdown", [])
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("| `␣roof` |"))
    assert lines[row].rstrip().endswith("| 0.395 |")
    lines[row] = lines[row].replace("| 0.395 |", "| 0.396 |")
    display = next(i for i, line in enumerate(lines) if line.startswith(r"p(\texttt") and "&= 0.395" in line)
    lines[display] = lines[display].replace("0.395", "0.396")
    note = next(i for i, line in enumerate(lines) if "-0.987 + 0.928 + 1.011 - 0.5345 = 0.4175" in line)
    lines[note] = lines[note].replace("= 0.4175", "= 0.4185")
    verdicts = Checker(derived("cat-climbed")).check_text("\n".join(lines))
    wrong = {v.line: v for v in verdicts if v.status == "wrong"}
    assert set(wrong) == {row + 1, display + 1, note + 1}
    assert wrong[row + 1].name == "p(␣roof)" and wrong[row + 1].expected == ["0.395"]
    assert "0.4185" in wrong[note + 1].message


@pytest.mark.parametrize("command,options", [pytest.param(c, o, id=f"{c}{''.join(o)}") for c, o in FORMATS])
def test_an_altered_number_is_wrong_in_every_format(tmp_path_factory, command, options):
    """p(␣roof) = 0.395 (the seed page) written 0.396 in the logits table's row and in the
    loss equation: both lines are wrong, in each format, and nothing else is."""
    lines = chapter(tmp_path_factory, "cat-climbed", command, options).splitlines()
    roof = [i for i, line in enumerate(lines) if "roof" in line and "0.395" in line]
    row = next(i for i in roof if any(mark in lines[i] for mark in ("|", "\u2502", " & ")))
    equation = next(i for i in roof if "= 0.395" in lines[i] and "before" not in lines[i])
    for i in (row, equation):
        assert lines[i].count("0.395") == 1, lines[i]
        lines[i] = lines[i].replace("0.395", "0.396")
    verdicts = Checker(derived("cat-climbed")).check_text("\n".join(lines))
    wrong = {v.line: v for v in verdicts if v.status in FAILING}
    assert set(wrong) == {row + 1, equation + 1}, [(v.line, v.status, v.message) for v in wrong.values()]
    assert all(v.status == "wrong" and v.expected == ["0.395"] for v in wrong.values())


def test_latex_table_cells_and_notes_are_read(tmp_path):
    """A LaTeX booktabs row with siunitx numbers and footnote marks, and its note."""
    text = write(tmp_path, "cat-climbed", "latex", ["--step", "layernorm"]).read_text(encoding="utf-8")
    verdicts = Checker(derived("cat-climbed")).check_text(text)
    names = [v.name for v in verdicts if v.status == "correct"]
    assert {"mu_1", "sigma_1", "u_1[1]", "u_5[4]", "mu_5", "sigma_5", "u_5"} <= set(names)
    notes = [v for v in verdicts if v.status == "explained"]
    assert len(notes) == 6  # u_1[1], u_1[2], u_1[4], u_3[4], u_4[1], u_4[2]


def test_flavours_are_read_as_their_html_holds_them():
    """GitHub's math delimiters become $ and $$; a page escaped for KaTeX's auto-render has
    Markdown's escapes undone (CommonMark 0.31, 2.4), code spans and a table's \\| kept; a
    LaTeX file (a tabular's ``\\\\[2pt]`` and ``\\\\\\hline``) is left as it is."""
    from derive.handfile import as_written
    assert as_written(["$`u_{5}`$ is", "```math", r"\mu_{5} &= 0.000", "```"]) == \
        ["$u_{5}$ is", "$$", r"\mu_{5} &= 0.000", "$$"]
    assert as_written([r"\\(u\_{5}\\) and \\(\\sigma\_{5}\\)", r"| `a\_b` \| c | \\(x\_{1}\\) |", r"\\["]) == \
        [r"\(u_{5}\) and \(\sigma_{5}\)", r"| `a\_b` \| c | \(x_{1}\) |", r"\["]
    latex = [r"\begin{tabular}{ll}", r"a & b \\[2pt]", r"\\\hline", r"\(u\_{5}\) \\(b)"]
    assert as_written(latex) == latex


def test_softmax_names_and_settings_are_judged():
    """What the softmax pages write, each way a reader could: the denominator
    sum_j e^{z_j} of Wikipedia's softmax of (1, 2, 3, 4, 1, 2, 3) (2e + 2e^2 + 2e^3 + e^4,
    from Python's math), dL/dz = p - y of the target d, the one-hot y, and the temperature
    T = 1/2 of softmax-temperature (its case file); a changed value of each is wrong."""
    import math
    total = 2 * math.e + 2 * math.e ** 2 + 2 * math.e ** 3 + math.e ** 4
    p_d = math.e ** 4 / total
    grad_d = f"{p_d - 1:.3f}"
    lines = [f"sum_j e^(z_j) = {total:.3f}",
             rf"$$\sum_{{j}} e^{{(z_{{j}})}} = {total:.3f}$$",
             f"$$\\sum_{{j}} e^{{z_{{j}}}} = {total + 0.01:.3f}$$",
             "| token | $y$ | $\\partial L / \\partial z = (p - y)$ | dL/dz |",
             "|:--|--:|--:|--:|",
             f"| `d` | 1 | {grad_d} | {grad_d} |",
             "| `c` | 1 | 0.175 | 0.176 |"]
    verdicts = Checker(derived("softmax")).check_text("\n".join(lines))
    status = [(v.line, v.status) for v in verdicts]
    assert status == [(1, "correct"), (2, "correct"), (3, "wrong"), (6, "correct"), (6, "correct"), (6, "correct"),
                      (7, "wrong"), (7, "correct"), (7, "wrong")], [(v.line, v.status, v.message) for v in verdicts]
    verdicts = Checker(derived("softmax-temperature")).check_text("$T = 1/2$ divides\n$T = 1/3$ divides")
    assert [v.status for v in verdicts] == ["correct", "wrong"]


def test_rotary_width_is_judged():
    """r, the columns RoPE turns, is d_k = d_model / heads = 4 / 2 = 2 in cat-climbed-llama
    (its case file: rotary positions, no rotary_fraction); r = 4 is wrong, and a case without
    rotary positions has no r to judge."""
    text = "with $r = 2$ and pos\nwith $r = 4$ and pos"
    assert [v.status for v in Checker(derived("cat-climbed-llama")).check_text(text)] == ["correct", "wrong"]
    assert [v.status for v in Checker(derived("cat-climbed")).check_text(text)] == ["not checked", "not checked"]


def test_a_note_over_cut_inputs(tmp_path_factory):
    """With --sig 4, a note divides numbers written with cut digits: 0.195390… / (0.195390… +
    1.781067… + 2.911995… + 1) is between 0.195390 / 5.888455 = 0.0331818… and 0.195391 /
    5.888452 = 0.0331821… (Python's fractions), so its digits 0.033182… hold (the cut inputs
    taken as written give 0.033181…), and 0.033192… is wrong."""
    from fractions import Fraction
    low = Fraction("0.195390") / (Fraction("0.195391") + Fraction("1.781068") + Fraction("2.911996") + 1)
    high = Fraction("0.195391") / (Fraction("0.195390") + Fraction("1.781067") + Fraction("2.911995") + 1)
    assert Fraction("0.033182") <= high and low < Fraction("0.033183") and high < Fraction("0.033192")
    lines = chapter(tmp_path_factory, "cat-climbed", "markdown", ["--sig", "4"]).splitlines()
    claim = "0.195390\\ldots + 1.781067\\ldots + 2.911995\\ldots + 1) = 0.033182\\ldots"
    note = next(i for i, line in enumerate(lines) if claim in line)
    verdicts = Checker(derived("cat-climbed")).check_text("\n".join(lines))
    assert [v.status for v in verdicts if v.line == note + 1] == ["explained"]
    assert not [v for v in verdicts if v.status in FAILING]
    lines[note] = lines[note].replace("= 0.033182", "= 0.033192")
    verdicts = Checker(derived("cat-climbed")).check_text("\n".join(lines))
    assert [v.status for v in verdicts if v.line == note + 1] == ["wrong"]


PARTS = r"""% derive: rows 1-1, columns 1 2 3 4
\begin{tabular}{l r r r}
\toprule
token & \texttt{the} & \texttt{\textvisiblespace{}cat} & \texttt{\textvisiblespace{}climb} \\
\midrule
id & 0 & 2 & 4 \\
\bottomrule
\end{tabular}

% derive: continued, rows 1-1, columns 1 5 6
\begin{tabular}{l r r}
\toprule
token & \texttt{ed} & \texttt{\textvisiblespace{}the} \\
\midrule
id & ID_ED & ID_THE \\
\bottomrule
\end{tabular}

\begin{tabular}{l l}
\toprule
token & $x_t = E[\mathrm{id}] + P_t$ \\
\midrule
\texttt{the} & $[-0.5, -0.5, 0.0, 1.0]$ \\
\multicolumn{2}{c}{\ldots{} 3 rows omitted; \texttt{-{}-all-rows} prints them} \\
\texttt{\textvisiblespace{}the} & $[X_5]$ \\
\bottomrule
\end{tabular}
"""


@pytest.mark.parametrize("ids,x5,wrong", [
    (("5", "1"), "-0.5, -0.5, -0.5, 1.5", set()),
    (("1", "5"), "-0.5, -0.5, -0.5, 1.5", {"id of ed", "id of ␣the"}),
    (("5", "1"), "-0.5, 0.0, -0.5, 1.0", {"x_5"}),
])
def test_a_table_in_parts_and_after_a_gap(ids, x5, wrong):
    """A LaTeX table cut into parts by columns (derive's comment before each tabular names
    the columns it holds) and a summarised one (``… 3 rows omitted``): the seed page's
    prompt (/work/shared/seeds/000_c4d6024fc6c69432.txt, step 2: ids 0 2 4 5 1; step 3:
    x_5 = [−0.5, −0.5, −0.5, 1.5], x_1 = [−0.5, −0.5, 0.0, 1.0]). The second part's cells
    are positions 4 and 5 (not 1 and 2), the row after the gap is position 5 (not 2); the
    ids swapped or E[id] without P_5 are wrong."""
    text = PARTS.replace("ID_ED", ids[0]).replace("ID_THE", ids[1]).replace("X_5", x5)
    verdicts = Checker(derived("cat-climbed")).check_text(text)
    assert len(verdicts) == 7
    assert {v.status for v in verdicts} <= {"correct", "wrong"}, [(v.line, v.status, v.message) for v in verdicts]
    assert {v.name for v in verdicts if v.status == "wrong"} == wrong, [(v.name, v.message) for v in verdicts]
    assert "x_5" in {v.name for v in verdicts}


# The seed page's step 1 (ids 0 2 4 5 1) and step 6, head 1 (k_j, q_5 · k_j, s_{5,j}, e^s, a_{5,j};
# /work/shared/seeds/000_c4d6024fc6c69432.txt) as `derive run` prints them on a narrow page: each
# table split into column groups whose titles say which columns they hold, the key column
# repeated, a vector wrapped after its comma onto the next line, a header over two lines.
NARROW = """and each piece becomes the number of its row.
 (columns 1-3 of 5)
┏━━━━━━━┳━━━━━━━┳━━━━━━━━┳━━━━━━━━━━┓
┃ token ┃ `the` ┃ `␣cat` ┃ `␣climb` ┃
┡━━━━━━━╇━━━━━━━╇━━━━━━━━╇━━━━━━━━━━┩
│ id    │ 0     │ 2      │ 4        │
└───────┴───────┴────────┴──────────┘
 (columns 4-5 of 5)
┏━━━━━━━┳━━━━━━┳━━━━━━━━┓
┃ token ┃ `ed` ┃ `␣the` ┃
┡━━━━━━━╇━━━━━━╇━━━━━━━━┩
│ id    │ ID_ED    │ ID_THE      │
└───────┴──────┴────────┘

Step 7. The attention of each head
Head 1, row 5 (columns 1-2 of 5)
┏━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━┓
┃          ┃          ┃ q_5 .  ┃
┃ j        ┃ k_j      ┃ k_j    ┃
┡━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━┩
│ `the`    │ [−0.816, │ −2.357 │
│          │ 1.633]   │        │
│ `␣cat`   │ [−0.577, │ −0.667 │
│          │ −0.577]  │        │
│ `␣climb` │ [1.604,  │ 3.395  │
│          │ −1.069]  │        │
│ `ed`     │ [1.414,  │ 2.449  │
│          │ K_ED]   │        │
│ `␣the`   │ [−0.577, │ −2.000 │
│          │ 1.732]   │        │
└──────────┴──────────┴────────┘
Head 1, row 5 (columns 3-5 of 5)
┏━━━━━━━━━━┳━━━━━━━━┳━━━━━━━━┳━━━━━━━━┓
┃ j        ┃ s_5,j  ┃ e^s    ┃ a_5,j  ┃
┡━━━━━━━━━━╇━━━━━━━━╇━━━━━━━━╇━━━━━━━━┩
│ `the`    │ −1.667 │ 0.189  │ A_1  │
│ `␣cat`   │ −0.471 │ 0.624  │ 0.035  │
│ `␣climb` │ 2.400  │ 11.027 │ 0.622  │
│ `ed`     │ 1.732  │ 5.652  │ 0.319  │
│ `␣the`   │ −1.414 │ 0.243  │ A_5  │
└──────────┴────────┴────────┴────────┘
"""


@pytest.mark.parametrize("ids,k_ed,a,wrong", [
    (("5", "1"), "0.000", ("0.011", "0.014"), set()),
    (("1", "5"), "0.000", ("0.011", "0.014"), {"id of ed", "id of ␣the"}),
    (("5", "1"), "0.001", ("0.014", "0.011"), {"k_4", "a_{5,1}", "a_{5,5}"}),
])
def test_a_terminal_table_in_column_groups_with_wrapped_cells(ids, k_ed, a, wrong):
    """``derive run`` at a narrow width: a table wider than the page is split into column
    groups, each read with its own header and placed by its title's columns (the second
    group's ids are positions 4 and 5, not 1 and 2); a cell continued on the lines below its
    row (a vector, a header's words) is one cell. The seed's numbers are correct; the ids
    swapped, k_4's 0.000 written 0.001 on its second line, or a_{5,1} and a_{5,5} swapped
    are wrong, and nothing else is."""
    text = (NARROW.replace("ID_ED    ", ids[0].ljust(4)).replace("ID_THE      ", ids[1].ljust(6))
            .replace("K_ED] ", k_ed + "]").replace("A_1  ", a[0] + " ").replace("A_5  ", a[1] + " "))
    verdicts = Checker(derived("cat-climbed")).check_text(text)
    assert len(verdicts) == 5 + 5 * 5, [(v.line, v.status, v.message) for v in verdicts]
    assert {v.status for v in verdicts} <= {"correct", "wrong"}, [(v.line, v.status, v.message) for v in verdicts]
    assert {v.name for v in verdicts if v.status == "wrong"} == wrong, [(v.name, v.message) for v in verdicts]


@pytest.mark.parametrize("width", [40, 50, 80])
def test_round_trip_at_a_narrow_width(tmp_path, width):
    """``derive run cat-climbed --width W`` written to a file reads back as the wide page
    does: every value judged correct or explained, none wrong, unreadable or not checked
    (at 80 columns 187 cells of wrapped vectors were "not checked" and a wrapped sentence
    unreadable; at 50 the tokens table's second column group was read as the first's)."""
    verdicts = round_trip(tmp_path, "cat-climbed", "run", ["--width", str(width)], 0, 0)
    assert {v.status for v in verdicts} <= set(GOOD), [(v.line, v.status, v.message) for v in verdicts
                                                       if v.status not in GOOD][:5]
    good = [v for v in verdicts if v.status in GOOD]
    notes = [v for v in good if v.status == "explained" and "printed inputs" in v.message]
    assert len(good) - len(notes) >= written_values(derived("cat-climbed")), (len(good), len(notes))


def test_round_trip_with_numbers_wider_than_the_page(tmp_path):
    """At 30 places on a page of 40 columns Rich folds a number wider than the page onto the
    next line (in a cell, a note, a value after ``L before =``) and narrows a gradient
    table's key column to nothing: the folded pieces join without a space (the notes' 41
    reader's calculations were judged wrong, "1.60355 8288310507784800562…"), and a table
    whose rows lost their key is "not checked" once, with the reason, never a false verdict."""
    verdicts = round_trip(tmp_path, "cat-climbed", "run", ["--places", "30", "--width", "40"], 600, 0)
    skipped = [v for v in verdicts if v.status not in GOOD]
    assert all("rows have no key" in v.message for v in skipped), [(v.line, v.status, v.message) for v in skipped]
    assert len({v.line for v in skipped}) == len(skipped) <= 4


@pytest.mark.parametrize("last,status", [("1.732", "correct"), ("1.733", "wrong")])
def test_wrapped_sentences_and_equations_are_read_whole(last, status):
    """The terminal wraps a paragraph and an equation at the page's width: a sentence's
    second line (``+ attn and y = h + m.``) is prose, not an unreadable equation, and an
    equation continued on the next line is one value (the seed's u_5 = [−0.577, −0.577,
    −0.577, 1.732], step 4). A line that starts as an equation of its own after an
    unfinished sentence is still read as one (``0.3.95`` is unreadable, not prose)."""
    text = ("The residual connection adds each sublayer's output to the stream it read: h = x\n"
            "+ attn and y = h + m.\n"
            "u_5 = (x_5 - mu_5) / sigma_5 = [−0.577,\n"
            f"−0.577, −0.577, {last}]\n"
            "We write the probability of the target\n"
            "p(␣roof) = 0.3.95\n")
    verdicts = Checker(derived("cat-climbed")).check_text(text)
    assert [(v.line, v.status) for v in verdicts] == [(3, status), (6, "unreadable")], \
        [(v.line, v.status, v.message) for v in verdicts]
    assert verdicts[0].name == "u_5"


GQA = """[vocab]
pieces = ["t", "u", "v"]
[prompt]
ids = [0, 1, 2]
target = "u"
[conventions]
positions = "none"
[model]
d_model = 8
heads = 4
E = [[1, 2, 3, 4, 0, 1, 0, 1], [4, 3, 2, 1, 1, 0, 1, 0], [0, 1, 0, -1, 2, 0, 1, 1]]
W_U = [[1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1]]
[[blocks]]
sublayers = ["attention"]
kv_heads = 2
W_Q = "I"
W_K = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
W_V = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0], [1, 0, 0, 0]]
W_O = "I"
"""


@pytest.mark.parametrize("command", ["run", "markdown"])
def test_round_trip_grouped_query_attention(tmp_path, command):
    """Four query heads sharing two key/value heads (a trial's case): the page's "K head 2"
    is the keys head 2 shares with head 1 (columns 1-2 of K), "K head 3" those heads 3 and
    4 share (columns 3-4); derive's own page checked no line wrong or unreadable (it had
    9 wrong, "the value of head 1, not head 2", and 18 unreadable)."""
    from derive.names import find

    case = tmp_path / "gqa.toml"
    case.write_text(GQA, encoding="utf-8")
    derivation = derived(str(case))
    labels = {h: [derivation.meta(r).label for r in find(derivation, "k_1", head=h)] for h in (1, 2, 3, 4)}
    assert labels == {1: ["k_1[1]", "k_1[2]"], 2: ["k_1[1]", "k_1[2]"], 3: ["k_1[3]", "k_1[4]"],
                      4: ["k_1[3]", "k_1[4]"]}
    verdicts = round_trip(tmp_path, str(case), command, [], 0, 0)
    good = [v for v in verdicts if v.status in GOOD]
    notes = [v for v in good if v.status == "explained" and "printed inputs" in v.message]
    assert len(good) - len(notes) >= written_values(derivation)
