"""``derive import DIR``: tiny Hugging Face checkpoints made here reproduce HF's own float64
numbers (issue 9, item 6 and its acceptance test).

Each checkpoint is a ``transformers`` model with a tiny config (vocab 64, width 8 or 16,
2 layers), every parameter redrawn from a seeded normal (LayerNorm gains around 1) so
that a weight mapped to the wrong field shows, saved with ``save_pretrained`` into a
temporary folder; nothing is downloaded. The GPT-2 one has a word-level tokenizer.json
built with ``tokenizers``. After ``derive import``, derive's logits of the last position
must equal the logits of the checkpoint loaded back by HF (``from_pretrained``, then
``.double()``: the same exact weights in float64) within 1e-9; for GPT-2 every other
record (x, u, q, k, v, a, o, attn, h, u2, hidden, g, m, y, f, the loss and dL/dtheta of
every weight) too, through the hooks of tests/gpt2_export.py on a GPT-2 holding the
checkpoint's state dict.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import pytest
import torch

from derive import registry
from derive.case import load_case
from derive.derivation import derive
from derive.steps import Ref

from test_bad_input import assert_clean_error, run
from test_gpt2_crosscheck import one_torch_thread  # noqa: F401 (autouse: torch on one thread here too)

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

WORDS = ["[UNK]", "the", "cat", "climbed", "roof", "a", "dog", "sat", "on", "mat"] + [f"w{i}" for i in range(54)]
PROMPT = "the cat climbed the"
PROMPT_IDS = [1, 2, 3, 1]  # WORDS' ids of the prompt's words
ROTARY = "rotary" in next(c for c in registry.conventions() if c.field == "positions").options()  # helper "rope"
TOL = 1e-9


def redraw(model: torch.nn.Module, seed: int) -> None:
    """Every parameter from a seeded normal (std 0.3; norm gains 1 + that), in place."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator, dtype=torch.float32) * 0.3
            p.copy_((noise + 1 if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight", "norm.weight",
                                                  "layernorm.weight")) else noise).to(p.dtype))


