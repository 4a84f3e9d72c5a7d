"""The bundled cases: every one loads and runs, and the two built from the seeds 003 and
004 (``woodchuck`` and ``crane``) have the shapes and facts their seeds give.

The facts are computed here independently of derive, from the TOML files themselves
(tomllib, fractions, math): the parameter count, the shared embedding row, the chapter's
"Row a has mean 0.75 and variance 0.1875 ... -1.7320", the chapter's printed logits, and
the crane's hand-set head (q_i = x'_i . E[it], k_j = x'_j . E[load]) in plain floats.
Where derive's own output is compared, it is read from ``derive run NAME --format json``.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tomllib
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest

from derive.case import bundled_cases

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "cases"
NAMES = sorted(bundled_cases())


def toml(name: str) -> dict:
    """A case file parsed with exact decimals."""
    return tomllib.loads((CASES / f"{name}.toml").read_text(encoding="utf-8"), parse_float=Decimal)


def exact(value) -> Fraction:
    """A TOML number (int, Decimal or "p/q" string) as a Fraction."""
    return Fraction(value) if not isinstance(value, Decimal) else Fraction(str(value))


def matrix(rows) -> list[list[Fraction]]:
    """A TOML matrix as Fractions."""
    return [[exact(x) for x in row] for row in rows]


def derive_cli(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """Run ``python -m derive ARGS`` and return the finished process."""
    return subprocess.run([sys.executable, "-m", "derive", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


_JSON: dict[tuple, list[dict]] = {}


def records(name: str, places: int = 3) -> list[dict]:
    """The JSON records of ``derive run NAME --places P --format json`` (run once per session)."""
    key = (name, places)
    if key not in _JSON:
        done = derive_cli("run", name, "--format", "json", "--places", str(places))
        assert done.returncode == 0, done.stderr
        _JSON[key] = json.loads(done.stdout)
    return _JSON[key]


def sinusoid(pos: int, d: int, base: float = 10000.0) -> list[float]:
    """PE[pos] interleaved: PE[pos, 2i] = sin(pos w_i), PE[pos, 2i+1] = cos(pos w_i),
    w_i = 1 / base^(2i/d) (Vaswani et al. 2017, section 3.5), in floats."""
    out = []
    for i in range(d // 2):
        w = 1 / base ** (2 * i / d)
        out += [math.sin(pos * w), math.cos(pos * w)]
    return out


# --------------------------------------------------------------------------- every case

def test_the_seed_cases_are_bundled():
    assert {"cat-climbed", "woodchuck", "crane"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_every_bundled_case_runs(name):
    done = derive_cli("run", name)
    assert done.returncode == 0, done.stderr
    assert "Step 1." in done.stdout


@pytest.mark.parametrize("name", NAMES)
def test_every_bundled_case_gives_json(name):
    recs = records(name)
    assert isinstance(recs, list) and recs
    assert all({"symbol", "label", "decimal", "value", "exact"} <= set(r) for r in recs)
    assert not [r["label"] for r in recs if "undecided" in r["decimal"]]
    case = toml(name)
    if case.get("prompt", {}).get("target") is not None:
        assert [r for r in recs if r["symbol"] == "L" and not r["after_step"]]


# --------------------------------------------------------------------------- woodchuck

WOODCHUCK_WORDS = ["a", "chuck", "how", "much", "wood", "woodchuck", "would"]


def count_parameters(case: dict) -> dict[str, int]:
    """The case's weights, counted from its TOML: E, a learned P, an untied W_U, each
    block's matrices (W_Q ... given whole or head by head) and vectors (biases and
    LayerNorm gains and biases), and the final LayerNorm's gain and bias."""
    model = case["model"]
    sizes = {"E": len(model["E"]) * len(model["E"][0])}
    if case.get("conventions", {}).get("positions", "learned") == "learned":
        sizes["P"] = model.get("context_length", len(model["P"])) * len(model["P"][0])
    if model["W_U"] != "tied":
        sizes["W_U"] = len(model["W_U"]) * len(model["W_U"][0])
    for name in ("lnf_gain", "lnf_bias"):
        if name in model:
            sizes[name] = len(model[name])
    d = model["d_model"]
    for b, block in enumerate(case["blocks"], 1):
        for key, value in block.items():
            if key in ("sublayers", "layernorm"):
                continue
            if key == "heads":
                for h, head in enumerate(value, 1):
                    for hk, hv in head.items():
                        if hk != "name":
                            sizes[f"{b}.{h}.{hk}"] = len(hv) * len(hv[0]) if isinstance(hv[0], list) else len(hv)
            elif value == "I":
                sizes[f"{b}.{key}"] = d * d
            else:
                sizes[f"{b}.{key}"] = len(value) * len(value[0]) if isinstance(value[0], list) else len(value)
    return sizes


