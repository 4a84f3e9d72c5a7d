"""``derive explain CASE NAME`` (issue 3): one quantity's definition in the chapter's
notation, its inputs (exact and printed), the reader's calculation from the printed inputs,
the exact one, and why they differ, with the digits that decide it.

Expected numbers are computed here, not read from derive: Fraction arithmetic on the
decimals printed in the seed page, the independent forward pass of
tests/hand/hand_reference.py for the exact values, :mod:`decimal` for the tie rules.
"""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from fractions import Fraction as F
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "hand"))
import hand_reference as R  # noqa: E402

MINUS = "\u2212"
ELLIPSIS = "\u2026"


def run_cli(*args: str, input_text: str | None = None) -> subprocess.CompletedProcess:
    """Run the installed ``derive`` with a wide, plain terminal (no wrapped lines), with
    ``input_text`` on its standard input."""
    script = Path(sys.executable).with_name("derive")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "derive"]
    env = dict(os.environ, COLUMNS="400", NO_COLOR="1", TERM="dumb")
    return subprocess.run(command + list(args), capture_output=True, text=True, env=env, timeout=300,
                          input=input_text)


def explain(*args: str) -> list[str]:
    """The lines ``derive explain cat-climbed ARGS`` prints (it must succeed)."""
    out = run_cli("explain", "cat-climbed", *args)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    return out.stdout.splitlines()


def line(lines: list[str], start: str) -> str:
    """The line that starts (after its indent) with ``start``."""
    found = [x.strip() for x in lines if x.strip().startswith(start)]
    assert found, (start, lines)
    return found[0]


