"""Fuzzed case files (issue 13, item 4): the bundled cases mutated as a hostile user would
(tests/case_mutations.py: types, shapes, magnitudes from 1e-400 to 1e1000, exact ties,
unknown keys, heads split, NaN and inf) and run with ``run``, ``run --sig 4``, ``run
--exact --places 5`` or ``run --format json``. Each run must end with exit code 0, or 2
with exactly one ``error:`` line on stderr and no traceback, within BOUND seconds.

The quick test runs QUICK_EXAMPLES fixed examples (derandomized); the slow one 10,000
random ones. Runs are in this process (typer's CliRunner) and stopped by SIGALRM at the
bound; a run stuck inside C code that SIGALRM cannot reach (a Python integer power of
10^300 digits) is stopped by faulthandler at three times the bound, which ends the test
session with the stack (a failure, never a hang). bench/fuzz.py prints the time of each.

Below, the regressions the fuzz turned up, each as a small case with its right value.
"""

from __future__ import annotations

import faulthandler
import re
import time
from fractions import Fraction

import mpmath
import sympy
import pytest
from hypothesis import HealthCheck, Phase, given, settings

from case_mutations import CASES, TEXTS, mutated_cases, parse, problem, run_bounded, to_toml
from derive.byhand import MAX_READ_EXPONENT, is_number, printed_fraction
from derive.steps import Ref

BOUND = 10.0  # seconds a fuzzed run may take (each bundled case runs in under 1.2 s unmutated)
QUICK_EXAMPLES = 200
# No shrinking: a failing example is reported as found, with its case text (shrinking would
# run a case that passes the bound again and again, minutes of replays).
PHASES = (Phase.explicit, Phase.reuse, Phase.generate)


def check(example, tmp_path_factory) -> None:
    """Run one mutated case and assert the outcome (see the module docstring)."""
    name, text, done, command = example
    path = tmp_path_factory.mktemp("fuzz") / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    faulthandler.dump_traceback_later(3 * BOUND, exit=True)
    try:
        outcome = run_bounded([*command, str(path)], BOUND)
    finally:
        faulthandler.cancel_dump_traceback_later()
    wrong = problem(outcome)
    assert wrong is None, f"{name} {' '.join(command)} after {done}: {wrong}\n--- case ---\n{text}"
    assert outcome.seconds < BOUND


@settings(max_examples=QUICK_EXAMPLES, derandomize=True, deadline=None, database=None, phases=PHASES,
          suppress_health_check=list(HealthCheck))
@given(example=mutated_cases())
def test_fuzzed_cases_quick(example, tmp_path_factory):
    check(example, tmp_path_factory)


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None, phases=PHASES, suppress_health_check=list(HealthCheck))
@given(example=mutated_cases())
def test_fuzzed_cases_10000(example, tmp_path_factory):
    check(example, tmp_path_factory)


@pytest.mark.parametrize("name", CASES)
def test_the_toml_writer_gives_back_each_bundled_case(name):
    """The fuzz's own writer: an unmutated case written and read back is the same data
    (else the fuzz would test the writer, not derive)."""
    data = parse(TEXTS[name])
    assert parse(to_toml(data)) == data


# ------------------------------------------------------------------ regressions
def attention_qkv_with(q_24: str) -> str:
    """attention-qkv with Q's row 2, column 4 (head 2's second column of ``cat``) replaced."""
    text = TEXTS["attention-qkv"]
    old = "     [0, 1,    1, 0],\n     [1, 1,    0, 2],"
    assert text.count(old) == 1
    return text.replace(old, f"     [0, 1,    1, {q_24}],\n     [1, 1,    0, 2],")


def test_a_softmax_weight_of_e_to_the_minus_1e300_prints_in_scientific_form(tmp_path):
    """Q_{2,4} = 1e300: head 2's scores for ``cat`` are s_{2,1} = 1/sqrt 2 and s_{2,2} =
    1e300/sqrt 2, so a_{2,1} = 1/(1 + e^((1e300 - 1)/sqrt 2)). Under --sig 4 its decade
    (about -3.07e299) raised OverflowError (fmpz_pow_fmpz: 10 to that power), then the
    by-hand note read the printed 3.889e-307... back as an exact Fraction (a power of ten
    with 3e299 digits: a hang) and the reader's e^s raised TooLarge. Now: exit 0, and the
    printed value is mpmath's at 700 digits, rounded to 4 figures."""
    path = tmp_path / "huge-q.toml"
    path.write_text(attention_qkv_with("1e300"), encoding="utf-8")
    outcome = run_bounded(["run", str(path), "--sig", "4", "--step", "attention", "--width", "100000"], BOUND)
    assert outcome.exit_code == 0, outcome.stderr
    mpmath.mp.dps = 700
    log10 = -mpmath.log(1 + mpmath.exp((mpmath.mpf(10) ** 300 - 1) / mpmath.sqrt(2))) / mpmath.log(10)
    exponent = int(mpmath.floor(log10))
    mantissa = mpmath.power(10, log10 - exponent)
    expected = f"{mpmath.nstr(mantissa, 4)}e\u2212{-exponent}"
    from typer.testing import CliRunner

    from derive.cli import app

    out = CliRunner().invoke(app, ["run", str(path), "--sig", "4", "--step", "attention", "--width", "100000"]).stdout
    printed = re.findall(r"\d\.\d{3}e\u2212\d+", out)
    assert printed == [expected], (printed[:1], expected[:40])


