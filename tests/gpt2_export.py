"""Derive cases as float64 PyTorch models, for the cross-checks of tests/test_gpt2_crosscheck.py.

Two models are built from a loaded :class:`derive.case.Case` (its exact weights converted to
the nearest doubles; the cases used here have dyadic weights, so the conversion is exact):

* :func:`gpt2_model`: Hugging Face ``transformers``' ``GPT2LMHeadModel`` from a local
  ``GPT2Config`` (nothing is downloaded): ``n_embd`` = d_model, ``n_head`` = heads,
  ``n_layer`` = blocks, ``n_inner`` = d_mlp, ``n_positions`` = the context length (P is
  padded with zero rows), ``gelu_new``, the case's eps, no dropout, ``model.double()``,
  eval mode. GPT-2's ``Conv1D`` weights are (in, out), like derive's row vectors ``x @ W``;
  ``c_attn`` packs W_Q | W_K | W_V and b_Q | b_K | b_V; a bias or LayerNorm gain the case
  does not have is 0 or 1 (and is not compared); ``lm_head`` is tied to ``wte`` for a tied
  W_U and untied (``tie_word_embeddings = False``, ``lm_head.weight = W_U^T``) otherwise.
  The intermediates are read with forward hooks on HF's own modules.
* :class:`PartsModel`: small ``nn.Module`` parts written here with ``torch.nn.functional``
  for everything a case can say that GPT-2 cannot (ReLU and erf GELU, sinusoidal
  positions, rotary positions (:func:`rotary`, from RoFormer's eq. 34), no mask, biases off, temperature, blocks with one sublayer or no LayerNorm,
  given X, heads given one by one with their own widths, and the reader's-slip
  conventions), independent of derive's rules.

Both are driven the same way by :func:`reference_elements`: the forward pass, dL/dtheta by
autograd, one SGD step on the trained weights, the forward pass again. The result is keyed
exactly as derive's JSON records name a quantity, ``(symbol, block, head, position, index,
norm, param, after_step)`` (see ``record_key`` in tests/test_torch_crosscheck.py), so
:func:`compare` can match the two one to one.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from derive.case import Case
from derive.derivation import UNDECIDED, VALUE_FORMAT, Derivation
from derive.graph import is_exact

from test_torch_crosscheck import TOL, close, record_key
from torch_reference import tensor

DTYPE = torch.float64
AFTER_SYMBOLS = ("z", "exp_z", "exp_z_over_T", "p", "L")
ParamKey = tuple  # (name, block, head): derive's param name, 1-based block or None, head or None
# a derive weight inside a torch tensor: the tensor, and the view of it shaped as derive's
# matrix (rows x columns; a vector is 1 x n). The view works on the weight and on its gradient.
ParamViews = dict[ParamKey, tuple[torch.Tensor, Callable[[torch.Tensor], torch.Tensor]]]
Forward = Callable[[], tuple[dict, torch.Tensor | None]]


# --------------------------------------------------------------------------- keys and records

def put(out: dict, symbol: str, t: torch.Tensor, *, block=None, head=None, norm=None,
        head_of: Callable[[int], int] | None = None, skip: Callable[[int, int], bool] | None = None) -> None:
    """Add the elements of ``t`` under derive's keys: a 2-d tensor is rows (position, 1-based)
    by columns (index, 1-based), a 1-d tensor one value per position (index None).
    ``head_of(c)`` gives the head of column c (0-based) when it varies by column; ``skip(i, j)``
    leaves an element out."""
    values = t.detach().tolist()
    if t.dim() == 1:
        for i, value in enumerate(values):
            out[(symbol, block, head, i + 1, None, norm, None, False)] = value
        return
    for i, row in enumerate(values):
        for j, value in enumerate(row):
            if skip is None or not skip(i, j):
                h = head_of(j) if head_of is not None else head
                out[(symbol, block, h, i + 1, j + 1, norm, None, False)] = value


def put_outputs(out: dict, case: Case, z: torch.Tensor, p: torch.Tensor, L: torch.Tensor | None,
                greedy: bool = False, position: int | None = None, temperature: float = 1.0) -> None:
    """The logits z (undivided), e^z (e^(z/T) under a temperature T other than 1), their
    sum, p and L of the last row (or of row ``position``, 1-based, without L), keyed as
    derive names them (the index of z, e^z and p is the token piece)."""
    last = position or len(case.tokens)
    z, p = z.detach(), p.detach()
    exp = "exp_z" if temperature == 1 else "exp_z_over_T"
    names = [("z", z), ("p", p)] + ([] if greedy else [(exp, torch.exp(z / temperature))])
    for name, t in names:
        for c, piece in enumerate(case.pieces):
            out[(name, None, None, last, piece, None, None, False)] = float(t[c])
    if not greedy:
        out[("sum_" + exp, None, None, last, None, None, None, False)] = float(torch.exp(z / temperature).sum())
    if L is not None and case.conventions.loss == "mean":
        out[("L", None, None, None, None, None, None, False)] = float(L.detach())
    elif L is not None:
        out[("L", None, None, last, case.pieces[case.target], None, None, False)] = float(L.detach())


def lm_labels(case: Case) -> list[int]:
    """The token ids of Hugging Face's language-model loss for ``loss = "mean"``: the
    prompt, and the target after it when the case gives one (``labels = input_ids``: the
    logits of row t are scored against token t + 1; a target appended as token T + 1 makes
    row T predict it, and the causal mask keeps rows 1..T as they are without it)."""
    return list(case.ids) + ([case.target] if case.target is not None else [])


def put_row_losses(out: dict, case: Case, logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """z, e^z, p of rows 1..T-1 and l_t = cross-entropy of row t against token t + 1 (row
    T against the target), from ``logits`` (rows x V, undivided, for the ids of
    :func:`lm_labels`); returns their mean, torch's own ``F.cross_entropy`` (in bits with
    ``loss_log = "2"``)."""
    labels = torch.tensor(lm_labels(case), dtype=torch.long)
    z = logits[:len(labels) - 1] / temperature
    for t in range(min(len(case.ids), len(labels)) - 1):
        put_outputs(out, case, logits[t], torch.softmax(z[t], dim=-1), None, position=t + 1, temperature=temperature)
    ell = F.cross_entropy(z, labels[1:], reduction="none")
    L = F.cross_entropy(z, labels[1:])
    if case.conventions.loss_log == "2":
        ell, L = ell / math.log(2), L / math.log(2)
    put(out, "ell", ell)
    return L


def derive_records(derivation: Derivation, exported: bool = True) -> list[tuple[dict, object]]:
    """derive's records with the fields ``record_key`` reads and ``value`` (30 significant
    digits, certified; None unless ``exported``), each with its Ref. The same fields as
    ``derive.export_json.records`` (symbol, block, head, position, index, norm, param,
    after_step, value, label) without the 3-place ``decimal`` and the ``exact`` text, which
    cost most of the export's time."""
    refs = derivation.quantities()
    values = derivation.decimals(refs, VALUE_FORMAT) if exported else dict.fromkeys(refs)
    out = []
    for ref in refs:
        meta = derivation.meta(ref)
        phased = ref.phase in ("grad", "updated")
        out.append(({"symbol": ref.phase if phased else meta.symbol, "label": meta.label, "block": meta.block,
                     "head": meta.head, "position": meta.position, "index": meta.index, "norm": meta.norm,
                     "param": meta.param if phased else None, "after_step": ref.phase == "after",
                     "value": values[ref]}, ref))
    return out


