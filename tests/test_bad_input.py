"""Bad input gives one clear error line and exit code 2, never a traceback.

Each case starts from the bundled ``cases/cat-climbed.toml``, makes one targeted edit,
writes the result to a temporary file and runs ``derive run`` on it. The error must name
the file, the field (with row and column where they apply) and what was expected, on one
line; with ``-o FILE`` the file must be left as it was.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from derive.cli import app

BASE = (Path(__file__).resolve().parent.parent / "cases" / "cat-climbed.toml").read_text(encoding="utf-8")
NUMBER = "a number: an integer, a decimal"


def edit(old: str, new: str) -> str:
    """The bundled case with its one occurrence of ``old`` replaced by ``new``."""
    assert BASE.count(old) == 1, f"{old!r} occurs {BASE.count(old)} times in cat-climbed.toml"
    return BASE.replace(old, new)


def edit_last(old: str, new: str) -> str:
    """The bundled case with the last occurrence of ``old`` replaced by ``new``."""
    at = BASE.rindex(old)
    return BASE[:at] + new + BASE[at + len(old):]


def drop(pattern: str, replacement: str = "") -> str:
    """The bundled case with the (multi-line) text matching ``pattern`` removed (or replaced), once."""
    text, n = re.subn(pattern, replacement, BASE, count=1, flags=re.S | re.M)
    assert n == 1, pattern
    return text


def run(*args: str):
    """``derive ARGS`` through typer's test runner (stderr is mixed into the output)."""
    return CliRunner().invoke(app, list(args))


def assert_clean_error(result, *needles: str) -> str:
    """Exit code 2, one ``error:`` line holding every needle, and no traceback."""
    output = result.output
    assert result.exit_code == 2, output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    return lines[0]


