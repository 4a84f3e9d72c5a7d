"""What a user's trial of ``derive check`` and ``derive explain`` found unread or misread
(the seed case, cat-climbed): the TeX forms of a gradient's name, claims in plain sentences,
two equations on one line, the case's settings in ``explain``, an empty file.

Expected values come from the seed page (/work/shared/seeds/000_c4d6024fc6c69432.txt), not
from derive: the gradient row of ␣the (id 1, the row E_2) is [−0.011, 0.011, 0.027, −0.028]
(step 2b), p(␣roof) = 0.395, L = 0.928, sigma_5 = 0.866 (sqrt(3)/2 = 0.86602…, step 4: the
row of ␣the at position 5 is [-0.5, -0.5, -0.5, 1.0] minus its mean 0, variance 3/4).
"""

from __future__ import annotations

import math
from fractions import Fraction as F

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


def test_eps_of_a_case_without_a_norm_is_no_setting():
    """The softmax case computes no norm: check said ``eps = 1e-05`` was correct (the
    default layernorm_eps of a norm that is not there), while explain rejected the name.
    Both now say no quantity is called eps; the seed's eps (it has LayerNorms) is judged."""
    softmax = derive(load_case("softmax"))
    found = verdicts(softmax, "eps = 1e-05")
    assert [status for _, status, _ in found] == ["unreadable"] and "no quantity is called 'eps'" in found[0][2]
    with pytest.raises(DeriveError):
        Checker(softmax).named("eps")
    assert verdicts(derive(load_case("cat-climbed")), "eps = 1e-05")[0][1] == "correct"


def test_explain_still_rejects_what_is_nothing():
    code, lines = explain_lines("eta_5")
    assert code == 2 and "no quantity is called 'eta_5'" in " ".join(lines)


# ---------------------------------------------------------------------------- claims in sentences
# the seed's values: p(␣roof) = 0.395, L = 0.928; the row of ␣the at position 5, x_5 = [-0.5, -0.5, -0.5, 1.5]
# (step 3): its mean and variance, eps = 1e-05 (the case's layernorm_eps), sigma_5 = sqrt(variance + eps)
X_5 = [F(-1, 2), F(-1, 2), F(-1, 2), F(3, 2)]
MU_5 = sum(X_5) / 4
SIGMA_5 = f"{math.sqrt(sum((x - MU_5) ** 2 for x in X_5) / 4 + F(1, 100000)):.3f}"
P_ROOF, LOSS = "0.395", "0.928"


def statuses(derivation, text: str) -> list[tuple[str, str]]:
    """(status, the quantity's name, or the message of a line not checked) of each verdict on ``text``."""
    return [(v.status, v.name if v.status != "not checked" else v.message)
            for v in Checker(derivation).check_text(text)]


def test_the_seed_s_values():
    assert (MU_5, SIGMA_5) == (0, "0.866")


PROSE = "not checked: prose: derive does not read sentences (numbers in it: {})"


@pytest.mark.parametrize("line,found", [
    ("A wrong one: p(␣roof) = 0.359", [("wrong", "p(␣roof)")]),  # were not checked (prose)
    (f"A right one: p(␣roof) = {P_ROOF}", [("correct", "p(␣roof)")]),
    ("The loss is L = 0.5.", [("wrong", "L")]),
    (f"The loss is L = {LOSS}.", [("correct", "L")]),
    ("Also L = 0.5", [("wrong", "L")]),  # was unreadable: no quantity is called 'AlsoL'
    (f"Also L = {LOSS}", [("correct", "L")]),
    (f"(so L = {LOSS})", [("correct", "L")]),
    ("The weight E_{2,1} after the step = -0.499 here.", [("correct", "E_{2,1} after the step")]),  # -0.5 - 0.1·(-0.011)
    (f"So dL/dE_{{2,1}} = {GRAD_E_2_1}, and sigma_5 = 0.8.", [("correct", "dL/dE_{2,1}"), ("wrong", "sigma_5")]),
    ("We run it with h = 2 heads and T = 1", [("correct", "h"), ("correct", "T")]),
    (f"Then sigma = {SIGMA_5} and mu = 0.", [("correct", "sigma_5"), ("correct", "mu_5")]),
    # a claim among other numbers: those stay not checked
    (f"The loss is L = 0.5, from p(␣roof) = {P_ROOF} and 0.25 more.",
     [("wrong", "L"), ("correct", "p(␣roof)"), ("not checked", PROSE.format("0.25"))]),
    (f"It is 39.5%, so p(␣roof) = {P_ROOF}.", [("correct", "p(␣roof)"), ("not checked", PROSE.format("39.5"))]),
])
def test_a_sentence_s_claims_are_judged(derivation, line, found):
    """A sentence that states ``NAME = NUMBER`` for a name derive knows is judged."""
    assert statuses(derivation, line) == found


