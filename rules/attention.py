"""Multi-head causal self-attention (Vaswani et al. 2017, eq. 1; seed 000, steps 5-7):

    Q = u W_Q + b_Q,  K = u W_K + b_K,  V = u W_V + b_V
    s_{i,j} = q_i . k_j / sqrt(d_k)          (head h reads columns (h-1) d_k + 1 .. h d_k)
    a_{i,j} = e^{s_{i,j}} / sum_{j' <= i} e^{s_{i,j'}}   (causal mask: j > i gets -inf, a = 0)
    o_i^{(h)} = sum_j a_{i,j} v_j,   attn_i = [o_i^{(1)} | ... | o_i^{(h)}] W_O + b_O

With ``mask = "none"`` every j is visible; with ``causal_after_softmax`` the softmax runs
over every j and the weights j > i are then set to 0 (a reader's slip, for the checker);
a given 0/1 matrix M shows query i the keys j with M_{i,j} = 1. A row is never fully
masked: under the causal mask row i always sees j = i, and a given matrix with a row of
zeros is refused when the case is loaded (its softmax would be 0/0).

An exercise may start here, from Q, K and V given as rows (``[input] Q, K, V``): the
heads cut their columns as they cut u W_Q, and there is no W_O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from derive.registry import Convention, Operation, Param, register
from derive.array import Array, leaves
from derive.graph import Graph, Meta, Sqrt
from derive.name import Name
from derive.printing import listed
from derive.steps import Equation, Ref, Step, Table, vec

from .linear import Ids, constant, entries, matrix_leaves, vector_leaves
from .rope import rotary, rotary_step, rotate_heads

if TYPE_CHECKING:
    from derive.case import Block, Case


def attention(graph: Graph, case: Case, block_no: int, block: Block, u: Ids, reads: str = "u") -> tuple[Ids, list[Step]]:
    """Add one block's attention sublayer on the rows ``u`` (T x d_model; named ``reads``
    on the page: the normalised u in a pre-norm block, x in a post-norm one).

    The heads either slice W_Q, W_K, W_V (d_model x d_model) into column groups of width
    d_k (the usual layout), or are given one by one with their own W_Q, W_K, W_V
    (d_model x d_h, e.g. the seed 004's hand-set head with d_k = 1); W_O then has
    sum d_h rows. Returns the joined, projected output (T x d_model) and the steps qkv,
    attention, mix.
    """
    Vb = block.vectors
    if case.qkv is not None:
        projections = _given_qkv(graph, case)
    else:
        x = Array(graph, u)
        projections = _split_heads(graph, case, block_no, block, x) if block.heads is None else \
            _given_heads(graph, case, block_no, block, x)
    T = len(case.tokens)
    heads = []
    given = block.matrices.get("attention_weights")
    # rotary positions: the scores read q~ = R q and k~ = R k (rules/rope.py)
    turned = rotate_heads(graph, case, block_no, projections) if rotary(case) and given is None else None
    for h, (q, k, v, d_h) in enumerate(projections, 1):
        if given is not None:
            heads.append(_given_weights(graph, block_no, h, q, k, v, given) | {"scale": None})
            continue
        scale = {"d_model": case.d_model, "d_k": d_h, "none": 1}.get(case.conventions.score_scale,
                                                                      case.conventions.score_scale)
        root = graph.scratch(Sqrt(), (constant(graph, scale, "scale"),), f"sqrt({scale})")
        if turned:
            q_rot, k_rot = turned[h - 1]
            heads.append(_head(graph, case, block_no, h, q_rot, k_rot, v, root) | {
                "scale": scale, "q": q.ids(), "k": k.ids(), "q_rot": q_rot.ids(), "k_rot": k_rot.ids()})
        else:
            heads.append(_head(graph, case, block_no, h, q, k, v, root) | {"scale": scale})
    joined = Array(graph, [[o for head in heads for o in head["o"][t]] for t in range(T)])
    projected = "W_O" in block.matrices
    if projected:
        W_O = matrix_leaves(graph, "W_O", block.matrices["W_O"], block_no)
        b_O = vector_leaves(graph, "b_O", Vb.get("b_O"), block_no)
        out = (joined @ W_O + b_O if b_O else joined @ W_O).named(entries("attn", block=block_no))
        out = out.ids()
    else:  # no output projection: the heads' outputs, side by side
        out = joined.ids()
    tokens = case.tokens
    names = [head_name(block, h) for h in range(1, len(heads) + 1)]
    columns = _head_columns(case, block, len(heads))
    words = ("Q, K and V are given: row t holds the query, key and value of token t"
             + (f"; {columns} (of V: {len(heads[0]['v'][0])} each)" if len(heads) > 1 else "") + "."
             if case.qkv is not None else
             f"Three weight matrices multiply {reads}: Q = {reads} W_Q, K = {reads} W_K, V = {reads} W_V. "
             + (columns[0].upper() + columns[1:] if block.heads is None else "Each head has its own W_Q, W_K, W_V")
             + ".")
    qkv = Step("qkv", "Query, Key, Value", words,
               [Table(["token"] + [f"{m}{'' if len(heads) == 1 else ' ' + n}" for n in names for m in "QKV"],
                      [[f"`{tok}`"] + [vec(head[m][t]) for head in heads for m in ("q", "k", "v")]
                       for t, tok in enumerate(tokens)], title=_titled("Q, K, V", block_no, case),
                     short_exact=case.qkv is not None)])
    attn_tables, queries = [], []
    last = T - 1
    tilde = "~" if turned else ""
    for h, head in enumerate(heads, 1):
        attn_tables += ([] if given is not None else [_last_row_table(case, block_no, names[h - 1], head)]) \
            + [_weights_table(case, block_no, names[h - 1], head)]
        if given is None:
            queries.append(Equation(f"q{tilde}_{last + 1}^({h})", vec(head["q_rot" if turned else "q"][last])))
    if given is not None:
        words = "The weights a_{i,j} are given (row i: the query), not computed from scores."
    else:
        by_scale: dict = {}  # each score scale and the heads that use it (hand-set heads may differ)
        for h, head in enumerate(heads, 1):
            by_scale.setdefault(head["scale"], []).append(h)
        score = lambda scale: f"s_{{i,j}} = q{tilde}_i . k{tilde}_j" + ("" if scale == 1 else f" / sqrt({scale})")
        scores = score(heads[0]["scale"]) if len(by_scale) == 1 else "; ".join(
            f"{score(scale)} in head{'s' if len(hs) > 1 else ''} {listed([str(h) for h in hs])}"
            for scale, hs in by_scale.items())
        words = (f"{scores}, then a_{{i,j}} = e^s / sum e^s"
                 + (" over the j with M_{i,j} = 1 (the given mask M writes -inf where it has 0)."
                    if isinstance(case.conventions.mask, tuple) else
                    {"causal": " over j <= i (the mask writes -inf above the diagonal).",
                     "none": " over every j (no mask).",
                     "causal_after_softmax": " over every j, then the weights above the diagonal are set to 0 "
                                             "(the mask applied after the softmax)."}[case.conventions.mask]))
    attn_step = Step("attention", "The attention of each head", words, attn_tables, queries)
    mix_cols = ["token"] + [f"o^({h})" for h in range(1, len(heads) + 1)] + \
        (["attn = [o^(1) | ...] W_O"] if projected else [])
    words = f"Each head {'averages' if given is None else 'adds up'} the values with its weights" + (
        "; the results are placed side by side and multiplied by W_O." if projected else
        (": the context vectors." if len(heads) == 1 else "; the results are placed side by side."))
    mix = Step("mix", "Mix the values and join the heads" if len(heads) > 1 else "Mix the values", words,
               [Table(mix_cols, [[f"`{tok}`"] + [vec(head["o"][t]) for head in heads]
                                 + ([vec(out[t])] if projected else []) for t, tok in enumerate(tokens)],
                      title=_titled("o and attn" if projected else "o", block_no, case))])
    shown = block.options.get("projections", True) or case.qkv is not None
    rotated = [rotary_step(case, block_no, names, heads)] if turned else []
    return out, ([qkv] if shown else []) + rotated + [attn_step, mix]


def head_name(block: Block, h: int) -> str:
    """``head 2``, or the name a case gives a head (``head 3 (hand set)``)."""
    name = block.heads[h - 1].get("name") if block.heads else None
    return f"head {h}" + (f" ({name})" if name else "")


def _split_heads(graph: Graph, case: Case, block_no: int, block: Block, u: Array) -> list[tuple]:
    """Q, K, V = u W + b with full d_model x d_model matrices, cut into heads of d_k columns."""
    if not block.options.get("projections", True):  # the rows are their own queries, keys and values
        cols = [range((h - 1) * case.d_k, h * case.d_k) for h in range(1, case.heads + 1)]
        return [(u.cols(cs), u.cols(cs), u.cols(cs), case.d_k) for cs in cols]
    group = case.heads // kv_heads(case, block)  # query heads per key/value head
    if group > 1:
        graph.head_groups[block_no] = group
    proj = {}
    for name in "QKV":
        W = matrix_leaves(graph, f"W_{name}", block.matrices[f"W_{name}"], block_no)
        b = vector_leaves(graph, f"b_{name}", block.vectors.get(f"b_{name}"), block_no)
        s = name.lower()
        of_head = [Meta.entries(s, block=block_no, head=h) for h in range(1, case.heads + 1)]
        proj[name] = (u @ W + b if b else u @ W).named(lambda t, c, of_head=of_head: of_head[c // case.d_k](t, c))
    cols = lambda h: range((h - 1) * case.d_k, h * case.d_k)  # the d_k columns of head h (1-based)
    kv = lambda h: graph.key_head(block_no, h)  # the key/value head query head h reads
    return [(proj["Q"].cols(cols(h)), proj["K"].cols(cols(kv(h))), proj["V"].cols(cols(kv(h))), case.d_k)
            for h in range(1, case.heads + 1)]


def _head_columns(case: Case, block: Block, n: int) -> str:
    """Which columns each of the ``n`` heads reads, d_k each (``head 1 reads columns 1-2,
    head 2 reads columns 3-4``); with fewer key/value heads (``kv_heads``), the columns of
    Q, and the group of query heads that shares each d_k columns of K and V."""
    def span(k: int) -> str:  # the d_k columns of head k + 1
        first, last = k * case.d_k + 1, (k + 1) * case.d_k
        return f"column {first}" if first == last else f"columns {first}-{last}"
    reads = ", ".join(f"head {h} reads {span(h - 1)}" for h in range(1, n + 1))
    kv = n if case.qkv is not None else kv_heads(case, block)
    if kv == n:
        return reads
    group = n // kv
    shared = ", ".join(f"heads {g * group + 1}-{(g + 1) * group} share {span(g)}" for g in range(kv))
    return f"{reads} of Q; of K and V, {shared}"


def kv_heads(case: Case, block: Block) -> int:
    """The number of key/value heads of a block (``kv_heads``; all heads by default)."""
    value = block.options.get("kv_heads", "heads")
    return case.heads if value == "heads" else int(value)


def _check_kv_heads(case: Case) -> tuple[str, str, str] | None:
    """kv_heads is a whole number that divides heads, and W_K, W_V have kv_heads d_k columns;
    a block whose heads give their own weights (``heads = [...]``) has no kv_heads."""
    for b, block in enumerate(case.blocks, 1):
        value = block.options.get("kv_heads", "heads")
        if block.heads is not None and value != "heads":
            return f"blocks[{b}].kv_heads", f"is {value} beside per-head weights (blocks[{b}].heads)", \
                f"no kv_heads: each head of blocks[{b}].heads gives its own W_K and W_V"
        if value != "heads" and (value.denominator != 1 or value < 1 or case.heads % int(value)):
            return f"blocks[{b}].kv_heads", f"is {value}", f"a whole number that divides heads = {case.heads}"
        if "W_K" not in block.matrices or block.heads is not None:
            continue
        width = kv_heads(case, block) * case.d_k
        for name in ("W_K", "W_V"):
            if len(block.matrices[name][0]) != width:
                return f"blocks[{b}].{name}", f"has {len(block.matrices[name][0])} columns", \
                    f"{width} (kv_heads x d_k = {kv_heads(case, block)} x {case.d_k})"
    return None


def _given_qkv(graph: Graph, case: Case) -> list[tuple]:
    """Q, K, V given as rows (``[input] Q, K, V``: T x heads d_k, T x heads d_k, T x heads d_v),
    as constant leaves q_t[c], k_t[c], v_t[c], cut into ``case.heads`` heads of equal width."""
    given = {}
    for name, rows in case.qkv.items():
        width = len(rows[0]) // case.heads
        given[name] = leaves(graph, rows, lambda t, c, s=name.lower(), w=width: Meta.of(
            Name(s, position=t + 1, index=c + 1), block=1, head=c // w + 1))
    d_k, d_v = len(case.qkv["Q"][0]) // case.heads, len(case.qkv["V"][0]) // case.heads
    return [(given["Q"].cols(range(h * d_k, (h + 1) * d_k)), given["K"].cols(range(h * d_k, (h + 1) * d_k)),
             given["V"].cols(range(h * d_v, (h + 1) * d_v)), d_k) for h in range(case.heads)]


def _check_mask(case: Case) -> tuple[str, str, str] | None:
    """A given mask is T x T and shows every query at least one key (a row of zeros would
    make its softmax 0/0)."""
    mask = case.conventions.mask
    if not isinstance(mask, tuple) or not (case.qkv is not None or any("attention" in b.sublayers
                                                                       for b in case.blocks)):
        return None
    T = len(case.tokens)
    shape = f"a {T} x {T} matrix of 0 and 1 (row i: the keys query i sees)"
    if len(mask) != T:
        return "conventions.mask", f"has {len(mask)} rows but the case has T = {T} tokens", shape
    if len(mask[0]) != T:
        return "conventions.mask row 1", f"has {len(mask[0])} columns", f"{T} columns, one per key"
    for i, row in enumerate(mask, 1):
        if not any(row):
            return f"conventions.mask row {i}", "is all 0: query i would see no key (its softmax would be 0/0)", \
                "at least one 1 in every row"
    return None


def _given_heads(graph: Graph, case: Case, block_no: int, block: Block, u: Array) -> list[tuple]:
    """Q, K, V of each head from its own W_Q, W_K, W_V (d_model x d_h) and biases."""
    out = []
    for h, given in enumerate(block.heads, 1):
        proj = []
        for name in "QKV":
            W = matrix_leaves(graph, f"W_{name}", given[f"W_{name}"], block_no)
            b = vector_leaves(graph, f"b_{name}", given.get(f"b_{name}"), block_no)
            for leaf in [x for row in W.ids() + (b.ids() if b else []) for x in row]:
                graph.nodes[leaf].meta.head = h
            s = name.lower()
            proj.append((u @ W + b if b else u @ W).named(entries(s, written_head=h, block=block_no)))
        out.append((*proj, len(given["W_Q"][0])))
    return out


def _head(graph: Graph, case: Case, block_no: int, h: int, q: Array, k: Array, v: Array, root: int) -> dict:
    """Scores, weights and mixed values of head h (1-based) for every row, from the head's
    own rows q, k, v (T x d_h) and the node ``root`` = sqrt(d_k):

        s = q k^T / sqrt(d_k) (masked),  a = e^s / sum_j e^s,  o = a v

    Under the causal mask the scores j > i are never computed and their weights are 0;
    with ``causal_after_softmax`` the softmax runs over every j and the weights j > i are
    then set to 0 (a reader's slip)."""
    mask = case.conventions.mask
    if isinstance(mask, tuple):  # a given 0/1 matrix: 1 visible (no row is all 0: _check_mask)
        visible = kept = lambda i, j: mask[i][j] == 1
    else:
        visible = (lambda i, j: j <= i) if mask == "causal" else (lambda i, j: True)  # the softmax runs over these
        kept = (lambda i, j: True) if mask == "none" else (lambda i, j: j <= i)  # ... and these keep their weight
    tags = dict(block=block_no, head=h)
    qk = (q @ k.T).masked(visible).named(entries("qk_rot" if rotary(case) else "qk", **tags))
    scores = (qk / Array(graph, [[root]])).named(entries("s", **tags))
    e = scores.exp().named(entries("exp_s", **tags))
    total = e.sum().named(lambda t, c: Meta.of(Name("sum_exp_s", position=t + 1), **tags))
    a = (e / total).masked(kept).named(entries("a", **tags))
    o = (a @ v).named(entries("o", written_head=h, **tags))
    a = a.filled(0, entries("a", **tags))
    return {"qk": qk.ids(), "s": scores.ids(), "exp_s": e.ids(), "a": a.ids(), "sum": total.column(),
            "o": o.ids(), "q": q.ids(), "k": k.ids(), "v": v.ids()}


def _given_weights(graph: Graph, block_no: int, h: int, q: Array, k: Array, v: Array, weights) -> dict:
    """Head h (1-based) with its weights a (T x T) given, not computed: o = a v."""
    tags = dict(block=block_no, head=h)
    a = leaves(graph, weights, entries("a", **tags))
    o = (a @ v).named(entries("o", written_head=h, **tags))
    return {"qk": None, "s": None, "exp_s": None, "a": a.ids(), "sum": None, "o": o.ids(),
            "q": q.ids(), "k": k.ids(), "v": v.ids()}


def _last_row_table(case: Case, block_no: int, name: str, head: dict) -> Table:
    """The seed's per-head table for the last row: j, k_j, q.k, s, e^s, a."""
    i = len(head["q"]) - 1
    keys, t = (head["k_rot"], "~") if "k_rot" in head else (head["k"], "")  # the keys the scores read
    rows = []
    for j, tok in enumerate(case.tokens):
        if head["s"][i][j] is not None:
            rows.append([f"`{tok}`", vec(keys[j]), Ref("before", head["qk"][i][j]),
                         Ref("before", head["s"][i][j]), Ref("before", head["exp_s"][i][j]),
                         Ref("before", head["a"][i][j])])
        else:
            rows.append([f"`{tok}`", vec(keys[j]), "masked", "-inf", "0", Ref("before", head["a"][i][j])])
    T = i + 1
    return Table(["j", f"k{t}_j", f"q{t}_{T} . k{t}_j", f"s_{T},j", "e^s", f"a_{T},j"], rows,
                 title=_titled(f"{name.capitalize()}, row {T}", block_no, case))


def _weights_table(case: Case, block_no: int, name: str, head: dict) -> Table:
    """All attention weights a_{i,j} of one head: rows i (queries), columns j (keys)."""
    rows = [[f"`{tok}`"] + [Ref("before", a) for a in head["a"][i]] for i, tok in enumerate(case.tokens)]
    return Table(["i \\ j"] + [f"`{tok}`" for tok in case.tokens], rows,
                 title=_titled(f"{name.capitalize()}, weights a_i,j", block_no, case))


def _titled(title: str, block_no: int, case: Case) -> str:
    return title + (f" (block {block_no})" if len(case.blocks) > 1 else "")


ATTENTION = register(Operation(
    name="attention", kind="sublayer", title="Multi-head causal self-attention", stage=31,
    steps=("qkv", "attention", "mix"),
    symbols={"q": "a query entry", "k": "a key entry", "v": "a value entry", "qk": "q_i . k_j", "s": "a score q_i . k_j / sqrt(d_k)", "exp_s": "e^s", "sum_exp_s": "a row's sum of e^s", "a": "an attention weight", "o": "a head's mixed value", "attn": "the joined heads times W_O"},
    source="Vaswani et al. 2017, eq. 1 and section 3.2.2",
    params=(Param("W_Q", ("d_model", "d_model"), "the query weights; head h reads columns (h-1) d_k + 1 .. h d_k",
                  needs="projections"),)
    + tuple(Param(f"W_{m}", ("d_model", "d_kv"), f"the {what} weights: kv_heads heads of d_k columns (d_kv = "
                  "kv_heads d_k; d_model unless the heads share keys and values)", needs="projections")
            for m, what in (("K", "key"), ("V", "value")))
    + (Param("W_O", ("d_model", "d_model"), "the output projection of the joined heads", needs="projections"),)
    + tuple(Param(f"b_{m}", (width,), f"the bias of W_{m}", optional=True, needs="projections")
            for m, width in (("Q", "d_model"), ("K", "d_kv"), ("V", "d_kv"), ("O", "d_model")))
    + (Param("attention_weights", ("T", "T"), "the weights a_{i,j} given (row i: the query), instead of a "
             "softmax of scores: any numbers, a row need not add up to 1 (a 0/1 pattern in an exercise); "
             "the mask and score scale do not apply",
             trainable=False, optional=True),),
    options=(Convention("kv_heads", "heads", "how many key/value heads the query heads share, in groups "
                                             "of heads / kv_heads (1: multi-query attention)",
                        kind="choice_or_positive", choices={"heads": "one per query head (multi-head attention)"},
                        source="Ainslie et al. 2023, GQA, section 2; Shazeer 2019 (multi-query)"),
             Convention("projections", True, "false: no W_Q, W_K, W_V, W_O; the rows are their own queries, "
                                             "keys and values, and the heads' outputs are joined as they are",
                        kind="bool", source="simplified self-attention, Raschka 2024, section 3.3"),),
    conventions=(
        Convention("mask", "causal", "which keys a query sees", kind="choice_or_matrix",
                   choices={"causal": "j <= i: -inf above the diagonal, before the softmax",
                            "none": "every j (no mask)",
                            "causal_after_softmax": "softmax over every j, then j > i set to 0 (a reader's slip)"},
                   slips={"none": "no causal mask", "causal_after_softmax": "the mask applied after the softmax"},
                   source="Vaswani et al. 2017, section 3.2.3"),
        Convention("score_scale", "d_k", "the scores q.k are divided by the square root of (a number n: "
                   "s = q.k / sqrt(n))",
                   kind="choice_or_positive",
                   choices={"d_k": "the head width (the paper)", "d_model": "the model width",
                            "none": "nothing: s = q.k (unscaled)"},
                   slips={"d_model": "scores scaled by sqrt(d_model) instead of sqrt(d_k)"},
                   source="Vaswani et al. 2017, eq. 1"),
    ),
    forward=attention,
    check=lambda case: _check_kv_heads(case) or _check_mask(case),
    dims=lambda options, dims: {"d_kv": dims["d_model"]} if options.get("kv_heads", "heads") == "heads" else {},
))
