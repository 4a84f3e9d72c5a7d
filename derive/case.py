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

import tomllib
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from importlib import resources
from pathlib import Path

from .errors import CaseError
from .numbers import NUMBER_FORMS, parse_exact

Matrix = list[list[Fraction]]
Vector = list[Fraction]

ACTIVATIONS = ("gelu_tanh", "gelu_erf", "relu")
MASKS = ("causal", "none", "causal_after_softmax")
VARIANCES = ("n", "n-1")
EPS_PLACEMENTS = ("inside", "sigma")
SCORE_SCALES = ("d_k", "d_model")
LOSS_LOGS = ("e", "2")
POSITIONS = ("learned", "sinusoidal", "none")
SINUSOID_LAYOUTS = ("interleaved", "concatenated")
SPACE = "\u2423"  # ␣, a leading space in a vocabulary piece

BLOCK_MATRICES = ("W_Q", "W_K", "W_V", "W_O", "W_1", "W_2")
BLOCK_VECTORS = ("b_Q", "b_K", "b_V", "b_O", "b_1", "b_2",
                 "ln1_gain", "ln1_bias", "ln2_gain", "ln2_bias")
PARAM_NAMES = ("E", "P", "W_U", "lnf_gain", "lnf_bias") + BLOCK_MATRICES + BLOCK_VECTORS


@dataclass
class Conventions:
    """The switches that change printed digits, each explicit (DESIGN.md, "Conventions").

    Attributes:
        layernorm_eps: eps inside the square root, ``(x - mu) / sqrt(var + eps)``; default 1e-5.
        activation: ``gelu_tanh`` (GPT-2's gelu_new, the default), ``gelu_erf`` or ``relu``.
        mask: ``causal`` (scores j > i set to -inf before the softmax, default), ``none``, or
            ``causal_after_softmax`` (a slip: the softmax over every j, then weights j > i
            set to 0 without renormalising).
        layernorm_variance: ``n`` (biased, divide by d: the default, as in PyTorch) or ``n-1``.
        layernorm_eps_placement: ``inside`` the square root (default) or added to ``sigma``.
        score_scale: scores divided by sqrt(``d_k``) (default) or sqrt(``d_model``).
        loss_log: ``e`` (nats, default) or ``2`` (bits).
        positions: ``learned`` (a table P, the default), ``sinusoidal`` (Vaswani et al. 2017,
            section 3.5: PE[pos, 2i] = sin(pos w_i), PE[pos, 2i+1] = cos(pos w_i),
            w_i = 1 / base^(2i/d)) or ``none``.
        sinusoid_layout: ``interleaved`` (sin, cos per pair, as in the 2017 paper; default)
            or ``concatenated`` (all sines, then all cosines).
        sinusoid_base: the base, 10000 by default. first_position: the pos of the first
            token in the sinusoids, 0 by default (seed 004: PE[0] = 0, 1, 0, 1, ...).
        temperature: T > 0 dividing the logits; default 1. T = 0 is greedy decoding: p is 1
            for the argmax of the logits (a tie goes to the lowest id) and 0 elsewhere, so
            there is no loss and no training step.
        learning_rate: eta of the SGD step ``theta <- theta - eta dL/dtheta``; default 0.1.
        final_layernorm: whether a LayerNorm comes before W_U; default true.
        trained: the weights the SGD step moves, by name (``E``, ``P``, ``W_Q``, ...), or
            None for every weight (the default). The seed 000 trains only E.
    """

    layernorm_eps: Fraction = Fraction(1, 100000)
    activation: str = "gelu_tanh"
    mask: str = "causal"
    temperature: Fraction = Fraction(1)
    learning_rate: Fraction = Fraction(1, 10)
    final_layernorm: bool = True
    trained: tuple[str, ...] | None = None
    layernorm_variance: str = "n"
    layernorm_eps_placement: str = "inside"
    score_scale: str = "d_k"
    loss_log: str = "e"
    positions: str = "learned"
    sinusoid_layout: str = "interleaved"
    sinusoid_base: Fraction = Fraction(10000)
    first_position: int = 0