def word_tokenizer(folder: Path) -> None:
    """A word-level tokenizer.json over WORDS (split on whitespace)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))


def gpt2_checkpoint(folder: Path, dtype=torch.float32, tied: bool = True, seed: int = 0, **settings) -> Path:
    """A tiny random GPT2LMHeadModel saved in ``folder`` (with the word tokenizer)."""
    config = transformers.GPT2Config(vocab_size=len(WORDS), n_positions=16, n_embd=8, n_layer=2, n_head=2,
                                     tie_word_embeddings=tied, bos_token_id=0, eos_token_id=0, **settings)
    torch.manual_seed(seed)
    model = transformers.GPT2LMHeadModel(config)
    redraw(model, seed)
    model.to(dtype).save_pretrained(folder)
    word_tokenizer(folder)
    return folder


def llama_checkpoint(folder: Path, seed: int = 1) -> Path:
    """A tiny random LlamaForCausalLM (4 heads sharing 2 key/value heads), untied, no tokenizer."""
    config = transformers.LlamaConfig(vocab_size=len(WORDS), hidden_size=16, intermediate_size=24,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=32, rms_norm_eps=1e-6, bos_token_id=0,
                                      eos_token_id=0, tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config)
    redraw(model, seed)
    model.save_pretrained(folder)
    return folder


def imported(folder: Path, out: Path, *args: str):
    """``derive import folder -o out ARGS``, checked to succeed; the loaded case."""
    result = run("import", str(folder), "-o", str(out), *args)
    assert result.exit_code == 0, result.output
    assert out.with_suffix(".safetensors").is_file()
    return load_case(str(out))


def last_logits(derivation) -> list[float]:
    """derive's z of the last position, one per vocabulary piece (certified balls' midpoints,
    each with a radius below the tolerance)."""
    out = []
    for node in derivation.outputs["z"]:
        ball = derivation.value(Ref("before", node))
        mid, rad = (float(ball), 0.0) if isinstance(ball, Fraction) or not hasattr(ball, "mid") else \
            (float(ball.mid()), float(ball.rad()))
        assert rad < TOL
        out.append(mid)
    return out


def hf_logits(model_class, folder: Path, ids: list[int]) -> list[float]:
    """The checkpoint's own logits of the last position, in float64 (``from_pretrained``,
    ``.double()``, eval mode, eager attention)."""
    model = model_class.from_pretrained(folder, attn_implementation="eager").double().eval()
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0, -1].tolist()


def assert_close(ours: list[float], theirs: list[float]) -> None:
    assert len(ours) == len(theirs)
    worst = max(abs(a - b) for a, b in zip(ours, theirs))
    assert worst < TOL, f"largest difference {worst:.3g}"
    assert max(abs(b) for b in theirs) > 0.1  # logits that are not all near 0: the check has teeth


def test_gpt2(tmp_path):
    """A tied GPT-2 with a tokenizer: the prompt is tokenized by tokenizer.json, the pieces
    are its words, the logits and every record agree with HF within 1e-9, and ``derive run``
    prints every step."""
    from gpt2_export import compare, gpt2_forward, gpt2_model, reference_elements

    folder = gpt2_checkpoint(tmp_path / "gpt2")
    case = imported(folder, tmp_path / "case.toml", "--prompt", PROMPT, "--target", "roof")
    assert case.ids == PROMPT_IDS and case.pieces == WORDS and case.target == WORDS.index("roof")
    assert case.W_U is None and len(case.P) == len(PROMPT_IDS) and case.context_length == 16
    assert case.conventions.trained == ()
    derivation = derive(case)
    assert_close(last_logits(derivation), hf_logits(transformers.GPT2LMHeadModel, folder, case.ids))

    hf = transformers.GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager").double().eval()
    model, views = gpt2_model(case)  # a GPT-2 shaped by the case, then given the checkpoint's own weights
    model.load_state_dict(hf.state_dict())
    result = compare(derivation, reference_elements(case, gpt2_forward(case, model), views), where="gpt2",
                     exported=False)  # certified balls: 30-digit roundings of 5000 records take 50 s
    assert {"x", "u", "q", "a", "o", "attn", "hidden", "g", "m", "y", "f", "z", "p", "L", "grad"} <= set(result["symbols"])

    output = run("run", str(tmp_path / "case.toml"))
    assert output.exit_code == 0, output.output
    plain = " ".join(output.output.split())
    missing = [s.title for s in derivation.steps if " ".join(s.title.split()) not in plain]
    assert not missing, f"derive run does not print {missing}"


def test_gpt2_bfloat16(tmp_path):
    """An untied GPT-2 saved in bfloat16, its scores not scaled, with the erf GELU: each weight
    of the case is the bfloat16 value exactly (torch's own bf16 -> float64 conversion, which
    is exact), and the logits agree with HF's float64 pass on those weights."""
    from safetensors import safe_open

    folder = gpt2_checkpoint(tmp_path / "bf16", dtype=torch.bfloat16, tied=False, seed=3,
                             scale_attn_weights=False, activation_function="gelu")
    with safe_open(str(folder / "model.safetensors"), framework="pt") as f:
        assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"BF16"}
        wte, lm_head = f.get_tensor("transformer.wte.weight"), f.get_tensor("lm_head.weight")
    case = imported(folder, tmp_path / "case.toml", "--ids", "5,6,7,8,9")
    assert case.E == [[Fraction(x) for x in row] for row in wte.double().tolist()]
    assert case.W_U == [[Fraction(x) for x in row] for row in lm_head.double().T.tolist()]
    assert any(x.denominator > 2**7 for row in case.E for x in row)  # not only short dyadics
    assert case.title == "a dog sat on mat"
    assert (case.conventions.score_scale, case.conventions.activation) == ("none", "gelu_erf")
    assert_close(last_logits(derive(case)), hf_logits(transformers.GPT2LMHeadModel, folder, case.ids))


@pytest.mark.skipif(not ROTARY, reason='waits for rotary positions (helper "rope": conventions.positions = '
                                       '"rotary", rotary_base, rotary_fraction, rotary_layout) on main')