def compare(derivation: Derivation, expected: dict, symbols: set[str] | None = None, where: str = "",
            exported: bool = True) -> dict:
    """Match derive's records with ``expected`` (torch values by key) one to one and compare
    each pair within 1e-9 (``close``: absolute, or relative above 1).

    Two-sided: every record must name an expected element, no two records the same one, and
    every expected element must be named by a record. With ``symbols``, only records and
    elements of those symbols take part. The exported ``value`` (30 digits, correctly
    rounded) is compared; a record whose value is ``undecided`` (an exact 0 reached through
    irrational intermediates), and every record when ``exported`` is False (a large case,
    whose tens of thousands of 30-digit roundings would cost most of a minute), is compared
    through its certified ball, whose radius must itself be below the tolerance (relative
    above 1, as ``close``: e^z after the step can be 1e16 with a radius of 40). Returns
    counts: records compared, undecided, and records by symbol. Raises AssertionError naming
    the first disagreements."""
    recs = [(r, ref) for r, ref in derive_records(derivation, exported) if symbols is None or r["symbol"] in symbols]
    if symbols is not None:
        expected = {k: v for k, v in expected.items() if k[0] in symbols}
    keys = [record_key(r) for r, _ in recs]
    duplicates = [k for k, n in Counter(keys).items() if n > 1]
    assert not duplicates, f"{where}: records naming the same element: {duplicates[:5]}"
    unmatched = [k for k in keys if k not in expected]
    assert not unmatched, f"{where}: records with no torch element: {unmatched[:5]}"
    missing = sorted(set(expected) - set(keys), key=str)
    assert not missing, f"{where}: torch elements derive does not export: {missing[:5]}"
    failures, undecided = [], 0
    for (r, ref), key in zip(recs, keys):
        want = expected[key]
        if r["value"] in (UNDECIDED, None):
            undecided += r["value"] == UNDECIDED
            ball = derivation.value(ref)
            if is_exact(ball):
                mid, rad = float(ball), 0.0
            else:
                mid, rad = float(ball.mid()), float(ball.rad())
            if rad > TOL * max(1.0, abs(mid)) or not close(mid, want, rad):  # as close(): relative above 1
                failures.append(f"{r['label']} {key}: derive ball {ball} vs torch {want!r}")
        elif not (math.isfinite(want) and close(float(r["value"]), want)):
            failures.append(f"{r['label']} {key}: derive {r['value']} vs torch {want!r} "
                            f"(diff {float(r['value']) - want:.3g})")
    assert not failures, f"{where}: {len(failures)} of {len(recs)} disagree:\n" + "\n".join(failures[:20])
    return {"records": len(recs), "undecided": undecided, "symbols": Counter(k[0] for k in keys)}


# --------------------------------------------------------------------------- the driver

def reference_elements(case: Case, forward: Forward, params: ParamViews) -> dict:
    """Every quantity derive exports, from a torch model: ``forward()`` (the pass with the
    model's current weights: elements by key, and L or None), dL/dtheta for each derive
    weight in ``params`` by autograd, theta after one SGD step on the weights named in
    ``conventions.trained`` (all when None), and z, e^z, p, L of the pass after the step.
    The step is applied to the model's tensors in place."""
    elements, L = forward()
    if L is None:
        return elements
    tensors = list({id(t): t for t, _ in params.values()}.values())
    grads = torch.autograd.grad(L, tensors, allow_unused=True)
    grad_of = {id(t): torch.zeros_like(t) if g is None else g for t, g in zip(tensors, grads)}
    lr = float(case.conventions.learning_rate)
    trained = case.conventions.trained
    with torch.no_grad():
        steps = []
        for (name, block, head), (t, view) in params.items():
            w, g = view(t).clone(), view(grad_of[id(t)])
            moves = trained is None or name in trained
            new = w - lr * g if moves else w
            for phase, values in (("grad", g), ("updated", new)):
                for i, row in enumerate(values.tolist()):
                    for j, value in enumerate(row):
                        elements[(phase, block, head, i + 1, j + 1, None, name, False)] = value
            if moves:
                steps.append((view(t), new))
        for target, new in steps:  # derive's weights are disjoint parts of the tensors
            target.copy_(new)
        after, _ = forward()
    for key, value in after.items():
        if key[0] in AFTER_SYMBOLS:
            elements[key[:7] + (True,)] = value
    if case.logits is not None:  # given logits are indexed by their piece, as z is
        elements = {k[:4] + (case.pieces[k[4] - 1],) + k[5:] if k[6] == "z" else k: v for k, v in elements.items()}
    return elements