def test_woodchuck_has_172_parameters():
    sizes = count_parameters(toml("woodchuck"))
    assert sizes == {"E": 32, "1.W_Q": 16, "1.W_K": 16, "1.W_V": 16, "1.W_O": 16,
                     "1.W_1": 32, "1.b_1": 8, "1.W_2": 32, "1.b_2": 4}
    assert sum(sizes.values()) == 172


def test_woodchuck_derive_agrees_on_172():
    done = derive_cli("params", "woodchuck")
    assert done.returncode == 0, done.stderr
    assert any(line.split("│")[1:2] and "all" in line.split("│")[1] and "172" in line
               for line in done.stdout.splitlines())
    trained = [r for r in records("woodchuck") if r["symbol"] == "grad"]
    assert len(trained) == 172


def test_woodchuck_shape():
    case = toml("woodchuck")
    conv, model = case["conventions"], case["model"]
    assert model["d_model"] == 4 and model["heads"] == 2 and len(case["blocks"]) == 1
    assert model["W_U"] == "tied" and conv["positions"] == "sinusoidal"
    assert conv["activation"] == "relu" and exact(conv["layernorm_eps"]) == Fraction(1, 100000)
    block = case["blocks"][0]
    assert len(block["W_1"]) == 4 and len(block["W_1"][0]) == 8 and len(block["b_1"]) == 8
    assert len(block["W_2"]) == 8 and len(block["W_2"][0]) == 4 and len(block["b_2"]) == 4
    assert case["prompt"]["target"] == "wood"
    pieces = case["vocab"]["pieces"]
    assert " ".join(pieces[i] for i in case["prompt"]["ids"]) == "a woodchuck would chuck"


def test_woodchuck_ids_are_alphabetical_then_the_full_stop():
    pieces = toml("woodchuck")["vocab"]["pieces"]
    assert pieces == sorted(WOODCHUCK_WORDS) + ["."]
    # the chapter's order ("a, chuck, how, much, wood, woodchuck, would, and the full
    # stop"), not Python's sorted(), which puts "." (ASCII 46) before the letters
    assert sorted(pieces)[0] == "." != pieces[0]


def test_woodchuck_how_and_much_share_one_row():
    case = toml("woodchuck")
    pieces, E = case["vocab"]["pieces"], matrix(case["model"]["E"])
    rows = {p: tuple(E[i]) for i, p in enumerate(pieces)}
    assert rows["how"] == rows["much"]
    assert len(set(rows.values())) == len(pieces) - 1  # no other two tokens share a row


def test_woodchuck_row_a_as_the_chapter_prints_it():
    """"Row a has mean 0.75 and variance 0.1875, so its first entry becomes
    (0 - 0.75)/sqrt(0.1875 + eps) = -1.7320 with eps = 10^-5"."""
    case = toml("woodchuck")
    E = matrix(case["model"]["E"])
    a = case["vocab"]["pieces"].index("a")
    assert case["prompt"]["ids"][0] == a
    pe0 = [Fraction(0), Fraction(1), Fraction(0), Fraction(1)]  # sin 0, cos 0, sin 0, cos 0
    assert sinusoid(0, 4) == [float(v) for v in pe0]
    x = [e + p for e, p in zip(E[a], pe0)]
    mean = sum(x) / 4
    variance = sum((v - mean) ** 2 for v in x) / 4
    assert (mean, variance) == (Fraction(3, 4), Fraction(3, 16))  # 0.75 and 0.1875, exactly
    eps = exact(case["conventions"]["layernorm_eps"])
    assert x[0] == 0
    first = float(x[0] - mean) / math.sqrt(variance + eps)  # floats: 4 places are asked for
    assert f"{first:.4f}" == "-1.7320"
    recs = records("woodchuck", places=4)
    u11 = next(r for r in recs if r["symbol"] == "u" and r["label"] == "u_1[1]" and not r["after_step"])
    mu1 = next(r for r in recs if r["symbol"] == "mu" and r["norm"] == "ln1" and r["position"] == 1
               and not r["after_step"])
    assert u11["decimal"] == "-1.7320" and mu1["decimal"] == "0.7500"


