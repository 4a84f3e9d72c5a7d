"""Issue 11, "Unreadable": the ways people write a value are read, and judged.

Unicode scripts (μ₅, u₅), √, ×, ·, −; LaTeX \\frac, \\exp, \\ln, \\sqrt, bmatrix and pmatrix;
x5, X[5], p("␣roof"), p(" roof"), p_roof, 39.5%, 3/4; gradients and the pass after the step
(∂L/∂E[␣the], dL/dE_2, L after). Each line is written with its right value, computed here
(Decimal, math, fractions, tests/hand/hand_reference.py's exact forward pass, or the seed
page's published gradient table), and once with a wrong last digit, which must be wrong.
"""

from __future__ import annotations

import math
import re
import sys
from decimal import Decimal, getcontext
from fractions import Fraction as F
from pathlib import Path

import pytest

from derive.check import Checker
from derive.errors import DeriveError

sys.path.insert(0, str(Path(__file__).parent / "hand"))
import hand_reference as R  # noqa: E402
from test_check import derivation, exact  # noqa: E402,F401  (the seed case and its independent forward pass)

getcontext().prec = 40
U5 = [R.text(x / R.sqrt(F(3, 4) + F(1, 100000))) for x in (F(-1, 2), F(-1, 2), F(-1, 2), F(3, 2))]
# the seed page's table of dL/dE_i, row of ␣the (id 1), and the loss after the step (step 2b)
GRAD_THE = ["-0.011", "0.011", "0.027", "-0.028"]
L_AFTER = "0.927"


def lines(exact):
    """(line with the right value, the same line with a wrong value)."""
    p = R.text(exact["p"]["␣roof"])
    percent = f"{Decimal(p) * 100:.1f}%"
    u5 = ", ".join(U5)
    e24 = f"{Decimal('2.400').exp():.3f}"
    log2 = f"{-math.log2(0.245):.3f}"
    rows, column = " & ".join(U5), " \\\\ ".join(U5)
    right = [
        "μ₅ = 0.000",
        f"u₅ = [{u5}]",
        "\\frac{3}{4} = 0.750",
        f"\\exp(2.400) = {e24}",
        f"\\ln(0.395) = {math.log(0.395):.3f}",
        f"\\sqrt{{0.75}} = {Decimal('0.75').sqrt():.3f}",
        f"√0.75 = {Decimal('0.75').sqrt():.3f}",
        "1.732 × −0.816 = " + f"{Decimal('1.732') * Decimal('-0.816'):.3f}".replace("-", "−"),
        "2 · 3 = 6",
        f"\\[u_5 = \\begin{{bmatrix}} {rows} \\end{{bmatrix}}\\]",
        f"\\[u_5 = \\begin{{pmatrix}} {column} \\end{{pmatrix}}\\]",
        "x5 = [-0.5, -0.5, -0.5, 1.5]",
        "X[5] = [-0.5, -0.5, -0.5, 1.5]",
        f'p("␣roof") = {p}',
        f'p(" roof") = {p}',
        f"p_roof = {p}",
        f"p(␣roof) = {percent}",
        "3/4 = 0.750",
        f"-log_2(0.245) = {log2}",
        f"∂L/∂E[␣the] = [{', '.join(GRAD_THE)}]",
        f"dL/dE_2 = [{', '.join(GRAD_THE)}]",
        f"L after = {L_AFTER}",
    ]
    return [(line, _bumped(line)) for line in right]


def _bumped(line: str) -> str:
    """The line with the last digit of its last number changed (a wrong value)."""
    last = list(re.finditer(r"\d+(\.\d+)?", line))[-1]
    digits = last.group(0)
    return line[:last.start()] + digits[:-1] + str((int(digits[-1]) + 1) % 10) + line[last.end():]


def test_each_notation_is_read_and_judged(derivation, exact):
    assert U5 == ["-0.577", "-0.577", "-0.577", "1.732"]
    for right, wrong in lines(exact):
        found = Checker(derivation).check_text(right)
        assert found and all(v.status in ("correct", "explained") for v in found), (right, [v.message for v in found])
        found = Checker(derivation).check_text(wrong)
        assert any(v.status == "wrong" for v in found), (wrong, [(v.status, v.message) for v in found])


@pytest.mark.parametrize("text,value", [("39.5%", "0.395"), ("5%", "0.05"), ("100%", "1.00")])
def test_a_percentage_is_its_fraction_with_its_places(text, value):
    from derive import mathread
    from derive.handfile import value_texts
    assert value_texts(mathread.read(text).exprs[0]) == [value]


