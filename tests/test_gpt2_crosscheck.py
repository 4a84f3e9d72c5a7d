"""Cross-check derive against Hugging Face GPT-2 and against float64 PyTorch modules.

GPT-2 (``transformers``' ``GPT2LMHeadModel``, built from a local config, float64, eval
mode; tests/gpt2_export.py): the seed case ``cat-climbed`` and random GPT-2-shaped cases
(the shapes and weights of tests/random_cases.py with GPT-2's conventions forced: learned
positions, gelu_tanh, causal mask, final LayerNorm, T = 1). Every derive record is matched
one to one with a value read from HF's modules by forward hooks -- x, u, q, k, v, the
attention weights a, o, attn, h, u2, hidden, g, m, y, f, the last row's logits z, e^z, p,
L = -ln p(target) computed from HF's logits (HF's own loss shifts the labels), the gradient
of every derive weight by HF's autograd, the weights after one SGD step and z, e^z, p, L
of HF's pass with them -- and must agree within 1e-9. mu, sigma, q.k, s and e^s are computed
with torch from the rows HF's LayerNorms read and from HF's q and k. The same runs again
with HF's default SDPA attention, which does not return the weights a.

Conventions that differ and are not derive's fault, so are allowed for here: HF masks a
score with the most negative double, not -inf (the weight is 0 either way); GPT-2 always
has biases and LayerNorm gains and biases, so a case without them gets 0 and 1 and those
HF parameters are not compared (derive has no such weight); GPT-2 has no temperature
(only T = 1 cases are exported) and one n_inner for all blocks.

The parts GPT-2 does not have (ReLU and erf GELU, sinusoidal positions, interleaved or
concatenated, no mask, biases off, temperature, blocks with one sublayer or without
LayerNorm, given X, heads given one by one with their own d_k, greedy T = 0, the reader's
slips) are compared the same way with ``PartsModel``, small torch.nn modules written
independently of derive's rules; that model is itself checked against GPT-2 first. There
derive's certified enclosures are compared (each within 1e-9 of torch, radius below 1e-9)
rather than their 30-digit roundings, which only the seed 004 hand-set head goes through.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
import torch

from derive.case import bundled_cases, load_case
from derive.derivation import derive

from gpt2_export import (PartsModel, compare, gpt2_forward, gpt2_model, gpt2_unsupported,
                         reference_elements)
from random_cases import _matrix, _vector, case_text
from test_torch_crosscheck import ALL_SYMBOLS

pytest.importorskip("transformers")


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Run torch on one thread in these tests: their tensors are tiny, and on a busy 2-core
    machine the intra-op thread pool made each small op cost milliseconds (a case's torch
    side took seconds instead of a tenth of one). The previous setting is restored."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

# random_cases seeds whose shapes, with GPT-2's conventions forced, cover d_model 2, 4, 6, 8,
# 1 to 8 heads, 1 to 3 blocks, tied and untied W_U, no biases at all (21), final LayerNorm
# gain and bias (17, 23), one token (18)
GPT2_SEEDS = [0, 1, 2, 3, 6, 7, 9, 11, 14, 17, 18, 21, 23]
GPT2_CONVENTIONS = {"activation": '"gelu_tanh"', "mask": '"causal"', "temperature": "1",
                    "final_layernorm": "true"}


def gpt2_case_text(seed: int) -> str:
    """Random case ``seed`` of tests/random_cases.py with GPT-2's conventions forced."""
    text = case_text(seed)
    for key, value in GPT2_CONVENTIONS.items():
        text, n = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
        assert n == 1, f"random_cases no longer writes one {key} line"
    text = re.sub(r'(?m)^positions = .*$', 'positions = "learned"', text)
    return text


def gpt2_case(seed: int, folder: Path):
    """The GPT-2-shaped random case ``seed``, loaded from a file in ``folder``."""
    path = Path(folder) / f"gpt2-{seed}.toml"
    path.write_text(gpt2_case_text(seed), encoding="utf-8")
    case = load_case(str(path))
    assert gpt2_unsupported(case) == []
    return case


