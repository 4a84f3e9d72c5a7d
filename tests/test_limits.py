"""Issue 13, "Limits on input, checked first": a case that asks for more than derive can
do in seconds is refused at once, with one line that names the field and the limit and
says how to raise it on purpose; the same case within a raised limit is read.

The 50 MB file, the 10^5-digit decimal and the 10^5-digit denominator are the issue's own
examples (each ran for minutes or printed a 100 KB message before).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from derive.case import load_case
from typer.testing import CliRunner

from derive.cli import app
from derive.errors import CaseError
from test_bad_input import BASE, assert_clean_error, edit, run, run_case


def first_weight(text: str) -> str:
    """cat-climbed with E's first entry (-0.5, the row of `the`) written as ``text``."""
    return edit("[-0.5, -0.5,  0,    1  ],  # the", f"[{text}, -0.5,  0,    1  ],  # the")


@pytest.mark.parametrize("written, digits", [
    ("0." + "1" * 100_000, 100_000),
    ('"1/' + "7" * 100_000 + '"', 100_001),
    ("1" * 401, 401),
    ("1" * 500, 500),  # (counted from its bits: once said 501)
    ("9" * 1000, 1000),
])
def test_a_number_with_too_many_digits_is_refused_at_once(tmp_path, written, digits):
    start = time.perf_counter()
    result, path = run_case(tmp_path, first_weight(written), "--step", "tokens")
    line = assert_clean_error(result, path, "model.E row 1, column 1", f"{digits} digits",
                              "limit of 400", "[limits]")
    assert len(line) < 300  # the number itself is not echoed
    assert time.perf_counter() - start < 30  # (a bound on a hang, not a timing goal)


def test_the_digits_limit_can_be_raised_on_purpose(tmp_path):
    """401 digits with [limits] digits = 500: read, and the weight is that exact number."""
    path = tmp_path / "raised.toml"
    path.write_text(first_weight("0." + "0" * 399 + "1") + "\n[limits]\ndigits = 500\n", encoding="utf-8")
    case = load_case(str(path))
    assert case.E[0][0] * 10 ** 400 == 1


def test_an_integer_past_the_raised_digits_is_past_the_size_limit(tmp_path):
    """5,000 digits as a bare integer with [limits] digits = 6000: the digits are allowed,
    the size is not (a TOML integer has no leading zeros: past 1e4300, far beyond 1e1000),
    and the line says so, as it does for the same number written as a string (a fresh user
    saw "more than the limit of 400 digits" under a raised limit)."""
    raised = "\n[limits]\ndigits = 6000\n"
    result, path = run_case(tmp_path, first_weight("1" * 5000) + raised, "--step", "tokens")
    line = assert_clean_error(result, path, "5000 digits", "far beyond 1e1000", "between 1e-1000 and 1e1000")
    assert "limit of 400" not in line
    quoted = tmp_path / "quoted.toml"
    quoted.write_text(first_weight('"' + "1" * 5000 + '"') + raised, encoding="utf-8")
    with pytest.raises(CaseError, match="between 1e-1000 and 1e1000"):
        load_case(str(quoted))


def test_a_case_file_larger_than_the_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = tmp_path / "big.toml"
    path.write_text(BASE + "\n# " + "x" * 17_000_000 + "\n", encoding="utf-8")
    assert_clean_error(run("run", str(path)), str(path), "17.0 MB", "limit of 16 MB", "DERIVE_MAX_CASE_MB")
    monkeypatch.setenv("DERIVE_MAX_CASE_MB", "20")
    assert load_case(str(path)).d_model == 4
    monkeypatch.setenv("DERIVE_MAX_CASE_MB", "lots")
    with pytest.raises(CaseError, match="DERIVE_MAX_CASE_MB"):
        load_case(str(path))


def test_a_hand_file_larger_than_the_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    """derive check reads at most 16 MB of hand computation (issue "work is bounded"), from
    a file or the standard input: one line naming the file, its size and the limit."""
    path = tmp_path / "big.md"
    path.write_text("L = 0.928\n" + ("% " + "x" * 97 + "\n") * 170_000, encoding="utf-8")  # 17.0 MB
    assert_clean_error(run("check", "cat-climbed", str(path)), str(path), "17.0 MB", "limit of 16 MB",
                       "DERIVE_MAX_HAND_MB")
    result = CliRunner().invoke(app, ["check", "cat-climbed", "-"], input=path.read_bytes())
    assert_clean_error(result, "standard input", "more than the limit of 16 MB", "DERIVE_MAX_HAND_MB")
    monkeypatch.setenv("DERIVE_MAX_HAND_MB", "20")
    result = run("check", "cat-climbed", str(path))
    assert result.exit_code == 0 and "1 entry: 1 correct" in result.output, result.output
    monkeypatch.setenv("DERIVE_MAX_HAND_MB", "0")
    assert_clean_error(run("check", "cat-climbed", str(path)), "DERIVE_MAX_HAND_MB = '0' is not a positive number")


