"""Weights from a safetensors file: a case's ``weights = "w.safetensors"``.

A case may keep its large weights in a safetensors file (the format of Hugging Face
checkpoints: a JSON header of names, dtypes and shapes, then the raw little-endian data)
instead of writing them as TOML lists. The file's tensors are named by derive's own field
paths and shaped as the TOML field is (row vectors, ``x @ W``):

    E, P, W_U, lnf_gain, lnf_bias                      the [model] table's weights
    blocks.1.W_Q, blocks.1.b_Q, blocks.1.ln1_gain ...  block 1's (counted from 1)

Every value is read as the exact dyadic rational it is: float32, float64 and float16
through ``Fraction(float)``, which is exact; bfloat16 by widening its 16 bits to the
float32 with the same sign, exponent and leading mantissa bits (bfloat16 is the top half
of a float32), also exact. :func:`merge` puts the tensors into the parsed TOML document
as rows of Fractions, so the case reader checks their shapes and every other rule sees
ordinary matrices. :func:`serialize` makes such a file's bytes (float32 or float64, exact).

A hostile file is bounded before its data is read: the header size, each
tensor's dtype, rank and element count, and the total number of values
(:data:`MAX_VALUES`) are checked first.
"""

from __future__ import annotations

import difflib
import math
import re
from fractions import Fraction
from collections.abc import Sequence
from pathlib import Path

from .errors import CaseError
from .lazy import numpy

MAX_VALUES = 4_000_000  # derive makes one exact number (and graph leaf) per weight: raised by [limits] weights = N
MAX_HEADER = 16 * 2**20  # bytes of a safetensors JSON header (the format itself allows 100 MB)
DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2"}  # safetensors dtype -> numpy
DTYPE_NAMES = "float32, bfloat16, float16 or float64"
BLOCK = re.compile(r"blocks\.(\d+)\.(.+)")


def merge(data: dict, case_path: str, model_fields: dict[str, int], block_fields: dict[str, int]) -> dict[str, str]:
    """Put the tensors of the file ``data["weights"]`` names (relative to ``case_path``'s
    folder) into the parsed case ``data``: ``E`` into ``data["model"]["E"]``, ``blocks.2.W_Q``
    into ``data["blocks"][1]["W_Q"]`` (blocks the TOML does not list are added as empty
    tables), each as a list of rows of Fractions (a vector: a list of Fractions).

    ``model_fields`` and ``block_fields`` give each weight a case can hold and its rank
    (1: a vector, 2: a matrix). Returns where each merged tensor lands, as the case reader
    names fields (``model.E``, ``blocks[2].W_Q``), mapped to its tensor name, so that a later
    error about its shape can name the file and the tensor.

    Raises:
        CaseError: ``weights`` is not a string, the file is missing, unreadable, too large
            or not a safetensors file, a tensor is not float32/bfloat16/float16/float64, is
            not a field (the nearest one is named), has the wrong rank or no entries, holds
            a NaN or an infinity, or is also given in the TOML; naming the file and field.
    """
    value = data["weights"]
    if not isinstance(value, str) or not value.strip():
        raise CaseError(f"{value!r} is not a file name", file=case_path, field="weights",
                        expected='a safetensors file, relative to the case file ("w.safetensors")')
    path = Path(case_path).parent / value
    if not path.is_file():
        raise CaseError(f"{value!r}: no such file ({path})", file=case_path, field="weights",
                        expected="a safetensors file, relative to the case file")
    tensors = read(path, lambda name: _rank(name, model_fields, block_fields), _raised(data))
    where: dict[str, str] = {}
    model = data.setdefault("model", {})
    blocks = data.setdefault("blocks", [])
    for name, rows in tensors.items():
        match = BLOCK.fullmatch(name)
        if match is None:
            table, key, field_name = model, name, f"model.{name}"
            if not isinstance(model, dict):
                continue  # the case reader refuses [model] itself
        else:
            number, key = int(match[1]), match[2]
            if not isinstance(blocks, list):
                continue  # the case reader refuses a [blocks] that is not [[blocks]]
            while len(blocks) < number:
                blocks.append({})
            table, field_name = blocks[number - 1], f"blocks[{number}].{key}"
            if not isinstance(table, dict):
                continue
        if key in table:
            raise CaseError(f"is also given in the case file as {field_name}", file=str(path),
                            field=name, expected="each weight given once, in the TOML or in the weights file")
        table[key] = rows
        where[field_name] = name
    return where


def _rank(name: str, model_fields: dict[str, int], block_fields: dict[str, int]) -> int:
    """The rank a tensor named ``name`` must have (1 or 2).

    Raises:
        ValueError: ``name`` is no field; its message names the nearest field and what
            was expected.
    """
    match = BLOCK.fullmatch(name)
    if match is None and name in model_fields:
        return model_fields[name]
    if match is not None and match[2] in block_fields and int(match[1]) >= 1:
        return block_fields[match[2]]
    if match is not None and int(match[1]) < 1:
        raise ValueError(f"blocks are counted from 1 (blocks.1.{match[2]} is the first block's)")
    prefix = f"blocks.{match[1]}." if match is not None else "blocks.1."
    names = list(model_fields) + [prefix + k for k in block_fields]
    lower = {n.lower(): n for n in names}
    near = difflib.get_close_matches(name.lower(), list(lower), n=1, cutoff=0.6)
    hint = f"; did you mean {lower[near[0]]}?" if near else ""
    raise ValueError(f"is no field{hint} (expected one of {', '.join(model_fields)}, "
                     f"or blocks.N. and one of {', '.join(block_fields)})")


