"""The plain-arithmetic reading of derive.mathread (``_arithmetic``): a formula of plain
numbers alone is read without the grammar, and must give exactly the tree the grammar
(Lark) gives; any other text is left to the grammar.

The reference is the grammar itself (``mathread._parser`` and ``_Build``, the path every
other formula takes), applied to the same text: the two readings are independent code."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark.exceptions import LarkError

from derive import mathread
from derive.mathread import Bin, Chain, Neg, Num, Paren

from examples import examples


def by_grammar(text: str):
    """The grammar's reading of ``text`` (as _formula makes it), or the exception's type."""
    try:
        out = mathread._Build().transform(mathread._parser().parse(text))
    except (LarkError, RecursionError) as exc:
        return type(exc)
    return out if isinstance(out, Chain) else Chain((out,), ())


@pytest.mark.parametrize("text, tree", [
    ("0.1875 + 0.841 = 1.0285", Chain((Bin("+", Num("0.1875"), Num("0.841")), Num("1.0285")), ("=",))),
    # a leading sign takes the whole product; a later factor's sign is its own
    ("-0.475 \\cdot 0.09375 - 1.348 \\cdot (-0.234375)",
     Chain((Bin("-", Neg(Bin("*", Num("0.475"), Num("0.09375"))),
                Bin("*", Num("1.348"), Paren((Neg(Num("0.234375")),)))),), ())),
    ("0.92202\u2026 / 73.79234\u2026 = 0.01249\u2026",
     Chain((Bin("/", Num("0.92202", True), Num("73.79234", True)), Num("0.01249", True)), ("=",))),
    ("2 \u00d7 \u22123 \u2248 \u22126", Chain((Bin("*", Num("2"), Neg(Num("3"))), Neg(Num("6"))), ("\u2248",))),
])
def test_plain_arithmetic_is_read_as_the_grammar_reads_it(text, tree):
    assert mathread._arithmetic(text) == tree
    assert by_grammar(text) == tree


@pytest.mark.parametrize("text", [
    "x_5 + 1", "1.5e3 + 1", "2 (3)", "(1)(2)", "0.964^{a}", "39.5%", "\\sqrt{2}", "1 \\to 2", "(1, 2)",
    "(1 = 1)", "1 \\, + 2", "3!", "0.5\u2026\u2026", "1 +", "", "   ", "()", "\\cdots", "2 \\approxeq 2",
    "(" * 250 + "1" + ")" * 250, "+".join(["1"] * 250), "-" * 250 + "1",
])
def test_anything_else_is_left_to_the_grammar(text):
    assert mathread._arithmetic(text) is None


TOKENS = st.sampled_from(["0", "1", "2.5", "0.125", "10", "0.3\u2026", "+", "-", "\u2212", "*", "\\cdot", "\u00b7",
                          "\u22c5", "\u00d7", "\\times", "/", "(", ")", "=", "\u2248", "\\approx", " ", "  ", "x", "e",
                          ".", ",", "^", "%", "\u2026"])


@settings(max_examples=examples(3000), deadline=None)
@given(st.lists(TOKENS, min_size=1, max_size=14), st.lists(st.booleans(), min_size=14, max_size=14))
def test_random_arithmetic_reads_as_the_grammar(parts, spaced):
    """Whatever _arithmetic reads, the grammar reads the same (and it reads nothing the
    grammar refuses); with and without spaces between the tokens."""
    text = "".join(p + (" " if s else "") for p, s in zip(parts, spaced))
    quick = mathread._arithmetic(text)
    if quick is not None:
        assert by_grammar(text) == quick, text


def test_a_wide_note_is_read_without_the_grammar(monkeypatch):
    """A by-hand note of a sum of 64 products (crane's) is read by _arithmetic: the grammar
    is not called (and the tree is the grammar's)."""
    terms = " + ".join(f"0.{k:03d} \\cdot ({'-' if k % 3 else ''}1.{k:02d})" for k in range(1, 65))
    text = f"{terms} = 12.345\u2026"
    expected = by_grammar(text)
    assert isinstance(expected, Chain)
    mathread._formula.cache_clear()

    def refuse():
        raise AssertionError("the grammar was used")
    monkeypatch.setattr(mathread, "_parser", refuse)
    assert mathread.read(text) == expected
    mathread._formula.cache_clear()


@pytest.mark.parametrize("text, error", [
    ("(" * 600 + "1" + ")" * 600 + " = 1", "TooDeep"),  # deeper than the grammar's tree walk
    (" + ".join(["x"] * 8_000) + " = 1", "TooLong"),  # more than MAX_LENGTH characters
])
def test_a_formula_past_the_readers_bounds_raises_its_own_error(text, error):
    """mathread says which bound a formula is past by the class of its error (handfile chose
    what to do from the message's words, "nests too deeply" and "the formula is longer
    than"); both are DeriveErrors, so a caller that only reports them is unchanged."""
    mathread._read.cache_clear()
    mathread._formula.cache_clear()
    with pytest.raises(getattr(mathread, error)) as caught:
        mathread.read(text)
    assert isinstance(caught.value, mathread.DeriveError)
    other = {"TooDeep": "TooLong", "TooLong": "TooDeep"}[error]
    assert not isinstance(caught.value, getattr(mathread, other))
