"""Rotary position embeddings (rules/rope.py; RoFormer, Su et al. 2021, eq. 34).

* Hugging Face ``LlamaForCausalLM`` (tests/rope_export.py): random Llama-shaped cases --
  RMSNorm, rotate-half rotary over the whole head, SwiGLU, grouped- and multi-query
  attention, no biases, untied W_U -- agree with HF record by record within 1e-9: rms, u,
  q, k, v, q~, k~ (HF's own apply_rotary_pos_emb), q~.k~, s, e^s, a, o, attn, h, the MLP's
  hidden, g, up, gated, m, y, f, z, p, L, every gradient, the SGD step and the pass after.
* ``GPTNeoXForCausalLM``: random cases with partial rotary (rotary_pct 1/4 and 1/2), LayerNorm,
  erf GELU and biases, sequential residual (``use_parallel_residual=False``) and, where blocks
  may be parallel (``layout = "parallel"``), ``use_parallel_residual=True``.
* ``GPTJForCausalLM`` (parallel blocks only): interleaved rotary on rotary_dim columns, the
  parallel block with one shared ln_1 (``shared_norm = true``), gelu_new.
* An independent computation of the published formula with mpmath (q~ of one row in both
  layouts, 30 digits), and the property the rotation is built for (eq. 16): the score
  q~_m . k~_n of a repeated token depends on m - n only.
* Bad values of the rotary fields are one-line errors naming the field.
"""

from __future__ import annotations

import random
import re
from fractions import Fraction

import mpmath
import pytest
from typer.testing import CliRunner

from derive.case import load_case
from derive.cli import app
from derive.derivation import derive
from derive.graph import is_exact
from derive.steps import Ref

from gpt2_export import compare, reference_elements
from random_cases import _matrix, _vector
from test_gpt2_crosscheck import one_torch_thread  # noqa: F401  (autouse: one torch thread for tiny tensors)
from rope_export import (float64_everywhere, gptj_forward, gptj_model, llama_forward, llama_model, neox_forward,
                         neox_model)

pytest.importorskip("transformers")

SEEDS = list(range(10))



def _shapes(rng: random.Random, d_ks: tuple[int, ...]) -> tuple[int, int, int]:
    """d_model, heads and d_k: d_k from ``d_ks``, 1 to 3 heads."""
    d_k = rng.choice(d_ks)
    heads = rng.choice((1, 2, 3) if d_k <= 2 else (1, 2))
    return d_k * heads, heads, d_k


def _head(seed: int, kind: str, rng: random.Random, conventions: list[str], d: int, heads: int, V: int,
          T: int) -> list[str]:
    """The case text up to [model] (name, vocabulary, prompt, conventions, d_model, heads, E, W_U)."""
    lines = [f'name = "{kind}-{seed}"', "[vocab]", "pieces = [" + ", ".join(f'"w{i}"' for i in range(V)) + "]",
             "[prompt]", "ids = [" + ", ".join(str(rng.randrange(V)) for _ in range(T)) + "]",
             f"target = {rng.randrange(V)}", "[conventions]", 'positions = "rotary"'] + conventions
    rate = rng.choice(("0.1", '"1/4"'))
    lines += [f"learning_rate = {rate}", "[model]", f"d_model = {d}", f"heads = {heads}",
              f"E = {_matrix(rng, V, d)}", f"W_U = {_matrix(rng, d, V)}"]
    return lines


def llama_case_text(seed: int) -> str:
    """A random Llama-shaped case: RMSNorm (eps 1e-6, 1e-5 or 1/64), rotary rotate-half
    (base 10000, 500000, 100 or 7.5), gated SiLU MLP, kv_heads dividing heads, 1 or 2
    blocks, gains sometimes, no biases, untied W_U, dyadic weights."""
    rng = random.Random(f"derive-rope-llama-{seed}")
    d, heads, d_k = _shapes(rng, (2, 4))
    kv = rng.choice([k for k in range(1, heads + 1) if heads % k == 0])
    V, T, d_mlp = rng.randint(3, 7), rng.randint(2, 6), rng.randint(2, 2 * d)
    eps = rng.choice(("1e-6", "1e-5", '"1/64"'))
    conventions = ['norm = "rmsnorm"', f"rmsnorm_eps = {eps}",
                   f"rotary_base = {rng.choice(('10000', '500000', '100', '7.5'))}", 'activation = "silu"']
    lines = _head(seed, "llama", rng, conventions, d, heads, V, T)
    if rng.random() < 0.5:
        lines.append(f"lnf_gain = {_vector(rng, d, 1, Fraction(1))}")
    for _ in range(rng.randint(1, 2)):
        lines += ["[[blocks]]", "gated = true", f"kv_heads = {kv}", f"W_Q = {_matrix(rng, d, d)}",
                  f"W_K = {_matrix(rng, d, kv * d_k)}", f"W_V = {_matrix(rng, d, kv * d_k)}",
                  f"W_O = {_matrix(rng, d, d)}", f"W_1 = {_matrix(rng, d, d_mlp)}",
                  f"W_3 = {_matrix(rng, d, d_mlp)}", f"W_2 = {_matrix(rng, d_mlp, d)}"]
        lines += [f"{g} = {_vector(rng, d, 1, Fraction(1))}" for g in ("ln1_gain", "ln2_gain") if rng.random() < 0.5]
    return "\n".join(lines) + "\n"