def test_llama(tmp_path):
    """A Llama with grouped-query attention, RMSNorm, SwiGLU and rotary positions, without a
    tokenizer (``--ids``): the logits agree with HF's float64 pass within 1e-9, and so does
    every record, the loss and every gradient included (tests/rope_export.py's hooks, on a
    Llama holding the checkpoint's state dict; HF's rotary tables and RMSNorm, float32 by
    design, run in float64 under its ``float64_everywhere``, and the rotary inv_freq, a
    buffer computed when the model is built, is built there too)."""
    from gpt2_export import compare, reference_elements
    from rope_export import float64_everywhere, llama_forward, llama_model

    folder = llama_checkpoint(tmp_path / "llama")
    case = imported(folder, tmp_path / "case.toml", "--ids", "1,2,3,1,4", "--target", "5")
    assert case.pieces == [f"id_{i}" for i in range(len(WORDS))]
    assert all(b.options.get("gated") and b.options.get("kv_heads") == 2 for b in case.blocks)
    derivation = derive(case)
    hf = transformers.LlamaForCausalLM.from_pretrained(folder).double()  # (loading under float64_everywhere
    with float64_everywhere():                                           #  would read float32 as float64)
        model, views = llama_model(case)  # built here: its rotary inv_freq in float64
        model.load_state_dict(hf.state_dict())  # the checkpoint's own weights, every one
        with torch.no_grad():
            assert_close(last_logits(derivation), model(torch.tensor([case.ids])).logits[0, -1].tolist())
        result = compare(derivation, reference_elements(case, llama_forward(case, model), views), where="llama",
                         exported=False)  # certified balls: 30-digit roundings of every record cost a minute
    assert {"u", "q", "a", "o", "up", "gated", "m", "f", "z", "L", "grad"} <= set(result["symbols"])
    output = run("run", str(tmp_path / "case.toml"))
    assert output.exit_code == 0, output.output


def test_llama_writes_its_fields(tmp_path):
    """The Llama mapping without rotary support on main: the weights file holds derive's
    fields, transposed from nn.Linear's (out, in), and the TOML the settings (rotary ones
    included: the case loads once rotary positions are on main)."""
    from safetensors import safe_open

    folder = llama_checkpoint(tmp_path / "llama")
    run("import", str(folder), "-o", str(tmp_path / "case.toml"), "--ids", "1,2,3")
    text = (tmp_path / "case.toml").read_text(encoding="utf-8")
    for line in ('norm = "rmsnorm"', "rmsnorm_eps = 0.000001", 'activation = "silu"', 'positions = "rotary"',
                 "rotary_base = 10000.0", "rotary_fraction = 1", 'rotary_layout = "rotate_half"',
                 "gated = true", "kv_heads = 2", "context_length = 32", 'weights = "case.safetensors"'):
        assert line in text, line
    with safe_open(str(folder / "model.safetensors"), framework="pt") as f:
        hf = {k: f.get_tensor(k) for k in f.keys()}
    with safe_open(str(tmp_path / "case.safetensors"), framework="pt") as f:
        ours = {k: f.get_tensor(k) for k in f.keys()}
    pairs = {"E": hf["model.embed_tokens.weight"], "W_U": hf["lm_head.weight"].T, "lnf_gain": hf["model.norm.weight"],
             "blocks.2.W_Q": hf["model.layers.1.self_attn.q_proj.weight"].T,
             "blocks.2.W_K": hf["model.layers.1.self_attn.k_proj.weight"].T,
             "blocks.1.W_V": hf["model.layers.0.self_attn.v_proj.weight"].T,
             "blocks.1.W_O": hf["model.layers.0.self_attn.o_proj.weight"].T,
             "blocks.1.W_1": hf["model.layers.0.mlp.gate_proj.weight"].T,
             "blocks.1.W_3": hf["model.layers.0.mlp.up_proj.weight"].T,
             "blocks.1.W_2": hf["model.layers.0.mlp.down_proj.weight"].T,
             "blocks.1.ln1_gain": hf["model.layers.0.input_layernorm.weight"],
             "blocks.2.ln2_gain": hf["model.layers.1.post_attention_layernorm.weight"]}
    for name, tensor in pairs.items():
        assert torch.equal(ours[name], tensor), name
    assert ours["blocks.1.W_K"].shape == (16, 8) and len(ours) == 3 + 2 * 9


# --------------------------------------------------------------------------- bad input

@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory) -> Path:
    return gpt2_checkpoint(tmp_path_factory.mktemp("ckpt") / "gpt2")


def test_summary_line(gpt2_folder, tmp_path):
    """The import says what it wrote: the files, the architecture, the tokens, the weights."""
    result = run("import", str(gpt2_folder), "-o", str(tmp_path / "c.toml"), "--prompt", PROMPT)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    # E, the prompt's 4 rows of P, lnf; per block ln1/ln2 gain and bias, W_Q|W_K|W_V, b_Q, b_K, b_V,
    # b_O, W_O, b_2, W_1 and W_2 (d_mlp = 4 d = 32), b_1
    weights = 64 * 8 + 4 * 8 + 2 * 8 + 2 * (4 * 8 + 3 * 8 * 8 + 4 * 8 + 8 * 8 + 8 + 2 * 8 * 32 + 32)
    assert f"c.toml and c.safetensors: GPT2LMHeadModel, 4 tokens, {weights} weights" in text