def test_a_printed_number_with_a_huge_exponent_is_not_read_back_as_a_fraction():
    """printed_fraction of 3.889e-307092573... (300 digits) would compute 10^(3e299):
    it is refused at once as not a number the reader can use; 1e-100000 is still read."""
    huge = "3.889e\u2212" + "3" * 300
    start = time.perf_counter()
    with pytest.raises(ValueError):
        printed_fraction(huge)
    assert not is_number(huge)
    assert time.perf_counter() - start < 1
    assert printed_fraction(f"1e-{MAX_READ_EXPONENT}") * 10 ** MAX_READ_EXPONENT == 1
    assert printed_fraction("2.5e3") == 2500
    assert not is_number("undecided at 10^-3")


def test_a_precision_too_low_for_a_branch_is_evaluated_once(tmp_path, monkeypatch):
    """woodchuck with learning_rate = 1e10: the pass after the step needs more than 128
    bits to decide a branch, and every value asked at 128 bits evaluated the whole graph
    again at 128, 256, ... (1,294 evaluations, 5.4 s; past the bound under load). Now each
    precision is evaluated at most once."""
    import derive.evaluate as evaluate_module
    from derive.case import load_case
    from derive.derivation import derive
    from derive.rounding import Format

    text = TEXTS["woodchuck"]
    assert text.count("learning_rate = 0.5 ") == 1
    path = tmp_path / "eta.toml"
    path.write_text(text.replace("learning_rate = 0.5 ", "learning_rate = 1e10 "), encoding="utf-8")
    calls = []
    real = evaluate_module.evaluate
    monkeypatch.setattr(evaluate_module, "evaluate", lambda *a, **k: calls.append(a[3]) or real(*a, **k))
    derivation = derive(load_case(str(path)))
    refs = [ref for ref in derivation.quantities() if ref.phase != "after"]  # e^z after: 2^391144642
    for fmt in (Format(places=3), Format(places=5)):
        derivation.decimals(refs, fmt)
        for ref in refs[:50]:
            derivation.value(ref)
    assert len(calls) == len(set(calls)) and max(calls) > 128, calls[:20]


def test_a_layernorm_eps_past_a_floats_range_is_written_whole(tmp_path):
    """layernorm_eps = 1e400 raised OverflowError in the step's words (float(eps)). Now the
    words give eps whole, and sigma = sqrt(variance + 1e400) = 1e200 (1 + variance/2e400 +
    ...) rounds to 10^200 at 3 places."""
    from derive.rules.norms import eps_text

    assert eps_text(Fraction(10**400)) == "1" + "0" * 400
    assert eps_text(Fraction(1, 10**5)) == "1e-05"
    text = TEXTS["cat-climbed"]
    assert text.count("layernorm_eps = 1e-5 ") == 1
    path = tmp_path / "eps.toml"
    path.write_text(text.replace("layernorm_eps = 1e-5 ", "layernorm_eps = 1e400 "), encoding="utf-8")
    outcome = run_bounded(["run", str(path), "--step", "layernorm", "--width", "2000"], BOUND)
    assert outcome.exit_code == 0, outcome.stderr
    from typer.testing import CliRunner

    from derive.cli import app

    out = CliRunner().invoke(app, ["run", str(path), "--step", "layernorm", "--width", "2000"]).stdout
    assert "eps = " + "1" + "0" * 400 in out
    sigmas = re.findall(r"\b10+\.000\b", out)  # each of the 5 rows, and sigma_5 under the table
    assert sigmas == ["1" + "0" * 200 + ".000"] * 6


def test_an_exact_value_past_a_floats_range_orders_as_infinity():
    """graph.approx (the order of rows on screen) turned an exact 10^400 into a float and
    raised OverflowError (the issue's exact logits above 1.8e308); now +-inf, as a ball gives."""
    from flint import fmpq, fmpz

    from derive.graph import approx

    assert approx(fmpq(fmpz(10) ** 400)) == float("inf")
    assert approx(-fmpq(fmpz(10) ** 400)) == float("-inf")
    assert approx(fmpq(1, fmpz(10) ** 400)) == 0.0
    assert approx(fmpq(3, 4)) == 0.75