def neox_case_text(seed: int, parallel: bool = False) -> str:
    """A random GPT-NeoX-shaped case: LayerNorm, rotary rotate-half on a fraction 1/4 or 1/2
    of each head (r = 2 or 4), erf GELU, biases and norm gains and biases sometimes; with
    ``parallel``, blocks ``layout = "parallel"`` (use_parallel_residual) with two norms."""
    rng = random.Random(f"derive-rope-neox-{'parallel-' if parallel else ''}{seed}")
    d, heads, d_k = _shapes(rng, (4, 8))
    fraction = rng.choice(("1/2",) if d_k == 4 else ("1/4", "1/2"))
    V, T, d_mlp = rng.randint(3, 7), rng.randint(2, 6), rng.randint(2, 2 * d)
    eps = rng.choice(("1e-5", '"1/64"'))
    conventions = [f"layernorm_eps = {eps}", f'rotary_fraction = "{fraction}"',
                   f"rotary_base = {rng.choice(('10000', '100'))}", 'activation = "gelu_erf"']
    lines = _head(seed, "neox", rng, conventions, d, heads, V, T)
    if rng.random() < 0.5:
        lines += [f"lnf_gain = {_vector(rng, d, 1, Fraction(1))}", f"lnf_bias = {_vector(rng, d)}"]
    for _ in range(rng.randint(1, 2)):
        lines += ["[[blocks]]"] + (['layout = "parallel"'] if parallel else [])
        lines += [f"{n} = {_matrix(rng, d, d)}" for n in ("W_Q", "W_K", "W_V", "W_O")]
        lines += [f"W_1 = {_matrix(rng, d, d_mlp)}", f"W_2 = {_matrix(rng, d_mlp, d)}"]
        if rng.random() < 0.5:
            lines += [f"{n} = {_vector(rng, d)}" for n in ("b_Q", "b_K", "b_V", "b_O", "b_2")]
            lines.append(f"b_1 = {_vector(rng, d_mlp)}")
        if rng.random() < 0.5:
            lines += [f"{n}_gain = {_vector(rng, d, 1, Fraction(1))}" for n in ("ln1", "ln2")]
            lines += [f"{n}_bias = {_vector(rng, d)}" for n in ("ln1", "ln2")]
    return "\n".join(lines) + "\n"


def gptj_case_text(seed: int) -> str:
    """A random GPT-J-shaped case: parallel blocks with one shared LayerNorm, interleaved
    rotary (base 10000, GPT-J's) on rotary_dim = r of each head's d_k columns (r = 2 or 4 of
    4 or 8), gelu_tanh, no attention biases, MLP biases and norm gains and biases sometimes."""
    rng = random.Random(f"derive-rope-gptj-{seed}")
    d, heads, d_k = _shapes(rng, (4, 8))
    fraction = rng.choice(("1/2", "1") if d_k == 4 else ("1/4", "1/2"))
    V, T, d_mlp = rng.randint(3, 7), rng.randint(2, 6), rng.randint(2, 2 * d)
    eps = rng.choice(("1e-5", '"1/64"'))
    conventions = [f"layernorm_eps = {eps}", 'rotary_layout = "interleaved"', f'rotary_fraction = "{fraction}"',
                   'activation = "gelu_tanh"']
    lines = _head(seed, "gptj", rng, conventions, d, heads, V, T)
    if rng.random() < 0.5:
        lines += [f"lnf_gain = {_vector(rng, d, 1, Fraction(1))}", f"lnf_bias = {_vector(rng, d)}"]
    for _ in range(rng.randint(1, 2)):
        lines += ["[[blocks]]", 'layout = "parallel"', "shared_norm = true"]
        lines += [f"{n} = {_matrix(rng, d, d)}" for n in ("W_Q", "W_K", "W_V", "W_O")]
        lines += [f"W_1 = {_matrix(rng, d, d_mlp)}", f"W_2 = {_matrix(rng, d_mlp, d)}"]
        if rng.random() < 0.5:
            lines += [f"b_1 = {_vector(rng, d_mlp)}", f"b_2 = {_vector(rng, d)}"]
        if rng.random() < 0.5:
            lines += [f"ln1_gain = {_vector(rng, d, 1, Fraction(1))}", f"ln1_bias = {_vector(rng, d)}"]
    return "\n".join(lines) + "\n"


