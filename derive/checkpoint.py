"""A Hugging Face checkpoint on disk as a derive case (``derive import DIR``).

Reads ``config.json`` and ``model.safetensors`` of a ``GPT2LMHeadModel`` or a
``LlamaForCausalLM`` (as ``save_pretrained`` writes them), maps every weight to derive's
field with the architecture's class in ``rules/huggingface.py`` (which says which module is
which operation) and returns the case: a TOML text with the config-derived fields, the
vocabulary, the prompt and a header comment, and the weights, named by derive's fields, for
a safetensors file the TOML references (``weights = ...``; derive/weights.py). Values are
copied, never rounded: float32, bfloat16 (widened bit for bit) and float16 weights are
written as float32, float64 weights as float64.

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
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from .errors import DeriveError
from .numbers import python_int_guard
from .rules.huggingface import ARCHITECTURES
from .weights import arrays

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
    mapping = ARCHITECTURES[architecture]
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
        with python_int_guard():
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
        lines.append("# gradients = [...] derives the derivatives of the weights named alone; [] the loss alone (fastest)")
    lines += [f"{k} = {_value(v)}" for k, v in conventions.items()]
    lines += ["", "[model]"] + [f"{k} = {_value(v)}" for k, v in model.items()]
    for block in blocks:
        lines += ["", "[[blocks]]"] + [f"{k} = {_value(v)}" for k, v in block.items()]
    return "\n".join(lines) + "\n"
