"""derive check: what a wrong value is called.

(a) A wrong q, k or v row of one head was "unreadable" ("no quantity is called 'q_5[2]'"):
looking for the same component in the other head raised, and q_5[2] is a column of head 1
only. A wrong value is "wrong", with its exact value; head 2's column in head 1's place
(v_5[4] written as v_5[2]) is named as the other head's value.

(b) A wrong gradient or value after the step was labelled with the weight itself ("z_d:
wrong" for dL/dz_d). The label reads as derive prints the names: dL/dE_{3,4},
E_{2,1} after the step.

Right values: the seed case's forward pass from tests/hand/hand_reference.py (fractions and
mpmath), the seed page's dL/dE rows and updated row of ␣the, and Wikipedia's softmax example
(z = [1, 2, 3, 4, 1, 2, 3], target d) computed here with mpmath.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import mpmath
import pytest

from derive.case import load_case
from derive.check import Checker
from derive.derivation import derive

sys.path.insert(0, str(Path(__file__).parent / "hand"))
import hand_reference as R  # noqa: E402


@pytest.fixture(scope="module")
def seed():
    return derive(load_case("cat-climbed"))


@pytest.fixture(scope="module")
def llama():
    return derive(load_case("cat-climbed-llama"))


def one(derivation, text: str):
    verdicts = Checker(derivation).check_text(text)
    assert len(verdicts) == 1
    return verdicts[0]


@pytest.mark.parametrize("symbol", ["q", "k", "v"])
def test_a_wrong_row_of_one_head_is_wrong(seed, symbol):
    exact = R.forward()[symbol][4][:2]  # position 5, head 1's columns
    written = [R.rounded(exact[0]), R.rounded(exact[1]) - R.F(1, 1000)]  # the second one off by 0.001
    verdict = one(seed, f"{symbol}_5^(1) = [{R.text(written[0])}, {R.text(written[1])}]")
    assert verdict.status == "wrong", verdict.message
    assert verdict.message.startswith(f"{symbol}_5[2]: wrong: the exact value is ")
    assert verdict.message.endswith(f"which rounds to {R.text(exact[1])}")


@pytest.mark.parametrize("line", ["v_5 = [9, 9]", "k_5 = [9, 9]"])
def test_llama_wrong_rows_are_wrong(llama, line):
    # a value far off (no convention or other head gives 9): wrong, never "no quantity is called"
    verdict = one(llama, line)
    assert verdict.status == "wrong", verdict.message
    assert "no quantity" not in verdict.message


def test_llama_rotated_query_off_by_one_digit(tmp_path):
    out = tmp_path / "l.tex"
    subprocess.run([sys.executable, "-m", "derive", "latex", "cat-climbed-llama", "-o", str(out)], check=True,
                   capture_output=True)
    text = out.read_text(encoding="utf-8")
    line = re.search(r"^\\tilde\{q\}_\{5\}\^\{\(2\)\} &= \[(-?[\d.]+), (-?\d\.\d{3})\]$", text, re.M)
    assert line is not None
    last = line.group(2)
    changed = last[:-1] + str((int(last[-1]) + 1) % 10)
    bad = line.group(0).replace(f", {last}]", f", {changed}]")
    verdicts = Checker(derive(load_case("cat-climbed-llama"))).check_text("Head 2\n" + line.group(0) + "\n" + bad)
    assert [v.status for v in verdicts] == ["correct", "wrong"], [v.message for v in verdicts]
    assert verdicts[1].message.startswith("q~_5[4]: wrong: the exact value is ")


def test_a_gradient_is_named_as_one(seed):
    cat = R.seed_rows(R.SEED_GRADIENTS)[1]
    assert R.token(cat[1]) == "␣cat"
    right = R.seed_vector(cat[2])
    verdict = one(seed, f"∂L/∂E[␣cat] = [{', '.join(R.texts(right[:3]))}, {R.text(right[3] - R.F(1, 1000))}]")
    assert verdict.status == "wrong"
    assert verdict.message == (f"dL/dE_{{3,4}}: wrong: the exact value is {verdict.exact[3]}, which rounds to "
                               f"{R.text(right[3])}")


def test_a_value_after_the_step_is_named_as_one(seed):
    right = R.seed_vector(R.SEED_THE_UPDATED)
    written = [right[0] - R.F(2, 1000)] + right[1:]
    verdict = one(seed, f"E[␣the] after = [{', '.join(R.texts(written))}]")
    assert verdict.status == "wrong"
    assert verdict.message == (f"E_{{2,1}} after the step: wrong: the exact value is {verdict.exact[0]}, which "
                               f"rounds to {R.text(right[0])}")


def test_softmax_gradient_cell_names_the_gradient():
    mpmath.mp.dps = 30
    z = [1, 2, 3, 4, 1, 2, 3]
    grad_d = mpmath.exp(4) / sum(mpmath.exp(v) for v in z) - 1  # (p - y)_d, target d
    digits = mpmath.nstr(grad_d, 25)
    right = R.F(digits)
    wrong = R.text(R.rounded(right) - R.F(1, 1000))
    verdict = one(derive(load_case("softmax")), f"∂L/∂z_d = {wrong}")
    assert verdict.status == "wrong"
    assert verdict.message.startswith(f"dL/dz_d: wrong: the exact value is {digits[:8]}")  # cut, not rounded
    assert verdict.message.endswith(f"which rounds to {R.text(right)}")


def test_a_column_of_the_other_head_is_named_as_one(seed):
    v5 = R.forward()["v"][4]  # position 5: head 1 reads columns 1-2, head 2 columns 3-4
    assert R.text(v5[3]) != R.text(v5[1])
    verdict = one(seed, f"v_5^(1) = [{R.text(v5[0])}, {R.text(v5[3])}]")  # head 2's second column in head 1's place
    assert verdict.status == "wrong", verdict.message
    assert verdict.message.startswith(f"v_5[2]: {R.text(v5[3])} is the value of head 2, not head 1 (heads swapped?)")
    assert verdict.message.endswith(f"rounds to {R.text(v5[1])}")


SPLIT = Path(__file__).parent / "cases" / "split_heads.toml"  # the seed with its two heads given one by one


@pytest.mark.parametrize("head, line, status", [
    (2, "(W_Q)_{1,2} = 1", "correct"),  # head 2's W_Q = [[0, 1], ...]: row 1, column 2 is 1 (head 1's is 0)
    (1, "(W_Q)_{1,2} = 0", "correct"),  # head 1's W_Q = [[0, 0], ...]
    (2, "(W_Q)_{4,1} = 1", "correct"),
    (2, "W_Q[1,2] = 1", "correct"),
    (2, "(W_Q)_{1,3} = 0", None),  # each head's W_Q has 2 columns (was: head 2's column 1, "correct")
])
def test_a_heads_own_weight_is_read_in_its_head(head, line, status):
    """A head given with its own W_Q (numbered from column 1, as the weights step prints
    it): a `Head h` line picks that head's entry (was: head 1's, so head 2's right value
    was "wrong"), and a column past its width is no entry of it. Values from the case file."""
    verdict = one(derive(load_case(str(SPLIT))), f"Head {head}\n{line}")
    if status is None:
        assert verdict.status not in ("correct", "wrong"), verdict.message
    else:
        assert verdict.status == status, verdict.message


def test_a_heads_own_weights_have_their_own_gradient_tables(tmp_path):
    """The gradient and SGD steps give a head's own W_Q its own table, titled with the
    head as the weights step titles it (was: one dL/dW_Q of 4 columns joining both heads'
    4 x 2, no head named), and the checker reads the page back: every entry correct or
    explained (none wrong, none not checked)."""
    page = subprocess.run([sys.executable, "-m", "derive", "run", str(SPLIT), "--width", "300"],  # (no cell wraps)
                          capture_output=True, text=True, check=True).stdout
    for title in ("dL/dW_Q of head 1 (first) (block 1)", "dL/dW_Q of head 2 (block 1)",
                  "W_Q after the step of head 1 (first) (block 1)", "W_Q after the step of head 2 (block 1)"):
        assert title in page
    rows = re.findall(r"│ \d+\s+│ \[([^\]]*)\]", page.split("dL/dW_Q of head 2 (block 1)")[1].split("dL/db_Q")[0])
    assert len(rows) == 4 and all(len(r.split(",")) == 2 for r in rows)  # head 2's W_Q is 4 x 2 (the case file)
    verdicts = Checker(derive(load_case(str(SPLIT)))).check_text(page)
    assert verdicts and {v.status for v in verdicts} <= {"correct", "explained"}


# (c) A right value without a by-hand note was a bare "correct" (sigma_5 = 0.866), while
# L = 0.928 was "L: correct (...)": every verdict names its quantity.
def test_a_right_value_names_its_quantity(seed):
    ref = R.forward()
    lines = [f"sigma_5 = {R.text(ref['sigma'][4])}", f"u_5 = {R.vector(ref['u'][4])}",
             f"mu_5 = {R.text(ref['mu'][4])}"]
    verdicts = Checker(seed).check_text("\n".join(lines))
    assert [v.status for v in verdicts] == ["correct"] * 3, [v.message for v in verdicts]
    assert [v.message for v in verdicts] == ["sigma_5: correct", "u_5: correct", "mu_5: correct"]


def test_a_right_table_cell_names_its_quantity(seed):
    u = R.forward()["u"]
    table = "| t | u_t |\n|---|---|\n" + "\n".join(f"| {t} | {R.vector(u[t - 1])} |" for t in (1, 2))
    verdicts = Checker(seed).check_text(table)
    assert [v.status for v in verdicts] == ["correct"] * 2, [v.message for v in verdicts]
    # (u_1's notes name its components; u_2 has none)
    assert verdicts[0].message.startswith("u_1[1]: correct (from the printed inputs: ")
    assert verdicts[1].message == "u_2: correct"


@pytest.mark.parametrize("off,status", [(0, "correct"), (1, "wrong")])
def test_a_y_column_of_some_prompt_rows_is_the_block_output(seed, off, status):
    """A table whose rows are some of the prompt's tokens (``␣the``, then ``ed``) and whose
    column is ``y`` gives each row's y_t = h_t + m_t (the residual after the MLP, 4 numbers:
    hand_reference's forward pass; the seed page's y_5 = [−0.436, 1.551, −0.461, 1.698]),
    not the one-hot target ("y_␣the (the one-hot target ␣roof) has 1 component but the cell
    gives 4"); its last number written 0.001 off is wrong. A y column of one number per row,
    keyed by pieces the prompt holds, is still the one-hot target (␣roof is no token of the
    prompt: 0 for each), and 1 there is wrong."""
    y = R.forward()["y"]
    assert R.texts(y[4]) == ["-0.436", "1.551", "-0.461", "1.698"]
    last = R.rounded(y[3][3]) + R.F(off, 1000)
    text = (f"| token | y |\n|---|---|\n| `␣the` | {R.vector(y[4])} |\n"
            f"| `ed` | [{', '.join(R.texts(y[3])[:3])}, {R.text(last)}] |\n\n"
            f"| token | y |\n|---|---|\n| `␣cat` | 0 |\n| `ed` | {off} |\n")
    verdicts = Checker(seed).check_text(text)
    assert [(v.name, v.status) for v in verdicts] == [
        ("y_5", "correct"), ("y_4", status),
        ("y_␣cat (the one-hot target ␣roof)", "correct"), ("y_ed (the one-hot target ␣roof)", status)], \
        [(v.line, v.status, v.message) for v in verdicts]


@pytest.mark.parametrize("line, status", [
    ("b_2[4] = 0.5", "correct"), ("b_2[1] = 0.0", "correct"), ("b_2[4] = 0.0", "wrong"),
    ("b_1[5] = -0.75", "correct"), ("(b_2)_{1,4} = 0.5", "correct"),
])
def test_a_weight_of_one_row_is_named_by_its_entry(line, status):
    """A bias stored as one row (woodchuck's b_2 = [0, 0, 0, 0.5], b_1 all -0.75, labelled
    (b_2)_{1,4}) written b_2[4] is its 4th entry (it was row 4, which it does not have:
    unreadable; and b_2[1] was the whole row, 'has 4 components'). Values from the case file."""
    verdict = one(derive(load_case("woodchuck")), line)
    assert verdict.status == status, verdict.message