def test_a_gelu_of_minus_1e15_gets_no_evaluated_form(tmp_path, monkeypatch):
    """cat-climbed with W_1's row 4, column 6 = -1e15: g_2[6] = GELU(-1e15 u'_2[4] + ...)
    holds 1 + tanh(-7e43) = e^-1.4e44, and SymPy evaluated it to build the form of every
    quantity on the exact path (the JSON took 12 s; before the 2 s budget, a hang). Its
    form is now built unevaluated and never simplified: its 30-figure value is undecided,
    its 3 places 0.000 (|g_2[6]| < 10^-4 by far), and a quantity in which it cancels
    (m_1[3], times W_2's exact zeros) is still the exact 0 it is."""
    import json

    from derive.case import load_case
    from derive.derivation import derive
    from derive.exact import EXACT_PATH_SIZE

    text = TEXTS["cat-climbed"]
    old = "  [0, 0, 0, 1,  0,  0,  0, -1],\n]"
    assert text.count(old) == 1
    path = tmp_path / "w1.toml"
    path.write_text(text.replace(old, "  [0, 0, 0, 1,  0, -1e15, 0, -1],\n]"), encoding="utf-8")
    derivation = derive(load_case(str(path)))
    g26 = next(i for i, n in enumerate(derivation.graph.nodes) if n.meta.label == "g_2[6]")
    form = derivation.forms.closed_form(g26, EXACT_PATH_SIZE)
    assert form.has(sympy.tanh)

    def no_simplify(expr):
        raise AssertionError(f"simplify({str(expr)[:80]}...)")

    with monkeypatch.context() as patch:
        patch.setattr(sympy, "simplify", no_simplify)
        assert derivation.forms._simplified(Ref("before", g26)) is None  # (in this process: what a child would do)
    assert derivation.forms.rational(g26) is None
    from typer.testing import CliRunner

    from derive.cli import app

    outcome = run_bounded(["run", str(path), "--format", "json"], BOUND)
    assert outcome.exit_code == 0, outcome.stderr
    records = {r["label"]: r for r in json.loads(CliRunner().invoke(app, ["run", str(path), "--format", "json"]).stdout)
               if not r["after_step"]}
    assert records["g_2[6]"]["value"] == "undecided" and records["g_2[6]"]["decimal"] == "0.000"
    assert records["m_1[3]"]["exact"] == "0"


def test_a_tiny_value_that_is_not_zero_is_decided_by_the_precision(tmp_path):
    """cat-climbed-llama with rmsnorm_eps = 5e262 (a fuzzed case): every normalised value is
    about 10^-131, and o_3^(1)[1], a weighted sum of value entries of about 10^-132 whose
    weights differ by about 10^-262, is about 10^-395: at 4 significant figures a narrow
    ball around 0. The exact path tried twenty such quantities first, 2 s of SymPy each,
    spent its whole budget on them (11 s on a busy machine: over the fuzz's bound) and left
    a later exact 0, attn_3[2], undecided. Now the early tries are brief (EARLY_SECONDS,
    EARLY_TOTAL), the precision decides the tiny ones, and the exact 0 is still found."""
    text = TEXTS["cat-climbed-llama"]
    old = "rmsnorm_eps = 1e-6 "
    assert text.count(old) == 1
    path = tmp_path / "eps.toml"
    path.write_text(text.replace(old, "rmsnorm_eps = 5e262 "), encoding="utf-8")
    outcome = run_bounded(["run", str(path), "--sig", "4"], BOUND)
    assert outcome.exit_code == 0, outcome.stderr
    from typer.testing import CliRunner

    from derive.cli import app

    printed = CliRunner().invoke(app, ["run", str(path), "--sig", "4"]).stdout
    assert "undecided" not in printed


@pytest.mark.parametrize("value", ["0.5", "0", "3"])
def test_kv_heads_is_checked_without_projections(tmp_path, value):
    """A block with no W_K (``projections = false``, raschka-simplified) and kv_heads = 0.5
    was not checked: the page's head columns divided by int(0.5) = 0, "a bug in derive"
    (the fuzz's finding). kv_heads is a whole number that divides heads, with or
    without projections: exit 2, the field named."""
    text = TEXTS["raschka-simplified"]
    assert "projections = false" in text and "kv_heads" not in text
    path = tmp_path / "kv.toml"
    path.write_text(text.replace("projections = false", f"projections = false\nkv_heads = {value}", 1), encoding="utf-8")
    outcome = run_bounded(["run", str(path)], BOUND)
    assert outcome.exit_code == 2 and "field blocks[1].kv_heads" in outcome.stderr, (outcome.exit_code, outcome.stderr)
