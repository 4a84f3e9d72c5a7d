"""Issue 11, "Silently skipped": every number of a file gets a word. A line with ``≈``, a
tab-separated table (copied from a web page, as the seed page's own tables are), a
``Head 2: ...`` line, a LaTeX line that starts with a command, a false claim in prose: each
is judged, or listed as "not checked" with its reason; none passes unseen.

The right values are computed here from the seed's weights (tests/hand/hand_reference.py,
an independent exact forward pass), never taken from derive.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction as F
from pathlib import Path

import pytest

from derive.check import Checker

HAND = Path(__file__).parent / "hand"
sys.path.insert(0, str(HAND))
import hand_reference as R  # noqa: E402
from test_check import derivation, exact  # noqa: E402,F401  (the seed case and its independent forward pass)

SEED = Path("/work/shared/seeds/000_c4d6024fc6c69432.txt")


def check(derivation, text):
    return Checker(derivation).check_text(text)


def test_approx_is_equal_at_the_written_places(derivation, exact):
    """sigma_5 = sqrt(0.75 + 1e-5) = 0.86603...: `sigma_5 ≈ 0.999` is wrong, `≈ 0.866` correct."""
    assert R.text(exact["sigma"][4]) == "0.866"
    for relation in ("≈", "\\approx"):
        [wrong] = check(derivation, f"sigma_5 {relation} 0.999")
        assert wrong.status == "wrong" and wrong.expected == ["0.866"]
        [right] = check(derivation, f"sigma_5 {relation} 0.866")
        assert right.status == "correct"


def test_a_head_line_with_a_claim_after_it(derivation, exact):
    """`Head 2: a_{5,2} = 0.999` is judged as head 2's a_{5,2} (0.882 on the seed page)."""
    right = R.text(exact["a"][2][4][1])  # head 2, row 5, column 2 (0-based rows and columns)
    [v] = check(derivation, "Head 2: a_{5,2} = 0.999")
    assert v.status == "wrong" and v.expected == [right]
    [v] = check(derivation, f"Head 2: a_{{5,2}} = {right}")
    assert v.status == "correct"
    # a sentence that starts with "Head 1" is prose, and sets no head
    [v] = check(derivation, "Head 1 looks at the verb (␣climb + ed = 0.94).")
    assert v.status == "not checked" and "0.94" in v.message


def test_a_latex_line_starting_with_a_command(derivation):
    """`\\mu = 0.000,\\quad \\sigma = 0.866` (a display's body on its own line) is read,
    and `\\eta = 0.1` is the case's learning rate (1/10)."""
    found = check(derivation, "\\mu = 0.000,\\quad \\sigma = 0.866")
    assert [v.status for v in found] == ["correct", "correct"]
    [eta] = check(derivation, "\\eta = 0.1")
    assert eta.status == "correct" and eta.name == "eta"
    [eta] = check(derivation, "\\eta = 0.2")
    assert eta.status == "wrong"
    assert check(derivation, "\\begin{adjustbox}{max width=\\linewidth}") == []


def test_definitions_are_judged_against_the_case(derivation):
    """h = 2 heads, d_k = 2, eps = 1e-05, eta = 1/10 in the seed case; any other value is wrong."""
    for line, status in [("h = 2", "correct"), ("h = 3", "wrong"), ("d_k = 2", "correct"),
                         ("$\\varepsilon = 1\\mathrm{e}{-05}$", "correct"), ("\\eta = 0.1", "correct")]:
        [v] = check(derivation, line)
        assert v.status == status, (line, v.message)


def test_a_tab_separated_table(derivation, exact):
    """The seed's logits table as copied from the web page: cells between tabs."""
    rows = [("␣roof", exact["z"]["␣roof"], exact["ez"]["␣roof"], exact["p"]["␣roof"]),
            ("␣wall", exact["z"]["␣wall"], exact["ez"]["␣wall"], exact["p"]["␣wall"])]
    text = "token\t\\(z\\)\t\\(e^{z}\\)\t\\(p\\)\n" + "".join(
        f"`{t}`\t{R.text(z)}\t{R.text(e)}\t{R.text(p)}\n" for t, z, e, p in rows)
    found = check(derivation, text)
    assert len(found) == 6 and {v.status for v in found} == {"correct"}, [(v.status, v.message) for v in found]
    bad = text.replace(R.text(exact["p"]["␣roof"]), "0.396")
    assert [v.status for v in check(derivation, bad)].count("wrong") == 1


