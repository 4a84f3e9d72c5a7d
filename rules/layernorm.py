"""LayerNorm of each row on its own (Ba et al. 2016, eq. 4; seed 003, eq. 17.3):

    mu = (1/d) sum_j x_j,   sigma = sqrt((1/d) sum_j (x_j - mu)^2 + eps),
    u_j = gamma_j (x_j - mu) / sigma + beta_j

by default with the biased variance (divide by d, as ``torch.nn.LayerNorm``) and eps
inside the square root; the conventions ``layernorm_variance = "n-1"`` and
``layernorm_eps_placement = "sigma"`` (sigma = sqrt(var) + eps) give the variants readers
use by mistake. Without a gain gamma and bias beta (the seed 000 toy), u_j = (x_j - mu) / sigma.
"""

from __future__ import annotations

from fractions import Fraction

from derive.array import Array
from derive.graph import Meta
from derive.registry import Convention, Operation, Param, register

from .norms import NormSlot, eps_text, norm_step


def layer_norm(x: Array, slot: NormSlot, conv, weights: dict[str, Array]) -> tuple[Array, object]:
    """Normalise each row of ``x`` (T x d) in ``slot`` under the case's conventions
    ``conv``; ``weights`` holds the optional ``gain`` and ``bias`` (1 x d leaves).
    Returns the output (T x d) and the step."""
    T, d = x.shape
    eps = conv.layernorm_eps
    inside = conv.layernorm_eps_placement == "inside"
    divisor = d - 1 if conv.layernorm_variance == "n-1" else d
    mu = x.mean().named(slot.statistic("mu"))
    centred = (x - mu).named(lambda t, j: Meta(None, f"{slot.input}_{t + 1}[{j + 1}] - mu"))
    var = (centred * centred).sum() / divisor
    sigma = ((var + eps).sqrt() if inside else var.sqrt() + eps).named(slot.statistic("sigma"))
    u = centred / sigma
    gain, bias = weights.get("gain"), weights.get("bias")
    if gain is not None:
        u = u * gain
    if bias is not None:
        u = u + bias
    u = u.named(slot.output())
    mu_t, sigma_t = slot.stat("mu", T), slot.stat("sigma", T)
    words = ("Each row is normalised on its own: subtract its mean mu, divide by "
             + ("sigma = sqrt(variance + eps)" if inside else "sigma = sqrt(variance) + eps")
             + f", with the variance over {'d' if divisor == d else 'd - 1'} and eps = {eps_text(eps)}.")
    formula = f"({slot.input}_{T} - {mu_t}) / {sigma_t}"
    if gain is not None or bias is not None:
        formula = ("gamma * " if gain is not None else "") + formula + (" + beta" if bias is not None else "")
    return u, norm_step(slot, "LayerNorm", words, [("mu", mu.column()), ("sigma", sigma.column())], u.ids(), formula)


LAYERNORM = register(Operation(
    name="layernorm", kind="norm", title="LayerNorm", stage=40,
    symbols={"mu": "a row's mean (norm: ln1, ln2, final)", "sigma": "sqrt(var + eps) of a row"},
    source="Ba, Kiros and Hinton 2016, Layer Normalization, eq. 4",
    params=(Param("gain", ("d_model",), "gamma, multiplies each normalised entry (absent: 1)", optional=True),
            Param("bias", ("d_model",), "beta, added after the gain (absent: 0)", optional=True)),
    conventions=(
        Convention("layernorm_eps", Fraction(1, 100000), "eps of LayerNorm, (x - mu) / sqrt(var + eps)",
                   kind="nonnegative", expected="eps >= 0", source="torch.nn.LayerNorm (eps = 1e-5)"),
        Convention("layernorm_variance", "n", "the variance of LayerNorm divides by",
                   choices={"n": "d (biased, as torch.nn.LayerNorm)", "n-1": "d - 1 (unbiased)"},
                   slips={"n-1": "LayerNorm variance over n-1 instead of n"},
                   source="Ba et al. 2016, eq. 4 (biased)"),
        Convention("layernorm_eps_placement", "inside", "where LayerNorm's eps goes",
                   choices={"inside": "inside the square root, sqrt(var + eps)",
                            "sigma": "added to sigma, sqrt(var) + eps (the Annotated Transformer)"},
                   slips={"sigma": "eps added to sigma instead of inside the square root"},
                   source="torch.nn.LayerNorm (inside)"),
    ),
    forward=layer_norm,
    undefined=("layernorm_eps", "is of a constant row: its variance is 0 and eps = {eps}, so sigma = 0 "
                                "and (x - mu) / sigma divides by zero"),
))