def _load(text: str, tmp_path, name: str):
    path = tmp_path / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return load_case(str(path))


class AtPrecision:
    """A derivation whose values are read at ``prec`` bits instead of the default 128: the
    certified balls of a large case's pass after the SGD step can lose about 100 bits (a
    radius of 1e-7 on z with d_model 16, rotary or not), and compare() needs radii below
    1e-9; everything else is the derivation's own."""

    def __init__(self, derivation, prec: int):
        self.derivation, self.prec = derivation, prec

    def value(self, ref, prec: int | None = None):
        return self.derivation.value(ref, max(prec or 0, self.prec))

    def __getattr__(self, name):
        return getattr(self.derivation, name)


def hf_crosscheck(case, build, forward) -> dict:
    """derive against the HF model ``build(case)`` record by record, gradients included
    (derive's certified balls at 256 bits, each within 1e-9 of HF's double)."""
    with float64_everywhere():
        model, views = build(case)
        expected = reference_elements(case, forward(case, model), views)
    return compare(AtPrecision(derive(case), 256), expected, where=case.name, exported=False)


ROTARY = {"q_rot", "k_rot", "qk_rot"}


@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed-{s}" for s in SEEDS])
def test_llama_agrees(seed, tmp_path):
    """A Llama-shaped case agrees with LlamaForCausalLM on every record and gradient."""
    case = _load(llama_case_text(seed), tmp_path, f"llama-{seed}")
    result = hf_crosscheck(case, llama_model, llama_forward)
    assert ROTARY | {"rms", "up", "gated", "grad"} <= set(result["symbols"])
    kv = case.blocks[0].options["kv_heads"]
    assert result["symbols"]["k_rot"] == len(case.ids) * kv * case.d_k * len(case.blocks)
    # every weight has a gradient: E, W_U, and W_Q, W_K, W_V, W_O, W_1, W_2, W_3 of each block
    weights = case.d_model * len(case.pieces) * 2 + sum(
        sum(len(m) * len(m[0]) for m in b.matrices.values()) + sum(len(v) for v in b.vectors.values())
        for b in case.blocks) + sum(len(v) for v in case.final_vectors.values())
    assert result["symbols"]["grad"] == weights


def test_llama_seeds_cover_the_shapes(tmp_path):
    """The Llama seeds reach multi-query, grouped and full key/value heads, 1 and 2 blocks,
    several bases and head widths."""
    cases = [_load(llama_case_text(s), tmp_path, f"l{s}") for s in SEEDS]
    kinds = {("mqa" if b.options["kv_heads"] == 1 and c.heads > 1 else
              "mha" if b.options["kv_heads"] == c.heads else "gqa") for c in cases for b in c.blocks}
    assert kinds >= {"mqa", "mha"} and {len(c.blocks) for c in cases} == {1, 2}
    assert len({c.conventions.rotary_base for c in cases}) >= 3
    assert any(c.d_k == 4 for c in cases) and any(c.d_k == 2 for c in cases)
    assert all(len(c.ids) >= 2 for c in cases)  # pos 0 turns nothing: every case turns a row


def test_neox_and_gptj_seeds_cover_partial_rotary(tmp_path):
    """NeoX turns 1/4 and 1/2 of a head (r = 2 or 4); GPT-J also the whole head, and turns
    r = 4 columns somewhere (where its interleaved pairs differ from rotate_half's); every
    case has at least two tokens."""
    texts = [(neox_case_text(s), "n") for s in SEEDS] + [(gptj_case_text(s), "j") for s in SEEDS]
    cases = [(_load(t, tmp_path, f"{k}{i}"), k) for i, (t, k) in enumerate(texts)]
    fractions = {k: {c.conventions.rotary_fraction for c, kind in cases if kind == k} for k in "nj"}
    assert fractions == {"n": {Fraction(1, 4), Fraction(1, 2)}, "j": {Fraction(1, 4), Fraction(1, 2), Fraction(1)}}
    assert any(kind == "j" and c.conventions.rotary_fraction * c.d_k == 4 for c, kind in cases)
    assert all(len(c.ids) >= 2 for c, _ in cases)