# the seed page's sizes: "V x d = 12 x 4", "with d = 4", "h = 2 heads ... T = 1" (the
# temperature), W_1 and W_2 "32 + 32" parameters (so the MLP width is 32 / 4 = 8), and the
# five pieces of "the cat climbed the"
SIZES = [("d = 4", "correct"), ("V = 12", "correct"), ("T = 1", "correct"), ("T = 5", "correct"),
         ("d_mlp = 8", "correct"), ("d = 5", "wrong"), ("V = 50257", "wrong"), ("T = 2", "wrong"),
         ("d_{mlp} = 16", "wrong")]


@pytest.mark.parametrize("line, status", SIZES)
def test_the_chapters_letters_for_sizes_are_judged(derivation, line, status):
    """A size in the chapter's letters (d, V, T, d_mlp) is judged against the case when no
    quantity has that name; T is the temperature or the number of tokens."""
    [v] = Checker(derivation).check_text(f"with \\({line}\\), as above")
    assert v.status == status, v.message


def test_arithmetic_in_a_table_cell_is_judged(derivation):
    """The seed's table of where the weights are: "12 × 4 = 48" and "32 + 32 = 64" in a
    cell are arithmetic, judged on their own numbers (a wrong product is wrong)."""
    table = "piece\tshape\ttoy\nembedding table \\(E\\)\t\\(V \\times d\\)\t12 × 4 = {}\nMLP\twidth\t32 + 32 = 64\n"
    assert [v.status for v in Checker(derivation).check_text(table.format(48))] == ["correct", "correct"]
    assert [v.status for v in Checker(derivation).check_text(table.format(46))] == ["wrong", "correct"]


@pytest.mark.parametrize("opening, closing", [("\\[", "\\]"), ("$$", "$$")])
def test_a_matrix_over_several_lines_is_one_value(derivation, opening, closing):
    """A bmatrix whose rows are on lines of their own (as people type LaTeX) is read as one
    value, on the line where it starts; a wrong entry in its second row is wrong."""
    def text(u):
        return f"{opening}\nu_5 = \\begin{{bmatrix}}\n{u[0]} & {u[1]} \\\\\n{u[2]} & {u[3]}\n\\end{{bmatrix}}\n{closing}\n"
    [v] = Checker(derivation).check_text(text(U5))
    assert (v.status, v.line, v.written) == ("correct", 2, U5), v.message
    [v] = Checker(derivation).check_text(text(U5[:3] + ["1.733"]))
    assert v.status == "wrong", v.message


def test_a_gradient_table_keyed_by_token_alone(derivation):
    """The seed's table of dL/dE_i without its id column: the row of ␣the is E's row for
    id 1 (the seed page's printed gradient); a flipped sign is wrong."""
    table = "| token | $\\partial L / \\partial E_i$ |\n|---|---|\n| ␣the | [{}] |\n"
    [v] = Checker(derivation).check_text(table.format(", ".join(GRAD_THE)))
    assert v.status == "correct", v.message
    [v] = Checker(derivation).check_text(table.format(", ".join(["0.011"] + GRAD_THE[1:])))
    assert v.status == "wrong", v.message


@pytest.mark.parametrize("name", ["E_{2,1} after the step", "E_{2,1} after the SGD step",
                                  "E_{2,1}\\ \\text{after the step}", "E_{2,1} after"])
def test_a_weight_after_the_step_in_words(derivation, name):
    """docs/names.md's own example, `E_{2,1} after the step`: the seed page's row of ␣the
    (id 1, E's row 2) after one step, -0.5 - 0.1·(-0.011) = -0.4989 (printed -0.499); the
    update with the sign flipped, -0.501, is wrong."""
    right = R.text(F(-1, 2) - F(1, 10) * F(GRAD_THE[0]))
    assert right == "-0.499"
    [v] = Checker(derivation).check_text(f"{name} = {right}")
    assert v.status == "correct", v.message
    [v] = Checker(derivation).check_text(f"{name} = -0.501")
    assert v.status == "wrong", v.message


