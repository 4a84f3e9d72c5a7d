"""Where the weights are: the parameter count of a case, beside GPT-2 small's.

The table of the seed 000 ("Where the weights are"): one row per piece of the model, its
shape, the case's count and GPT-2 small's, then the total. As in the seed, the total
counts the weight matrices only; biases and LayerNorm gains and biases get a line of
their own, and a last line adds everything (the seed 003's "172 parameters" is that line
for its model, whose MLP has biases).

    E: V x d     P: positions x d (0 for sinusoids: nothing is learned)
    W_Q, W_K, W_V: 3 x (d x d) per block (or d x d_h per head, heads given one by one)
    W_O: d x d per block ((sum of the heads' d_v) x d)
    W_1, W_2: d x width and width x d per block     W_U: d x V, or tied to E (no weights)

GPT-2 small's figures are computed from its configuration (Radford et al. 2019; the
Hugging Face ``gpt2`` config: V = 50257, d = 768, 1024 positions, 12 blocks, 12 heads,
MLP width 4 d = 3072, W_U tied to E) and printed as the seed prints them (38.6 million,
786 thousand, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from .case import Case
from .rounding import round_fraction_to_int


@dataclass
class BlockShape:
    """The shapes of one block's weights.

    Attributes:
        heads: per head (d_q, d_v): W_Q and W_K are d x d_q, W_V is d x d_v; empty for a
            block without attention. W_O is (sum d_v) x d.
        mlp_width: the MLP's hidden width (W_1 d x width, W_2 width x d), None without MLP.
        biases: the lengths of the bias vectors the block has (b_Q, b_K, b_V, b_O, b_1, b_2).
        norms: the lengths of its LayerNorm gains and biases (ln1_gain, ..., ln2_bias).
        layers: for a stack of linear layers, the shape (rows, columns) of each W_l.
    """

    heads: list[tuple[int, int]]
    mlp_width: int | None
    biases: dict[str, int] = field(default_factory=dict)
    norms: dict[str, int] = field(default_factory=dict)
    layers: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class ModelShape:
    """The shapes that decide a model's parameter count.

    Attributes:
        vocab: V (0 for a case that starts from given vectors, without E).
        d_model: d. positions: rows of a learned P (0 when the positions are not learned).
        positions_kind: learned, sinusoidal or none. tied: W_U = E^T (no weights of its own).
        blocks: one :class:`BlockShape` per block. final_norm: lengths of the final
            LayerNorm's gain and bias, when it has them.
        note_positions: how the case's P row count was decided (for the table's notes).
    """

    vocab: int
    d_model: int
    positions: int
    positions_kind: str
    tied: bool
    blocks: list[BlockShape]
    final_norm: dict[str, int] = field(default_factory=dict)
    note_positions: str = ""


def gpt2_small() -> ModelShape:
    """GPT-2 small (124M) from its configuration: V = 50257, d = 768, 1024 positions,
    12 blocks of 12 heads (d_k = 64), MLP width 3072, biases on every linear map, two
    LayerNorms per block and a final one (gain and bias each), W_U tied to E."""
    V, d, n_ctx, n_layer, n_head, width = 50257, 768, 1024, 12, 12, 3072
    block = BlockShape(heads=[(d // n_head, d // n_head)] * n_head, mlp_width=width,
                       biases={"b_Q": d, "b_K": d, "b_V": d, "b_O": d, "b_1": width, "b_2": d},
                       norms={"ln1_gain": d, "ln1_bias": d, "ln2_gain": d, "ln2_bias": d})
    return ModelShape(V, d, n_ctx, "learned", True, [block] * n_layer, {"lnf_gain": d, "lnf_bias": d})


def case_shape(case: Case) -> ModelShape:
    """The shapes of a case's weights (see :class:`ModelShape`). A learned P counts
    ``model.context_length`` rows when the case states it, else the rows it gives."""
    d = case.d_model
    blocks = []
    for block in case.blocks:
        heads: list[tuple[int, int]] = []
        if "attention" in block.sublayers and block.options.get("projections", True):  # false: no W_Q ... W_O
            if block.heads is None:
                heads = [(case.d_k, case.d_k)] * case.heads
            else:
                heads = [(len(h["W_Q"][0]), len(h["W_V"][0])) for h in block.heads]
        biases = {name: len(v) for name, v in block.vectors.items() if name.startswith("b_")}
        for h in block.heads or []:
            for name in ("b_Q", "b_K", "b_V"):
                if name in h:
                    biases[name] = biases.get(name, 0) + len(h[name])
        norms = {name: len(v) for name, v in block.vectors.items() if name.startswith("ln")}
        stack = [(len(block.matrices[f"W_{l}"]), len(block.matrices[f"W_{l}"][0]))
                 for l in range(1, len(block.layers or []) + 1)]
        blocks.append(BlockShape(heads, block.d_mlp if "mlp" in block.sublayers else None, biases, norms, stack))
    kind = case.conventions.positions
    if kind == "learned" and case.context_length is not None:
        rows, note = case.context_length, (f"P: model.context_length = {case.context_length} rows "
                                           f"(the case gives {len(case.P)}, the prompt uses {len(case.ids or case.X)}).")
    elif kind == "learned":
        rows, note = len(case.P), (f"P: the {len(case.P)} rows the case gives (set model.context_length "
                                   "for the model's whole table).")
    else:
        rows, note = 0, ("P: sinusoids, computed, not learned: 0 weights." if kind == "sinusoidal"
                         else "P: no position table: 0 weights.")
    vocab = len(case.pieces) if case.E else 0
    return ModelShape(vocab, d, rows, kind, case.W_U is None, blocks,
                      {name: len(v) for name, v in case.final_vectors.items()}, note)


@dataclass
class Count:
    """One row of the table: ``piece``, ``shape`` (in the seed's letters), ``count`` and
    ``formula`` (how the count is made, e.g. ``12 x 4 = 48``); ``tied`` for W_U = E^T."""

    piece: str
    shape: str
    count: int
    formula: str
    tied: bool = False


def counts(model: ModelShape) -> list[Count]:
    """The rows of the seed 000's table for ``model``: E, P, W_Q/W_K/W_V, W_O, W_1/W_2,
    W_U and the total (weight matrices only), then biases with LayerNorm gains and
    biases, then every parameter."""
    d, V = model.d_model, model.vocab
    split = all(len(set(b.heads)) <= 1 and sum(dv for _, dv in b.heads) in (0, d) for b in model.blocks)
    qkv = [d * (2 * sum(dq for dq, _ in b.heads) + sum(dv for _, dv in b.heads)) for b in model.blocks]
    out = [d * sum(dv for _, dv in b.heads) for b in model.blocks]
    w1 = [d * b.mlp_width for b in model.blocks if b.mlp_width]
    shapes = [shape for b in model.blocks for shape in b.layers]  # stacks of linear layers: each W_l
    stack = [r * c for r, c in shapes]
    rows = [
        Count("embedding table E", "V x d", V * d, f"{V} x {d} = {V * d}" if V else "0 (given X, no E)"),
        Count("position table P", "positions x d", model.positions * d,
              f"{model.positions} x {d} = {model.positions * d}" if model.positions_kind == "learned"
              else f"0 ({model.positions_kind})"),
        Count("W_Q, W_K, W_V", "3 x (d x d)" if split else "d x d_h per head, 3 per head", sum(qkv),
              _sum_text(qkv)),
        Count("W_O", "d x d" if split else "(sum of d_v) x d", sum(out), _sum_text(out)),
        Count("MLP: W_1, W_2", "d x width and width x d", 2 * sum(w1),
              _sum_text([2 * n for n in w1], [f"{n} + {n}" for n in w1])) if not stack else
        Count("MLP or linear layers: W_1 ...", "d x width ...", 2 * sum(w1) + sum(stack),
              _sum_text([2 * n for n in w1] + stack, [f"{n} + {n}" for n in w1] + [f"{r} x {c}" for r, c in shapes])),
        Count("output W_U", "d x V", 0 if model.tied else d * V, "tied to E" if model.tied else f"{d} x {V} = {d * V}",
              tied=model.tied),
    ]
    total = sum(r.count for r in rows)
    rows.append(Count("total", "", total, str(total)))
    named: dict[str, int] = {}  # biases and LayerNorm vectors, summed over the blocks by name
    for sizes in [b.biases for b in model.blocks] + [b.norms for b in model.blocks] + [model.final_norm]:
        for name, n in sizes.items():
            named[name] = named.get(name, 0) + n
    extra = sum(named.values())
    rows.append(Count("biases and LayerNorm", "", extra,
                      " + ".join(f"{name} {n}" for name, n in named.items()) + f" = {extra}" if named else "0"))
    rows.append(Count("all parameters", "", total + extra, str(total + extra)))
    return rows


def _sum_text(parts: list[int], texts: list[str] | None = None) -> str:
    """How per-block counts add up: ``48``, ``32 + 32 = 64`` (one block, its own text),
    ``12 x 1769472 = 21233664`` (equal blocks) or ``48 + 16 = 64``."""
    texts = texts or [str(n) for n in parts]
    if not parts:
        return "0"
    if len(parts) == 1:
        return texts[0] if texts[0] == str(parts[0]) else f"{texts[0]} = {parts[0]}"
    if len(set(texts)) == 1:
        one = texts[0] if texts[0] == str(parts[0]) else f"({texts[0]})"
        return f"{len(parts)} x {one} = {sum(parts)}"
    return " + ".join(t if t == str(n) else f"({t})" for n, t in zip(parts, texts)) + f" = {sum(parts)}"


def approximate(n: int, about: bool = False) -> str:
    """A count as the seed prints it: ``38.6 million`` (one decimal, 10^6 and up),
    ``786 thousand`` (10^3 and up), else the integer; with ``about``, whole millions
    after ``≈`` (the seed's total, ``≈ 124 million``). Rounded half away from zero,
    exactly."""
    if about and n >= 10 ** 6:
        return f"\u2248 {round_fraction_to_int(Fraction(n, 10 ** 6), 'half-away')} million"
    if n >= 10 ** 6:
        tenths = round_fraction_to_int(Fraction(n, 10 ** 5), "half-away")
        return f"{tenths // 10}.{tenths % 10} million"
    if n >= 10 ** 3:
        return f"{round_fraction_to_int(Fraction(n, 10 ** 3), 'half-away')} thousand"
    return str(n)


def side_by_side(case: Case) -> tuple[list[tuple[str, str, str, str, str]], list[str]]:
    """The table ``derive params`` prints: rows (piece, shape, the case's count, GPT-2
    small's as the seed prints it, GPT-2 small's exact count) and the notes under it."""
    mine, gpt2 = counts(case_shape(case)), counts(gpt2_small())
    rows = []
    for m, g in zip(mine, gpt2):
        g_text = "tied to E" if g.tied else approximate(g.count, about=m.piece == "total")
        rows.append((m.piece, m.shape, m.formula, g_text, "" if g.tied else f"{g.count:,}"))
    notes = [case_shape(case).note_positions,
             "The total counts the weight matrices only, as the seed's table does (\"The GPT-2 counts leave "
             "out the biases and the LayerNorms\"); the last two lines add them.",
             "GPT-2 small: V = 50257, d = 768, 1024 positions, 12 blocks, MLP width 3072, W_U tied to E."]
    return rows, notes