@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed-{s}" for s in SEEDS])
def test_neox_partial_rotary_agrees(seed, tmp_path):
    """A GPT-NeoX-shaped case (rotary_pct < 1, sequential residual) agrees with
    GPTNeoXForCausalLM on every record and gradient; the columns past r pass unchanged."""
    case = _load(neox_case_text(seed), tmp_path, f"neox-{seed}")
    assert case.conventions.rotary_fraction < 1
    result = hf_crosscheck(case, neox_model, neox_forward)
    assert ROTARY | {"mu", "sigma", "grad"} <= set(result["symbols"])


def _has_parallel_blocks() -> bool:
    """Whether a block may say ``layout = "parallel"`` (helper "blocks"' change, issue 9 item 1)."""
    from derive import registry
    registry.load()
    return any(o.field == "layout" and "parallel" in o.options() for o in registry.get("block").options)


needs_parallel = pytest.mark.skipif(not _has_parallel_blocks(), reason="no parallel block layout on this branch")


@needs_parallel
@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed-{s}" for s in SEEDS])
def test_gptj_agrees(seed, tmp_path):
    """A GPT-J-shaped case (interleaved rotary on rotary_dim columns, parallel block with
    one shared ln_1) agrees with GPTJForCausalLM on every record and gradient."""
    case = _load(gptj_case_text(seed), tmp_path, f"gptj-{seed}")
    result = hf_crosscheck(case, gptj_model, gptj_forward)
    assert ROTARY | {"mu", "sigma", "grad"} <= set(result["symbols"]) and "u2" not in result["symbols"]


@needs_parallel
@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed-{s}" for s in SEEDS])
def test_neox_parallel_agrees(seed, tmp_path):
    """A GPT-NeoX case with use_parallel_residual=True (two norms, both reading x) agrees
    with GPTNeoXForCausalLM on every record and gradient."""
    case = _load(neox_case_text(seed, parallel=True), tmp_path, f"neox-parallel-{seed}")
    result = hf_crosscheck(case, lambda c: neox_model(c, parallel=True), neox_forward)
    assert ROTARY | {"u2", "grad"} <= set(result["symbols"]) and "h" not in result["symbols"]


# --------------------------------------------------------------------------- independent checks

HAND = """\
name = "rope-hand"
[vocab]
pieces = ["a", "b", "c"]
[prompt]
ids = [0, 1, 2, 0]
target = 1
[conventions]
positions = "rotary"
rotary_base = {base}
rotary_layout = "{layout}"
rotary_fraction = {fraction}
[model]
d_model = 6
heads = 1
E = [[1, 0.5, -0.25, 2, 0, -1], [0.5, -1, 1, 0.25, 1, 0], [-0.5, 0.75, 0, -1, 0.5, 1]]
W_U = [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [0, 1, 1], [1, 0, 1]]
[[blocks]]
sublayers = ["attention"]
layernorm = false
W_Q = "I"
W_K = "I"
W_V = "I"
W_O = "I"
"""


def _mp(value) -> mpmath.mpf:
    """A derive value (an exact fmpq, or an arb ball: its midpoint) as an mpmath number."""
    if is_exact(value):
        return mpmath.mpf(int(value.p)) / int(value.q)
    return mpmath.mpf(value.mid().str(40, radius=False))