def test_woodchuck_embedding_gives_the_chapters_printed_logits():
    """Fed the chapter's printed final vector z, the rows of E give the chapter's printed
    numbers: how = much = -0.2599, p(wood) = 0.3107, L = 1.1690, and a step of 0.5 on the
    logits takes L to 0.9119, an improvement of 0.2570."""
    case = toml("woodchuck")
    pieces, E = case["vocab"]["pieces"], [[float(v) for v in row] for row in matrix(case["model"]["E"])]
    z = [-0.6805, -0.5283, -0.5198, 1.7285]
    logits = [sum(a * b for a, b in zip(row, z)) for row in E]
    assert f"{logits[pieces.index('how')]:.4f}" == f"{logits[pieces.index('much')]:.4f}" == "-0.2599"
    total = sum(math.exp(v) for v in logits)
    p = [math.exp(v) / total for v in logits]
    wood = pieces.index("wood")
    assert max(range(len(p)), key=p.__getitem__) == wood
    assert f"{p[wood]:.4f}" == "0.3107" and f"{-math.log(p[wood]):.4f}" == "1.1690"
    stepped = [v - 0.5 * (q - (i == wood)) for i, (v, q) in enumerate(zip(logits, p))]
    after = -stepped[wood] + math.log(sum(math.exp(v) for v in stepped))
    assert f"{after:.4f}" == "0.9119" and f"{-math.log(p[wood]) - after:.4f}" == "0.2570"
    assert sum(q - (i == wood) < 0 for i, q in enumerate(p)) == 1  # one gradient negative, seven positive


def test_woodchuck_reads_as_the_chapter_tells_it():
    """What derive computes for the hand-set weights, against the chapter's story: wood is
    the answer, how and much tie, 24 of the 32 hidden values are zero, head 1 from woodchuck
    looks back at a, head 2 from woodchuck stays on woodchuck, chuck's wood column grows."""
    recs = [r for r in records("woodchuck") if not r["after_step"]]
    p = {r["index"]: Fraction(r["value"]) for r in recs if r["symbol"] == "p"}
    assert max(p, key=p.get) == "wood"
    z = {r["index"]: r["value"] for r in recs if r["symbol"] == "z"}
    assert z["how"] == z["much"]
    g = [r for r in recs if r["symbol"] == "g"]
    assert len(g) == 32 and sum(r["exact"] == "0" for r in g) == 24
    a = {(r["head"], r["position"], r["index"]): Fraction(r["value"]) for r in recs if r["symbol"] == "a"}
    assert a[1, 2, 1] > Fraction(1, 2) and a[2, 2, 2] > Fraction(1, 2)
    x = {r["label"]: Fraction(r["value"]) for r in recs if r["symbol"] in ("x", "h")}
    assert x["x_4[4]"] < Fraction(3, 2) < 3 < x["h_4[4]"]  # near 1.5 before attention, above 3 after


# --------------------------------------------------------------------------- crane

def crane_prompt() -> tuple[list[str], list[str]]:
    """The crane's vocabulary and its prompt as pieces."""
    case = toml("crane")
    pieces = case["vocab"]["pieces"]
    return pieces, [pieces[i] for i in case["prompt"]["ids"]]