def run_case(tmp_path: Path, text: str, *args: str, name: str = "case.toml"):
    """Write ``text`` to ``tmp_path/name`` and run ``derive run`` on it; (result, path)."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return run("run", str(path), *args), str(path)


# (id, the edited case text, the field named, the words of what was wrong or expected)
BAD_CASES = [
    ("malformed-toml", edit("heads = 2", "heads = = 2"),
     None, ["malformed TOML", "line 27", "expected a TOML document"]),
    ("unclosed-array", edit('pieces = ["the", ', 'pieces = ["the" '),
     None, ["malformed TOML", "expected a TOML document"]),
    ("missing-E", drop(r"^E = \[.*?\n\]\n"),
     "field model.E", ["missing field"]),
    ("missing-W_K", drop(r"^W_K = \[.*?\n\]\n"),
     "field blocks[1].W_K", ["missing field"]),
    ("missing-vocab", drop(r"\[vocab\]\n"),
     "field vocab", ["missing field"]),
    ("E-row-short", edit("[ 1,   -0.5, -0.5,  0  ],  # ␣dog", "[ 1,   -0.5, -0.5 ],"),
     "field model.E row 4", ["has 3 columns", "expected 4 columns"]),
    ("E-row-missing", edit("  [ 0.5, -0.5,  0.5, -0.5],  # <eot>\n", ""),
     "field model.E", ["has 11 rows", "expected 12 rows of 4 numbers"]),
    ("W_U-wrong-width", edit("  [  0,   -0.5, 1,    0.5,  0,   -0.5,  1,    0,    0,    0,    -1,   0  ],",
                             "  [  0,   -0.5, 1,    0.5,  0,   -0.5,  1,    0,    0,    0,    -1 ],"),
     "field model.W_U row 4", ["has 11 columns", "expected 12 columns"]),
    ("W_Q-3-rows", edit("W_Q = [\n  [0, 0, 0, 1],\n", "W_Q = [\n"),
     "field blocks[1].W_Q", ["has 3 rows", "expected 4 rows of 4 numbers"]),
    ("P-too-short", edit("  [ 0,   -0.5,  0,    0.5],\n]", "]"),
     "field model.P", ["has 4 rows but the prompt has 5 tokens", "expected at least 5 rows"]),
    ("text-not-in-vocab", edit('text = "the cat climbed the"', 'text = "the cow climbed the"'),
     "field prompt.text", ["no vocabulary piece matches", "' cow climbed the'",
                           "expected text made of vocabulary pieces"]),
    ("target-not-in-vocab", edit('target = "␣roof"', 'target = "␣moon"'),
     "field prompt.target", ["'␣moon' is not in the vocabulary", "expected a piece of vocab.pieces or its id"]),
    ("target-id-out-of-range", edit('target = "␣roof"', "target = 12"),
     "field prompt.target", ["12 is not in the vocabulary", "expected a piece of vocab.pieces or its id"]),
    ("weight-abc", edit("[ 1,   -0.5,  0,   -0.5],  # ␣cat", '[ 1,   "abc",  0,   -0.5],'),
     "field model.E row 3, column 2", ["'abc' is not a number", "expected " + NUMBER]),
    ("weight-true", edit("[ 1,   -0.5,  0,   -0.5],  # ␣cat", "[ 1,   true,  0,   -0.5],"),
     "field model.E row 3, column 2", ["true is a boolean", "expected " + NUMBER]),
    ("weight-nested-list", edit("[ 1,   -0.5,  0,   -0.5],  # ␣cat", "[ 1,   [-0.5],  0,   -0.5],"),
     "field model.E row 3, column 2", ["[-0.5] is not a number", "expected " + NUMBER]),
    ("weight-in-block", edit("  [0, 0, 0, 0],\n  [1, 0, 1, 0],\n]", '  [0, 0, 0, 0],\n  [1, 0, "x", 0],\n]'),
     "field blocks[1].W_Q row 4, column 3", ["'x' is not a number", "expected " + NUMBER]),
    ("weight-one-over-zero", edit("[ 1,   -0.5,  0,   -0.5],  # ␣cat", '[ 1,   "1/0",  0,   -0.5],'),
     "field model.E row 3, column 2", ["'1/0' divides by 0", "expected " + NUMBER]),  # (not "is not a number")
    ("weight-nan", edit("[ 1,   -0.5,  0,   -0.5],  # ␣cat", "[ 1,   nan,  0,   -0.5],"),
     "field model.E row 3, column 2", ["is not finite", "expected " + NUMBER]),
    ("weight-date", edit("[ 1,   -0.5,  0,   -0.5],  # ␣cat", "[ 1,   1979-05-27,  0,   -0.5],"),
     "field model.E row 3, column 2", ["is not a number", "expected " + NUMBER]),
    ("heads-do-not-divide", edit("heads = 2", "heads = 3"),
     "field model.heads", ["d_model = 4 is not divisible by heads = 3",
                           "expected a number of heads that divides d_model"]),
    ("unknown-activation", edit('activation = "gelu_tanh"', 'activation = "swish"'),
     "field conventions.activation", ["unknown value 'swish'", "expected one of gelu_tanh, gelu_erf, relu"]),
    ("unknown-mask", edit('mask = "causal"', 'mask = "upper"'),
     "field conventions.mask", ["unknown value 'upper'", "expected one of causal, none"]),
    ("unknown-convention", edit("layernorm_eps = 1e-5", "layernorm_epsilon = 0"),
     "field conventions.layernorm_epsilon", ["unknown field", "expected one of", "layernorm_eps"]),
    ("negative-eps", edit("layernorm_eps = 1e-5", "layernorm_eps = -1e-5"),
     "field conventions.layernorm_eps", ["is negative", "expected eps >= 0"]),
    # an unknown field anywhere names the nearest valid one (it used to be ignored at the top level)
    ("top-level-typo", edit("[conventions]", "[convention]"),
     "field convention", ["unknown field; did you mean conventions?", "expected one of"]),
    ("top-level-extra", edit("[vocab]", "foo = 1\n[vocab]"), "field foo", ["unknown field", "expected one of"]),
    ("section-typo", edit("[model]", "[modle]"), "field model", ["missing field (is modle meant to be model?)"]),
    ("input-table-typo", edit("[vocab]", "[inptu]\nX = [[1, 0, 0, 0]]\n[vocab]").replace("[vocab]", "[vocabb]"),
     "field inptu", ["unknown field; did you mean input?"]),
    ("block-field-case", edit("[[blocks]]", "[[blocks]]\nW_q = 1"),
     "field blocks[1].W_q", ["did you mean W_Q?"]),
    ("convention-typo", edit('mask = "causal"', 'mak = "causal"'),
     "field conventions.mak", ["did you mean mask?"]),
    # norm slots (the registry's norms: layernorm, rmsnorm)
    ("norm-as-list", edit('mask = "causal"', 'mask = "causal"\nnorm = ["rmsnorm"]'),
     "field conventions.norm", ["unknown value ['rmsnorm']", "expected one of layernorm, rmsnorm"]),
    ("slot-norm-as-table", edit("[[blocks]]", '[[blocks]]\nln2 = {name = "rmsnorm"}'),
     "field blocks[1].ln2", ["unknown norm a table", "expected one of layernorm, rmsnorm"]),
    ("rmsnorm-bias", edit("[[blocks]]", '[[blocks]]\nln1 = "rmsnorm"\nln1_bias = [0.5, 0, 0, 0]'),
     "field blocks[1].ln1_bias", ["is not a weight of this slot's norm (rmsnorm)", "expected one of ln1_gain"]),
    # (a fuzzed case: a table in the list crashed, exit 3, "unhashable type: 'dict'")
    ("sublayers-of-tables", edit("[[blocks]]", '[[blocks]]\nsublayers = [{x = "attention"}]'),
     "field blocks[1].sublayers", ["an array of tables", 'expected a list of "attention"']),
    ("residual-of-tables", edit("[[blocks]]", '[[blocks]]\nresidual = [{x = "attention"}]'),
     "field blocks[1].residual", ["an array of tables", "expected true or false"]),
    ("norm-without-norms", edit("[[blocks]]", '[[blocks]]\nlayernorm = false\nln1 = "rmsnorm"'),
     "field blocks[1].ln1", ["layernorm = false", "expected no norm fields"]),
    ("final-gain-without-final-norm", edit("final_layernorm = true", "final_layernorm = false")
     .replace("d_model = 4", "d_model = 4\nlnf_gain = [1, 1, 1, 1]", 1),
     "field model.lnf_gain", ["conventions.final_layernorm = false", "expected no final norm fields"]),
    # (a fuzzed case: kv_heads = 0.5 beside per-head weights crashed, exit 3, "integer division or modulo by zero")
    ("kv-heads-beside-per-head-weights", drop(r"^W_Q = \[.*?^W_V = \"I\"\n",
                                              "kv_heads = 0.5\nheads = [" + ", ".join(["{W_Q = %s, W_K = %s, W_V = %s}" % (
                                                  ("[[0, 0], [0, 1], [0, 0], [1, 0]]",) * 3)] * 2) + "]\n"),
     "field blocks[1].kv_heads", ["is 1/2 beside per-head weights (blocks[1].heads)",
                                  "expected no kv_heads: each head of blocks[1].heads gives its own W_K and W_V"]),
    # (a trial's case: model.heads = 2 and three heads given one by one ran three heads, while explain said h = 2)
    ("per-head-count-against-model-heads", drop(r"^W_Q = \[.*?^W_V = \"I\"\n",
                                                "heads = [" + ", ".join(["{W_Q = %s, W_K = %s, W_V = %s}" % ((
                                                    "[[0, 0], [0, 1], [0, 0], [1, 0]]",) * 3)]
                                                    + ["{W_Q = %s, W_K = %s, W_V = %s}" % (("[[0], [1], [0], [0]]",) * 3)] * 2)
                                                + "]\n"),
     "field blocks[1].heads", ["has 3 heads but model.heads = 2", "expected 2 [[blocks.heads]] tables, or model.heads = 3"]),
    # (a trial's: a head's missing W_V was "is w_q meant to be W_V?"; a block's W_Q beside per-head weights
    # "did you mean W_O?"; kv_heads = true "unknown value True", Python's spelling)
    ("w-q-beside-per-head-weights", edit("W_V = \"I\"\n", "W_V = \"I\"\nheads = [{W_Q = \"I\", W_K = \"I\", W_V = \"I\"}]\n"),
     "field blocks[1].W_Q", ["is given beside per-head weights (blocks[1].heads)",
                             "expected W_Q inside each [[blocks.heads]] table, or no [[blocks.heads]]"]),
    # (a trial's: text and ids that disagree used the ids silently; a head named by a number was accepted)
    ("prompt-text-and-ids-disagree", edit('text = "the cat climbed the"', 'text = "the cat climbed the"\nids = [1, 2]'),
     "field prompt.ids", ["is [1, 2] but prompt.text 'the cat climbed the' is the ids [0, 2, 4, 5, 1]",
                          "expected prompt.text or prompt.ids alone, or the two the same prompt"]),
    ("head-name-a-number", drop(r"^W_Q = \[.*?^W_V = \"I\"\n",
                                "heads = [{name = 3, W_Q = [[0, 0], [0, 1], [0, 0], [1, 0]], W_K = [[0, 0], [0, 1], "
                                "[0, 0], [1, 0]], W_V = [[0, 0], [0, 1], [0, 0], [1, 0]]}]\n"),
     "field blocks[1].heads[1].name", ["3 is not a string", "expected the head's name in quotes"]),
    ("trained-twice", edit('trained = ["E"]', 'trained = ["E", "W_Q", "E"]'),
     "field conventions.trained", ["names E twice", "expected each weight once"]),
    ("kv-heads-true", edit("[[blocks]]", "[[blocks]]\nkv_heads = true"),
     "field blocks[1].kv_heads", ["unknown value true", "expected one of heads or a number > 0"]),
    # the nasty inputs a user might produce
    ("conventions-array-of-tables", edit("[conventions]", "[[conventions]]"),
     "field conventions", ["is an array of tables", "expected a table [conventions]"]),
    ("model-array-of-tables", edit("[model]", "[[model]]"),
     "field model", ["is an array of tables", "expected a table [model]"]),
    ("vocab-a-number", edit("[vocab]\n", "vocab = 3\n[dictionary]\n"),
     "field vocab", ["is 3", "expected a table [vocab]"]),
    ("blocks-single-table", edit("[[blocks]]", "[blocks]"),
     "field blocks", ["is a single table [blocks]", "expected one or more [[blocks]] tables"]),
    ("blocks-a-string", edit("[vocab]", 'blocks = "one"\n[vocab]').replace("[[blocks]]", "[[layers]]"),
     "field blocks", ["'one' has no block", "expected one or more [[blocks]] tables"]),
    ("blocks-list-of-numbers", edit("[vocab]", "blocks = [1, 2]\n[vocab]").replace("[[blocks]]", "[[layers]]"),
     "field blocks[1]", ["1 is not a table", "expected a [[blocks]] table"]),
    ("W_1-ragged", edit("  [0, 1, 0, 0,  0, -1,  0,  0],", "  [0, 1, 0, 0,  0, -1,  0],"),
     "field blocks[1].W_1 row 2", ["has 7 columns", "expected 8 columns, as in row 1"]),
    ("W_1-empty-row", edit("  [1, 0, 0, 0, -1,  0,  0,  0],", "  [],"),
     "field blocks[1].W_1 row 1", ["is empty", "expected one or more numbers"]),
    ("W_1-identity", drop(r"^W_1 = \[.*?\n\]\n", 'W_1 = "I"\n'),
     "field blocks[1].W_1", ['"I" (identity) needs a square shape', "expected 4 rows"]),
    ("W_2-rows-not-d_mlp", edit_last("  [0, 0, 0, 1],\n]", "]"),
     "field blocks[1].W_2", ["has 7 rows", "expected 8 rows of 4 numbers"]),
    ("bias-wrong-length", edit('W_O = "I"', 'W_O = "I"\nb_Q = [0, 0, 0]'),
     "field blocks[1].b_Q", ["has 3 entries", "expected 4 numbers"]),
    ("b_1-wrong-length", edit('W_O = "I"', 'W_O = "I"\nb_1 = [0, 0, 0, 0]'),
     "field blocks[1].b_1", ["has 4 entries", "expected 8 numbers"]),
    ("bias-a-number", edit('W_O = "I"', 'W_O = "I"\nb_Q = 1'),
     "field blocks[1].b_Q", ["1 is not a list", "expected a list of numbers"]),
    ("unknown-block-field", edit('W_O = "I"', 'W_O = "I"\nW_X = "I"'),
     "field blocks[1].W_X", ["unknown field"]),
    ("d_model-zero", edit("d_model = 4", "d_model = 0"),
     "field model.d_model", ["0 is not a positive integer", "expected a positive integer"]),
    ("d_model-huge", edit("d_model = 4", "d_model = 100000"),
     "field model.E row 1", ["has 4 columns", "expected 100000 columns"]),
    ("heads-a-string", edit("heads = 2", 'heads = "2"'),
     "field model.heads", ["'2' is not a positive integer", "expected a positive integer"]),
    ("heads-zero", edit("heads = 2", "heads = 0"),
     "field model.heads", ["0 is not a positive integer", "expected a positive integer"]),
    ("negative-temperature", edit("temperature = 1", "temperature = -1"),
     "field conventions.temperature", ["is -1", "expected a temperature T >= 0"]),
    ("temperature-a-word", edit("temperature = 1", 'temperature = "hot"'),
     "field conventions.temperature", ["'hot' is not a number", "expected " + NUMBER]),
    ("final-layernorm-a-string", edit("final_layernorm = true", 'final_layernorm = "yes"'),
     "field conventions.final_layernorm", ["'yes'", "expected true or false"]),
    ("trained-a-string", edit('trained = ["E"]', 'trained = "E"'),
     "field conventions.trained", ["'E'", 'expected "all" or a list of weight names']),
    ("trained-no-weight-name", edit('trained = ["E"]', 'trained = ["E", "W_9"]'),
     "field conventions.trained", ["names W_9, which is no weight's name", 'expected "all" or a list of weight names']),
    ("trained-a-weight-the-case-lacks", edit('trained = ["E"]', 'trained = ["E", "b_Q"]'),  # a bias of some model, not this one's
     "field conventions.trained", ["names b_Q, which this case does not have",
                                   "expected a list of this case's weights: E, P, W_Q, W_K, W_V, W_O, W_1, W_2, W_U"]),
    ("text-a-number", edit('text = "the cat climbed the"', "text = 5"),
     "field prompt.text", ["5 is not a string", "expected the prompt as a string"]),
    ("text-empty", edit('text = "the cat climbed the"', 'text = ""'),
     "field prompt.text", ["the prompt is empty", "expected text made of vocabulary pieces"]),
    ("ids-out-of-range", edit('text = "the cat climbed the"', "ids = [0, 99]"),
     "field prompt.ids", ["[0, 99]", "expected a non-empty list of ids from 0 to 11"]),
    ("prompt-typo", edit('target = "␣roof"', 'targets = "␣roof"'),
     "field prompt.targets", ["unknown field", "expected one of text, ids, target"]),
    ("repeated-piece", edit('"<eot>"]', '"<eot>", "the"]'),
     "field vocab.pieces", ["has the piece 'the' twice (ids 0 and 12)", "expected distinct pieces"]),
    ("pieces-not-strings", edit('"<eot>"]', '"<eot>", 3]'),
     "field vocab.pieces", ["is not a list of non-empty strings", "expected a list of token pieces"]),
    ("name-a-table", edit('name = "cat-climbed"', "name = {a = 1}"),
     "field name", ["a table is not a string", "expected a string"]),
    ("weight-exponent-huge", edit("[ 1,   -0.5,  0,   -0.5],  # ␣cat", "[ 1,   1e999999999,  0,   -0.5],"),
     "field model.E row 3, column 2", ["is too large", "expected a number between 1e-1000 and 1e1000"]),
    ("weight-exponent-tiny", edit("[ 1,   -0.5,  0,   -0.5],  # ␣cat", "[ 1,   1e-99999,  0,   -0.5],"),  # (its size, not
     "field model.E row 3, column 2", ["1e-99999 is too small", "expected a number between 1e-1000"]),  # its places)
    ("weight-text-exponent-tiny", edit("[ 1,   -0.5,  0,   -0.5],  # ␣cat", '[ 1,   "1e-999999999",  0,   -0.5],'),
     "field model.E row 3, column 2", ["is too small", "expected a number between 1e-1000 and 1e1000"]),
    ("integer-too-large", edit("[ 1,   -0.5,  0,   -0.5],  # ␣cat", "[ 1,   1" + "0" * 1100 + ",  0,   -0.5],"),
     "field model.E row 3, column 2", ["a number of 1101 digits", "more than the limit of 400",
                                       "[limits] table with digits = N"]),
    ("fraction-too-small", edit("[ 1,   -0.5,  0,   -0.5],  # ␣cat", '[ 1,   "1/1' + "0" * 1100 + '",  0,   -0.5],'),
     "field model.E row 3, column 2", ["a number of 1102 digits", "more than the limit of 400"]),
    ("integer-too-long", edit("[ 1,   -0.5,  0,   -0.5],  # ␣cat", "[ 1,   " + "9" * 5000 + ",  0,   -0.5],"),
     None, ["line 31: a number written with 5000 digits", "more than the limit of 400 digits"]),
    ("integer-too-long-underscores", edit("[ 1,   -0.5,  0,   -0.5],  # ␣cat", "[ 1,   " + "9_" * 4400 + "9,  0,   -0.5],"),
     None, ["line 31: a number written with 4401 digits", "more than the limit of 400 digits"]),
    ("choice-as-a-number", edit("[conventions]", "[conventions]\nloss_log = 2"),
     "field conventions.loss_log", ['2 is a number, not the choice "2"', 'expected the quoted text "2"']),
    ("nested-too-deep", edit("[vocab]", "deep = " + "[" * 5000 + "]" * 5000 + "\n[vocab]"),
     None, ["malformed TOML", "nested too deeply"]),
]


@pytest.mark.parametrize("text, field, words", [c[1:] for c in BAD_CASES], ids=[c[0] for c in BAD_CASES])
def test_bad_case_gives_one_clean_error_line(tmp_path, text, field, words):
    """One targeted edit of cat-climbed.toml: one error line naming the file, the field and what was expected."""
    result, path = run_case(tmp_path, text)
    assert_clean_error(result, path, *([field] if field else []), *words)


CONSTANT_ROW = edit("layernorm_eps = 1e-5", "layernorm_eps = 0").replace(
    "[ 0,    0.5, -0.5,  0  ],  # ed", "[ 1.5,  1,    0.5,  1  ],  # ed")  # x_4 = ed + P[4] = (1, 1, 1, 1)


@pytest.mark.parametrize("args", [(), ("--step", "tokens"), ("--step", "layernorm", "--exact"),
                                  ("--format", "json"), ("--sig", "4")])
def test_layernorm_of_a_constant_row_with_eps_zero(tmp_path, args):
    """x_4 = E[ed] + P[4] = (1, 1, 1, 1) under eps = 0: sigma = 0 is named, whatever is asked for."""
    result, path = run_case(tmp_path, CONSTANT_ROW, *args)
    assert_clean_error(result, path, "field conventions.layernorm_eps", "row 4 of block 1", "constant row",
                       "eps = 0", "expected eps > 0")


def test_eps_zero_is_fine_without_a_constant_row(tmp_path):
    """eps = 0 alone is allowed: only a constant row makes the LayerNorm undefined."""
    result, _ = run_case(tmp_path, edit("layernorm_eps = 1e-5", "layernorm_eps = 0"), "--step", "loss")
    assert result.exit_code == 0, result.output
    assert "p(␣roof)" in result.output


def test_empty_file(tmp_path):
    """An empty file is valid TOML with nothing in it: the first missing table is named."""
    result, path = run_case(tmp_path, "")
    assert_clean_error(result, path, "field vocab", "missing field")


def test_not_utf8(tmp_path):
    """A file that is not UTF-8 cannot be read; the error says so, and where (the line, and
    the column in characters: the first byte that is not UTF-8 follows "# caf" on the
    line of the first "# the"), instead of a UnicodeDecodeError's byte offset."""
    path = tmp_path / "latin1.toml"
    text = BASE.replace("␣", " ").replace("# the", "# caf\xe9", 1)
    line = text[:text.index("# caf\xe9")].count("\n") + 1
    column = text.index("# caf\xe9") - text.rfind("\n", 0, text.index("# caf\xe9")) + 5
    path.write_bytes(text.encode("latin-1"))
    assert_clean_error(run("run", str(path)), str(path), f"line {line}, column {column}:", "(byte 0xe9)",
                       "not UTF-8 text", "expected a text file saved as UTF-8")


