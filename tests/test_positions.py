"""Sinusoid variants (rules/positions.py) against the formulas written out independently
with mpmath: the order of each pair (sin|cos or cos|sin), the layout (interleaved or
concatenated) and the frequency spacing (Vaswani et al. 2017, section 3.5: w_i =
base^(-2i/d); tensor2tensor's get_timing_signal_1d: w_i = base^(-i/(d/2 - 1)), its
inv_timescales with min_timescale 1 and max_timescale base), on the bundled woodchuck
(d_model 4, positions from 0) and with first_position 3."""

from __future__ import annotations

import itertools
import re

import mpmath
import pytest

from derive.case import load_case
from derive.derivation import derive
from derive.errors import CaseError
from derive.export_json import records
from derive.rounding import Format

BASE = open(__file__.replace("tests/test_positions.py", "cases/woodchuck.toml"), encoding="utf-8").read()
VARIANTS = list(itertools.product(["sin_cos", "cos_sin"], ["interleaved", "concatenated"],
                                  ["vaswani", "tensor2tensor"], [0, 3]))


def expected_pe(pos: int, d: int, order: str, layout: str, spacing: str, base: int = 10000) -> list:
    """PE[pos] (d entries) from the published formulas, at 50 digits."""
    mpmath.mp.dps = 50
    half = d // 2
    row = [None] * d
    for i in range(half):
        w = mpmath.power(base, -mpmath.mpf(2 * i) / d) if spacing == "vaswani" else \
            mpmath.exp(-i * mpmath.log(base) / (half - 1))  # tensor2tensor: log_timescale_increment
        pair = (mpmath.sin(pos * w), mpmath.cos(pos * w))
        if order == "cos_sin":
            pair = pair[::-1]
        cols = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, half + i)
        row[cols[0]], row[cols[1]] = pair
    return row


@pytest.mark.parametrize("order, layout, spacing, first", VARIANTS,
                         ids=[f"{o}-{l}-{s}-from{f}" for o, l, s, f in VARIANTS])
def test_sinusoid_variants(order, layout, spacing, first, tmp_path):
    text = re.sub(r'^sinusoid_layout = .*$', f'sinusoid_layout = "{layout}"\nsinusoid_order = "{order}"\n'
                  f'sinusoid_spacing = "{spacing}"', BASE, flags=re.M)
    text = re.sub(r"^first_position = 0", f"first_position = {first}", text, flags=re.M)
    path = tmp_path / "case.toml"
    path.write_text(text, encoding="utf-8")
    case = load_case(str(path))
    pe = {(r["position"], r["index"]): r["value"] for r in records(derive(case), Format()) if r["symbol"] == "pe"}
    for t in range(len(case.ids)):
        want = expected_pe(first + t, case.d_model, order, layout, spacing)
        got = [mpmath.mpf(pe[(t + 1, c + 1)]) for c in range(case.d_model)]
        assert all(abs(g - w) < mpmath.mpf("1e-28") for g, w in zip(got, want)), (t, got, want)


TINY = """
[vocab]
pieces = ["a", "b"]
[prompt]
text = "ab"
target = "a"
[conventions]
positions = "sinusoidal"
sinusoid_spacing = "tensor2tensor"
[model]
d_model = 2
heads = 1
E = [[1, 0], [0, 1]]
W_U = "tied"
[[blocks]]
sublayers = ["attention"]
W_Q = "I"
W_K = "I"
W_V = "I"
W_O = "I"
"""


def test_tensor2tensor_spacing_needs_four_columns(tmp_path):
    """d/2 - 1 = 0 for d_model 2: a clear error naming the field; vaswani spacing is fine."""
    path = tmp_path / "case.toml"
    path.write_text(TINY, encoding="utf-8")
    with pytest.raises(CaseError) as err:
        load_case(str(path))
    assert "field conventions.sinusoid_spacing" in str(err.value) and "d_model >= 4" in str(err.value)
    path.write_text(TINY.replace('"tensor2tensor"', '"vaswani"'), encoding="utf-8")
    assert load_case(str(path)).conventions.sinusoid_spacing == "vaswani"


def test_sinusoid_sentence_is_one_formula_on_the_page():
    """The positions step's sentence ``PE[pos,2i] = sin(pos w_i), PE[pos,2i+1] = cos(pos w_i)``
    is typeset as formulas whole: written ``PE[pos, 2i]``, the pages' formula finder (which
    reads word by word) cut it at the space and set ``, 2i]`` as prose (a fresh user's trial,
    crane's LaTeX and Markdown). woodchuck has the paper's interleaved sinusoids."""
    from typer.testing import CliRunner

    from derive.cli import app

    for command in ("latex", "markdown"):
        page = CliRunner().invoke(app, [command, "woodchuck", "--step", "positions"]).output
        assert re.search(r"\$\\text\{PE\}\[\\text\{pos\},2i\\?\] = \\sin", page), page
        assert re.search(r"\$\\text\{PE\}\[\\text\{pos\},2i\+1\\?\] = \\cos", page), page
        assert ", 2i" not in page
