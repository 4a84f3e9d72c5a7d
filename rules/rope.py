"""Rotary position embeddings (RoFormer, Su et al. 2021, eq. 34; Hugging Face's
``apply_rotary_pos_emb``): each head's query and key are turned by an angle that grows with
the position, so the score q~_m . k~_n depends on m - n only:

    q~_m = R_{Theta,m} q_m,   k~_n = R_{Theta,n} k_n,   s_{m,n} = q~_m . k~_n / sqrt(d_k)

R turns r = rotary_fraction d_k of the head's d_k columns two by two; pair i (i = 0 .. r/2 - 1)
is the columns (a, b) = (i, i + r/2) (``rotate_half``: GPT-NeoX, Llama) or (2i, 2i + 1)
(``interleaved``: GPT-J, the paper's R), turned by pos theta_i:

    q~[a] = q[a] cos(pos theta_i) - q[b] sin(pos theta_i)
    q~[b] = q[b] cos(pos theta_i) + q[a] sin(pos theta_i),    theta_i = base^(-2i/r)

with pos = t - 1 for the t-th token (0 for the first, as HF's ``position_ids``); the other
d_k - r columns pass unchanged (GPT-NeoX's ``rotary_pct``, GPT-J's ``rotary_dim``). The
cosines and sines are exact constants (cos(1/10), sin(2)), not trained; gradients reach
W_Q and W_K through the rotation. No position vector is added to the embeddings.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from derive.array import Array
from derive.graph import Cos, Graph, Lin, Meta, Power, Sin, is_exact
from derive.name import Name
from derive.registry import Convention, Operation, register
from derive.steps import Equation, Step, Table, vec

from .linear import constant

if TYPE_CHECKING:
    from derive.case import Block, Case


def rotary(case: Case) -> bool:
    """Whether the case's positions are rotary (``positions = "rotary"``)."""
    return case.conventions.positions == "rotary"


def rotated_width(case: Case, d_k: int) -> Fraction:
    """r = rotary_fraction d_k, the columns of a head of width d_k that are turned (a
    whole even number in a valid case; see :func:`_check_rotary`)."""
    return case.conventions.rotary_fraction * d_k


def pairs(layout: str, r: int) -> list[tuple[int, int]]:
    """The pairs (a, b) of columns (0-based) turned together, pair i by the angle pos theta_i:
    (i, i + r/2) for ``rotate_half``, (2i, 2i + 1) for ``interleaved``."""
    half = r // 2
    return [(i, i + half) if layout == "rotate_half" else (2 * i, 2 * i + 1) for i in range(half)]


