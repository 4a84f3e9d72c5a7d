"""Issue 11, "Crashes and hangs": every hostile line ends with a verdict or a "not checked"
entry that says why, never a traceback, a hang, or a message that leaks the parser.

The bounds are mathread.MAX_DIGITS (a value of 10^100 or more is too large for a hand
computation; powers, e^x and n! are sized from logarithms before they are computed),
mathread.MAX_NUMBER / MAX_NUMBER_EXPONENT (a written number) and handfile.MAX_PLACES.
Each right verdict below is decided here from the mathematics, not from derive: a value
above 10^100 cannot round to a number written with a handful of digits, so the line is
wrong; e^-100000 is below 10^-100, so it rounds to 0.000.
"""

from __future__ import annotations

import math
from decimal import Decimal, getcontext

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from derive.case import load_case
from derive.check import STATUSES, Checker
from derive.derivation import derive
from derive.handfile import MAX_PLACES
from derive.mathread import MAX_DIGITS


@pytest.fixture(scope="module")
def derivation():
    return derive(load_case("cat-climbed"))


def verdicts(derivation, text: str):
    return Checker(derivation).check_text(text)


def one(derivation, line: str):
    found = verdicts(derivation, line)
    assert len(found) == 1, [(v.status, v.message) for v in found]
    return found[0]


# each value is 10^100 or more: log10 computed here with math.log10, never evaluated
HUGE = {
    "e^{100000} = 1.000": 100000 / math.log(10),
    "10^20000 = 1.0": 20000,
    "10^10^10 = 1.000": 10 ** 10,  # powers group from the right: 10^(10^10)
    "2^(2^(2^(2^5))) = 1.000": 2 ** 32 * math.log10(2),  # a lower bound: 2^(2^(2^32)) > 2^(2^32)
    "9^9^9 = 1.0": 9 ** 9 * math.log10(9),
    "99999999! = 1.0": math.lgamma(99999999 + 1) / math.log(10),
}


@pytest.mark.parametrize("line", list(HUGE))
def test_values_too_large_for_a_hand_computation_are_wrong(derivation, line):
    assert HUGE[line] >= MAX_DIGITS  # the claim's value is indeed above the bound
    v = one(derivation, line)
    assert v.status == "wrong", v.message
    assert f"larger than 10^{MAX_DIGITS}" in v.message and "None" not in v.message


def test_a_power_groups_from_the_right(derivation):
    """2^3^2 is 2^9 = 512 (as Python's 2**3**2), not (2^3)^2 = 64."""
    assert 2 ** 3 ** 2 == 512
    assert one(derivation, "2^3^2 = 512").status == "correct"
    assert one(derivation, "2^3^2 = 64").status == "wrong"


@pytest.mark.parametrize("line,status", [
    ("e^{-100000} = 0.000", "correct"),  # below 10^-100: rounds to 0 at 3 places
    ("e^{-100000} = 0.001", "wrong"),
    ("0.5^1000 = 0.000", "correct"),
    (f"5! = {math.factorial(5)}", "correct"),
    (f"20! = {math.factorial(20)}", "correct"),
    ("1 + 1 = 2", "correct"),  # a whole number is judged at 0 places
    ("1 + 1 = 3", "wrong"),
])
def test_small_and_whole_values(derivation, line, status):
    assert one(derivation, line).status == status


@pytest.mark.parametrize("line", ["L = 0.9e-999999999", "L = 1e4000", "1e4000 = 1.0",
                                  "L = 0." + "9" * (MAX_PLACES + 1), "L = " + "1" * 300 + ".5"])
def test_written_numbers_beyond_the_bounds_are_not_checked(derivation, line):
    v = one(derivation, line)
    assert v.status == "not checked" and v.message.startswith("not checked: "), v.message


def test_a_value_on_a_rounding_boundary_is_not_guessed(derivation):
    """sqrt(2) sqrt(2) / 16 is exactly 0.125, a tie at 2 places that no ball decides: the
    line is not checked, and the message never says 'rounds to None'."""
    v = one(derivation, "sqrt(2)*sqrt(2)*0.0625 = 0.13")
    assert v.status == "not checked" and "None" not in v.message and "boundary" in v.message


