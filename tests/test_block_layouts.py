"""Blocks as sublayers in a layout: post-norm, parallel, residual per sublayer, and plain
stacks of linear layers (rules/block.py, rules/layers.py).

The numbers come from torch: tests/gpt2_export.py's PartsModel (float64 modules written
independently of derive's rules) for the stacks of layers, and the published integers of
the "AI by Hand" sheet Small (tests/test_public_examples.py) for the same sheet written
as two linear layers. (Post-norm against torch.nn.TransformerEncoderLayer is
tests/test_post_norm_crosscheck.py; the layouts against PartsModel are in
tests/test_gpt2_crosscheck.py's PARTS_CASES.) Bad values of every new field are one clear
error line with exit code 2.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from derive.case import bundled_cases, load_case
from derive.derivation import derive
from derive.export_json import records
from derive.params import case_shape, counts
from derive.rounding import Format

from random_cases import _matrix, _vector
from test_bad_input import BASE, assert_clean_error, edit, run_case
from test_gpt2_crosscheck import parts_crosscheck
from test_public_examples import YEH_H, YEH_OUT, _table


def layers_text(widths: list[int], activations: list[str], biases: list[bool], rng: random.Random) -> str:
    """``[[blocks.layers]]`` tables: layer l maps widths[l-1] to widths[l] (dyadic W, a
    bias when biases[l-1]), with activations[l-1] after it ("none" writes no field)."""
    out = []
    for l in range(1, len(widths)):
        out += ["[[blocks.layers]]", f"W = {_matrix(rng, widths[l - 1], widths[l])}"]
        if biases[l - 1]:
            out.append(f"b = {_vector(rng, widths[l])}")
        if activations[l - 1] != "none":
            out.append(f'activation = "{activations[l - 1]}"')
    return "\n".join(out)


def stack_case_text(seed: int, block: str, widths: list[int], activations: list[str], biases: list[bool],
                    conventions: str = "") -> str:
    """A case with vocabulary, prompt, target and untied W_U (d_model = widths[0]), whose one
    block is ``block`` (its first lines, TOML) followed by the layers."""
    rng = random.Random(f"derive-layers-{seed}")
    d, V, T = widths[0], 5, 4
    return "\n".join([
        f'name = "layers-{seed}"', "[vocab]", "pieces = [" + ", ".join(f'"w{i}"' for i in range(V)) + "]",
        "[prompt]", "ids = [" + ", ".join(str(rng.randrange(V)) for _ in range(T)) + "]", f"target = {rng.randrange(V)}",
        "[conventions]", conventions, "[model]", f"d_model = {d}", "heads = 2", f"E = {_matrix(rng, V, d)}",
        f"P = {_matrix(rng, T, d)}", f"W_U = {_matrix(rng, d, V)}", "[[blocks]]", block,
        layers_text(widths, activations, biases, rng)]) + "\n"


STACKS = {
    # three layers, ReLU after W_1 and W_2, none after W_3, a bias on the first two; no norm,
    # no residual: a plain MLP exercise
    "three-relu": dict(seed=1, block='sublayers = ["layers"]\nlayernorm = false\nresidual = false',
                       widths=[4, 6, 3, 4], activations=["relu", "relu", "none"], biases=[True, True, False]),
    # ReLU after the last layer too, and a layer without activation in the middle
    "relu-after-last": dict(seed=2, block='sublayers = ["layers"]\nlayernorm = false\nresidual = false',
                            widths=[4, 2, 5, 4], activations=["gelu_erf", "none", "relu"],
                            biases=[False, True, True]),
    # attention, then a stack in the MLP's place, pre-norm with residuals
    "attention-then-layers": dict(seed=3, block='sublayers = ["attention", "layers"]\n' + "\n".join(
        f"{w} = {_matrix(random.Random(f'w{w}'), 4, 4)}" for w in ("W_Q", "W_K", "W_V", "W_O")),
        widths=[4, 8, 4], activations=["silu", "none"], biases=[True, True]),
    # one layer, post-norm with its residual
    "one-layer-post-norm": dict(seed=4, block='sublayers = ["layers"]\nlayout = "post_norm"\nln2_gain = [1, 2, 1, 0.5]',
                                widths=[4, 4], activations=["gelu_tanh"], biases=[True]),
}


def stack_case(name: str, folder: Path):
    """The case ``STACKS[name]``, written to ``folder`` and loaded."""
    spec = dict(STACKS[name])
    path = Path(folder) / f"{name}.toml"
    path.write_text(stack_case_text(spec.pop("seed"), spec.pop("block"), **spec), encoding="utf-8")
    return load_case(str(path))


@pytest.mark.parametrize("name", sorted(STACKS))
def test_stack_of_layers_agrees_with_torch(name, tmp_path):
    """Every record of a stack of linear layers, gradients of every W_l and b_l included,
    agrees with PartsModel (torch, float64) within 1e-9."""
    case = stack_case(name, tmp_path)
    result = parts_crosscheck(case)
    assert result["symbols"]["m"] == 4 * case.d_model and result["symbols"]["net"] > 0
    n = len(STACKS[name]["widths"]) - 1
    assert result["symbols"]["grad"] >= sum(len(case.blocks[0].matrices[f"W_{l}"]) * len(case.blocks[0].matrices[
        f"W_{l}"][0]) for l in range(1, n + 1))


def test_stack_names_each_layer(tmp_path):
    """Layer l's quantities carry l as the superscript: net^(l), g^(l); the last is m."""
    recs = records(derive(stack_case("three-relu", tmp_path)), Format(places=3))
    labels = {r["label"].split("[")[0] for r in recs if r["symbol"] in ("net", "g", "m") and r["position"] == 1}
    assert labels == {"net_1^(1)", "g_1^(1)", "net_1^(2)", "g_1^(2)", "m_1"}
    params = {r["param"] for r in recs if r["symbol"] == "grad"}
    assert {"W_1", "W_2", "W_3", "b_1", "b_2"} <= params and "b_3" not in params