def test_crane_shape():
    case = toml("crane")
    pieces, words = crane_prompt()
    assert 60 <= len(words) <= 68
    assert case["model"]["d_model"] == 16 and case["model"]["W_U"] == "tied"
    assert words.count("crane") == 2 and words.count("it") == 2 and words.count("load") == 1
    assert pieces == sorted(set(words) | {case["prompt"]["target"]})
    assert case["conventions"]["positions"] == "sinusoidal"
    (block,) = case["blocks"]
    assert block["sublayers"] == ["attention"] and block["layernorm"] is False
    heads = block["heads"]
    assert [len(h["W_Q"][0]) for h in heads] == [8, 8, 1]
    assert [len(h["W_V"][0]) for h in heads] == [8, 8, 16]
    assert len(block["W_O"]) == 8 + 8 + 16 and len(block["W_O"][0]) == 16
    assert heads[2]["name"] == "hand set"


def test_crane_hand_set_head_is_E_it_and_E_load():
    case = toml("crane")
    pieces = case["vocab"]["pieces"]
    E = matrix(case["model"]["E"])
    hand = case["blocks"][0]["heads"][2]
    assert [row[0] for row in matrix(hand["W_Q"])] == E[pieces.index("it")]
    assert [row[0] for row in matrix(hand["W_K"])] == E[pieces.index("load")]


def test_crane_weights_are_dyadic():
    """Every weight is an exact k/64, written as a decimal."""
    case = toml("crane")
    block = case["blocks"][0]
    numbers = [v for row in case["model"]["E"] for v in row] + [v for row in block["W_O"] for v in row]
    numbers += [v for head in block["heads"] for m in ("W_Q", "W_K", "W_V") for row in head[m] for v in row]
    assert all(isinstance(v, (int, Decimal)) for v in numbers)
    assert all(64 % exact(v).denominator == 0 for v in numbers)


def test_crane_file_is_what_the_generator_writes():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "make_crane.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def hand_set_rows() -> dict[int, list[float]]:
    """The hand-set head's attention rows for the two "it" tokens (0-based position ->
    weights over j <= i), in floats: x'_t = E[id_t] + PE[t], q_i = x'_i . W_Q, k_j = x'_j . W_K,
    s = q k / sqrt(1), causal softmax."""
    case = toml("crane")
    pieces, ids = case["vocab"]["pieces"], case["prompt"]["ids"]
    E = [[float(v) for v in row] for row in matrix(case["model"]["E"])]
    hand = case["blocks"][0]["heads"][2]
    wq = [float(exact(row[0])) for row in hand["W_Q"]]
    wk = [float(exact(row[0])) for row in hand["W_K"]]
    xs = [[e + p for e, p in zip(E[t], sinusoid(pos, 16))] for pos, t in enumerate(ids)]
    q = [sum(a * b for a, b in zip(x, wq)) for x in xs]
    k = [sum(a * b for a, b in zip(x, wk)) for x in xs]
    rows = {}
    for i, t in enumerate(ids):
        if pieces[t] == "it":
            s = [q[i] * k[j] for j in range(i + 1)]
            top = max(s)
            e = [math.exp(v - top) for v in s]
            rows[i] = [v / sum(e) for v in e]
    return rows


def test_crane_hand_set_head_sends_the_first_it_to_load():
    """Seed 004: the first it "lands on load"; the second, which means the crane, "points
    at load as well ... because this head only knows one trick"."""
    pieces, words = crane_prompt()
    rows = hand_set_rows()
    first, second = sorted(rows)
    load = words.index("load")
    assert max(range(first + 1), key=rows[first].__getitem__) == load
    assert rows[first][load] > 0.9
    assert max(range(second + 1), key=rows[second].__getitem__) == load  # wrong, on purpose
    recs = records("crane")
    derived = {(r["position"], r["index"]): r["decimal"] for r in recs
               if r["symbol"] == "a" and r["head"] == 3 and not r["after_step"]}
    for i in (first, second):
        assert derived[i + 1, load + 1] == f"{rows[i][load]:.3f}"


# --------------------------------------------------------------------------- starting late

def _softmax(z: list[float], T: float = 1.0) -> list[float]:
    e = [math.exp(v / T) for v in z]
    return [x / sum(e) for x in e]


