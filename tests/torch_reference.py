"""An independent float64 PyTorch implementation of the model derive computes exactly.

It shares nothing with derive's engine but the loaded :class:`derive.case.Case` (the
weights as Fractions and the conventions): the forward pass is written with
``torch.nn.functional`` (``layer_norm``, ``scaled_dot_product_attention``, ``gelu``,
``relu``, ``softmax``), the gradient comes from autograd, and the SGD step and the pass
after it are plain tensor arithmetic. :func:`run` returns every intermediate as float64
tensors so a test can line them up with derive's JSON records.

Shapes are row vectors (``x @ W``), T tokens, d = d_model, heads of width
d_k = d / heads that read contiguous column slices of Q, K and V.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import torch
import torch.nn.functional as F

from derive.case import BLOCK_VECTORS, Case

DTYPE = torch.float64

ParamKey = tuple[str, int | None]  # (weight name, 1-based block or None for E, P, W_U, lnf_*)


@dataclass
class Forward:
    """Every intermediate of one forward pass, as float64 tensors (detached).

    Attributes:
        x: T x d, E[ids] + P[:T].
        norms: (norm, block) -> {"mu": T, "sigma": T, "out": T x d}; norm is ln1, ln2 or
            final (block None for final).
        blocks: block (1-based) -> {"q", "k", "v", "attn", "h", "u", "u2", "m", "y": T x d,
            "hidden", "g": T x d_mlp}.
        heads: (block, head) -> {"qk", "s", "exp_s", "a": T x T (query row, key column;
            masked entries are -inf for s and 0 for exp_s and a), "sum_exp_s": T,
            "o": T x d_k (from scaled_dot_product_attention), "o_manual": a @ v}.
        f: the rows W_U reads (after the final LayerNorm when there is one), T x d.
        z (the logits, f W_U), exp_z (e^(z/T)), p: V (last row only); sum_exp_z and L: 0-d tensors
            (L None without a target).
    """

    x: torch.Tensor
    norms: dict = field(default_factory=dict)
    blocks: dict = field(default_factory=dict)
    heads: dict = field(default_factory=dict)
    f: torch.Tensor | None = None
    z: torch.Tensor | None = None
    exp_z: torch.Tensor | None = None
    sum_exp_z: torch.Tensor | None = None
    p: torch.Tensor | None = None
    L: torch.Tensor | None = None


@dataclass
class Reference:
    """The whole computation: the pass before, dL/dtheta, theta after one SGD step, the pass
    after. ``params``, ``grads`` and ``updated`` are keyed by (name, block); vectors (biases,
    gains) are 1 x n so that every weight is addressed as (row, column)."""

    before: Forward
    params: dict[ParamKey, torch.Tensor]
    grads: dict[ParamKey, torch.Tensor]
    updated: dict[ParamKey, torch.Tensor]
    after: Forward | None


def tensor(values) -> torch.Tensor:
    """A float64 tensor from (nested lists of) Fractions; each converts to the nearest double."""
    if isinstance(values, Fraction):
        return torch.tensor(float(values), dtype=DTYPE)
    return torch.tensor([[float(v) for v in row] for row in values] if values and isinstance(values[0], list)
                        else [float(v) for v in values], dtype=DTYPE)


def case_params(case: Case) -> dict[ParamKey, torch.Tensor]:
    """Every trainable weight of ``case`` as a float64 leaf tensor (vectors as 1 x n).

    W_U is absent when it is tied to E^T (the forward pass then reads E)."""
    params: dict[ParamKey, torch.Tensor] = {("E", None): tensor(case.E), ("P", None): tensor(case.P)}
    if case.W_U is not None:
        params[("W_U", None)] = tensor(case.W_U)
    for name in ("lnf_gain", "lnf_bias"):
        if name in case.final_vectors:
            params[(name, None)] = tensor(case.final_vectors[name]).unsqueeze(0)
    for b, block in enumerate(case.blocks, 1):
        for name, matrix in block.matrices.items():
            params[(name, b)] = tensor(matrix)
        for name in BLOCK_VECTORS:
            if name in block.vectors:
                params[(name, b)] = tensor(block.vectors[name]).unsqueeze(0)
    return params


def _vec(params: dict, name: str, block: int | None) -> torch.Tensor | None:
    """A bias or gain as a 1-d tensor, or None when the case has none."""
    t = params.get((name, block))
    return None if t is None else t[0]


def _layer_norm(x: torch.Tensor, eps: float, gain, bias, norms: dict, key) -> torch.Tensor:
    """F.layer_norm over the last dimension; records mu and sigma = sqrt(var + eps) too."""
    out = F.layer_norm(x, (x.shape[-1],), weight=gain, bias=bias, eps=eps)
    mu = x.mean(dim=-1)
    sigma = torch.sqrt(x.var(dim=-1, unbiased=False) + eps)
    norms[key] = {"mu": mu.detach(), "sigma": sigma.detach(), "out": out.detach()}
    return out


def _linear(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    """``x @ W + b`` (row vectors)."""
    return x @ W if b is None else x @ W + b


# Convention switches this reference implements only at their defaults; a case that sets
# another value is refused rather than compared against the wrong model.
DEFAULT_ONLY = {"layernorm_variance": "n", "layernorm_eps_placement": "inside", "score_scale": "d_k",
                "loss_log": "e"}


def check_supported(case: Case) -> None:
    """Raise NotImplementedError when ``case`` uses something this reference does not model:
    a mask other than causal / none, a convention of DEFAULT_ONLY off its default, positions
    other than a learned table P, a given X, temperature 0 (greedy decoding), heads given one by one,
    a block without both sublayers or without its LayerNorms, another layout than pre-norm, or a
    sublayer without its residual sum."""
    conv = case.conventions
    if conv.mask not in ("causal", "none"):
        raise NotImplementedError(f"mask = {conv.mask!r}")
    for name, default in DEFAULT_ONLY.items():
        if getattr(conv, name, default) != default:
            raise NotImplementedError(f"{name} = {getattr(conv, name)!r}")
    if getattr(conv, "positions", "learned") != "learned" or getattr(case, "X", None) is not None:
        raise NotImplementedError("positions other than a learned table, or a given X")
    if conv.temperature == 0:
        raise NotImplementedError("temperature 0 (greedy decoding)")
    for block in case.blocks:
        if (getattr(block, "heads", None) is not None or getattr(block, "layernorm", True) is not True
                or tuple(getattr(block, "sublayers", ("attention", "mlp"))) != ("attention", "mlp")
                or block.options.get("layout", "pre_norm") != "pre_norm"
                or set(block.residual) != set(block.sublayers)):
            raise NotImplementedError("a block with per-head weights, one sublayer, no LayerNorm, another "
                                      "layout than pre-norm or a sublayer without its residual")


def forward(case: Case, params: dict[ParamKey, torch.Tensor]) -> Forward:
    """One forward pass of ``case`` with the weights ``params`` (see :class:`Forward`).

    The returned tensors are detached copies; the loss ``L`` keeps its graph (when the
    params require grad) so the caller can differentiate it.
    """
    conv = case.conventions
    eps = float(conv.layernorm_eps)
    ids = torch.tensor(case.ids, dtype=torch.long)
    T, d, n_heads, d_k = len(case.ids), case.d_model, case.heads, case.d_k
    E = params[("E", None)]
    x = E[ids] + params[("P", None)][:T]
    out = Forward(x=x.detach())
    causal = conv.mask == "causal"
    act = {"gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "gelu_erf": F.gelu,
           "relu": F.relu, "silu": F.silu}[conv.activation]
    stream = x
    for b in range(1, len(case.blocks) + 1):
        rec: dict = {}
        u = _layer_norm(stream, eps, _vec(params, "ln1_gain", b), _vec(params, "ln1_bias", b),
                        out.norms, ("ln1", b))
        q = _linear(u, params[("W_Q", b)], _vec(params, "b_Q", b))
        k = _linear(u, params[("W_K", b)], _vec(params, "b_K", b))
        v = _linear(u, params[("W_V", b)], _vec(params, "b_V", b))
        # (T, d) -> (heads, T, d_k): head h reads columns h*d_k .. (h+1)*d_k - 1
        qh, kh, vh = (t.reshape(T, n_heads, d_k).transpose(0, 1) for t in (q, k, v))
        o = F.scaled_dot_product_attention(qh, kh, vh, is_causal=causal)  # (heads, T, d_k)
        with torch.no_grad():
            qk = qh @ kh.transpose(-1, -2)
            s = qk / math.sqrt(d_k)
            if causal:
                hidden_mask = torch.ones(T, T, dtype=torch.bool).triu(1)
                s = s.masked_fill(hidden_mask, float("-inf"))
            exp_s = torch.exp(s)
            a = torch.softmax(s, dim=-1)
            o_manual = a @ vh
        for h in range(n_heads):
            out.heads[(b, h + 1)] = {"qk": qk[h], "s": s[h], "exp_s": exp_s[h], "a": a[h],
                                     "sum_exp_s": exp_s[h].sum(dim=-1), "o": o[h].detach(),
                                     "o_manual": o_manual[h]}
        joined = o.transpose(0, 1).reshape(T, d)
        attn = _linear(joined, params[("W_O", b)], _vec(params, "b_O", b))
        hres = stream + attn
        u2 = _layer_norm(hres, eps, _vec(params, "ln2_gain", b), _vec(params, "ln2_bias", b),
                         out.norms, ("ln2", b))
        hidden = _linear(u2, params[("W_1", b)], _vec(params, "b_1", b))
        g = act(hidden)
        m = _linear(g, params[("W_2", b)], _vec(params, "b_2", b))
        y = hres + m
        for name, t in (("u", u), ("q", q), ("k", k), ("v", v), ("attn", attn), ("h", hres),
                        ("u2", u2), ("hidden", hidden), ("g", g), ("m", m), ("y", y)):
            rec[name] = t.detach()
        out.blocks[b] = rec
        stream = y
    if conv.final_layernorm:
        f = _layer_norm(stream, eps, _vec(params, "lnf_gain", None), _vec(params, "lnf_bias", None),
                        out.norms, ("final", None))
    else:
        f = stream
    W_U = E.T if case.W_U is None else params[("W_U", None)]
    z = f[-1] @ W_U  # the logits; the softmax reads z / T
    scaled = z / float(conv.temperature)
    p = torch.softmax(scaled, dim=-1)
    out.f, out.z, out.p = f.detach(), z.detach(), p.detach()
    out.exp_z = torch.exp(scaled).detach()
    out.sum_exp_z = out.exp_z.sum()
    if case.target is not None:
        out.L = -torch.log_softmax(scaled, dim=-1)[case.target]
    return out


def run(case: Case) -> Reference:
    """Forward pass, dL/dtheta by autograd, one SGD step on the weights named in
    ``conventions.trained`` (None: all), and the forward pass with the updated weights."""
    check_supported(case)
    params = {key: t.clone().requires_grad_(True) for key, t in case_params(case).items()}
    before = forward(case, params)
    if before.L is None:
        return Reference(before, {k: t.detach() for k, t in params.items()}, {}, {}, None)
    keys = list(params)
    grads = torch.autograd.grad(before.L, [params[k] for k in keys], allow_unused=True)
    grads = {k: (torch.zeros_like(params[k]) if g is None else g.detach()) for k, g in zip(keys, grads)}
    before.L = before.L.detach()
    lr = float(case.conventions.learning_rate)
    trained = case.conventions.trained
    fixed = {k: t.detach() for k, t in params.items()}
    updated = {k: (t - lr * grads[k] if trained is None or k[0] in trained else t.clone())
               for k, t in fixed.items()}
    with torch.no_grad():
        after = forward(case, updated)
    return Reference(before, fixed, grads, updated, after)
