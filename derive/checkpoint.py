"""A Hugging Face checkpoint on disk as a derive case (``derive import DIR``).

Reads ``config.json`` and ``model.safetensors`` of a ``GPT2LMHeadModel`` or a
``LlamaForCausalLM`` (as ``save_pretrained`` writes them), maps every weight to derive's
field (row vectors, ``x @ W``) and returns the case: a TOML text with the config-derived
fields, the vocabulary, the prompt and a header comment, and the weights, named by
derive's fields, for a safetensors file the TOML references (``weights = ...``;
derive/weights.py). Values are copied, never rounded: float32, bfloat16 (widened bit for
bit) and float16 weights are written as float32, float64 weights as float64.

GPT-2 (Radford et al. 2019; ``transformers``' ``modeling_gpt2.py``): ``wte`` -> E; ``wpe``
-> P, only the rows the prompt uses (derive reads no other; ``model.context_length`` keeps
``n_positions`` for ``derive params``); ``Conv1D`` weights are already (in, out), so
``c_attn`` splits by columns into W_Q | W_K | W_V (and its bias into b_Q | b_K | b_V),
``attn.c_proj`` -> W_O, b_O, ``mlp.c_fc`` -> W_1, b_1, ``mlp.c_proj`` -> W_2, b_2; ``ln_1``,
``ln_2``, ``ln_f`` -> ln1_/ln2_/lnf_gain and _bias; ``gelu_new`` is derive's gelu_tanh
(``gelu``: gelu_erf, ``relu``); ``layer_norm_epsilon`` -> layernorm_eps;
``scale_attn_weights = false`` -> ``score_scale = "none"``; the LM head is
tied to wte unless ``tie_word_embeddings`` is false (then W_U = lm_head^T).

Llama (Touvron et al. 2023; ``modeling_llama.py``): ``embed_tokens`` -> E; ``nn.Linear``
weights are (out, in) and are transposed: q/k/v/o_proj -> W_Q, W_K, W_V, W_O (kv_heads from
``num_key_value_heads``: W_K, W_V are d_model x kv_heads d_k), gate_proj -> W_1 (the SiLU
branch), up_proj -> W_3, down_proj -> W_2 (a gated MLP, ``gated = true``); the RMSNorm gains
``input_layernorm``, ``post_attention_layernorm``, ``norm`` -> ln1_gain, ln2_gain, lnf_gain
(``rms_norm_eps``); lm_head -> W_U (transposed; "tied" when ``tie_word_embeddings``); rotary
positions with ``rope_theta`` as ``rotary_base``, ``partial_rotary_factor`` as
``rotary_fraction`` and HF's rotate-half layout.

The prompt is tokenized with the checkpoint's own ``tokenizer.json`` through the
``tokenizers`` package (special tokens as the tokenizer adds them: Llama's BOS), or given
as ids; the vocabulary pieces are the tokenizer's tokens (a byte-level ``Ġ`` or a
SentencePiece ``▁`` shown as derive's ``␣``), or ``id_N`` without a tokenizer. The case
stops at the logits unless a target is given; with one, the loss and its gradient are
derived and ``trained = []`` keeps the SGD step from moving anything (a big model's step is
the heavy part; set ``trained = "all"`` to move every weight).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from .errors import DeriveError
from .weights import arrays

ARCHITECTURES = ("GPT2LMHeadModel", "LlamaForCausalLM")
GPT2_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu_erf", "relu": "relu"}
SPACE = "\u2423"  # ␣, derive's leading space in a piece (derive.case.SPACE)
SPACE_MARKS = ("\u0120", "\u2581")  # Ġ (GPT-2 byte-level BPE), ▁ (SentencePiece)


@dataclass
class Imported:
    """A checkpoint as a case: ``toml`` (the case file's text, which names the weights file
    it was given), ``tensors`` (derive field -> numpy array, float32 or float64) and a
    summary (architecture, tokens, weights) for the command line."""

    toml: str
    tensors: dict
    architecture: str
    tokens: int
    values: int


def import_checkpoint(folder: str | Path, weights_name: str, prompt: str | None = None,
                      ids: list[int] | None = None, target: str | None = None) -> Imported:
    """The case of the checkpoint in ``folder`` for ``prompt`` (tokenized with the
    checkpoint's tokenizer.json) or ``ids``; ``weights_name`` is the weights file the TOML
    refers to (relative to the case file); ``target`` (a piece or an id) adds the loss.

    Raises:
        DeriveError: a missing or unreadable config.json or model.safetensors, an
            architecture other than GPT2LMHeadModel and LlamaForCausalLM, a setting derive
            cannot express, a missing or unknown weight, an empty prompt or one longer than
            the model's context, ids outside the vocabulary, no tokenizer.json and no ids:
            one line naming the file and what was expected.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DeriveError("is not a folder", file=str(folder),
                          expected="a Hugging Face checkpoint folder (config.json and model.safetensors)")
    config = _config(folder / "config.json")
    architecture = next((a for a in config.get("architectures") or [] if a in ARCHITECTURES), None)
    if architecture is None:
        raise DeriveError(f"architectures is {config.get('architectures')!r}", file=str(folder / "config.json"),
                          field="architectures", expected="GPT2LMHeadModel or LlamaForCausalLM")
    mapping = GPT2 if architecture == "GPT2LMHeadModel" else LLAMA
    try:
        expected = mapping.expected(config)
        fields = mapping.fields(config)
    except DeriveError as exc:  # a setting of config.json: name the file in full
        raise DeriveError(exc.detail, file=str(folder / "config.json"), field=exc.field,
                          expected=exc.expected) from None
    source = folder / "model.safetensors"
    if not source.is_file():
        also = " (sharded checkpoints are not read)" if (folder / "model.safetensors.index.json").exists() else ""
        raise DeriveError(f"no model.safetensors in the checkpoint folder{also}", file=str(folder),
                          expected="config.json and model.safetensors as save_pretrained writes them")

    def check(name: str, shape: list[int]) -> str | None:
        key = _strip(name, mapping.prefix)
        if mapping.ignored(key):
            return None
        if key not in expected:
            raise ValueError(f"is not a weight of a {architecture} with this config.json")
        return None if tuple(shape) == expected[key] else f"shape {expected[key]}, from config.json"

    hf = {_strip(k, mapping.prefix): v for k, v in arrays(source, check, f"a {architecture} checkpoint").items()}
    missing = [k for k in expected if k not in hf and not mapping.optional(k, config)]
    if missing:
        raise DeriveError(f"has no tensor {missing[0]}", file=str(source), field=missing[0],
                          expected=f"every weight of a {architecture} with this config.json")
    pieces = _pieces(folder, config["vocab_size"])
    token_ids, title = _prompt(folder, prompt, ids, pieces, mapping.context(config))
    target_id = _target(target, pieces) if target is not None else None
    tensors = mapping.tensors(hf, config, len(token_ids))
    toml = _toml(folder, architecture, config, fields, pieces, token_ids, title, target_id, weights_name,
                 tied=mapping.tied(config))
    return Imported(toml, tensors, architecture, len(token_ids), sum(int(t.size) for t in tensors.values()))


# --------------------------------------------------------------------------- reading

def _config(path: Path) -> dict:
    """config.json, its floats as Decimals (1e-05 is exactly 1/100000, as the author wrote it)."""
    try:
        config = json.loads(path.read_text(encoding="utf-8"), parse_float=Decimal)
    except OSError as exc:
        raise DeriveError(f"cannot read: {exc.strerror or exc}", file=str(path),
                          expected="the checkpoint's config.json") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise DeriveError(f"is not JSON: {exc}", file=str(path), expected="the checkpoint's config.json") from None
    if not isinstance(config, dict):
        raise DeriveError("is not a JSON object", file=str(path), expected="the checkpoint's config.json")
    return config


def _strip(name: str, prefix: str) -> str:
    """A checkpoint tensor's name without the model's prefix (``transformer.``, ``model.``)."""
    return name[len(prefix):] if name.startswith(prefix) else name


def _setting(config: dict, key: str, default=KeyError) -> int:
    """One config.json setting that must be a positive integer (``default`` when absent or null)."""
    value = config.get(key)
    if value is None:
        if default is KeyError:
            raise DeriveError("missing setting", file="config.json", field=key, expected="a positive integer")
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise DeriveError(f"is {value!r}", file="config.json", field=key, expected="a positive integer")
    return value


def _unsupported(config: dict, key: str, value, why: str) -> None:
    """Refuse a setting whose value derive cannot express."""
    if key in config and config[key] is not None and config[key] != value:
        raise DeriveError(f"is {config[key]!r}", file="config.json", field=key, expected=why)


class GPT2:
    """GPT2LMHeadModel's tensors (``transformer.h.N.attn.c_attn.weight``...) and settings."""

    prefix = "transformer."

    @staticmethod
    def expected(config: dict) -> dict[str, tuple[int, ...]]:
        """Every tensor name (without the prefix) and its shape, from config.json."""
        d, V, n = _setting(config, "n_embd"), _setting(config, "vocab_size"), _setting(config, "n_positions")
        inner = _setting(config, "n_inner", default=4 * d)
        if d % _setting(config, "n_head"):
            raise DeriveError(f"n_embd = {d} is not divisible by n_head", file="config.json", field="n_head",
                              expected="a number of heads that divides n_embd")
        _unsupported(config, "scale_attn_by_inverse_layer_idx", False, "false (derive scales by sqrt(d_k) only)")
        shapes = {"wte.weight": (V, d), "wpe.weight": (n, d), "ln_f.weight": (d,), "ln_f.bias": (d,),
                  "lm_head.weight": (V, d)}
        for i in range(_setting(config, "n_layer")):
            shapes |= {f"h.{i}.{k}": s for k, s in {
                "ln_1.weight": (d,), "ln_1.bias": (d,), "attn.c_attn.weight": (d, 3 * d), "attn.c_attn.bias": (3 * d,),
                "attn.c_proj.weight": (d, d), "attn.c_proj.bias": (d,), "ln_2.weight": (d,), "ln_2.bias": (d,),
                "mlp.c_fc.weight": (d, inner), "mlp.c_fc.bias": (inner,), "mlp.c_proj.weight": (inner, d),
                "mlp.c_proj.bias": (d,)}.items()}
        return shapes

    @staticmethod
    def ignored(key: str) -> bool:
        """Buffers older checkpoints saved: the causal mask ``attn.bias``, ``attn.masked_bias``."""
        return re.fullmatch(r"h\.\d+\.attn\.(bias|masked_bias)", key) is not None

    @staticmethod
    def optional(key: str, config: dict) -> bool:
        return key == "lm_head.weight"  # tied: save_pretrained leaves it out

    @staticmethod
    def tied(config: dict) -> bool:
        return config.get("tie_word_embeddings", True) is not False

    @staticmethod
    def context(config: dict) -> int:
        return config["n_positions"]

    @staticmethod
    def tensors(hf: dict, config: dict, T: int) -> dict:
        """derive's fields from GPT-2's tensors (Conv1D weights are (in, out) already)."""
        d = config["n_embd"]
        out = {"E": hf["wte.weight"], "P": hf["wpe.weight"][:T], "lnf_gain": hf["ln_f.weight"],
               "lnf_bias": hf["ln_f.bias"]}
        if not GPT2.tied(config):
            out["W_U"] = hf["lm_head.weight"].T
        for i in range(config["n_layer"]):
            h = lambda k: hf[f"h.{i}.{k}"]  # noqa: E731
            block = {"ln1_gain": h("ln_1.weight"), "ln1_bias": h("ln_1.bias"),
                     "W_O": h("attn.c_proj.weight"), "b_O": h("attn.c_proj.bias"),
                     "ln2_gain": h("ln_2.weight"), "ln2_bias": h("ln_2.bias"),
                     "W_1": h("mlp.c_fc.weight"), "b_1": h("mlp.c_fc.bias"),
                     "W_2": h("mlp.c_proj.weight"), "b_2": h("mlp.c_proj.bias")}
            for k, part in enumerate("QKV"):  # c_attn packs W_Q | W_K | W_V by columns
                block[f"W_{part}"] = h("attn.c_attn.weight")[:, k * d:(k + 1) * d]
                block[f"b_{part}"] = h("attn.c_attn.bias")[k * d:(k + 1) * d]
            out |= {f"blocks.{i + 1}.{k}": v for k, v in block.items()}
        return out

    @staticmethod
    def fields(config: dict) -> tuple[dict, dict, list[dict]]:
        """The TOML's [conventions], [model] settings and [[blocks]] settings."""
        activation = config.get("activation_function", "gelu_new")
        if activation not in GPT2_ACTIVATIONS:
            raise DeriveError(f"is {activation!r}", file="config.json", field="activation_function",
                              expected="one of " + ", ".join(GPT2_ACTIVATIONS))
        conventions = {"activation": GPT2_ACTIVATIONS[activation], "positions": "learned",
                       "layernorm_eps": config.get("layer_norm_epsilon", Decimal("1e-5"))}
        if config.get("scale_attn_weights") is False:  # q.k unscaled
            conventions["score_scale"] = "none"
        model = {"d_model": config["n_embd"], "heads": config["n_head"], "context_length": config["n_positions"]}
        return conventions, model, [{} for _ in range(config["n_layer"])]


class LLAMA:
    """LlamaForCausalLM's tensors (``model.layers.N.self_attn.q_proj.weight``...) and settings."""

    prefix = "model."

    @staticmethod
    def expected(config: dict) -> dict[str, tuple[int, ...]]:
        """Every tensor name (without the prefix) and its shape, from config.json."""
        d, V, heads = _setting(config, "hidden_size"), _setting(config, "vocab_size"), \
            _setting(config, "num_attention_heads")
        kv = _setting(config, "num_key_value_heads", default=heads)
        mlp = _setting(config, "intermediate_size")
        _setting(config, "max_position_embeddings", default=2048)
        if d % heads or heads % kv:
            raise DeriveError(f"hidden_size = {d}, num_attention_heads = {heads}, num_key_value_heads = {kv}",
                              file="config.json", field="num_attention_heads",
                              expected="heads dividing hidden_size and key/value heads dividing heads")
        _unsupported(config, "head_dim", d // heads, f"hidden_size / num_attention_heads = {d // heads}")
        _unsupported(config, "hidden_act", "silu", '"silu" (SwiGLU)')
        _unsupported(config, "pretraining_tp", 1, "1")
        rope = config.get("rope_scaling") or config.get("rope_parameters") or {}
        _unsupported(rope, "rope_type", "default", '"default" (no rotary scaling)')
        _unsupported(rope, "type", "default", '"default" (no rotary scaling)')
        dk = (d // heads) * kv
        shapes = {"embed_tokens.weight": (V, d), "norm.weight": (d,), "lm_head.weight": (V, d)}
        bias, mlp_bias = config.get("attention_bias") is True, config.get("mlp_bias") is True
        for i in range(_setting(config, "num_hidden_layers")):
            layer = {"input_layernorm.weight": (d,), "post_attention_layernorm.weight": (d,),
                     "self_attn.q_proj.weight": (d, d), "self_attn.k_proj.weight": (dk, d),
                     "self_attn.v_proj.weight": (dk, d), "self_attn.o_proj.weight": (d, d),
                     "mlp.gate_proj.weight": (mlp, d), "mlp.up_proj.weight": (mlp, d),
                     "mlp.down_proj.weight": (d, mlp)}
            if bias:
                layer |= {"self_attn.q_proj.bias": (d,), "self_attn.k_proj.bias": (dk,),
                          "self_attn.v_proj.bias": (dk,), "self_attn.o_proj.bias": (d,)}
            if mlp_bias:
                layer |= {"mlp.gate_proj.bias": (mlp,), "mlp.up_proj.bias": (mlp,), "mlp.down_proj.bias": (d,)}
            shapes |= {f"layers.{i}.{k}": s for k, s in layer.items()}
        return shapes

    @staticmethod
    def ignored(key: str) -> bool:
        """Buffers older checkpoints saved: the rotary ``inv_freq`` (recomputed from rope_theta)."""
        return key.endswith("rotary_emb.inv_freq")

    @staticmethod
    def optional(key: str, config: dict) -> bool:
        return key == "lm_head.weight" and LLAMA.tied(config)

    @staticmethod
    def tied(config: dict) -> bool:
        return config.get("tie_word_embeddings", False) is True

    @staticmethod
    def context(config: dict) -> int:
        return config.get("max_position_embeddings") or 2048  # checked by expected()

    @staticmethod
    def tensors(hf: dict, config: dict, T: int) -> dict:
        """derive's fields from Llama's tensors (``nn.Linear`` weights are (out, in): transposed)."""
        out = {"E": hf["embed_tokens.weight"], "lnf_gain": hf["norm.weight"]}
        if not LLAMA.tied(config):
            out["W_U"] = hf["lm_head.weight"].T
        names = {"self_attn.q_proj": "Q", "self_attn.k_proj": "K", "self_attn.v_proj": "V", "self_attn.o_proj": "O",
                 "mlp.gate_proj": "1", "mlp.up_proj": "3", "mlp.down_proj": "2"}
        for i in range(config["num_hidden_layers"]):
            at = f"blocks.{i + 1}."
            out[at + "ln1_gain"] = hf[f"layers.{i}.input_layernorm.weight"]
            out[at + "ln2_gain"] = hf[f"layers.{i}.post_attention_layernorm.weight"]
            for hf_name, part in names.items():
                out[f"{at}W_{part}"] = hf[f"layers.{i}.{hf_name}.weight"].T
                if f"layers.{i}.{hf_name}.bias" in hf:
                    out[f"{at}b_{part}"] = hf[f"layers.{i}.{hf_name}.bias"]
        return out

    @staticmethod
    def fields(config: dict) -> tuple[dict, dict, list[dict]]:
        """The TOML's [conventions], [model] settings and [[blocks]] settings."""
        rope = config.get("rope_parameters") or {}
        base = config.get("rope_theta", rope.get("rope_theta", Decimal(10000)))
        fraction = config.get("partial_rotary_factor", rope.get("partial_rotary_factor", 1))
        conventions = {"norm": "rmsnorm", "rmsnorm_eps": config.get("rms_norm_eps", Decimal("1e-6")),
                       "activation": "silu", "positions": "rotary", "rotary_base": base,
                       "rotary_fraction": fraction, "rotary_layout": "rotate_half"}
        model = {"d_model": config["hidden_size"], "heads": config["num_attention_heads"],
                 "context_length": LLAMA.context(config)}
        block = {"gated": True}
        kv = config.get("num_key_value_heads") or config["num_attention_heads"]
        if kv != config["num_attention_heads"]:
            block["kv_heads"] = kv
        return conventions, model, [dict(block) for _ in range(config["num_hidden_layers"])]


# --------------------------------------------------------------------------- tokens

def _tokenizer(folder: Path):
    """The checkpoint's tokenizer.json through ``tokenizers``, or None when there is none."""
    path = folder / "tokenizer.json"
    if not path.is_file():
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise DeriveError("the tokenizers package is not installed", file=str(path),
                          expected="pip install tokenizers, or --ids") from None
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a plain Exception for a malformed file
        raise DeriveError(f"is not a tokenizer file: {' '.join(str(exc).split())}", file=str(path),
                          expected="a tokenizers tokenizer.json") from None


def _pieces(folder: Path, vocab_size: int) -> list[str]:
    """One distinct, non-empty piece per id: the tokenizer's token, its space mark shown as
    ␣, else ``id_N`` (no tokenizer, an id the tokenizer lacks, or a clash)."""
    tokenizer = _tokenizer(folder)
    pieces, seen = [], set()
    for i in range(vocab_size):
        token = tokenizer.id_to_token(i) if tokenizer is not None else None
        piece = token
        if token:
            for mark in SPACE_MARKS:
                piece = piece.replace(mark, SPACE)
        for choice in (piece, token, f"id_{i}"):
            if choice and choice not in seen:
                break
        pieces.append(choice)
        seen.add(choice)
    return pieces


def _prompt(folder: Path, prompt: str | None, ids: list[int] | None, pieces: list[str],
            context: int) -> tuple[list[int], str]:
    """The prompt's ids and its title: ``ids`` as given (the title is the prompt, else the
    pieces), else ``prompt`` through tokenizer.json (special tokens as the tokenizer adds them)."""
    V = len(pieces)
    if ids is None:
        if prompt is None or not prompt.strip():
            raise DeriveError("no prompt", field="--prompt", expected='a non-empty --prompt "..." or --ids 1,2,3')
        tokenizer = _tokenizer(folder)
        if tokenizer is None:
            raise DeriveError("no tokenizer.json in the checkpoint folder to tokenize --prompt", file=str(folder),
                              expected="--ids 1,2,3 (the prompt's token ids)")
        ids = tokenizer.encode(prompt).ids
        if not ids:
            raise DeriveError(f"{prompt!r} gives no tokens", field="--prompt", expected="a prompt with a token")
    bad = [i for i in ids if not 0 <= i < V]
    if not ids or bad:
        raise DeriveError(f"has {bad[0] if bad else 'no id'}", field="--ids",
                          expected=f"token ids from 0 to {V - 1} (vocab_size = {V})")
    if len(ids) > context:
        raise DeriveError(f"has {len(ids)} tokens", field="--prompt",
                          expected=f"at most {context} (the model's context length)")
    return ids, prompt if prompt is not None else " ".join(pieces[i] for i in ids)


def _target(value: str, pieces: list[str]) -> int:
    """The target as an id: a piece of the vocabulary or an id."""
    if value in pieces:
        return pieces.index(value)
    if value.isdigit() and int(value) < len(pieces):
        return int(value)
    raise DeriveError(f"{value!r} is not in the vocabulary", field="--target",
                      expected=f"a piece of the vocabulary or an id from 0 to {len(pieces) - 1}")


# --------------------------------------------------------------------------- writing

def _value(value) -> str:
    """One TOML value: a string, a boolean, an integer, a decimal as written, or a list."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)


def _toml(folder: Path, architecture: str, config: dict, fields: tuple, pieces: list[str], ids: list[int], title: str,
          target: int | None, weights_name: str, tied: bool) -> str:
    """The case file's text (see the module docstring)."""
    conventions, model, blocks = fields
    if target is not None:
        conventions["trained"] = []
    if tied:
        model["W_U"] = "tied"
    lines = [f"# Imported by `derive import` from the Hugging Face checkpoint {folder.resolve()}",
             f"# ({architecture}, model_type {config.get('model_type', '?')!s}). The weights are in "
             f"{weights_name}, named by derive's fields, exact.",
             f"name = {_value(folder.name or 'checkpoint')}", f"title = {_value(title)}",
             f"source = {_value(f'Hugging Face checkpoint {folder.name} ({architecture})')}",
             f"weights = {_value(weights_name)}", "", "[vocab]", f"pieces = {_value(pieces)}", "", "[prompt]",
             f"ids = {_value(ids)}"]
    if target is not None:
        lines.append(f"target = {target}")
    lines += ["", "[conventions]"]
    if target is not None:
        lines.append("# trained = [] derives the loss and its gradient but moves no weight; \"all\" moves every one")
    lines += [f"{k} = {_value(v)}" for k, v in conventions.items()]
    lines += ["", "[model]"] + [f"{k} = {_value(v)}" for k, v in model.items()]
    for block in blocks:
        lines += ["", "[[blocks]]"] + [f"{k} = {_value(v)}" for k, v in block.items()]
    return "\n".join(lines) + "\n"