# A message echoed the reader's LaTeX with repr's doubled backslashes ('\\frac{1}{2}'):
# the text is echoed as written, between single quotes.
@pytest.mark.parametrize("line, message", [
    (r"$$ \frac{1}{2}\alpha\beta = 0.5 $$", r"cannot read '\frac{1}{2}\alpha\beta' as a name or as arithmetic"),
    (r"\[ \mathcal{E}_{1} = 0.3 \]", r"cannot read '\mathcal{E}_{1}' as a name or as arithmetic"),
    (r"L = 0.5 = \frac{1}{q}", r"cannot read the value '\frac{1}{q}': expected a number such as 0.395 or a vector [a, b]"),
    (r"\sqrt{2} + \sqrt{ = 1.414", r"cannot read the arithmetic '\sqrt{2} + \sqrt{': a bracket is not closed"),
    (r"\[ \foo_5 = 0.3 \]", r"cannot read the arithmetic '\foo_5': derive cannot evaluate \foo"),
    ("| token | p |\n|---|---|\n| ␣roof | 0.395 |\n| ␣wall | \\frac{1}{2}x |",
     r"cannot read the cell '\frac{1}{2}x': expected a number or a vector [a, b]"),
    ("| token | \\hat{p} |\n|---|---|\n| ␣roof | 0.3 |",
     r"not checked: a table that names no quantity of this case (cannot evaluate the column '\hat{p}': "
     r"derive cannot evaluate \hat)"),
])
def test_a_message_echoes_latex_as_written(derivation, line, message):
    verdicts = Checker(derivation).check_text(line)
    assert verdicts[-1].message == message
    assert "\\\\" not in verdicts[-1].message


def test_a_row_of_a_repeated_token_is_said_once():
    """"the cat sat on the [MASK]" (encoder-post-norm's prompt) holds `the` at positions 1
    and 5: a table row keyed `the` does not say which, and says so once per row, not once
    per column (three columns gave the message three times); a table of such rows alone
    still names quantities (mu, sigma, u_1: unreadable rows, exit code 1), not "a table
    that names no quantity of this case"."""
    from derive.case import load_case
    from derive.derivation import derive

    text = "| token | mu | sigma | u_1 |\n|---|---|---|---|\n| the | 1.000 | 1.000 | 1.000 |\n" \
           "| the | 2.000 | 2.000 | 2.000 |\n"
    verdicts = Checker(derive(load_case("encoder-post-norm"))).check_text(text)
    assert [(v.line, v.status) for v in verdicts] == [(3, "unreadable"), (4, "unreadable")], \
        [(v.line, v.status, v.message) for v in verdicts]
    assert all(v.message.startswith("the token 'the' stands at positions 1 and 5 of the prompt") for v in verdicts)


@pytest.mark.parametrize("line", ["$\\mu_5 = 0, 1$", "$\\mu_5 = 0,1$", "We find \\(x_1 = -0.5, -0.5\\) here."])
def test_numbers_after_a_name_in_inline_math_that_no_value_reads_are_said_unreadable(derivation, line):
    """Inline math giving a name a list of numbers without brackets (a trial's ``$\\mu_5 =
    0, 1$``) was dropped without a verdict, as plain text's ``mu_5 = 0, 1`` is not: it is
    unreadable, and the message quotes the value; a formula over names stays unjudged."""
    [v] = Checker(derivation).check_text(line)
    assert v.status == "unreadable" and "cannot read the value" in v.message, v.message
    assert Checker(derivation).check_text("$\\partial L / \\partial z = p - y$, the softmax's derivative") == []


def test_a_text_that_is_no_formula_raises_the_same_error_each_time():
    """A text the grammar cannot read is remembered as such (a table's title is tried as a
    name for each of its cells): each read raises an error of its own, with the same class
    and message, carrying no traceback of an earlier one."""
    from derive import mathread

    raised = []
    for _ in range(3):
        with pytest.raises(DeriveError) as info:
            mathread.read("Head 1, weights (block 1) ((")
        raised.append(info.value)
    assert len({id(e) for e in raised}) == 3
    assert len({(type(e), str(e)) for e in raised}) == 1
    assert "cannot read" in str(raised[0])
    with pytest.raises(mathread.TooLong):  # (a subclass comes back as itself)
        mathread.read("x" * (mathread.MAX_LENGTH + 1) + " + (")
    with pytest.raises(mathread.TooLong):
        mathread.read("x" * (mathread.MAX_LENGTH + 1) + " + (")