def test_softmax_reproduces_wikipedia():
    """The softmax case prints the Wikipedia article's (0.024, 0.064, 0.175, 0.475, 0.024,
    0.064, 0.175), its logits as given, and L = -ln p(d), dL/dz = p - y computed here."""
    case = toml("softmax")
    z = [float(exact(v)) for v in case["input"]["logits"]]
    assert z == [1, 2, 3, 4, 1, 2, 3]
    recs = records("softmax")
    p = [r for r in recs if r["symbol"] == "p" and not r["after_step"]]
    assert [r["decimal"] for r in p] == ["0.024", "0.064", "0.175", "0.475", "0.024", "0.064", "0.175"]
    want = _softmax(z)
    assert [float(r["value"]) for r in p] == pytest.approx(want, abs=1e-12)
    L = next(r for r in recs if r["symbol"] == "L" and not r["after_step"])
    assert float(L["value"]) == pytest.approx(-math.log(want[3]), abs=1e-12)
    grads = [float(r["value"]) for r in recs if r["symbol"] == "grad"]
    assert grads == pytest.approx([w - (c == 3) for c, w in enumerate(want)], abs=1e-12)


def test_softmax_temperature_comment_is_right():
    """The numbers the temperature case's comment gives at T = 1, 1/2 and 2, computed here,
    and derive's own at T = 1/2 (the case's temperature)."""
    text = (CASES / "softmax-temperature.toml").read_text(encoding="utf-8")
    z = [2, 1, 0.1]
    for T, label in ((1, "T = 1:   "), (0.5, "T = 1/2: "), (2, "T = 2:   ")):
        p = _softmax(z, T)
        line = next(line for line in text.splitlines() if line.startswith(f"#   {label}"))
        assert "p = (" + ", ".join(f"{x:.3f}" for x in p) + ")" in line
        assert f"{-math.log(p[1]):.3f}" in line
    assert float(exact(toml("softmax-temperature")["conventions"]["temperature"])) == 0.5
    recs = records("softmax-temperature")
    p = [float(r["value"]) for r in recs if r["symbol"] == "p" and not r["after_step"]]
    assert p == pytest.approx(_softmax(z, 0.5), abs=1e-12)
    grads = [float(r["value"]) for r in recs if r["symbol"] == "grad"]
    assert grads == pytest.approx([(w - (c == 1)) / 0.5 for c, w in enumerate(p)], abs=1e-12)


def test_attention_qkv_by_hand():
    """The given-Q/K/V case: each head's weights and outputs computed here from the TOML
    (the heads cut columns 1-2 and 3-4, s = q.k / sqrt(2), the sliding-window mask)."""
    case = toml("attention-qkv")
    Q, K, V = (matrix(case["input"][n]) for n in "QKV")
    mask = case["conventions"]["mask"]
    T = len(Q)
    assert mask == [[int(j in (i - 1, i)) for j in range(T)] for i in range(T)]  # the window the comment says
    recs = records("attention-qkv")
    a = {(r["head"], r["position"], r["index"]): float(r["value"]) for r in recs if r["symbol"] == "a"}
    o = {(r["head"], r["position"], r["index"]): float(r["value"]) for r in recs if r["symbol"] == "o"}
    for h in (1, 2):
        cols = range(2 * (h - 1), 2 * h)
        for i in range(T):
            s = [sum(float(Q[i][c] * K[j][c]) for c in cols) / math.sqrt(2) if mask[i][j] else None for j in range(T)]
            e = [math.exp(x) if x is not None else 0.0 for x in s]
            w = [x / sum(e) for x in e]
            for j in range(T):
                assert a[(h, i + 1, j + 1)] == pytest.approx(w[j], abs=1e-12)
            for c, col in enumerate(cols):
                assert o[(h, i + 1, c + 1)] == pytest.approx(sum(w[j] * float(V[j][col]) for j in range(T)), abs=1e-12)
    assert a[(1, 1, 1)] == a[(2, 1, 1)] == 1.0


# --------------------------------------------------------------------------- encoder-post-norm