@pytest.mark.skipif(not SEED.exists(), reason="the seed page is not on this machine")
def test_the_seed_page_itself(derivation):
    """The seed page as the FILE: no line unreadable or wrong, every table number judged
    (the embedding table, the ids, the rows of u, Q/K/V, the two heads, the logits), the
    parameter-count table (GPT-2's) and the prose listed as not checked, with a reason."""
    text = SEED.read_text(encoding="utf-8")
    found = check(derivation, text)
    assert not [(v.line, v.status, v.message) for v in found if v.status in ("wrong", "unreadable", "inherited",
                                                                            "convention")]
    lines = text.splitlines()
    judged = {v.line for v in found if v.status in ("correct", "explained")}
    tables = [n for n, line in enumerate(lines, 1) if "\t" in line and re.search(r"\d\.\d|\t-?\d+\t", line)
              and not line.startswith(("piece", "embedding", "position", "\\(W", "MLP", "output", "total"))]
    assert len(tables) > 50
    assert not [lines[n - 1] for n in tables if n not in judged]
    for v in found:
        if v.status == "not checked":  # (after the formula it is about, quoted, for one in a sentence)
            assert re.sub(r"^'.*?': ", "", v.message).startswith(("not checked: ", "a value in prose")), v.message


def test_prose_numbers_are_listed(derivation):
    [v] = check(derivation, "The most probable is ␣roof, with 0.395 and a loss of 0.928.")
    assert v.status == "not checked" and "0.395" in v.message and "0.928" in v.message
    assert check(derivation, "Step 4. LayerNorm, 12 rows") == []  # no decimal number: no claim


def test_x_and_e_rows(derivation):
    """X[5] is the row x_5 = E[1] + P_5 = [-0.5, -0.5, -0.5, 1.5]; E[1] the row of id 1 (␣the)."""
    E1 = [F(-1, 2), F(0), F(-1, 2), F(1)]
    P5 = [F(0), F(-1, 2), F(0), F(1, 2)]
    x5 = [a + b for a, b in zip(E1, P5)]
    assert x5 == [F(-1, 2), F(-1, 2), F(-1, 2), F(3, 2)]
    [v] = check(derivation, "X[5] = [-0.5, -0.5, -0.5, 1.5]")
    assert v.status == "correct", v.message
    [v] = check(derivation, "\\[E[1] = [-0.5, 0.0, -0.5, 1.0]\\]")
    assert v.status == "correct", v.message


def test_arithmetic_in_inline_math_is_judged(derivation):
    """Arithmetic in an inline formula of prose is a claim, judged as in a display (whole
    results at 0 places); it was dropped ("no line gives a number"). Right values: counting,
    and sqrt(2), e^2.4 from Python's decimal and math."""
    root2 = f"{Decimal(2).sqrt():.3f}"
    e24 = f"{Decimal('2.4').exp():.3f}"
    lines = ["$1 + 1 = 3$", "We get $2 \\cdot 3 = 7$ here.", "$1 + 1 = 2$", f"so $\\sqrt{{2}} \\approx {root2}$ and",
             f"and \\(e^{{2.4}} = {e24}\\), then", "$10 / 4 = 2.6$"]
    found = check(derivation, "\n".join(lines))
    assert [(v.line, v.status) for v in found] == [(1, "wrong"), (2, "wrong"), (3, "correct"), (4, "correct"),
                                                   (5, "correct"), (6, "wrong")], [v.message for v in found]
    assert found[0].message == "'1 + 1 = 3': wrong: 1 + 1 = 2, which rounds to 2"  # (each quotes its formula)
    assert found[1].message == "'2 \\cdot 3 = 7': wrong: 2 \\cdot 3 = 6, which rounds to 6"
    assert found[5].message == "'10 / 4 = 2.6': wrong: 10 / 4 = 2.5, which rounds to 2.5"


def test_inline_math_that_is_no_arithmetic_claim_stays_as_it_was(derivation):
    """A name alone, a definition of the case's sizes, a formula with names on both sides
    or a relation that is not = are read as before: no entry, or the name's verdict."""
    assert check(derivation, "The row $x_5$ alone, and $0 \\le j \\le i$, $e^{i\\pi} = -1$ and $n = m + 1$.") == []
    [v] = check(derivation, "Here $d_model = 4$ and so on.")
    assert (v.status, v.message) == ("correct", "'d_model = 4': d_model = 4 in this case")
    [v] = check(derivation, "with $x = 3$ for now")
    assert v.status == "not checked" and v.message.startswith("'x = 3': a value in prose"), v.message


def test_inline_arithmetic_fails_the_check(tmp_path):
    """The exit code: 1 for a wrong inline claim, 0 for a right one (README, exit codes)."""
    for text, code in [("$1 + 1 = 3$\n", 1), ("We get $2 \\cdot 3 = 7$ here.\n", 1), ("$1 + 1 = 2$\n", 0)]:
        path = tmp_path / "hand.md"
        path.write_text(text, encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "derive", "check", "cat-climbed", str(path)],
                              capture_output=True, text=True)
        assert done.returncode == code, (text, done.stdout, done.stderr)
        assert "no line of the file gives a number" not in done.stdout


