"""Weights from a safetensors file (``weights = "w.safetensors"``, derive/weights.py).

A case whose weights sit in the file loads to the same matrices as the same case written
out in TOML; every float is read as the exact dyadic rational it is (the expected values
are the IEEE encodings worked out by hand: float32(0.1) = 13421773 / 2^27, bfloat16(0.1)
is bits 0x3DCD = (1 + 77/128) 2^-4 = 205/2048, float16(0.1) is bits 0x2E66 =
(1 + 614/1024) 2^-4 = 819/8192); each bad file is a one-line error naming the file and
the tensor (exit 2).
"""

from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file
from safetensors.torch import save_file as save_torch

from derive import weights
from derive.case import load_case
from derive.derivation import VALUE_FORMAT, derive

from test_bad_input import assert_clean_error, run

D, V, MLP = 4, 5, 8
PIECES = ["a", "b", "c", "d", "e"]
SHAPES = {"E": (V, D), "P": (3, D), "W_U": (D, V), "lnf_gain": (D,),
          "blocks.1.W_Q": (D, D), "blocks.1.W_K": (D, D), "blocks.1.W_V": (D, D), "blocks.1.W_O": (D, D),
          "blocks.1.W_1": (D, MLP), "blocks.1.W_2": (MLP, D), "blocks.1.b_1": (MLP,), "blocks.1.ln1_gain": (D,)}
HEAD = f"""[vocab]
pieces = {PIECES!r}
[prompt]
ids = [0, 3, 2]
target = "b"
[model]
d_model = {D}
heads = 2
"""


def dyadic(shape, rng: random.Random) -> np.ndarray:
    """A float32 array of multiples of 1/8 in [-1, 1] (exact in float32 and in TOML)."""
    return np.array([rng.randint(-8, 8) / 8 for _ in range(int(np.prod(shape)))], dtype=np.float32).reshape(shape)


def toml_value(a: np.ndarray) -> str:
    return repr(a.tolist())


@pytest.fixture
def arrays() -> dict[str, np.ndarray]:
    rng = random.Random(9)
    return {name: dyadic(shape, rng) for name, shape in SHAPES.items()}


def write_split(folder: Path, arrays: dict, head: str = HEAD, extra_block: str = "") -> Path:
    """The case with every weight in w.safetensors; returns the TOML's path."""
    save_file(arrays, str(folder / "w.safetensors"))
    path = folder / "case.toml"
    path.write_text('weights = "w.safetensors"\n' + head + "[[blocks]]\n" + extra_block, encoding="utf-8")
    return path


def test_same_case_as_toml(tmp_path, arrays):
    """Every matrix and vector of the split case equals the all-TOML case's, and both derive
    the same logits and loss."""
    model = "".join(f"{k} = {toml_value(v)}\n" for k, v in arrays.items() if not k.startswith("blocks."))
    block = "".join(f"{k[len('blocks.1.'):]} = {toml_value(v)}\n" for k, v in arrays.items() if k.startswith("blocks."))
    whole = tmp_path / "whole.toml"
    whole.write_text(HEAD + model + "[[blocks]]\n" + block, encoding="utf-8")
    a, b = load_case(str(whole)), load_case(str(write_split(tmp_path, arrays)))
    assert (a.E, a.P, a.W_U, a.final_vectors) == (b.E, b.P, b.W_U, b.final_vectors)
    assert (a.blocks[0].matrices, a.blocks[0].vectors) == (b.blocks[0].matrices, b.blocks[0].vectors)
    assert b.E[0][0] == Fraction(arrays["E"][0][0].item())
    da, db = derive(a), derive(b)
    ra, rb = da.quantities(), db.quantities()
    assert len(ra) == len(rb) > 100
    assert list(da.decimals(ra, VALUE_FORMAT).values()) == list(db.decimals(rb, VALUE_FORMAT).values())


@pytest.mark.parametrize("dtype, expected", [
    (torch.float32, Fraction(13421773, 2**27)),
    (torch.bfloat16, Fraction(205, 2048)),
    (torch.float16, Fraction(819, 8192)),
    (torch.float64, Fraction(3602879701896397, 2**55)),
])
def test_exact_values(tmp_path, dtype, expected):
    """0.1 stored in each dtype is read as that dtype's exact value."""
    save_torch({"v": torch.full((2,), 0.1, dtype=dtype)}, str(tmp_path / "t.safetensors"))
    assert weights.read(tmp_path / "t.safetensors", lambda name: 1) == {"v": [expected, expected]}


