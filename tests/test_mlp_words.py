"""The MLP step's words name a gated unit as the field does (Shazeer 2020, GLU Variants
Improve Transformer, section 2): SwiGLU with SiLU, GeGLU with GELU, ReGLU with ReLU."""

from __future__ import annotations

import pytest

from derive.case import bundled_cases, load_case
from derive.derivation import derive


@pytest.mark.parametrize("activation, unit", [("silu", "SwiGLU"), ("gelu_tanh", "GeGLU"),
                                              ("gelu_erf", "GeGLU"), ("relu", "ReGLU")])
def test_a_gated_mlp_is_called_by_its_field_name(tmp_path, activation, unit):
    """cat-climbed-llama (gated = true) with each activation: 'a gated unit, SwiGLU', never
    the activation's title glued to GLU ('SiLUGLU', 'GELUGLU')."""
    text = bundled_cases()["cat-climbed-llama"].read_text(encoding="utf-8")
    assert 'activation = "silu"' in text
    path = tmp_path / f"llama-{activation}.toml"
    path.write_text(text.replace('activation = "silu"', f'activation = "{activation}"'), encoding="utf-8")
    words = next(s for s in derive(load_case(str(path))).steps if s.key == "mlp").words
    assert f"(a gated unit, {unit})" in words
    assert "LUGLU" not in words
