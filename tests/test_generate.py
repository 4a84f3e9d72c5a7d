"""`derive generate`: greedy generation, one worked step per new token.

Expected tokens and numbers come from the seed 000's step 9 ("The most probable is ␣roof,
with 0.395"; z = 2.491, e^z = 12.069) or from the construction of the test case (two
identical columns of W_U give two equal logits), never from derive's output.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from derive.case import load_case
from derive.cli import app
from derive.errors import DeriveError
from derive.generate import certified_argmax, generate, generated_text

HERE = Path(__file__).parent
WOODCHUCK = str(HERE / "cases" / "woodchuck_shape.toml")
ROOF = "\u2423roof"


def cli(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"})


def test_first_new_token_of_cat_climbed_is_roof():
    case = load_case("cat-climbed")
    (step,) = generate(case, 1)
    assert case.pieces[step.chosen] == ROOF and step.tied == [step.chosen]
    assert generated_text(case, [step]) == "the cat climbed the roof"
    assert step.derivation.case.target is None and step.derivation.loss is None


def test_each_step_reads_the_previous_prompt_and_its_choice():
    case = load_case(WOODCHUCK)
    steps = generate(case, 3)
    ids = list(case.ids)
    for step in steps:
        assert step.derivation.case.ids == ids
        ids.append(step.chosen)
    assert len(steps[-1].derivation.case.ids) == len(case.ids) + 2


def test_whole_word_vocabularies_are_joined_by_spaces():
    case = load_case(WOODCHUCK)  # pieces a, chuck, ..., without ␣
    steps = generate(case, 1)
    assert generated_text(case, steps) == "a woodchuck would chuck " + case.pieces[steps[0].chosen]


def test_a_tie_goes_to_the_lowest_id():
    """Give ␣the (id 1) the same W_U column as ␣roof (id 6): their logits are equal (they
    are irrational: f_5 comes through a square root), and the lower id wins."""
    case = load_case("cat-climbed")
    roof = case.pieces.index(ROOF)
    W_U = [row[:1] + [row[roof]] + row[2:] for row in case.W_U]
    (step,) = generate(replace(case, W_U=W_U), 1)
    assert step.chosen == 1 and step.tied == [1, roof]


def test_equal_rows_of_a_tied_e_tie_exactly():
    """how and much share one row of E (the seed 003): with W_U = E^T their logits tie."""
    case = load_case(WOODCHUCK)
    (step,) = generate(case, 1)
    z = step.derivation.outputs["z"]
    how, much = case.pieces.index("how"), case.pieces.index("much")
    choice = certified_argmax(step.derivation, [z[how], z[much]])
    assert choice.index == 0 and choice.tied == [0, 1]


def test_no_row_of_p_for_the_second_token():
    """cat-climbed gives P rows 1-5 only (the seed prints 5 of its 8): the second new
    token would read position 6."""
    with pytest.raises(DeriveError, match="model.P"):
        generate(load_case("cat-climbed"), 2)
    result = cli("generate", "cat-climbed", "-n", "2")
    assert result.exit_code == 2 and "model.P" in result.output


def test_given_vectors_cannot_generate(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text("""
[input]
X = [[1, 0], [0, 1]]
[model]
d_model = 2
[[blocks]]
sublayers = ["attention"]
layernorm = false
W_O = [[1, 0]]
[[blocks.heads]]
W_Q = [[1], [0]]
W_K = [[0], [1]]
W_V = [[1], [1]]
""", encoding="utf-8")
    assert cli("generate", str(path)).exit_code == 2


def test_cli_prints_the_seed_step_9():
    result = cli("generate", "cat-climbed", "-n", "1")
    assert result.exit_code == 0, result.output
    for text in ("2.491", "12.069", "0.395", "Chosen: ␣roof", "lowest id", '"the cat climbed the roof"'):
        assert text in result.output, text


def test_cli_rounding_options_are_run_s():
    """--sig 2: z_roof = 2.491 (seed) is 2.5; the table is the one `derive run --step
    logits` prints with the same options."""
    result = cli("generate", "cat-climbed", "--sig", "2")
    assert result.exit_code == 0, result.output
    assert "z = 2.5," in result.output
    run = cli("run", "cat-climbed", "--step", "logits", "--sig", "2")
    assert run.exit_code == 0, run.output
    table = [line for line in run.output.splitlines() if line.startswith("│")]
    assert table and all(line in result.output for line in table)


def test_cli_n_must_be_positive():
    assert cli("generate", "cat-climbed", "-n", "0").exit_code == 2
