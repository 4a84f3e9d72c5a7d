"""`derive params`: the seed 000's "Where the weights are" table.

Expected figures come from the seed text (/work/shared/seeds/000_c4d6024fc6c69432.txt,
"Where the weights are"; 003_f36302353acefb24.txt, "It has 172 parameters") or are
computed here from the models' shapes, never from derive's output.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from derive.case import load_case
from derive.cli import app
from derive.params import approximate, case_shape, counts, gpt2_small

HERE = Path(__file__).parent
WOODCHUCK = str(HERE / "cases" / "woodchuck_shape.toml")
HAND_SET_HEAD = str(HERE / "cases" / "hand_set_head.toml")

# The seed 000's table as printed (tab-separated; GPT-2 small's column and the toy's).
SEED_TABLE = """\
embedding table \\(E\\)	\\(V \\times d\\)	12 × 4 = 48	38.6 million
position table \\(P\\)	positions × \\(d\\)	8 × 4 = 32	786 thousand
\\(W_Q\\), \\(W_K\\), \\(W_V\\)	\\(3 \\times (d \\times d)\\)	48	21.2 million
\\(W_O\\)	\\(d \\times d\\)	16	7.1 million
MLP: \\(W_1\\), \\(W_2\\)	\\(d \\times\\) width and width \\(\\times\\, d\\)	32 + 32 = 64	56.6 million
output \\(W_U\\)	\\(d \\times V\\)	48	tied to \\(E\\)
total		256	≈ 124 million"""


def seed_column(col: int) -> list[str]:
    """One column of the seed's table, in row order (E, P, QKV, O, MLP, W_U, total)."""
    return [line.split("\t")[col] for line in SEED_TABLE.splitlines()]


def seed_count(text: str) -> int:
    """The toy's count as the seed writes it: ``12 × 4 = 48`` -> 48."""
    return int(text.split("=")[-1])


def test_seed_table_is_the_page():
    """The table above is transcribed from the seed page, line for line."""
    page = Path("/work/shared/seeds/000_c4d6024fc6c69432.txt")
    if not page.exists():
        pytest.skip("the seed pages are not on this machine")
    text = page.read_text(encoding="utf-8")
    for line in SEED_TABLE.splitlines():
        assert line in text, line


def test_gpt2_small_as_the_seed_prints_it():
    rows = counts(gpt2_small())
    printed = ["tied to E" if r.tied else approximate(r.count, about=r.piece == "total") for r in rows[:7]]
    assert printed == [t.replace("\\(E\\)", "E") for t in seed_column(3)]


def test_gpt2_small_exact_counts():
    """Computed here from the configuration: V = 50257, d = 768, 1024 positions, 12 blocks,
    width 3072, tied; biases 12 (4 d + 3072 + d) and LayerNorms 12 (4 d) + 2 d."""
    V, d, n, L, w = 50257, 768, 1024, 12, 3072
    expected = [V * d, n * d, L * 3 * d * d, L * d * d, L * 2 * d * w, 0]
    rows = counts(gpt2_small())
    assert [r.count for r in rows[:6]] == expected
    assert rows[6].count == sum(expected) == 124_318_464
    biases, norms = L * (5 * d + w), L * 4 * d + 2 * d
    assert rows[7].count == biases + norms
    assert rows[8].count == sum(expected) + biases + norms == 124_439_808  # GPT-2 small's known total


def test_cat_climbed_is_the_toy():
    case = load_case("cat-climbed")
    assert case.context_length == 8 and len(case.P) == 5
    rows = counts(case_shape(case))
    assert [r.count for r in rows[:7]] == [seed_count(t) for t in seed_column(2)]
    assert rows[6].count == 256
    assert rows[7].count == 0 and rows[8].count == 256  # no bias, no LayerNorm weight


def test_without_context_length_the_given_rows_count(tmp_path):
    text = (Path(load_case("cat-climbed").path).read_text(encoding="utf-8")
            .replace("context_length = 8", ""))
    path = tmp_path / "short.toml"
    path.write_text(text, encoding="utf-8")
    rows = counts(case_shape(load_case(str(path))))
    assert rows[1].count == 5 * 4 and rows[6].count == 256 - 3 * 4


def test_woodchuck_shape_counts_172():
    """The seed 003: V = 8, d = 4, 2 heads, 1 block, ReLU MLP 4 -> 8 -> 4 with biases,
    sinusoidal positions, tied unembedding: "It has 172 parameters"."""
    V, d, width = 8, 4, 8
    E = V * d                          # 32
    attention = 4 * d * d              # W_Q, W_K, W_V, W_O: 64
    mlp = d * width + width + width * d + d  # W_1 32 + b_1 8 + W_2 32 + b_2 4
    assert E + attention + mlp == 172  # positions: 0 (sinusoids); W_U: tied, 0
    rows = counts(case_shape(load_case(WOODCHUCK)))
    by_piece = {r.piece: r for r in rows}
    assert by_piece["position table P"].count == 0
    assert by_piece["output W_U"].tied and by_piece["output W_U"].count == 0
    assert by_piece["total"].count == E + attention + d * width * 2
    assert by_piece["biases and LayerNorm"].count == width + d
    assert by_piece["all parameters"].count == 172


def test_bundled_woodchuck_counts_172():
    """The bundled case of the seed 003's model, when it is there: "It has 172 parameters"."""
    from derive.case import bundled_cases

    if "woodchuck" not in bundled_cases():
        pytest.skip("no bundled woodchuck case")
    assert counts(case_shape(load_case("woodchuck")))[-1].count == 172


def test_heads_given_one_by_one():
    """A block whose heads are given one by one (d_k = 1): W_Q, W_K, W_V are d x 1."""
    rows = counts(case_shape(load_case(HAND_SET_HEAD)))
    by_piece = {r.piece: r.count for r in rows}
    assert by_piece["W_Q, W_K, W_V"] == 3 * 4 * 1
    assert by_piece["W_O"] == 1 * 4
    assert by_piece["embedding table E"] == 0 and by_piece["MLP: W_1, W_2"] == 0


@pytest.mark.parametrize("n, text", [(38_597_376, "38.6 million"), (786_432, "786 thousand"),
                                     (7_077_888, "7.1 million"), (7_050_000, "7.1 million"),
                                     (7_049_999, "7.0 million"), (999, "999")])
def test_approximate(n, text):
    assert approximate(n) == text


def test_context_length_shorter_than_p_is_an_error(tmp_path):
    text = Path(load_case("cat-climbed").path).read_text(encoding="utf-8").replace(
        "context_length = 8", "context_length = 4")
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["params", str(path)])
    assert result.exit_code == 2
    assert "context_length" in result.output


def cli(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"})


def test_cli_cat_climbed():
    result = cli("params", "cat-climbed")
    assert result.exit_code == 0, result.output
    for text in seed_column(3)[:-2] + ["tied to E", "≈ 124 million", "12 x 4 = 48", "8 x 4 = 32",
                                       "32 + 32 = 64", " 256 "]:
        assert text in result.output, text


def test_cli_woodchuck_shape():
    result = cli("params", WOODCHUCK)
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if "all parameters" in x)
    assert " 172 " in line