def _raised(data: dict) -> int:
    """The values a case's safetensors file may hold: :data:`MAX_VALUES`, or the case's
    ``[limits] weights`` when it is a larger integer (the same limit as the TOML's numbers;
    the case reader checks the field itself)."""
    limits = data.get("limits")
    given = limits.get("weights") if isinstance(limits, dict) else None
    return max(MAX_VALUES, given) if type(given) is int else MAX_VALUES


def read(path: Path, rank_of, max_values: int | None = None) -> dict[str, list]:
    """The tensors of the safetensors file ``path`` as exact Fractions: a 2-d tensor as a
    list of rows, a 1-d tensor as a list, in the file's order. ``rank_of(name)`` gives the
    rank a name must have, or raises ValueError when the name is no field; ``max_values``
    bounds the values (default :data:`MAX_VALUES`).

    Raises:
        CaseError: naming ``path`` and the tensor, as :func:`arrays` and :func:`merge` list.
    """
    def check(name: str, shape: list[int]) -> str | None:
        rank = rank_of(name)
        if len(shape) != rank:
            return ("a matrix (2 dimensions, rows x columns as in the TOML field)" if rank == 2
                    else "a vector (1 dimension)")
        return None

    out = {}
    for name, values in arrays(path, check, "a safetensors file whose tensors are named by derive's fields "
                                            "(docs/case-format.md)", max_values).items():
        if values.ndim == 2:
            out[name] = FileMatrix(values)
        else:
            out[name] = [Fraction(*v.as_integer_ratio()) for v in values.astype("<f8").tolist()]  # (exact: dyadic)
    return out


class FileMatrix(Sequence):
    """A matrix of a safetensors file, rows of exact Fractions as the case reader gives
    every matrix, each row made when first read; :meth:`integers` gives the whole matrix
    exactly as integers over a power of two, without a Fraction per entry (what the derivation graph
    reads: 7.1 million weights at d_model 768, 20 s as Fractions).

    Args:
        values: a 2-d numpy array of finite float32 or float64 values (each exactly a
            dyadic rational), rows x cols.
    """

    def __init__(self, values):
        self.values = values
        self._rows: dict[int, list[Fraction]] = {}

    def __len__(self) -> int:
        return self.values.shape[0]

    def __getitem__(self, r):
        if isinstance(r, slice):
            return [self[i] for i in range(len(self))[r]]
        r = range(len(self))[r]  # (an IndexError past the end, as a list's)
        if r not in self._rows:
            self._rows[r] = [Fraction(*v.as_integer_ratio()) for v in self.values[r].astype("<f8").tolist()]
        return self._rows[r]

    def __eq__(self, other) -> bool:
        return list(self) == (list(other) if isinstance(other, Sequence) else other)

    __hash__ = None

    def floats(self):
        """The matrix as a numpy float64 array (each entry exactly its value)."""
        return self.values.astype("<f8")

    def integers(self):
        """The matrix exactly as integers over a power of two: ``(Z, d)``, value = Z / d,
        d = 2^k an fmpz, the least such power, and Z (rows x cols) a numpy int64 array
        when every numerator fits 62 bits (the usual: float32 weights of one scale), else
        a flint fmpz_mat (each double m 2^e, an integer m of at most 53 bits, over the
        common 2^-e_min, the factors of two all entries share taken out). No rational
        and no Python integer is made per entry (7.1 million weights at d_model 768)."""
        np = numpy()
        from flint import fmpz, fmpz_mat

        rows, cols = self.values.shape
        mantissa, exponent = np.frexp(self.values.astype("<f8"))  # value = mantissa 2^exponent, 1/2 <= |mantissa| < 1
        ints = (mantissa * 2.0 ** 53).astype(np.int64)  # (exact: a double's 53 bits)
        nonzero = ints != 0
        if not nonzero.any():
            return np.zeros((rows, cols), dtype=np.int64), fmpz(1)
        # (the factors of two each mantissa holds: its lowest bit, a power of two that a double holds exactly)
        zeros = np.frexp((ints & -ints).astype(np.float64))[1] - 1
        zeros[~nonzero] = 0
        shift = (exponent + zeros).astype(np.int64) - 53
        low = int(shift[nonzero].min())  # (the least exponent of an entry's lowest bit)
        ints >>= zeros  # (odd integers, at most 53 bits, exact)
        up = np.where(nonzero, shift - low, 0)
        if int(up.max()) <= 9:  # (the numerators fit 62 bits: shifted in numpy)
            Z = ints << up
        else:
            Z = fmpz_mat(rows, cols, [k << s for k, s in zip(ints.ravel().tolist(), up.ravel().tolist())])
        if low > 0:  # (every entry an integer, a multiple of 2^low: in FLINT's integers, whole)
            return (Z if type(Z) is fmpz_mat else fmpz_mat(Z.tolist())) * (1 << low), fmpz(1)
        return Z, fmpz(2) ** -low