def angles(graph: Graph, case: Case, T: int, r: int) -> tuple[list[list[int]], ...]:
    """cos(pos theta_i), sin(pos theta_i) and -sin(pos theta_i) for the rows t = 1 .. T
    (pos = t - 1) and the pairs i = 0 .. r/2 - 1 (T x r/2 constant nodes each),
    theta_i = base^(-2i/r)."""
    base = constant(graph, case.conventions.rotary_base, "base")
    thetas = [_theta(graph, base, Fraction(-2 * i, r), f"theta_{i}") for i in range(r // 2)]
    cos, sin, minus = [], [], []
    for pos in range(T):
        turned = [_times(graph, pos, theta, f"{pos} theta_{i}") for i, theta in enumerate(thetas)]
        cos.append([graph.scratch(Cos(), (x,), f"cos({pos} theta_{i})") for i, x in enumerate(turned)])
        sin.append([graph.scratch(Sin(), (x,), f"sin({pos} theta_{i})") for i, x in enumerate(turned)])
        minus.append([graph.scratch(Lin([-1]), (s,), f"-sin({pos} theta_{i})") for i, s in enumerate(sin[-1])])
    return cos, sin, minus


def _theta(graph: Graph, base: int, exponent: Fraction, label: str) -> int:
    """base^exponent as a node: a constant leaf when it is rational (10000^(-1/2) = 1/100,
    base^0 = 1), so a by-hand note reads cos(2), not cos(2 10000^0)."""
    op = Power(exponent)
    value = op.eval([graph.nodes[base].leaf])
    if is_exact(value):
        return graph.leaf(Fraction(int(value.p), int(value.q)), Meta(None, label))
    return graph.add(op, (base,), Meta(None, label))


def _times(graph: Graph, pos: int, theta: int, label: str) -> int:
    """pos theta_i: a constant leaf when theta_i is one, else a scratch node."""
    leaf = graph.nodes[theta].leaf
    if leaf is not None:
        return graph.leaf(Fraction(pos) * Fraction(int(leaf.p), int(leaf.q)), Meta(None, label))
    return graph.scratch(Lin([pos]), (theta,), label)


def rotate(graph: Graph, x: Array, cos: list[list[int]], sin: list[list[int]], minus: list[list[int]],
           layout: str, meta) -> Array:
    """x~ = R_{Theta,pos} x for a head's rows x (T x d_k), as HF writes it,
    ``x * cos + rotate_half(x) * sin``: column a of pair i is x[a] cos - x[b] sin, column b
    is x[b] cos + x[a] sin; the columns past the r = 2 len(cos[0]) turned ones are copied.
    ``minus`` is -sin, the sign of column a. ``meta(t, c)`` names entry (t, c) (0-based)."""
    T, d = x.shape
    r = 2 * len(cos[0])
    C = [[None] * d for _ in range(T)]  # the cos of the pair each column belongs to
    S = [[None] * d for _ in range(T)]  # -sin for a, +sin for b (rotate_half's sign)
    partner = list(range(d))
    for i, (a, b) in enumerate(pairs(layout, r)):
        partner[a], partner[b] = b, a
        for t in range(T):
            C[t][a] = C[t][b] = cos[t][i]
            S[t][a] = minus[t][i]
            S[t][b] = sin[t][i]
    C, S = Array(graph, C), Array(graph, S)
    turned = list(range(r))
    kept = list(range(r, d))
    head = x.cols(turned) * C.cols(turned) + x.cols([partner[c] for c in turned]) * S.cols(turned)
    whole = Array(graph, [h + p for h, p in zip(head.rows, (x.cols(kept) * 1).rows)])
    return whole.named(meta)


def rotate_heads(graph: Graph, case: Case, block_no: int, heads: list[tuple]) -> list[tuple[Array, Array]]:
    """q~ and k~ of every head: ``heads`` is attention's (q, k, v, d_h) per query head (1-based
    h in order). A key head shared by several query heads (grouped-query attention) is
    turned once; its rows k~ carry the head its k does (a shared key's: its key/value head)."""
    T = heads[0][0].shape[0]
    layout = case.conventions.rotary_layout
    tables: dict[int, tuple] = {}
    done: dict[tuple, Array] = {}
    out = []
    for h, (q, k, _v, d_h) in enumerate(heads, 1):
        r = int(rotated_width(case, d_h))
        if r not in tables:
            tables[r] = angles(graph, case, T, r)
        cos, sin, minus = tables[r]
        pair = []
        for symbol, x in (("q_rot", q), ("k_rot", k)):
            key = (symbol, tuple(i for row in x.ids() for i in row))
            if key not in done:
                done[key] = rotate(graph, x, cos, sin, minus, layout, _namer(graph, x, symbol, block_no, h))
            pair.append(done[key])
        out.append(tuple(pair))
    return out


def _namer(graph: Graph, x: Array, symbol: str, block_no: int, h: int):
    """Name entry (t, c) of the turned rows as the entry of x it turns is named: q~_5[3]
    for q_5[3] (the same position, index and head)."""
    ids = x.ids()

    def meta(t, c):
        source = graph.nodes[ids[t][c]].meta
        written = source.name.fields.head if source.name is not None else None
        return Meta.of(Name(symbol, position=t + 1, index=source.index if source.index is not None else c + 1,
                            head=written), block=block_no, head=source.head or h)
    return meta


def rotary_step(case: Case, block_no: int, names: list[str], heads: list[dict]) -> Step:
    """The step that shows q~ and k~ of every head (``heads``: attention's per-head dicts
    with ``q_rot``, ``k_rot``), with the angles of the rows in the words."""
    conv = case.conventions
    T = len(case.tokens)
    r = [int(rotated_width(case, len(head["q"][0]))) for head in heads]
    shown = [f"({a + 1}, {b + 1}) by theta_{i}" for i, (a, b) in enumerate(pairs(conv.rotary_layout, r[0]))]
    listed = ", ".join(shown if len(shown) <= 4 else shown[:2] + ["...", shown[-1]])
    kept = "" if conv.rotary_fraction == 1 else \
        f" Only the first r = {conv.rotary_fraction} d_k = {r[0]} columns of a head turn; the others pass unchanged."
    words = (f"In each head the columns of q and k turn two by two, the pair (a, b) by the angle pos theta_i: "
             f"{listed}, with theta_i = {conv.rotary_base}^(-2i/r), r = {r[0]} and pos = t - 1 (RoFormer). "
             "So q~[a] = q[a] cos(pos theta_i) - q[b] sin(pos theta_i), "
             "q~[b] = q[b] cos(pos theta_i) + q[a] sin(pos theta_i), and k~_t likewise. Each score q~_i . k~_j "
             "then depends on the positions only through i - j." + kept)
    many = len(heads) > 1
    columns = ["token"]
    for n in names:
        columns += [f"q~{' ' + n if many else ''}", f"k~{' ' + n if many else ''}"]
    rows = [[f"`{tok}`"] + [vec(head[m][t]) for head in heads for m in ("q_rot", "k_rot")]
            for t, tok in enumerate(case.tokens)]
    title = "q~ and k~" + (f" (block {block_no})" if len(case.blocks) > 1 else "")
    equations = [Equation(Name("q_rot", position=T, head=h if many else None), vec(head["q_rot"][T - 1]))
                 for h, head in enumerate(heads, 1)]
    return Step("rotary", "Rotate q and k by their positions", words, [Table(columns, rows, title=title)],
                equations)


def _widths(block: Block, case: Case) -> list[int]:
    """The query/key width of each head of a block with attention."""
    if block.heads is not None:
        return [len(head["W_Q"][0]) for head in block.heads]
    return [case.d_k]


def _check_rotary(case: Case) -> tuple[str, str, str] | None:
    """r = rotary_fraction d_k must be an even whole number from 2 to d_k, for every head."""
    conv = case.conventions
    if conv.positions != "rotary":
        return None
    for b, block in enumerate(case.blocks, 1):
        if "attention" not in block.sublayers or block.matrices.get("attention_weights") is not None:
            continue
        for d_k in _widths(block, case):
            r = conv.rotary_fraction * d_k
            if r.denominator != 1 or r % 2 or not 2 <= r <= d_k:
                return "conventions.rotary_fraction", \
                    f"is {conv.rotary_fraction}: it turns {r} of a head's d_k = {d_k} columns (block {b})", \
                    "a fraction <= 1 whose rotary_fraction x d_k is an even whole number >= 2"
    return None


ROPE = register(Operation(
    name="rope", kind="stage", title="Rotary position embedding", stage=31.5, steps=("rotary",),
    source="Su et al. 2021, RoFormer, eq. 34; Hugging Face apply_rotary_pos_emb (rotate_half), GPT-J "
           "(interleaved pairs)",
    symbols={"q_rot": "q~ = R_{Theta,pos} q, a query turned by its position",
             "k_rot": "k~ = R_{Theta,pos} k, a key turned by its position",
             "qk_rot": "q~_i . k~_j (rotary positions)"},
    conventions=(
        Convention("rotary_base", Fraction(10000), "the base of the rotary angles, theta_i = base^(-2i/r)",
                   kind="positive", applies=lambda conv: conv.positions == "rotary",
                   source="Su et al. 2021, eq. 15; HF rope_theta (Llama), rotary_emb_base (GPT-NeoX)"),
        Convention("rotary_fraction", Fraction(1), "the fraction of each head's d_k columns that turn "
                                                   "(r = fraction d_k, an even whole number)",
                   kind="positive", applies=lambda conv: conv.positions == "rotary",
                   source="GPT-NeoX rotary_pct; GPT-J rotary_dim = fraction d_k"),
        Convention("rotary_layout", "rotate_half", "which columns of a head turn together",
                   choices={"rotate_half": "pairs (i, i + r/2): GPT-NeoX, Llama (HF rotate_half)",
                            "interleaved": "pairs (2i, 2i + 1): GPT-J, the paper's R_{Theta,m}"},
                   slips={"interleaved": "rotary pairs (2i, 2i+1) instead of (i, i + r/2)",
                          "rotate_half": "rotary pairs (i, i + r/2) instead of (2i, 2i+1)"},
                   applies=lambda conv: conv.positions == "rotary",
                   source="Su et al. 2021, eq. 34; HF modeling_gpt_neox and modeling_gptj"),
    ),
    check=lambda case: _check_rotary(case),
))
