"""Case files: a toy transformer with exact weights, a prompt and its conventions.

The format is TOML (documented in ``docs/case-format.md``). Every number is exact
(:mod:`derive.numbers`). Loading validates every field and shape; anything wrong raises
:class:`~derive.errors.CaseError` naming the file, the field (with row and column) and
what was expected.

Shapes use row vectors, ``x @ W`` (the seeds' convention): ``E`` is V x d_model, ``P`` is
positions x d_model, ``W_Q``/``W_K``/``W_V``/``W_O`` are d_model x d_model, ``W_1`` is
d_model x d_mlp, ``W_2`` is d_mlp x d_model, ``W_U`` is d_model x V (or ``"tied"``: E^T).
"""

from __future__ import annotations

import difflib
import importlib.util
import re
import tomllib
from dataclasses import dataclass, field, make_dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from pathlib import Path

from . import registry, weights
from .errors import CaseError, max_mb, read_text
from .numbers import NUMBER_FORMS, parse_exact, python_int_guard

Matrix = list[list[Fraction]]
Vector = list[Fraction]

SPACE = "\u2423"  # ␣, a leading space in a vocabulary piece
TOP_LEVEL = ("name", "title", "source", "weights", "vocab", "prompt", "input", "conventions", "model", "blocks",
             "limits")
MAX_EXPONENT = 1000  # a number's decimal exponent stays within +-MAX_EXPONENT (1e999999999 would hang)
# What a case may ask for before derive refuses it, checked first; a case raises one on purpose
# with a [limits] table (docs/case-format.md, "Limits"), the file size with DERIVE_MAX_CASE_MB.
LIMITS = {"digits": 400,  # digits of one number as written (numerator or denominator, or the decimal)
          "context_length": 1_000_000,  # model.context_length (positions derive may be asked about)
          "weights": 1_000_000,  # numbers in the case's matrices and vectors, all together (d_model 256, one
          # block: 0.8 million; every one is a quantity of the derivation, with its gradient)
          "tokens": 1024}  # the prompt's tokens (rows of every activation; attention is tokens x tokens)
MAX_CASE_MB = 16  # the case file's size (a safetensors file holds large weights)
OPERATIONS = registry.load()  # every operation of rules/, registered
NORM_SLOTS = {"ln1": ("attention",), "ln2": ("mlp", "layers")}  # a block's norm slots, before which sublayer
DEFAULT_SUBLAYERS = ("attention", "mlp")  # a block's sublayers when it does not say (a stack of layers
# takes the MLP's place: the two are never in one block)
FINAL_SLOT = "lnf"


def _slot_params(slot: str) -> list[str]:
    """The weights any norm may have in ``slot``: ``ln1_gain``, ``ln1_bias``, ..."""
    return list(dict.fromkeys(f"{slot}_{p.name}" for op in registry.operations("norm") for p in op.params))


def _block_fields() -> list[str]:
    """Every field any ``[[blocks]]`` table may have: its own, every sublayer's weights and
    options, and the norm slots' (a block may still refuse one its sublayers do not use)."""
    fields = {"sublayers", "layernorm", "residual", "heads", "layers"}
    for op in registry.operations("sublayer") + [registry.get("block")]:
        fields |= {o.field for o in op.options}
        if op.name != "layers":  # a stack's weights are in its [[blocks.layers]] tables
            fields |= {p.name for p in op.params}
    for slot in NORM_SLOTS:
        fields |= {slot, *_slot_params(slot)}
    return sorted(fields)


def _params_of(kind: str, vectors: bool) -> tuple[str, ...]:
    """The names of the weights of the operations of one kind (vectors or matrices)."""
    return tuple(p.name for op in registry.operations(kind) for p in op.params if (len(p.shape) == 1) == vectors)


BLOCK_MATRICES = _params_of("sublayer", vectors=False)
BLOCK_VECTORS = _params_of("sublayer", vectors=True) + tuple(n for s in NORM_SLOTS for n in _slot_params(s))
FINAL_VECTORS = tuple(_slot_params(FINAL_SLOT))
PARAM_NAMES = _params_of("stage", vectors=False) + FINAL_VECTORS + BLOCK_MATRICES + BLOCK_VECTORS
# the weights a safetensors file may hold, by rank (derive/weights.py): [model]'s, then a block's
WEIGHT_FIELDS = ({n: 1 if n in FINAL_VECTORS else 2 for n in _params_of("stage", vectors=False) + FINAL_VECTORS},
                 {n: 1 if n in BLOCK_VECTORS else 2 for n in BLOCK_MATRICES + BLOCK_VECTORS})
MODEL_FIELDS = ("d_model", "heads", "context_length", FINAL_SLOT) + _params_of("stage", vectors=False) + FINAL_VECTORS

Conventions = make_dataclass(
    "Conventions", [(c.field, object, field(default=c.default)) for c in registry.conventions()],
    frozen=False, namespace={"__doc__": """The switches that change printed digits, each explicit (DESIGN.md,
    "Conventions"): one attribute per :class:`~derive.registry.Convention` the registered
    operations declare (``docs/operations.md`` lists them with their choices and defaults)."""})


@dataclass
class Block:
    """One transformer block's weights and settings (pre-norm by default: GPT-2's layout).

    ``matrices`` holds W_Q, W_K, W_V, W_O (d_model x d_model), W_1 (d_model x d_mlp),
    W_2 (d_mlp x d_model); ``vectors`` holds the optional biases and LayerNorm gains and
    biases that the case gives (absent means none: bias 0, gain 1). ``heads``, when given,
    lists each head's own ``W_Q``, ``W_K``, ``W_V`` (d_model x d_h), optional ``b_Q``...
    and ``name`` (W_O then has sum d_h rows); ``sublayers`` are the sublayers the block
    runs (attention, mlp, or both); ``layernorm`` is false for a block whose sublayers
    read the stream directly (attention exercises such as seed 004's hand-set head);
    ``norms`` names the registered norm of each slot the block has (``ln1`` before
    attention, ``ln2`` before the MLP; after them in a post-norm block); ``residual``
    lists the sublayers that add their output to the stream (the others replace it);
    ``options`` holds the settings the block and its sublayers declare (the block's
    ``layout`` and ``shared_norm``, attention's ``projections``); ``layers``, for a block
    with a stack of linear layers, each layer's ``activation`` (its weights are W_l, b_l
    in ``matrices`` and ``vectors``).
    """

    matrices: dict[str, Matrix]
    vectors: dict[str, Vector] = field(default_factory=dict)
    heads: list[dict] | None = None
    sublayers: tuple[str, ...] = ("attention", "mlp")
    layernorm: bool = True
    norms: dict[str, str] = field(default_factory=dict)
    residual: tuple[str, ...] = ("attention", "mlp")
    options: dict = field(default_factory=dict)
    layers: list[dict] | None = None

    @property
    def d_mlp(self) -> int:
        """The MLP's hidden width (columns of W_1)."""
        return len(self.matrices["W_1"][0])