def gpt2_crosscheck(case) -> dict:
    """derive against HF GPT-2 (eager attention: every record), then against the SDPA
    attention (every record but the weights a, which SDPA does not return)."""
    derivation = derive(case)
    model, views = gpt2_model(case, "eager")
    result = compare(derivation, reference_elements(case, gpt2_forward(case, model), views), where=case.name)
    model, views = gpt2_model(case, "sdpa")
    compare(derivation, reference_elements(case, gpt2_forward(case, model), views),
            symbols=ALL_SYMBOLS - {"a"}, where=case.name + " (sdpa)")
    return result


def parts_crosscheck(case, derivation=None, exported: bool = False) -> dict:
    """derive (``derivation``, or derived here) against PartsModel: every record, one to
    one. derive's certified balls are compared (``exported`` False; see ``compare``): the
    30-digit rounding of the exported values is the GPT-2 tests' and
    test_torch_crosscheck.py's concern, and costs most of a case's time."""
    model = PartsModel(case)
    return compare(derivation or derive(case), reference_elements(case, model.forward, model.views()),
                   where=case.name, exported=exported)


# --------------------------------------------------------------------------- GPT-2

def test_gpt2_cat_climbed():
    """The seed case (W_Q, W_K pick columns, untied W_U, no biases, only E trained):
    all 1063 records agree with GPT-2, gradients of every weight included."""
    case = load_case("cat-climbed")
    result = gpt2_crosscheck(case)
    assert result["records"] == 1063
    assert set(result["symbols"]) == ALL_SYMBOLS
    assert result["symbols"]["grad"] == 244  # E, P, W_Q, W_K, W_V, W_O, W_1, W_2, W_U


@pytest.mark.parametrize("seed", GPT2_SEEDS, ids=[f"seed-{s}" for s in GPT2_SEEDS])
def test_gpt2_random(seed, tmp_path):
    """A random GPT-2-shaped case agrees with GPT-2 record by record."""
    result = gpt2_crosscheck(gpt2_case(seed, tmp_path))
    assert set(result["symbols"]) == ALL_SYMBOLS


def test_gpt2_seeds_cover_the_shapes(tmp_path):
    """The chosen seeds cover what the cross-check is meant to reach."""
    cases = [gpt2_case(seed, tmp_path) for seed in GPT2_SEEDS]
    assert {c.d_model for c in cases} == {2, 4, 6, 8}
    assert {len(c.blocks) for c in cases} == {1, 2, 3}
    assert {c.W_U is None for c in cases} == {True, False}
    assert {c.heads for c in cases} >= {1, 2, 8}
    vectors = [{n for b in c.blocks for n in b.vectors} | set(c.final_vectors) for c in cases]
    assert any(not v for v in vectors), "a case with no bias and no LayerNorm gain or bias"
    assert any({"lnf_gain", "lnf_bias"} <= v for v in vectors)
    assert any({"b_Q", "b_K", "b_V", "b_O"} & v and {"b_1", "b_2"} & v for v in vectors)


def test_gpt2_export_refuses_what_gpt2_lacks():
    """A case GPT-2 cannot express is refused, naming why, rather than exported wrongly."""
    case = load_case("cat-climbed")
    case.conventions.activation = "relu"
    case.conventions.temperature = 2
    with pytest.raises(ValueError, match="activation = 'relu'.*temperature = 2"):
        gpt2_model(case)


def test_parts_model_agrees_with_gpt2(tmp_path):
    """PartsModel, the reference for the non-GPT-2 cases below, gives GPT-2's numbers
    (1e-12) on every element of the GPT-2-shaped cases."""
    for case in [load_case("cat-climbed")] + [gpt2_case(seed, tmp_path) for seed in GPT2_SEEDS]:
        model, views = gpt2_model(case)
        hf = reference_elements(case, gpt2_forward(case, model), views)
        parts = PartsModel(case)
        ours = reference_elements(case, parts.forward, parts.views())
        assert set(ours) == set(hf)
        bad = [k for k in hf if abs(hf[k] - ours[k]) > 1e-12 * max(1.0, abs(hf[k]))]
        assert not bad, f"{case.name}: {bad[:5]}"


