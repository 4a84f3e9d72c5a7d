"""RMSNorm of each row on its own (Zhang and Sennrich 2019, eq. 4; Llama's norm):

    rms = sqrt((1/d) sum_j x_j^2 + eps),   u_j = g_j x_j / rms

No mean is subtracted and there is no bias; eps sits inside the square root, as in
``torch.nn.RMSNorm`` and Hugging Face's ``LlamaRMSNorm``, and the gain g (Llama's
``weight``) is optional (absent: 1). A case selects it for every norm slot with
``conventions.norm = "rmsnorm"``, or per slot with ``ln1``/``ln2`` in a block and ``lnf``
in ``[model]``; its gain is ``ln1_gain``, ``ln2_gain``, ``lnf_gain``.
"""

from __future__ import annotations

from fractions import Fraction

from derive.array import Array
from derive.registry import Convention, Operation, Param, register

from .norms import NormSlot, eps_text, norm_step


def rms_norm(x: Array, slot: NormSlot, conv, weights: dict[str, Array]) -> tuple[Array, object]:
    """Normalise each row of ``x`` (T x d) in ``slot`` by its root mean square; ``weights``
    holds the optional ``gain`` (1 x d leaves). Returns the output (T x d) and the step."""
    T, d = x.shape
    rms = ((x * x).sum() / d + conv.rmsnorm_eps).sqrt().named(slot.statistic("rms"))
    u = x / rms
    if "gain" in weights:
        u = u * weights["gain"]
    u = u.named(slot.output())
    rms_t = slot.stat("rms", T)
    words = ("Each row is divided by its root mean square, the square root of the mean of its squares "
             f"plus eps, with eps = {eps_text(conv.rmsnorm_eps)}; no mean is subtracted"
             + (", and each column is multiplied by its gain g." if "gain" in weights else "."))
    formula = ("g * " if "gain" in weights else "") + f"{slot.input}_{T} / {rms_t}"
    return u, norm_step(slot, "RMSNorm", words, [("rms", rms.column())], u.ids(), formula)


RMSNORM = register(Operation(
    name="rmsnorm", kind="norm", title="RMSNorm", stage=41,
    source="Zhang and Sennrich 2019, Root Mean Square Layer Normalization, eq. 4",
    symbols={"rms": "a row's root mean square, sqrt(mean(x^2) + eps) (norm: ln1, ln2, final)"},
    params=(Param("gain", ("d_model",), "g, multiplies each normalised entry (absent: 1)", optional=True),),
    conventions=(Convention("rmsnorm_eps", Fraction(1, 1000000), "eps of RMSNorm, x / sqrt(mean(x^2) + eps)",
                            kind="nonnegative", expected="eps >= 0",
                            source="Hugging Face LlamaConfig.rms_norm_eps = 1e-6"),),
    forward=rms_norm,
    undefined=("rmsnorm_eps", "is a row of zeros: its mean square is 0 and eps = {eps}, so rms = 0 "
                              "and x / rms divides by zero"),
))