def cut(q: F, places: int = 5) -> str:
    """q cut to ``places`` followed by the ellipsis, as derive writes an unfinished value."""
    scaled = abs(q) * 10 ** places
    digits = str(scaled.numerator // scaled.denominator).rjust(places + 1, "0")
    return ("-" if q < 0 else "") + digits[:-places] + "." + digits[-places:] + ELLIPSIS


def seed(text: str) -> str:
    """A number as derive prints it in a table on screen (the seed's Unicode minus; explain
    writes every number with the ASCII minus, as the page's notes do)."""
    return text.replace("-", MINUS)


@pytest.fixture(scope="module")
def exact():
    """The independent exact forward pass."""
    return R.forward()


# ----------------------------------------------------------------------------- z_roof: a tie
def test_explain_z_roof(exact):
    lines = explain("z_roof")
    assert lines[0].strip() == "z_␣roof"
    definition = line(lines, "definition:")
    assert definition.startswith("definition: z_␣roof = ")
    for c in range(1, 5):
        assert f"f_5[{c}]" in definition and f"(W_U)_{{{c},7}}" in definition
    # the inputs, exact and printed (the printed ones are the seed's f_5)
    f5_printed = [t.strip() for t in R.SEED_F5.split(",")]
    for c, (value, shown) in enumerate(zip(exact["f"], f5_printed), 1):
        row = line(lines, f"f_5[{c}] =")
        assert cut(value) in row and row.endswith(f"printed: {shown.replace(MINUS, '-')}")  # (as the notes write it)
    for c, weight in enumerate(R.W_U_COLUMNS[R.PIECES.index("␣roof")], 1):
        assert line(lines, f"(W_U)_{{{c},7}} =").startswith(f"(W_U)_{{{c},7}} = {weight}")
    # the reader's calculation: the printed f_5 times the ␣roof column, exactly
    f5 = R.seed_vector(R.SEED_F5)
    products = [a * b for a, b in zip(f5, R.W_U_COLUMNS[6])]
    total = sum(products)
    assert total == F("2.4905") and R.is_tie(total)
    reader = line(lines, "the reader, from the printed inputs:")
    assert reader.endswith(f"= 0.4935 + 0.928 + 0 + 1.069 = 2.4905 -> {R.text(total)}")
    # the exact one
    z = exact["z"]["␣roof"]
    assert line(lines, "exact: -0.98650").endswith(f"= {cut(z)} -> {R.text(z)}")
    # why: the tie, the two tie rules, the side of the exact value
    half_even = Decimal("2.4905").quantize(Decimal("0.001"), rounding=ROUND_HALF_EVEN)
    half_away = Decimal("2.4905").quantize(Decimal("0.001"), rounding=ROUND_HALF_UP)
    why = line(lines, "why:")
    assert "2.4905" in why and "tie" in why
    assert f"half-away gives {half_away}" in why and f"half-even {half_even}" in why
    assert f"{cut(z)} lies above the boundary" in why and why.endswith(f"rounds to {R.text(z)}.")


def test_explain_z_roof_half_even_reader_differs(exact):
    """Under half-even the reader's tie 2.4905 gives 2.490 and the exact value still 2.491."""
    lines = explain("z_roof", "--rounding", "half-even")
    half_even = Decimal("2.4905").quantize(Decimal("0.001"), rounding=ROUND_HALF_EVEN)
    assert line(lines, "the reader, from the printed inputs:").endswith(f"2.4905 -> {half_even}")
    assert line(lines, "exact: -0.98650").endswith(f"-> {R.text(exact['z']['␣roof'])}")
    assert "tie" in line(lines, "why:")


# ----------------------------------------------------------------------------- a_{5,3}: a quotient
def test_explain_a53_head_1(exact):
    lines = explain("a_{5,3}", "--head", "1")
    assert lines[0].strip().startswith("a_{5,3}") and "head 1" in lines[0]
    assert line(lines, "definition:") == "definition: a_{5,3} = e^s_{5,3} / (sum_j e^s_{5,j})"
    rows = R.seed_rows(R.SEED_HEADS[1])
    es_printed = [r[4] for r in rows]
    es_exact = exact["es"][1][4]
    row = line(lines, "e^s_{5,3} =")
    assert cut(es_exact[2]) in row and row.endswith(f"printed: {es_printed[2]}")
    row = line(lines, "sum_j e^s_{5,j} =")
    assert cut(sum(es_exact.values())) in row and row.endswith("  not printed")
    # the reader: the printed e^s of the row, exactly
    es = [R.printed(t) for t in es_printed]
    reader = es[2] / sum(es)
    assert reader == F(11027, 17735)
    assert line(lines, "the reader, from the printed inputs:").endswith(
        f"11.027 / (0.189 + 0.624 + 11.027 + 5.652 + 0.243) = {cut(reader)} -> {R.text(reader)}")
    a = exact["a"][1][4][2]
    assert line(lines, "exact: 11.02722").endswith(
        f"{cut(es_exact[2])} / {cut(sum(es_exact.values()))} = {cut(a)} -> {R.text(a)}")
    assert R.text(reader) == R.text(a) == rows[2][5]
    why = line(lines, "why:")
    assert f"the reader's {cut(reader)} and the exact {cut(a)}" in why
    assert "between the rounding boundaries 0.6215 and 0.6225" in why


def test_explain_a53_needs_a_head():
    out = run_cli("explain", "cat-climbed", "a_{5,3}")
    assert out.returncode == 2
    assert "head" in out.stderr and "Traceback" not in out.stderr


def test_explain_head_written_in_the_name(exact):
    lines = explain("a_{5,3}^{(2)}")
    assert "head 2" in lines[0]
    calculation = [x.strip() for x in lines if x.strip().startswith("exact: ") and "->" in x]
    assert calculation[0].endswith(f"-> {R.text(exact['a'][2][4][2])}")


# ----------------------------------------------------------------------------- h_5[1]: a residual sum
def test_explain_residual_component(exact):
    lines = explain("h_5[1]")
    assert lines[0].strip().startswith("h_5[1]")
    assert line(lines, "definition:") == "definition: h_5[1] = x_5[1] + attn_5[1]"
    x51 = R.E[1][0] + R.P[4][0]
    assert line(lines, "x_5[1] =").startswith(f"x_5[1] = {x51}")
    attn = exact["attn"][4][0]
    seed_a5 = R.seed_vector(R.SEED_O5[1])[0]  # a_5[1] as the seed prints it (step 7)
    row = line(lines, "attn_5[1] =")
    assert cut(attn) in row and row.endswith(f"printed: {R.text(seed_a5)}")
    reader = x51 + seed_a5
    assert line(lines, "the reader, from the printed inputs:").endswith(
        f"{R.text(x51)} - {R.text(-seed_a5)} = {R.text(reader)} -> {R.text(reader)}")
    h = exact["h"][4][0]
    assert line(lines, "exact: -0.5").endswith(f"-0.5 - {cut(-attn)} = {cut(h)} -> {R.text(h)}")
    why = line(lines, "why:")
    low, high = R.rounded(h) - F(1, 2000), R.rounded(h) + F(1, 2000)
    assert f"between the rounding boundaries {R.text(low, 4)} and {R.text(high, 4)}" in why


# ----------------------------------------------------------------------------- a disagreement
def test_explain_scaling_that_crosses_a_boundary(exact):
    """s_{5,3} of head 1: the reader's 3.395 / sqrt(2) lands above 2.4005, the exact below."""
    lines = explain("s_{5,3}", "--head", "1")
    reader = R.printed("3.395") / R.sqrt(F(2))
    s = exact["s"][1][4][2]
    assert R.text(reader) != R.text(s)
    assert line(lines, "the reader, from the printed inputs:").endswith(f"3.395 / sqrt(2) = {cut(reader)} -> {R.text(reader)}")
    why = line(lines, "why:")
    boundary = (R.rounded(reader) + R.rounded(s)) / 2
    assert f"boundary {R.text(boundary, 4)}" in why
    assert f"({cut(reader)} -> {R.text(reader)})" in why and f"({cut(s)} -> {R.text(s)})" in why


def test_explain_tells_the_and_the_apart():
    """``the`` and ``␣the`` are two pieces: z_the and z_␣the are two logits."""
    assert explain("z_the")[0].strip() == "z_the"
    assert explain("z_␣the")[0].strip() == "z_␣the"


def test_explain_unknown_name():
    out = run_cli("explain", "cat-climbed", "z_nothing")
    assert out.returncode == 2 and "no quantity is called" in out.stderr and "Traceback" not in out.stderr


# ------------------------------------------------- boundaries in every rounding mode (issue 10)
DECIMAL_MODES = {"half-away": "ROUND_HALF_UP", "half-even": "ROUND_HALF_EVEN", "floor": "ROUND_FLOOR",
                 "ceiling": "ROUND_CEILING", "down": "ROUND_DOWN"}


def _quantize(value: Decimal, mode: str, places: int = 3) -> Decimal:
    import decimal
    return value.quantize(Decimal(1).scaleb(-places), rounding=getattr(decimal, DECIMAL_MODES[mode]))


@pytest.mark.parametrize("mode", list(DECIMAL_MODES))
def test_explain_names_the_boundary_each_rounding_mode_has(mode):
    """Every cell of cat-climbed's forward pass whose reader's digit differs: the boundary
    the sentence names separates the reader's printed value from the correct one under
    ``mode`` as Python's decimal module rounds (just below it one, just above it the
    other), and each printed input's error is a half unit (half modes) or under a unit."""
    import re

    from derive import derive, load_case
    from derive.cells import Printer
    from derive.explain import explain as explain_lines
    from derive.rounding import Format
    from derive.steps import Ref

    derivation = derive(load_case("cat-climbed"))
    printer = Printer(derivation, Format(places=3, mode=mode))
    crossed = 0
    for ref in derivation.quantities():
        node = derivation.graph.nodes[ref.id]
        if ref.phase != "before" or node.op is None or ref not in printer.text:
            continue
        why = next(x for x in explain_lines(derivation, printer, ref) if x.strip().startswith("why:"))
        found = re.search(r"across the rounding boundar(?:y|ies) ([-\d., and]+): .*\((\S+) -> (\S+)\), the exact "
                          r"value on the other \((\S+) -> (\S+)\)", why)
        if not found:
            continue
        crossed += 1
        listed = re.split(r", | and ", found.group(1))
        boundaries = [Decimal(x) for x in listed if x != "..."]
        reader, correct = (Decimal(found.group(i).replace(MINUS, "-")) for i in (3, 5))
        units = abs(reader - correct) / Decimal("0.001")
        assert len(boundaries) == units if "..." not in listed else units > 4, why  # one per unit crossed
        tiny = Decimal("1e-12")
        for boundary in boundaries:  # decimal rounds the two sides of each differently
            below, above = _quantize(boundary - tiny, mode), _quantize(boundary + tiny, mode)
            assert below != above and min(reader, correct) <= below < above <= max(reader, correct), why
        assert ("off by up to 0.0005" if mode.startswith("half") else "off by less than 0.001") in why
    assert crossed >= 3, mode  # the seed case has cells whose reader's digit differs in every mode


@pytest.mark.parametrize("places,value", [(0, "0.5"), (1, "0.25"), (2, "0.125")])
@pytest.mark.parametrize("mode", ["half-away", "half-even"])
def test_explain_an_exact_tie_is_printed_exactly(tmp_path, places, value, mode):
    """A uniform attention row of 2, 4 and 8 tokens (every score 0): a = 1/2, 1/4, 1/8,
    exactly on a rounding boundary at 0, 1 and 2 places: the exact value is written
    whole, said to lie on the boundary itself, and rounded by the mode's tie rule."""
    T = {"0.5": 2, "0.25": 4, "0.125": 8}[value]
    rows = ", ".join(f"[{t}, 1]" for t in range(T))
    case = tmp_path / "uniform.toml"
    case.write_text(f"[input]\nX = [{rows}]\n[model]\nd_model = 2\nheads = 1\n[[blocks]]\n"
                    "sublayers = [\"attention\"]\nlayernorm = false\nresidual = false\n"
                    "W_Q = [[0, 0], [0, 0]]\nW_K = \"I\"\nW_V = \"I\"\nW_O = \"I\"\n")
    out = run_cli("explain", str(case), f"a_{{{T},1}}", "--places", str(places), "--rounding", mode)
    assert out.returncode == 0, out.stderr
    why = " ".join(line(out.stdout.splitlines(), "why:").split())
    expected = _quantize(Decimal(value), mode, places)
    assert f"the exact value is {value} as well, on the boundary itself, and {mode} rounds it to {expected}." in why
    assert "above the boundary" not in why and "below the boundary" not in why


# ------------------------- names read as `derive check` reads them; given weights as printed (a fresh user's trial)
def _the_gradient() -> list[F]:
    """dL/dE for the row of ␣the (id 1, row 2 of E), as the seed's step 2b prints it."""
    row = next(r for r in R.seed_rows(R.SEED_GRADIENTS) if R.token(r[1]) == "␣the")
    return R.seed_vector(row[2])


@pytest.mark.parametrize("written", ["dL/dE_{2,1}", "∂L/∂E_{2,1}"])
def test_explain_a_gradient_named_as_check_reads_it(written):
    """`derive check` judges ``dL/dE_{2,1} = -0.011``; explain said "no quantity is called"."""
    lines = explain(written)
    assert lines[0].strip() == "dL/dE_{2,1}"
    g = _the_gradient()[0]
    assert g == F(-11, 1000)
    assert line(lines, "value:").endswith(f"printed: {R.text(g)}")
    assert run_cli("check", "cat-climbed", "-", input_text=f"{written} = {R.text(g)}").returncode == 0


def test_explain_the_loss_after_the_step():
    """``L after``: the seed's "the loss from 0.928 to 0.927" (step 2b)."""
    for written in ("L after", "L after the step"):
        lines = explain(written)
        assert lines[0].strip() == "L after the step"
        assert line(lines, "definition:") == "definition: L after the step = -ln(p(␣roof) after the step)"
        assert line(lines, "the reader, from the printed inputs: -ln(0.396) =").endswith("-> 0.926")
        assert line(lines, "exact: -ln(0.3955").endswith("-> 0.927")  # (it wrote -(-0.92745…), the unnamed ln p)


def test_the_reader_s_own_unprinted_values_are_said_so():
    """A user trial: "the reader, from the printed inputs" wrote p(␣roof) after the step from
    e^z after the step, which no table prints (the reader works them out from the printed
    weights, unrounded): the line now says so. L after reads the printed p after alone."""
    lines = explain("p(␣roof) after")
    assert line(lines, "the reader,").startswith("the reader, from the printed inputs and the reader's own "
                                                 "unrounded e^z_j after the step (not printed): ")
    assert line(lines, "e^z_␣roof after the step =").endswith("  not printed")
    assert line(explain("L after"), "the reader,").startswith("the reader, from the printed inputs: -ln(0.396) =")


@pytest.mark.parametrize("case", ["cat-climbed", "cat-climbed-llama"])
def test_a_note_says_which_of_its_numbers_no_table_prints(case):
    """At 3 places a note's inputs are printed (``-0.500``, ``0.612``) or the reader's own
    unprinted values, cut (``2.95020…``: e^s_{4,2} of cat-climbed-llama, whose page prints
    no e^s): a note that writes one names them, and only such a note does."""
    out = run_cli("run", case)
    assert out.returncode == 0, out.stderr
    notes = [x for x in out.stdout.splitlines() if ": from the printed inputs" in x]
    assert len(notes) >= 10
    own = 0
    for note in notes:
        said = "and the reader's own unrounded " in note
        inputs = note.split(" (not printed), " if said else ": from the printed inputs, ", 1)[1].split(" = ")[0]
        assert ("\u2026" in inputs) == said, note
        own += said
    assert own >= (0 if case == "cat-climbed" else 2)  # (llama: a_{4,2} and p(␣roof) after the step, at least)


def test_explain_a_weight_after_the_step():
    """E_{2,1} after the step: the seed's -0.5 - 0.1·(-0.011) = -0.499, from the printed gradient."""
    lines = explain("E_{2,1} after the step")
    g = _the_gradient()[0]
    reader = R.E[1][0] - F(1, 10) * g
    assert reader == F(-4989, 10000)
    assert line(lines, "definition:") == "definition: E_{2,1} after the step = E_{2,1} - 0.1·dL/dE_{2,1}"
    assert line(lines, "E_{2,1} =").endswith("printed: " + "-0.5")
    assert line(lines, "the reader, from the printed inputs:") == \
        f"the reader, from the printed inputs: -0.5 - 0.1·({R.text(g)}) = -0.4989 -> {R.text(reader)}"
    assert seed(R.text(reader)) == R.SEED_THE_UPDATED.split(",")[0]


def test_explain_prints_a_given_weight_as_the_chapter_does():
    """E_{1,1} = -1/2 is printed -0.5 in the table E (as the seed's step 2 prints it), never -0.500."""
    assert line(explain("E_{1,1}"), "a given value:") == f"a given value: -1/2  printed: -0.5"
    lines = explain("x_1[1]")
    assert line(lines, "E_{1,1} =") == f"E_{{1,1}} = -1/2  ~ -0.5  printed: -0.5"
    assert all("0.500" not in x for x in lines if x.strip().startswith(("E_", "P_")))


def test_a_weight_whose_derivative_is_zero_does_not_move():
    """E_{4,1} (the row of ␣dog, id 3: 1, −0.5, −0.5, 0 in the seed's E table) is read by
    no token of the prompt, so dL/dE_{4,1} is exactly 0 and no table prints it: explain said
    "no recalculation (the step is undefined from the printed values, or their digits are
    not certain)", a sentence the numbers do not support. It says the weight does not move."""
    text = " ".join(explain("E_{4,1} after the step"))
    assert "dL/dE_{4,1} is exactly 0" in text and "does not move: 1.0" in text and "undefined" not in text


def test_exact_inputs_give_the_exact_value_as_the_table_prints_it():
    """x_5[1] = E_{2,1} + P_{5,1} = −0.5 + 0 (the seed's step 3: x_5 = [−0.5, −0.5, −0.5, 1.5]):
    both inputs are printed whole, so the reader's sum is exact; explain said "-> −0.500"
    where the table prints −0.5, and that the printed inputs were "each off by up to 0.0005"."""
    text = " ".join(explain("x_5[1]"))
    assert "-> -0.5 " in text + " " and "-0.500" not in text and "off by" not in text


def test_why_under_significant_figures_says_no_boundaries_it_does_not_give():
    """Under --sig (no fixed places) the sentence had "both lie, so both round to 0.39",
    its boundaries missing: p(␣roof) = 0.3954... (seed step 10) rounds down to 0.39."""
    text = " ".join(explain("p(\u2423roof)", "--sig", "2", "--rounding", "down"))
    assert "both round to 0.39" in text and "both lie," not in text


@pytest.mark.parametrize("name, definition", [("e^z_roof", "e^z_\u2423roof = exp(z_\u2423roof)"),
                                              ("e^{s_{5,3}}", "e^s_{5,3} = exp(s_{5,3})")])
def test_a_name_that_is_its_own_formula_is_defined_by_its_operation(name, definition):
    """The seed's e^z (step 10) and e^s (step 6) are named by their formula: explain's
    definition read "e^z_␣roof = e^z_␣roof", which says nothing; it writes the operation."""
    text = explain(name, "--head", "1") if name.startswith("e^{s") else explain(name)
    assert f"  definition: {definition}" in text


@pytest.mark.parametrize("name", ["z_dog after", "e^z_roof after", "p(\u2423the) after", "f_5 after", "sum_j e^z_j"])
def test_a_quantity_no_table_prints_is_explained(name):
    """A user trial: derive explain crashed (exit 3, "Invalid literal for Fraction: 'not
    printed'") on quantities no table prints whose reader agrees with the exact digits:
    explain took "not printed" for the printed digits. Each is explained, its digits the
    correctly rounded value."""
    text = " ".join(explain(name))
    assert "why:" in text and "-> not printed" not in text and "not printed: the" not in text


def test_explain_the_loss_lists_the_printed_p_it_reads(exact):
    """A user trial: L = -ln(p(␣roof)) listed its one input as the unnamed step ln p,
    "printed: not printed", while the reader's line reads the printed p(␣roof). An unnamed
    step's inputs are listed instead: p(␣roof), exact and as Step 14 prints it."""
    lines = explain("L")
    p = exact["p"][R.PIECES[R.TARGET]]
    row = line(lines, "p(␣roof) =")
    assert cut(p) in row and row.endswith(f"printed: {R.text(p)}")
    assert not any(l.strip().startswith("ln p") for l in lines)
    assert line(lines, "the reader, from the printed inputs:").startswith(f"the reader, from the printed inputs: "
                                                                          f"-ln({R.text(p)})")


def test_an_exact_result_from_rounded_inputs_is_not_said_to_come_from_exact_ones(tmp_path):
    """One token ("the"): its attention weight a_{1,1} = e^s / e^s is exactly 1, and the
    reader's 0.152 / 0.152 = 1 too, from e^s printed rounded (0.15174... -> 0.152). explain
    said "the inputs the reader takes are exact as printed" (a trial's case): not so."""
    text = (Path(__file__).resolve().parent.parent / "cases" / "cat-climbed.toml").read_text(encoding="utf-8")
    path = tmp_path / "one.toml"
    path.write_text(text.replace('text = "the cat climbed the"', 'text = "the"'), encoding="utf-8")
    out = run_cli("explain", str(path), "a_{1,1}", "--head", "1")
    assert out.returncode == 0, out.stderr
    said = " ".join(out.stdout.split())
    assert "the reader, from the printed inputs: 0.152 / 0.152 = 1 -> 1.000" in said
    assert "why: the reader's calculation from the printed inputs gives the exact value itself, 1, printed 1.000." in said
    assert "exact as printed" not in said


def test_a_weight_the_step_leaves_where_it_was_is_read_where_it_is_printed():
    """The seed trains E alone, so W_U after the step is W_U; explaining z_roof after the
    step listed "(W_U)_{1,7} after the step = -1/2 ... printed: not printed" (a trial's
    case), though step 4 prints W_U: its ␣roof column (-0.5, 1, 0, 1) is read as printed."""
    lines = explain("z_roof after the step")
    listed = [x.strip() for x in lines if x.strip().startswith("(W_U)_{")]
    assert listed == ["(W_U)_{1,7} = -1/2  ~ -0.5  printed: -0.5", "(W_U)_{2,7} = 1  ~ 1  printed: 1.0",
                      "(W_U)_{3,7} = 0  ~ 0  printed: 0.0", "(W_U)_{4,7} = 1  ~ 1  printed: 1.0"], listed


def test_a_tie_both_rules_round_alike_is_not_said_to_depend_on_the_rule(tmp_path):
    """Sixteen equal tokens (tests/test_check_verdicts.py): p = 1/4, so (W_U)_{1,1} after
    the step is 0.5625 - 0.1 (1/4) = 0.5375, on a tie, which half away from zero and half
    to even both round to 0.538 (8 is even). explain said "its last digit depends on the
    tie rule (half-away gives 0.538, half-even 0.538)" (a trial's case)."""
    from test_check_verdicts import EQUAL_TOKENS

    path = tmp_path / "eq16.toml"
    path.write_text(EQUAL_TOKENS, encoding="utf-8")
    out = run_cli("explain", str(path), "(W_U)_{1,1} after the step")
    assert out.returncode == 0, out.stderr
    said = " ".join(out.stdout.split())
    assert "lies exactly on the rounding boundary between 0.537 and 0.538, which half-away and half-even both " \
           "round to 0.538;" in said, said
    assert "depends on the tie rule" not in said


def test_explain_a_masked_weight():
    """a_{2,5} of head 1: key 5 comes after query 2, so the causal mask hides it: its weight
    is exactly 0, never computed, and printed 0.000 in the weights table (not "a given
    value", as a trial read it)."""
    lines = explain("a_{2,5}", "--head", "1")
    assert lines[0].strip() == "a_{2,5} (block 1, head 1)"
    assert line(lines, "masked:") == "masked: exactly 0, never computed (the mask hides key 5 from query 2)  " \
        "printed: 0.000"


def test_explain_a_shared_key_names_its_key_value_head():
    """cat-climbed-llama's two query heads share one key/value head (kv_heads = 1): a key
    entry is key/value head 1's, whichever query head reads it, and says so."""
    out = run_cli("explain", "cat-climbed-llama", "k_1[1]", "--head", "2")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0].strip() == "k_1[1] (block 1, key/value head 1)"


