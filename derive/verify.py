"""The seeds' "check yourself" facts as checks a user can run on a case (`derive verify`).

- ``rotation`` (seed 004, ``check_rotation``): PE[pos+k] = R_k PE[pos], where R_k is
  built from k alone: one 2x2 rotation by k w_i per pair (sin, cos), block diagonal.
- ``uniform-keys`` (seed 000): if all the keys are identical, the weights of a row are
  uniform and the output is the plain average of the values.
- ``temperature`` (seed 000): dividing the logits by a positive T keeps the most
  probable token.
- ``shift`` (seed 000): adding a constant to every logit changes no probability (the
  e^10 cancels between the numerator and the sum), so the loss is unchanged too.

Each check returns a :class:`Result`: PASS or FAIL and the lines saying what was checked.
A check that does not apply to the case (no attention, no vocabulary, positions that are not
sinusoids) raises :class:`~derive.errors.DeriveError` (the CLI's exit code 2; SKIP under ``all``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction

import sympy
from flint import arb, ctx

from .case import Case
from .derivation import START_PREC, Derivation, derive
from .evaluate import MAX_PREC
from .errors import DeriveError
from .evaluate import forward
from .generate import certified_argmax
from .graph import Cos, Div, Dot, Exp, Graph, Lin, Log, Meta, Sin, approx, as_arb, is_exact
from .rounding import Format
from .steps import Ref

AGREE_BITS = 100  # a certified agreement of p and p' to 100 bits (30 digits), relative to their size
SHIFT = 10  # the seed's constant: "add 10 to all the logits of the last row"
TEMPERATURES = (Fraction(1, 2), Fraction(1), Fraction(2))
ORDERS = ("sin-cos", "cos-sin")
MAX_ROTATION_POSITIONS = 128  # the rotation check's positions: n^2 / 2 (pos, k) pairs, each exact (8,128 here)


@dataclass
class Result:
    """The outcome of one check: its ``name``, whether it ``passed``, and ``lines`` saying
    what was checked and what was found; ``skipped``: the check does not apply to the case
    (under ``all``), so nothing was checked (``passed`` is then True: it fails nothing)."""

    name: str
    passed: bool
    lines: list[str] = field(default_factory=list)
    skipped: bool = False


# --------------------------------------------------------------------------- rotation

def rotation_block(k: int, w_i: sympy.Expr, order: str = "sin-cos") -> sympy.Matrix:
    """The 2x2 block of R_k for frequency w_i, built from k alone (angle phi = k w_i).

    ``sin-cos`` rotates a pair stored as (sin a, cos a) to (sin(a + phi), cos(a + phi)):
    [[cos phi, sin phi], [-sin phi, cos phi]]. ``cos-sin`` is the rotation written for a
    pair stored as (cos a, sin a), [[cos phi, -sin phi], [sin phi, cos phi]]: applied to
    (sin, cos) it turns the wrong way (the seed 004's first run, "an error of 1.63").
    """
    phi = k * w_i
    c, s = sympy.cos(phi), sympy.sin(phi)
    if order == "sin-cos":
        return sympy.Matrix([[c, s], [-s, c]])
    if order == "cos-sin":
        return sympy.Matrix([[c, -s], [s, c]])
    raise ValueError(f"unknown order {order!r}; expected one of {', '.join(ORDERS)}")


def rotation_matrix(k: int, d: int, base: Fraction, layout: str, order: str = "sin-cos") -> list[list[float]]:
    """R_k as a d x d float matrix (column vectors: PE[pos+k] = R_k PE[pos]), block diagonal
    over the pairs (column 2i, 2i+1) interleaved or (i, d/2 + i) concatenated, w_i =
    base^(-2i/d). Built from k alone: the position does not enter."""
    R = [[0.0] * d for _ in range(d)]
    for i in range(d // 2):
        block = rotation_block(k, sympy.Rational(base.numerator, base.denominator) ** sympy.Rational(-2 * i, d), order)
        cols = _pair(i, d, layout)
        for r in range(2):
            for c in range(2):
                R[cols[r]][cols[c]] = float(block[r, c])
    return R


def _pair(i: int, d: int, layout: str) -> tuple[int, int]:
    """The (sin, cos) columns of pair i (0-based)."""
    return (2 * i, 2 * i + 1) if layout == "interleaved" else (i, d // 2 + i)


def rotation(case: Case, order: str = "sin-cos") -> Result:
    """Check PE[pos+k] = R_k PE[pos] for every pos and k >= 1 with pos + k among the
    case's positions (``model.context_length`` of them when given, else the prompt's; the
    first :data:`MAX_ROTATION_POSITIONS` of them, said in the result, when there are more).

    The table is the case's sinusoids as derive builds them (:func:`derive.rules.positions.
    sinusoids`); the check does not apply to a case with other positions (learned, rotary,
    none: a DeriveError, SKIP under ``all``). Exact: every PE entry is the engine's sin or cos of an angle A, with
    A(pos + k) - A(pos) - k w_i = 0 exactly (w_i = base^(-2i/d) computed here), and the
    rotation identity R(phi) (sin a, cos a) = (sin(a + phi), cos(a + phi)) reduces to 0
    under SymPy's expand_trig; the float check (float64, as the seed's) reports the largest
    disagreement |PE[pos+k] - R_k PE[pos]|.

    Raises:
        DeriveError: positions that are not sinusoids, or an odd d_model (no sine-cosine pairs).
    """
    from .rules.positions import sinusoids

    conv = case.conventions
    if conv.positions != "sinusoidal":  # (a table of derive's own would check nothing of the case's)
        raise DeriveError(f"the case's positions are {conv.positions}, not sinusoids: the rotation fact is about a "
                          "sinusoid table", file=case.path, field="conventions.positions",
                          expected='positions = "sinusoidal"')
    d = case.d_model
    if d % 2:
        raise DeriveError(f"sinusoids need an even d_model, not {d}", file=case.path, field="model.d_model",
                          expected="an even d_model")
    lines = []
    rows = len(case.X) if case.X is not None else len(case.ids)
    n = case.context_length or rows
    if n < 2:
        raise DeriveError(f"the rotation check needs two positions or more; the case has {n}", file=case.path,
                          field="prompt", expected="a prompt of two tokens or more, or model.context_length")
    whole = n
    n = min(n, MAX_ROTATION_POSITIONS)  # n^2 / 2 pairs, each checked exactly
    graph = Graph()
    table = sinusoids(graph, case, n)
    forms = _forms(graph)
    with ctx.workprec(53):
        values = forward(graph).values
    base = sympy.Rational(conv.sinusoid_base.numerator, conv.sinusoid_base.denominator)
    a, phi = sympy.symbols("a phi", real=True)

    # the identity R(phi) (sin a, cos a) = (sin(a + phi), cos(a + phi)), by expand_trig
    moved = rotation_block(1, phi, order) * sympy.Matrix([sympy.sin(a), sympy.cos(a)])
    residual = [sympy.simplify(sympy.expand_trig(t - m))
                for t, m in zip((sympy.sin(a + phi), sympy.cos(a + phi)), moved)]
    identity_holds = all(r == 0 for r in residual)

    # the engine's angle of each (row, pair), from its sin and its cos entry; both must agree
    angles, bad_ops = [], []
    for row in range(n):
        per_pair = []
        for i in range(d // 2):
            s_node, c_node = (graph.nodes[table[row][col]] for col in _pair(i, d, conv.sinusoid_layout))
            if not (isinstance(s_node.op, Sin) and isinstance(c_node.op, Cos)):
                bad_ops.append((row, i))
            per_pair.append((forms[s_node.parents[0]], forms[c_node.parents[0]]))
        angles.append(per_pair)
    w = [base ** sympy.Rational(-2 * i, d) for i in range(d // 2)]
    pairs, bad_angles, worst = 0, [], 0.0
    for k in range(1, n):
        R = rotation_matrix(k, d, conv.sinusoid_base, conv.sinusoid_layout, order)
        for t in range(n - k):
            pairs += 1
            for i in range(d // 2):
                if any(not _is_zero(later - now - k * w[i]) for later, now in zip(angles[t + k][i], angles[t][i])):
                    bad_angles.append((t + conv.first_position, k, i))
            for r in range(d):
                rotated = sum(R[r][c] * approx(values[table[t][c]]) for c in range(d))
                worst = max(worst, abs(approx(values[table[t + k][r]]) - rotated))
    first = conv.first_position
    lines.append(f"PE[pos+k] = R_k PE[pos] for pos = {first}..{first + n - 1} ({n} positions"
                 + (f": the first {n} of model.context_length = {whole}" if whole > n else
                    ", model.context_length" if case.context_length else ", the prompt's") + f"), k >= 1: "
                 f"{pairs} (pos, k) pairs, {d // 2} frequency pairs each; R_k built from k alone, "
                 f"2x2 blocks in the ({order.replace('-', ', ')}) order, {conv.sinusoid_layout} columns.")
    lines.append("Exact (SymPy): expand_trig(R(phi) (sin a, cos a) - (sin(a+phi), cos(a+phi))) = "
                 f"({', '.join(map(str, residual))}); "
                 + ("angle(PE[pos+k]) = angle(PE[pos]) + k w_i exactly in every pair."
                    if not bad_angles else f"{len(bad_angles)} angles differ, first (pos, k, i) = {bad_angles[0]}."))
    if bad_ops:
        lines.append(f"The table does not hold sin, cos in the pair's columns at (row, pair) {bad_ops[0]}.")
    lines.append(f"Float (float64): largest disagreement {worst:.3g}.")
    return Result("rotation", identity_holds and not bad_angles and not bad_ops, lines)


def _is_zero(expr: sympy.Expr) -> bool:
    """An exact zero test: SymPy's automatic evaluation, else simplify."""
    return expr == 0 or sympy.simplify(expr) == 0


def _forms(graph: Graph) -> list[sympy.Expr]:
    """The SymPy form of every node of a small graph (leaves as Rationals)."""
    out: list[sympy.Expr] = []
    for node in graph.nodes:
        if node.op is None:
            out.append(sympy.Rational(int(node.leaf.p), int(node.leaf.q)))
        else:
            out.append(node.op.sympy([out[p] for p in node.parents]))
    return out


# --------------------------------------------------------------------------- uniform keys

def identical_keys(case: Case) -> Case:
    """The variant of ``case`` with W_K = 0 and no b_K in every attention block (and every
    head given one by one): every key is the zero vector, so all keys are identical.

    Raises:
        DeriveError: a block without W_K (``projections = false``: the keys are the rows),
            or one whose weights are given (``attention_weights``: no scores, so identical
            keys change nothing and the fact does not apply).
    """
    if case.qkv is not None:  # Q, K, V given: K = 0
        return replace(case, qkv={**case.qkv, "K": [[Fraction(0)] * len(row) for row in case.qkv["K"]]})
    blocks = []
    for b, block in enumerate(case.blocks, 1):
        if "attention" not in block.sublayers:
            blocks.append(block)
            continue
        matrices, vectors, heads = dict(block.matrices), dict(block.vectors), block.heads
        if matrices.get("attention_weights") is not None:
            raise DeriveError("the uniform-keys check needs weights computed from the keys: this block "
                              "gives its weights a_{i,j}", file=case.path,
                              field=f"blocks[{b}].attention_weights",
                              expected="a block whose weights are a softmax of scores (no attention_weights)")
        if heads is None and "W_K" not in matrices:
            raise DeriveError("the uniform-keys check needs W_K: without projections the keys are the rows "
                              "themselves", file=case.path, field=f"blocks[{b}].projections",
                              expected="a block with W_K (projections = true)")
        if heads is None:
            matrices["W_K"] = [[Fraction(0)] * len(row) for row in matrices["W_K"]]
            vectors.pop("b_K", None)
        else:
            heads = [{**{k: v for k, v in h.items() if k != "b_K"},
                      "W_K": [[Fraction(0)] * len(row) for row in h["W_K"]]} for h in heads]
        blocks.append(replace(block, matrices=matrices, vectors=vectors, heads=heads))
    return replace(case, blocks=blocks, target=None)


def uniform_keys(case: Case) -> Result:
    """With identical keys (:func:`identical_keys`), check exactly with derive's engine that
    every visible weight is a_{i,j} = 1/(number of visible j) (j <= i under the causal
    mask, every j without it), every masked weight is 0, and o_i = the mean of the visible
    v_j (the engine's o_i = sum_j a_{i,j} v_j with those exact weights, expanded by SymPy).

    Raises:
        DeriveError: a case without an attention sublayer, or one the variant does not
            apply to (:func:`identical_keys`).
    """
    if case.qkv is None and not any("attention" in b.sublayers for b in case.blocks):
        raise DeriveError("the case has no attention sublayer", file=case.path, field="blocks",
                          expected="a block with attention")
    derivation = derive(identical_keys(case))
    graph = derivation.graph
    T = len(case.tokens)
    mask = case.conventions.mask
    if isinstance(mask, tuple):  # a given 0/1 matrix: query i sees the j with a 1
        sees = lambda i, j: mask[i - 1][j - 1] == 1  # noqa: E731  (1-based)
    else:
        sees = lambda i, j: mask == "none" or j <= i  # noqa: E731
    weights = [i for i, n in enumerate(graph.nodes) if n.meta.symbol == "a"]
    outputs = [i for i, n in enumerate(graph.nodes) if n.meta.symbol == "o"]
    wrong = []
    for i in weights:
        meta = graph.nodes[i].meta
        visible = sum(sees(meta.position, j) for j in range(1, T + 1))
        expected = Fraction(1, visible) if sees(meta.position, meta.index) else Fraction(0)
        v = derivation.value(Ref("before", i))
        if not (is_exact(v) and Fraction(int(v.p), int(v.q)) == expected):
            wrong.append(f"{meta.label} (block {meta.block}, head {meta.head}) = {derivation.exact_text(Ref('before', i))}"
                         f", not {expected}")
    means = 0
    for i in outputs:
        node = graph.nodes[i]
        meta = node.meta
        half = len(node.parents) // 2
        a_ids, v_ids = node.parents[:half], node.parents[half:]
        if not isinstance(node.op, Dot) or any(graph.nodes[p].meta.symbol != "a" for p in a_ids):
            wrong.append(f"{meta.label}: not computed as sum_j a_{{i,j}} v_j")
            continue
        a_values = [derivation.value(Ref("before", p)) for p in a_ids]
        if not all(is_exact(v) for v in a_values):
            continue  # the weights themselves are already reported
        a_syms = [sympy.Symbol(f"a{j}") for j in range(half)]
        v_syms = [sympy.Symbol(f"v{j}") for j in range(half)]
        o = node.op.sympy(a_syms + v_syms).subs(
            {s: sympy.Rational(int(v.p), int(v.q)) for s, v in zip(a_syms, a_values)})
        visible = sum(sees(meta.position, j) for j in range(1, T + 1))  # o's parents: the visible a and v
        if sympy.expand(o - sympy.Add(*v_syms[:visible]) / visible) != 0 or half < visible:
            wrong.append(f"{meta.label} (block {meta.block}) = {o}, not the mean of v_1..v_{visible}")
        means += 1
    lines = [f"Variant: W_K = 0 and b_K = 0 in every attention block, so every key k_j is the zero vector "
             f"and every score s_{{i,j}} is 0 (mask: {'the given matrix' if isinstance(mask, tuple) else mask}).",
             f"Exact: {len(weights)} weights a_{{i,j}} = 1/(number of visible j) (0 where masked); "
             f"{means} outputs o_i = mean of the visible v_j (the engine's o_i = sum_j a_{{i,j}} v_j with "
             "those weights, expanded by SymPy)."]
    if mask == "causal_after_softmax":
        lines.append("Under causal_after_softmax the softmax runs over every j before the mask, so the "
                     "weights are 1/T, not 1/(visible j), and the output is not the plain average.")
    lines += [f"  {w}" for w in wrong[:10]] + ([f"  ... and {len(wrong) - 10} more"] if len(wrong) > 10 else [])
    return Result("uniform-keys", not wrong, lines)


# --------------------------------------------------------------------------- temperature

def _needs_logits(case: Case, check: str) -> None:
    if case.logits is None and (not case.has_unembedding or case.X is not None):
        raise DeriveError(f"the {check} check needs logits: a prompt, a vocabulary and an output layer",
                          file=case.path, field="vocab", expected="a case with [vocab], [prompt], E and W_U, or [input] logits")


def temperature(case: Case, temperatures=TEMPERATURES) -> Result:
    """Derive the case at each T of ``temperatures`` (positive) and check that the most
    probable token (the certified argmax of p, lowest id on an exact tie) is the same.

    Raises:
        DeriveError: a case without logits, or a T <= 0.
    """
    _needs_logits(case, "temperature")
    if any(T <= 0 for T in temperatures):
        raise DeriveError("the temperatures must be positive", expected="T > 0")
    fmt = Format(places=3)
    found, lines = [], []
    for T in temperatures:
        d = derive(replace(case, target=None, conventions=replace(case.conventions, temperature=Fraction(T))))
        choice = certified_argmax(d, d.outputs["p"])
        found.append(choice.index)
        p = Ref("before", d.outputs["p"][choice.index])
        lines.append(f"T = {T}: most probable {case.pieces[choice.index]} (p = {d.decimal(p, fmt)})"
                     + (f", tied with {', '.join(case.pieces[k] for k in choice.tied[1:])}; the tie goes to "
                        "the lowest id" if len(choice.tied) > 1 else ""))
    lines.insert(0, f"The logits divided by T = {', '.join(map(str, temperatures))}: the order of the logits "
                    "is kept, so the argmax of p is the same token at every T.")
    return Result("temperature", len(set(found)) == 1, lines)


# --------------------------------------------------------------------------- shift

def shift(case: Case, constant: int = SHIFT) -> Result:
    """Add ``constant`` to every logit and check that no probability and not the loss move.

    Exact: with the logits as symbols z_1..z_V, SymPy simplifies
    e^(z_c + C) / sum_j e^(z_j + C) - e^(z_c) / sum_j e^(z_j) to 0 for every c, and
    -ln p'(target) + ln p(target) to 0. Engine: the shifted logits, their softmax and loss
    are added to the case's graph (z + C, e^, sum, division, -ln) and evaluated with
    certified balls; each p' must enclose the same value as p (the difference ball
    contains 0 and is below 10^-30) and round to the same 3 places. At T = 0 (greedy) the
    check runs on the softmax at T = 1.

    Raises:
        DeriveError: a case without logits.
    """
    _needs_logits(case, "shift")
    lines = []
    if case.conventions.temperature == 0:
        case = replace(case, conventions=replace(case.conventions, temperature=Fraction(1)))
        lines.append("The case is greedy (T = 0): checking the softmax at T = 1.")
    V = len(case.pieces)
    z = sympy.symbols(f"z1:{V + 1}", real=True)
    C = sympy.Integer(constant)
    total, shifted_total = sum(sympy.exp(x) for x in z), sum(sympy.exp(x + C) for x in z)
    symbolic = [sympy.simplify(sympy.expand(sympy.exp(x + C) / shifted_total - sympy.exp(x) / total))
                for x in z]
    exact_ok = all(s == 0 for s in symbolic)
    loss_ok = True
    if case.target is not None:
        t = z[case.target]
        diff = -sympy.log(sympy.exp(t + C) / shifted_total) + sympy.log(sympy.exp(t) / total)
        loss_ok = sympy.simplify(sympy.expand_log(sympy.expand(diff), force=True)) == 0
    lines.append(f"Exact (SymPy, z_1..z_{V} as symbols): softmax(z + {constant}) - softmax(z) = 0 for all "
                 f"{V} tokens: {'yes' if exact_ok else 'no'}"
                 + (f"; -ln p'(target) + ln p(target) = 0: {'yes' if loss_ok else 'no'}" if case.target is not None
                    else "; no target, so no loss to compare") + ".")
    derivation = derive(case)
    p_shift, L_shift = _shifted_softmax(derivation, constant)
    fmt = Format(places=3)
    refs = [Ref("before", i) for i in derivation.outputs["p"] + p_shift]
    if derivation.loss is not None:
        refs += [Ref("before", derivation.loss), Ref("before", L_shift)]
    text = derivation.decimals(refs, fmt)
    pairs = list(zip(derivation.outputs["p"], p_shift))
    if derivation.loss is not None:
        pairs.append((derivation.loss, L_shift))
    verdicts = [_agree(derivation, before, after) for before, after in pairs]
    engine_ok = all(v is True for v in verdicts)
    engine_ok &= all(text[Ref("before", b)] == text[Ref("before", a)] for b, a in pairs)
    undecided = sum(v is None for v in verdicts)
    differ = sum(v is False for v in verdicts)
    top = certified_argmax(derivation, derivation.outputs["p"]).index
    lines.append(f"Engine (certified balls from {START_PREC} bits up): p(token)"
                 + ("" if derivation.loss is None else " and L") + f" with z and with z + {constant}"
                 + (f": each pair's difference ball holds 0 and is "
                    f"narrower than 2^-{AGREE_BITS} of the value" if not differ and not undecided else
                    f": {differ} of {len(pairs)} pairs certainly differ, {undecided} undecided at {MAX_PREC} bits")
                 + f"; p({case.pieces[top]}) = {_both(text, derivation.outputs['p'][top], p_shift[top])}"
                 + (f"; L = {_both(text, derivation.loss, L_shift)}" if derivation.loss is not None else "") + ".")
    return Result("shift", exact_ok and loss_ok and engine_ok, lines)


def _both(text: dict[Ref, str], before: int, after: int) -> str:
    """``0.475 both ways``, or both printed values when they differ."""
    a, b = text[Ref("before", before)], text[Ref("before", after)]
    return f"{a} both ways" if a == b else f"{a} with z, {b} shifted"


def _agree(derivation: Derivation, before: int, after: int) -> bool | None:
    """Whether nodes ``before`` and ``after`` hold the same value, certified: exact values
    are compared exactly; balls are evaluated at START_PREC, then at doubled precisions up
    to MAX_PREC, until the difference ball excludes 0 (False: they differ) or holds 0 and
    its radius is below 2^-AGREE_BITS of the smaller magnitude (True). None: still
    undecided at MAX_PREC bits. A relative bound, never a fixed absolute tolerance (a loss
    near 1e8 carries an absolute error near 1e-30 at 128 bits, a p near e^-1e8 far less)."""
    prec = START_PREC
    while prec <= MAX_PREC:
        a, b = (derivation.value(Ref("before", node), prec) for node in (before, after))
        if is_exact(a) and is_exact(b):
            return a == b
        with ctx.workprec(prec):
            a, b = as_arb(a), as_arb(b)
            diff = b - a
            if not diff.contains(0):
                return False
            size = min(a.abs_lower(), b.abs_lower())
            if size > 0 and diff.rad() <= size * arb(2) ** -AGREE_BITS:
                return True
        prec *= 2
    return None


def _shifted_softmax(derivation: Derivation, constant: int) -> tuple[list[int], int | None]:
    """Add z + C, e^(z + C), their sum, p' and L' = -ln p'(target) to the derivation's graph
    (after every other node); return the ids of p' and L'."""
    graph, case = derivation.graph, derivation.case
    # the logit as it enters e^ (z / T for given logits, whose z is the leaf before T)
    z = [graph.nodes[e].parents[0] for e in derivation.outputs["exp_z"]]
    shifted = [graph.scratch(Lin([1], Fraction(constant)), (zi,), f"z_{case.pieces[c]} + {constant}")
               for c, zi in enumerate(z)]
    exps = [graph.scratch(Exp(), (s,), f"e^(z_{case.pieces[c]} + {constant})") for c, s in enumerate(shifted)]
    total = graph.scratch(Lin([1] * len(exps)), exps, f"sum_j e^(z_j + {constant})")
    p = [graph.add(Div(), (e, total), Meta(None, f"p'({case.pieces[c]})")) for c, e in enumerate(exps)]
    loss = None
    if case.target is not None and derivation.loss is not None:
        log_p = graph.scratch(Log(), (p[case.target],), f"ln p'({case.pieces[case.target]})")
        if case.conventions.loss_log == "2":
            ln2 = graph.scratch(Log(), (graph.leaf(Fraction(2), Meta(None, "2")),), "ln 2")
            loss = graph.add(Div(), (graph.scratch(Lin([-1]), (log_p,), "-ln p'"), ln2), Meta(None, "L'"))
        else:
            loss = graph.add(Lin([-1]), (log_p,), Meta(None, "L'"))
    return p, loss


CHECKS = {"rotation": rotation, "uniform-keys": uniform_keys, "temperature": temperature, "shift": shift}


def verify(case: Case, name: str) -> list[Result]:
    """Run the check ``name`` (one of :data:`CHECKS`) or ``all`` of them. Under ``all`` a
    check that does not apply to the case is reported as skipped (a passing Result whose
    line says why) instead of raising.

    Raises:
        DeriveError: an unknown check, or a named check that does not apply to the case.
    """
    if name == "all":
        out = []
        for key, check in CHECKS.items():
            try:
                out.append(check(case))
            except DeriveError as exc:
                out.append(Result(key, True, [f"does not apply: {exc.detail}"], skipped=True))
        return out
    if name not in CHECKS:
        raise DeriveError(f"unknown check {name!r}", expected="one of " + ", ".join(list(CHECKS) + ["all"]))
    return [CHECKS[name](case)]