def test_utf16_is_named(tmp_path):
    """A case saved as UTF-16 (Windows Notepad's "Unicode": a byte-order mark, then two
    bytes a character) is said to be UTF-16, not "invalid start byte (byte 0xff)"."""
    for encoding in ("utf-16", "utf-16-be"):
        path = tmp_path / f"{encoding}.toml"
        text = BASE if encoding == "utf-16" else "\ufeff" + BASE  # (utf-16-be writes no mark of its own)
        path.write_bytes(text.encode(encoding))
        line = assert_clean_error(run("run", str(path)), str(path), "the file is UTF-16 text", "not UTF-8 text",
                                  "expected a text file saved as UTF-8")
        assert "0xff" not in line and "0xfe" not in line


def test_utf16_without_its_mark_and_a_nul_byte_are_named(tmp_path):
    """UTF-16 saved with no byte-order mark decodes as UTF-8 (ASCII with a 0 byte beside
    each character): it is said to be UTF-16, not "malformed TOML: Found invalid character
    '\\x00'" or "Invalid statement"; a lone NUL byte is named with its line and column."""
    for encoding in ("utf-16-le", "utf-16-be"):
        path = tmp_path / f"{encoding}.toml"
        path.write_bytes(BASE.encode(encoding))
        assert_clean_error(run("run", str(path)), str(path), "the file is UTF-16 text", "not UTF-8 text")
    path = tmp_path / "nul.toml"
    text = BASE.replace("# the", "# t\x00he", 1)
    line = text[:text.index("\x00")].count("\n") + 1
    column = text.index("\x00") - text.rfind("\n", 0, text.index("\x00"))
    path.write_bytes(text.encode("utf-8"))
    assert_clean_error(run("run", str(path)), str(path), f"line {line}, column {column}: a NUL byte (0x00)")