# --------------------------------------------------------------------------- the other parts

def _block_text(rng: random.Random, d: int, spec: dict) -> str:
    """One ``[[blocks]]`` table: ``spec`` gives sublayers, layernorm, heads (a list of
    (d_k, d_v): heads given one by one), biases, gains, d_mlp, and layout, shared_norm
    and residual (TOML text, written as given)."""
    sublayers = spec.get("sublayers", ("attention", "mlp"))
    layernorm = spec.get("layernorm", True)
    lines = ["[[blocks]]", "sublayers = [" + ", ".join(f'"{s}"' for s in sublayers) + "]",
             f"layernorm = {'true' if layernorm else 'false'}"]
    lines += [f"{key} = {spec[key]}" for key in ("layout", "shared_norm", "residual") if key in spec]
    vectors: list[tuple[str, int]] = []
    heads = spec.get("heads")
    if "attention" in sublayers:
        if heads:
            lines.append(f"W_O = {_matrix(rng, sum(d_v for _, d_v in heads), d)}")
            vectors.append(("b_O", d))
        else:
            lines += [f"{name} = {_matrix(rng, d, d)}" for name in ("W_Q", "W_K", "W_V", "W_O")]
            vectors += [(name, d) for name in ("b_Q", "b_K", "b_V", "b_O")]
    if "mlp" in sublayers:
        d_mlp = spec.get("d_mlp", 2 * d)
        lines += [f"W_1 = {_matrix(rng, d, d_mlp)}", f"W_2 = {_matrix(rng, d_mlp, d)}"]
        vectors += [("b_1", d_mlp), ("b_2", d)]
    lines += [f"{name} = {_vector(rng, n)}" for name, n in vectors if spec.get("biases")]
    if spec.get("gains") and layernorm:
        shared = spec.get("shared_norm") == "true"
        for norm in ("ln1",) if shared else ("ln1", "ln2") if len(sublayers) == 2 else \
                ("ln1",) if "attention" in sublayers else ("ln2",):
            lines += [f"{norm}_gain = {_vector(rng, d)}", f"{norm}_bias = {_vector(rng, d)}"]
    for k, (d_k, d_v) in enumerate(heads or [], 1):
        lines += ["[[blocks.heads]]", f'name = "given {k}"', f"W_Q = {_matrix(rng, d, d_k)}",
                  f"W_K = {_matrix(rng, d, d_k)}", f"W_V = {_matrix(rng, d, d_v)}"]
        if spec.get("biases"):
            lines += [f"b_Q = {_vector(rng, d_k)}", f"b_K = {_vector(rng, d_k)}", f"b_V = {_vector(rng, d_v)}"]
    return "\n".join(lines)


def parts_case_text(seed: int, *, d: int = 4, heads: int = 2, T: int = 4, V: int = 5, tied: bool = False,
                    given_x: bool = False, vocab: bool = True, lnf: bool = False, conventions: dict | None = None,
                    blocks: tuple[dict, ...] = ({},)) -> str:
    """A case file with random dyadic weights (tests/random_cases.py's draws) and the
    features asked for: ``conventions`` (TOML values by key), ``blocks`` (see
    :func:`_block_text`), a given X (T x d) instead of a prompt, with or without a
    vocabulary, tied or untied W_U, final LayerNorm gain and bias."""
    rng = random.Random(f"derive-gpt2-parts-{seed}")
    conventions = dict(conventions or {})
    lines = [f'name = "parts-{seed}"']
    if vocab:
        lines += ["[vocab]", "pieces = [" + ", ".join(f'"w{i}"' for i in range(V)) + "]"]
    if given_x:
        lines += ["[input]", f"X = {_matrix(rng, T, d)}"]
    else:
        lines += ["[prompt]", "ids = [" + ", ".join(str(rng.randrange(V)) for _ in range(T)) + "]",
                  f"target = {rng.randrange(V)}"]
    lines += ["[conventions]"] + [f"{key} = {value}" for key, value in conventions.items()]
    lines += ["[model]", f"d_model = {d}", f"heads = {heads}"]
    if vocab:
        lines += [f"E = {_matrix(rng, V, d)}", "W_U = " + ('"tied"' if tied else _matrix(rng, d, V))]
    if conventions.get("positions", '"none"' if given_x else '"learned"') == '"learned"':
        lines.append(f"P = {_matrix(rng, T + 1, d)}")
    if lnf:
        lines += [f"lnf_gain = {_vector(rng, d)}", f"lnf_bias = {_vector(rng, d)}"]
    lines += [_block_text(rng, d, spec) for spec in blocks]
    return "\n".join(lines) + "\n"