YEH_LAYERS = """\
name = "yeh-small-layers"
[input]
X = [[0, 1, 1, -1], [1, 0, 1, 1], [0, 1, 1, 0], [1, 2, 3, 0], [1, -1, 2, 1]]
[model]
d_model = 4
heads = 1
[[blocks]]
sublayers = ["attention"]
layernorm = false
residual = false
projections = false
attention_weights = [[1, 1, 0, 0, 0], [1, 0, 0, 1, 1], [0, 1, 1, 0, 1], [1, 1, 1, 0, 0], [0, 0, 0, 1, 1]]
[[blocks]]
sublayers = ["layers"]
layernorm = false
residual = false
[[blocks.layers]]
W = [[1, 0, 1], [1, 0, -1], [1, 2, 1], [1, 1, 1]]
b = [3, 4, -1]
activation = "relu"
[[blocks.layers]]
W = [[1, -1, 1, 0], [2, 0, 1, 0], [1, 0, 1, -1]]
b = [-1, 7, 2, -1]
activation = "relu"
"""


def test_yeh_sheet_as_two_relu_layers(tmp_path):
    """The "AI by Hand" sheet Small written as what it is, the given attention then two ReLU
    layers with biases: the published H and out, exactly."""
    path = tmp_path / "yeh.toml"
    path.write_text(YEH_LAYERS, encoding="utf-8")
    recs = records(derive(load_case(str(path))), Format(places=0))
    g = {k: v for k, v in _table([r for r in recs if r["head"] == 1], "g").items()}
    m = _table(recs, "m")
    for table, published in ((g, YEH_H), (m, YEH_OUT)):
        assert [[table[(t + 1, c + 1)] for c in range(len(row))] for t, row in enumerate(published)] == \
            [[str(v) for v in row] for row in published]


def test_params_count_the_layers(tmp_path):
    """derive params counts each W_l: 4 x 6 + 6 x 3 + 3 x 4 = 54 weights, and b_1, b_2."""
    rows = {c.piece: c for c in counts(case_shape(stack_case("three-relu", tmp_path)))}
    assert rows["MLP or linear layers: W_1 ..."].count == 4 * 6 + 6 * 3 + 3 * 4
    assert "b_1 6" in rows["biases and LayerNorm"].formula and "b_2 3" in rows["biases and LayerNorm"].formula


def test_post_norm_case_is_bundled():
    assert "encoder-post-norm" in bundled_cases()
    assert load_case("encoder-post-norm").blocks[0].options["layout"] == "post_norm"