def test_a_name_with_nothing_after_its_equals_sign_is_said_unfinished(derivation):
    """``L =`` with nothing after it was taken for a definition without numbers (as
    ``L = -ln p(␣roof)``) and dropped unsaid; it is a line left unfinished. A definition
    is still no claim."""
    found = Checker(derivation).check_text("L =\n\nsigma_5 =\n\nL = -ln p(\u2423roof)\nmu_5 = 0.0\n")
    assert [(v.line, v.status) for v in found] == [(1, "unreadable"), (3, "unreadable"), (6, "correct")]
    assert all(v.message.startswith("nothing after the `=`") for v in found[:2]), [v.message for v in found]


def test_a_double_equals_sign_is_said(derivation):
    """``L==0.928`` said "cannot read 'L' as a name or as arithmetic", though L is a name
    (a trial's finding): the `==` is what derive does not read, and the message says so."""
    found = Checker(derivation).check_text("L==0.928\nsigma_5 == 0.866\nmu_5 = 0.0\n")
    assert [(v.line, v.status) for v in found] == [(1, "unreadable"), (2, "unreadable"), (3, "correct")]
    assert all(v.message.startswith("`==` is not read") for v in found[:2]), [v.message for v in found]


def test_a_name_of_several_heads_is_hinted_with_its_own_head(derivation):
    """``a_{1,2} = 0.5`` with no `Head` line (cat-climbed has two heads) was hinted "as in
    a_{5,3}^{(1)}", another entry than the one written (a trial's finding); the hint now
    raises the name as written: a_{1,2}^{(1)}, s_{1,2}^{(1)}."""
    found = Checker(derivation).check_text("a_{1,2} = 0.5\ns_{1,2} = 0\n")
    assert [v.status for v in found] == ["unreadable", "unreadable"]
    assert found[0].message.endswith("or the head in the name, as in a_{1,2}^{(1)})"), found[0].message
    assert found[1].message.endswith("or the head in the name, as in s_{1,2}^{(1)})"), found[1].message


def test_an_unreadable_equation_read_as_prose_is_not_dropped_unsaid(derivation):
    """A line that writes ``= 3`` but reads as no equation, taken for a sentence (words
    and numbers: ``foo bar = = 3 ((``; ``smile = 1 +* 2`` beside a like line) listed no
    decimal number and was dropped without a verdict: a file of such a line alone said
    "no line of the file gives a number to check" and passed (two trials' findings). It is
    unreadable, with why; a sentence with a decimal number is still prose, not checked."""
    found = Checker(derivation).check_text("foo bar = = 3 ((\n\nsmile = 1 +* 2\n:smile: = 1 +* 2\n\n"
                                           "␣climb and ed = 0.94 here\n")
    assert [(v.line, v.status) for v in found] == [(1, "unreadable"), (3, "unreadable"), (4, "unreadable"),
                                                   (6, "not checked")], [(v.line, v.status, v.message) for v in found]
    assert found[0].message.startswith("cannot read the value '3 (('")


def test_a_bracketed_special_token_is_read_as_a_piece():
    """BERT's special tokens, [MASK] (encoder-post-norm's piece 6, whose row of E is all 0,
    so its logit against the tied W_U is exactly 0 and e^z is 1), written in a name:
    z_[MASK], e^z_[MASK], p([MASK]); z_[MASK] was unreadable (derive run --exact of that
    case read back but these lines)."""
    from derive.case import load_case
    from derive.derivation import derive

    found = Checker(derive(load_case("encoder-post-norm"))).check_text(
        "z_[MASK] = 0\ne^z_[MASK] = 1\nz_[MASK] = 0.5\n")
    assert [(v.status, v.name) for v in found] == [("correct", "z_[MASK]"), ("correct", "e^z_[MASK]"),
                                                   ("wrong", "z_[MASK]")], [v.message for v in found]


def test_a_row_after_the_step_is_named_after_the_step(derivation):
    """The seed page's row of ␣the after one step (E's row 2: R.SEED_THE_UPDATED), written
    `E_2 after the step = [...]`, was judged right but labelled E_2, as the row before it."""
    [v] = Checker(derivation).check_text(f"E_2 after the step = [{R.SEED_THE_UPDATED.replace(chr(0x2212), '-')}]")
    assert (v.status, v.message) == ("correct", "E_2 after the step: correct"), v.message
    [v] = Checker(derivation).check_text("E_2 = [-0.5, 0.0, -0.5, 1.0]")
    assert (v.status, v.message) == ("correct", "E_2: correct"), v.message
