"""`derive verify`: the seeds' "check yourself" facts as checks.

Expected outcomes come from the seeds (000: identical keys give uniform weights and the
plain average; temperature keeps the most probable token, ␣roof at p = 0.395; adding 10 to
every logit changes nothing, L = 0.928. 004: PE[pos+k] = R_k PE[pos], and a rotation
written for (cos, sin) fails) or are computed here with ``math`` (the sinusoids, the
wrong rotation's error), never taken from derive's output.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

from derive.case import load_case
from derive.cli import app
from derive.errors import DeriveError
from derive.verify import (identical_keys, rotation, rotation_matrix, shift, temperature, uniform_keys,
                           verify)

HERE = Path(__file__).parent
WOODCHUCK = str(HERE / "cases" / "woodchuck_shape.toml")
HAND_SET_HEAD = str(HERE / "cases" / "hand_set_head.toml")


def pe(pos: int, d: int, base: float = 10000.0, layout: str = "interleaved") -> list[float]:
    """The 2017 paper's sinusoids, computed here with math."""
    row = [0.0] * d
    for i in range(d // 2):
        w = base ** (-2 * i / d)
        s, c = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, d // 2 + i)
        row[s], row[c] = math.sin(pos * w), math.cos(pos * w)
    return row


def worst_float(text: str) -> float:
    return float(re.search(r"largest disagreement (\d+(?:\.\d+)?(?:e[+-]?\d+)?)", text).group(1))


def sinusoid_case(tmp_path, d: int = 16, n: int = 12, layout: str = "interleaved") -> str:
    path = tmp_path / f"sin{d}.toml"
    E = [[1 if c == 0 else 0 for c in range(d)], [1 if c == 1 else 0 for c in range(d)]]
    path.write_text(f"""
[vocab]
pieces = ["a", "b"]
[prompt]
ids = [0, 1]
[conventions]
positions = "sinusoidal"
sinusoid_layout = "{layout}"
[model]
d_model = {d}
heads = 2
context_length = {n}
E = {E}
W_U = "tied"
[[blocks]]
sublayers = ["attention"]
W_Q = "I"
W_K = "I"
W_V = "I"
W_O = "I"
""", encoding="utf-8")
    return str(path)


# ---------------------------------------------------------------------------------------
# rotation (seed 004)

def test_rotation_matrix_is_built_from_k_alone():
    """R_k applied to the math sinusoids of any pos gives PE[pos+k] (float check here)."""
    d = 8
    for k in (1, 3, 7):
        R = rotation_matrix(k, d, Fraction(10000), "interleaved")
        for pos in (0, 5, 30):
            moved = [sum(R[r][c] * pe(pos, d)[c] for c in range(d)) for r in range(d)]
            assert max(abs(a - b) for a, b in zip(moved, pe(pos + k, d))) < 1e-12


def test_rotation_passes_on_a_sinusoidal_case():
    result = rotation(load_case(WOODCHUCK))
    assert result.passed
    text = "\n".join(result.lines)
    n = 4  # the prompt's positions 0..3
    assert f"{n * (n - 1) // 2} (pos, k) pairs" in text
    assert "= (0, 0)" in text
    assert worst_float(text) < 1e-12


@pytest.mark.parametrize("layout", ["interleaved", "concatenated"])
def test_rotation_passes_at_d16_over_context_length(tmp_path, layout):
    result = rotation(load_case(sinusoid_case(tmp_path, 16, 12, layout)))
    assert result.passed, result.lines
    assert f"{12 * 11 // 2} (pos, k) pairs, 8 frequency pairs" in "\n".join(result.lines)


def test_rotation_for_cos_sin_fails(tmp_path):
    """The seed 004: "The pair is stored as (sin, cos) and the rotation had been written for
    (cos, sin), so the signs were crossed." That rotation turns each pair by -k w_i: the
    error of a pair is |sin(a+b) - sin(a-b)| = 2|cos a sin b| and |cos(a+b) - cos(a-b)| =
    2|sin a sin b|, computed here over the same positions."""
    d, n = 16, 12
    result = rotation(load_case(sinusoid_case(tmp_path, d, n)), order="cos-sin")
    assert not result.passed
    expected = max(2 * abs(f(pos * w) * math.sin(k * w))
                   for k in range(1, n) for pos in range(n - k)
                   for w in (10000 ** (-2 * i / d) for i in range(d // 2)) for f in (math.sin, math.cos))
    assert expected > 1
    assert worst_float("\n".join(result.lines)) == pytest.approx(expected, rel=1e-2)


@pytest.mark.parametrize("name, positions", [("cat-climbed", "learned"), ("cat-climbed-llama", "rotary")])
def test_rotation_does_not_apply_to_positions_that_are_not_sinusoids(name, positions):
    # a user trial: on a case with learned positions the check built a sinusoid table of its
    # own and said PASS, a fact about no table of the case; it is a check that does not apply
    with pytest.raises(DeriveError, match=f"positions are {positions}"):
        rotation(load_case(name))
    results = {r.name: r for r in verify(load_case(name), "all")}
    assert results["rotation"].skipped and results["rotation"].lines[0].startswith("does not apply: ")
    assert "not sinusoids" in results["rotation"].lines[0]
    out = cli("verify", name, "all")
    assert out.exit_code == 0 and "rotation: SKIP" in out.output and "PASS" in out.output
    alone = cli("verify", name, "rotation")  # a named check that does not apply: one line, exit code 2
    assert alone.exit_code == 2 and "conventions.positions" in alone.output and "Traceback" not in alone.output


def test_rotation_needs_an_even_d_model(tmp_path):
    text = Path(sinusoid_case(tmp_path, 4, 4)).read_text(encoding="utf-8")
    path = tmp_path / "odd.toml"
    path.write_text(text.replace('positions = "sinusoidal"', 'positions = "none"').replace("d_model = 4", "d_model = 3")
                    .replace("heads = 2", "heads = 1").replace("E = [[1, 0, 0, 0], [0, 1, 0, 0]]",
                                                                "E = [[1, 0, 0], [0, 1, 0]]"), encoding="utf-8")
    with pytest.raises(DeriveError):
        rotation(load_case(str(path)))
    assert cli("verify", str(path), "rotation").exit_code == 2


# ---------------------------------------------------------------------------------------
# uniform keys, temperature, shift (seed 000, "Check yourself")

def test_identical_keys_variant():
    variant = identical_keys(load_case("cat-climbed"))
    assert all(v == 0 for row in variant.blocks[0].matrices["W_K"] for v in row)
    assert variant.blocks[0].matrices["W_Q"] == load_case("cat-climbed").blocks[0].matrices["W_Q"]


def test_uniform_keys_passes_on_cat_climbed():
    result = uniform_keys(load_case("cat-climbed"))
    assert result.passed, result.lines
    T, heads, d = 5, 2, 4
    assert f"{heads * T * T} weights" in result.lines[1]          # every a_{i,j} of both heads
    assert f"{T * d} outputs" in result.lines[1]                  # every o_i[c], d_k columns per head


def test_uniform_keys_without_mask(tmp_path):
    case = load_case("cat-climbed")
    case = replace(case, conventions=replace(case.conventions, mask="none"))
    assert uniform_keys(case).passed


def test_uniform_keys_fails_when_the_mask_comes_after_the_softmax():
    """The slip: a softmax over every j, then zeros above the diagonal: weights 1/T."""
    case = load_case("cat-climbed")
    case = replace(case, conventions=replace(case.conventions, mask="causal_after_softmax"))
    result = uniform_keys(case)
    assert not result.passed
    assert any("1/5" in line for line in result.lines)  # a_{1,1} = 1/5, not 1


def test_temperature_keeps_roof():
    result = temperature(load_case("cat-climbed"))
    assert result.passed
    assert "T = 1: most probable ␣roof (p = 0.395)" in result.lines  # the seed's step 9


def test_temperature_on_the_woodchuck_shape():
    assert temperature(load_case(WOODCHUCK)).passed


def test_shift_changes_nothing():
    result = shift(load_case("cat-climbed"))
    assert result.passed, result.lines
    text = "\n".join(result.lines)
    assert "p(␣roof) = 0.395 both ways" in text and "L = 0.928 both ways" in text  # the seed's step 9


def given_logits(tmp_path: Path, logits: list, conventions: str = "") -> str:
    path = tmp_path / "logits.toml"
    path.write_text(f'name = "z"\n[vocab]\npieces = ["a", "b"]\n[input]\nlogits = {logits}\n'
                    f'[prompt]\ntarget = "a"\n{conventions}')
    return str(path)


def test_shift_with_a_loss_near_1e8(tmp_path):
    # L = ln(1 + e^(10^8)) = 10^8 + ln(1 + e^(-10^8)): 100000000.000 at 3 places; its absolute
    # error at 128 bits is near 1e-30, which a fixed tolerance of 1e-30 called a FAIL
    result = shift(load_case(given_logits(tmp_path, [0, 10 ** 8])))
    assert result.passed, result.lines
    assert "L = 100000000.000 both ways" in "\n".join(result.lines)


def test_shift_of_given_logits_under_a_temperature(tmp_path):
    # p = softmax(z / T): the shift is added to z / T, the logit as it enters e^
    result = shift(load_case(given_logits(tmp_path, ["1/3", 0], '[conventions]\ntemperature = "1/2"\n')))
    assert result.passed, result.lines
    p_a = math.exp(2 / 3) / (math.exp(2 / 3) + 1)
    assert f"p(a) = {p_a:.3f} both ways" in "\n".join(result.lines)


def test_rotation_needs_two_positions(tmp_path):
    # given logits have no positions: nothing to rotate, so the check does not apply (it said
    # PASS over "0 (pos, k) pairs")
    results = {r.name: r for r in verify(load_case(given_logits(tmp_path, [0, 1])), "all")}
    assert results["rotation"].skipped and results["rotation"].lines[0].startswith("does not apply")
    one = Path(sinusoid_case(tmp_path, 4, 1)).read_text(encoding="utf-8").replace("ids = [0, 1]", "ids = [0]")
    path = tmp_path / "one.toml"
    path.write_text(one.replace("context_length = 1\n", ""), encoding="utf-8")  # sinusoids, one position
    results = {r.name: r for r in verify(load_case(str(path)), "all")}
    assert results["rotation"].skipped and "two positions" in results["rotation"].lines[0]


def test_agreement_is_certified_both_ways():
    # softmax of (1, 2, 3, 4, 1, 2, 3): p(a) = p(e) (equal logits), p(a) != p(b)
    from derive.derivation import derive
    from derive.verify import _agree
    d = derive(load_case("softmax"))
    p = d.outputs["p"]
    assert _agree(d, p[0], p[4]) is True
    assert _agree(d, p[0], p[1]) is False


def test_all_on_cat_climbed():
    results = verify(load_case("cat-climbed"), "all")
    assert [r.name for r in results] == ["rotation", "uniform-keys", "temperature", "shift"]
    assert all(r.passed for r in results)
    assert [r.name for r in results if r.skipped] == ["rotation"]  # (learned positions)


def test_all_skips_what_does_not_apply():
    results = {r.name: r for r in verify(load_case(HAND_SET_HEAD), "all")}
    assert results["uniform-keys"].passed and not results["uniform-keys"].skipped
    assert results["temperature"].skipped and results["temperature"].lines[0].startswith("does not apply")
    out = cli("verify", HAND_SET_HEAD, "all").output
    assert "temperature: SKIP" in out and "uniform-keys: PASS" in out
    assert cli("verify", HAND_SET_HEAD, "shift").exit_code == 2



def test_uniform_keys_does_not_apply_to_given_weights(tmp_path):
    """A block that gives its weights a_{i,j} (attention_weights: a 0/1 pattern, rows of
    sum 1 or 2) has no scores for identical keys to equalise: uniform-keys does not apply
    (exit code 2 alone, SKIP under all), where it printed FAIL and "every score s_{i,j} is 0"
    for scores the page never computes."""
    text = Path(load_case("cat-climbed").path).read_text(encoding="utf-8")
    pattern = "[[1,0,0,0,0],[1,1,0,0,0],[0,1,1,0,0],[0,0,1,1,0],[0,0,0,1,1]]"
    path = tmp_path / "given.toml"
    path.write_text(text.replace("[[blocks]]\n", f"[[blocks]]\nattention_weights = {pattern}\n", 1),
                    encoding="utf-8")
    with pytest.raises(DeriveError, match="blocks\\[1\\].attention_weights"):
        uniform_keys(load_case(str(path)))
    result = cli("verify", str(path), "uniform-keys")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "blocks[1].attention_weights" in result.output and "FAIL" not in result.output
    out = cli("verify", str(path), "all").output
    assert "uniform-keys: SKIP" in out and "s_{i,j} is 0" not in out

# ---------------------------------------------------------------------------------------
# CLI

def cli(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"})


def test_cli_pass_and_exit_codes():
    result = cli("verify", "cat-climbed", "temperature")
    assert result.exit_code == 0, result.output
    assert "temperature: PASS" in result.output
    assert cli("verify", "cat-climbed", "nonsense").exit_code == 2
    assert cli("verify", "no-such-case", "all").exit_code == 2


def test_cli_fail_exits_1(tmp_path):
    text = Path(load_case("cat-climbed").path).read_text(encoding="utf-8").replace(
        'mask = "causal"', 'mask = "causal_after_softmax"')
    path = tmp_path / "slip.toml"
    path.write_text(text, encoding="utf-8")
    result = cli("verify", str(path), "uniform-keys")
    assert result.exit_code == 1
    assert "uniform-keys: FAIL" in result.output