# the seed 004's setting: given x_i, sinusoids PE[pos] from pos 0 added, a hand-set head
# with d_k = 1 (q_i = x'_i . E[it], k_j = x'_j . E[load]), no mask, no LayerNorm
HAND_SET_HEAD = """\
name = "hand-set-head"
[input]
X = [[1, 0, 0.5, 0], [0, 1, 0, 0.5], [0.5, 0.5, 1, 0]]
labels = ["it", "load", "crane"]
[conventions]
positions = "sinusoidal"
mask = "none"
[model]
d_model = 4
[[blocks]]
sublayers = ["attention"]
layernorm = false
W_O = [[1, 0, 0, 0]]
[[blocks.heads]]
name = "hand set"
W_Q = [[1], [0], [0.5], [0]]
W_K = [[0], [1], [0], [0.5]]
W_V = [[1], [1], [1], [1]]
"""

PARTS_CASES = {
    # ReLU, sinusoids interleaved from pos 0, no mask, no bias, T = 2, tied W_U, 2 blocks
    "sinusoidal-relu-nomask": dict(seed=1, tied=True, conventions={
        "positions": '"sinusoidal"', "activation": '"relu"', "mask": '"none"', "temperature": "2"},
        blocks=({}, {})),
    # sinusoids concatenated, base 100, first pos 3; GELU erf; biases and gains; T = 1/2
    "sinusoidal-concatenated-erf": dict(seed=2, d=6, heads=3, T=5, lnf=True, conventions={
        "positions": '"sinusoidal"', "sinusoid_layout": '"concatenated"', "sinusoid_base": "100",
        "first_position": "3", "activation": '"gelu_erf"', "temperature": '"1/2"'},
        blocks=({"biases": True, "gains": True},)),
    # blocks with one sublayer, and a block without LayerNorm
    "one-sublayer-blocks": dict(seed=3, conventions={"activation": '"relu"'}, blocks=(
        {"sublayers": ("attention",), "gains": True}, {"sublayers": ("mlp",), "biases": True, "gains": True},
        {"layernorm": False, "biases": True}, {"sublayers": ("mlp",), "layernorm": False})),
    # heads given one by one: d_k = d_v = 1 beside d_k = 3, d_v = 2, with biases; trained
    "given-heads-with-loss": dict(seed=4, T=5, conventions={"trained": '["W_Q", "W_K", "b_V", "E"]'}, blocks=(
        {"heads": [(1, 1), (3, 2)], "biases": True, "gains": True}, {"heads": [(2, 4)], "layernorm": False})),
    # given X, no vocabulary: the output rows; attention only, given heads, no mask
    "given-x-output-rows": dict(seed=5, given_x=True, vocab=False, conventions={"mask": '"none"'}, blocks=(
        {"sublayers": ("attention",), "layernorm": False, "heads": [(1, 1), (2, 2)]}, {"biases": True})),
    # given X with sinusoids added, then logits over a vocabulary (untied W_U), T = 2
    "given-x-logits": dict(seed=6, given_x=True, T=3, lnf=True, conventions={
        "positions": '"sinusoidal"', "temperature": "2", "activation": '"relu"'}, blocks=({"biases": True},)),
    # given X with a vocabulary and a tied W_U (logits f E^T), no positions
    "given-x-tied": dict(seed=9, given_x=True, tied=True, T=3),
    # no positions, no final LayerNorm, T = 0 (greedy: no loss)
    "greedy": dict(seed=7, conventions={"positions": '"none"', "temperature": "0", "final_layernorm": "false"}),
    # post-norm (Vaswani et al. 2017): u = LN(x + attn), u' = LN(u + m); with and without
    # gains, biases, a second block, ReLU
    "post-norm": dict(seed=10, T=5, lnf=True, conventions={"activation": '"relu"'}, blocks=(
        {"layout": '"post_norm"', "gains": True, "biases": True}, {"layout": '"post_norm"'})),
    # parallel (GPT-NeoX: two norms; GPT-J: one shared norm), GELU erf
    "parallel": dict(seed=11, d=6, heads=3, conventions={"activation": '"gelu_erf"'}, blocks=(
        {"layout": '"parallel"', "gains": True, "biases": True},
        {"layout": '"parallel"', "shared_norm": "true", "gains": True})),
    # residual on one sublayer only, in each sequential layout; a parallel block without one
    "residual-per-sublayer": dict(seed=12, blocks=(
        {"residual": '["attention"]', "gains": True}, {"layout": '"post_norm"', "residual": '["mlp"]'},
        {"layout": '"parallel"', "residual": "false"}, {"sublayers": ("mlp",), "residual": "[]"})),
    # the reader's slips derive can compute: variance over d - 1, eps added to sigma,
    # scores over sqrt(d_model), the mask after the softmax, the loss in bits
    # rotary positions (RoFormer): interleaved pairs on half of each head (r = 2 of d_k = 4),
    # base 100, two blocks; and heads given one by one (d_k 2 and 4) with biases, rotate-half
    "rotary-interleaved-half": dict(seed=10, d=8, heads=2, T=5, conventions={
        "positions": '"rotary"', "rotary_layout": '"interleaved"', "rotary_fraction": '"1/2"',
        "rotary_base": "100"}, blocks=({"gains": True}, {"biases": True})),
    "rotary-given-heads": dict(seed=11, T=4, conventions={"positions": '"rotary"'}, blocks=(
        {"heads": [(2, 2), (4, 1)], "biases": True},)),
    "reader-slips": dict(seed=8, heads=4, conventions={
        "layernorm_variance": '"n-1"', "layernorm_eps_placement": '"sigma"', "layernorm_eps": '"1/64"',
        "score_scale": '"d_model"', "mask": '"causal_after_softmax"', "loss_log": '"2"'},
        blocks=({"gains": True},)),
}