# A hand-written table keyed by some of the prompt's tokens, in any order, with or without
# backticks, was "not checked" ("no quantity is called 'sigma_␣cat'", or "the row is neither
# a token of the prompt nor a vocabulary piece" for an unmarked `the`): its rows are the
# positions of those tokens. Right values: the independent forward pass (hand_reference).
@pytest.mark.parametrize("mark", ["", "`"])
@pytest.mark.parametrize("first", ["token", ""])
def test_a_table_keyed_by_some_prompt_tokens(derivation, exact, mark, first):
    rows = [("␣cat", 2), ("the", 1), ("␣the", 5)]  # positions in "the cat climbed the"
    text = f"| {first} | mu | sigma |\n|---|---|---|\n" + "".join(
        f"| {mark}{token}{mark} | {R.text(exact['mu'][t - 1])} | {R.text(exact['sigma'][t - 1])} |\n" for token, t in rows)
    found = check(derivation, text)
    assert [v.status for v in found] == ["correct"] * 6, [v.message for v in found]
    assert [v.name for v in found] == ["mu_2", "sigma_2", "mu_1", "sigma_1", "mu_5", "sigma_5"]
    wrong = text.replace(f"| {R.text(exact['sigma'][0])} |", "| 0.613 |")  # sigma_1 = sqrt(3/8 + 1e-5) = 0.61238...
    assert R.text(exact["sigma"][0]) == "0.612"
    assert [v.status for v in check(derivation, wrong)] == ["correct"] * 3 + ["wrong"] + ["correct"] * 2


def test_a_table_keyed_by_tokens_with_a_row_vector(derivation, exact):
    """A u_t column (a whole row per cell) in rows keyed by tokens, as derive's table but
    with two rows: positions 4 (ed) and 2 (␣cat)."""
    text = "| token | u_t |\n|---|---|\n" + "".join(f"| `{token}` | {R.vector(exact['u'][t - 1])} |\n"
                                                  for token, t in [("ed", 4), ("␣cat", 2)])
    found = check(derivation, text)
    assert [(v.status, v.name) for v in found] == [("correct", "u_4"), ("correct", "u_2")], [v.message for v in found]


def logits_verdicts(derivation, exact, pieces, mark="`") -> list[tuple[str, str]]:
    """(status, name) of each verdict on a hand-written z and p table, one row per piece
    (the right values, from the independent forward pass), each key between ``mark``s."""
    text = "| token | z | p |\n|---|---|---|\n" + "".join(
        f"| {mark}{t}{mark} | {R.text(exact['z'][t])} | {R.text(exact['p'][t])} |\n" for t in pieces)
    return [(v.status, v.name) for v in check(derivation, text)]


@pytest.mark.parametrize("mark", ["", "`"])
def test_a_row_keyed_by_a_bare_piece(derivation, exact, mark):
    """A logits table whose rows are not all tokens of the prompt (␣roof is the target):
    its row ``the``, written bare as a reader writes it, is the vocabulary piece ``the``,
    as `` `the` `` is (it was "neither a token of the prompt nor a vocabulary piece": only
    a piece marked with backticks, \\texttt or ␣ was read as one)."""
    assert logits_verdicts(derivation, exact, ("the", "␣roof"), mark) == \
        [("correct", "z_the"), ("correct", "p(the)"), ("correct", "z_␣roof"), ("correct", "p(␣roof)")]
    assert (R.text(exact["z"]["the"]), R.text(exact["p"]["the"])) == ("0.000", "0.033")  # the seed page's row


def test_a_logits_table_keyed_by_prompt_tokens_stays_per_piece(derivation, exact):
    """z and p are per vocabulary piece: rows `the` and `␣cat` (also tokens of the prompt)
    are z_the and z_␣cat, as before."""
    assert logits_verdicts(derivation, exact, ("the", "␣cat")) == \
        [("correct", "z_the"), ("correct", "p(the)"), ("correct", "z_␣cat"), ("correct", "p(␣cat)")]


def test_a_token_repeated_in_the_prompt_is_not_guessed():
    """encoder-post-norm's prompt "the cat sat on the [MASK]" has `the` at positions 1 and 5:
    its row says so; `cat` (position 2) is judged: x_2 = E[cat] + PE[1] with the paper's
    sinusoids, PE[1] = [sin 1, cos 1, sin 0.01, cos 0.01] (first_position 0, d = 4)."""
    from derive.case import load_case
    from derive.derivation import derive

    x2 = [1 + math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)]
    written = ", ".join(f"{Decimal(v).quantize(Decimal('0.001'), rounding='ROUND_HALF_UP')}" for v in x2)
    assert written == "1.841, 0.540, 0.010, 1.000"
    text = f"| token | x_t |\n|---|---|\n| cat | [{written}] |\n| the | [1.000, 1.000, 1.000, 1.000] |\n"
    found = check(derive(load_case("encoder-post-norm")), text)
    assert [v.status for v in found] == ["correct", "unreadable"], [v.message for v in found]
    assert "'the'" in found[1].message and "positions 1 and 5" in found[1].message, found[1].message