def test_a_byte_order_mark_is_read_past(tmp_path):
    """A case saved with a byte-order mark (as Windows Notepad saves UTF-8) reads as the
    same case without it: the same output."""
    plain, marked = tmp_path / "plain.toml", tmp_path / "marked.toml"
    plain.write_text(BASE, encoding="utf-8")
    marked.write_text("\ufeff" + BASE, encoding="utf-8")
    first, second = run("run", str(plain)), run("run", str(marked))
    assert first.exit_code == 0 and second.exit_code == 0, second.output
    assert second.output == first.output.replace("plain.toml", "marked.toml")


def test_a_folder_instead_of_a_file(tmp_path):
    """A folder is neither a case file nor a bundled name, and the line says it is a folder
    (it exists: "no such case file" misled a fresh user)."""
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    assert_clean_error(run("run", str(folder)), "is a folder, not a case file", "expected a path to a .toml file")


def test_nonexistent_case_name():
    """An unknown name lists the bundled cases."""
    result = run("run", "no-such-case")
    assert_clean_error(result, "no such case file or bundled case 'no-such-case'",
                       "expected a path to a .toml file or one of:", "cat-climbed")
    assert "did you mean" not in result.output  # (no bundled name is near it)


@pytest.mark.parametrize("typed, meant", [("cat-climbd", "cat-climbed"), ("crain", "crane"), ("Softmax", "softmax"),
                                          ("crane.toml", "crane"), ("cat-climbd.toml", "cat-climbed")])