@pytest.mark.parametrize("line,found", [
    ("We get $\\mu_5 = 0$ and so L = 0.5.", [("correct", "mu_5"), ("wrong", "L")]),  # L had no verdict
    (f"We get $\\mu_5 = 0$ and so L = {LOSS}.", [("correct", "mu_5"), ("correct", "L")]),
    (f"From $\\sigma_5 = {SIGMA_5}$, p(␣roof) = 0.359 and 3.5 more.",
     [("correct", "sigma_5"), ("wrong", "p(␣roof)"), ("not checked", PROSE.format("3.5"))]),  # (not the math's 0.866)
    ("We get $\\mu_5 = 0$ and x = 0.5 here.", [("correct", "mu_5")]),  # a name derive does not know: as before
    # \\(...\\) math: it was read as (...) once Markdown's escapes were removed, and the claim after it lost
    ("Here \\(\\mu_5 = 0\\), L = 0.5.", [("correct", "mu_5"), ("wrong", "L")]),
    (f"From \\(\\sigma_5 = {SIGMA_5}\\), p(␣roof) = 0.359 and 3.5 more.",
     [("correct", "sigma_5"), ("wrong", "p(␣roof)"), ("not checked", PROSE.format("3.5"))]),
    (f"From \\(\\sigma_5 = {SIGMA_5}\\), p(␣roof) = {P_ROOF}.", [("correct", "sigma_5"), ("correct", "p(␣roof)")]),
])
def test_a_claim_beside_inline_math_is_judged(derivation, line, found):
    """On a line whose ``$...$`` or ``\\(...\\)`` formulas claim values, a ``NAME = NUMBER``
    of its plain text is judged as a sentence's claim is (it was not judged: the line's plain
    text was read only when its math claimed nothing; ``\\(`` was read as ``(``)."""
    assert statuses(derivation, line) == found


@pytest.mark.parametrize("line,found", [
    ("$\\mu_5 = 5 \\text{ and } \\sigma_5 = 0.866$", [("wrong", "mu_5"), ("correct", "sigma_5")]),  # sigma_5 unjudged
    (f"$$\\mu_5 = 0 \\text{{and}} \\sigma_5 = 0.8$$", [("correct", "mu_5"), ("wrong", "sigma_5")]),
    (f"\\[\\mu_5 = 0 \\quad\\text{{ and }}\\quad \\sigma_5 = {SIGMA_5}\\]", [("correct", "mu_5"), ("correct", "sigma_5")]),
    (f"So $\\mu_5 = 0 \\mbox{{ and }} \\sigma_5 = {SIGMA_5}$ here.", [("correct", "mu_5"), ("correct", "sigma_5")]),
])
def test_tex_and_between_two_equations_splits_them(derivation, line, found):
    """``\\text{ and }`` inside TeX math cuts it into two claims, as `` and `` cuts a line of
    plain text (``$\\mu_5 = 5 \\text{ and } \\sigma_5 = 0.866$`` judged mu_5 alone, and
    ``sigma_5 = 0.866`` never)."""
    assert statuses(derivation, line) == found


