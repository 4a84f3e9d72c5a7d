"""Issue 11, "Wrong verdicts".

The training step: in the seed's SGD block (step 2b), an
update written with the gradient's sign flipped was judged correct, being checked as bare
arithmetic. A run of SGD-shaped lines is matched to the row of E they start from, and an
update that adds the gradient is wrong, with the weight named.

The right values come from the seed page (/work/shared/seeds/000_c4d6024fc6c69432.txt): E's
row for id 1 (␣the) is [-0.5, 0, -0.5, 1] and its printed gradient is [-0.011, 0.011,
0.027, -0.028], eta = 0.1; the updates are computed here with fractions.

Conventions both ways: a case that itself uses LayerNorm variance over n-1, and a reader's
value with the usual n, is named as that convention (the reader's value from the
independent forward pass of tests/hand/hand_reference.py), not called wrong.
"""

from __future__ import annotations

import os
import subprocess
import sys
from fractions import Fraction as F
from pathlib import Path

import pytest

from derive.case import load_case
from derive.check import Checker
from derive.derivation import derive

sys.path.insert(0, str(Path(__file__).parent / "hand"))
import hand_reference as R  # noqa: E402

ROW = [F(-1, 2), F(0), F(-1, 2), F(1)]
GRAD = [F("-0.011"), F("0.011"), F("0.027"), F("-0.028")]
ETA = F(1, 10)

@pytest.fixture(scope="module")
def derivation():
    return derive(load_case("cat-climbed"))

def block(sign: str, results) -> str:
    rows = [f"{float(w):.1f} {sign} 0.1 \\cdot ({float(g):.3f}) &= {r}" for w, g, r in zip(ROW, GRAD, results)]
    return "\\[\\begin{aligned} " + " \\\\ ".join(rows) + " \\end{aligned}\\]"

def test_the_seed_sgd_block_is_correct(derivation):
    right = [w - ETA * g for w, g in zip(ROW, GRAD)]
    texts = [f"{float(q):.3f}" for q in right]
    assert texts == ["-0.499", "-0.001", "-0.503", "1.003"]  # as the seed page prints them
    found = Checker(derivation).check_text(block("-", texts))
    assert [v.status for v in found] == ["correct"] * 4, [v.message for v in found]

def test_a_flipped_sign_is_wrong_with_the_weight_named(derivation):
    flipped = [w + ETA * g for w, g in zip(ROW, GRAD)]
    texts = [f"{float(q):.3f}" for q in flipped]
    found = Checker(derivation).check_text(block("+", texts))
    assert [v.status for v in found] == ["wrong"] * 4, [v.message for v in found]
    for k, v in enumerate(found, 1):
        assert f"E_{{2,{k}}}" in v.message and "against the gradient" in v.message
        assert v.expected == [f"{float(ROW[k - 1] - ETA * GRAD[k - 1]):.3f}"]

def test_a_single_flipped_line_whose_weight_is_known(derivation):
    """1.0 with gradient -0.028 is only E_{2,4}: 1.0 + 0.1·(-0.028) adds the gradient."""
    [v] = Checker(derivation).check_text("1.0 + 0.1*(-0.028) = 0.997")
    assert v.status == "wrong" and "E_{2,4}" in v.message

def test_a_report_that_cannot_be_written_is_an_error(tmp_path):
    """derive check writing to a full disk: exit 2 and one line, never exit 0 or a traceback."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    hand = tmp_path / "hand.txt"
    hand.write_text("L = 0.928\n", encoding="utf-8")
    script = Path(sys.executable).with_name("derive")
    cli = [str(script)] if script.exists() else [sys.executable, "-m", "derive"]
    for extra in ([], ["--format", "json"]):
        with open("/dev/full", "w") as full:
            done = subprocess.run(cli + ["check", "cat-climbed", str(hand)] + extra, stdout=full,
                                  stderr=subprocess.PIPE, text=True, env=dict(os.environ, COLUMNS="120"), timeout=300)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "cannot write the report" in done.stderr


def test_the_usual_default_is_named_when_the_case_uses_another(tmp_path):
    text = (Path(__file__).parents[1] / "cases" / "cat-climbed.toml").read_text(encoding="utf-8")
    case = tmp_path / "cat-n1.toml"
    case.write_text(text.replace("[conventions]\n", '[conventions]\nlayernorm_variance = "n-1"\n', 1)
                    .replace('name = "cat-climbed"', 'name = "cat-n1"'), encoding="utf-8")
    usual, own = R.forward(), R.forward(variance="n-1")
    reader, right = R.text(usual["sigma"][4]), R.text(own["sigma"][4])
    assert (reader, right) == ("0.866", "1.000")
    [v] = Checker(derive(load_case(str(case)))).check_text(f"sigma_5 = {reader}")
    assert v.status == "convention" and "layernorm_variance = n" in v.convention, v.message
    assert v.expected == [right]