@pytest.mark.parametrize("name", sorted(PARTS_CASES))
def test_parts_case(name, tmp_path):
    """A case with parts GPT-2 does not have agrees with PartsModel record by record."""
    spec = dict(PARTS_CASES[name])
    path = tmp_path / f"{name}.toml"
    path.write_text(parts_case_text(spec.pop("seed"), **spec), encoding="utf-8")
    case = load_case(str(path))
    assert gpt2_unsupported(case)
    result = parts_crosscheck(case)
    if case.target is not None and case.conventions.temperature != 0:
        assert result["symbols"]["grad"] > 0


def test_hand_set_head(tmp_path):
    """The seed 004's hand-set head (d_k = 1) on x'_i = x_i + PE[i - 1]: every quantity."""
    path = tmp_path / "hand-set-head.toml"
    path.write_text(HAND_SET_HEAD, encoding="utf-8")
    result = parts_crosscheck(load_case(str(path)), exported=True)
    assert result["symbols"]["pe"] == 12 and result["symbols"]["x2"] == 12 and result["symbols"]["a"] == 9


# cat-climbed-llama has RMSNorm, which PartsModel does not model: tests/test_bundled_cases.py
# checks it against Hugging Face's LlamaForCausalLM
@pytest.mark.parametrize("name", sorted(set(bundled_cases()) - {"cat-climbed", "cat-climbed-llama"}))
def test_bundled_case(name):
    """Every other bundled case (woodchuck: sinusoids, ReLU, biases, tied W_U; crane: 64
    tokens, a hand-set head with d_k = 1 ...) agrees with PartsModel record by record."""
    parts_crosscheck(load_case(name))