@dataclass
class Case:
    """A validated case: vocabulary, prompt, weights and conventions.

    Attributes:
        name: short name (``cat-climbed``); title: the prompt as the chapter writes it.
        path: the file it was loaded from, used in error messages.
        pieces: vocabulary pieces by id (ids from 0).
        ids: the prompt's token ids, in order (positions count from 1 in print).
        target: the id whose loss ``L = -ln p(target)`` is computed, or None.
        d_model, heads: model width and number of attention heads (d_k = d_model / heads).
        E: V x d_model embedding table; P: positions x d_model position table.
        blocks: the blocks in order; W_U: d_model x V, or None when tied to E^T.
        final_vectors: optional ``lnf_gain``/``lnf_bias`` of the final LayerNorm.
        X: T x d_model input vectors given directly (``[input]``; no tokenizer or E), with
            ``labels`` naming the rows; None for a case that starts from a prompt.
        context_length: the number of positions the model has (``model.context_length``),
            or None when the case does not say; a learned P may give fewer rows (only those
            the prompt uses), but never more. ``derive params`` counts P with it.
        final_norm: the registered norm before W_U (``model.lnf``, default ``conventions.norm``).
        logits: the logits given directly (``[input] logits``, one per piece: a softmax or
            temperature exercise with no model; ``blocks`` is then empty), or None.
        qkv: Q, K, V given directly (``[input] Q, K, V``: T x heads d_k, T x heads d_k,
            T x heads d_v; an attention exercise: one block with attention only, no norm,
            no residual, no W_O), or None; ``d_model`` is then the width of Q.
        text: the prompt as the case writes it (``prompt.text``), which the tokenizer cut
            into ``ids``; None when the case gives the ids (``prompt.ids``) or no prompt.
    """

    name: str
    title: str
    path: str
    pieces: list[str]
    ids: list[int]
    target: int | None
    d_model: int
    heads: int
    E: Matrix
    P: Matrix
    blocks: list[Block]
    W_U: Matrix | None
    conventions: Conventions
    final_vectors: dict[str, Vector] = field(default_factory=dict)
    X: Matrix | None = None
    labels: list[str] | None = None
    context_length: int | None = None
    final_norm: str = "layernorm"
    logits: Vector | None = None
    qkv: dict[str, Matrix] | None = None
    text: str | None = None

    @property
    def d_k(self) -> int:
        """Width of one head, d_model / heads."""
        return self.d_model // self.heads

    @property
    def tokens(self) -> list[str]:
        """The names of the rows: the prompt's pieces in order, or the given X's labels."""
        if self.X is not None or self.logits is not None or self.qkv is not None:
            return self.labels
        return [self.pieces[i] for i in self.ids]

    @property
    def has_unembedding(self) -> bool:
        """Whether the case ends in logits over a vocabulary (E and W_U, or tied)."""
        return bool(self.pieces) and (self.W_U is not None or bool(self.E))


def bundled_cases() -> dict[str, Path]:
    """The case files shipped with derive, by name (file stem)."""
    # (the package's folder from its spec: importlib.resources would import zipfile, tempfile
    # and its readers, a few milliseconds of every command's start)
    folders = importlib.util.find_spec("derive.cases").submodule_search_locations
    return {p.stem: p for folder in folders for p in Path(folder).iterdir() if p.suffix == ".toml"}


def resolve(name_or_path: str) -> Path:
    """Find a case: a bundled name (``cat-climbed``) or a path to a TOML file.

    Raises:
        CaseError: when it is neither.
    """
    path = Path(name_or_path)
    if path.is_file():
        return path
    cases = bundled_cases()
    if name_or_path in cases:
        return cases[name_or_path]
    if path.is_dir():
        raise CaseError(f"{name_or_path!r} is a folder, not a case file",
                        expected="a path to a .toml file or one of: " + ", ".join(sorted(cases)))
    named = path.stem if path.suffix == ".toml" and path.parent == Path(".") else name_or_path  # (crane.toml: crane)
    close = [] if Path(named).suffix else difflib.get_close_matches(named, cases, n=1, cutoff=0.75)
    hint = f"; did you mean {close[0]}?" if close else ""  # (a bundled case's name mistyped, or with .toml)
    raise CaseError(f"no such case file or bundled case {name_or_path!r}{hint}",
                    expected="a path to a .toml file or one of: " + ", ".join(sorted(cases)))


def load_case(name_or_path: str) -> Case:
    """Load and validate a case (see ``docs/case-format.md``).

    Raises:
        CaseError: malformed TOML, a missing field, a value that is not an exact number,
            a shape mismatch, a token not in the vocabulary, d_model not divisible by heads,
            or an unknown convention; the message names the file and the field.
    """
    path = resolve(name_or_path)
    limit = _max_case_mb(str(path))
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    if size > limit * 10**6:
        raise CaseError(f"is {size / 10**6:.1f} MB, more than the limit of {limit:g} MB", file=str(path),
                        expected=f"a case file of at most {limit:g} MB, with large weights in a safetensors file; "
                        "DERIVE_MAX_CASE_MB=N raises it on purpose")
    try:
        with python_int_guard():  # a 16 MB integer would take minutes to read
            text = read_text(path, CaseError).removeprefix("\ufeff")  # (a byte-order mark, as Notepad writes)
            _count_before_parsing(text, str(path))
            data = parse_toml(text)
    except RecursionError:
        raise CaseError("malformed TOML: arrays or tables nested too deeply", file=str(path),
                        expected="a TOML document as in docs/case-format.md") from None
    except (ValueError, ArithmeticError) as exc:  # TOMLDecodeError, an integer of > 4300 digits, ...
        huge = None if isinstance(exc, tomllib.TOMLDecodeError) else HUGE_NUMBER.search(text)
        if huge is not None:  # a bare integer or an exponent Python will not read: where it is, and the limit
            line = text.count("\n", 0, huge.start()) + 1
            if huge.group(1) is not None:
                raise CaseError(f"line {line}: a number whose exponent has {len(huge.group(1))} digits, far beyond "
                                f"1e{MAX_EXPONENT}", file=str(path), expected=f"numbers between 1e-{MAX_EXPONENT} "
                                f"and 1e{MAX_EXPONENT}") from None
            digits = len(huge.group(2).replace("_", ""))
            limit = _raised(text, "digits")
            if digits > limit:
                raise CaseError(f"line {line}: a number written with {digits} digits, more than the limit of {limit} "
                                "digits", file=str(path), expected=f"numbers of at most {limit} digits, between "
                                f"1e-{MAX_EXPONENT} and 1e{MAX_EXPONENT} in size") from None
            # (a raised limit allows the digits; a TOML integer has no leading zeros, so it is past 1e4300)
            raise CaseError(f"line {line}: an integer written with {digits} digits, far beyond 1e{MAX_EXPONENT}",
                            file=str(path), expected=f"numbers between 1e-{MAX_EXPONENT} and 1e{MAX_EXPONENT} in "
                            "size") from None
        raise CaseError(f"malformed TOML: {exc}", file=str(path),
                        expected="a TOML document as in docs/case-format.md") from None
    tensors = weights.merge(data, str(path), *WEIGHT_FIELDS) if "weights" in data else {}
    return _Reader(str(path), data, tensors).case()


# Unicode's Cc (C0, DEL, C1) but tab and line feed; the bidirectional embeddings, overrides and isolates (a
# right-to-left override turns the rest of a row around on a terminal that honours it, a token disguised:
# "Trojan Source", CVE-2021-42574); the line and paragraph separators (a line break no table shows as one)
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
CONTROL_EXPECTED = "printable text (no escape sequence, carriage return, bell or bidirectional override)"
FAST_TOML_BYTES = 20_000  # a case file at least this long is parsed by toml-rs where it reads as tomllib does
# (about where tomllib's parse, 0.22 ms a KB with Decimals, passes toml-rs's import, 4.5 ms: crane, 28 KB, 6.2 ms)
FAST_TOML_DEPTH = 64  # ... and nests arrays and tables at most this deep (deeper: toml-rs 0.4.3 overflows its stack)
_SIMPLE_STRING = re.compile(r'"[^"\\\n]*"|\'[^\'\n]*\'')  # a one-line string with no escape in it