def arrays(path: Path, check, expected: str, max_values: int | None = None) -> dict:
    """The tensors of the safetensors file ``path`` as numpy arrays holding exactly the
    stored values: float32 for float32, bfloat16 (widened bit for bit) and float16, float64
    for float64; in the file's order.

    ``check(name, shape)`` judges each tensor from the header before any data is read: it
    returns None when the tensor is welcome, else what was expected of its shape, and raises
    ValueError (its message follows the tensor's name) for a name it does not know.
    ``expected`` says what the file should be, for the errors about the file as a whole.

    Bounds before the data is read: the header is at most :data:`MAX_HEADER` bytes and the
    tensors hold at most ``max_values`` values together (default :data:`MAX_VALUES`; a
    case raises it with ``[limits] weights``; safetensors itself refuses a
    file its header does not exactly cover).

    Raises:
        CaseError: the file is missing, unreadable, too large or not a safetensors file, or
            a tensor has an unknown name, a dtype other than float32/bfloat16/float16/float64,
            a shape ``check`` refuses or no entries, or holds a NaN or an infinity; naming
            ``path`` and the tensor.
    """
    np = numpy()
    from safetensors import SafetensorError, deserialize, safe_open

    file = str(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(8)
    except OSError as exc:
        raise CaseError(f"cannot read the weights file: {exc.strerror or exc}", file=file,
                        expected=expected) from None
    header = int.from_bytes(head, "little") if len(head) == 8 else None
    if header is None or header > MAX_HEADER or 8 + header > size:
        raise CaseError("is not a safetensors file (no valid header length in its first 8 bytes)"
                        if header is None or 8 + header > size else
                        f"has a header of {header} bytes, more than {MAX_HEADER}", file=file, expected=expected)
    shapes: dict[str, tuple[list[int], str]] = {}
    try:
        with safe_open(file, framework="numpy") as handle:
            for name in handle.keys():
                piece = handle.get_slice(name)
                shapes[name] = (list(piece.get_shape()), piece.get_dtype())
    except (SafetensorError, OSError, ValueError) as exc:
        raise CaseError(f"is not a readable safetensors file: {exc}", file=file, expected=expected) from None
    total, limit = 0, MAX_VALUES if max_values is None else max_values
    for name, (shape, dtype) in shapes.items():
        try:
            problem = check(name, shape)
        except ValueError as exc:
            raise CaseError(str(exc), file=file, field=name) from None
        if dtype not in DTYPES:
            raise CaseError(f"has dtype {dtype}", file=file, field=name, expected=DTYPE_NAMES)
        if problem is not None or 0 in shape:
            raise CaseError(f"has shape {tuple(shape)}", file=file, field=name,
                            expected=problem or "one or more entries")
        total += math.prod(shape)
        if total > limit:
            raise CaseError(f"holds more than {limit} values (at tensor {name})", file=file, field=name,
                            expected=f"at most {limit} weights: derive makes one exact number of each; a [limits] "
                            "table with weights = N in the case raises it on purpose")
    try:
        raw = {name: info for name, info in deserialize(path.read_bytes())}
    except (SafetensorError, OSError, ValueError) as exc:
        raise CaseError(f"is not a readable safetensors file: {exc}", file=file, expected=expected) from None
    out = {}
    for name, (shape, dtype) in shapes.items():
        values = np.frombuffer(bytes(raw[name]["data"]), dtype=DTYPES[dtype])
        if dtype == "BF16":  # the top 16 bits of a float32: widen exactly
            values = (values.astype("<u4") << 16).view("<f4")
        values = values.astype("<f8" if dtype == "F64" else "<f4").reshape(shape)  # float16 -> float32 is exact
        if not np.isfinite(values).all():
            bad = tuple(int(i) + 1 for i in np.argwhere(~np.isfinite(values))[0])
            at = f"row {bad[0]}, column {bad[1]}" if len(bad) == 2 else f"index {bad}" if len(bad) > 1 else f"entry {bad[0]}"
            raise CaseError(f"holds {values[tuple(i - 1 for i in bad)]} at {at}", file=file,
                            field=name, expected="finite numbers (no NaN or infinity)")
        out[name] = values
    return out


def serialize(tensors: dict, metadata: dict[str, str] | None = None) -> bytes:
    """``tensors`` (name -> numpy array of float32 or float64, named by derive's fields) as
    the bytes of a safetensors file; the values are stored as they are (exact). The caller
    writes them (atomically: :func:`derive.output.write_atomic`)."""
    np = numpy()
    from safetensors.numpy import save

    # safetensors.numpy writes an array's buffer as it lies: a transposed view would come out untransposed
    return save({k: np.ascontiguousarray(v) for k, v in tensors.items()}, metadata=metadata)
