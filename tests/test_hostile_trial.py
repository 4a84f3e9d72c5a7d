"""What a fresh user's hostile trial of issue 13 found, each as a small case with its right
outcome: a clean one-line error (exit 2) or the right numbers, never "a bug in derive"
(exit 3), a hang or a wrong digit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from derive.cli import app

CAT = (Path(__file__).resolve().parent.parent / "cases" / "cat-climbed.toml").read_text(encoding="utf-8")
THE_ROW = "[-0.5,  0,   -0.5,  1  ]"  # E's row of ␣the (id 1)


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def logits_case(tmp_path: Path) -> str:
    return write(tmp_path, "l1.toml", 'name = "l1"\n[vocab]\npieces = ["a", "b"]\n[input]\nlogits = [1e10, 0]\n'
                                      '[prompt]\ntarget = "b"\n')


def test_explain_where_the_printed_inputs_give_no_recalculation(tmp_path):
    """L = -ln p(b) with p(b) = 1/(1 + e^1e10) printed 0.000: the reader has nothing to
    recompute from (ln 0.000); explain says so (it ended as a bug in derive)."""
    result = CliRunner().invoke(app, ["explain", logits_case(tmp_path), "L"])
    assert result.exit_code == 0, result.output
    assert "no recalculation" in result.output and "10000000000.000" in result.output


def test_the_exact_form_of_a_given_logit_after_the_step(tmp_path):
    """A given logit after the SGD step is z - eta dL/dz (the JSON gave its value before)."""
    result = CliRunner().invoke(app, ["run", "softmax", "--format", "json"])
    records = json.loads(result.output)
    after = [r for r in records if r["label"] == "z_a" and r["after_step"]]
    assert after and all(r["exact"] == "z_a - 1/10*dL/dz_a" for r in after)
    assert all(r["decimal"] == "0.998" for r in after)  # 1 - (e/(2e + 2e^2 + 2e^3 + e^4)) / 10 = 0.99759…


def test_a_note_cuts_the_exact_digits_toward_zero(tmp_path):
    """E[␣the] = [1e300, 0, -0.5, 1]: LayerNorm of row 5 makes q_5.k_5 = -2 + 1.07e-299
    (u_5 = [1.732, -0.577, -0.577, -0.577] up to terms of 1e-300), whose digits cut at 5
    places are -1.99999…, not -2.00000… (which derive's own check called wrong)."""
    case = write(tmp_path, "e300.toml", CAT.replace(THE_ROW, "[1e300, 0, -0.5, 1]"))
    result = CliRunner().invoke(app, ["run", case, "--step", "attention"])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "the exact value -1.99999\u2026 rounds to -2.000" in output and "-2.00000\u2026" not in output


def test_an_output_that_cannot_be_written_is_an_error_not_a_bug():
    script = Path(sys.executable).with_name("derive")
    cli = [str(script)] if script.exists() else [sys.executable, "-m", "derive"]
    with open("/dev/full", "w") as full:
        done = subprocess.run(cli + ["run", "cat-climbed"], stdout=full, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, COLUMNS="120"), timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == "error: cannot write the output: No space left on device"


def test_a_template_past_the_sandbox_is_an_error_naming_it(tmp_path):
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "layernorm.j2").write_text("{% for i in range(100000000) %}x{% endfor %}", encoding="utf-8")
    out = tmp_path / "chapter.tex"
    result = CliRunner().invoke(app, ["latex", "cat-climbed", "--templates", str(folder), "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert "layernorm.j2: the template fails: Range too big" in " ".join(result.output.split())
    assert not out.exists()


@pytest.mark.slow
def test_a_template_that_runs_too_long_is_stopped(tmp_path):
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "layernorm.j2").write_text(
        "{% for i in range(99999) %}{% for j in range(99999) %}x{% endfor %}{% endfor %}", encoding="utf-8")
    result = CliRunner().invoke(app, ["latex", "cat-climbed", "--templates", str(folder), "-o",
                                      str(tmp_path / "chapter.tex")])
    assert result.exit_code == 2 and "the template runs for more than 10 s" in " ".join(result.output.split())


@pytest.mark.parametrize("written,says", [
    ("1" * 100_000, "line 30: a number written with 100000 digits, more than the limit of 400 digits"),
    ("1e" + "9" * 1000, "line 30: a number whose exponent has 1000 digits, far beyond 1e1000"),
])
def test_a_number_toml_cannot_read_is_named_with_its_line(tmp_path, written, says):
    assert CAT.splitlines()[29].strip().startswith(THE_ROW)  # line 30 of cat-climbed.toml
    case = write(tmp_path, "big.toml", CAT.replace(THE_ROW, f"[{written}, 0, -0.5, 1]"))
    result = CliRunner().invoke(app, ["run", case])
    assert result.exit_code == 2 and says in " ".join(result.output.split()), result.output


def test_exact_forms_of_a_weight_of_1e1000_are_bounded(tmp_path):
    """E[␣the][1] = 1e1000 (the largest number a case may write): SymPy tested 2,000-digit
    integers for primality to build each sqrt (18 s with --exact); a form that takes more than
    FORM_SECONDS is shown by its definition. The run ends with the right L: the row of ␣the
    is [1e1000, 0, -0.5, 1], so LayerNorm gives u_5 = [1.732, -0.577, -0.577, -0.577] up to
    1e-1000: the case of E = 1e300 to every printed digit (p(␣roof) = 0.00414, L = 5.48662 at
    5 places in the trial's own mpmath forward pass at 80 digits)."""
    import time
    case = write(tmp_path, "e1000.toml", CAT.replace(THE_ROW, "[1e1000, 0, -0.5, 1]"))
    start = time.perf_counter()
    result = CliRunner().invoke(app, ["run", case, "--exact", "--places", "5", "--step", "loss"])
    assert result.exit_code == 0, result.output
    assert time.perf_counter() - start < 60  # (a bound on a hang, not a timing goal)
    output = " ".join(result.output.split())
    assert "p(\u2423roof) = 0.00414" in output and "rounds to 5.48662" in output