def test_a_context_length_past_the_limit_is_refused(tmp_path):
    text = edit("context_length = 8", "context_length = 100000000000000000000000000000")
    result, path = run_case(tmp_path, text)
    assert_clean_error(result, "model.context_length", "limit of 1000000", "[limits] table with context_length")


def test_unknown_or_bad_limits_are_named(tmp_path):
    result, _ = run_case(tmp_path, BASE + "\n[limits]\ndigit = 500\n")
    assert_clean_error(result, "limits.digit", "did you mean digits?")
    result, _ = run_case(tmp_path, BASE + "\n[limits]\ndigits = 0\n")
    assert_clean_error(result, "limits.digits", "a positive integer (default 400)")


def test_the_rotation_check_of_a_long_context_is_bounded(tmp_path):
    """verify rotation with context_length = 10^6 (9.4 GB at 10^29 before) checks the first
    128 positions, and says so."""
    path = tmp_path / "long.toml"
    text = Path(load_case("woodchuck").path).read_text(encoding="utf-8")  # (sinusoids: the check applies)
    assert "context_length" not in text
    path.write_text(text.replace("[model]\n", "[model]\ncontext_length = 1000000\n", 1), encoding="utf-8")
    result = run("verify", str(path), "rotation")
    assert result.exit_code == 0, result.output
    assert "the first 128 of model.context_length = 1000000" in " ".join(result.output.split())


@pytest.mark.slow
def test_too_many_weights_are_refused_before_they_are_read(tmp_path, monkeypatch):
    """A block of d_model 512 (3.1 million weights: minutes of work, GBs) is refused at its
    first matrix past the limit, in seconds, naming the limit; [limits] weights raises it.
    (Its 29 MB of TOML pass a raised file-size limit.)"""
    monkeypatch.setenv("DERIVE_MAX_CASE_MB", "64")
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from synthetic import case_text
    text = case_text(d_model=512, heads=4, d_mlp=2048, tokens=4, vocab=4).replace(
        "weights = 1000000000  # (a benchmark: large on purpose)", "weights = 1000000")
    start = time.perf_counter()
    result, path = run_case(tmp_path, text, "--step", "tokens")
    # counted in the text before TOML reads it (29 MB: 7 s of parsing): E, P, W_U (3 x 4 x 512) and 4 x 512^2 +
    # 2 x 512 x 2048 in the block, 3,151,872 weights, and a few ids and settings
    assert_clean_error(result, path, "about 3,151,8", "numbers in the case's matrices and vectors", "limit of 1000000",
                       "[limits] table with weights = N")
    assert time.perf_counter() - start < 60  # (a bound on a hang, not a timing goal)
    small = case_text(d_model=96, heads=4, d_mlp=384, tokens=4, vocab=4).replace(
        "weights = 1000000000  # (a benchmark: large on purpose)", "weights = 50000")
    result, path = run_case(tmp_path, small, "--step", "tokens")  # 1 MB: counted as it is read
    assert_clean_error(result, path, "blocks", "numbers in the case's matrices and vectors so far", "limit of 50000")


def test_a_prompt_past_the_tokens_limit_is_refused(tmp_path):
    text = edit('text = "the cat climbed the"', 'ids = [' + ", ".join(["0"] * 1025) + "]")
    result, path = run_case(tmp_path, text, "--step", "tokens")
    assert_clean_error(result, path, "prompt.ids", "1,025 tokens", "limit of 1024")


def test_a_short_number_of_too_many_digits_is_said_as_written(tmp_path):
    """temperature = 1e-999 is six characters and 999 digits written out (1/10^999): the
    error shows it as written, where it said only "a number of 999 digits" (a trial's
    finding: the user wrote six characters)."""
    text = (Path(__file__).parents[1] / "cases" / "cat-climbed.toml").read_text(encoding="utf-8")
    path = tmp_path / "tiny.toml"
    path.write_text(text.replace("temperature = 1", "temperature = 1e-999", 1), encoding="utf-8")
    with pytest.raises(CaseError) as info:
        load_case(str(path))
    assert "temperature: 1e-999 is a number of 999 digits written out, more than the limit of 400" in str(info.value)


def test_a_huge_negative_setting_is_said_as_written(tmp_path):
    """temperature = -1e999 is refused in one short line that names the field and shows the
    value as the file writes it, not its 1,000 digits (the line was 1,100 characters)."""
    text = (Path(__file__).parents[1] / "cases" / "cat-climbed.toml").read_text(encoding="utf-8")
    path = tmp_path / "cold.toml"
    path.write_text(text.replace("temperature = 1", "temperature = -1e999", 1), encoding="utf-8")
    with pytest.raises(CaseError) as info:
        load_case(str(path))
    message = str(info.value)
    assert "conventions.temperature" in message and "negative" in message and "is -1e999," in message
    assert len(message) < 200, len(message)
    path.write_text(text.replace("temperature = 1", "temperature = 1e1001", 1), encoding="utf-8")
    with pytest.raises(CaseError) as info:  # (Decimal's own form was 1E+1001)
        load_case(str(path))
    assert "temperature: 1e1001 is too large" in str(info.value), str(info.value)
