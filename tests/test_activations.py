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
