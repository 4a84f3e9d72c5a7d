"""The chapter's plain notation to TeX (derive.notation): names, formulas, and which words
of a sentence or a label are math. The expected TeX is written the way the seed 000 page
writes the same names (``\\sigma``, ``s_{5,j}``, ``\\partial L / \\partial E_{i}``)."""

from __future__ import annotations

import pytest

from derive.notation import label_spans, spans, tex


@pytest.mark.parametrize("plain, expected", [
    ("sigma_5", r"\sigma_{5}"),
    ("u_5 = (x_5 - mu) / sigma", r"u_{5} = \frac{x_{5} - \mu}{\sigma}"),
    ("s_{i,j} = q_i . k_j / sqrt(2)", r"s_{i,j} = q_{i} \cdot k_{j} / \sqrt{2}"),
    ("a_5,j", "a_{5,j}"),
    ("o^(1)", "o^{(1)}"),
    ("dL/dE_i", r"\partial L / \partial E_{i}"),
    ("theta <- theta - 1/10 dL/dtheta", r"\theta \leftarrow \theta - 1/10 \partial L / \partial \theta"),
    ("sigma = sqrt(variance + eps)", r"\sigma = \sqrt{\text{variance} + \varepsilon}"),
    ("j <= i", r"j \le i"),
    ("-inf", r"-\infty"),
    ("attn = [o^(1) | ...] W_O", r"\mathrm{attn} = [o^{(1)} \mid \dots] W_{O}"),
    ("W_O_{1,1}", r"(W_{O})_{1,1}"),
    ("(W_O)_{1,1} = 0.5", r"(W_{O})_{1,1} = 0.5"),
    ("u'_1W_1[1]", "u'_{1}W_{1}[1]"),
    ("sigma^f_5", r"\sigma^{f}_{5}"),
    ("E (12 x 4)", r"E (12 \times 4)"),
    ("L = -ln p(␣roof)", r"L = -\ln p(\texttt{\textvisiblespace{}roof})"),
])
def test_tex(plain, expected):
    assert tex(plain) == expected


def test_pieces_in_each_dialect():
    assert tex("p(␣cat) before") == r"p(\texttt{\textvisiblespace{}cat})\ \text{before}"
    assert tex("p(␣cat)", "katex") == r'p(\texttt{{\char"2423}cat})'  # "2423" ends before "cat"
    with pytest.raises(ValueError):
        tex("x", "mathml")


def test_formulas_in_a_sentence():
    words = "Each row is normalised: subtract its mean mu, divide by sigma = sqrt(variance + eps), with eps = 1e-05."
    assert [t for kind, t in spans(words) if kind == "math"] == ["mu", "sigma = sqrt(variance + eps)", "eps = 1e-05"]
    assert spans("Reading a row is a product by a one-hot vector: E[id].") == [
        ("prose", "Reading a row is a product by a one-hot vector: "), ("math", "E[id]"), ("prose", ".")]
    assert spans("explicit $mu_5$ and `␣the`") == [("prose", "explicit "), ("math", "mu_5"), ("prose", " and "),
                                                  ("piece", "␣the")]
    # a comparison is math whole: (T < 1 ...) was math T and prose "< 1" (a trial's HTML page)
    assert [t for kind, t in spans("first (T < 1 sharpens it; T > 1 flattens it).") if kind == "math"] == \
        ["T < 1", "T > 1"]


def test_labels():
    assert label_spans("Head 1, weights a_i,j") == [("prose", "Head 1, weights "), ("math", "a_i,j")]
    assert label_spans("LayerNorm before attention, block 1") == [("prose", "LayerNorm before attention, block 1")]
    assert label_spans("x_t = E[id] + P_t") == [("math", "x_t = E[id] + P_t")]
    assert label_spans("`␣the`") == [("piece", "␣the")]
    assert label_spans("token") == [("prose", "token")]


@pytest.mark.parametrize("plain,expected", [("p(a|b)", r"p(a\mid b)"), ("x*y", r"x\cdot y"),
                                            ("x <= y", r"x \le y")])
def test_a_control_word_never_runs_into_a_letter(plain, expected):
    # \midb and \cdoty are undefined commands: pdflatex and KaTeX stop on them
    assert tex(plain) == expected


def test_greek_and_ascii_letters_are_written_as_sympy_writes_them():
    """symbol_tex writes a Greek letter's name and an ASCII letter without SymPy: the same
    text as SymPy's LaTeX printer gives for the symbol (the reference)."""
    import string

    import sympy

    from derive.notation import GREEK, symbol_tex
    for name in sorted(GREEK) + list(string.ascii_letters):
        assert symbol_tex(name) == sympy.latex(sympy.Symbol(name)), name


def test_a_page_without_exact_forms_does_not_load_sympy(tmp_path):
    """derive latex, markdown and html of cat-climbed (Greek names: mu, sigma) write their
    page without importing SymPy (half a second of start-up); --exact loads it."""
    import subprocess
    import sys

    code = ("import sys; from derive.cli import app\n"
            "try:\n    app(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('sympy.core' in sys.modules)")  # (sympy itself is there from the start: a lazy module
    for command in (["latex"], ["markdown"], ["html"], ["latex", "--exact"]):
        out = tmp_path / "page"
        done = subprocess.run([sys.executable, "-c", code, *command, "cat-climbed", "-o", str(out)],
                              capture_output=True, text=True, check=True)
        assert out.stat().st_size > 1000
        assert done.stdout.strip().splitlines()[-1] == str(command == ["latex", "--exact"]), command
