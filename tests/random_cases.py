"""Random case files for cross-checks: seeded, deterministic TOML text.

Every weight is a dyadic rational k/8 or k/16 in a modest range (written as a TOML string
``"k/16"`` or an integer), so the case is exact and a float64 reference reads it without
rounding. Shapes and conventions vary with the seed: d_model in {2, 4, 6, 8}, a number of
heads dividing it, 1 to 3 blocks, 1 to 8 prompt tokens given as ``prompt.ids``, gelu_tanh /
gelu_erf / relu, causal or no mask, optional biases and LayerNorm gains and biases, W_U
sometimes ``"tied"``, temperature sometimes 1/2 or 2, a final LayerNorm or not, and the SGD
step on all weights or on a named subset.

Usage: ``write_case(seed, folder)`` writes ``random-<seed>.toml`` and returns its path;
``case_text(seed)`` returns the TOML text alone.
"""

from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path

BLOCK_BIASES = ("b_Q", "b_K", "b_V", "b_O", "b_1", "b_2")
BLOCK_NORM_VECTORS = ("ln1_gain", "ln1_bias", "ln2_gain", "ln2_bias")
MAX_RECORDS = 2500  # shapes whose estimated_records exceed this are drawn again


def _number(q: Fraction) -> str:
    """A dyadic rational as TOML: an integer, or a fraction string such as ``"-3/16"``."""
    return str(q.numerator) if q.denominator == 1 else f'"{q.numerator}/{q.denominator}"'


def _dyadic(rng: random.Random, scale: int = 1) -> Fraction:
    """k/8 or k/16 with |value| <= scale (scale 1: in [-1, 1])."""
    den = rng.choice((8, 16))
    return Fraction(rng.randint(-den * scale, den * scale), den)


def _vector(rng: random.Random, n: int, scale: int = 1, around: Fraction = Fraction(0)) -> str:
    """A TOML list of n dyadic numbers ``around + k/8`` or ``around + k/16``."""
    return "[" + ", ".join(_number(around + _dyadic(rng, scale)) for _ in range(n)) + "]"


def _matrix(rng: random.Random, rows: int, cols: int, scale: int = 1) -> str:
    """A TOML matrix (list of rows) of dyadic numbers, rows x cols."""
    return "[\n" + "".join(f"  {_vector(rng, cols, scale)},\n" for _ in range(rows)) + "]"


def estimated_records(d: int, heads: int, n_blocks: int, V: int, T: int, d_mlp: int) -> int:
    """About how many JSON records derive exports for these shapes: two per weight (its
    gradient and its value after the step) plus the forward quantities. derive's export
    costs roughly a millisecond per record, so this bounds a random case's runtime."""
    weights = 2 * V * d + (T + 2) * d + n_blocks * (4 * d * d + 2 * d * d_mlp)
    forward = T * d + n_blocks * T * (12 * d + 2 * d_mlp + 4 * heads * T) + 8 * V
    return 2 * weights + forward


def case_text(seed: int) -> str:
    """The TOML text of random case ``seed`` (the same text for the same seed, always)."""
    rng = random.Random(f"derive-random-case-{seed}")
    while True:  # shapes, redrawn until the case is small enough to derive in about a second
        d = rng.choice((2, 4, 6, 8))
        heads = rng.choice([h for h in range(1, d + 1) if d % h == 0])
        n_blocks = rng.randint(1, 3)
        V = rng.randint(2, 8)
        T = rng.randint(1, 8)
        d_mlp = rng.randint(1, 2 * d)
        if estimated_records(d, heads, n_blocks, V, T, d_mlp) <= MAX_RECORDS:
            break
    ids = [rng.randrange(V) for _ in range(T)]
    target = rng.randrange(V)
    tied = rng.random() < 0.3
    final_ln = rng.random() < 0.8
    activation = rng.choice(("gelu_tanh", "gelu_erf", "relu"))
    mask = rng.choice(("causal", "none"))
    temperature = rng.choice(("1", "1", '"1/2"', "2"))
    eps = rng.choice(("1e-5", "1e-5", '"1/64"'))
    learning_rate = rng.choice(("0.1", '"1/4"', "1"))

    names = ["E", "P"] + ([] if tied else ["W_U"])
    lines = [f'name = "random-{seed}"', "", "[vocab]",
             "pieces = [" + ", ".join(f'"t{i}"' for i in range(V)) + "]", "",
             "[prompt]", "ids = [" + ", ".join(map(str, ids)) + "]", f"target = {target}", "",
             "[conventions]", f"layernorm_eps = {eps}", f'activation = "{activation}"',
             f'mask = "{mask}"', f"temperature = {temperature}", f"learning_rate = {learning_rate}",
             f"final_layernorm = {'true' if final_ln else 'false'}"]
    trained_line = len(lines)
    lines += ["", "[model]", f"d_model = {d}", f"heads = {heads}",
              f"E = {_matrix(rng, V, d)}", f"P = {_matrix(rng, T + rng.randint(0, 2), d)}",
              "W_U = " + ('"tied"' if tied else _matrix(rng, d, V))]
    if final_ln:
        for name, around in (("lnf_gain", Fraction(1)), ("lnf_bias", Fraction(0))):
            if rng.random() < 0.3:
                lines.append(f"{name} = {_vector(rng, d, 1, around)}")
                names.append(name)
    for _ in range(n_blocks):
        lines += ["", "[[blocks]]"]
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            lines.append(f'{name} = "I"' if name in ("W_V", "W_O") and rng.random() < 0.2
                         else f"{name} = {_matrix(rng, d, d)}")
        lines += [f"W_1 = {_matrix(rng, d, d_mlp)}", f"W_2 = {_matrix(rng, d_mlp, d)}"]
        names += ["W_Q", "W_K", "W_V", "W_O", "W_1", "W_2"]
        for name in BLOCK_BIASES:
            if rng.random() < 0.3:
                lines.append(f"{name} = {_vector(rng, d_mlp if name == 'b_1' else d)}")
                names.append(name)
        for name in BLOCK_NORM_VECTORS:
            if rng.random() < 0.3:
                lines.append(f"{name} = {_vector(rng, d, 1, Fraction(1) if name.endswith('gain') else Fraction(0))}")
                names.append(name)
    if rng.random() < 0.4:
        chosen = sorted(set(rng.sample(names, rng.randint(1, min(3, len(names))))))
        lines.insert(trained_line, "trained = [" + ", ".join(f'"{n}"' for n in chosen) + "]")
    return "\n".join(lines) + "\n"


def write_case(seed: int, folder: Path) -> Path:
    """Write random case ``seed`` to ``folder/random-<seed>.toml`` and return the path."""
    path = Path(folder) / f"random-{seed}.toml"
    path.write_text(case_text(seed), encoding="utf-8")
    return path