def test_bfloat16_case(tmp_path, arrays):
    """A whole case in bfloat16: each loaded weight is the bfloat16 value, exactly (the bits
    widened by hand here: value = float32 with the bf16 bits on top)."""
    tensors = {k: torch.from_numpy(v).to(torch.bfloat16) + torch.tensor(1 / 3, dtype=torch.bfloat16)
               for k, v in arrays.items()}
    save_torch(tensors, str(tmp_path / "w.safetensors"))
    (tmp_path / "case.toml").write_text('weights = "w.safetensors"\n' + HEAD + "[[blocks]]\n", encoding="utf-8")
    case = load_case(str(tmp_path / "case.toml"))
    bits = tensors["blocks.1.W_Q"].view(torch.int16).numpy().astype(np.uint16)
    by_hand = [[bfloat16_value(int(b)) for b in row] for row in bits]
    assert case.blocks[0].matrices["W_Q"] == by_hand
    assert any(x.denominator > 8 for row in by_hand for x in row)  # not the dyadic eighths any more


def bfloat16_value(bits: int) -> Fraction:
    """A normal or zero bfloat16 from its 16 bits: (-1)^s (1 + m/128) 2^(e - 127) (1 sign,
    8 exponent, 7 mantissa bits)."""
    sign, exponent, mantissa = bits >> 15, (bits >> 7) & 0xFF, bits & 0x7F
    assert 0 < exponent < 255 or bits & 0x7FFF == 0
    if exponent == 0:
        return Fraction(0)
    return (-1) ** sign * (1 + Fraction(mantissa, 128)) * Fraction(2) ** (exponent - 127)


def error(tmp_path, arrays, head=HEAD, extra_block=""):
    return run("run", str(write_split(tmp_path, arrays, head, extra_block)))


def test_given_twice(tmp_path, arrays):
    assert_clean_error(error(tmp_path, arrays, extra_block="W_Q = \"I\"\n"),
                       "w.safetensors", "blocks.1.W_Q", "also given in the case file", "given once")


def test_wrong_shape(tmp_path, arrays):
    arrays["blocks.1.W_1"] = arrays["blocks.1.W_1"][:3]
    assert_clean_error(error(tmp_path, arrays), "w.safetensors", "field blocks.1.W_1", "has 3 rows", "4 rows")
    arrays["blocks.1.W_1"] = np.zeros((D, MLP), np.float32)
    arrays["E"] = arrays["E"][:, :3]
    assert_clean_error(error(tmp_path, arrays), "w.safetensors", "field E row 1", "has 3 columns", "4 columns")


def test_wrong_rank(tmp_path, arrays):
    arrays["lnf_gain"] = arrays["lnf_gain"].reshape(1, D)
    assert_clean_error(error(tmp_path, arrays), "w.safetensors", "field lnf_gain", "shape (1, 4)", "a vector")


@pytest.mark.parametrize("name, hint", [("blocks.1.W_q", "did you mean blocks.1.W_Q?"),
                                        ("lnf_gian", "did you mean lnf_gain?"),
                                        ("wte", "is no field (expected one of E, P"),
                                        ("blocks.0.W_Q", "counted from 1")])
def test_unknown_name(tmp_path, arrays, name, hint):
    arrays[name] = np.zeros((D, D), np.float32)
    assert_clean_error(error(tmp_path, arrays), "w.safetensors", f"field {name}", hint)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_not_finite(tmp_path, arrays, bad):
    arrays["blocks.1.W_2"][2, 1] = bad
    assert_clean_error(error(tmp_path, arrays), "w.safetensors", "blocks.1.W_2", "row 3, column 2",
                       "finite numbers")


def test_missing_file(tmp_path):
    path = tmp_path / "case.toml"
    path.write_text('weights = "gone.safetensors"\n' + HEAD + "[[blocks]]\n", encoding="utf-8")
    assert_clean_error(run("run", str(path)), "case.toml", "field weights", "'gone.safetensors': no such file")
    path.write_text('weights = 3\n' + HEAD + "[[blocks]]\n", encoding="utf-8")
    assert_clean_error(run("run", str(path)), "case.toml", "field weights", "not a file name")


def test_bad_dtype(tmp_path, arrays):
    arrays["blocks.1.b_1"] = np.arange(MLP, dtype=np.int32)
    assert_clean_error(error(tmp_path, arrays), "field blocks.1.b_1", "dtype I32", "float32, bfloat16")


def test_not_safetensors(tmp_path):
    (tmp_path / "w.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}")
    path = tmp_path / "case.toml"
    path.write_text('weights = "w.safetensors"\n' + HEAD + "[[blocks]]\n", encoding="utf-8")
    assert_clean_error(run("run", str(path)), "w.safetensors", "not a readable safetensors file")
    (tmp_path / "w.safetensors").write_bytes((2**40).to_bytes(8, "little") + b"{}")
    assert_clean_error(run("run", str(path)), "w.safetensors", "not a safetensors file")


def test_bounded(tmp_path, arrays, monkeypatch):
    """Too many values or a too large header is refused before the data is read."""
    monkeypatch.setattr(weights, "MAX_VALUES", 50)
    read = []
    monkeypatch.setattr(weights.Path, "read_bytes", lambda self: read.append(self) or b"")
    assert_clean_error(error(tmp_path, arrays), "w.safetensors", "more than 50 values")
    assert not read
    monkeypatch.setattr(weights, "MAX_HEADER", 64)
    assert_clean_error(error(tmp_path, arrays), "w.safetensors", "more than 64")