def test_a_mistyped_bundled_name_suggests_the_nearest(typed, meant):
    """A bundled case's name mistyped by a letter or two, or written as a file name that is
    not here (crane.toml): the line says which one was meant."""
    assert_clean_error(run("run", typed), f"no such case file or bundled case '{typed}'; did you mean {meant}?")


def test_places_and_sig_together():
    """--places and --sig exclude each other: a usage error (exit 2), no traceback."""
    result = run("run", "cat-climbed", "--places", "2", "--sig", "3")
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "give --places or --sig, not both" in result.output


@pytest.mark.parametrize("argv, words", [
    (["run", "cat-climbed", "--places", "99"], ["'--places': 99 is not in the range 0<=x<=50", "`derive run --help`"]),
    (["rnu", "cat-climbed"], ["No such command 'rnu'. Did you mean 'run'?", "`derive --help`"]),
    (["--bogus"], ["No such option: --bogus", "`derive --help`"]),
    (["run", "cat-climbed", "--plac", "3"], ["No such option: --plac", "--places", "`derive run --help`"]),
    (["run"], ["Missing argument", "case", "`derive run --help`"])])
def test_a_usage_error_is_one_line(argv, words):
    """A mistyped command line is one error line naming the mistake and the --help that
    lists what the command takes (typer printed a box of 3 to 5 lines: a fresh user's
    report); ``derive`` with nothing after it still prints the help."""
    assert_clean_error(run(*argv), *words)
    alone = run()
    assert "Usage: " in alone.output and "COMMAND" in alone.output and "error:" not in alone.output