def mp_rotate(x: list, pos: int, base, r: int, layout: str) -> list:
    """RoFormer's R^d_{Theta,pos} x (eq. 34 for interleaved pairs; HF's rotate_half pairs
    (i, i + r/2)) with mpmath at 40 digits, written from the paper, not from derive; ``base``
    a Fraction."""
    mpmath.mp.dps = 40
    out = [mpmath.mpf(v) for v in x]
    for i in range(r // 2):
        theta = mpmath.power(mpmath.mpf(base.numerator) / base.denominator, mpmath.mpf(-2 * i) / r)
        a, b = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + r // 2)
        c, s = mpmath.cos(pos * theta), mpmath.sin(pos * theta)
        out[a], out[b] = x[a] * c - x[b] * s, x[b] * c + x[a] * s
    return out


@pytest.mark.parametrize("layout,fraction,base", [("rotate_half", "1", "10000"), ("interleaved", "1", "100"),
                                                  ("rotate_half", '"2/3"', "7.5"), ("interleaved", '"1/3"', "10000")])
def test_rotation_matches_an_independent_computation(tmp_path, layout, fraction, base):
    """With W_Q = W_K = I and no norm, q_t = k_t = E[id_t]: derive's q~_t of every row equals
    the mpmath rotation of E[id_t] by pos = t - 1 (1e-25), in both layouts and with part of
    the head passed through."""
    case = _load(HAND.format(layout=layout, fraction=fraction, base=base), tmp_path, "hand")
    derivation = derive(case)
    r = int(Fraction(fraction.strip('"')) * 6)
    got = {}
    for ref in derivation.quantities():
        meta = derivation.meta(ref)
        if ref.phase == "before" and meta.symbol == "q_rot":
            got[(meta.position, meta.index)] = derivation.value(Ref("before", ref.id))
    assert len(got) == 4 * 6
    for t, token in enumerate(case.ids, 1):
        want = mp_rotate([mpmath.mpf(float(v)) for v in case.E[token]], t - 1, Fraction(base), r, layout)
        for c in range(6):
            ball = got[(t, c + 1)]
            value = _mp(ball)
            assert abs(value - want[c]) < mpmath.mpf("1e-25"), (t, c, value, want[c])


def test_scores_depend_on_the_offset_only(tmp_path):
    """Su et al. 2021, eq. 16: q~_m . k~_n = Re[q_m k_n^* e^{i (m - n) theta}] depends on m - n
    only. A repeated token (the same q and k at every position): the scores along each
    diagonal are equal, and differ between diagonals."""
    text = HAND.format(layout="rotate_half", fraction="1", base="10").replace("ids = [0, 1, 2, 0]",
                                                                            "ids = [1, 1, 1, 1]")
    derivation = derive(_load(text, tmp_path, "same"))
    score = {}
    for ref in derivation.quantities():
        meta = derivation.meta(ref)
        if ref.phase == "before" and meta.symbol == "qk_rot":
            score[(meta.position, meta.index)] = float(_mp(derivation.value(ref)))
    for m in range(1, 5):
        for n in range(1, m + 1):
            assert score[(m, n)] == pytest.approx(score[(m - n + 1, 1)], abs=1e-12)
    diagonals = [score[(k, 1)] for k in range(1, 5)]
    assert len({round(v, 9) for v in diagonals}) == 4


@pytest.mark.parametrize("edit,field,words", [
    ("rotary_fraction = 1", "conventions.rotary_fraction", "turns 3 of a head's d_k = 3"),
    ('rotary_fraction = "1/2"', "conventions.rotary_fraction", "turns 3/2"),
    ("rotary_fraction = 2", "conventions.rotary_fraction", "turns 6"),
    ("rotary_base = 0", "conventions.rotary_base", ""),
    ('rotary_layout = "pairs"', "conventions.rotary_layout", "interleaved"),
])
def test_bad_rotary_fields_are_one_line_errors(tmp_path, edit, field, words):
    """Heads of d_k = 3 (d_model 6, 2 heads): a fraction that does not give an even whole
    number of columns from 2 to d_k, a base <= 0, an unknown layout: exit 2, one line naming
    the field."""
    text = HAND.format(layout="rotate_half", fraction="1", base="10").replace("heads = 1", "heads = 2")
    key = edit.split(" = ")[0]
    text = re.sub(rf"(?m)^{key} = .*$", edit, text)
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(path)])
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert "\n" not in line and field in line and words in line and "Traceback" not in line



@pytest.mark.parametrize("name", [dict(symbol="q_rot", position=5, index=2), dict(symbol="k_rot", position=3, index=1,
                                                                                     head=2),
                                  dict(symbol="qk_rot", position=5, index=1)])
def test_turned_names_print_and_read_back(name):
    """q~_5[2], k~_3^(2)[1] and q~_5 . k~_1 in the three notations (q~, q with a combining
    tilde, \\tilde{q}) read back as the same Name, and the math reader of ``derive check``
    labels \\tilde{q}_{5} \\cdot \\tilde{k}_{1} as the score q~_5.k~_1."""
    from derive.mathread import label, read
    from derive.name import Name
    from derive.name_parser import parse_name
    from derive.printing import latex, text, unicode

    wanted = Name(name.pop("symbol"), **name)
    for printed in (text(wanted), unicode(wanted), latex(wanted)):
        assert "~" in printed or "\u0303" in printed or r"\tilde" in printed
        assert parse_name(printed) == wanted, printed
    assert label(read(r"\tilde{q}_{5} \cdot \tilde{k}_{1}").exprs[0]) == "q~_5.k~_1"
    assert parse_name("q_5.k_1").fields.symbol == "qk"