def parse_toml(text: str) -> dict:
    """The TOML document as ``tomllib.loads(text, parse_float=Decimal)`` reads it (every
    float as the Decimal of its digits, so 0.1 is 1/10 exactly). A long file (a d_model 128
    case is 2 MB: tomllib takes 0.74 s, pure Python, 4 us a number) is parsed by toml-rs
    (Rust, the same API: 0.06 s), TOML 1.0.0 as tomllib, where nothing in it could read
    otherwise: no byte-order mark and no multi-line string (which toml-rs and tomllib read
    differently, or a line-wise scan cannot see through) and nesting provably shallow
    (:func:`_shallow`); anything toml-rs refuses (a malformed line) or reads where tomllib
    would not (an integer of 4,301 digits) is read again by tomllib, whose errors derive
    reports. Shorter files go to tomllib alone.

    Raises:
        tomllib.TOMLDecodeError, ValueError, ArithmeticError, RecursionError: as tomllib."""
    if len(text) >= FAST_TOML_BYTES and not text.startswith("\ufeff") and '"""' not in text \
            and "'''" not in text and _shallow(text, FAST_TOML_DEPTH):
        import toml_rs

        try:
            data = toml_rs.loads(text, parse_float=Decimal, toml_version="1.0.0")
        except Exception:  # noqa: BLE001 (tomllib reads it again, for its own verdict and message)
            data = None
        if data is not None and not (_digit_run(text, 4301) and _holds_a_huge_integer(data)):
            return data
    return tomllib.loads(text, parse_float=Decimal)


DIGITS = bytes(int(chr(b) in "0123456789_") for b in range(256))  # bytes.translate: a digit or "_" -> 1, else 0


def _digit_run(text: str, length: int) -> bool:
    """Whether ``text`` holds ``length`` digits and underscores in a row (how TOML writes a
    long integer), found by a byte translation and a substring search (0.03 s on 7 MB,
    where a regular expression takes 0.4 s)."""
    return b"\x01" * length in text.encode("utf-8", "surrogatepass").translate(DIGITS)


def _holds_a_huge_integer(data) -> bool:
    """Whether the parsed document holds an integer of more than 4,300 digits, which
    toml-rs reads and tomllib refuses (Python's limit on reading an integer from text,
    see :func:`~derive.numbers.python_int_guard`). Asked only where the text holds a run of
    4,301 digits and underscores (:func:`_digit_run`, the only way TOML writes such an integer):
    the walk takes 0.6 s on a d_model 256 case, the search 0.02 s."""
    stack = [data]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is int:
            if value.bit_length() > 14_000 and abs(value) >= 10 ** 4300:
                return True
        elif kind is list:
            stack.extend(value)
        elif kind is dict:
            stack.extend(value.values())
    return False


def _shallow(text: str, most: int) -> bool:
    """Whether ``text`` (with no multi-line string) nests brackets and braces at most
    ``most`` deep, by an over-count: every ``[`` and ``{`` opens, even inside a string or a
    comment, and a ``]`` or ``}`` closes only where it is certainly code: outside the
    one-line strings of its line and before its comment, on a line where no quote is left
    unpaired (a string with an escaped quote in it: its line's closers are not counted)."""
    depth = 0
    for line in text.split("\n"):
        depth += line.count("[") + line.count("{")
        if depth > most:
            return False
        if "'" in line or "\\" in line or line.count('"') % 2:
            code = _SIMPLE_STRING.sub("", line)
        else:  # (the usual line: its strings are every other piece between double quotes; 3x faster)
            code = "".join(line.split('"')[::2])
        if '"' not in code and "'" not in code:
            code = code.split("#", 1)[0]
            depth = max(depth - code.count("]") - code.count("}"), 0)
    return True


# what tomllib cannot read: an exponent of 5 digits or more past Decimal's range, an integer of more than 4,300 digits
HUGE_NUMBER = re.compile(r"(?<![\w.\"'])[-+]?\d[\d._]*[eE][-+]?(\d{5,})|(?<![\w.\"'])[-+]?(\d(?:_?\d){4300,})")


# a limit a case's [limits] table raises, read from its text before TOML is parsed
RAISED = {key: re.compile(rf"(?m)^\[limits\][^\[]*?^[^\S\n]*{key}\s*=\s*(\d+)") for key in ("weights", "digits")}


def _raised(text: str, key: str) -> int:
    """The limit ``key`` (``weights`` or ``digits``) as the case's text raises it in its
    ``[limits]`` table, else :data:`LIMITS`' (read before the TOML is: the file's size or an
    unreadable number is being judged)."""
    raised = RAISED[key].search(text)
    return int(raised.group(1)) if raised else LIMITS[key]


def _count_before_parsing(text: str, file: str) -> None:
    """Refuse a large case whose numbers pass the ``weights`` limit before TOML reads it (a
    10 MB file takes tomllib 7 s): the numbers are counted in the text (an over-count of
    at most the ids and settings), against the limit or a ``[limits] weights`` it raises.

    Raises:
        CaseError: past the limit."""
    if len(text) < 2 * LIMITS["weights"]:
        return  # (the default limit: 2 MB, read in well under a second; the exact count comes after)
    limit = _raised(text, "weights")
    if len(text) < 2 * limit:
        return  # (each number takes a digit and a separator: fewer than limit of them; the count takes 0.6 s on 7 MB)
    words = re.sub(rb"#[^\n]*", b"", text.encode("utf-8"))  # (comments hold no weights)
    count = len(re.findall(rb"(?<![\w./])[-+]?\.?\d", words))  # (k/256: one number)
    if count > limit:
        raise CaseError(f"about {count:,} numbers in the file, more than the limit of {limit} numbers in the case's "
                        "matrices and vectors", file=file, expected=f"at most {limit}; a [limits] table with "
                        "weights = N raises it on purpose (large weights belong in a safetensors file)")


def _max_case_mb(file: str) -> float:
    """The largest case file read, in MB: :data:`MAX_CASE_MB`, or ``DERIVE_MAX_CASE_MB``.

    Raises:
        CaseError: when the variable is not a positive number."""
    return max_mb("DERIVE_MAX_CASE_MB", MAX_CASE_MB, file, CaseError)