def test_a_large_value_is_decided_at_a_higher_precision(derivation):
    """e^200 to 3 places needs about 290 bits: the ball is evaluated again, not left undecided."""
    getcontext().prec = 120
    exact = Decimal(200).exp().quantize(Decimal("0.001"))
    assert one(derivation, f"e^{{200}} = {exact}").status == "correct"


def test_square_root_sign(derivation):
    """√0.75 = 0.8660254..., read as a square root (no parser message)."""
    getcontext().prec = 30
    assert str(Decimal("0.75").sqrt())[:5] == "0.866"
    v = one(derivation, "√0.75 = 0.866")
    assert v.status == "correct", v.message
    v = one(derivation, "√ = 1")
    assert v.status == "unreadable" and "Token" not in v.message and "Lark" not in v.message


def test_a_byte_order_mark_does_not_hide_line_1(derivation):
    for text in ("\ufeffL = 0.928\n", "\ufeff| token | $z$ |\n|--|--|\n| `␣roof` | 2.491 |\n"):
        found = verdicts(derivation, text)
        assert found and all(v.status == "correct" for v in found), [(v.line, v.message) for v in found]


def test_one_line_of_twenty_thousand_equations(derivation):
    """mu_5 = 0 exactly (x_5 = [-0.5, -0.5, -0.5, 1.5] sums to 0): each of the 20,000
    equations of the line is judged, and each entry keeps its own part of the line, not a
    copy of the whole line (which made the JSON grow past 2 GB)."""
    assert sum([-0.5, -0.5, -0.5, 1.5]) == 0
    line = ",\\quad ".join(["\\mu = 0.000"] * 20_000)
    found = verdicts(derivation, line)
    assert len(found) == 20_000
    assert {v.status for v in found} == {"correct"}
    assert max(len(v.source) for v in found) < 400


ALPHABET = list("0123456789.,+-*/^_()[]{}=|&$!%'` \t") + ["\\frac", "\\sqrt", "e^", "√", "≈", "·", "×", "−", "₅",
                                                            "⁽¹⁾", "μ", "σ", "\\quad", "\\[", "\\]", "Head 2",
                                                            "u_5", "p(␣roof)", "L", "\ufeff", "\\mu", "\n"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(ALPHABET), max_size=60).map("".join))
def test_random_hand_files_never_raise(derivation, text):
    """Random lines of brackets, powers, Unicode and control characters: a verdict for
    each entry, never an exception."""
    for v in Checker(derivation).check_text(text):
        assert v.status in STATUSES and v.message


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(ALPHABET), max_size=80).map("".join) | st.binary(max_size=80).map(
    lambda b: b.decode("utf-8", "replace")))
def test_ten_thousand_random_hand_files(derivation, text):
    for v in Checker(derivation).check_text(text):
        assert v.status in STATUSES and v.message


def test_a_cut_number_beside_a_name_is_a_verdict(derivation):
    """A cut number written against a name (``2.49067…u_5``, found by the random hand
    files above: a KeyError escaped the checker) gets a verdict like any line."""
    for v in Checker(derivation).check_text("<sup>a</sup> 2.49067…u_5\n2.49067… u_5 = 1"):
        assert v.status in STATUSES and v.message


@pytest.mark.parametrize("n", [150, 500, 1000, 5000])
def test_deep_nesting_is_one_unreadable_line(derivation, n):
    """150 to 5000 nested brackets, a sum or a product of n ones, n minus signs: each line
    is its own verdict (correct while derive can read it, else unreadable, "nests too
    deeply"); the lines around it are still judged (a fresh user's trial ended the whole
    check in a RecursionError from 150 brackets on). 1 + 1 + ... = n is arithmetic, right
    by counting."""
    lines = ["mu_5 = 0.000", "(" * n + "1" + ")" * n + " = 1", "+".join(["1"] * n) + f" = {n}",
             "-" * n + f"1 = {-1 if n % 2 else 1}", "*".join(["1"] * n) + " = 1", "sigma_5 = 0.866"]
    found = verdicts(derivation, "\n".join(lines))
    assert [v.line for v in found] == [1, 2, 3, 4, 5, 6]
    assert found[0].status == found[-1].status == "correct"
    assert {v.status for v in found[1:-1]} <= {"correct", "unreadable"}
    assert all("deep" in v.message for v in found[1:-1] if v.status == "unreadable")


