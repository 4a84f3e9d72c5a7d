"""The elementwise maps an MLP may apply (``conventions.activation``):

    GELU, tanh form (GPT-2's gelu_new): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    GELU, erf form: 0.5 x (1 + erf(x / sqrt 2))        (Hendrycks and Gimpel 2016, eq. 1)
    ReLU: max(0, x), with derivative 0 at 0 (PyTorch's convention)
    SiLU (swish): x / (1 + e^-x)                       (Elfwing et al. 2018, eq. 1; Llama's MLP)

The scalar operations themselves (value, derivative, exact form) are the engine's
(:mod:`derive.graph`); here each is registered under the name a case selects it by.
"""

from __future__ import annotations

from derive.graph import GeluErf, GeluTanh, Relu, Silu
from derive.registry import Operation, register

GELU_TANH = register(Operation(
    name="gelu_tanh", kind="activation", title="GELU (tanh form)", stage=1, op=GeluTanh(), glu="GeGLU",
    source="Hendrycks and Gimpel 2016, section 2 (the tanh approximation); GPT-2's gelu_new"))
GELU_ERF = register(Operation(
    name="gelu_erf", kind="activation", title="GELU (erf form)", stage=2, op=GeluErf(), glu="GeGLU",
    source="Hendrycks and Gimpel 2016, eq. 1"))
RELU = register(Operation(
    name="relu", kind="activation", title="ReLU", stage=3, op=Relu(), glu="ReGLU",
    source="Nair and Hinton 2010"))
SILU = register(Operation(
    name="silu", kind="activation", title="SiLU", stage=4, op=Silu(), glu="SwiGLU",
    source="Elfwing, Uchibe and Doya 2018, eq. 1 (x sigma(x)); torch.nn.SiLU"))