BLOCK = '[[blocks]]\n'
BAD = [
    ("layout-unknown", edit(BLOCK, BLOCK + 'layout = "sandwich"\n'),
     "blocks[1].layout", ["unknown value 'sandwich'", "expected one of pre_norm, post_norm, parallel"]),
    ("shared-norm-not-parallel", edit(BLOCK, BLOCK + "shared_norm = true\n"),
     "blocks[1].shared_norm", ['is true but layout = "pre_norm"', 'expected layout = "parallel"']),
    ("shared-norm-a-string", edit(BLOCK, BLOCK + 'layout = "parallel"\nshared_norm = "yes"\n'),
     "blocks[1].shared_norm", ["'yes'", "expected true or false"]),
    ("ln2-with-shared-norm", edit(BLOCK, BLOCK + 'layout = "parallel"\nshared_norm = true\nln2 = "layernorm"\n'),
     "blocks[1].ln2", ["shared_norm = true", "expected no ln2 fields"]),
    ("residual-unknown-sublayer", edit(BLOCK, BLOCK + 'residual = ["attn"]\n'),
     "blocks[1].residual", ["['attn']", 'expected true or false, or a list of the block\'s sublayers']),
    ("residual-list-parallel", edit(BLOCK, BLOCK + 'layout = "parallel"\nresidual = ["attention"]\n'),
     "blocks[1].residual", ["expected true or false (a parallel block adds both outputs to x at once)"]),
    ("mlp-and-layers", edit(BLOCK, BLOCK + 'sublayers = ["attention", "mlp", "layers"]\n'),
     "blocks[1].sublayers", ['"mlp" or "layers", not both']),
    ("layers-missing", edit(BLOCK, BLOCK + 'sublayers = ["layers"]\n'),
     "blocks[1].layers", ["missing", "expected one or more [[blocks.layers]] tables"]),
]
LAYERS_BLOCK = 'sublayers = ["layers"]\nlayernorm = false\n'
BAD += [
    ("layer-wrong-rows", LAYERS_BLOCK + "[[blocks.layers]]\nW = [[1, 2], [3, 4]]\n",
     "blocks[1].layers[1].W", ["has 2 rows", "expected 4 rows"]),
    ("last-layer-not-d_model", LAYERS_BLOCK + "[[blocks.layers]]\nW = [[1], [2], [3], [4]]\n",
     "blocks[1].layers[1].W row 1", ["has 1 columns", "expected 4 columns"]),
    ("layer-bias-length", LAYERS_BLOCK + '[[blocks.layers]]\nW = "I"\nb = [1, 2]\n',
     "blocks[1].layers[1].b", ["has 2 entries", "expected 4 numbers"]),
    ("layer-activation", LAYERS_BLOCK + '[[blocks.layers]]\nW = "I"\nactivation = "tanh"\n',
     "blocks[1].layers[1].activation", ["unknown value 'tanh'", "expected one of none, gelu_tanh"]),
    ("layer-unknown-field", LAYERS_BLOCK + '[[blocks.layers]]\nW = "I"\nactivations = "relu"\n',
     "blocks[1].layers[1].activations", ["unknown field; did you mean activation?", "expected one of W, b, activation"]),
]


def _with_block(text: str) -> str:
    """cat-climbed with its block replaced by ``text`` (a stack of layers)."""
    at = BASE.index(BLOCK)
    return BASE[:at] + BLOCK + text


@pytest.mark.parametrize("text, field, words", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_block_field_is_one_clean_error_line(tmp_path, text, field, words):
    """A bad layout, shared_norm, residual or layer: one error line naming the file, the field
    and what was expected (exit 2)."""
    if not text.startswith(BASE[:20]):
        text = _with_block(text)
    result, path = run_case(tmp_path, text)
    assert_clean_error(result, path, field, *words)


def test_params_count_no_projections_as_none():
    """A block with projections = false has no W_Q, W_K, W_V, W_O: yeh-small's weights are
    its two layers' W_1 (4 x 3) and W_2 (3 x 4), 24, and its biases b_1 (3) and b_2 (4)."""
    rows = {c.piece: c for c in counts(case_shape(load_case("yeh-small")))}
    assert rows["W_Q, W_K, W_V"].count == rows["W_O"].count == 0
    assert rows["total"].count == 4 * 3 + 3 * 4 and rows["all parameters"].count == 4 * 3 + 3 * 4 + 3 + 4


def test_the_residual_sentence_says_which_sublayers_have_one(tmp_path):
    """With a residual on attention only, the page says h = x + attn and that m replaces
    the stream, never that each sublayer's output is added back (the sentence follows the
    sums the block computes)."""
    case = tmp_path / "residual.toml"
    case.write_text(edit("[[blocks]]\n", '[[blocks]]\nresidual = ["attention"]\n'), encoding="utf-8")
    words = next(s for s in derive(load_case(str(case))).steps if s.key == "residual").words
    assert "h = x + attn" in words and "m has no residual connection: it replaces the stream" in words
    assert "each" not in words and "y = " not in words
    seed = next(s for s in derive(load_case("cat-climbed")).steps if s.key == "residual").words
    assert "each sublayer's output" in seed and "h = x + attn and y = h + m" in seed


@pytest.mark.parametrize("typo, field", [("kv_head = 1", "kv_heads"), ("gatd = true", "gated")])
def test_a_misspelled_block_field_is_named_before_any_shape_it_explains(tmp_path, typo, field):
    """kv_head = 1 with W_K of kv_heads d_k columns, gatd = true with a W_3: the misspelled
    field is the error, not the shape (or the W_3) it would have explained."""
    text = edit("[[blocks]]\n", f"[[blocks]]\n{typo}\n")
    if field == "gated":
        text = text.replace('W_O = "I"', 'W_O = "I"\nW_3 = [[1, 0], [0, 1], [1, 1], [0, 0]]')
    else:
        text = text.replace("  [0, 0, 1, 0],\n  [1, 0, 0, 0],\n  [0, 0, 0, 0],\n  [0, 1, 0, 1],\n",
                            "  [0, 0],\n  [1, 0],\n  [0, 0],\n  [0, 1],\n")  # W_K: kv_heads = 1, d_k = 2
    result, _ = run_case(tmp_path, text)
    assert_clean_error(result, f"blocks[1].{typo.split()[0]}", f"did you mean {field}?")