# --------------------------------------------------------------------------- Hugging Face GPT-2

def d_mlp_of(case: Case) -> int | None:
    """The MLP width of the case's first block with an MLP (GPT-2 has one n_inner for all)."""
    return next((b.d_mlp for b in case.blocks if "mlp" in b.sublayers), None)


def gpt2_unsupported(case: Case) -> list[str]:
    """What in ``case`` GPT-2 cannot express (empty when the case is GPT-2-shaped)."""
    conv = case.conventions
    reasons = []
    defaults = {"activation": "gelu_tanh", "mask": "causal", "layernorm_variance": "n",
                "layernorm_eps_placement": "inside", "score_scale": "d_k", "loss_log": "e",
                "positions": "learned", "final_layernorm": True}
    reasons += [f"{name} = {getattr(conv, name)!r}" for name, value in defaults.items() if getattr(conv, name) != value]
    if conv.temperature != 1:
        reasons.append(f"temperature = {conv.temperature} (GPT-2's logits are not divided)")
    if case.X is not None:
        reasons.append("a given X (GPT-2 starts from token ids)")
    for b, block in enumerate(case.blocks, 1):
        if block.heads is not None:
            reasons.append(f"block {b}: heads given one by one")
        if tuple(block.sublayers) != ("attention", "mlp"):
            reasons.append(f"block {b}: sublayers {list(block.sublayers)}")
        if not block.layernorm:
            reasons.append(f"block {b}: no LayerNorm")
        if block.options.get("layout", "pre_norm") != "pre_norm":
            reasons.append(f"block {b}: layout {block.options['layout']}")
        if set(block.residual) != set(block.sublayers):
            reasons.append(f"block {b}: residual {list(block.residual)}")
        if "mlp" in block.sublayers and block.d_mlp != d_mlp_of(case):
            reasons.append(f"block {b}: d_mlp {block.d_mlp} differs from {d_mlp_of(case)}")
    return reasons