def test_explain_a_masked_score(tmp_path):
    """s_{1,2} of head 1: key 2 comes after query 1, so the causal mask writes -inf there
    before the softmax; the score is never computed and the graph holds no quantity of that
    name ("no quantity is called" before). Only row 5's scores are printed (its table), and
    under the causal mask row 5 sees every key: not printed. Both heads hide it: --head
    chooses, as for a_{1,2}. Under a given mask (a window of 2 keys) row 5's table prints
    −∞ for key 1."""
    lines = explain("s_{1,2}", "--head", "1")
    assert lines[0].strip() == "s_{1,2} (block 1, head 1)"
    assert line(lines, "masked:") == "masked: -\u221e, never computed (the mask hides key 2 from query 1, " \
        "so a_{1,2} is exactly 0)  not printed"
    assert explain("s_{1,2}^{(2)}")[0].strip() == "s_{1,2} (block 1, head 2)"
    both = run_cli("explain", "cat-climbed", "s_{1,2}")
    assert both.returncode == 2 and "several places" in both.stderr and "--head" in both.stderr
    assert "Traceback" not in both.stderr
    assert run_cli("explain", "cat-climbed", "s_{1,1}", "--head", "1").stdout.count("masked") == 0  # (computed)
    text = (Path(__file__).parent.parent / "cases" / "cat-climbed.toml").read_text(encoding="utf-8")
    assert 'mask = "causal"' in text
    window = tmp_path / "window.toml"
    window.write_text(text.replace('mask = "causal"', "mask = [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [0, 1, 1, 0, 0], "
                                                      "[0, 0, 1, 1, 0], [0, 0, 0, 1, 1]]"), encoding="utf-8")
    out = run_cli("explain", str(window), "s_{5,1}", "--head", "2")
    assert out.returncode == 0, out.stderr
    assert line(out.stdout.splitlines(), "masked:").endswith("(the mask hides key 1 from query 5, so a_{5,1} is "
                                                             "exactly 0)  printed: -\u221e")


