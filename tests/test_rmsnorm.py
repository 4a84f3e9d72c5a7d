"""RMSNorm (rules/rmsnorm.py) against torch.nn.RMSNorm and Hugging Face's LlamaRMSNorm.

Random GPT-2-shaped cases (tests/random_cases.py) with every norm slot set to RMSNorm
(``conventions.norm = "rmsnorm"``; LayerNorm biases dropped, gains kept as RMSNorm gains)
are derived exactly. The float64 PyTorch reference (tests/torch_reference.py) runs the same
model with its LayerNorm replaced by ``torch.nn.functional.rms_norm`` (what
``torch.nn.RMSNorm`` calls) or by Hugging Face's ``LlamaRMSNorm``; every record derive
exports (rms, the normalised rows, logits, p, L, every gradient, the SGD step, the pass
after) must agree within 1e-9 (tests/test_torch_crosscheck.py's matching, both ways).

LlamaRMSNorm computes in float32 (``hidden_states.to(torch.float32)``); its unchanged code
runs here with ``torch.float32`` standing for float64, so the comparison is at 1e-9.
"""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from transformers.models.llama.modeling_llama import LlamaRMSNorm

import torch_reference
from derive.case import load_case
from derive.derivation import derive
from random_cases import case_text
from test_torch_crosscheck import crosscheck

SEEDS = list(range(10))


def rms_case(seed: int, folder) -> str:
    """Random case ``seed`` with RMSNorm in every slot and eps = 1e-6 (Llama's default)."""
    text = case_text(seed)
    text = re.sub(r"^ln[12f]_bias = .*\n", "", text, flags=re.M)
    text = re.sub(r'"ln[12f]_bias",? ?', "", text).replace(", ]", "]")
    text = text.replace("[conventions]\n", '[conventions]\nnorm = "rmsnorm"\nrmsnorm_eps = 1e-6\n', 1)
    path = folder / f"rms-{seed}.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def torch_rms(x, gain, eps):
    """torch.nn.RMSNorm's functional form."""
    return F.rms_norm(x, (x.shape[-1],), weight=gain, eps=eps)


def llama_rms(x, gain, eps):
    """Hugging Face's LlamaRMSNorm with the gain as its weight (gradients reach the gain)."""
    module = LlamaRMSNorm(x.shape[-1], eps=eps).to(torch.float64)
    del module.weight
    module.weight = gain if gain is not None else torch.ones(x.shape[-1], dtype=torch.float64)
    return module(x)


def patched_norm(norm, eps: float, rms: dict):
    """A stand-in for torch_reference._layer_norm that runs ``norm`` and records each
    slot's rms (the first pass only: the pass before the step)."""
    def _norm(x, _eps, gain, bias, norms, key):
        assert bias is None
        rms.setdefault(key, torch.sqrt((x * x).mean(dim=-1) + eps).detach())
        return norm(x, gain, eps)
    return _norm


@pytest.mark.parametrize("norm", [torch_rms, llama_rms], ids=["torch.nn.RMSNorm", "LlamaRMSNorm"])
@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed-{s}" for s in SEEDS])
def test_rmsnorm_agrees(seed, norm, tmp_path, monkeypatch):
    """Every record of an RMSNorm case agrees with torch; rms is exported for every slot."""
    path = rms_case(seed, tmp_path)
    case = load_case(path)
    rms: dict = {}
    monkeypatch.setattr(torch_reference, "_layer_norm", patched_norm(norm, float(case.conventions.rmsnorm_eps), rms))
    if norm is llama_rms:
        monkeypatch.setattr(torch, "float32", torch.float64)

    def rms_elements(case) -> dict:
        return {("rms", block, None, t + 1, None, slot, None, False): float(values[t])
                for (slot, block), values in rms.items() for t in range(len(values))}

    result = crosscheck(path, rms_elements)
    slots = 2 * len(case.blocks) + (1 if case.conventions.final_layernorm else 0)
    assert result["symbols"]["rms"] == slots * len(case.ids)
    assert "mu" not in result["symbols"] and "sigma" not in result["symbols"]


def test_rmsnorm_by_hand():
    """A row worked by hand: x = (3, 4), eps = 0: rms = sqrt((9 + 16) / 2) = 5/sqrt(2),
    u = (3, 4) sqrt(2) / 5, and with gain (1/2, 2): (3 sqrt(2)/10, 8 sqrt(2)/5)."""
    import math
    from derive import registry
    from derive.array import Array
    from derive.graph import Graph
    from derive.rounding import Format
    from derive.derivation import Derivation
    from derive.steps import Ref
    from derive.rules.norms import NormSlot

    graph = Graph()
    x = Array(graph, [[graph.leaf(3, _meta("x", 1)), graph.leaf(4, _meta("x", 2))]])
    gain = Array(graph, [[graph.leaf(__import__("fractions").Fraction(1, 2), _meta("g", 1)),
                          graph.leaf(2, _meta("g", 2))]])
    slot = NormSlot("ln1", 1, "u", 0, "x", "layernorm", "before attention", ("a",))
    conv = type("C", (), {"rmsnorm_eps": 0})()
    u, step = registry.get("rmsnorm").forward(x, slot, conv, {"gain": gain})
    d = Derivation(load_case("cat-climbed"), graph, [step], None, {})
    got = [float(d.value(Ref("before", i)).mid()) for i in u.ids()[0]]
    assert got == pytest.approx([3 * math.sqrt(2) / 10, 8 * math.sqrt(2) / 5], abs=1e-15)
    rms = step.tables[0].rows[0][1]
    assert d.decimal(rms, Format(places=6)) == "3.535534"  # 5 / sqrt(2) = 3.5355339...


def _meta(symbol, c):
    from derive.graph import Meta
    return Meta(None, f"{symbol}{c}")
