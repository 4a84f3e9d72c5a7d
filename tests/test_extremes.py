"""Issue 13, "Extreme magnitudes": logits of 1e10 and -1e6 are well defined (p = 1 - e^-1e10,
L = 1e10 + ln(1 + e^-1e10)); derive prints them instead of stopping at e^z. A value too large
to write out at fixed places (e^(10^10) has 4,342,944,820 digits) is printed in scientific
form with one more significant figure than the places asked for.

The right values are computed here with mpmath at 60 digits (independently of derive's Arb
evaluation and its rounding).
"""

from __future__ import annotations

import json

import mpmath
import pytest

from derive.case import load_case
from derive.derivation import derive
from derive.rounding import Format
from derive.steps import Ref
from test_bad_input import run

mpmath.mp.dps = 60


def logits_case(tmp_path, logits: list, target: str):
    pieces = "abcdefg"[:len(logits)]
    path = tmp_path / "extreme.toml"
    path.write_text(f'name = "extreme"\n[vocab]\npieces = {json.dumps(list(pieces))}\n'
                    f"[input]\nlogits = [{', '.join(logits)}]\n[prompt]\ntarget = \"{target}\"\n", encoding="utf-8")
    return path


def by_label(derivation, phase="before"):
    return {node.meta.label: Ref(phase, i) for i, node in enumerate(derivation.graph.nodes)}


def sci(x: mpmath.mpf, sig: int) -> str:
    """x to ``sig`` significant figures as derive writes e-notation (``1.078e4342944819``)."""
    mantissa, exponent = mpmath.nstr(x, sig, min_fixed=1, max_fixed=0).split("e")
    return f"{mantissa}e{int(exponent)}"


def fixed(x: mpmath.mpf, places: int) -> str:
    """x rounded to ``places`` (half away from zero; x is not near a tie here)."""
    n = int(mpmath.nint(abs(x) * 10 ** places))
    digits = str(n).rjust(places + 1, "0")
    return ("-" if x < 0 else "") + digits[:-places] + "." + digits[-places:]


def test_logits_of_ten_billion(tmp_path):
    derivation = derive(load_case(logits_case(tmp_path, ["1e10", "0"], "b")))
    refs = by_label(derivation)
    three = Format(places=3)
    z = mpmath.mpf(10) ** 10
    assert derivation.decimal(refs["e^z_a"], three) == sci(mpmath.exp(z), 4) == "1.078e4342944819"
    assert derivation.decimal(refs["p(a)"], three) == "1.000"
    assert derivation.decimal(refs["p(b)"], three) == "0.000"
    assert derivation.decimal(refs["p(b)"], Format(places=None, sig=5)) == sci(1 / (1 + mpmath.exp(z)), 5)
    loss = mpmath.log(1 + mpmath.exp(z))  # -ln p(b) = 1e10 + ln(1 + e^-1e10)
    assert derivation.decimal(refs["L"], three) == fixed(loss, 3) == "10000000000.000"
    assert derivation.decimal(refs["L"], Format(places=None, sig=20)) == fixed(loss, 9)


@pytest.mark.parametrize("options", [[], ["--sig", "3"], ["--exact", "--places", "5"], ["--format", "json"]])
def test_logits_of_ten_billion_through_the_cli(tmp_path, options):
    path = logits_case(tmp_path, ["1e10", "0"], "b")
    result = run("run", str(path), *options)
    assert result.exit_code == 0, result.output
    assert "e4342944819" in result.output
    if not options:  # floor(1e10 / ln 10) + 1 digits before the point
        assert f"too large to write out at 3 places ({int(mpmath.floor(mpmath.mpf(10) ** 10 / mpmath.log(10))) + 1:,} " \
            "digits before the point); printed to 4 significant figures" in " ".join(result.output.split())


def test_logits_of_minus_a_million_at_thirty_figures(tmp_path):
    """z = (-1e6, 0, 1): after the step z_a = -1e6 - p(a)/10 with p(a) about e^-1000001;
    at 30 significant figures it is -1000000.00000000000000000000000 (not undecided)."""
    derivation = derive(load_case(logits_case(tmp_path, ["-1e6", "0", "1"], "c")))
    refs = by_label(derivation, "updated")
    thirty = Format(places=None, sig=30, mode="half-even")
    assert derivation.decimal(refs["z_a"], thirty) == "-1000000.00000000000000000000000"
    p_b = mpmath.exp(0) / (mpmath.exp(-10 ** 6) + 1 + mpmath.e)
    assert derivation.decimal(refs["z_b"], thirty) == fixed(-p_b / 10, 31)  # (30 figures after "0.0")


def test_an_undecided_value_is_not_taken_for_scientific_form():
    """'undecided at 10^-3' has an e in it: it is not a value in scientific form (the note of
    a too-large value read its 'exponent' and ended as a bug in derive on random cases)."""
    from derive.cells import Printer
    derivation = derive(load_case("cat-climbed"))
    printer = Printer(derivation, Format(places=3))
    ref = next(iter(printer.text))
    printer.text[ref] = "undecided at 10^-3"
    assert not printer._is_scientific(ref)
    printer.text[ref] = "1.078e4342944819"
    assert printer._is_scientific(ref)
    assert "(4,342,944,820 digits before the point)" in " ".join(map(str, printer._scientific(ref)))