def _digits(value) -> int:
    """The digits of a number as the case writes it (``0.125``: 3, ``"1/7"``: 2, ``12``:
    2; a decimal counts the places of its denominator: ``0.0001``: 4), counted without
    turning it into text first (an int of 10^5 digits has no text)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):  # (from its bits, one too many when it is below that power of 10: 10^499 <= 500 digits)
        digits = max(1, int(abs(value).bit_length() * 0.30103) + 1)
        return digits - 1 if digits > 1 and abs(value) < 10 ** (digits - 1) else digits
    if isinstance(value, Decimal):  # 0.0001 has 4 digits (its denominator, 10^4); 1e999 one (its size is bounded apart)
        sign, digits, exponent = value.as_tuple()
        return max(len(digits), -exponent) if isinstance(exponent, int) else len(digits)
    if isinstance(value, str):
        return sum(ch.isdigit() for ch in value)
    return 0


HEAD_FIELDS = ("name", "W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V")  # a [[blocks.heads]] table's keys


def _describe(value) -> str:
    """How an error message shows a value from the case file: ``a table``, ``an array of
    tables``, a list with its items shown the same way, a decimal as written, else its repr;
    cut to 60 characters (an error stays one readable line)."""
    if isinstance(value, bool):  # (as TOML writes it, not Python's True)
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            return "an array of tables"
        text = "[" + ", ".join(_describe(v) for v in value) + "]"
    else:
        # (a decimal in exponent form as a case writes it, 1e1001 and -2.50e3, not Decimal's 1E+1001)
        text = str(value).replace("E+", "e").replace("E", "e") if isinstance(value, Decimal) else repr(value)
    return text if len(text) <= 60 else text[:56] + "..." + text[-1]


def _decimal_exponent(value) -> int | None:
    """The decimal exponent of a nonzero finite decimal (a TOML float or decimal text), else None."""
    if isinstance(value, str) and "/" not in value:
        try:
            value = Decimal(value.strip().replace("\u2212", "-"))
        except (InvalidOperation, ValueError):
            return None
    if isinstance(value, Decimal) and value.is_finite() and value:
        return value.adjusted()
    return None


class _Known(dict):
    """The numbers read so far: a text (``"1/4"``) -> its Fraction, and any other written
    value by ``(type, value)`` (1, 1.0 and True are equal keys: each type its own reading);
    looking up a Fraction (a safetensors file's weight) gives itself. A row of texts is
    looked up in one ``map`` (0.1 s for 800,000 weights, where building a key per entry
    takes 0.2 s).

    Raises:
        KeyError: a value not read before; TypeError: a list or a table."""

    def __missing__(self, value):
        kind = type(value)
        if kind is Fraction:
            return value
        if kind is tuple or kind is str:
            raise KeyError(value)
        return self[kind, value]


class _Reader:
    """Reads one parsed TOML document into a :class:`Case`, naming fields in errors."""

    def __init__(self, path: str, data: dict, tensors: dict[str, str] | None = None):
        self.path = path
        self.data = data
        self.tensors = tensors or {}  # fields read from the weights file: field -> tensor name
        self.limits = self.read_limits()
        self._numbers = _Known()  # a number's text, or (type, written value), -> its Fraction, once read
        self._weights = 0  # numbers of matrices and vectors read so far (the "weights" limit)

    def read_limits(self) -> dict[str, int]:
        """:data:`LIMITS`, with the case's own ``[limits]`` (positive integers) in their place."""
        given = self.data.get("limits", {})
        if not isinstance(given, dict):
            raise self.fail("limits", f"is {_describe(given)}", "a table [limits]")
        self.known(given, "limits.", list(LIMITS))
        for key, value in given.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise self.fail(f"limits.{key}", f"{_describe(value)} is not a positive integer",
                                f"a positive integer (default {LIMITS[key]})")
        return {**LIMITS, **given}

    def over(self, key: str, where: str, what: str) -> CaseError:
        """The error for a value past the limit ``key``, naming the limit and how to raise it."""
        return self.fail(where, f"{what}, more than the limit of {self.limits[key]}",
                         f"at most {self.limits[key]}; a [limits] table with {key} = N raises it on purpose")

    def fail(self, field_name: str, message: str, expected: str | None = None) -> CaseError:
        """The error about ``field_name``; a field read from the weights file names that
        file and the tensor (``blocks.1.W_Q row 2``) instead."""
        for where, tensor in self.tensors.items():
            if field_name == where or field_name.startswith(where + " "):
                return CaseError(message, file=str(Path(self.path).parent / self.data["weights"]),
                                 field=tensor + field_name[len(where):], expected=expected)
        return CaseError(message, file=self.path, field=field_name, expected=expected)

    def get(self, table: dict, key: str, where: str, default=KeyError, fields=()):
        """``table[key]``, else ``default``; with none, a missing field's error, which asks
        whether a key of the table written like ``key`` (``w_v``) was meant, but not one of
        ``fields``, the table's other valid keys (W_Q beside a missing W_V)."""
        if key in table:
            return table[key]
        if default is KeyError:
            written = [k.lower() for k in table if k not in fields]
            typo = difflib.get_close_matches(key.lower(), written, n=1, cutoff=0.6)
            raise self.fail(f"{where}{key}", "missing field" + (f" (is {typo[0]} meant to be {key}?)" if typo else ""))
        return default

    def table(self, key: str, default=KeyError) -> dict:
        """The top-level table ``[key]``, checked to be a table (not a value or ``[[key]]``)."""
        value = self.get(self.data, key, "", default)
        if not isinstance(value, dict):
            raise self.fail(key, f"is {_describe(value)}", f"a table [{key}]")
        return value

    def known(self, table: dict, where: str, names, why: str = "") -> None:
        """Refuse a field of ``table`` that is not in ``names`` (a typo would go unnoticed),
        naming the nearest valid field when one is close (``[convention]``: did you mean
        conventions?)."""
        unknown = sorted(set(table) - set(names))
        if unknown:
            lower = {n.lower(): n for n in names}  # W_q is W_Q mistyped, not W_V
            near = difflib.get_close_matches(unknown[0].lower(), list(lower), n=1, cutoff=0.6)
            hint = f"; did you mean {lower[near[0]]}?" if near else ""
            raise self.fail(where + unknown[0], f"unknown field{why}{hint}", "one of " + ", ".join(names))

    def number(self, value, where: str) -> Fraction:
        """One exact number (see :func:`~derive.numbers.parse_exact`), at most 1e1000 in size."""
        if isinstance(value, (list, dict)):
            raise self.fail(where, f"{_describe(value)} is not a number", NUMBER_FORMS)
        if isinstance(value, Fraction):  # a weight from a safetensors file: a finite float, exact
            return value
        key = value if type(value) is str else (type(value), value)  # (1, 1.0 and True are equal keys; texts not)
        known = self._numbers.get(key)  # (the same text again: k/256 weights repeat thousands of times)
        if known is None:
            known = self._numbers[key] = self._read_number(value, where)
        return known

    def _read_number(self, value, where: str) -> Fraction:
        """:meth:`number` for a value not read before: its size first, from a decimal's
        exponent (``1e-99999`` is too small, though its decimal places are also past the
        digits limit; ``Fraction(Decimal("1e999999999"))`` would hang), then its digits,
        both before any arithmetic on it."""
        exponent = _decimal_exponent(value)
        if exponent is None or abs(exponent) <= MAX_EXPONENT:
            digits = _digits(value)
            if digits > self.limits["digits"]:
                written = _describe(value)  # (said when short: 1e-999 is six characters and 999 digits)
                raise self.over("digits", where, (f"{written} is " if len(written) <= 16 else "")
                                + f"a number of {digits} digits written out")
            try:
                result = parse_exact(value)
            except ValueError as exc:
                raise self.fail(where, str(exc), NUMBER_FORMS) from None
            if exponent is not None or not result:
                return result
            exponent = len(str(abs(result.numerator))) - len(str(result.denominator))  # an integer or p/q
            if abs(exponent) <= MAX_EXPONENT:
                return result
        raise self.fail(where, f"{_describe(value)} is {'too large' if exponent > 0 else 'too small'}",
                        f"a number between 1e-{MAX_EXPONENT} and 1e{MAX_EXPONENT} in size, or 0")

    def count(self, n: int, where: str) -> None:
        """Count ``n`` more numbers against the ``weights`` limit, before they are read.

        Raises:
            CaseError: past the limit, naming the field that passed it."""
        self._weights += n
        if self._weights > self.limits["weights"]:
            raise self.over("weights", where, f"{self._weights:,} numbers in the case's matrices and vectors "
                                              "so far")

    def vector(self, value, where: str, length: int | None) -> Vector:
        """A list of ``length`` numbers (any length when None)."""
        if not isinstance(value, list):
            raise self.fail(where, f"{_describe(value)} is not a list", "a list of numbers")
        if length is not None and len(value) != length:
            raise self.fail(where, f"has {len(value)} entries", f"{length} numbers")
        self.count(len(value), where)
        return [self.number(v, f"{where} column {j + 1}") for j, v in enumerate(value)]

    def matrix(self, value, where: str, rows: int | None, cols: int | None) -> Matrix:
        """A rows x cols matrix (None: as many as given, the same in every row) or ``"I"``."""
        shape = (f"{rows} rows of {cols} numbers" if rows is not None and cols is not None
                 else f"{rows} rows (lists of numbers)" if rows is not None
                 else f"rows of {cols} numbers" if cols is not None else "a list of rows (lists of numbers)")
        if isinstance(value, str) and value.strip() == "I":
            if rows is None or rows != cols:
                shown = f"{rows if rows is not None else 'any'} x {cols if cols is not None else 'any'}"
                raise self.fail(where, f'"I" (identity) needs a square shape, and {where} is {shown}', shape)
            return [[Fraction(int(i == j)) for j in range(cols)] for i in range(rows)]
        if isinstance(value, weights.FileMatrix):  # a safetensors file's: finite, exact, one width
            if rows is not None and len(value) != rows:
                raise self.fail(where, f"has {len(value)} rows", shape)
            if cols is not None and value.values.shape[1] != cols:
                raise self.fail(f"{where} row 1", f"has {value.values.shape[1]} columns", f"{cols} columns")
            self.count(value.values.size, where)
            return value
        if not isinstance(value, list) or not value:
            raise self.fail(where, f"{_describe(value)} is not a matrix", shape)
        if rows is not None and len(value) != rows:
            raise self.fail(where, f"has {len(value)} rows", shape)
        self.count(sum(len(row) if isinstance(row, list) else 1 for row in value), where)
        out = []
        seen = self._numbers
        for i, row in enumerate(value):
            if type(row) is list and row and len(row) == (cols if cols is not None else len(value[0])):
                try:  # (the usual row: numbers read before, or a safetensors file's Fractions; no text made per entry)
                    out.append(list(map(seen.__getitem__, row)))
                    continue
                except (KeyError, TypeError):  # (a number not read before, or a list or a table: refused below)
                    pass
            if not isinstance(row, list):
                raise self.fail(f"{where} row {i + 1}", f"{_describe(row)} is not a list", "a list of numbers")
            if not row:
                raise self.fail(f"{where} row {i + 1}", "is empty",
                                f"{cols} numbers" if cols else "one or more numbers")
            width = cols if cols is not None else len(value[0])
            if len(row) != width:
                raise self.fail(f"{where} row {i + 1}", f"has {len(row)} columns",
                                f"{width} columns" + (", as in row 1" if cols is None else ""))
            out.append([self.number(v, f"{where} row {i + 1}, column {j + 1}") for j, v in enumerate(row)])
        return out

    def conventions(self) -> Conventions:
        """``[conventions]``: each field a registered operation declares, read by its kind
        (:class:`~derive.registry.Convention`); a field no operation declares is refused."""
        table = self.table("conventions", {})
        declared = registry.conventions()
        self.known(table, "conventions.", [c.field for c in declared])
        values = {}
        for conv in declared:
            default = "none" if conv.field == "positions" and "input" in self.data else conv.default
            values[conv.field] = self.convention(conv, table[conv.field]) if conv.field in table else default
        return Conventions(**values)

    def convention(self, conv: registry.Convention, value, table: str = "conventions."):
        """One convention's value, checked against its kind; the error names the field
        (``table`` + the field: ``conventions.mask``, ``blocks[1].projections``)."""
        where = f"{table}{conv.field}"
        if conv.kind == "choice_or_positive" and isinstance(value, str) and value in conv.options():
            return value
        if conv.kind == "choice_or_matrix" and isinstance(value, list):
            return self.zero_one(value, where)
        if conv.kind in ("choice", "choice_or_matrix"):
            options = conv.options()
            if not isinstance(value, str) and str(value) in options:  # loss_log = 2: the choice is the text "2"
                raise self.fail(where, f"{_describe(value)} is a number, not the choice \"{value}\"",
                                f'the quoted text "{value}"')
            if not isinstance(value, str) or value not in options:
                raise self.fail(where, f"unknown value {_describe(value)}", "one of " + ", ".join(options)
                                + (" or a matrix of 0 and 1" if conv.kind == "choice_or_matrix" else ""))
            return value
        if conv.kind == "bool":
            if not isinstance(value, bool):
                raise self.fail(where, _describe(value), "true or false")
            return value
        if conv.kind == "count":
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise self.fail(where, _describe(value), "an integer >= 0")
            return value
        if conv.kind == "weights":
            if value == "all":
                return None
            expected = '"all" or a list of weight names from ' + ", ".join(PARAM_NAMES)
            if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
                raise self.fail(where, _describe(value), expected)
            unknown = [t for t in value if t not in PARAM_NAMES]
            if unknown:  # (a name of no model: W_9; a weight of some model but not this one is the derivation's)
                raise self.fail(where, f"names {', '.join(unknown)}, which is no weight's name", expected)
            twice = next((t for k, t in enumerate(value) if t in value[:k]), None)
            if twice is not None:
                raise self.fail(where, f"names {twice} twice", "each weight once")
            return tuple(value)
        if conv.kind == "choice_or_positive" and (isinstance(value, str) and "/" not in value
                                                  or isinstance(value, (bool, list, dict))):
            raise self.fail(where, f"unknown value {_describe(value)}",
                            "one of " + ", ".join(conv.options()) + " or a number > 0")
        number = self.number(value, where)
        if conv.kind in ("positive", "choice_or_positive") and number <= 0:  # (the value as written: -1e999,
            raise self.fail(where, f"is {_describe(value)}", "a positive number")  # not its 1,000 digits)
        if conv.kind == "nonnegative" and number < 0:
            raise self.fail(where, f"is {_describe(value)}, which is negative", conv.expected or "a number >= 0")
        return number

    def zero_one(self, value, where: str) -> tuple[tuple[int, ...], ...]:
        """A matrix of 0 and 1 (a given mask: 1 visible, 0 hidden), as rows of ints; its
        shape is the attention's check (T x T, no row of zeros)."""
        rows = self.matrix(value, where, None, None)
        for i, row in enumerate(rows, 1):
            for j, v in enumerate(row, 1):
                if v not in (0, 1):
                    raise self.fail(f"{where} row {i}, column {j}", f"is {v}", "0 (hidden) or 1 (visible)")
        return tuple(tuple(int(v) for v in row) for row in rows)

    def pieces(self) -> list[str]:
        vocab = self.table("vocab")
        self.known(vocab, "vocab.", ["pieces"])
        pieces = self.get(vocab, "pieces", "vocab.")
        if not isinstance(pieces, list) or not pieces or not all(isinstance(p, str) and p for p in pieces):
            raise self.fail("vocab.pieces", "is not a list of non-empty strings", "a list of token pieces")
        first: dict[str, int] = {}
        for i, piece in enumerate(pieces):
            if piece in first:
                raise self.fail("vocab.pieces", f"has the piece {piece!r} twice (ids {first[piece]} and {i})",
                                "distinct pieces")
            first[piece] = i
        self.printable("vocab.pieces", pieces, "piece")
        return pieces

    def printable(self, field: str, texts: list[str], what: str) -> None:
        """Each of ``texts`` (the pieces of the vocabulary, the labels of X's rows: printed in
        every table and note) holds no control character but tab and line feed, nor a
        bidirectional override or a line separator (:data:`CONTROL`), as a title
        (:meth:`names`): an escape sequence in a piece turned the rest of a reader's page red
        and moved its tables' borders, a carriage return or a bell was dropped unsaid.

        Raises:
            CaseError: the field, the text (its id) and the character."""
        for i, text in enumerate(texts):
            control = CONTROL.search(text)
            if control is not None:
                raise self.fail(field, f"the {what} {i} ({text!r}) holds the control character "
                                f"U+{ord(control.group()):04X}", CONTROL_EXPECTED)

    def prompt(self, pieces: list[str]) -> tuple[list[int], int | None, str]:
        prompt = self.table("prompt")
        self.known(prompt, "prompt.", ["text", "ids", "target"])
        if "ids" in prompt:
            ids = prompt["ids"]
            if not isinstance(ids, list) or not ids or not all(
                    isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(pieces) for i in ids):
                raise self.fail("prompt.ids", _describe(ids),
                                f"a non-empty list of ids from 0 to {len(pieces) - 1}")
            text = "".join(pieces[i] for i in ids).replace(SPACE, " ")
            if "text" in prompt:  # (both: they must say the same)
                from .rules.tokenize import tokenize
                try:
                    cut = tokenize(prompt["text"], pieces) if isinstance(prompt["text"], str) else None
                except ValueError:
                    cut = None
                if cut != ids:
                    raise self.fail("prompt.ids", f"is {_describe(ids)} but prompt.text {_describe(prompt['text'])} "
                                    f"is {'the ids ' + _describe(cut) if cut is not None else 'no list of ids'}",
                                    "prompt.text or prompt.ids alone, or the two the same prompt")
        else:
            text = self.get(prompt, "text", "prompt.")
            if not isinstance(text, str):
                raise self.fail("prompt.text", f"{_describe(text)} is not a string",
                                "the prompt as a string of vocabulary pieces (or prompt.ids)")
            from .rules.tokenize import tokenize  # the tokenizer is a rule of the model
            try:
                ids = tokenize(text, pieces)
            except ValueError as exc:
                raise self.fail("prompt.text", str(exc), "text made of vocabulary pieces") from None
        if len(ids) > self.limits["tokens"]:
            raise self.over("tokens", "prompt.ids" if "ids" in prompt else "prompt.text", f"{len(ids):,} tokens")
        target = prompt.get("target")
        if target is not None:
            target = self.token(target, pieces, "prompt.target")
        return ids, target, text

    def token(self, value, pieces: list[str], where: str) -> int:
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(pieces):
            return value
        if isinstance(value, str) and value in pieces:
            return pieces.index(value)
        raise self.fail(where, f"{_describe(value)} is not in the vocabulary", "a piece of vocab.pieces or its id")

    def block(self, table: dict, index: int, d: int, conventions, T: int) -> Block:
        """One ``[[blocks]]`` table: its sublayers, each sublayer's weights as its registered
        operation declares them (shapes by name: d_model, d_mlp bound by the first matrix
        that has it, T the rows of the prompt), the norm of each slot (``ln1``/``ln2``, default ``conventions.norm``)
        and that norm's weights (``ln1_gain``...)."""
        where = f"blocks[{index}]."
        if not isinstance(table, dict):
            raise self.fail(f"blocks[{index}]", f"{_describe(table)} is not a table", "a [[blocks]] table")
        self.known(table, where, _block_fields())  # a misspelled field first, before any shape it would explain
        kinds = registry.names("sublayer")
        sublayers = table.get("sublayers", list(DEFAULT_SUBLAYERS))
        if not isinstance(sublayers, list) or not sublayers or not all(isinstance(s, str) for s in sublayers) \
                or not set(sublayers) <= set(kinds) or {"mlp", "layers"} <= set(sublayers):
            raise self.fail(where + "sublayers", _describe(sublayers),
                            "a list of " + ", ".join(f'"{k}"' for k in kinds) + ' ("mlp" or "layers", not both)')
        layernorm = table.get("layernorm", True)
        if not isinstance(layernorm, bool):
            raise self.fail(where + "layernorm", _describe(layernorm), "true or false")
        matrices: dict[str, Matrix] = {}
        vectors: dict[str, Vector] = {}
        norms: dict[str, str] = {}
        heads = block_layers = None
        known = {"sublayers", "layernorm", "residual"}
        dims = {"d_model": d, "T": T}
        options = {}
        for option in registry.get("block").options:  # the block's own: layout, shared_norm
            known.add(option.field)
            options[option.field] = (self.convention(option, table[option.field], where)
                                     if option.field in table else option.default)
        residual = self.residual(table.get("residual", True), where, sublayers, options["layout"])
        if options["shared_norm"] and options["layout"] != "parallel":
            raise self.fail(where + "shared_norm", f'is true but layout = "{options["layout"]}"',
                            'layout = "parallel" (GPT-J: attention and the MLP read one norm), or no shared_norm')
        for name in kinds:
            if name not in sublayers:
                continue
            op = registry.get(name)
            for option in op.options:
                known.add(option.field)
                options[option.field] = (self.convention(option, table[option.field], where)
                                         if option.field in table else option.default)
            if op.dims is not None:
                dims.update(op.dims(options, dims))
            params = [p for p in op.params if p.needs is None or options[p.needs]]
            if name == "attention" and "heads" in table:  # heads given one by one
                beside = [k for k in HEAD_FIELDS if k != "name" and k in table]
                if beside:
                    raise self.fail(where + beside[0], f"is given beside per-head weights ({where}heads)",
                                    f"{beside[0]} inside each [[blocks.heads]] table, or no [[blocks.heads]]")
                heads = self.heads(table["heads"], where + "heads", d)
                width = sum(len(h["W_V"][0]) for h in heads)
                matrices["W_O"] = self.matrix(self.get(table, "W_O", where), where + "W_O", width, d)
                params = [p for p in params if p.name == "b_O"]
                known |= {"heads", "W_O"}
            if name == "layers":  # given one by one: W_1, b_1, W_2, ...
                block_layers = self.layers(table.get("layers"), where + "layers", d, matrices, vectors)
                params = []
                known.add("layers")
            for param in params:
                known.add(param.name)
                if param.optional and param.name not in table:
                    continue
                value = self.get(table, param.name, where)
                if len(param.shape) == 1:
                    vectors[param.name] = self.vector(value, where + param.name, dims.get(param.shape[0]))
                    continue
                rows, cols = (dims.get(n) for n in param.shape)
                matrices[param.name] = self.matrix(value, where + param.name, rows, cols)
                dims.setdefault(param.shape[1], len(matrices[param.name][0]))
        shared = options["shared_norm"]
        for slot, before in NORM_SLOTS.items():
            if not set(before) & set(sublayers) and not (shared and slot == "ln1"):
                continue
            given = [k for k in [slot] + _slot_params(slot) if k in table]
            if not layernorm or (shared and slot == "ln2"):  # no such norm: its fields would be ignored
                if given:
                    raise self.fail(where + given[0], "is given but the block has " + (
                        "layernorm = false (no norms)" if not layernorm else "shared_norm = true (one norm, ln1)"),
                                    "no ln2 fields, or shared_norm = false" if layernorm else
                                    "no norm fields, or layernorm = true")
                continue
            norms[slot] = self.norm_choice(table, slot, where, conventions.norm)
            known.add(slot)
            own = {f"{slot}_{p.name}": p for p in registry.get(norms[slot]).params}
            other = [k for k in given if k != slot and k not in own]
            if other:
                raise self.fail(where + other[0], f"is not a weight of this slot's norm ({norms[slot]})",
                                "one of " + ", ".join(own) if own else "no weights")
            for key, param in own.items():
                known.add(key)
                if key in table:
                    vectors[key] = self.vector(table[key], where + key, dims.get(param.shape[0]))
        self.known(table, where, sorted(known), " (or one this block's sublayers do not use)")
        return Block(matrices, vectors, heads, tuple(sublayers), layernorm, norms, residual, options, block_layers)

    def residual(self, value, where: str, sublayers: list[str], layout: str) -> tuple[str, ...]:
        """``residual``: true (every sublayer adds its output to the stream), false (none:
        each output replaces the stream) or a list of the block's sublayers that do; a
        parallel block adds both outputs to x at once, so it takes true or false only."""
        if isinstance(value, bool):
            return tuple(sublayers) if value else ()
        if layout == "parallel" or not isinstance(value, list) or not all(isinstance(v, str) for v in value) \
                or not set(value) <= set(sublayers):
            raise self.fail(where + "residual", _describe(value), "true or false" + (
                " (a parallel block adds both outputs to x at once)" if layout == "parallel" else
                ", or a list of the block's sublayers that add their output: " + ", ".join(
                    f'"{s}"' for s in sublayers)))
        return tuple(s for s in sublayers if s in value)

    def layers(self, value, where: str, d: int, matrices: dict, vectors: dict) -> list[dict]:
        """``[[blocks.layers]]``: each layer's ``W`` (the previous width x its own: d_model
        rows for the first, d_model columns for the last), optional ``b`` and
        ``activation`` (a registered activation or "none"), stored as W_l and b_l in
        ``matrices`` and ``vectors``; returns each layer's ``{"activation": ...}``."""
        if not isinstance(value, list) or not value or not all(isinstance(t, dict) for t in value):
            raise self.fail(where, _describe(value) if value is not None else "missing",
                            "one or more [[blocks.layers]] tables with W, b, activation")
        choices = ["none"] + list(registry.names("activation"))
        out, width = [], d
        for l, table in enumerate(value, 1):
            at = f"{where}[{l}]."
            self.known(table, at, ["W", "b", "activation"])
            last = l == len(value)
            W = self.matrix(self.get(table, "W", at), at + "W", width, d if last else None)
            matrices[f"W_{l}"], width = W, len(W[0])
            if "b" in table:
                vectors[f"b_{l}"] = self.vector(table["b"], at + "b", width)
            activation = table.get("activation", "none")
            if activation not in choices:
                raise self.fail(at + "activation", f"unknown value {_describe(activation)}",
                                "one of " + ", ".join(choices))
            out.append({"activation": activation})
        return out

    def norm_choice(self, table: dict, key: str, where: str, default: str) -> str:
        """The norm a slot uses: ``table[key]``, one of the registered norms, else ``default``."""
        value = table.get(key, default)
        options = registry.names("norm")
        if not isinstance(value, str) or value not in options:
            raise self.fail(where + key, f"unknown norm {_describe(value)}", "one of " + ", ".join(options))
        return value

    def heads(self, value, where: str, d: int) -> list[dict]:
        """Heads given one by one: W_Q, W_K (d x d_k), W_V (d x d_v), optional biases, name."""
        if not isinstance(value, list) or not value:
            raise self.fail(where, _describe(value), "one or more [[blocks.heads]] tables")
        out = []
        for k, table in enumerate(value, 1):
            at = f"{where}[{k}]."
            if not isinstance(table, dict):
                raise self.fail(f"{where}[{k}]", _describe(table), "a table with W_Q, W_K, W_V")
            if "name" in table and not isinstance(table["name"], str):
                raise self.fail(at + "name", f"{_describe(table['name'])} is not a string", "the head's name in quotes")
            head = {"name": table["name"]} if "name" in table else {}
            head["W_Q"] = self.matrix(self.get(table, "W_Q", at, fields=HEAD_FIELDS), at + "W_Q", d, None)
            d_k = len(head["W_Q"][0])
            head["W_K"] = self.matrix(self.get(table, "W_K", at, fields=HEAD_FIELDS), at + "W_K", d, d_k)
            head["W_V"] = self.matrix(self.get(table, "W_V", at, fields=HEAD_FIELDS), at + "W_V", d, None)
            d_v = len(head["W_V"][0])
            for name, width in (("b_Q", d_k), ("b_K", d_k), ("b_V", d_v)):
                if name in table:
                    head[name] = self.vector(table[name], at + name, width)
            unknown = sorted(set(table) - set(HEAD_FIELDS))
            if unknown:
                raise self.fail(at + unknown[0], "unknown field", "W_Q, W_K, W_V, b_Q, b_K, b_V or name")
            out.append(head)
        return out

    def given_input(self, d: int) -> tuple[Matrix, list[str]]:
        """``[input]``: X (T x d_model) and optional row labels."""
        table = self.table("input")
        self.known(table, "input.", ["X", "labels"])
        X = self.matrix(self.get(table, "X", "input."), "input.X", None, d)
        labels = table.get("labels", [str(t + 1) for t in range(len(X))])
        if not isinstance(labels, list) or len(labels) != len(X) or not all(isinstance(x, str) for x in labels):
            raise self.fail("input.labels", _describe(labels), f"{len(X)} strings, one per row of X")
        self.printable("input.labels", labels, "label")
        return X, labels

    def case(self) -> Case:
        """The whole case; a top-level field no part reads is refused last (the missing
        table it stands for, ``[modle]`` for ``[model]``, is named first)."""
        try:
            case = self._case()
        except CaseError as exc:  # a misspelled table ([inptu] for [input]) is the likelier cause
            typos = [key for key in self.data if key not in TOP_LEVEL and key not in str(exc)
                     and difflib.get_close_matches(key.lower(), TOP_LEVEL, n=1, cutoff=0.6)]
            if typos:
                self.known({typos[0]: None}, "", TOP_LEVEL)
            raise
        self.known(self.data, "", TOP_LEVEL)
        return case

    def names(self) -> None:
        """The top-level ``name``, ``title`` and ``source``, when given, are strings with no
        control character but tab and line feed (each is printed as it is, at the head of
        the page and of the terminal: an escape sequence in a title cleared a reader's
        screen; a prompt of several lines, a title ``derive import`` writes, stays one)."""
        for key in ("name", "title", "source"):
            if key in self.data and not isinstance(self.data[key], str):
                raise self.fail(key, f"{_describe(self.data[key])} is not a string", "a string")
            control = CONTROL.search(self.data.get(key, ""))
            if control is not None:
                raise self.fail(key, f"holds the control character U+{ord(control.group()):04X}", CONTROL_EXPECTED)

    def given_logits(self) -> Case:
        """A case that starts from logits: ``[input] logits`` (one per piece of
        ``[vocab] pieces``, or pieces named 1, 2, ... when there is no vocabulary), an
        optional ``[prompt] target`` and the conventions; no model, no blocks."""
        self.known(self.data, "", ("name", "title", "source", "vocab", "prompt", "input", "conventions"),
                   " (a case that starts from logits has no model and no blocks)")
        table = self.table("input")
        self.known(table, "input.", ["logits"], " (with logits)")
        logits = self.get(table, "logits", "input.")
        if not isinstance(logits, list) or not logits:
            raise self.fail("input.logits", f"{_describe(logits)} is not a list of numbers", "one number per token")
        pieces = self.pieces() if "vocab" in self.data else [str(c + 1) for c in range(len(logits))]
        logits = self.vector(logits, "input.logits", len(pieces))
        target = None
        if "prompt" in self.data:
            prompt = self.table("prompt")
            self.known(prompt, "prompt.", ["target"], " (a case that starts from logits has no prompt text)")
            if "target" in prompt:
                target = self.token(prompt["target"], pieces, "prompt.target")
        self.names()
        return self.checked(Case(name=self.data.get("name", Path(self.path).stem),
                                 title=self.data.get("title", "the softmax of given logits"), path=self.path,
                                 pieces=pieces, ids=[], target=target, d_model=len(pieces), heads=1, E=[], P=[],
                                 blocks=[], W_U=None, conventions=self.conventions(), labels=["z"],
                                 logits=logits))

    def given_qkv(self) -> Case:
        """An attention exercise that starts from ``[input] Q, K, V`` (T rows each; Q and K
        of one width, V of any, each divisible by ``heads``, default 1), optional
        ``labels`` (the rows' names) and the conventions (mask, score_scale); no model."""
        self.known(self.data, "", ("name", "title", "source", "input", "conventions"),
                   " (an exercise that starts from Q, K, V has no vocabulary, prompt, model or blocks)")
        table = self.table("input")
        self.known(table, "input.", ["Q", "K", "V", "labels", "heads"], " (with Q, K, V)")
        heads = table.get("heads", 1)
        if not isinstance(heads, int) or isinstance(heads, bool) or heads < 1:
            raise self.fail("input.heads", f"{_describe(heads)} is not a positive integer", "a positive integer")
        qkv = {"Q": self.matrix(self.get(table, "Q", "input."), "input.Q", None, None)}
        T, d = len(qkv["Q"]), len(qkv["Q"][0])
        K = self.matrix(self.get(table, "K", "input."), "input.K", T, None)
        if len(K[0]) != d:  # a query and a key are multiplied: one width (either may be the mistyped one)
            raise self.fail("input.K", f"has {len(K[0])} columns but input.Q has {d}",
                            "Q and K of the same width d_k (V may differ)")
        qkv["K"] = K
        qkv["V"] = self.matrix(self.get(table, "V", "input."), "input.V", T, None)
        for name, rows in qkv.items():
            if len(rows[0]) % heads:
                raise self.fail(f"input.{name}", f"has {len(rows[0])} columns, not divisible by heads = {heads}",
                                f"a multiple of {heads} columns (each head reads its own equal share)")
        labels = table.get("labels", [str(t + 1) for t in range(T)])
        if not isinstance(labels, list) or len(labels) != T or not all(isinstance(x, str) for x in labels):
            raise self.fail("input.labels", _describe(labels), f"{T} strings, one per row of Q")
        self.names()
        block = Block({}, sublayers=("attention",), layernorm=False, residual=(), options={"projections": False})
        conventions = self.conventions()
        return self.checked(Case(name=self.data.get("name", Path(self.path).stem),
                                 title=self.data.get("title", "attention from given Q, K, V"), path=self.path,
                                 pieces=[], ids=[], target=None, d_model=d, heads=heads, E=[], P=[],
                                 blocks=[block], W_U=None, conventions=conventions, labels=labels, qkv=qkv))

    def _case(self) -> Case:
        given = "input" in self.data
        if given and isinstance(self.data["input"], dict) and "logits" in self.data["input"]:
            return self.given_logits()
        if given and isinstance(self.data["input"], dict) and {"Q", "K", "V"} & set(self.data["input"]):
            return self.given_qkv()
        pieces = self.pieces() if not given or "vocab" in self.data else []
        ids, target, text = self.prompt(pieces) if not given else ([], None, "")
        self.names()
        model = self.table("model")
        self.known(model, "model.", MODEL_FIELDS)
        d = self.get(model, "d_model", "model.")
        if not isinstance(d, int) or isinstance(d, bool) or d < 1:
            raise self.fail("model.d_model", f"{_describe(d)} is not a positive integer", "a positive integer")
        # the tables whose width d_model is first (before a block's "I" is built d_model x d_model)
        E = self.matrix(self.get(model, "E", "model."), "model.E", len(pieces), d) if pieces else []
        X, labels = self.given_input(d) if given else (None, None)
        blocks = self.get(self.data, "blocks", "")
        if isinstance(blocks, dict):
            raise self.fail("blocks", "is a single table [blocks]", "one or more [[blocks]] tables (double brackets)")
        if not isinstance(blocks, list) or not blocks:
            raise self.fail("blocks", f"{_describe(blocks)} has no block", "one or more [[blocks]] tables")
        conventions = self.conventions()
        T = len(X) if given else len(ids)
        blocks = [self.block(b, i + 1, d, conventions, T) for i, b in enumerate(blocks)]
        split = any(b.heads is None and "attention" in b.sublayers for b in blocks)
        heads = self.get(model, "heads", "model.") if split else model.get("heads", 1)
        if not isinstance(heads, int) or isinstance(heads, bool) or heads < 1:
            raise self.fail("model.heads", f"{_describe(heads)} is not a positive integer",
                            "a positive integer that divides d_model")
        if d % heads:
            raise self.fail("model.heads", f"d_model = {d} is not divisible by heads = {heads}",
                            "a number of heads that divides d_model")
        one_by_one = [(b, len(block.heads)) for b, block in enumerate(blocks, 1) if block.heads is not None]
        if one_by_one and not split and "heads" in model and all(n != heads for _, n in one_by_one):
            # (a model whose heads are all given one by one: model.heads, when given, is some block's count)
            b, n = one_by_one[0]
            raise self.fail(f"blocks[{b}].heads", f"has {n} heads but model.heads = {heads}",
                            f"{heads} [[blocks.heads]] tables, or model.heads = {n}")
        rows = len(X) if given else len(ids)
        if conventions.positions == "learned":
            P = self.matrix(self.get(model, "P", "model."), "model.P", None, d)
        else:
            P = []
        if conventions.positions == "learned" and len(P) < rows:
            raise self.fail("model.P", f"has {len(P)} rows but the prompt has {rows} tokens",
                            f"at least {rows} rows")
        context_length = self.context_length(model, rows, len(P) if conventions.positions == "learned" else None)
        W_U = self.get(model, "W_U", "model.") if pieces else "tied"
        W_U = None if W_U == "tied" else self.matrix(W_U, "model.W_U", d, len(pieces))
        final_norm = self.norm_choice(model, FINAL_SLOT, "model.", conventions.norm)
        unused = [k for k in [FINAL_SLOT] + list(FINAL_VECTORS) if k in model]
        if unused and not conventions.final_layernorm:
            raise self.fail(f"model.{unused[0]}", "is given but conventions.final_layernorm = false (no final norm)",
                            "no final norm fields, or final_layernorm = true")
        allowed = [f"{FINAL_SLOT}_{p.name}" for p in registry.get(final_norm).params]
        unused = sorted(set(FINAL_VECTORS) & set(model) - set(allowed))
        if unused:
            raise self.fail(f"model.{unused[0]}", f"is not a weight of the final norm ({final_norm})",
                            "one of " + ", ".join(allowed) if allowed else "no weights")
        final_vectors = {name: self.vector(model[name], f"model.{name}", d) for name in allowed if name in model}
        case = Case(
            name=self.data.get("name", Path(self.path).stem),
            title=self.data.get("title", text or "from the given vectors X"),
            path=self.path, pieces=pieces, ids=ids, target=target, d_model=d, heads=heads,
            E=E, P=P, blocks=blocks,
            W_U=W_U, conventions=conventions, final_vectors=final_vectors, X=X, labels=labels,
            context_length=context_length, final_norm=final_norm,
            text=text if not given and "ids" not in self.data["prompt"] else None,
        )
        return self.checked(case)

    def checked(self, case: Case) -> Case:
        """``case``, once the checks the registered operations need of a whole case pass."""
        for op in registry.operations():
            problem = op.check(case) if op.check is not None else None
            if problem is not None:
                raise self.fail(*problem)
        return case

    def context_length(self, model: dict, rows: int, p_rows: int | None) -> int | None:
        """``model.context_length``: an integer at least the prompt's length and at least
        the rows of a learned P; None when absent."""
        if "context_length" not in model:
            return None
        value = model["context_length"]
        if not isinstance(value, int) or isinstance(value, bool) or value < max(rows, 1):
            raise self.fail("model.context_length", _describe(value),
                            f"an integer >= {max(rows, 1)} (the prompt's length)")
        if value > self.limits["context_length"]:
            raise self.over("context_length", "model.context_length", f"{_describe(value)} positions")
        if p_rows is not None and p_rows > value:
            raise self.fail("model.P", f"has {p_rows} rows but model.context_length = {value}",
                            f"at most {value} rows")
        return value
