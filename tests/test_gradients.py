"""``conventions.gradients`` (issue 12, item 4): only the weights it names get dL/dtheta.

A large model's reverse mode is the heavy part of a run; a case may ask for the
derivatives of chosen weights (``["W_U"]``) or for none (``[]``: the loss alone). The
derivatives derive keeps are checked against PyTorch's autograd on the seed case (the
reference takes every gradient; the chosen ones must match it and be the only ones), the
loss alone against torch's loss, and the checker says a line about a derivative left out
is not checked rather than wrong or unreadable.
"""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from derive.case import load_case
from derive.check import Checker
from derive.cli import app
from derive.derivation import derive
from derive.export_json import records
from derive.rounding import Format
from derive.steps import Ref

from test_bundled_cases import CASES
from test_torch_crosscheck import close, record_key, torch_elements
from torch_reference import run

SEED = CASES / "cat-climbed.toml"
TRAINED = 'trained = ["E"]'


def _case(tmp_path, conventions: str) -> str:
    """The seed case with its ``trained = ["E"]`` line replaced by ``conventions``."""
    text = SEED.read_text(encoding="utf-8")
    line = next(line for line in text.splitlines() if line.startswith(TRAINED))
    path = tmp_path / "case.toml"
    path.write_text(text.replace(line, conventions, 1), encoding="utf-8")
    return str(path)


def test_chosen_gradients_agree_with_torch(tmp_path):
    """gradients = ["E", "W_U"], trained = ["E"]: the records hold dL/dtheta and theta after
    the step of E and W_U alone (every entry of each), and every record, the pass after
    the step included, agrees with torch (whose step moves E only, as derive's)."""
    case = load_case(_case(tmp_path, 'trained = ["E"]\ngradients = ["E", "W_U"]'))
    recs = [r for r in records(derive(case), Format()) if r["symbol"] != "given"]
    grads = [r for r in recs if r["symbol"] == "grad"]
    assert {r["param"] for r in grads} == {"E", "W_U"}
    V, d = len(case.pieces), case.d_model
    assert len(grads) == 2 * V * d and sum(r["symbol"] == "updated" for r in recs) == 2 * V * d
    expected = torch_elements(case, run(case))
    wrong = [r["label"] for r in recs if not close(float(r["value"]), expected[record_key(r)])]
    assert not wrong, wrong[:5]
    assert sum(r["after_step"] for r in recs if r["symbol"] == "L") == 1


def test_no_gradient_is_the_loss_alone(tmp_path):
    """gradients = []: L as torch computes it, and no derivative, step or pass after: no
    such record, no such step, and the page ends with the loss."""
    path = _case(tmp_path, "gradients = []")
    case = load_case(path)
    derivation = derive(case)
    recs = records(derivation, Format())
    assert not [r for r in recs if r["symbol"] in ("grad", "updated") or r["after_step"]]
    (L,) = [r for r in recs if r["symbol"] == "L"]
    assert math.isclose(float(L["value"]), float(run(case).before.L), rel_tol=1e-12)
    assert {s.key for s in derivation.steps}.isdisjoint({"gradient", "sgd", "after"})
    page = CliRunner().invoke(app, ["run", path])
    assert page.exit_code == 0 and "The loss" in page.output and "SGD" not in page.output


def test_a_weight_left_out_does_not_move(tmp_path):
    """trained = ["E"] but gradients = ["W_U"]: E has no derivative, so nothing moves: L
    after the step is L before, exactly, and the SGD step says so."""
    derivation = derive(load_case(_case(tmp_path, 'trained = ["E"]\ngradients = ["W_U"]')))
    L = derivation.outputs["L"]
    before, after = derivation.value(Ref("before", L)), derivation.value(Ref("after", L))
    assert (after.mid(), after.rad()) == (before.mid(), before.rad())  # the same ball: the same pass
    sgd = derivation.step("sgd")
    assert "No weight is trained here" in sgd.words and not sgd.tables
    assert "back to W_U, as conventions.gradients asks" in derivation.step("gradient").words


def test_checker_does_not_check_a_derivative_left_out(tmp_path):
    """A line about dL/dW_Q when gradients leaves W_Q out: not checked, with the reason;
    dL/dW_U beside it is still judged (its value is the seed's, rounded by hand here from
    the full case's derivative: 0.596 at row 1, column 7, the column of ␣roof)."""
    derivation = derive(load_case(_case(tmp_path, 'gradients = ["W_U"]')))
    full = derive(load_case(str(SEED)))
    leaf = next(i for i in full.graph.param_leaves()
                if full.meta(Ref("before", i)).param == "W_U" and full.meta(Ref("before", i)).position == 1
                and full.meta(Ref("before", i)).index == 7)
    written = full.decimal(Ref("grad", leaf), Format())
    verdicts = Checker(derivation).check_text(f"dL/dW_Q_{{1,1}} = -0.001\ndL/dW_U_{{1,7}} = {written}\n")
    assert [v.status for v in verdicts] == ["not checked", "correct"], verdicts
    assert "conventions.gradients leaves out W_Q" in verdicts[0].message


def test_bad_gradients_field(tmp_path):
    """gradients = "W_U" (a string, not a list): one line naming the field and what it takes."""
    result = CliRunner().invoke(app, ["run", _case(tmp_path, 'gradients = "W_U"')])
    assert result.exit_code == 2
    assert "conventions.gradients" in result.output and '"all" or a list of weight names' in result.output
