"""The language-model loss (``conventions.loss = "mean"``) against Hugging Face.

Hugging Face's ``GPT2LMHeadModel(input_ids, labels=input_ids).loss`` is the mean over rows
1..T-1 of the cross-entropy of row t's logits against token t + 1 (the labels shifted by
one inside the model). derive's ``loss = "mean"`` is that loss; when the case also gives a
target, the last row predicts it, which is HF's loss on the ids with the target appended
(row T + 1's logits are not scored, and the causal mask leaves rows 1..T unchanged). Every
record derive exports (the logits, e^z and p of every row the loss reads, each row's
l_t, L, dL/dtheta of every weight, the weights after one SGD step and the logits after)
is compared with torch within 1e-9. HF's ``ForCausalLMLoss`` upcasts the logits with
``.float()`` (to float32 even in a float64 model), so its ``loss`` is matched within 1e-6
relative by the float64 cross-entropy of HF's float64 logits against the same shifted
labels, and that float64 loss (with autograd's gradients of it) is the one compared at 1e-9
(tests/gpt2_export.py, ``gpt2_forward``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from derive.case import load_case
from derive.derivation import derive
from derive.errors import CaseError

from gpt2_export import PartsModel, compare, gpt2_forward, gpt2_model, reference_elements
from test_gpt2_crosscheck import GPT2_SEEDS, gpt2_case_text, one_torch_thread  # noqa: F401 (a fixture)

pytest.importorskip("transformers")


def lm_case(seed: int, folder: Path, target: bool = True, extra: str = ""):
    """Random GPT-2-shaped case ``seed`` with ``loss = "mean"`` (and without its target)."""
    text = gpt2_case_text(seed).replace("[conventions]\n", f'[conventions]\nloss = "mean"\n{extra}', 1)
    if not target:
        text, n = re.subn(r"(?m)^target = .*$", "", text)
        assert n == 1
    path = Path(folder) / f"lm-{seed}-{target}.toml"
    path.write_text(text, encoding="utf-8")
    return load_case(str(path))


def hf_check(case) -> dict:
    """derive against HF GPT-2's own loss for labels, every record."""
    model, views = gpt2_model(case, "eager")
    return compare(derive(case), reference_elements(case, gpt2_forward(case, model), views), where=case.name)


@pytest.mark.parametrize("seed", GPT2_SEEDS, ids=[f"seed-{s}" for s in GPT2_SEEDS])
def test_mean_loss_with_target_against_hf(seed, tmp_path):
    """13 random cases: the prompt's next tokens and the target, against HF's ``loss``."""
    case = lm_case(seed, tmp_path)
    result = hf_check(case)
    T = len(case.ids)
    assert result["symbols"]["ell"] == T
    assert result["symbols"]["z"] == 2 * T * len(case.pieces)  # every row's logits, before and after
    assert result["symbols"]["grad"] > 0


@pytest.mark.parametrize("seed", [0, 3, 7, 14, 21], ids=lambda s: f"seed-{s}")
def test_mean_loss_without_target_against_hf(seed, tmp_path):
    """Without a target: exactly HF's ``labels = input_ids``, rows 1..T-1 scored."""
    case = lm_case(seed, tmp_path, target=False)
    assert len(case.ids) > 1
    result = hf_check(case)
    assert result["symbols"]["ell"] == len(case.ids) - 1


def test_mean_loss_in_bits_with_temperature(tmp_path):
    """Bits and a temperature (which GPT-2 lacks) against PartsModel, whose loss is torch's
    F.cross_entropy of the divided logits over ln 2."""
    case = lm_case(1, tmp_path, extra='loss_log = "2"\n')
    case.conventions.temperature = 2
    model = PartsModel(case)
    result = compare(derive(case), reference_elements(case, model.forward, model.views()), where=case.name,
                     exported=False)
    assert result["symbols"]["ell"] == len(case.ids)


def test_mean_loss_of_one_token_needs_a_target(tmp_path):
    """One token and no target: no row has a next token, a one-line error (exit 2)."""
    path = tmp_path / "one.toml"
    text = gpt2_case_text(18).replace("[conventions]\n", '[conventions]\nloss = "mean"\n', 1)
    path.write_text(re.sub(r"(?m)^target = .*$", "", text), encoding="utf-8")
    with pytest.raises(CaseError, match=r"conventions\.loss.*no row with a target"):
        load_case(str(path))
