"""Cross-check derive's post-norm block against ``torch.nn.TransformerEncoderLayer``.

Vaswani et al. 2017, section 3.1: the output of each sublayer is LayerNorm(x + Sublayer(x)).
PyTorch's ``TransformerEncoderLayer(norm_first=False)`` is that block:
``x = norm1(x + self_attn(x)); x = norm2(x + linear2(activation(linear1(x))))``. Random
post-norm cases (seeded, dyadic weights, so float64 holds them exactly) are derived with
derive and computed with torch's own layer (float64, dropout 0, batch_first, no mask,
ReLU or GELU, which is torch's erf form), one layer per block, with E[ids] + P before,
an optional final LayerNorm, the last row's logits, softmax and L = -ln p(target) after
(E[ids] + PE, the sinusoids of tests/gpt2_export.py, for the bundled encoder-post-norm).

derive's weights go into the layer's own parameters: ``self_attn.in_proj_weight`` packs
W_Q^T, W_K^T, W_V^T (torch stores a Linear's weight as out x in; derive's row vectors
x @ W are in x out), ``in_proj_bias`` packs b_Q | b_K | b_V, ``self_attn.out_proj`` holds
W_O^T and b_O, ``linear1`` W_1^T and b_1, ``linear2`` W_2^T and b_2, ``norm1`` and
``norm2`` ln1_gain/ln1_bias and ln2_gain/ln2_bias. A case either has every bias and norm
gain and bias (the layer with ``bias=True``) or none (``bias=False``); what a case leaves
out (the bundled encoder has FFN biases only) is 0 (a bias) or 1 (a gain) in the layer
and is not compared, as derive has no such weight.

Every derive record is matched one to one with a torch element (tests/gpt2_export.py's
``reference_elements`` and ``compare``) within 1e-9, gradients of every weight by
autograd and the pass after one SGD step included. The intermediates are read with
forward hooks on the layer's modules: h = x + attn and y = u + m are what ``norm1`` and
``norm2`` read, u and u' what they return, hidden what ``linear1`` returns, g what
``dropout`` (p = 0) reads, m what ``linear2`` returns, attn what ``self_attn`` returns.
The attention weights a come from calling ``self_attn`` again with ``need_weights=True,
average_attn_weights=False``; q, k, v are ``F.linear`` of the layer's input with the
packed in_proj; q.k, s, e^s and their sums, and each head's o = a v, are computed with
torch from those. mu and sigma are computed with torch from the rows the norms read.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from derive.case import Case, load_case
from derive.derivation import derive

from gpt2_export import DTYPE, ParamViews, compare, put, put_outputs, reference_elements, sinusoid_table
from random_cases import _matrix, _vector
from torch_reference import tensor

SEEDS = list(range(12))
ACTIVATIONS = {"relu": "relu", "gelu_erf": "gelu"}  # derive's name -> TransformerEncoderLayer's


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny tensors: one torch thread (see tests/test_gpt2_crosscheck.py)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def post_norm_case_text(seed: int) -> str:
    """A random post-norm case: d_model 2 to 8, heads dividing it, 1 or 2 blocks, 1 to 6
    tokens, ReLU or GELU (erf), every bias and norm gain and bias or none, tied or untied
    W_U, a final LayerNorm or not, no mask, learned positions."""
    rng = random.Random(f"derive-post-norm-{seed}")
    d = rng.choice((2, 4, 6, 8))
    heads = rng.choice([h for h in range(1, d + 1) if d % h == 0])
    V, T, n_blocks, d_mlp = rng.randint(2, 6), rng.randint(1, 6), rng.randint(1, 2), rng.randint(1, 2 * d)
    biases, tied, final = rng.random() < 0.6, rng.random() < 0.3, rng.random() < 0.7
    lines = [f'name = "post-norm-{seed}"', "[vocab]", "pieces = [" + ", ".join(f'"w{i}"' for i in range(V)) + "]",
             "[prompt]", "ids = [" + ", ".join(str(rng.randrange(V)) for _ in range(T)) + "]",
             f"target = {rng.randrange(V)}", "[conventions]", 'mask = "none"',
             f'activation = "{rng.choice(sorted(ACTIVATIONS))}"', "layernorm_eps = " + rng.choice(("1e-5", '"1/64"')),
             f"learning_rate = {rng.choice(('0.1', '1'))}", f"final_layernorm = {'true' if final else 'false'}",
             "[model]", f"d_model = {d}", f"heads = {heads}", f"E = {_matrix(rng, V, d)}", f"P = {_matrix(rng, T, d)}",
             "W_U = " + ('"tied"' if tied else _matrix(rng, d, V))]
    if final and biases:
        lines += [f"lnf_gain = {_vector(rng, d)}", f"lnf_bias = {_vector(rng, d)}"]
    for _ in range(n_blocks):
        lines += ["[[blocks]]", 'layout = "post_norm"']
        lines += [f"{name} = {_matrix(rng, d, d)}" for name in ("W_Q", "W_K", "W_V", "W_O")]
        lines += [f"W_1 = {_matrix(rng, d, d_mlp)}", f"W_2 = {_matrix(rng, d_mlp, d)}"]
        if biases:
            lines += [f"{name} = {_vector(rng, d_mlp if name == 'b_1' else d)}"
                      for name in ("b_Q", "b_K", "b_V", "b_O", "b_1", "b_2")]
            lines += [f"{name} = {_vector(rng, d)}" for name in ("ln1_gain", "ln1_bias", "ln2_gain", "ln2_bias")]
    return "\n".join(lines) + "\n"


class EncoderModel(nn.Module):
    """E[ids] + P, one ``nn.TransformerEncoderLayer(norm_first=False)`` per block, an
    optional final LayerNorm, the last row's logits and L, in float64 (see the module
    docstring)."""

    def __init__(self, case: Case):
        """Build the layers and copy ``case``'s weights into them."""
        super().__init__()
        self.case = case
        conv, d = case.conventions, case.d_model
        self.E = nn.Parameter(tensor(case.E))
        self.P = nn.Parameter(tensor(case.P)) if conv.positions == "learned" else None
        T = len(case.ids)
        self.register_buffer("pe", sinusoid_table(T, d, float(conv.sinusoid_base), conv.first_position,
                                                  conv.sinusoid_layout) if conv.positions == "sinusoidal" else None)
        self.W_U = None if case.W_U is None else nn.Parameter(tensor(case.W_U))
        biased = any(name.startswith("b_") for block in case.blocks for name in block.vectors)
        self.layers = nn.ModuleList(nn.TransformerEncoderLayer(
            d, case.heads, dim_feedforward=block.d_mlp, dropout=0.0, activation=ACTIVATIONS[conv.activation],
            layer_norm_eps=float(conv.layernorm_eps), batch_first=True, norm_first=False, bias=biased,
            dtype=DTYPE) for block in case.blocks)
        self.lnf = {k: nn.Parameter(tensor(v)) for k, v in case.final_vectors.items()}
        self._views: ParamViews = {("E", None, None): (self.E, lambda t: t)}
        if self.P is not None:
            self._views[("P", None, None)] = (self.P, lambda t: t)
        if self.W_U is not None:
            self._views[("W_U", None, None)] = (self.W_U, lambda t: t)
        for name, p in self.lnf.items():
            self._views[(name, None, None)] = (p, lambda t: t.unsqueeze(0))
        row = lambda t: t.unsqueeze(0)  # noqa: E731  (a vector as derive's 1 x n)
        with torch.no_grad():
            for b, (layer, block) in enumerate(zip(self.layers, case.blocks), 1):
                attn = layer.self_attn
                packed = {"W_Q": (attn.in_proj_weight, lambda t: t[:d].T),
                          "W_K": (attn.in_proj_weight, lambda t: t[d:2 * d].T),
                          "W_V": (attn.in_proj_weight, lambda t: t[2 * d:].T),
                          "W_O": (attn.out_proj.weight, lambda t: t.T),
                          "W_1": (layer.linear1.weight, lambda t: t.T), "W_2": (layer.linear2.weight, lambda t: t.T)}
                if biased:
                    packed |= {"b_Q": (attn.in_proj_bias, lambda t: t[:d].unsqueeze(0)),
                               "b_K": (attn.in_proj_bias, lambda t: t[d:2 * d].unsqueeze(0)),
                               "b_V": (attn.in_proj_bias, lambda t: t[2 * d:].unsqueeze(0)),
                               "b_O": (attn.out_proj.bias, row), "b_1": (layer.linear1.bias, row),
                               "b_2": (layer.linear2.bias, row), "ln1_gain": (layer.norm1.weight, row),
                               "ln1_bias": (layer.norm1.bias, row), "ln2_gain": (layer.norm2.weight, row),
                               "ln2_bias": (layer.norm2.bias, row)}
                else:  # no biases, and norm gains that are 1 (not derive weights)
                    packed |= {"ln1_gain": (layer.norm1.weight, row), "ln2_gain": (layer.norm2.weight, row)}
                given = block.matrices | block.vectors
                assert set(given) <= set(packed), f"block {b}: {sorted(given)} vs {sorted(packed)}"
                for name, (t, view) in packed.items():
                    if name not in given:  # what the case leaves out: a bias 0, a gain 1, not compared
                        view(t).fill_(1.0 if name.endswith("gain") else 0.0)
                        continue
                    view(t).copy_(tensor(given[name]) if name in block.matrices else tensor([given[name]]))
                    self._views[(name, b, None)] = (t, view)

    def views(self) -> ParamViews:
        """derive's weights: (name, block, head) -> (torch parameter, view as derive's matrix)."""
        return self._views

    def forward(self) -> tuple[dict, torch.Tensor | None]:
        """One pass: derive's elements by key, and L."""
        case, out, d, H, d_k = self.case, {}, self.case.d_model, self.case.heads, self.case.d_k
        x = self.E[torch.tensor(case.ids)] + (self.P[:len(case.ids)] if self.P is not None else self.pe)
        put(out, "x", x)
        if self.pe is not None:
            put(out, "pe", self.pe)
        stream = x[None]
        for b, layer in enumerate(self.layers, 1):
            store: dict = {}
            hooks = [m.register_forward_hook(lambda m, args, res, key=key: store.__setitem__(key, (args[0], res)))
                     for key, m in (("attn", layer.self_attn), ("norm1", layer.norm1), ("linear1", layer.linear1),
                                    ("dropout", layer.dropout), ("linear2", layer.linear2), ("norm2", layer.norm2))]
            try:
                reads = stream
                stream = layer(stream)
            finally:
                for hook in hooks:
                    hook.remove()
            attn = layer.self_attn
            qkv = F.linear(reads[0], attn.in_proj_weight, attn.in_proj_bias)
            for i, name in enumerate("qkv"):
                put(out, name, qkv[:, i * d:(i + 1) * d], block=b, head_of=lambda c: c // d_k + 1)
            _, a = attn(reads, reads, reads, need_weights=True, average_attn_weights=False)
            for h in range(H):
                q, k, v = (qkv[:, i * d + h * d_k:i * d + (h + 1) * d_k] for i in range(3))
                qk = q @ k.T
                s = qk / math.sqrt(d_k)
                put(out, "qk", qk, block=b, head=h + 1)
                put(out, "s", s, block=b, head=h + 1)
                put(out, "exp_s", torch.exp(s), block=b, head=h + 1)
                put(out, "sum_exp_s", torch.exp(s).sum(-1), block=b, head=h + 1)
                put(out, "a", a[0, h], block=b, head=h + 1)
                put(out, "o", a[0, h] @ v, block=b, head=h + 1)
            put(out, "attn", store["attn"][1][0][0], block=b)
            for norm, summed, normed, slot in (("norm1", "h", "u", "ln1"), ("norm2", "y", "u2", "ln2")):
                rows, result = store[norm][0][0], store[norm][1][0]
                put(out, summed, rows, block=b)
                put(out, normed, result, block=b)
                put(out, "mu", rows.mean(-1), block=b, norm=slot)
                put(out, "sigma", torch.sqrt(rows.var(-1, unbiased=False) + getattr(layer, norm).eps), block=b,
                    norm=slot)
            put(out, "hidden", store["linear1"][1][0], block=b)
            put(out, "g", store["dropout"][0][0], block=b)
            put(out, "m", store["linear2"][1][0], block=b)
        rows = stream[0]
        if case.conventions.final_layernorm:
            eps = float(case.conventions.layernorm_eps)
            rows = F.layer_norm(rows, (d,), self.lnf.get("lnf_gain"), self.lnf.get("lnf_bias"), eps)
            put(out, "f", rows)
            put(out, "mu", stream[0].mean(-1), norm="final")
            put(out, "sigma", torch.sqrt(stream[0].var(-1, unbiased=False) + eps), norm="final")
        z = rows[-1] @ (self.E.T if self.W_U is None else self.W_U)
        L = -torch.log_softmax(z, dim=-1)[case.target]
        put_outputs(out, case, z, torch.softmax(z, dim=-1), L)
        return out, L


def post_norm_case(seed: int, folder: Path) -> Case:
    """Random post-norm case ``seed``, written to ``folder`` and loaded."""
    path = Path(folder) / f"post-norm-{seed}.toml"
    path.write_text(post_norm_case_text(seed), encoding="utf-8")
    return load_case(str(path))


@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed-{s}" for s in SEEDS])
def test_post_norm_agrees_with_transformer_encoder_layer(seed, tmp_path):
    """Every record of a random post-norm case, gradients included, agrees with
    TransformerEncoderLayer(norm_first=False) within 1e-9."""
    case = post_norm_case(seed, tmp_path)
    model = EncoderModel(case)
    result = compare(derive(case), reference_elements(case, model.forward, model.views()), where=case.name,
                     exported=False)
    assert {"h", "u", "y", "u2", "grad", "updated"} <= set(result["symbols"])
    assert result["symbols"]["grad"] == sum(view(t).numel() for t, view in model.views().values())


def test_seeds_cover_the_shapes(tmp_path):
    """The seeds reach what the cross-check is meant to: both activations, biases on and
    off, one and two blocks, several heads, tied and untied W_U, with and without lnf."""
    cases = [post_norm_case(seed, tmp_path) for seed in SEEDS]
    assert {c.conventions.activation for c in cases} == set(ACTIVATIONS)
    assert {"b_Q" in c.blocks[0].vectors for c in cases} == {True, False}
    assert {len(c.blocks) for c in cases} == {1, 2}
    assert max(c.heads for c in cases) > 1
    assert {c.W_U is None for c in cases} == {True, False}
    assert {c.conventions.final_layernorm for c in cases} == {True, False}


def test_post_norm_differs_from_pre_norm(tmp_path):
    """The layout reaches the numbers: the same weights read pre-norm disagree with the layer."""
    path = Path(tmp_path) / "pre.toml"
    path.write_text(post_norm_case_text(0).replace('layout = "post_norm"', 'layout = "pre_norm"'), encoding="utf-8")
    model = EncoderModel(post_norm_case(0, tmp_path))
    with pytest.raises(AssertionError, match="disagree"):
        compare(derive(load_case(str(path))), reference_elements(model.case, model.forward, model.views()),
                symbols={"L"}, exported=False)