def test_limit_raised_by_the_case(tmp_path, arrays, monkeypatch):
    """``[limits] weights = N`` raises the bound on a safetensors file's values, as it
    raises the TOML's: a file of more values than the default loads, and one past N does not."""
    monkeypatch.setattr(weights, "MAX_VALUES", 50)
    values = sum(a.size for a in arrays.values())
    assert values > 50
    assert load_case(str(write_split(tmp_path, arrays, f"[limits]\nweights = {values}\n" + HEAD))).E is not None
    assert_clean_error(error(tmp_path, arrays, f"[limits]\nweights = {values - 1}\n" + HEAD), "w.safetensors",
                       f"more than {values - 1} values", "weights = N")


def test_padded_file_refused(tmp_path, arrays):
    path = write_split(tmp_path, arrays)
    with open(tmp_path / "w.safetensors", "ab") as handle:
        handle.write(b"\0" * 4096)
    assert_clean_error(run("run", str(path)), "w.safetensors", "not a readable safetensors file")


def test_weight_the_block_does_not_use(tmp_path, arrays):
    """A tensor for a field the block's settings leave out (W_3 without gated = true) is
    refused like the TOML field, naming the weights file and the tensor."""
    arrays["blocks.1.W_3"] = np.zeros((D, MLP), np.float32)
    assert_clean_error(error(tmp_path, arrays), "w.safetensors", "field blocks.1.W_3", "unknown field")
    assert load_case(str(write_split(tmp_path, arrays, extra_block="gated = true\n"))).blocks[0].options["gated"]


def _integers(m):
    """FileMatrix.integers as row lists of Python ints (from its int64 array or fmpz_mat), and d."""
    Z, d = m.integers()
    if isinstance(Z, np.ndarray):
        assert Z.dtype == np.int64
        return Z.tolist(), d
    return [[int(Z[r, c]) for c in range(Z.ncols())] for r in range(Z.nrows())], d


def _exact(m):
    """FileMatrix.integers (what the graph reads) as fmpq entries, and whether its power of
    two is the least one (d = 1, or some numerator odd)."""
    from flint import fmpq

    Z, d = _integers(m)
    entries = [[fmpq(z) / d for z in row] for row in Z]
    least = d == 1 or any(z % 2 for row in Z for z in row)
    assert d > 0 and (d & (d - 1)) == 0  # a power of two
    return entries, least


@pytest.mark.parametrize("dtype", ["<f4", "<f8"])
def test_file_matrix_exact(dtype):
    """A safetensors matrix read whole (FileMatrix.integers, what the graph reads) holds
    exactly the Fractions its rows give, float by float: zeros, signs, subnormals,
    huge and tiny exponents side by side; over the least power of two."""
    from flint import fmpq

    rng = np.random.default_rng(7)
    special = [0.0, -0.0, 1.0, -2.5, 2.0 ** -140 if dtype == "<f4" else 2.0 ** -1070, 3.0e38, -1.0e-30, 65504.0]
    values = np.concatenate([rng.normal(size=40) * 10.0 ** rng.integers(-20, 20, size=40), special]).astype(dtype)
    m = weights.FileMatrix(values.reshape(6, 8))
    exact, least = _exact(m)
    assert (len(exact), len(exact[0])) == (6, 8) and least
    for r in range(6):
        for c in range(8):
            q = Fraction(float(values.reshape(6, 8)[r, c]))
            assert m[r][c] == q
            assert exact[r][c] == fmpq(q.numerator, q.denominator)
    huge = np.array([[2.0 ** 53, -1e20], [3e30 if dtype == "<f4" else 1e300, 2.0 ** 60]]).astype(dtype)
    exact, least = _exact(weights.FileMatrix(huge))  # (every entry an integer: the common power of two is >= 1)
    assert least and all(exact[r][c] == fmpq(int(huge[r, c])) for r in range(2) for c in range(2))
    narrow = (rng.integers(-300, 300, size=(5, 7)) / 256).astype(dtype)  # k/256: the numerators shifted in numpy
    exact, least = _exact(weights.FileMatrix(narrow))
    assert least and all(exact[r][c] == fmpq(int(narrow[r, c] * 256), 256) for r in range(5) for c in range(7))
    even = (np.array([[4, -8], [12, 0]]) / 64).astype(dtype)  # every numerator even: d is 16, not 64
    Z, d = _integers(weights.FileMatrix(even))
    assert d == 16 and Z == [[1, -2], [3, 0]]
    Z, d = _integers(weights.FileMatrix(np.zeros((2, 3), dtype=dtype)))
    assert d == 1 and Z == [[0, 0, 0], [0, 0, 0]]
