"""What a user's trial of ``derive check`` and ``derive explain`` found unread or misread
(the seed case, cat-climbed): the TeX forms of a gradient's name, claims in plain sentences,
two equations on one line, the case's settings in ``explain``, an empty file.

Expected values come from the seed page (/work/shared/seeds/000_c4d6024fc6c69432.txt), not
from derive: the gradient row of ␣the (id 1, the row E_2) is [−0.011, 0.011, 0.027, −0.028]
(step 2b), p(␣roof) = 0.395, L = 0.928, sigma_5 = 0.866 (sqrt(3)/2 = 0.86602…, step 4: the
row of ␣the at position 5 is [-0.5, -0.5, -0.5, 1.0] minus its mean 0, variance 3/4).
"""

from __future__ import annotations

import pytest

from derive.case import load_case
from derive.check import Checker
from derive.derivation import derive
from derive.errors import DeriveError

GRAD_E_2_1 = "-0.011"  # the seed page's dL/dE_i, row of ␣the, column 1


@pytest.fixture(scope="module")
def derivation():
    return derive(load_case("cat-climbed"))


def verdicts(derivation, text: str) -> list[tuple[int, str, str]]:
    """(line, status, message) of each verdict on ``text``."""
    return [(v.line, v.status, v.message) for v in Checker(derivation).check_text(text)]


# ---------------------------------------------------------------------------- the TeX forms of dL/dE_{2,1}
GRADIENT_FORMS = ["\\frac{\\partial L}{\\partial E_{2,1}}", "\\frac{dL}{dE_{2,1}}", "\\dfrac{\\partial L}{\\partial E_{2,1}}",
                  "\\frac{\\mathrm{d}L}{\\mathrm{d}E_{2,1}}", "\\frac{d L}{d E_{2,1}}", "\\partial L / \\partial E_{2,1}"]


@pytest.mark.parametrize("name", GRADIENT_FORMS)
def test_the_tex_forms_of_a_gradient_are_checked(derivation, name):
    """Each form is dL/dE_{2,1}: the seed's -0.011 is correct, the sign flipped is wrong."""
    assert verdicts(derivation, f"{name} = {GRAD_E_2_1}") == [(1, "correct", "dL/dE_{2,1}: correct")]
    found = verdicts(derivation, f"{name} = 0.011")
    assert [status for _, status, _ in found] == ["wrong"] and found[0][2].startswith("dL/dE_{2,1}: wrong"), found


@pytest.mark.parametrize("name", GRADIENT_FORMS)
def test_the_tex_forms_of_a_gradient_are_explained(derivation, name):
    """``derive explain`` reads a name as ``check`` does (:meth:`Checker.named`)."""
    checker = Checker(derivation)
    assert checker.named(name) == checker.named("dL/dE_{2,1}")


@pytest.mark.parametrize("line", ["\\partial z / \\partial E_{2,1} = -0.011", "\\frac{\\partial z}{\\partial E_{2,1}} = -0.011",
                                  "\\partial L = -0.011"])
def test_no_other_derivative_is_read_as_the_loss_s(derivation, line):
    """derive computes derivatives of L only: ∂z/∂E_{2,1} was read (and judged) as dL/dE_{2,1};
    a lone ∂ is not a name."""
    found = verdicts(derivation, line)
    assert [status for _, status, _ in found] == ["unreadable"], found
    with pytest.raises(DeriveError):
        Checker(derivation).named(line.split("=")[0])


# ---------------------------------------------------------------------------- explain: the case's settings
def explain_lines(*args: str):
    """(exit code, the lines) of ``derive explain cat-climbed ARGS`` on a wide page."""
    from typer.testing import CliRunner

    from derive.cli import app
    result = CliRunner().invoke(app, ["explain", "cat-climbed", *args], env={"COLUMNS": "300"})
    return result.exit_code, [" ".join(line.split()) for line in result.output.splitlines()]


@pytest.mark.parametrize("name,says", [
    # the seed page: the update -0.5 - 0.1 · (-0.011) (eta = 0.1); d = 4 split over h = 2 heads (d_k = 2)
    ("eta", "eta = 0.1 in this case"), ("\\eta", "eta = 0.1 in this case"), ("d_k", "d_k = 2 in this case"),
    ("h", "h = 2 in this case"), ("d", "d = 4 (the width d_model) in this case"),
    ("T", "T = 1 (the temperature) or T = 5 (the number of tokens) in this case"),
])
def test_explain_says_what_a_setting_is(name, says):
    """check judges ``eta = 0.1`` as a definition; explain rejected the name."""
    code, lines = explain_lines(name)
    assert code == 0 and says in lines[1] and "not a computed quantity" in lines[1], lines


def test_explain_still_rejects_what_is_nothing():
    code, lines = explain_lines("eta_5")
    assert code == 2 and "no quantity is called 'eta_5'" in " ".join(lines)