@pytest.mark.parametrize("line,found", [
    (f"So $\\mu_5 = 0, \\sigma_5 = {SIGMA_5}$ here.", [("correct", "mu_5"), ("correct", "sigma_5")]),  # 0.866 unjudged
    (f"So $\\mu_5 = 5, \\sigma_5 = {SIGMA_5}$ here.", [("wrong", "mu_5"), ("correct", "sigma_5")]),
    ("Then \\(\\mu_{5} = 0; \\sigma_{5} = 0.8\\).", [("correct", "mu_5"), ("wrong", "sigma_5")]),
    ("So $x_5 = [-0.5, -0.5, -0.5, 1.5]$ here.", [("correct", "x_5")]),  # (the seed page's x_5: no cut in brackets)
])
def test_a_comma_between_two_equations_in_inline_math_splits_them(derivation, line, found):
    """Inline math that writes two equations after one another, cut by a comma or a semicolon
    (``$\\mu_5 = 0, \\sigma_5 = 0.866$``), is two claims, as the same line in plain text is
    (it was read as one formula, which read as nothing, and its numbers as prose)."""
    assert statuses(derivation, line) == found


GRAD_E_ROWS = {0: "[-0.001, 0.000, 0.001, 0.000]", 1: "[-0.011, 0.011, 0.027, -0.028]"}  # the seed page's dL/dE


@pytest.mark.parametrize("header,status", [
    ("dL/dE", "correct"), ("∂L/∂E", "correct"), ("$\\frac{\\partial L}{\\partial E}$", "correct"),
    ("∂z/∂E", "not checked"), ("$\\partial p / \\partial E$", "not checked"),  # were read as dL/dE: correct
    ("$\\frac{\\partial z}{\\partial E}$", "not checked"),
])
def test_only_the_loss_s_derivative_is_a_gradient_column(derivation, header, status):
    """A table column headed by the derivative of another quantity than the loss (∂z/∂E)
    is no gradient of derive's: not checked, with why (it was judged as dL/dE)."""
    text = f"| id | {header} |\n|---|---|\n" + "".join(f"| {i} | {row} |\n" for i, row in GRAD_E_ROWS.items())
    found = Checker(derivation).check_text(text)
    assert [v.status for v in found] == [status] * 2, [v.message for v in found]
    if status == "not checked":
        assert all("is not a derivative of the loss L" in v.message for v in found), found[0].message


@pytest.mark.parametrize("line,numbers", [
    ("The answer is about 0.928 here.", "0.928"),  # no claim
    ("We set x = 0.5 in the example.", "0.5"),  # a name derive does not know
    ("The loss is L = 0.5 + 0.4 here.", "0.5, 0.4"),  # not plainly a number
    ("The loss is L = 0.5·2 here.", "0.5"),
    ("the sum x + L = 0.5 here", "0.5"),  # L is not the name the sentence gives the value of
    ("u_5 = 0.5 is what the sum gives", "0.5"),  # u_5 is four numbers
])
def test_a_sentence_without_a_known_claim_stays_not_checked(derivation, line, numbers):
    assert statuses(derivation, line) == [("not checked", PROSE.format(numbers))]


@pytest.mark.parametrize("line", ["x_5[1] + P_5[1] = 0.3", "2 L = 1.856", "\\partial z / \\partial E_{2,1} = -0.011"])
def test_arithmetic_claims_nothing_of_its_last_name(derivation, line):
    """A name after an operator, a number or a TeX command is no sentence's claim."""
    assert [status for status, _ in statuses(derivation, line)] == ["unreadable"]


