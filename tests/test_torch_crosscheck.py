"""Cross-check every derive quantity against an independent float64 PyTorch model.

For the bundled seed case ``cat-climbed`` and for random cases (``tests/random_cases.py``),
derive's JSON records (``derive.export_json.records``) are matched one to one with the
elements of the tensors ``tests/torch_reference.py`` computes (forward pass, autograd
gradients, SGD step, pass after), and each pair must agree within 1e-9 (absolute, or
relative to the value when |value| > 1).

Matching is two-sided: every record must name a torch element (its ``symbol``, ``block``,
``head``, ``position``, ``index``, ``norm``, ``param``, ``after_step``), no two records may
name the same element, and every torch element that derive should export (all of them but
the masked scores: derive writes no q.k, s or e^s above the diagonal under a causal mask)
must be named by a record.

Records whose ``value`` is ``undecided`` (a quantity that is exactly 0 but reached through
irrational intermediates, e.g. a gradient that cancels, so no ball can certify its 30th
significant digit) are compared through ``Derivation.value(ref)`` instead: the torch value
must lie within the certified ball widened by the tolerance, and the ball's radius must
itself be below the tolerance (so the comparison still means something).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from pathlib import Path

import pytest
import torch

from derive.case import load_case
from derive.derivation import UNDECIDED, derive
from derive.export_json import records
from derive.rounding import Format

from random_cases import write_case
from torch_reference import Forward, Reference, run

TOL = 1e-9
RANDOM_SEEDS = list(range(24))
# every symbol derive exports for a case with a target and a final LayerNorm
ALL_SYMBOLS = {"x", "mu", "sigma", "u", "q", "k", "v", "qk", "s", "exp_s", "sum_exp_s", "a", "o",
               "attn", "h", "u2", "hidden", "g", "m", "y", "f", "z", "exp_z", "sum_exp_z", "p", "L",
               "grad", "updated"}  # (under a temperature T other than 1, exp_z_over_T and sum_exp_z_over_T)
AFTER_SYMBOLS = {"z", "exp_z", "exp_z_over_T", "p", "L"}

Key = tuple


def close(derived: float, reference: float, slack: float = 0.0) -> bool:
    """|derived - reference| <= 1e-9 (times |derived| when that is above 1), plus ``slack``."""
    return abs(derived - reference) <= TOL * max(1.0, abs(derived)) + slack


def _matrix(out: dict, prefix: Key, t: torch.Tensor, skip=None) -> None:
    """Add the elements of a 2-d tensor under ``prefix + (row, column)`` (1-based)."""
    for i in range(t.shape[0]):
        for j in range(t.shape[1]):
            if skip is None or not skip(i, j):
                out[prefix + (i + 1, j + 1)] = float(t[i, j])


def _exp(case, symbol: str) -> str:
    """derive's symbol of e^z (exp_z) or of their sum under the case's temperature: e^(z/T)
    (exp_z_over_T) when T is not 1; any other symbol as it is."""
    scaled = symbol in ("exp_z", "sum_exp_z") and case.conventions.temperature != 1
    return symbol + "_over_T" if scaled else symbol


def _forward_elements(case, fw: Forward, after: bool) -> dict[Key, float]:
    """The quantities of one pass keyed as derive's records name them:
    (symbol, block, head, position, index, norm, param, after_step). Only z, e^z, p and L
    are exported for the pass after the step."""
    out: dict[Key, float] = {}
    pieces = case.pieces
    T = len(case.ids)
    last = T  # derive's 1-based position of the last row
    if not after:
        _matrix(out, ("x", None, None), fw.x)
        for (norm, block), n in fw.norms.items():
            for t in range(T):
                out[("mu", block, None, t + 1, None, norm)] = float(n["mu"][t])
                out[("sigma", block, None, t + 1, None, norm)] = float(n["sigma"][t])
        d_k = case.d_k
        for b, rec in fw.blocks.items():
            for name in ("u", "q", "k", "v", "attn", "h", "u2", "hidden", "g", "m", "y"):
                head = (lambda c: c // d_k + 1) if name in ("q", "k", "v") else (lambda c: None)
                t = rec[name]
                for i in range(t.shape[0]):
                    for c in range(t.shape[1]):
                        out[(name, b, head(c), i + 1, c + 1)] = float(t[i, c])
        causal = case.conventions.mask == "causal"
        for (b, h), hd in fw.heads.items():
            masked = (lambda i, j: j > i) if causal else None
            for name in ("qk", "s", "exp_s"):
                _matrix(out, (name, b, h), hd[name], masked)
            _matrix(out, ("a", b, h), hd["a"])
            _matrix(out, ("o", b, h), hd["o"])
            for i in range(T):
                out[("sum_exp_s", b, h, i + 1, None)] = float(hd["sum_exp_s"][i])
        if case.conventions.final_layernorm:
            _matrix(out, ("f", None, None), fw.f)
        out[(_exp(case, "sum_exp_z"), None, None, last, None)] = float(fw.sum_exp_z)
    for name in ("z", "exp_z", "p"):
        t = getattr(fw, name)
        for c, piece in enumerate(pieces):
            out[(_exp(case, name), None, None, last, piece)] = float(t[c])
    if fw.L is not None:
        out[("L", None, None, last, pieces[case.target])] = float(fw.L)
    return {key + (None,) * (6 - len(key)) + (None, after): v for key, v in out.items()}


def torch_elements(case, ref: Reference) -> dict[Key, float]:
    """Every quantity derive exports, from the torch reference, keyed by
    (symbol, block, head, position, index, norm, param, after_step)."""
    out = _forward_elements(case, ref.before, False)
    if ref.after is not None:
        out.update(_forward_elements(case, ref.after, True))
        for phase, tensors in (("grad", ref.grads), ("updated", ref.updated)):
            for (param, block), t in tensors.items():
                for i in range(t.shape[0]):
                    for j in range(t.shape[1]):
                        out[(phase, block, None, i + 1, j + 1, None, param, False)] = float(t[i, j])
    return out


def record_key(r: dict) -> Key:
    """The torch key a derive record names."""
    return (r["symbol"], r["block"], r["head"], r["position"], r["index"], r["norm"], r["param"],
            r["after_step"])


def crosscheck(path, extra=None) -> dict:
    """Derive ``path``, run the torch reference, match and compare every record.

    ``extra(case)``, when given, adds reference elements of quantities the torch reference
    does not record itself (a test's own operation, e.g. RMSNorm's rms).

    Returns counts (records, undecided, by symbol) for the caller's assertions and report.
    Raises AssertionError listing the first disagreements."""
    case = load_case(str(path))
    derivation = derive(case)
    # the given weights (records "given") are the case's own numbers, from which torch is built
    recs = [r for r in records(derivation, Format()) if r["symbol"] != "given"]
    refs = derivation.quantities()
    assert len(recs) == len(refs)
    reference = run(case)
    expected = torch_elements(case, reference)
    if extra is not None:
        expected.update(extra(case))

    # torch's own consistency: SDPA's output equals the manual softmax(s) @ v
    for hd in reference.before.heads.values():
        assert torch.allclose(hd["o"], hd["o_manual"], rtol=0, atol=1e-12)

    keys = [record_key(r) for r in recs]
    duplicates = [k for k, n in Counter(keys).items() if n > 1]
    assert not duplicates, f"{path}: records naming the same element: {duplicates[:5]}"
    unmatched = [k for k in keys if k not in expected]
    assert not unmatched, f"{path}: records with no torch element: {unmatched[:5]}"
    missing = sorted(set(expected) - set(keys), key=str)
    assert not missing, f"{path}: torch elements derive does not export: {missing[:5]}"

    failures, undecided = [], 0
    for r, ref, key in zip(recs, refs, keys):
        want = expected[key]
        if r["value"] == UNDECIDED:
            undecided += 1
            ball = derivation.value(ref)
            mid, rad = float(ball.mid()), float(ball.rad())
            if rad > TOL * max(1.0, abs(mid)) or not close(mid, want, rad):  # as close(): relative above 1
                failures.append(f"{r['label']} {key}: derive ball {ball} vs torch {want!r}")
        elif not (math.isfinite(want) and close(float(r["value"]), want)):
            failures.append(f"{r['label']} {key}: derive {r['value']} vs torch {want!r} "
                            f"(diff {float(r['value']) - want:.3g})")
    assert not failures, f"{path}: {len(failures)} of {len(recs)} disagree:\n" + "\n".join(failures[:20])
    return {"records": len(recs), "undecided": undecided, "symbols": Counter(r["symbol"] for r in recs),
            "case": case}


def test_cat_climbed():
    """The seed case: every one of its records agrees with torch, and every symbol occurs."""
    result = crosscheck("cat-climbed")
    assert set(result["symbols"]) == ALL_SYMBOLS
    # the pass after the step is exported for z, e^z, p and L
    case = result["case"]
    assert result["symbols"]["L"] == 2 and result["symbols"]["p"] == 2 * len(case.pieces)


@pytest.mark.parametrize("seed", RANDOM_SEEDS, ids=[f"seed-{s}" for s in RANDOM_SEEDS])
def test_random_case(seed, tmp_path):
    """A random case (tests/random_cases.py, this seed) agrees with torch record by record."""
    result = crosscheck(write_case(seed, tmp_path))
    case = result["case"]
    symbols = {_exp(case, s) for s in ALL_SYMBOLS} - (set() if case.conventions.final_layernorm else {"f"})
    assert set(result["symbols"]) == symbols


@pytest.mark.parametrize("name", ["cat-climbed", 3, 11])
def test_the_pass_after_off_the_page_agrees_with_torch(name, tmp_path):
    """The pass after the step is made for what its page prints (z, e^z, p, L and what
    they read: under the causal mask, not the rows of the attention before the last);
    a quantity off that path asked for after the step is made then, and agrees with
    torch's whole pass after: every attention weight a_{i,j} (masked ones 0) and every
    residual h of every row."""
    from derive.graph import approx
    from derive.steps import Ref

    case = load_case(str(write_case(name, tmp_path)) if isinstance(name, int) else name)
    derivation = derive(case)
    reference = run(case)
    graph = derivation.graph
    assert len(case.ids) > 1 and case.conventions.mask == "causal"
    first = derivation.evaluation().after
    off = [i for i in graph.operations() if not first.holds(i)]
    assert off  # (some quantity is off the page's path: the comparison below reads it)
    compared = 0
    for i in graph.operations():
        meta = graph.nodes[i].meta
        if meta.symbol == "a":
            want = float(reference.after.heads[(meta.block, meta.head)]["a"][meta.position - 1][meta.index - 1])
        elif meta.symbol == "h":
            want = float(reference.after.blocks[meta.block]["h"][meta.position - 1][meta.index - 1])
        else:
            continue
        got = approx(derivation.value(Ref("after", i)))
        assert close(got, want), f"{meta.label} after the step: derive {got} vs torch {want}"
        compared += 1
    assert compared > len(off) // 10 and any(i in off for i in graph.operations()
                                             if graph.nodes[i].meta.symbol in ("a", "h"))
