"""Reading a case file's TOML (derive/case.py, parse_toml): a long file is parsed by
toml-rs where it reads as tomllib does, everything else by tomllib, and a file toml-rs
would crash on (nesting 100,000 deep: it overflows its stack) never reaches it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from decimal import Decimal
from pathlib import Path

import pytest

from derive import case
from derive.case import FAST_TOML_BYTES, FAST_TOML_DEPTH, _shallow, load_case, parse_toml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from synthetic import case_text  # noqa: E402

pytestmark = pytest.mark.quick


def test_a_long_case_reads_as_tomllib_reads_it_and_by_toml_rs(monkeypatch):
    """A synthetic d_model 32 case (fractions "k/256", decimals, integers, tables): the
    same dict, Decimals and all, as tomllib's; and toml-rs read it (tomllib was not asked)."""
    text = case_text(d_model=32, heads=4, tokens=8) + "\n[extra]\nx = 0.1\ny = -0.0\nz = [1e-400, 5e262]\n"
    assert len(text) >= FAST_TOML_BYTES
    expected = tomllib.loads(text, parse_float=Decimal)
    assert expected["extra"]["x"] == Decimal("0.1")

    def not_tomllib(*args, **kwargs):
        raise AssertionError("tomllib asked")

    with monkeypatch.context() as patch:
        patch.setattr(tomllib, "loads", not_tomllib)
        got = parse_toml(text)
    assert got == expected and repr(got) == repr(expected)


def test_what_toml_rs_might_read_otherwise_goes_to_tomllib(monkeypatch):
    """A byte-order mark (toml-rs reads past it, tomllib refuses it), a multi-line string,
    a short file: tomllib's verdict, its data or its error."""
    calls = []
    real = tomllib.loads
    monkeypatch.setattr(tomllib, "loads", lambda text, **k: calls.append(len(text)) or real(text, **k))
    long = case_text(d_model=32, heads=4, tokens=8)
    with pytest.raises(tomllib.TOMLDecodeError):
        parse_toml("\ufeff" + long)
    assert parse_toml('note = """\n]]]\n"""\n' + long)["note"] == "]]]\n"
    assert parse_toml("a = 0.1")["a"] == Decimal("0.1")
    assert len(calls) == 3


def test_the_nesting_is_over_counted_never_under():
    """Closers inside a string never count: an array 81 deep with a string element full of
    ``]`` (behind an escaped quote, which the line-wise scan cannot pair) in its middle
    is deeper than FAST_TOML_DEPTH; comments and simple strings do not hide closers of
    rows; a matrix of many rows is shallow."""
    deep = ["a = ["] + ["["] * 40 + ['"\\"' + "]" * 60 + '",'] + ["["] * 40 + ["]"] * 81 + ["]"]
    assert not _shallow("\n".join(deep), FAST_TOML_DEPTH)
    plain = ["a = ["] + ["["] * 40 + ['"' + "]" * 60 + '", "]]", 1,  # "]]]"'] + ["["] * 40 + ["]"] * 81 + ["]"]
    assert not _shallow("\n".join(plain), FAST_TOML_DEPTH)  # (closers in a line's plain strings: not counted)
    rows = ["W = ["] + ['  ["1/4", 2, 0.5],  # a row\'s comment, it\'s "quoted"'] * 500 + ["]"]
    assert _shallow("\n".join(rows), FAST_TOML_DEPTH)
    assert not _shallow("a = " + "[" * 65 + "]" * 65, FAST_TOML_DEPTH)


def test_a_long_file_nested_100000_deep_is_an_error_not_a_crash(tmp_path):
    """toml-rs 0.4.3 overflows its stack past a few thousand levels (a segmentation fault:
    the process gone, no message); such a file goes to tomllib, and derive's one error line."""
    path = tmp_path / "deep.toml"
    path.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "derive", "run", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "nested too deeply" in lines[0], done.stderr


def test_a_long_case_loads_the_same_either_way(tmp_path, monkeypatch):
    """The loaded case (weights as exact fractions) is the same by toml-rs and by tomllib."""
    path = tmp_path / "d32.toml"
    path.write_text(case_text(d_model=32, heads=4, tokens=8), encoding="utf-8")
    fast = load_case(str(path))
    monkeypatch.setattr(case, "FAST_TOML_BYTES", 10**12)
    slow = load_case(str(path))
    assert fast == slow


def test_an_integer_of_4301_digits_in_a_long_file_is_tomllibs_error():
    """toml-rs reads an integer of 5,000 digits where tomllib (under derive's guard of
    4,300 digits) refuses it: the long file is read again by tomllib, and its error stands."""
    from derive.numbers import python_int_guard

    long = case_text(d_model=32, heads=4, tokens=8)
    with python_int_guard(), pytest.raises(ValueError, match="4300"):
        parse_toml("huge = " + "1" * 5000 + "\n" + long)
    with python_int_guard():
        assert parse_toml("big = " + "1" * 4300 + "\n" + long)["big"] == int("1" * 4300)
    with python_int_guard(), pytest.raises(ValueError, match="4300"):  # (underscores between the digits)
        parse_toml("huge = " + "1_" * 4300 + "1\n" + long)
    with python_int_guard():
        assert parse_toml("big = " + "1_" * 4299 + "1\n" + long)["big"] == int("1" * 4300)
