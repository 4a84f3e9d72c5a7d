"""The Hugging Face architectures ``derive import`` reads, as derive's operations and fields.

Each architecture is a class with the same static methods: ``expected(config)`` (every
tensor of the checkpoint and its shape, from config.json), ``ignored``/``optional`` (saved
buffers; a tied head left out), ``tied``, ``context``, ``tensors`` (derive's fields, named
as in a weights file, from the checkpoint's arrays: row vectors, ``x @ W``) and ``fields``
(the case's [conventions], [model] and [[blocks]] settings). derive/checkpoint.py reads,
tokenizes and writes; this module alone knows which operation stands for which module.

GPT-2 (Radford et al. 2019; ``transformers``' ``modeling_gpt2.py``): ``wte`` -> E; ``wpe``
-> P, only the rows the prompt uses (derive reads no other; ``model.context_length`` keeps
``n_positions`` for ``derive params``); ``Conv1D`` weights are already (in, out), so
``c_attn`` splits by columns into W_Q | W_K | W_V (and its bias into b_Q | b_K | b_V),
``attn.c_proj`` -> W_O, b_O, ``mlp.c_fc`` -> W_1, b_1, ``mlp.c_proj`` -> W_2, b_2; ``ln_1``,
``ln_2``, ``ln_f`` -> ln1_/ln2_/lnf_gain and _bias; ``gelu_new`` is derive's gelu_tanh
(``gelu``: gelu_erf, ``relu``); ``layer_norm_epsilon`` -> layernorm_eps;
``scale_attn_weights = false`` -> ``score_scale = "none"``; the LM head is tied to wte
unless ``tie_word_embeddings`` is false (then W_U = lm_head^T).

Llama (Touvron et al. 2023; ``modeling_llama.py``): ``embed_tokens`` -> E; ``nn.Linear``
weights are (out, in) and are transposed: q/k/v/o_proj -> W_Q, W_K, W_V, W_O (kv_heads from
``num_key_value_heads``: W_K, W_V are d_model x kv_heads d_k), gate_proj -> W_1 (the SiLU
branch), up_proj -> W_3, down_proj -> W_2 (a gated MLP, ``gated = true``); the RMSNorm gains
``input_layernorm``, ``post_attention_layernorm``, ``norm`` -> ln1_gain, ln2_gain, lnf_gain
(``rms_norm_eps``); lm_head -> W_U (transposed; "tied" when ``tie_word_embeddings``); rotary
positions with ``rope_theta`` as ``rotary_base``, ``partial_rotary_factor`` as
``rotary_fraction`` and HF's rotate-half layout (rotary scaling is refused).

A setting derive cannot express is a :class:`~derive.errors.DeriveError` naming
config.json and the setting.
"""

from __future__ import annotations

import re
from decimal import Decimal

from derive.errors import DeriveError

GPT2_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu_erf", "relu": "relu"}


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


ARCHITECTURES = {"GPT2LMHeadModel": GPT2, "LlamaForCausalLM": LLAMA}  # config.json's architectures