@dataclass
class Block:
    """One pre-norm transformer block's weights (GPT-2 layout).

    ``matrices`` holds W_Q, W_K, W_V, W_O (d_model x d_model), W_1 (d_model x d_mlp),
    W_2 (d_mlp x d_model); ``vectors`` holds the optional biases and LayerNorm gains and
    biases that the case gives (absent means none: bias 0, gain 1).
    """

    matrices: dict[str, Matrix]
    vectors: dict[str, Vector] = field(default_factory=dict)

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

    @property
    def d_k(self) -> int:
        """Width of one head, d_model / heads."""
        return self.d_model // self.heads

    @property
    def tokens(self) -> list[str]:
        """The prompt's pieces, in order."""
        return [self.pieces[i] for i in self.ids]


def bundled_cases() -> dict[str, Path]:
    """The case files shipped with derive, by name (file stem)."""
    folder = resources.files("derive.cases")
    return {Path(p.name).stem: Path(str(p)) for p in folder.iterdir() if p.name.endswith(".toml")}


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
    raise CaseError(f"no such case file or bundled case {name_or_path!r}",
                    expected="a path to a .toml file or one of: " + ", ".join(sorted(cases)))


def load_case(name_or_path: str) -> Case:
    """Load and validate a case (see ``docs/case-format.md``).

    Raises:
        CaseError: malformed TOML, a missing field, a value that is not an exact number,
            a shape mismatch, a token not in the vocabulary, d_model not divisible by heads,
            or an unknown convention; the message names the file and the field.
    """
    path = resolve(name_or_path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"), parse_float=Decimal)
    except tomllib.TOMLDecodeError as exc:
        raise CaseError(f"malformed TOML: {exc}", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseError(f"cannot read: {exc}", file=str(path)) from None
    return _Reader(str(path), data).case()


class _Reader:
    """Reads one parsed TOML document into a :class:`Case`, naming fields in errors."""

    def __init__(self, path: str, data: dict):
        self.path = path
        self.data = data

    def fail(self, field_name: str, message: str, expected: str | None = None) -> CaseError:
        return CaseError(message, file=self.path, field=field_name, expected=expected)

    def get(self, table: dict, key: str, where: str, default=KeyError):
        if key in table:
            return table[key]
        if default is KeyError:
            raise self.fail(f"{where}{key}", "missing field")
        return default

    def number(self, value, where: str) -> Fraction:
        try:
            return parse_exact(value)
        except ValueError as exc:
            raise self.fail(where, str(exc), NUMBER_FORMS) from None

    def vector(self, value, where: str, length: int | None) -> Vector:
        if not isinstance(value, list):
            raise self.fail(where, f"{value!r} is not a list", "a list of numbers")
        if length is not None and len(value) != length:
            raise self.fail(where, f"has {len(value)} entries", f"{length}")
        return [self.number(v, f"{where} column {j + 1}") for j, v in enumerate(value)]

    def matrix(self, value, where: str, rows: int | None, cols: int | None) -> Matrix:
        if isinstance(value, str) and value.strip() == "I":
            if rows is None or rows != cols:
                raise self.fail(where, '"I" (identity) needs a square shape', f"{rows} x {cols} numbers")
            return [[Fraction(int(i == j)) for j in range(cols)] for i in range(rows)]
        if not isinstance(value, list) or not value:
            raise self.fail(where, f"{value!r} is not a matrix", "a list of rows (lists of numbers)")
        if rows is not None and len(value) != rows:
            raise self.fail(where, f"has {len(value)} rows", f"{rows} rows of {cols} numbers")
        out = []
        for i, row in enumerate(value):
            if not isinstance(row, list):
                raise self.fail(f"{where} row {i + 1}", f"{row!r} is not a list", "a list of numbers")
            width = cols if cols is not None else len(value[0])
            if len(row) != width:
                raise self.fail(f"{where} row {i + 1}", f"has {len(row)} columns", f"{width}")
            out.append([self.number(v, f"{where} row {i + 1}, column {j + 1}") for j, v in enumerate(row)])
        return out

    def choice(self, table: dict, key: str, options: tuple[str, ...], default: str) -> str:
        value = table.get(key, default)
        if value not in options:
            raise self.fail(f"conventions.{key}", f"unknown value {value!r}", "one of " + ", ".join(options))
        return value

    def conventions(self) -> Conventions:
        table = self.data.get("conventions", {})
        base = Conventions()
        eps = self.number(table.get("layernorm_eps", "1e-5"), "conventions.layernorm_eps")
        temperature = self.number(table.get("temperature", 1), "conventions.temperature")
        if eps < 0:
            raise self.fail("conventions.layernorm_eps", f"is negative ({eps})", "eps >= 0")
        if temperature < 0:
            raise self.fail("conventions.temperature", f"is {temperature}", "a temperature T >= 0 (0 is greedy)")
        final = table.get("final_layernorm", base.final_layernorm)
        if not isinstance(final, bool):
            raise self.fail("conventions.final_layernorm", f"{final!r}", "true or false")
        trained = table.get("trained", "all")
        if trained == "all":
            trained = None
        elif not isinstance(trained, list) or not all(isinstance(t, str) and t in PARAM_NAMES for t in trained):
            raise self.fail("conventions.trained", f"{trained!r}",
                            '"all" or a list of weight names from ' + ", ".join(PARAM_NAMES))
        else:
            trained = tuple(trained)
        return Conventions(
            trained=trained,
            layernorm_eps=eps,
            activation=self.choice(table, "activation", ACTIVATIONS, base.activation),
            mask=self.choice(table, "mask", MASKS, base.mask),
            layernorm_variance=self.choice(table, "layernorm_variance", VARIANCES, base.layernorm_variance),
            layernorm_eps_placement=self.choice(table, "layernorm_eps_placement", EPS_PLACEMENTS,
                                                base.layernorm_eps_placement),
            score_scale=self.choice(table, "score_scale", SCORE_SCALES, base.score_scale),
            loss_log=self.choice(table, "loss_log", LOSS_LOGS, base.loss_log),
            positions=self.choice(table, "positions", POSITIONS, base.positions),
            sinusoid_layout=self.choice(table, "sinusoid_layout", SINUSOID_LAYOUTS, base.sinusoid_layout),
            sinusoid_base=self.positive(table, "sinusoid_base", base.sinusoid_base),
            first_position=self.count(table, "first_position", base.first_position),
            temperature=temperature,
            learning_rate=self.number(table.get("learning_rate", "0.1"), "conventions.learning_rate"),
            final_layernorm=final,
        )

    def positive(self, table: dict, key: str, default: Fraction) -> Fraction:
        value = self.number(table.get(key, default.numerator if default.denominator == 1 else str(default)),
                            f"conventions.{key}")
        if value <= 0:
            raise self.fail(f"conventions.{key}", f"is {value}", "a positive number")
        return value

    def count(self, table: dict, key: str, default: int) -> int:
        value = table.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise self.fail(f"conventions.{key}", f"{value!r}", "an integer >= 0")
        return value

    def pieces(self) -> list[str]:
        vocab = self.get(self.data, "vocab", "")
        pieces = self.get(vocab, "pieces", "vocab.")
        if not isinstance(pieces, list) or not pieces or not all(isinstance(p, str) and p for p in pieces):
            raise self.fail("vocab.pieces", "is not a list of non-empty strings", "a list of token pieces")
        if len(set(pieces)) != len(pieces):
            raise self.fail("vocab.pieces", "has a repeated piece", "distinct pieces")
        return pieces

    def prompt(self, pieces: list[str]) -> tuple[list[int], int | None, str]:
        prompt = self.get(self.data, "prompt", "")
        if "ids" in prompt:
            ids = prompt["ids"]
            if not isinstance(ids, list) or not ids or not all(
                    isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(pieces) for i in ids):
                raise self.fail("prompt.ids", f"{ids!r}", f"a non-empty list of ids from 0 to {len(pieces) - 1}")
            text = "".join(pieces[i] for i in ids).replace(SPACE, " ")
        else:
            text = self.get(prompt, "text", "prompt.")
            from .rules.tokenize import tokenize  # the tokenizer is a rule of the model
            try:
                ids = tokenize(text, pieces)
            except ValueError as exc:
                raise self.fail("prompt.text", str(exc), "text made of vocabulary pieces") from None
        target = prompt.get("target")
        if target is not None:
            target = self.token(target, pieces, "prompt.target")
        return ids, target, text

    def token(self, value, pieces: list[str], where: str) -> int:
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(pieces):
            return value
        if isinstance(value, str) and value in pieces:
            return pieces.index(value)
        raise self.fail(where, f"{value!r} is not in the vocabulary", "a piece of vocab.pieces or its id")

    def block(self, table: dict, index: int, d: int) -> Block:
        where = f"blocks[{index}]."
        if "W_1" not in table:
            raise self.fail(f"{where}W_1", "missing field")
        d_mlp = len(table["W_1"][0]) if isinstance(table["W_1"], list) and table["W_1"] \
            and isinstance(table["W_1"][0], list) else None
        shapes = {"W_Q": (d, d), "W_K": (d, d), "W_V": (d, d), "W_O": (d, d),
                  "W_1": (d, d_mlp), "W_2": (d_mlp, d)}
        matrices = {name: self.matrix(self.get(table, name, where), where + name, *shape)
                    for name, shape in shapes.items()}
        lengths = {"b_1": d_mlp}
        vectors = {name: self.vector(table[name], where + name, lengths.get(name, d))
                   for name in BLOCK_VECTORS if name in table}
        unknown = sorted(set(table) - set(shapes) - set(BLOCK_VECTORS))
        if unknown:
            raise self.fail(where + unknown[0], "unknown field",
                            "one of " + ", ".join(BLOCK_MATRICES + BLOCK_VECTORS))
        return Block(matrices, vectors)

    def case(self) -> Case:
        pieces = self.pieces()
        ids, target, text = self.prompt(pieces)
        model = self.get(self.data, "model", "")
        d = self.get(model, "d_model", "model.")
        heads = self.get(model, "heads", "model.")
        for name, value in (("d_model", d), ("heads", heads)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise self.fail(f"model.{name}", f"{value!r}", "a positive integer")
        if d % heads:
            raise self.fail("model.heads", f"d_model = {d} is not divisible by heads = {heads}",
                            "a number of heads that divides d_model")
        E = self.matrix(self.get(model, "E", "model."), "model.E", len(pieces), d)
        conventions = self.conventions()
        if conventions.positions == "learned":
            P = self.matrix(self.get(model, "P", "model."), "model.P", None, d)
        else:
            P = []
            if conventions.positions == "sinusoidal" and d % 2:
                raise self.fail("conventions.positions", f"sinusoids need an even d_model, not {d}",
                                "an even d_model, or positions = \"learned\"")
        if conventions.positions == "learned" and len(P) < len(ids):
            raise self.fail("model.P", f"has {len(P)} rows but the prompt has {len(ids)} tokens",
                            f"at least {len(ids)} rows")
        W_U = self.get(model, "W_U", "model.")
        W_U = None if W_U == "tied" else self.matrix(W_U, "model.W_U", d, len(pieces))
        final_vectors = {name: self.vector(model[name], f"model.{name}", d)
                         for name in ("lnf_gain", "lnf_bias") if name in model}
        blocks = self.get(self.data, "blocks", "")
        if not isinstance(blocks, list) or not blocks:
            raise self.fail("blocks", "has no block", "one or more [[blocks]] tables")
        return Case(
            name=str(self.data.get("name", Path(self.path).stem)),
            title=str(self.data.get("title", text)),
            path=self.path, pieces=pieces, ids=ids, target=target, d_model=d, heads=heads,
            E=E, P=P, blocks=[self.block(b, i + 1, d) for i, b in enumerate(blocks)],
            W_U=W_U, conventions=conventions, final_vectors=final_vectors,
        )