def test_encoder_post_norm_is_a_vaswani_encoder_block():
    """The bundled post-norm encoder says what its comment teaches: one post-norm block,
    no mask, the paper's sinusoids from pos 0, ReLU with FFN biases, d_ff = 2 d_model,
    no final LayerNorm (the block ends in one), a masked last word with target mat."""
    case = toml("encoder-post-norm")
    conv, (block,) = case["conventions"], case["blocks"]
    assert block["layout"] == "post_norm"
    assert conv["mask"] == "none" and conv["positions"] == "sinusoidal" and conv["first_position"] == 0
    assert conv["activation"] == "relu" and conv["final_layernorm"] is False
    assert {"b_1", "b_2"} <= set(block) and len(block["W_1"][0]) == 2 * case["model"]["d_model"]
    pieces = case["vocab"]["pieces"]
    assert [pieces[i] for i in case["prompt"]["ids"]] == ["the", "cat", "sat", "on", "the", "[MASK]"]
    assert case["prompt"]["target"] == "mat"


def test_encoder_post_norm_first_row_by_hand():
    """The first row through the block in plain floats, from the TOML alone: x_1 = E[the] +
    PE[0]; with no mask its attention reads every row, h_1 = x_1 + attn_1, u_1 =
    LayerNorm(h_1), y_1 = u_1 + m_1, u'_1 = LayerNorm(y_1); derive's 3-place u_1 and u'_1
    are the rounded floats."""
    case = toml("encoder-post-norm")
    E, ids = matrix(case["model"]["E"]), case["prompt"]["ids"]
    block = case["blocks"][0]
    d, heads = case["model"]["d_model"], case["model"]["heads"]
    d_k = d // heads
    W = {k: [[float(v) for v in row] for row in matrix(block[k])] for k in ("W_Q", "W_K", "W_O", "W_1", "W_2")}
    b_1, b_2 = ([float(exact(v)) for v in block[k]] for k in ("b_1", "b_2"))
    xs = [[float(e) + p for e, p in zip(E[i], sinusoid(pos, d))] for pos, i in enumerate(ids)]
    mul = lambda row, M: [sum(r * M[k][c] for k, r in enumerate(row)) for c in range(len(M[0]))]  # noqa: E731

    def norm(row):
        mu = sum(row) / len(row)
        sigma = math.sqrt(sum((v - mu) ** 2 for v in row) / len(row) + 1e-5)
        return [(v - mu) / sigma for v in row]

    q, k = mul(xs[0], W["W_Q"]), [mul(x, W["W_K"]) for x in xs]  # W_V = I: the values are the rows
    joined = []
    for h in range(heads):
        cols = range(h * d_k, (h + 1) * d_k)
        s = [sum(q[c] * kj[c] for c in cols) / math.sqrt(d_k) for kj in k]
        e = [math.exp(v) for v in s]
        a = [v / sum(e) for v in e]
        joined += [sum(a[j] * xs[j][c] for j in range(len(xs))) for c in cols]
    u = norm([x + o for x, o in zip(xs[0], mul(joined, W["W_O"]))])
    hidden = [max(0.0, v + b) for v, b in zip(mul(u, W["W_1"]), b_1)]
    u2 = norm([a + m + b for a, m, b in zip(u, mul(hidden, W["W_2"]), b_2)])
    derived = {(r["symbol"], r["index"]): r["decimal"] for r in records("encoder-post-norm")
               if r["symbol"] in ("u", "u2") and r["position"] == 1 and not r["after_step"]}
    for symbol, row in (("u", u), ("u2", u2)):
        for c, v in enumerate(row, 1):
            assert derived[symbol, c].replace("\u2212", "-") == f"{v:.3f}", (symbol, c, v)


def test_encoder_post_norm_agrees_with_transformer_encoder_layer():
    """Every record of the bundled case, gradients included, agrees with
    torch.nn.TransformerEncoderLayer(norm_first=False) within 1e-9
    (tests/test_post_norm_crosscheck.py)."""
    pytest.importorskip("torch")
    from derive.case import load_case
    from derive.derivation import derive
    from gpt2_export import compare, reference_elements
    from test_post_norm_crosscheck import EncoderModel

    case = load_case("encoder-post-norm")
    model = EncoderModel(case)
    result = compare(derive(case), reference_elements(case, model.forward, model.views()), where=case.name,
                     exported=False)
    assert result["symbols"]["pe"] == 24 and result["symbols"]["a"] == 72