def test_unknown_step():
    """An unknown --step is a usage error (exit 2) that lists the steps."""
    result = run("run", "cat-climbed", "--step", "nonsense")
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "unknown step 'nonsense'" in result.output


def test_a_step_the_case_does_not_have():
    """A known step the case lacks (softmax starts from given logits: no weights step):
    one line that lists the steps the case has."""
    result = run("run", "softmax", "--step", "weights")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "has no step 'weights' (expected one of its steps: logits, loss, gradient, sgd, after)" in result.output


def test_output_in_a_nonexistent_folder(tmp_path):
    """-o into a folder that does not exist: one error line, and no folder is created."""
    target = tmp_path / "no" / "such" / "folder" / "out.json"
    result = run("run", "cat-climbed", "--step", "tokens", "--format", "json", "-o", str(target))
    assert_clean_error(result, str(target), "cannot write")
    assert not target.exists() and not (tmp_path / "no").exists()


@pytest.mark.parametrize("target", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
def test_o_naming_the_standard_output_writes_into_it(tmp_path, target):
    """-o /dev/stdout is the output the shell gave the command, as it is: after what a file
    opened for appending (>>) holds, between a group's other lines, and into a pipe (it was
    the file the name led to, replaced: the appended and grouped lines were lost; and a pipe
    was 'No such file or directory', exit 2)."""
    import shlex
    import subprocess
    import sys

    command = f"{shlex.quote(sys.executable)} -m derive run softmax"
    subprocess.run(f"{command} -o page.txt", shell=True, cwd=tmp_path, check=True)  # (-o's page, as a file holds it)
    page = (tmp_path / "page.txt").read_text()
    script = (f"echo hello > app.txt; {command} -o {target} >> app.txt; "
              f"{{ echo header; {command} -o {target}; echo footer; }} > group.txt; "
              f"{command} -o {target} | wc -c")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert int(done.stdout) == len(page.encode())
    assert (tmp_path / "app.txt").read_text() == "hello\n" + page
    assert (tmp_path / "group.txt").read_text() == "header\n" + page + "footer\n"


KEPT = "known content\nthat must survive a failed run\n"


@pytest.mark.parametrize("fmt", ["rich", "json"])
@pytest.mark.parametrize("bad", ["malformed", "constant-row", "missing-case", "weight-abc"])
def test_output_file_kept_when_the_run_fails(tmp_path, fmt, bad):
    """A failed run leaves an existing -o file exactly as it was, and no temporary file."""
    out = tmp_path / "out.txt"
    out.write_text(KEPT, encoding="utf-8")
    texts = {"malformed": edit("heads = 2", "heads = = 2"), "constant-row": CONSTANT_ROW,
             "weight-abc": edit("[ 1,   -0.5,  0,   -0.5],  # ␣cat", '[ 1,   "abc",  0,   -0.5],')}
    if bad == "missing-case":
        result = run("run", str(tmp_path / "missing.toml"), "--format", fmt, "-o", str(out))
    else:
        result, _ = run_case(tmp_path, texts[bad], "--format", fmt, "-o", str(out))
    assert_clean_error(result)
    assert out.read_text(encoding="utf-8") == KEPT
    left = {p.name for p in tmp_path.iterdir()} - {"case.toml"}
    assert left == {"out.txt"}  # and no temporary file left behind


def test_output_file_not_created_when_the_run_fails(tmp_path):
    """A failed run does not create the -o file."""
    out = tmp_path / "new.json"
    result, _ = run_case(tmp_path, CONSTANT_ROW, "--format", "json", "-o", str(out))
    assert_clean_error(result)
    assert not out.exists()


def test_the_bundled_case_still_runs(tmp_path):
    """The checks refuse nothing the bundled case uses."""
    out = tmp_path / "cat.json"
    result = run("run", "cat-climbed", "--format", "json", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8").startswith("[")


def test_the_error_goes_to_stderr(tmp_path):
    """With the installed command: the one error line is on stderr, stdout stays empty."""
    import shutil
    import subprocess
    import sys

    exe = shutil.which("derive") or str(Path(sys.executable).with_name("derive"))
    if not Path(exe).exists():
        pytest.skip("the derive command is not installed")
    path = tmp_path / "case.toml"
    path.write_text(edit("heads = 2", "heads = 3"), encoding="utf-8")
    proc = subprocess.run([exe, "run", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"error: {path}: field model.heads: d_model = 4 is not divisible by heads = 3 "
        "(expected a number of heads that divides d_model)"]


def test_astronomical_value_is_printed_in_scientific_form(tmp_path):
    """T = 1e-30 makes e^(z/T) about 10^(10^30): too large to write out at 3 places (FLINT
    would abort the process turning it into digits; derive used to refuse the case). It is
    printed in scientific form with 4 significant figures, and p and L, well defined, are
    printed as usual: p(␣roof) = 1.000 (its logit is the largest by 0.44, e^(-0.44e30) away
    from 1), L = -ln p(␣roof) = 0.000."""
    text = (Path(__file__).parent.parent / "cases" / "cat-climbed.toml").read_text(encoding="utf-8")
    case = tmp_path / "tiny-temperature.toml"
    case.write_text(re.sub(r"(?m)^temperature = 1$", "temperature = 1e-30", text), encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(case), "--step", "logits"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    roof = next(line for line in result.output.splitlines() if "␣roof" in line and "e1081686159" in line)
    assert re.search(r"\b\d\.\d{3}e1081686159\d{21}(?!\d)", roof) and roof.rstrip(" │").endswith("1.000")
    assert "too large to write out at 3 places (1,081,686,159," in " ".join(result.output.split())


def test_reader_step_undefined_from_printed_values_is_no_crash():
    """At 0 places many inputs print as 0, so a reader's quotient or logarithm from the
    printed values is undefined (a / 0, ln 0): that cell simply gets no by-hand note."""
    for options in (["--places", "0"], ["--places", "0", "--carry", "printed"]):
        result = CliRunner().invoke(app, ["run", "cat-climbed", *options])
        assert result.exit_code == 0, result.output
        assert "Traceback" not in result.output


def test_places_and_sig_are_bounded():
    for option in ("--places", "--sig"):
        result = CliRunner().invoke(app, ["run", "cat-climbed", option, "51"])
        assert result.exit_code == 2


def test_a_title_with_an_escape_sequence_is_refused(tmp_path):
    """A case's title is printed as it is at the head of the terminal: ESC [2J cleared a
    fresh user's screen and BEL rang. Such a title is one error line naming the field and
    the character; a tab or a line break (a prompt of several lines) is kept."""
    from typer.testing import CliRunner

    from derive.cli import app

    text = (Path(__file__).resolve().parent.parent / "cases" / "softmax.toml").read_text(encoding="utf-8")
    title = next(line for line in text.splitlines() if line.startswith("title = "))
    path = tmp_path / "esc.toml"
    path.write_text(text.replace(title, 'title = "x\\u001b[2Jy\\u0007"'), encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(path), "--step", "loss"])
    assert result.exit_code == 2
    assert "field title: holds the control character U+001B" in " ".join(result.output.split())
    assert "\x1b" not in result.output
    path.write_text(text.replace(title, 'title = "two\\nlines\\tand a tab"'), encoding="utf-8")
    assert CliRunner().invoke(app, ["run", str(path), "--step", "loss"]).exit_code == 0


def test_a_missing_field_of_a_head_suggests_no_other_valid_field(tmp_path):
    """A head's W_V left out: "missing field (is w_q meant to be W_V?)" pointed at the W_Q
    beside it (a trial's case); a valid key is no typo of the missing one."""
    text = drop(r"^W_Q = \[.*?^W_V = \"I\"\n",
                "heads = [{W_Q = [[0, 0], [0, 1], [0, 0], [1, 0]], W_K = [[0, 0], [0, 1], [0, 0], [1, 0]]}]\n")
    result, path = run_case(tmp_path, text)
    line = assert_clean_error(result, path, "field blocks[1].heads[1].W_V")
    assert line.endswith("W_V: missing field"), line
    result, path = run_case(tmp_path, text.replace("W_K =", "w_v = [[0, 0], [0, 1], [0, 0], [1, 0]], W_K ="))
    assert_clean_error(result, path, "field blocks[1].heads[1].W_V: missing field (is w_v meant to be W_V?)")


@pytest.mark.parametrize("case, old, new, field", [
    ("woodchuck", '"woodchuck", "would"', '"wood\\u001b[31mchuck", "would"', "vocab.pieces: the piece 5"),
    ("woodchuck", '"woodchuck", "would"', '"chu\\rck", "would"', "vocab.pieces: the piece 5"),
    ("raschka-simplified", '"journey"', '"jour\\u0007ney"', "input.labels: the label 1"),
    ("woodchuck", '"woodchuck", "would"', '"wood\\u202echuck", "would"', "vocab.pieces: the piece 5"),
    ("woodchuck", '"woodchuck", "would"', '"wood\\u2028chuck", "would"', "vocab.pieces: the piece 5")])
def test_a_piece_or_label_with_an_escape_sequence_is_refused(tmp_path, case, old, new, field):
    """A vocabulary piece (or a row label of X) is printed in every table and note: an
    escape sequence in one turned the rest of a reader's page red and moved the tables'
    borders, and a carriage return or a bell was dropped unsaid; a right-to-left override
    turns the rest of a row around on a terminal that honours it (two trials' findings). As
    a title's, it is one error line naming the field, the piece and the character; a tab
    in a piece is kept."""
    text = (Path(__file__).resolve().parent.parent / "cases" / f"{case}.toml").read_text(encoding="utf-8")
    assert text.count(old) == 1
    path = tmp_path / "ctrl.toml"
    path.write_text(text.replace(old, new), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "derive", "run", str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert f"field {field}" in done.stderr and "holds the control character U+" in done.stderr
    tab = tmp_path / "tab.toml"
    tab.write_text(text.replace(old, old.replace("chuck", "chu\\tck").replace("journey", "jour\\tney")), encoding="utf-8")
    assert subprocess.run([sys.executable, "-m", "derive", "run", str(tab)], capture_output=True, timeout=120).returncode == 0