def gpt2_model(case: Case, attn_implementation: str = "eager"):
    """``GPT2LMHeadModel`` holding ``case``'s weights in float64, in eval mode, and the views
    of derive's weights in its parameters (see the module docstring).

    Raises:
        ValueError: the case is not GPT-2-shaped (:func:`gpt2_unsupported` says why).
    """
    from transformers import GPT2Config, GPT2LMHeadModel

    reasons = gpt2_unsupported(case)
    if reasons:
        raise ValueError("not expressible as GPT-2: " + "; ".join(reasons))
    d, T = case.d_model, len(case.ids)
    tied = case.W_U is None
    n_positions = max(getattr(case, "context_length", None) or 0, len(case.P), T + 1)  # + 1: lm_labels
    config = GPT2Config(vocab_size=len(case.pieces), n_positions=n_positions, n_embd=d,
                        n_layer=len(case.blocks), n_head=case.heads, n_inner=d_mlp_of(case),
                        activation_function="gelu_new", layer_norm_epsilon=float(case.conventions.layernorm_eps),
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, scale_attn_weights=True,
                        scale_attn_by_inverse_layer_idx=False, reorder_and_upcast_attn=False,
                        tie_word_embeddings=tied, bos_token_id=None, eos_token_id=None, use_cache=False,
                        attn_implementation=attn_implementation)
    model = GPT2LMHeadModel(config).double().eval()
    assert (model.lm_head.weight is model.transformer.wte.weight) == tied
    with torch.no_grad():
        for name, p in model.named_parameters():  # the defaults of what a case leaves out
            p.fill_(1.0 if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")) else 0.0)
    views: ParamViews = {}
    tr = model.transformer
    rows = lambda t: t  # noqa: E731  (a matrix stored as derive stores it)
    vec = lambda t: t.unsqueeze(0)  # noqa: E731
    views[("E", None, None)] = (tr.wte.weight, rows)
    views[("P", None, None)] = (tr.wpe.weight, lambda t, n=len(case.P): t[:n])
    if not tied:
        views[("W_U", None, None)] = (model.lm_head.weight, lambda t: t.T)
    for name, param in (("lnf_gain", tr.ln_f.weight), ("lnf_bias", tr.ln_f.bias)):
        if name in case.final_vectors:
            views[(name, None, None)] = (param, vec)
    for b, block in enumerate(case.blocks, 1):
        hf = tr.h[b - 1]
        for k, name in enumerate("QKV"):
            cols = slice(k * d, (k + 1) * d)
            views[(f"W_{name}", b, None)] = (hf.attn.c_attn.weight, lambda t, c=cols: t[:, c])
            if f"b_{name}" in block.vectors:
                views[(f"b_{name}", b, None)] = (hf.attn.c_attn.bias, lambda t, c=cols: t[c].unsqueeze(0))
        pairs = {"W_O": hf.attn.c_proj.weight, "W_1": hf.mlp.c_fc.weight, "W_2": hf.mlp.c_proj.weight,
                 "b_O": hf.attn.c_proj.bias, "b_1": hf.mlp.c_fc.bias, "b_2": hf.mlp.c_proj.bias,
                 "ln1_gain": hf.ln_1.weight, "ln1_bias": hf.ln_1.bias,
                 "ln2_gain": hf.ln_2.weight, "ln2_bias": hf.ln_2.bias}
        for name, param in pairs.items():
            if name.startswith("W_"):
                views[(name, b, None)] = (param, rows)
            elif name in block.vectors:
                views[(name, b, None)] = (param, vec)
    with torch.no_grad():
        for (name, b, _), (param, view) in views.items():
            source = case.E if name == "E" else case.P if name == "P" else case.W_U if name == "W_U" else \
                case.final_vectors.get(name) if b is None else \
                case.blocks[b - 1].matrices.get(name) or case.blocks[b - 1].vectors.get(name)
            value = tensor(source)
            view(param).copy_(value if value.dim() == 2 else value.unsqueeze(0))
    return model, views


def gpt2_forward(case: Case, model) -> Forward:
    """The forward pass of the HF model as derive's elements: x (the embedding sum), per
    block u, q, k, v, a (HF's attention weights, eager only), o (the joined heads c_proj
    reads), attn, h, u2, hidden, g, m, y, then f, z, e^z, p and L = -ln p(target) from HF's
    logits of the last position (HF's own loss shifts the labels and is not used).

    mu and sigma are computed with torch from the rows HF's LayerNorms read, and q.k, s,
    e^s and their sums from HF's q and k with HF's ``attn.scaling``; masked scores are left
    out (HF masks with the most negative double instead of -inf, which gives the same zero
    weights)."""
    tr = model.transformer
    store: dict = {}

    def keep(name):
        """A forward hook that stores (the module's first input, its output) under ``name``."""
        return lambda module, args, output: store.__setitem__(name, (args[0] if args else None, output))

    modules = {"embed": tr.drop, "ln_f": tr.ln_f}
    for b, hf in enumerate(tr.h, 1):
        modules |= {(b, "ln_1"): hf.ln_1, (b, "c_attn"): hf.attn.c_attn, (b, "attn"): hf.attn,
                    (b, "c_proj"): hf.attn.c_proj, (b, "ln_2"): hf.ln_2, (b, "c_fc"): hf.mlp.c_fc,
                    (b, "act"): hf.mlp.act, (b, "mlp_proj"): hf.mlp.c_proj, (b, "block"): hf}

    def run() -> tuple[dict, torch.Tensor | None]:
        """One pass of the model with the hooks on: (elements, L)."""
        handles = [m.register_forward_hook(keep(name)) for name, m in modules.items()]
        try:
            logits = model(torch.tensor([case.ids], dtype=torch.long)).logits
        finally:
            for handle in handles:
                handle.remove()
        out: dict = {}
        T, d, H, d_k = len(case.ids), case.d_model, case.heads, case.d_k
        put(out, "x", store["embed"][1][0])

        def norm(key, name, block):
            """Record mu and sigma of the rows LayerNorm ``key`` read; return its output."""
            x_in, y_out = store[key]
            x_in = x_in[0]
            module = tr.ln_f if key == "ln_f" else getattr(tr.h[block - 1], key[1])
            put(out, "mu", x_in.mean(-1), block=block, norm=name)
            put(out, "sigma", torch.sqrt(x_in.var(-1, unbiased=False) + module.eps), block=block, norm=name)
            return y_out[0]

        causal = torch.ones(T, T, dtype=torch.bool).triu(1)
        for b, hf in enumerate(tr.h, 1):
            put(out, "u", norm((b, "ln_1"), "ln1", b), block=b)
            qkv = store[(b, "c_attn")][1][0]
            for k, name in enumerate("qkv"):
                put(out, name, qkv[:, k * d:(k + 1) * d], block=b, head_of=lambda c: c // d_k + 1)
            q, k_ = (qkv[:, i * d:(i + 1) * d].reshape(T, H, d_k).transpose(0, 1) for i in (0, 1))
            qk = q @ k_.transpose(-1, -2)
            s = qk * hf.attn.scaling
            exp_s = torch.exp(s).masked_fill(causal, 0.0)
            weights = store[(b, "attn")][1][1]
            joined = store[(b, "c_proj")][0][0]
            for h in range(H):
                hidden = lambda i, j: j > i  # noqa: E731
                put(out, "qk", qk[h], block=b, head=h + 1, skip=hidden)
                put(out, "s", s[h], block=b, head=h + 1, skip=hidden)
                put(out, "exp_s", exp_s[h], block=b, head=h + 1, skip=hidden)
                put(out, "sum_exp_s", exp_s[h].sum(-1), block=b, head=h + 1)
                if weights is not None:
                    put(out, "a", weights[0, h], block=b, head=h + 1)
                put(out, "o", joined[:, h * d_k:(h + 1) * d_k], block=b, head=h + 1)
            put(out, "attn", store[(b, "c_proj")][1][0], block=b)
            put(out, "h", store[(b, "ln_2")][0][0], block=b)
            put(out, "u2", norm((b, "ln_2"), "ln2", b), block=b)
            put(out, "hidden", store[(b, "c_fc")][1][0], block=b)
            put(out, "g", store[(b, "act")][1][0], block=b)
            put(out, "m", store[(b, "mlp_proj")][1][0], block=b)
            y = store[(b, "block")][1]
            put(out, "y", (y[0] if isinstance(y, tuple) else y)[0], block=b)
        put(out, "f", norm("ln_f", "final", None))
        z = logits[0, -1]
        L = -torch.log_softmax(z, dim=-1)[case.target] if case.target is not None else None
        if case.conventions.loss == "mean":  # HF's loss for labels = input_ids (and the target after)
            ids = torch.tensor([lm_labels(case)], dtype=torch.long)
            result = model(ids, labels=ids)
            L = put_row_losses(out, case, result.logits[0])
            # HF's ForCausalLMLoss upcasts the logits with .float() (float32), so its loss is
            # the float64 one above to float32's precision: the convention (shift, mean) is HF's
            assert abs(float(result.loss) - float(L)) <= 1e-6 * max(1.0, float(L)), (float(result.loss), float(L))
        put_outputs(out, case, z, torch.softmax(z, dim=-1), L)  # (GPT-2 has no temperature and no given logits)
        return out, L

    return run


# --------------------------------------------------------------------------- the parts GPT-2 lacks

def sinusoid_table(T: int, d: int, base: float, first: int, layout: str) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos w_i), PE[pos, 2i+1] = cos(pos w_i), w_i = base^(-2i/d), for
    pos = first .. first + T - 1 (Vaswani et al. 2017, 3.5); ``concatenated`` puts all the
    sines first, then all the cosines."""
    pos = torch.arange(first, first + T, dtype=DTYPE)[:, None]
    i = torch.arange(d // 2, dtype=DTYPE)
    angle = pos * torch.pow(torch.tensor(base, dtype=DTYPE), -2 * i / d)
    if layout == "interleaved":
        return torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1).reshape(T, d)
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)


def rotary(x: torch.Tensor, base: float, r: int, layout: str) -> torch.Tensor:
    """RoFormer's R_{Theta,pos} x (Su et al. 2021, eq. 34) for rows x (T x d) at pos = 0 ..
    T - 1: pair i (columns (i, i + r/2) for ``rotate_half``, (2i, 2i + 1) for ``interleaved``)
    turned by pos theta_i, theta_i = base^(-2i/r); the columns past r are unchanged."""
    pos = torch.arange(x.shape[0], dtype=DTYPE)[:, None]
    angle = pos * torch.tensor(base, dtype=DTYPE) ** (-2 * torch.arange(r // 2, dtype=DTYPE) / r)
    cos, sin = torch.cos(angle), torch.sin(angle)
    a, b = (x[:, 0:r:2], x[:, 1:r:2]) if layout == "interleaved" else (x[:, :r // 2], x[:, r // 2:r])
    a2, b2 = a * cos - b * sin, b * cos + a * sin
    turned = torch.stack([a2, b2], dim=-1).reshape(x.shape[0], r) if layout == "interleaved" else torch.cat([a2, b2], -1)
    return torch.cat([turned, x[:, r:]], dim=-1)


def _parameter(values) -> nn.Parameter | None:
    return None if values is None else nn.Parameter(tensor(values))


class Norm(nn.Module):
    """LayerNorm of each row: F.layer_norm under the default conventions (variance over d,
    eps inside the root); written out for the variance over d - 1 or eps added to sigma.
    Records mu and sigma."""

    def __init__(self, case: Case, gain, bias):
        """``gain``/``bias``: the case's vectors or None (gain 1, bias 0)."""
        super().__init__()
        conv = case.conventions
        self.eps = float(conv.layernorm_eps)
        self.unbiased = conv.layernorm_variance == "n-1"
        self.inside = conv.layernorm_eps_placement == "inside"
        self.gain, self.bias = _parameter(gain), _parameter(bias)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(output, mu, sigma) of the rows of ``x`` (T x d)."""
        mu = x.mean(-1)
        var = x.var(-1, unbiased=self.unbiased)
        sigma = torch.sqrt(var + self.eps) if self.inside else torch.sqrt(var) + self.eps
        if self.inside and not self.unbiased:
            out = F.layer_norm(x, (x.shape[-1],), self.gain, self.bias, self.eps)
        else:
            out = (x - mu[:, None]) / sigma[:, None]
            out = out * (self.gain if self.gain is not None else 1) + (self.bias if self.bias is not None else 0)
        return out, mu, sigma


class Head(nn.Module):
    """One head's own W_Q, W_K (d x d_k), W_V (d x d_v) and optional biases."""

    def __init__(self, given: dict):
        """``given``: a head of ``Block.heads``."""
        super().__init__()
        for name in ("W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V"):
            setattr(self, name, _parameter(given.get(name)))

    def project(self, u: torch.Tensor, name: str) -> torch.Tensor:
        """u W_name + b_name."""
        b = getattr(self, f"b_{name}")
        return u @ getattr(self, f"W_{name}") + (b if b is not None else 0)


class Attention(nn.Module):
    """Multi-head self-attention with the case's mask and score scale. The heads either cut
    full W_Q, W_K, W_V into column groups of d_k or are given one by one; o comes from
    F.scaled_dot_product_attention (causal / no mask) and is checked against a @ v."""

    def __init__(self, case: Case, block):
        """``block``: a :class:`derive.case.Block` with attention."""
        super().__init__()
        conv = case.conventions
        self.mask, self.d_model, self.d_k, self.n_heads = conv.mask, case.d_model, case.d_k, case.heads
        self.score_scale = conv.score_scale  # d_k, d_model, none or a number n (q.k / sqrt(n))
        self.given = block.heads is not None
        self.qkv = None if case.qkv is None else {n: tensor(m) for n, m in case.qkv.items()}  # Q, K, V given
        self.projections = block.options.get("projections", True)  # false: q = k = v = u, no W_O
        kv = block.options.get("kv_heads", "heads")  # key/value heads shared by groups of query heads
        self.group = 1 if kv == "heads" else case.heads // int(kv)
        weights = block.matrices.get("attention_weights")  # the weights a given, not a softmax
        self.weights = None if weights is None else torch.tensor([[float(w) for w in r] for r in weights],
                                                                 dtype=torch.float64)
        if self.given:
            self.heads = nn.ModuleList([Head(h) for h in block.heads])
        elif self.projections:
            for name in ("W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V"):
                setattr(self, name, _parameter(block.matrices.get(name) or block.vectors.get(name)))
        self.W_O = _parameter(block.matrices["W_O"]) if self.projections else None
        self.b_O = _parameter(block.vectors.get("b_O"))
        # rotary positions: (base, fraction of d_k turned, layout), or None
        self.rotary = (float(conv.rotary_base), conv.rotary_fraction, conv.rotary_layout) \
            if conv.positions == "rotary" else None

    def turned(self, qkv: list, out: dict, b: int) -> list:
        """q~ and k~ of every head (RoFormer, eq. 34): :func:`rotary` of q and k, recorded as
        q_rot, k_rot under the index and head their q and k have (a key head shared by a
        group of query heads is recorded once)."""
        base, fraction, layout = self.rotary
        result = []
        for h, (q, k, v) in enumerate(qkv, 1):
            r = int(fraction * q.shape[1])
            q_rot, k_rot = rotary(q, base, r, layout), rotary(k, base, r, layout)
            if self.given:
                put(out, "q_rot", q_rot, block=b, head=h)
                put(out, "k_rot", k_rot, block=b, head=h)
            else:  # the columns of head h in Q, and of its key head in K (as q and k are named)
                kv = (h - 1) // self.group if self.projections else h - 1
                put(out, "q_rot", F.pad(q_rot, ((h - 1) * self.d_k, 0)), block=b, head=h,
                    skip=lambda i, j, h=h: j < (h - 1) * self.d_k)
                put(out, "k_rot", F.pad(k_rot, (kv * self.d_k, 0)), block=b, head=kv + 1 if self.projections else h,
                    skip=lambda i, j, kv=kv: j < kv * self.d_k)
            result.append((q_rot, k_rot, v))
        return result

    def forward(self, u: torch.Tensor, out: dict, b: int) -> torch.Tensor:
        """attn = [o^(1) | ... ] W_O + b_O for the rows ``u``; records q, k, v, q.k, s, e^s,
        their sums, a and o in ``out`` for block ``b``."""
        T = len(self.qkv["Q"]) if self.qkv is not None else u.shape[0]
        if self.qkv is not None:
            d_k, d_v = self.qkv["Q"].shape[1] // self.n_heads, self.qkv["V"].shape[1] // self.n_heads
            for name in "QKV":
                put(out, name.lower(), self.qkv[name], block=b,
                    head_of=lambda c, w=d_v if name == "V" else d_k: c // w + 1)
            qkv = [(self.qkv["Q"][:, h * d_k:(h + 1) * d_k], self.qkv["K"][:, h * d_k:(h + 1) * d_k],
                    self.qkv["V"][:, h * d_v:(h + 1) * d_v]) for h in range(self.n_heads)]
        elif self.given:
            qkv = [tuple(head.project(u, n) for n in "QKV") for head in self.heads]
            for h, (q, k, v) in enumerate(qkv, 1):
                for name, t in zip("qkv", (q, k, v)):
                    put(out, name, t, block=b, head=h)
        elif not self.projections:
            qkv = [(u[:, h * self.d_k:(h + 1) * self.d_k],) * 3 for h in range(self.n_heads)]
        else:
            full = {n: u @ getattr(self, f"W_{n}") + (getattr(self, f"b_{n}") if getattr(self, f"b_{n}") is not None
                                                      else 0) for n in "QKV"}
            for name in "QKV":
                put(out, name.lower(), full[name], block=b, head_of=lambda c: c // self.d_k + 1)
            g, d_k = self.group, self.d_k  # query head h reads key/value head h // g (0-based)
            qkv = [(full["Q"][:, h * d_k:(h + 1) * d_k], full["K"][:, h // g * d_k:(h // g + 1) * d_k],
                    full["V"][:, h // g * d_k:(h // g + 1) * d_k]) for h in range(self.n_heads)]
        if self.rotary is not None and self.weights is None:
            qkv = self.turned(qkv, out, b)
        above = torch.ones(T, T, dtype=torch.bool).triu(1)
        outputs = []
        for h, (q, k, v) in enumerate(qkv, 1):
            if self.weights is not None:
                o = self.weights @ v
                put(out, "a", self.weights, block=b, head=h)
                put(out, "o", o, block=b, head=h)
                outputs.append(o)
                continue
            scale = {"d_model": self.d_model, "d_k": q.shape[1], "none": 1}.get(self.score_scale, self.score_scale)
            scale = float(scale)
            qk = q @ k.T
            s = qk / math.sqrt(scale)
            hidden = (lambda i, j: j > i) if self.mask == "causal" else None
            visible = s.masked_fill(above, float("-inf")) if self.mask == "causal" else s
            if isinstance(self.mask, tuple):  # a given 0/1 matrix: 0 hidden
                zero = torch.tensor(self.mask) == 0
                hidden = lambda i, j: bool(zero[i, j])  # noqa: E731
                visible = s.masked_fill(zero, float("-inf"))
            exp_s = torch.exp(visible)
            a = torch.softmax(visible, dim=-1)
            if isinstance(self.mask, tuple):
                o = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=~zero,
                                                   scale=1 / math.sqrt(scale))[0]
                assert torch.allclose(o, a @ v, rtol=0, atol=1e-12)
            elif self.mask == "causal_after_softmax":
                a = a.masked_fill(above, 0.0)
                o = a @ v
            else:
                o = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=self.mask == "causal",
                                                   scale=1 / math.sqrt(scale))[0]
                assert torch.allclose(o, a @ v, rtol=0, atol=1e-12)
            for name, t in (("qk" if self.rotary is None else "qk_rot", qk), ("s", s), ("exp_s", exp_s)):
                put(out, name, t, block=b, head=h, skip=hidden)
            put(out, "sum_exp_s", exp_s.sum(-1), block=b, head=h)
            put(out, "a", a, block=b, head=h)
            put(out, "o", o, block=b, head=h)
            outputs.append(o)
        if self.W_O is None:
            return torch.cat(outputs, dim=-1)
        attn = torch.cat(outputs, dim=-1) @ self.W_O + (self.b_O if self.b_O is not None else 0)
        put(out, "attn", attn, block=b)
        return attn


class MLP(nn.Module):
    """m = act(u' W_1 + b_1) W_2 + b_2 with ReLU (F.relu), GELU tanh or GELU erf (F.gelu)."""

    ACTIVATIONS = {"relu": F.relu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "gelu_erf": F.gelu,
                   "silu": F.silu}

    def __init__(self, case: Case, block):
        """``block``: a :class:`derive.case.Block` with an MLP."""
        super().__init__()
        self.act = self.ACTIVATIONS[case.conventions.activation]
        after = block.options.get("output_activation", "none")
        self.after = None if after == "none" else self.ACTIVATIONS[after]
        for name in ("W_1", "W_2", "W_3"):  # W_3: a gated MLP's second projection (SwiGLU, GeGLU)
            setattr(self, name, _parameter(block.matrices.get(name)))
        for name in ("b_1", "b_2", "b_3"):
            setattr(self, name, _parameter(block.vectors.get(name)))

    def forward(self, u2: torch.Tensor, out: dict, b: int) -> torch.Tensor:
        """m for the rows ``u2``; records hidden, g and m."""
        hidden = u2 @ self.W_1 + (self.b_1 if self.b_1 is not None else 0)
        g = self.act(hidden)
        mixed = g
        if self.W_3 is not None:  # Shazeer 2020: act(x W_1) * (x W_3), then W_2
            up = u2 @ self.W_3 + (self.b_3 if self.b_3 is not None else 0)
            mixed = g * up
            put(out, "up", up, block=b)
            put(out, "gated", mixed, block=b)
        m = mixed @ self.W_2 + (self.b_2 if self.b_2 is not None else 0)
        if self.after is not None:
            m = self.after(m)
        for name, t in (("hidden", hidden), ("g", g), ("m", m)):
            put(out, name, t, block=b)
        return m


class Layers(nn.Module):
    """A stack of linear layers: out_l = act_l(out_(l-1) W_l + b_l), the last one m."""

    def __init__(self, case: Case, block):
        """``block``: a :class:`derive.case.Block` with ``layers``."""
        super().__init__()
        n = len(block.layers)
        self.acts = [None if layer["activation"] == "none" else MLP.ACTIVATIONS[layer["activation"]]
                     for layer in block.layers]
        self.W = nn.ParameterList([_parameter(block.matrices[f"W_{l}"]) for l in range(1, n + 1)])
        self.b = [_parameter(block.vectors.get(f"b_{l}")) for l in range(1, n + 1)]
        for l, b in enumerate(self.b, 1):
            if b is not None:
                self.register_parameter(f"b_{l}", b)

    def forward(self, x: torch.Tensor, out: dict, b: int) -> torch.Tensor:
        """m for the rows ``x``; records net^(l), g^(l) (head l) and m."""
        n = len(self.acts)
        for l, (W, bias, act) in enumerate(zip(self.W, self.b, self.acts), 1):
            net = x @ W + (bias if bias is not None else 0)
            x = net if act is None else act(net)
            if l == n:
                put(out, "m", x, block=b)
            else:
                put(out, "net" if act is None else "g", x, block=b, head=l)
            if act is not None:
                put(out, "net", net, block=b, head=l)
        return x


class Block(nn.Module):
    """A block with the sublayers the case gives, in its layout: pre-norm
    h = x + Attention(LN(x)), y = h + MLP(LN(h)); post-norm u = LN(x + Attention(x)),
    u' = LN(u + MLP(u)); parallel y = x + Attention(LN_1(x)) + MLP(LN_2(x)) (or one
    shared LN_1). Without LayerNorm the sublayers read the stream itself; a sublayer
    without a residual replaces the stream with its output."""

    def __init__(self, case: Case, block):
        """``block``: a :class:`derive.case.Block`."""
        super().__init__()
        vectors = block.vectors
        self.sublayers = tuple(block.sublayers)
        self.residual = tuple(block.residual)
        self.layout = block.options.get("layout", "pre_norm")
        self.shared = block.options.get("shared_norm", False)
        self.attn = Attention(case, block) if "attention" in self.sublayers else None
        self.mlp = MLP(case, block) if "mlp" in self.sublayers else \
            Layers(case, block) if "layers" in self.sublayers else None
        self.ln1 = Norm(case, vectors.get("ln1_gain"), vectors.get("ln1_bias")) \
            if block.layernorm and (self.attn is not None or self.shared) else None
        self.ln2 = Norm(case, vectors.get("ln2_gain"), vectors.get("ln2_bias")) \
            if block.layernorm and self.mlp is not None and not self.shared else None

    def forward(self, x: torch.Tensor, out: dict, b: int) -> torch.Tensor:
        """The block's output for the stream ``x``; records its intermediates."""

        def normed(norm, rows, name, symbol):
            """``norm`` of ``rows``, recorded as ``symbol`` with mu and sigma of slot ``name``."""
            result, mu, sigma = norm(rows)
            put(out, symbol, result, block=b)
            put(out, "mu", mu, block=b, norm=name)
            put(out, "sigma", sigma, block=b, norm=name)
            return result

        second = "layers" if "layers" in self.sublayers else "mlp"  # a stack of layers in the MLP's place
        parts = ((self.attn, self.ln1, "ln1", "u", "h", "attention"), (self.mlp, self.ln2, "ln2", "u2", "y", second))
        if self.layout == "parallel":
            total = x if self.residual else 0
            shared = normed(self.ln1, x, "ln1", "u") if self.shared and self.ln1 is not None else None
            for sublayer, norm, name, symbol, _, _ in parts:
                if sublayer is not None:
                    reads = shared if shared is not None else normed(norm, x, name, symbol) if norm is not None else x
                    total = total + sublayer(reads, out, b)
            put(out, "y", total, block=b)
            return total
        post = self.layout == "post_norm"
        stream = x
        for sublayer, norm, name, symbol, summed, kind in parts:
            if sublayer is None:
                continue
            reads = normed(norm, stream, name, symbol) if norm is not None and not post else stream
            update = sublayer(reads, out, b)
            if kind in self.residual:
                stream = stream + update
                put(out, summed, stream, block=b)
            else:  # the sublayer's output replaces the stream
                stream = update
            if norm is not None and post:
                stream = normed(norm, stream, name, symbol)
        return stream


class PartsModel(nn.Module):
    """The whole case as float64 torch modules: the input (E[ids] or a given X), positions
    (a learned P, the sinusoids as a constant buffer, or none), the blocks, the final
    LayerNorm, logits divided by the temperature (T = 0: greedy, p one-hot at the first
    argmax), softmax and L = -ln p(target) (or -log2 p)."""

    def __init__(self, case: Case):
        """Build the modules and copy ``case``'s weights into float64 parameters."""
        super().__init__()
        self.case = case
        conv = case.conventions
        T = len(case.tokens)
        self.E = _parameter(case.E) if case.E and case.X is None or case.E and case.W_U is None else None
        self.P = _parameter(case.P) if conv.positions == "learned" and case.P else None
        self.register_buffer("pe", sinusoid_table(T, case.d_model, float(conv.sinusoid_base), conv.first_position,
                                                  conv.sinusoid_layout) if conv.positions == "sinusoidal" else None)
        self.blocks = nn.ModuleList([Block(case, block) for block in case.blocks])
        self.final = case.conventions.final_layernorm and (case.has_unembedding or case.X is None)
        self.lnf = Norm(case, case.final_vectors.get("lnf_gain"), case.final_vectors.get("lnf_bias")) \
            if self.final else None
        self.W_U = _parameter(case.W_U) if case.has_unembedding and case.W_U is not None else None
        self.z = _parameter([case.logits]) if case.logits is not None else None  # given logits: trained

    def views(self) -> ParamViews:
        """derive's weights: (name, block, head) -> (parameter, view as derive's matrix)."""
        views: ParamViews = {}
        rows, vec = (lambda t: t), (lambda t: t.unsqueeze(0))

        def add(name, param, block=None, head=None):
            """Register ``param`` (absent when None) as derive's weight ``name``."""
            if param is not None:
                views[(name, block, head)] = (param, rows if param.dim() == 2 else vec)

        add("E", self.E)
        add("z", self.z)
        add("P", self.P)
        add("W_U", self.W_U)
        if self.lnf is not None:
            add("lnf_gain", self.lnf.gain)
            add("lnf_bias", self.lnf.bias)
        for b, block in enumerate(self.blocks, 1):
            for norm, prefix in ((block.ln1, "ln1"), (block.ln2, "ln2")):
                if norm is not None:
                    add(f"{prefix}_gain", norm.gain, b)
                    add(f"{prefix}_bias", norm.bias, b)
            if block.attn is not None:
                if block.attn.given:
                    for h, head in enumerate(block.attn.heads, 1):
                        for name in ("W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V"):
                            add(name, getattr(head, name), b, h)
                elif block.attn.projections:
                    for name in ("W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V"):
                        add(name, getattr(block.attn, name), b)
                add("W_O", block.attn.W_O, b)
                add("b_O", block.attn.b_O, b)
            if isinstance(block.mlp, Layers):
                for l, (W, bias) in enumerate(zip(block.mlp.W, block.mlp.b), 1):
                    add(f"W_{l}", W, b)
                    add(f"b_{l}", bias, b)
            elif block.mlp is not None:
                for name in ("W_1", "W_2", "W_3", "b_1", "b_2", "b_3"):
                    add(name, getattr(block.mlp, name), b)
        return views

    def forward(self) -> tuple[dict, torch.Tensor | None]:
        """The forward pass as derive's elements, and L (None without a target)."""
        case, conv, out = self.case, self.case.conventions, {}
        if self.z is not None:
            return self.softmax(self.z[0], out)
        if case.qkv is not None:
            self.blocks[0].attn(None, out, 1)
            return out, None
        if case.X is not None:
            x = tensor(case.X)
            put(out, "x", x)
        else:
            x = self.E[torch.tensor(case.ids, dtype=torch.long)]
        if conv.positions not in ("none", "rotary"):  # rotary: q and k turn in the heads instead
            table = self.P[:x.shape[0]] if self.P is not None else self.pe
            if self.pe is not None:
                put(out, "pe", self.pe)
            x = x + table
            put(out, "x" if case.X is None else "x2", x)
        stream = x
        for b, block in enumerate(self.blocks, 1):
            stream = block(stream, out, b)
        if self.lnf is not None:
            stream, mu, sigma = self.lnf(stream)
            put(out, "f", stream)
            put(out, "mu", mu, norm="final")
            put(out, "sigma", sigma, norm="final")
        if not case.has_unembedding:
            return out, None
        W_U = self.E.T if self.W_U is None else self.W_U
        return self.softmax(stream[-1] @ W_U, out, stream @ W_U)

    def softmax(self, raw: torch.Tensor, out: dict, every: torch.Tensor | None = None):
        """p = softmax(raw / T) of the last row's logits ``raw`` and L (``every``: the
        logits of every row, for the mean loss); given logits are recorded as they are."""
        case, conv = self.case, self.case.conventions
        if conv.temperature == 0:
            p = F.one_hot(torch.argmax(raw), len(case.pieces)).to(DTYPE)
            put_outputs(out, case, raw, p, None, greedy=True)
            return out, None
        z = raw / float(conv.temperature)
        L = None
        if conv.loss == "mean":
            L = put_row_losses(out, case, every, float(conv.temperature)) if case.ids else None
        elif case.target is not None:
            L = -torch.log_softmax(z, dim=-1)[case.target]
            if conv.loss_log == "2":
                L = L / math.log(2)
        put_outputs(out, case, raw, torch.softmax(z, dim=-1), L, temperature=float(conv.temperature))
        return out, L  # (z names the logits, given or computed; z / T is a scratch value)
