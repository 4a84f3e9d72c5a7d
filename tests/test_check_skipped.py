"""Issue 11, "Silently skipped": every number of a file gets a word. A line with ``≈``, a
tab-separated table (copied from a web page, as the seed page's own tables are), a
``Head 2: ...`` line, a LaTeX line that starts with a command, a false claim in prose: each
is judged, or listed as "not checked" with its reason; none passes unseen.

The right values are computed here from the seed's weights (tests/hand/hand_reference.py,
an independent exact forward pass), never taken from derive.
"""

from __future__ import annotations

import re
import sys
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
        if v.status == "not checked":
            assert v.message.startswith(("not checked: ", "a value in prose")), v.message


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
