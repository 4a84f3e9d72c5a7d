"""The benchmark's synthetic cases (bench/synthetic.py): a case whose weights sit in a
safetensors file (how bench/run.py gives the wide blocks) is the same case as its all-TOML
twin: every quantity, to 30 significant figures, in the same order."""

from __future__ import annotations

import sys
from pathlib import Path

from derive.case import load_case
from derive.derivation import VALUE_FORMAT, derive

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from synthetic import write_case  # noqa: E402


def test_safetensors_twin_derives_the_same_numbers(tmp_path):
    (tmp_path / "toml").mkdir()
    (tmp_path / "split").mkdir()
    shape = dict(d_model=8, heads=2, tokens=3, vocab=5, blocks=2)
    whole = write_case(tmp_path / "toml", **shape)
    split = write_case(tmp_path / "split", safetensors=True, **shape)
    assert "W_Q" in whole.read_text() and "W_Q" not in split.read_text()
    assert (split.parent / f"{split.stem}.safetensors").is_file()
    a, b = derive(load_case(str(whole))), derive(load_case(str(split)))
    ra, rb = a.quantities(), b.quantities()
    assert len(ra) == len(rb) > 1000
    assert list(a.decimals(ra, VALUE_FORMAT).values()) == list(b.decimals(rb, VALUE_FORMAT).values())
    assert a.case.blocks[1].matrices["W_2"] == b.case.blocks[1].matrices["W_2"]