def test_a_file_of_wrong_sentences_fails_the_check(tmp_path):
    """Its exit code is 1 (it was 0: every line was prose)."""
    from typer.testing import CliRunner

    from derive.cli import app
    hand = tmp_path / "hand.txt"
    hand.write_text("A wrong one: p(␣roof) = 0.359\nThe loss is L = 0.5.\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["check", "cat-climbed", str(hand)])
    assert result.exit_code == 1 and "2 entries: 2 wrong" in result.output


# ---------------------------------------------------------------------------- two equations on a line
@pytest.mark.parametrize("joint", [" and ", ", ", "; ", ",", " , "])
@pytest.mark.parametrize("sigma,mu,found", [(SIGMA_5, "0", ["correct", "correct"]), (SIGMA_5, "1", ["correct", "wrong"]),
                                            ("0.8", "0", ["wrong", "correct"])])
def test_two_equations_on_a_line_are_judged_apart(derivation, joint, sigma, mu, found):
    """``sigma_5 = 0.866 and mu_5 = 0`` judged sigma_5 as 0 (it was wrong); with a comma or a
    semicolon the line was unreadable."""
    assert statuses(derivation, f"sigma_5 = {sigma}{joint}mu_5 = {mu}") == list(zip(found, ["sigma_5", "mu_5"]))


@pytest.mark.parametrize("line,found", [
    (f"u_5 = [-0.577, -0.577, -0.577, 1.732], sigma_5 = {SIGMA_5}", [("correct", "u_5"), ("correct", "sigma_5")]),
    (f"\\[\\sigma_5 = {SIGMA_5}, \\mu_5 = 0\\]", [("correct", "sigma_5"), ("correct", "mu_5")]),
    ("1 + 1 = 2, mu_5 = 0", [("correct", "1 + 1"), ("correct", "mu_5")]),
    (f"L = -ln({P_ROOF}) = {LOSS}; p(␣roof) = {P_ROOF}", [("explained", "L"), ("correct", "p(␣roof)")]),
    # one equation: a vector's commas, a function's arguments
    ("u_5 = [-0.577, -0.577, -0.577, 1.732]", [("correct", "u_5")]),
])
def test_a_line_splits_only_before_a_known_name(derivation, line, found):
    assert statuses(derivation, line) == found


@pytest.mark.parametrize("text,found", [
    # (a user trial: line 1's mu_5 = 5 got no verdict and the file passed, read as a sentence
    # that went on over the next line; alone, the line was judged)
    (f"sigma_5 = {SIGMA_5}, mu_5 = 5 and L = {LOSS}\nsigma_5 = {SIGMA_5}, mu_5 = 0 and L = {LOSS}",
     [("correct", "sigma_5"), ("wrong", "mu_5"), ("correct", "L"), ("correct", "sigma_5"), ("correct", "mu_5"),
      ("correct", "L")]),
    # a sentence's claims after a comma
    (f"We get sigma_5 = {SIGMA_5}, mu_5 = 5 and L = {LOSS} here.", [("correct", "sigma_5"), ("wrong", "mu_5"),
                                                                     ("correct", "L")]),
])
def test_every_equation_of_a_line_is_judged_whatever_follows(derivation, text, found):
    assert statuses(derivation, text) == found


def test_a_line_does_not_split_before_an_unknown_name(derivation):
    """``x = 1, y = 2``: neither name is the case's, the line is read whole, as before."""
    assert [status for status, _ in statuses(derivation, "x = 1, y = 2")] == ["unreadable"]


def test_a_long_line_of_commas_is_read_in_linear_time(derivation):
    """Each comma of a 280,000-character line was tried as the start of an equation by
    reading all the rest of the line (minutes of CPU); now only a name's few characters
    before the next relation are read."""
    import time
    line = f"L = {LOSS}" + ", word" * 40_000 + " = 3"
    start = time.process_time()
    found = statuses(derivation, line)
    assert time.process_time() - start < 5 and found[0] == ("correct", "L"), found[:2]


@pytest.mark.parametrize("line, value", [("log2(8) = 3", "3"), ("log10(100) = 2", "2"),
                                         ("-log2(0.395) = 1.340", "1.340"), ("log2 (0.5) = -1", "-1")])
def test_log2_and_log10_are_logarithms(derivation, line, value):
    """log2(x) and log10(x) (Python's math.log2, math.log10): read as log(2) times x, a user
    trial's true line was wrong (log2(8) = 5.545..., 8 ln 2). The values: log2(8) = 3,
    log10(100) = 2, -log2(0.395) = 1.34007... (ln 0.395 = -0.92887..., over ln 2)."""
    assert abs(-math.log2(0.395) - 1.34007) < 1e-5
    found = verdicts(derivation, line)
    assert [status for _, status, _ in found] == ["correct"], found


def test_a_word_that_starts_with_log_is_still_a_word(derivation):
    assert "no quantity is called 'logits'" in verdicts(derivation, "logits = 1")[0][2]


def test_an_aligned_chain_goes_on_over_its_rows(derivation):
    """A user trial: in an aligned display, ``z_{roof} &= -0.987 \\cdot (-0.5) + ... \\\\ &= 2.4905``
    judged the first row's sum as z_roof's value (wrong) and the second row as unreadable
    (nothing before its =). A row with no left side goes on with the row above: one chain,
    the seed's printed f_5 times W_U's column (step 13) = 2.4905 exactly, explained."""
    assert -0.987 * -0.5 + 0.928 * 1 + 1.069 * 1 == pytest.approx(2.4905)
    text = ("$$\n\\begin{aligned}\nz_{\\text{roof}} &= -0.987 \\cdot (-0.5) + 0.928 \\cdot 1 + 1.069 \\cdot 1 \\\\\n"
            "&= 2.4905\n\\end{aligned}\n$$\n")
    assert [(line, status) for line, status, _ in verdicts(derivation, text)] == [(3, "explained")]


def test_derive_run_exact_reads_back(derivation):
    """derive run --exact writes each exact form in SymPy's syntax, its powers x**2, and a
    definition over other names on a plain line (o_2^(1)[1] = a_{2,1}*v_1[1] + ...): each
    is read, a closed form compared with the exact value, a definition evaluated from its
    names (correct); a derivative without a closed form gets no line (it read
    dL/d(W_Q)_{1,1} = dL/d(W_Q)_{1,1}). 478 of the page's lines were unreadable (a trial's
    finding)."""
    from derive.check import FAILING
    from documents import cli

    page = cli("run", "cat-climbed", "--exact")
    assert "dL/d(W_Q)_{1,1} = dL/d(W_Q)_{1,1}" not in page and "**2" in page
    verdicts = Checker(derivation).check_text(page)
    assert not [(v.line, v.message) for v in verdicts if v.status in FAILING][:3]
    lines = "sigma'_1 = sqrt(1/100000 + (-50*sqrt(375010)/37501 - 1/2)**2/2 + (1 + 100*sqrt(375010)/37501)**2/4)\n" \
        "o_2^(1)[1] = a_{2,1}*v_1[1] + a_{2,2}*v_2[1]\n"
    assert [v.status for v in Checker(derivation).check_text(lines)] == ["correct", "correct"]


def test_a_product_of_two_components_is_no_score():
    """q~_5[1]*k~_2[1] + q~_5[2]*k~_2[2], derive's definition of the rotated score q~_5 . k~_2
    (cat-climbed-llama, head 1: -1.06739·0.24590 + (-1.23585)·(-1.12821) = 1.13183), is a
    sum of products of components: each product was read as the score q~_5 . k~_2 itself,
    and the line judged wrong at twice the value (2.26365...). Likewise derive's labels in
    its exact definitions: 1/2*u'_1W_1[1] is half of (u'_1 W_1)[1], u'_1W_1[1]**3 its cube,
    e^s/sum_j e^s_{5,j} a quotient by the sum, dL/d(W_Q)_{2,1} a derivative."""
    llama = derive(load_case("cat-climbed-llama"))
    assert round(-1.06739 * 0.24590 + (-1.23585) * (-1.12821), 4) == 1.1318
    [score] = Checker(llama).check_text("Head 1\nq~_5.k~_2 = q~_5[1]*k~_2[1] + q~_5[2]*k~_2[2]\n")
    assert score.status == "correct", score.message
    from derive import mathread
    for text in ("1/2*u'_1W_1[1]", "3*u'_1W_1[1]**3", "e^s_{5,1}/sum_j e^s_{5,j}"):
        node = mathread.read(text).exprs[0]
        last = node.b.a if isinstance(node.b, mathread.Bin) and node.b.op == "^" else node.b
        assert mathread.is_name(last), (text, node)  # (the last factor: the label, the sum)
        assert "u'" not in text or mathread.label(last) == "u'_1W_1[1]"
    assert mathread.label(mathread.read("dL/d(W_Q)_{2,1}").exprs[0]) == "dL/dW_Q_{2,1}"


def test_sympy_max_of_a_relu_is_read():
    """woodchuck's ReLU, as derive run --exact writes it in SymPy's syntax:
    g_1[4] = Max(0, u'_1W_1[4]) (a line of its --exact page, unreadable before: 8 of its
    lines). Max of exact numbers and of balls: Max(0, -2) = 0, Max(0, sqrt(2)) = sqrt(2)."""
    from derive import mathread

    assert mathread.evaluate(mathread.read("Max(0, -2)").exprs[0]) == 0
    assert abs(float(mathread.evaluate(mathread.read("Max(0, sqrt(2))").exprs[0])) - math.sqrt(2)) < 1e-12
    wood = derive(load_case("woodchuck"))
    verdicts = Checker(wood).check_text("g_1[4] = Max(0, u'_1W_1[4])\ng_1[5] = Max(0, u'_1W_1[5])\n")
    assert [v.status for v in verdicts] == ["correct", "correct"], [v.message for v in verdicts]


def test_latex_exact_forms_of_a_score_and_a_relu_are_read():
    """Two forms SymPy's LaTeX printer writes (derive markdown --exact; woodchuck's page read
    back with 16 lines not checked): s_{4,1} = sqrt(2) q_4 . k_1 / 2, where the point joins
    the score's product q_4 . k_1 before the factor sqrt(2) multiplies it (it multiplied
    q_4, a row, first), which is q . k / sqrt(d_k) at d_k = 2 (Vaswani et al. 2017, eq. 1);
    and \\max(0, x), the ReLU. A quarter of q . k (d_model's scaling, not sqrt(d_k)) is
    wrong, as is max(0, 2) = 0."""
    from derive.case import load_case
    from derive.derivation import derive

    lines = ["Head 1", "$$", r"\begin{aligned}", r"s_{4,1} &= \frac{\sqrt{2} q_{4} \cdot k_{1}}{2} \\",
             r"s_{4,1} &= \frac{q_{4} \cdot k_{1}}{4} \\", r"g_{1}[4] &= \max\left(0, (u'_{1} W_{1})[4]\right)",
             r"\end{aligned}", "$$", r"$\max(0, -2) = 0$", r"$\max(0, 2) = 0$"]
    found = Checker(derive(load_case("woodchuck"))).check_text("\n".join(lines))
    assert [(v.line, v.status) for v in found] == [(4, "correct"), (5, "wrong"), (6, "correct"), (9, "correct"),
                                                   (10, "wrong")], [v.message for v in found]


def test_a_step_derive_cannot_read_is_said_and_max_and_relu_are_read(derivation):
    """A trial found a working step check could not read dropped, and the line called
    correct: g_4[1] = max(0, 5) = 0 (max(0, 5) is 5), L = foo(0.395) = 0.928. max, ReLU
    and relu are read (as Max(0, x)); a step of an unknown function or name makes the line
    not checked, with why; a step over the case's quantities that evaluates is not judged
    (sigma_5 = sqrt(mu_5 + 0.75): mu_5 is exactly 0, and sqrt(0.75) = 0.866 at 3 places)."""
    from derive.case import load_case
    from derive.derivation import derive

    woodchuck = Checker(derive(load_case("woodchuck"))).check_text(
        "g_4[1] = max(0, 5) = 0\nmax(0, -0.3) = 0\nReLU(-0.3) = 0\nrelu(0.4) = 0.4\nmax(2, 3) = 2\n")
    assert [v.status for v in woodchuck] == ["wrong", "correct", "correct", "correct", "wrong"], \
        [v.message for v in woodchuck]
    found = Checker(derivation).check_text("L = foo(0.395) = 0.928\nsigma_5 = sqrt(mu_5 + 0.75) = 0.866\n"
                                           "sigma_5 = sqrt(0.75) + zzz = 0.866\n")
    assert [v.status for v in found] == ["not checked", "correct", "not checked"], [v.message for v in found]
    assert "the working foo (0.395) is not read" in found[0].message
