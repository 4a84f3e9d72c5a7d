"""The registered activations against PyTorch: SiLU (rules/activations.py) on random cases
(tests/random_cases.py with activation = "silu") agrees with torch.nn.functional.silu in the
float64 reference model record by record within 1e-9, values and every gradient."""

from __future__ import annotations

import re

import pytest

from derive import registry
from random_cases import case_text
from test_torch_crosscheck import crosscheck

SEEDS = list(range(10))


@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed-{s}" for s in SEEDS])
def test_silu_agrees_with_torch(seed, tmp_path):
    """Every record of a random SiLU case (hidden, g, m, ..., L, dL/dtheta) agrees with torch."""
    text = re.sub(r'^activation = ".*"$', 'activation = "silu"', case_text(seed), flags=re.M)
    path = tmp_path / f"silu-{seed}.toml"
    path.write_text(text, encoding="utf-8")
    result = crosscheck(path)
    assert result["case"].conventions.activation == "silu" and result["symbols"]["g"] > 0


def test_silu_by_hand():
    """SiLU(1) = 1 / (1 + e^-1) = 0.7310585786...; SiLU(0) = 0 exactly; its slope at 0 is 1/2."""
    from flint import arb, fmpq
    op = registry.load()["silu"].op
    assert op.eval([fmpq(0)]) == 0
    assert abs(float(op.eval([fmpq(1)]).mid()) - 0.7310585786300049) < 1e-15
    assert abs(float(op.partials([fmpq(0)], None)[0].mid()) - 0.5) < 1e-15


def gated_case(seed: int, activation: str, folder) -> str:
    """Random case ``seed`` made a gated MLP: gated = true, the activation given, and W_3 (and
    b_3 where W_1 has a bias) built from W_1's rows in reverse order (same shape, other values)."""
    text = re.sub(r'^activation = ".*"$', f'activation = "{activation}"', case_text(seed), flags=re.M)

    def with_w3(match: re.Match) -> str:  # W_1's rows, reversed, as W_3 (each block's own)
        rows = match.group(1).split("\n")
        return match.group(0) + "\ngated = true\nW_3 = [\n" + "\n".join(reversed(rows)) + "\n]"

    text = re.sub(r"^W_1 = \[\n(.*?)\n\]", with_w3, text, flags=re.M | re.S)
    text = re.sub(r"^b_1 = (.*)$", lambda m: m.group(0) + "\nb_3 = " + m.group(1), text, flags=re.M)
    path = folder / f"gated-{activation}-{seed}.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("activation", ["silu", "gelu_erf"], ids=["SwiGLU", "GeGLU"])
@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed-{s}" for s in SEEDS])
def test_gated_mlp_agrees_with_torch(seed, activation, tmp_path):
    """SwiGLU and GeGLU (Shazeer 2020, eq. 6): every record, up = u' W_3 and gated = g * up
    included, agrees with the float64 torch modules (tests/gpt2_export.py PartsModel)."""
    from derive.case import load_case
    from test_gpt2_crosscheck import parts_crosscheck
    case = load_case(gated_case(seed, activation, tmp_path))
    assert all(block.options["gated"] and "W_3" in block.matrices for block in case.blocks)
    result = parts_crosscheck(case)
    assert result["symbols"]["up"] == result["symbols"]["gated"] == result["symbols"]["hidden"] > 0


def test_relu_on_the_seed_agrees_with_torch(tmp_path):
    """The seed with ReLU for its GELU (a user trial: "a branch (ReLU at 0 or a division)
    cannot be decided"): the row of `the` has pre-activations that are exactly 0, made of
    square roots (u'_1 W_1, columns 3 and 7), which no precision decides; their exact forms
    do, and every record (activations, L, dL/dtheta, the pass after the step) agrees with
    torch in float64."""
    from pathlib import Path

    seed = (Path(__file__).resolve().parent.parent / "cases" / "cat-climbed.toml").read_text(encoding="utf-8")
    text, n = re.subn(r'^activation = "[^"]*"', 'activation = "relu"', seed, flags=re.M)
    assert n == 1
    path = tmp_path / "relu.toml"
    path.write_text(text, encoding="utf-8")
    result = crosscheck(path)
    assert result["case"].conventions.activation == "relu" and result["symbols"]["g"] > 0