# --------------------------------------------------------------------------- cat-climbed-llama

def test_cat_climbed_llama_is_the_seed_prompt_in_a_llama_block():
    """The seed's vocabulary, prompt, E and W_U; RMSNorm, rotary positions (no P), SwiGLU
    (W_3), one key/value head for the two query heads (W_K, W_V 4 x 2), no biases, untied W_U."""
    llama, seed = toml("cat-climbed-llama"), toml("cat-climbed")
    assert llama["vocab"] == seed["vocab"] and llama["prompt"] == seed["prompt"]
    assert matrix(llama["model"]["E"]) == matrix(seed["model"]["E"])
    assert matrix(llama["model"]["W_U"]) == matrix(seed["model"]["W_U"])
    conv = llama["conventions"]
    assert (conv["norm"], conv["positions"], conv["activation"]) == ("rmsnorm", "rotary", "silu")
    assert "P" not in llama["model"]
    (block,) = llama["blocks"]
    assert block["gated"] is True and block["kv_heads"] == 1 and llama["model"]["heads"] == 2
    assert [len(block[w][0]) for w in ("W_Q", "W_K", "W_V", "W_1", "W_3")] == [4, 2, 2, 4, 4]
    assert not [k for k in block if k.startswith("b_")]


def test_cat_climbed_llama_rotation_by_hand():
    """q~ and k~ of row 2 (pos 1: turned by 1 radian) in plain floats from the TOML: u_2 =
    x_2 / rms_2 with x_2 = E[␣cat], q_2 = u_2 W_Q, k_2 = u_2 W_K, then (q[1] cos 1 - q[2] sin 1,
    q[2] cos 1 + q[1] sin 1): derive's 3-place decimals; and ␣roof is the top prediction."""
    case = toml("cat-climbed-llama")
    x = [float(v) for v in matrix(case["model"]["E"])[2]]  # ␣cat, the second token
    rms = math.sqrt(sum(v * v for v in x) / 4 + 1e-6)
    u = [v / rms for v in x]
    block = case["blocks"][0]

    def times(W):
        W = matrix(W)
        return [sum(u[k] * float(W[k][c]) for k in range(4)) for c in range(len(W[0]))]

    def turn(v):
        return [v[0] * math.cos(1) - v[1] * math.sin(1), v[1] * math.cos(1) + v[0] * math.sin(1)]

    q, k = times(block["W_Q"]), times(block["W_K"])
    want = {("q_rot", 1): turn(q[:2])[0], ("q_rot", 2): turn(q[:2])[1], ("q_rot", 3): turn(q[2:])[0],
            ("q_rot", 4): turn(q[2:])[1], ("k_rot", 1): turn(k)[0], ("k_rot", 2): turn(k)[1]}
    got = {(r["symbol"], r["index"]): r["decimal"] for r in records("cat-climbed-llama")
           if r["symbol"] in ("q_rot", "k_rot") and r["position"] == 2}
    assert got == {key: f"{value:.3f}" for key, value in want.items()}
    logits = {r["index"]: float(r["value"]) for r in records("cat-climbed-llama")
              if r["symbol"] == "z" and not r["after_step"]}
    assert max(logits, key=logits.get) == "␣roof"


def test_cat_climbed_llama_agrees_with_hf_llama():
    """The bundled Llama-style case against Hugging Face's LlamaForCausalLM (float64, built
    from a local config; tests/rope_export.py): every record and gradient within 1e-9."""
    pytest.importorskip("transformers")
    from derive.case import load_case
    from derive.derivation import derive
    from gpt2_export import compare, reference_elements
    from rope_export import float64_everywhere, llama_forward, llama_model

    case = load_case("cat-climbed-llama")
    with float64_everywhere():
        model, views = llama_model(case)
        expected = reference_elements(case, llama_forward(case, model), views)
    result = compare(derive(case), expected, where=case.name, exported=False)
    assert result["symbols"]["q_rot"] == 5 * 4 and result["symbols"]["k_rot"] == 5 * 2