def test_explain_the_e_to_the_s_of_a_masked_score():
    """e^{s_{1,2}} of head 1 (key 2 after query 1, masked): e^-inf, exactly 0, never computed,
    as derive check judges it and the README says (it was "no quantity is called", a trial's
    finding); a computed e^s is explained as before."""
    lines = explain("e^{s_{1,2}}", "--head", "1")
    assert lines[0].strip() == "e^s_{1,2} (block 1, head 1)"
    assert line(lines, "masked:").startswith("masked: exactly 0, e^-inf, never computed (the mask hides key 2 from "
                                             "query 1")
    assert explain("e^{s_{5,2}}", "--head", "1")[1].strip().startswith("definition: e^s_{5,2} = exp(s_{5,2})")


def test_explain_writes_one_minus_sign():
    """A trial found explain's lines mixing two minus signs (x_5[1] = -1/2 ~ -0.5 printed:
    −0.5; ... = -0.57736… -> −0.577): every number is written with the ASCII minus, as the
    page's notes write them (and as a reader copies them into a calculator)."""
    for name in ("u_5[1]", "x_5[1]", "E_{1,1} after", "dL/dE_{2,1}", "L"):
        assert not any(MINUS in line for line in explain(name)), explain(name)


def test_why_names_the_one_rounded_input():
    """u_5[1] = (x_5[1] - mu_5) / sigma_5 from the seed's printed -0.5, 0.000 and 0.866: x_5[1]
    and mu_5 are printed exactly (-1/2 and 0), sigma_5 = sqrt(0.75 + 1e-5) is rounded, so only
    its error moves the reader's result (explain said the printed inputs were "each off by
    up to 0.0005"); sigma^f_5 reads five rounded inputs, each off by up to 0.0005."""
    assert "the rounding error of the printed sigma_5 (off by up to 0.0005)" in " ".join(explain("u_5[1]"))
    assert "the rounding errors of the printed inputs (each off by up to 0.0005)" in " ".join(explain("sigma^f_5"))
