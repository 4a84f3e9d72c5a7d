"""Derive's rotary cases as Hugging Face models, for tests/test_rope.py: ``LlamaForCausalLM``
(RMSNorm, rotary positions in the rotate-half layout, SwiGLU, grouped-query attention) and
``GPTNeoXForCausalLM`` (LayerNorm, partial rotary, erf GELU, biases).

Each model is built from a local config (nothing is downloaded), float64, eval mode, eager
attention (which returns the weights a), and holds the case's exact dyadic weights as
doubles. HF's ``nn.Linear`` stores W as (out, in): derive's ``x @ W`` is ``W^T`` of it. The
intermediates are read with forward hooks on HF's own modules; q~ and k~ are what HF's own
``apply_rotary_pos_emb`` returns inside the attention (captured by wrapping the module's
function), and q~.k~, s, e^s and their sums are computed with torch from them. Everything is
keyed as derive's JSON names it and driven by tests/gpt2_export.py's
:func:`~gpt2_export.reference_elements` (forward, autograd gradients, SGD step, pass after).

HF computes the rotary cos/sin (``inv_freq``, ``position_ids.float()``) and LlamaRMSNorm
(``hidden_states.to(torch.float32)``) in float32 whatever the model's dtype. Their unchanged
code runs here under :func:`float64_everywhere`, where ``torch.float32``, ``torch.float`` and
``Tensor.float()`` stand for float64, so the comparison can be at 1e-9.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch
import torch.nn as nn
from torch.nn.utils import parametrize

from derive.case import Case

from gpt2_export import Forward, ParamViews, put, put_outputs
from torch_reference import tensor


@contextlib.contextmanager
def float64_everywhere() -> Iterator[None]:
    """``torch.float32``, ``torch.float`` and ``Tensor.float()`` mean float64 inside, and so
    does the default dtype (HF's rotary tables and RMSNorm cast to float32 explicitly);
    restored on exit."""
    saved = torch.float32, torch.float, torch.Tensor.float, torch.get_default_dtype()
    torch.float32 = torch.float = torch.float64
    torch.Tensor.float = torch.Tensor.double
    torch.set_default_dtype(torch.float64)  # GPT-J's inv_freq: an int64 tensor / an int
    try:
        yield
    finally:
        torch.float32, torch.float, torch.Tensor.float, default = saved
        torch.set_default_dtype(default)


@contextlib.contextmanager
def captured_rotations(module) -> Iterator[list]:
    """Wrap ``module.apply_rotary_pos_emb`` (HF's function, which the attention calls by its
    module-level name): each call's (q~, k~), batch x heads x T x d_k, is appended in order
    (one per layer and pass)."""
    original = module.apply_rotary_pos_emb
    calls: list = []

    def wrapped(*args, **kwargs):
        out = original(*args, **kwargs)
        calls.append(out)
        return out

    module.apply_rotary_pos_emb = wrapped
    try:
        yield calls
    finally:
        module.apply_rotary_pos_emb = original


def _fill(model, views: ParamViews, case: Case, ones: tuple[str, ...]) -> None:
    """Set every HF parameter to the default of what a case leaves out (1 for the norm
    weights named by a suffix in ``ones``, else 0), then copy the case's weights in through
    ``views``."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.fill_(1.0 if name.endswith(ones) else 0.0)
        for (name, b, _), (param, view) in views.items():
            source = case.E if name == "E" else case.W_U if name == "W_U" else \
                case.final_vectors.get(name) if b is None else \
                case.blocks[b - 1].matrices.get(name) or case.blocks[b - 1].vectors.get(name)
            value = tensor(source)
            view(param).copy_(value if value.dim() == 2 else value.unsqueeze(0))


T_ = lambda t: t.T  # noqa: E731  (an nn.Linear weight, out x in, seen as derive's in x out)
VEC = lambda t: t.unsqueeze(0)  # noqa: E731


def _scores(out: dict, case: Case, b: int, q_rot: torch.Tensor, k_rot: torch.Tensor, weights, joined,
            scaling: float) -> None:
    """q~, k~ (HF's, batch x heads x T x d_k; k~ for the key/value heads), then per query
    head q~.k~, s, e^s, their sums, a (HF's weights) and o (the columns of the joined heads
    W_O reads)."""
    T, H, d_k = q_rot.shape[2], q_rot.shape[1], q_rot.shape[3]
    group = H // k_rot.shape[1]
    put(out, "q_rot", q_rot[0].transpose(0, 1).reshape(T, -1), block=b, head_of=lambda c: c // d_k + 1)
    put(out, "k_rot", k_rot[0].transpose(0, 1).reshape(T, -1), block=b, head_of=lambda c: c // d_k + 1)
    causal = torch.ones(T, T, dtype=torch.bool).triu(1)
    hidden = lambda i, j: j > i  # noqa: E731
    for h in range(H):
        qk = q_rot[0, h] @ k_rot[0, h // group].T
        s = qk * scaling
        exp_s = torch.exp(s).masked_fill(causal, 0.0)
        put(out, "qk_rot", qk, block=b, head=h + 1, skip=hidden)
        put(out, "s", s, block=b, head=h + 1, skip=hidden)
        put(out, "exp_s", exp_s, block=b, head=h + 1, skip=hidden)
        put(out, "sum_exp_s", exp_s.sum(-1), block=b, head=h + 1)
        put(out, "a", weights[0, h], block=b, head=h + 1)
        put(out, "o", joined[:, h * d_k:(h + 1) * d_k], block=b, head=h + 1)


def _hooked_pass(model, case: Case, modules: dict, module) -> tuple[dict, list, torch.Tensor]:
    """One pass of ``model`` on the prompt with forward hooks on ``modules`` (key -> HF module)
    and HF's rotations captured from ``module``: (the first input and the output of each
    hooked module by key, the (q~, k~) of each layer, the logits)."""
    store: dict = {}

    def keep(name):
        return lambda _module, args, output: store.__setitem__(name, (args[0] if args else None, output))

    handles = [m.register_forward_hook(keep(name)) for name, m in modules.items()]
    try:
        with captured_rotations(module) as rotations:
            logits = model(torch.tensor([case.ids], dtype=torch.long)).logits
    finally:
        for handle in handles:
            handle.remove()
    return store, rotations, logits


def _layer_norm(out: dict, store: dict, eps: float):
    """``norm(key, name, block)``: records mu and sigma (eps inside the root) of the rows the
    hooked LayerNorm ``key`` read, as slot ``name`` of ``block``; returns its output rows."""
    def norm(key, name, block):
        x_in, y_out = store[key]
        x_in = x_in[0]
        put(out, "mu", x_in.mean(-1), block=block, norm=name)
        put(out, "sigma", torch.sqrt(x_in.var(-1, unbiased=False) + eps), block=block, norm=name)
        return y_out[0]
    return norm


def _mlp_and_sum(out: dict, store: dict, b: int) -> None:
    """hidden, g, m of block ``b``'s plain MLP (hooked as fc, act, proj) and the block's
    output y (hooked as layer)."""
    for name, key in (("hidden", "fc"), ("g", "act"), ("m", "proj")):
        put(out, name, store[(b, key)][1][0], block=b)
    y = store[(b, "layer")][1]
    put(out, "y", (y[0] if isinstance(y, tuple) else y)[0], block=b)


def _logits(out: dict, case: Case, logits: torch.Tensor):
    """z, e^z, p and L = -ln p(target) of the last row from HF's logits."""
    z = logits[0, -1]
    L = -torch.log_softmax(z, dim=-1)[case.target] if case.target is not None else None
    put_outputs(out, case, z, torch.softmax(z, dim=-1), L)
    return L


# --------------------------------------------------------------------------- Llama

def llama_model(case: Case):
    """``LlamaForCausalLM`` with ``case``'s weights (float64, eval, eager attention) and the
    views of derive's weights in its parameters. Call under :func:`float64_everywhere`.

    The case must be Llama-shaped: RMSNorm everywhere, rotary rotate-half positions over the
    whole head, gated SiLU MLP (W_1 = gate_proj, W_3 = up_proj, W_2 = down_proj), no biases,
    untied W_U, a final norm; ``kv_heads`` gives ``num_key_value_heads``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    conv = case.conventions
    block = case.blocks[0]
    kv = block.options.get("kv_heads", "heads")
    config = LlamaConfig(vocab_size=len(case.pieces), hidden_size=case.d_model, intermediate_size=block.d_mlp,
                         num_hidden_layers=len(case.blocks), num_attention_heads=case.heads,
                         num_key_value_heads=case.heads if kv == "heads" else int(kv), head_dim=case.d_k,
                         hidden_act="silu", max_position_embeddings=max(16, len(case.ids)),
                         rms_norm_eps=float(conv.rmsnorm_eps), attention_bias=False, mlp_bias=False,
                         tie_word_embeddings=False, attention_dropout=0.0, use_cache=False,
                         rope_parameters={"rope_type": "default", "rope_theta": float(conv.rotary_base)},
                         bos_token_id=None, eos_token_id=None, pad_token_id=None,
                         attn_implementation="eager")
    model = LlamaForCausalLM(config).double().eval()
    assert model.lm_head.weight is not model.model.embed_tokens.weight
    views: ParamViews = {("E", None, None): (model.model.embed_tokens.weight, lambda t: t),
                         ("W_U", None, None): (model.lm_head.weight, T_)}
    if "lnf_gain" in case.final_vectors:
        views[("lnf_gain", None, None)] = (model.model.norm.weight, VEC)
    for b, (blk, layer) in enumerate(zip(case.blocks, model.model.layers), 1):
        at, mlp = layer.self_attn, layer.mlp
        pairs = {"W_Q": at.q_proj, "W_K": at.k_proj, "W_V": at.v_proj, "W_O": at.o_proj,
                 "W_1": mlp.gate_proj, "W_3": mlp.up_proj, "W_2": mlp.down_proj}
        for name, linear in pairs.items():
            views[(name, b, None)] = (linear.weight, T_)
        for name, norm in (("ln1_gain", layer.input_layernorm), ("ln2_gain", layer.post_attention_layernorm)):
            if name in blk.vectors:
                views[(name, b, None)] = (norm.weight, VEC)
    _fill(model, views, case, ("layernorm.weight", "norm.weight"))
    return model, views


def llama_forward(case: Case, model) -> Forward:
    """The forward pass of the HF Llama as derive's elements: per block rms and u (input
    RMSNorm), q, k, v (the projections), q~, k~ (HF's apply_rotary_pos_emb), q~.k~, s, e^s,
    sums, a, o, attn, h, rms' and u', hidden (gate_proj), g (SiLU), up (up_proj), gated
    (what down_proj reads), m, y; then rms^f, f, z, e^z, p, L."""
    from transformers.models.llama import modeling_llama

    modules = {"norm": model.model.norm}
    for b, layer in enumerate(model.model.layers, 1):
        at, mlp = layer.self_attn, layer.mlp
        modules |= {(b, "ln1"): layer.input_layernorm, (b, "q"): at.q_proj, (b, "k"): at.k_proj,
                    (b, "v"): at.v_proj, (b, "attn"): at, (b, "o_proj"): at.o_proj,
                    (b, "ln2"): layer.post_attention_layernorm, (b, "gate"): mlp.gate_proj, (b, "act"): mlp.act_fn,
                    (b, "up"): mlp.up_proj, (b, "down"): mlp.down_proj, (b, "layer"): layer}

    def run():
        store, rotations, logits = _hooked_pass(model, case, modules, modeling_llama)
        out: dict = {}

        def norm(key, name, block, eps):
            x_in, y_out = store[key]
            x_in = x_in[0]
            put(out, "rms", torch.sqrt((x_in * x_in).mean(-1) + eps), block=block, norm=name)
            return y_out[0]

        eps = float(case.conventions.rmsnorm_eps)
        for b, layer in enumerate(model.model.layers, 1):
            at = layer.self_attn
            put(out, "u", norm((b, "ln1"), "ln1", b, eps), block=b)
            for name in "qkv":
                put(out, name, store[(b, name)][1][0], block=b, head_of=lambda c: c // case.d_k + 1)
            q_rot, k_rot = rotations[b - 1]
            _scores(out, case, b, q_rot, k_rot, store[(b, "attn")][1][1], store[(b, "o_proj")][0][0], at.scaling)
            put(out, "attn", store[(b, "o_proj")][1][0], block=b)
            put(out, "h", store[(b, "ln2")][0][0], block=b)
            put(out, "u2", norm((b, "ln2"), "ln2", b, eps), block=b)
            for name, key, which in (("hidden", "gate", 1), ("g", "act", 1), ("up", "up", 1), ("gated", "down", 0),
                                     ("m", "down", 1)):
                put(out, name, store[(b, key)][which][0], block=b)
            y = store[(b, "layer")][1]
            put(out, "y", (y[0] if isinstance(y, tuple) else y)[0], block=b)
        put(out, "f", norm("norm", "final", None, eps))
        return out, _logits(out, case, logits)

    return run


# --------------------------------------------------------------------------- GPT-NeoX

class HeadPacked(nn.Module):
    """A parametrization of GPT-NeoX's ``query_key_value`` weight (3 d x d_in) or bias (3 d)
    from derive's W_Q, W_K, W_V (d_in x d, ``x @ W``) or b_Q, b_K, b_V (d): head h's rows are
    its q, k, v columns in turn (HF: ``view(T, H, 3 d_k).chunk(3)``)."""

    def __init__(self, heads: int, d_k: int, d_in: int | None):
        """``d_in`` None: a bias."""
        super().__init__()
        self.heads, self.d_k = heads, d_k
        shape = (d_in, heads * d_k) if d_in is not None else (heads * d_k,)
        for name in "QKV":
            setattr(self, name, nn.Parameter(torch.zeros(shape, dtype=torch.float64)))

    def forward(self, _original: torch.Tensor) -> torch.Tensor:
        parts = [getattr(self, name) for name in "QKV"]
        if parts[0].dim() == 2:
            parts = [p.T for p in parts]  # out x in, as nn.Linear stores it
        split = [p.reshape(self.heads, self.d_k, *p.shape[1:]) for p in parts]
        return torch.stack(split, dim=1).reshape(3 * self.heads * self.d_k, *parts[0].shape[1:])


def neox_model(case: Case, parallel: bool = False):
    """``GPTNeoXForCausalLM`` with ``case``'s weights (float64, eval, eager attention) and the
    views of derive's weights. Call under :func:`float64_everywhere`.

    The case must be NeoX-shaped: LayerNorm everywhere (gains and biases optional: 1 and 0),
    rotary rotate-half positions with ``rotary_fraction`` = ``partial_rotary_factor``, erf
    GELU, a final LayerNorm, untied W_U (``embed_out``); biases optional (0). HF packs
    W_Q | W_K | W_V head by head in ``query_key_value`` (out features h 3 d_k + (0, d_k, 2 d_k)
    + c), which no strided view of one derive matrix gives: the packed weight and bias are
    parametrized (:class:`HeadPacked`) by three derive-shaped parameters each."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    conv = case.conventions
    d, H, d_k = case.d_model, case.heads, case.d_k
    config = GPTNeoXConfig(vocab_size=len(case.pieces), hidden_size=d, intermediate_size=case.blocks[0].d_mlp,
                           num_hidden_layers=len(case.blocks), num_attention_heads=H, hidden_act="gelu",
                           rope_parameters={"rope_type": "default", "rope_theta": float(conv.rotary_base),
                                            "partial_rotary_factor": float(conv.rotary_fraction)},
                           max_position_embeddings=max(16, len(case.ids)), layer_norm_eps=float(conv.layernorm_eps),
                           use_parallel_residual=parallel, attention_bias=True, hidden_dropout=0.0,
                           attention_dropout=0.0, tie_word_embeddings=False, use_cache=False,
                           bos_token_id=None, eos_token_id=None, attn_implementation="eager")
    model = GPTNeoXForCausalLM(config).double().eval()
    assert model.config.rope_parameters["partial_rotary_factor"] == float(conv.rotary_fraction)
    nx = model.gpt_neox
    views: ParamViews = {("E", None, None): (nx.embed_in.weight, lambda t: t),
                         ("W_U", None, None): (model.embed_out.weight if hasattr(model, "embed_out")
                                               else model.lm_head.weight, T_)}
    for name, param in (("lnf_gain", nx.final_layer_norm.weight), ("lnf_bias", nx.final_layer_norm.bias)):
        if name in case.final_vectors:
            views[(name, None, None)] = (param, VEC)
    for b, (blk, layer) in enumerate(zip(case.blocks, nx.layers), 1):
        at, mlp = layer.attention, layer.mlp
        packed = {}
        for part in ("weight", "bias"):  # HF's own Linear reads the packed tensors
            packed[part] = HeadPacked(H, d_k, at.query_key_value.weight.shape[1] if part == "weight" else None)
            parametrize.register_parametrization(at.query_key_value, part, packed[part])
        for name in "QKV":
            views[(f"W_{name}", b, None)] = (getattr(packed["weight"], name), lambda t: t)
            if f"b_{name}" in blk.vectors:
                views[(f"b_{name}", b, None)] = (getattr(packed["bias"], name), VEC)
        pairs = {"W_O": at.dense.weight, "W_1": mlp.dense_h_to_4h.weight, "W_2": mlp.dense_4h_to_h.weight}
        views |= {(name, b, None): (param, T_) for name, param in pairs.items()}
        vectors = {"b_O": at.dense.bias, "b_1": mlp.dense_h_to_4h.bias, "b_2": mlp.dense_4h_to_h.bias,
                   "ln1_gain": layer.input_layernorm.weight, "ln1_bias": layer.input_layernorm.bias,
                   "ln2_gain": layer.post_attention_layernorm.weight, "ln2_bias": layer.post_attention_layernorm.bias}
        views |= {(name, b, None): (param, VEC) for name, param in vectors.items() if name in blk.vectors}
    _fill(model, views, case, ("layernorm.weight", "layer_norm.weight"))
    return model, views


def neox_forward(case: Case, model) -> Forward:
    """The forward pass of the HF GPT-NeoX as derive's elements: per block mu, sigma, u, q,
    k, v (from query_key_value, head by head), q~, k~ (HF's apply_rotary_pos_emb), q~.k~, s,
    e^s, sums, a, o, attn, h (sequential residual only), u', hidden, g, m, y; then f, z, e^z,
    p, L."""
    from transformers.models.gpt_neox import modeling_gpt_neox

    nx = model.gpt_neox
    d, H, d_k = case.d_model, case.heads, case.d_k
    modules = {"norm": nx.final_layer_norm}
    for b, layer in enumerate(nx.layers, 1):
        at, mlp = layer.attention, layer.mlp
        modules |= {(b, "ln1"): layer.input_layernorm, (b, "qkv"): at.query_key_value, (b, "attn"): at,
                    (b, "dense"): at.dense, (b, "ln2"): layer.post_attention_layernorm,
                    (b, "fc"): mlp.dense_h_to_4h, (b, "act"): mlp.act, (b, "proj"): mlp.dense_4h_to_h,
                    (b, "layer"): layer}

    def run():
        store, rotations, logits = _hooked_pass(model, case, modules, modeling_gpt_neox)
        out: dict = {}
        norm = _layer_norm(out, store, float(case.conventions.layernorm_eps))

        T = len(case.ids)
        for b, layer in enumerate(nx.layers, 1):
            put(out, "u", norm((b, "ln1"), "ln1", b), block=b)
            qkv = store[(b, "qkv")][1][0].reshape(T, H, 3, d_k)
            for k, name in enumerate("qkv"):
                put(out, name, qkv[:, :, k].reshape(T, d), block=b, head_of=lambda c: c // d_k + 1)
            q_rot, k_rot = rotations[b - 1]
            _scores(out, case, b, q_rot, k_rot, store[(b, "attn")][1][1], store[(b, "dense")][0][0],
                    layer.attention.scaling)
            attn = store[(b, "dense")][1][0]
            put(out, "attn", attn, block=b)
            if not layer.use_parallel_residual:  # parallel: both norms read x, there is no h
                put(out, "h", store[(b, "ln2")][0][0], block=b)
            put(out, "u2", norm((b, "ln2"), "ln2", b), block=b)
            _mlp_and_sum(out, store, b)
        put(out, "f", norm("norm", "final", None))
        return out, _logits(out, case, logits)

    return run


# --------------------------------------------------------------------------- GPT-J

def gptj_model(case: Case):
    """``GPTJForCausalLM`` with ``case``'s weights (float64, eval, eager attention) and the
    views of derive's weights. Call under :func:`float64_everywhere`.

    The case must be GPT-J-shaped: parallel blocks with one shared LayerNorm (``layout =
    "parallel"``, ``shared_norm = true``), interleaved rotary on ``rotary_dim`` = r columns of
    each head with base 10000 (GPT-J's is fixed), gelu_tanh (``gelu_new``), no attention
    biases, MLP biases optional (0), a final LayerNorm, untied W_U (``lm_head``'s bias 0)."""
    from transformers import GPTJConfig, GPTJForCausalLM

    conv = case.conventions
    assert conv.rotary_base == 10000 and conv.rotary_layout == "interleaved"
    config = GPTJConfig(vocab_size=len(case.pieces), n_positions=max(16, len(case.ids)), n_embd=case.d_model,
                        n_layer=len(case.blocks), n_head=case.heads, rotary_dim=int(conv.rotary_fraction * case.d_k),
                        n_inner=case.blocks[0].d_mlp, activation_function="gelu_new",
                        layer_norm_epsilon=float(conv.layernorm_eps), resid_pdrop=0.0, embd_pdrop=0.0,
                        attn_pdrop=0.0, tie_word_embeddings=False, use_cache=False, bos_token_id=None,
                        eos_token_id=None, attn_implementation="eager")
    model = GPTJForCausalLM(config).double().eval()
    tr = model.transformer
    with torch.no_grad():  # the sin/cos table, as GPT-J's own _init_weights writes it, in float64
        from transformers.models.gptj.modeling_gptj import create_sinusoidal_positions
        for layer in tr.h:
            layer.attn.embed_positions.copy_(create_sinusoidal_positions(layer.attn.max_positions,
                                                                         layer.attn.pos_embd_dim))
    views: ParamViews = {("E", None, None): (tr.wte.weight, lambda t: t), ("W_U", None, None): (model.lm_head.weight, T_)}
    for name, param in (("lnf_gain", tr.ln_f.weight), ("lnf_bias", tr.ln_f.bias)):
        if name in case.final_vectors:
            views[(name, None, None)] = (param, VEC)
    for b, (blk, layer) in enumerate(zip(case.blocks, tr.h), 1):
        at, mlp = layer.attn, layer.mlp
        pairs = {"W_Q": at.q_proj.weight, "W_K": at.k_proj.weight, "W_V": at.v_proj.weight, "W_O": at.out_proj.weight,
                 "W_1": mlp.fc_in.weight, "W_2": mlp.fc_out.weight}
        views |= {(name, b, None): (param, T_) for name, param in pairs.items()}
        vectors = {"b_1": mlp.fc_in.bias, "b_2": mlp.fc_out.bias, "ln1_gain": layer.ln_1.weight,
                   "ln1_bias": layer.ln_1.bias}
        views |= {(name, b, None): (param, VEC) for name, param in vectors.items() if name in blk.vectors}
    _fill(model, views, case, ("ln_1.weight", "ln_f.weight"))
    return model, views


def gptj_forward(case: Case, model) -> Forward:
    """The forward pass of the HF GPT-J as derive's elements: per block mu, sigma, u (the
    shared ln_1), q, k, v, q~, k~ (HF's apply_rotary_pos_emb on the first rotary_dim columns,
    the rest passed, as GPT-J concatenates them), q~.k~, s, e^s, sums, a, o, attn, hidden, g,
    m, y = x + attn + m; then f, z, e^z, p, L."""
    from transformers.models.gptj import modeling_gptj

    tr = model.transformer
    T, H, d_k = len(case.ids), case.heads, case.d_k
    modules = {"norm": tr.ln_f}
    for b, layer in enumerate(tr.h, 1):
        at, mlp = layer.attn, layer.mlp
        modules |= {(b, "ln1"): layer.ln_1, (b, "q"): at.q_proj, (b, "k"): at.k_proj, (b, "v"): at.v_proj,
                    (b, "attn"): at, (b, "out"): at.out_proj, (b, "fc"): mlp.fc_in, (b, "act"): mlp.act,
                    (b, "proj"): mlp.fc_out, (b, "layer"): layer}

    def run():
        store, rotations, logits = _hooked_pass(model, case, modules, modeling_gptj)
        out: dict = {}
        norm = _layer_norm(out, store, float(case.conventions.layernorm_eps))

        for b, layer in enumerate(tr.h, 1):
            put(out, "u", norm((b, "ln1"), "ln1", b), block=b)
            for name in "qkv":
                put(out, name, store[(b, name)][1][0], block=b, head_of=lambda c: c // d_k + 1)
            k_turned, q_turned = rotations[2 * b - 2], rotations[2 * b - 1]  # GPT-J turns k, then q
            r = q_turned.shape[-1]
            whole = []
            for turned, name in ((q_turned, "q"), (k_turned, "k")):
                heads = store[(b, name)][1][0].reshape(T, H, d_k)
                whole.append(torch.cat([turned[0], heads[:, :, r:]], dim=-1).transpose(0, 1).unsqueeze(0))
            _scores(out, case, b, whole[0], whole[1], store[(b, "attn")][1][1], store[(b, "out")][0][0],
                    1 / layer.attn.scale_attn)
            put(out, "attn", store[(b, "out")][1][0], block=b)
            _mlp_and_sum(out, store, b)
        put(out, "f", norm("norm", "final", None))
        return out, _logits(out, case, logits)

    return run