def copy_checkpoint(folder: Path, dest: Path, config: dict | None = None, drop: str | None = None) -> Path:
    """A copy of ``folder`` with config.json changed by ``config`` and the file ``drop`` left out."""
    dest.mkdir()
    for path in folder.iterdir():
        if path.name != drop:
            (dest / path.name).write_bytes(path.read_bytes())
    if config:
        data = json.loads((folder / "config.json").read_text()) | config
        (dest / "config.json").write_text(json.dumps(data))
    return dest


@pytest.mark.parametrize("config, drop, args, needles", [
    ({"architectures": ["BertForMaskedLM"]}, None, ("--prompt", PROMPT),
     ("config.json", "architectures", "GPT2LMHeadModel or LlamaForCausalLM")),
    (None, "config.json", ("--prompt", PROMPT), ("config.json", "cannot read")),
    (None, "model.safetensors", ("--prompt", PROMPT), ("no model.safetensors",)),
    (None, "tokenizer.json", ("--prompt", PROMPT), ("no tokenizer.json", "--ids")),
    (None, None, ("--prompt", "  "), ("--prompt", "no prompt")),
    (None, None, ("--ids", "1,x"), ("--ids", "not a list of ids")),
    (None, None, ("--ids", "1,64"), ("--ids", "has 64", "from 0 to 63")),
    (None, None, ("--prompt", " ".join(["the"] * 17)), ("--prompt", "17 tokens", "at most 16")),
    (None, None, ("--prompt", PROMPT, "--target", "zebra"), ("--target", "'zebra' is not in the vocabulary")),
    ({"n_inner": 40}, None, ("--prompt", PROMPT), ("model.safetensors", "field transformer.h.0.mlp.c_fc.bias", "has shape (32,)",
                                                          "shape (40,), from config.json")),
    ({"n_layer": 3}, None, ("--prompt", PROMPT), ("model.safetensors", "has no tensor h.2.ln_1.weight")),
    ({"n_layer": 1}, None, ("--prompt", PROMPT), ("field transformer.h.1.", "is not a weight of a GPT2LMHeadModel")),
    ({"activation_function": "swish"}, None, ("--prompt", PROMPT), ("activation_function", "gelu_new")),
    ({"scale_attn_by_inverse_layer_idx": True}, None, ("--prompt", PROMPT), ("scale_attn_by_inverse_layer_idx",)),
])
def test_bad_input(gpt2_folder, tmp_path, config, drop, args, needles):
    folder = copy_checkpoint(gpt2_folder, tmp_path / "ckpt", config, drop)
    assert_clean_error(run("import", str(folder), "-o", str(tmp_path / "case.toml"), *args), *needles)


def test_byte_level_pieces(gpt2_folder, tmp_path):
    """A GPT-2 style byte-level BPE tokenizer: its ``Ġ`` (a leading space) is derive's ␣ in the
    pieces; ids the tokenizer lacks (up to vocab_size) are ``id_N``; the prompt is its BPE."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"t": 0, "h": 1, "e": 2, "\u0120": 3, "c": 4, "a": 5, "th": 6, "the": 7, "\u0120the": 8, "\u0120c": 9,
             "\u0120ca": 10, "\u0120cat": 11}
    merges = [("t", "h"), ("th", "e"), ("\u0120", "the"), ("\u0120", "c"), ("\u0120c", "a"), ("\u0120ca", "t")]
    folder = copy_checkpoint(gpt2_folder, tmp_path / "ckpt")
    tokenizer = Tokenizer(models.BPE(vocab, merges))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.save(str(folder / "tokenizer.json"))
    case = imported(folder, tmp_path / "case.toml", "--prompt", "the cat the")
    assert case.pieces[:12] == ["t", "h", "e", "\u2423", "c", "a", "th", "the", "\u2423the", "\u2423c", "\u2423ca",
                                "\u2423cat"]
    assert case.pieces[12:] == [f"id_{i}" for i in range(12, 64)]
    assert case.ids == [7, 11, 8] and case.tokens == ["the", "\u2423cat", "\u2423the"]


def test_output_name(gpt2_folder, tmp_path):
    assert_clean_error(run("import", str(gpt2_folder), "-o", str(tmp_path / "w.safetensors"), "--ids", "1"),
                       "-o", "case.toml")
    assert not (tmp_path / "w.safetensors").exists()


def test_not_a_folder(tmp_path):
    assert_clean_error(run("import", str(tmp_path / "none"), "-o", str(tmp_path / "c.toml"), "--ids", "1"),
                       "none", "is not a folder")