# A value or sum line past 20,000 characters (mathread.MAX_LENGTH) was "cannot read 'L' as a
# name or as arithmetic", or had the whole line in its message, where the same line at 10,000
# characters got its reason: the number has too many digits (not checked), or the vector too
# many components. A message never repeats more than 60 characters of the line.
def _long_number(digits: int) -> str:
    return "0.928" + "0" * (digits - 4)  # `digits` digits in all: 0, 9, 2, 8 and the zeros


def _echoes_more_than_60(message: str, line: str) -> bool:
    """The message holds a run of the line longer than 60 characters (and a space or a
    quote on each side of them, which the line may have there too)."""
    return any(message[i:i + 63] in line for i in range(len(message) - 62))


@pytest.mark.parametrize("length", [10_000, 30_000, 100_000])
@pytest.mark.parametrize("shape", ["L = {}", "1 + 1 = {}", "{} + 1 = 2"])
def test_a_long_number_is_not_checked_at_any_length(derivation, shape, length):
    number = _long_number(length)
    line = shape.format(number)
    v = one(derivation, line)
    assert (v.status, v.message) == ("not checked", f"not checked: the number {number[:12]}... has {length} digits "
                                     "(derive reads at most 200)")


@pytest.mark.parametrize("components", [1_000, 5_000, 50_000])
def test_a_long_vector_is_counted_at_any_length(derivation, components):
    line = "u_5 = [" + ", ".join(["0.100"] * components) + "]"  # 7 characters a component
    v = one(derivation, line)
    assert (v.status, v.message) == ("unreadable", f"u_5 has 4 components but the line gives {components}")


@pytest.mark.parametrize("terms", [300, 2_000, 5_000, 50_000])
def test_a_long_line_is_echoed_in_60_characters(derivation, terms):
    """A sum of ``terms`` 0.1s, written 0.1 too large: wrong while derive reads it (300
    terms: 30, not 30.1), else unreadable with why; either way the message repeats at most
    60 characters of the line, and so does --format json's record (the same message)."""
    line = " + ".join(["0.1"] * terms) + f" = {terms // 10}.1"
    v = one(derivation, line)
    if terms == 300:
        assert v.status == "wrong" and v.message.endswith(f" = {terms // 10}, which rounds to {terms // 10}.0"), \
            v.message
    else:
        assert v.status == "unreadable", v.message
        assert "deeply" in v.message or "longer than 20000 characters" in v.message, v.message
    assert not _echoes_more_than_60(v.message, line), v.message
    assert len(v.message) < 200, v.message


def test_a_long_note_is_echoed_in_60_characters(derivation):
    """A note under a table whose calculation is a sum of 300 0.1s written as 31.0 (it is
    30): wrong, and the message repeats at most 60 characters of it."""
    sum_ = " + ".join(["0.1"] * 300)
    v = one(derivation, f"<sup>a</sup> u_1[1]: from the printed inputs, {sum_} = 31.0")
    assert v.status == "wrong" and v.message.endswith(" = 31.0 does not hold"), v.message
    assert not _echoes_more_than_60(v.message, sum_), v.message


def test_a_tables_keys_are_read_once_per_table(derivation, monkeypatch):
    """A table keyed by the prompt's tokens out of order reads its key column once, not once
    per cell (tablenames.token_position read every row's key for each cell it placed: 200
    rows of mu and sigma asked for a piece 242,400 times). Each row is `␣cat`, position 2:
    x_2 = E[␣cat] + P_2 = [1, -0.5, 0, -0.5] + [0.5, 0, -0.5, 0] = [1.5, -0.5, -0.5, -0.5]
    (the seed page, step 3), whose mean is 0 and whose sigma is sqrt(3/4 + 1e-5) = 0.866."""
    import derive.tablenames as tablenames

    assert f"{Decimal(0.75 + 1e-5).sqrt():.3f}" == "0.866"
    rows = 200
    text = "| token | mu | sigma |\n|---|---|---|\n" + "| `␣cat` | 0.000 | 0.866 |\n" * rows
    calls = []
    piece = tablenames._piece
    monkeypatch.setattr(tablenames, "_piece", lambda text, *vocabulary: calls.append(text) or piece(text, *vocabulary))
    found = verdicts(derivation, text)
    assert [v.status for v in found] == ["correct"] * 2 * rows
    assert {v.name for v in found} == {"mu_2", "sigma_2"}
    assert len(calls) <= 20 * rows, len(calls)  # (a few per cell: 2,600; 242,400 when each cell read every key)
