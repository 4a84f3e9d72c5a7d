"""By-hand notes (issue 3): the cells where a reader who redoes a step from the printed,
rounded inputs gets another last digit, or lands exactly on a tie, are marked and a note
under the table writes out both calculations.

Every expected reader result here is computed in the test, independently of derive:
Fraction arithmetic on the printed decimals typed from the seed page
(/work/shared/seeds/000_c4d6024fc6c69432.txt), mpmath for e^x and sqrt, and the
independent forward pass of tests/hand/hand_reference.py (weights typed from
/work/shared/reference/cat-climbed.md) for the exact values and for the student's chain
of ``--carry printed``. derive's output is only ever the thing under test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from fractions import Fraction as F
from pathlib import Path

import pytest

from derive.case import load_case
from derive.cells import Printer, table_refs
from derive.derivation import derive
from derive.rounding import Format
from derive.steps import Ref

sys.path.insert(0, str(Path(__file__).parent / "hand"))
import hand_reference as R  # noqa: E402

MINUS = "\u2212"
SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹"


# ----------------------------------------------------------------------------- helpers
@pytest.fixture(scope="module")
def derivation():
    """The seed 000 case, derived once for the module."""
    return derive(load_case("cat-climbed"))


@pytest.fixture(scope="module")
def exact():
    """The independent exact forward pass."""
    return R.forward()


def plain(text: str) -> str:
    """derive's text with the ASCII minus, for comparison with the test's own text."""
    return text.replace(MINUS, "-")


def dec(q: F) -> str:
    """A terminating rational as the shortest decimal (``0.4935``, ``0``, ``-2.355553``)."""
    for places in range(0, 13):
        if (q * 10 ** places).denominator == 1:
            return R.text(q, places) if places else str(int(q))
    raise AssertionError(f"{q} does not terminate")


def cut(q: F, places: int) -> str:
    """q cut (toward zero, not rounded) to ``places``: the digits before derive's ellipsis."""
    scaled = abs(q) * 10 ** places
    whole = scaled.numerator // scaled.denominator
    digits = str(whole).rjust(places + 1, "0")
    return ("-" if q < 0 else "") + digits[:-places] + "." + digits[-places:]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """Run the installed ``derive`` with a wide, plain terminal."""
    script = Path(sys.executable).with_name("derive")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "derive"]
    env = dict(os.environ, COLUMNS="250", NO_COLOR="1", TERM="dumb")
    return subprocess.run(command + list(args), capture_output=True, text=True, env=env, timeout=300)


def step(derivation, key: str):
    """The derivation's step called ``key``."""
    return next(s for s in derivation.steps if s.key == key)


def table(derivation, key: str, title: str):
    """The table of step ``key`` whose title starts with ``title``."""
    return next(t for t in step(derivation, key).tables if t.title.startswith(title))


def ref_of(derivation, label: str, head: int | None = None) -> Ref:
    """The forward quantity with this exact label (and head)."""
    found = [i for i, n in enumerate(derivation.graph.nodes)
             if n.meta.label == label and n.meta.symbol and (head is None or n.meta.head == head)]
    assert len(found) == 1, (label, head, found)
    return Ref("before", found[0])


def notes_by_label(printer: Printer, derivation, refs) -> dict[str, str]:
    """The single-cell notes about ``refs``, by the label of their cell."""
    return {derivation.meta(n.refs[0]).label: n.text for n in printer.notes(refs) if len(n.refs) == 1}


def tie_or_other(reader: F, printed_text: str, places: int = 3) -> bool:
    """A reader's exact result is worth a note: a tie, or another last digit."""
    return R.is_tie(reader, places) or R.rounded(reader, places) != R.printed(printed_text)


# ----------------------------------------------------------------------------- the z_roof tie
def z_roof_by_hand() -> tuple[list[F], F]:
    """From the seed's printed f_5 and the reference's ␣roof column of W_U."""
    f5 = R.seed_vector(R.SEED_F5)
    column = R.W_U_COLUMNS[R.PIECES.index("␣roof")]
    products = [a * b for a, b in zip(f5, column)]
    return products, sum(products)


def test_z_roof_reader_is_exactly_on_a_tie(exact):
    products, total = z_roof_by_hand()
    assert [dec(p) for p in products] == ["0.4935", "0.928", "0", "1.069"]
    assert total == F("2.4905") and R.is_tie(total)
    assert cut(exact["z"]["␣roof"], 5) == "2.49067"
    assert R.text(exact["z"]["␣roof"]) == "2.491"


def test_z_roof_tie_note_under_the_logits_table_api(derivation, exact):
    products, total = z_roof_by_hand()
    printer = Printer(derivation, Format(places=3))
    logits = step(derivation, "logits").tables[0]
    notes = notes_by_label(printer, derivation, table_refs(logits))
    note = notes["z_␣roof"]
    assert " + ".join(dec(p) for p in products) + " = " + dec(total) in note
    assert "tie" in note
    assert cut(exact["z"]["␣roof"], 5) + "\u2026" in note
    assert note.endswith(f"rounds to {R.text(exact['z']['␣roof'])}.")


def test_z_roof_tie_note_under_the_logits_table_cli(exact):
    out = run_cli("run", "cat-climbed", "--step", "logits")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    row = next(line for line in lines if "`␣roof`" in line)
    mark = re.search(r"2\.491([" + SUPERSCRIPTS + "]+)", row)
    assert mark, row
    bottom = max(i for i, line in enumerate(lines) if line.startswith("└"))
    notes = [line.strip() for line in lines[bottom + 1:]]
    note = next(n for n in notes if n.startswith(mark.group(1) + " z_␣roof:"))
    products, total = z_roof_by_hand()
    assert " + ".join(dec(p) for p in products) + " = " + dec(total) in note
    assert "exactly on a tie" in note
    assert "2.49067\u2026" in note and "2.491" in note


# ----------------------------------------------------------------------------- the whole logits table
def test_logits_table_notes_are_exactly_the_reader_disagreements(derivation):
    """z from the printed f_5 (dot product with W_U), e^z from the printed z: a note on
    exactly the cells where the reader's exact result is a tie or rounds elsewhere."""
    f5 = R.seed_vector(R.SEED_F5)
    expected = set()
    for token, z, ez, p in R.seed_rows(R.SEED_LOGITS):
        piece = R.token(token)
        reader_z = sum((a * b for a, b in zip(f5, R.W_U_COLUMNS[R.PIECES.index(piece)])), F(0))
        if tie_or_other(reader_z, z):
            expected.add(f"z_{piece}")
        if tie_or_other(R.exp(R.printed(z)), ez):
            expected.add(f"e^z_{piece}")
    assert "z_␣roof" in expected and "e^z_␣roof" in expected
    printer = Printer(derivation, Format(places=3))
    logits = step(derivation, "logits").tables[0]
    assert set(notes_by_label(printer, derivation, table_refs(logits))) >= expected
    noted = set(notes_by_label(printer, derivation, table_refs(logits)))
    # p = e^z / sum e^z: the reader's quotient from the printed e^z
    ez = {R.token(t): R.printed(e) for t, _, e, _ in R.seed_rows(R.SEED_LOGITS)}
    for token, _, _, p in R.seed_rows(R.SEED_LOGITS):
        piece = R.token(token)
        quotient = ez[piece] / sum(ez.values())
        assert (f"p({piece})" in noted) == tie_or_other(quotient, p), piece
    assert noted == expected | {f"p({R.token(t)})" for t, _, e, p in R.seed_rows(R.SEED_LOGITS)
                                if tie_or_other(ez[R.token(t)] / sum(ez.values()), p)}


def test_printed_probabilities_that_add_up_to_one_get_no_sum_note(derivation):
    total = sum(R.printed(p) for *_, p in R.seed_rows(R.SEED_LOGITS))
    assert total == 1
    printer = Printer(derivation, Format(places=3))
    logits = step(derivation, "logits").tables[0]
    assert not [n for n in printer.notes(table_refs(logits)) if len(n.refs) > 1]


# ----------------------------------------------------------------------------- step 6: q.k, s, e^s, a
@pytest.mark.parametrize("head", [1, 2])
def test_head_table_notes_are_exactly_the_reader_disagreements(derivation, head):
    """q.k from the printed q_5 and k_j (dot product), s = q.k / sqrt(2) from the printed
    q.k (scaling), e^s from the printed s, a = e^s / sum e^s from the printed e^s (quotient)."""
    q5 = R.seed_vector(R.SEED_Q5[head])
    rows = R.seed_rows(R.SEED_HEADS[head])
    printed_es = [R.printed(r[4]) for r in rows]
    expected = set()
    for j, (_, k, qk, s, es, a) in enumerate(rows, 1):
        dot = sum((x * y for x, y in zip(q5, R.seed_vector(k))), F(0))
        if tie_or_other(dot, qk):
            expected.add(f"q_5.k_{j}")
        if tie_or_other(R.printed(qk) / R.sqrt(F(2)), s):
            expected.add(f"s_{{5,{j}}}")
        if tie_or_other(R.exp(R.printed(s)), es):
            expected.add(f"e^s_{{5,{j}}}")
        if tie_or_other(printed_es[j - 1] / sum(printed_es), a):
            expected.add(f"a_{{5,{j}}}")
    printer = Printer(derivation, Format(places=3))
    refs = table_refs(table(derivation, "attention", f"Head {head}, row 5"))
    assert set(notes_by_label(printer, derivation, refs)) == expected
    if head == 1:  # the seed's own examples of a product and of e^s
        assert {"q_5.k_1", "s_{5,2}", "s_{5,3}", "e^s_{5,3}"} <= expected


def test_scaling_note_writes_both_calculations(derivation, exact):
    """s_{5,3} of head 1: 3.395 / sqrt(2) = 2.40062... -> 2.401, the exact 2.40036... -> 2.400."""
    reader = R.printed("3.395") / R.sqrt(F(2))
    assert R.text(reader) == "2.401" and R.text(exact["s"][1][4][2]) == "2.400"
    printer = Printer(derivation, Format(places=3))
    note = notes_by_label(printer, derivation, [ref_of(derivation, "s_{5,3}", 1)])["s_{5,3}"]
    assert "3.395 / sqrt(2)" in note
    assert cut(reader, 5) + "\u2026" in note and "2.401" in note
    assert cut(exact["s"][1][4][2], 5) + "\u2026" in note and note.endswith("rounds to 2.400.")


def test_product_note_writes_the_products(derivation, exact):
    """q_5.k_1 of head 1: 1.732*(-0.816) + (-0.577)*1.633 = -1.413312 - 0.942241 = -2.355553."""
    q5, k1 = R.seed_vector(R.SEED_Q5[1]), R.seed_vector("−0.816, 1.633")
    products = [a * b for a, b in zip(q5, k1)]
    total = sum(products)
    printer = Printer(derivation, Format(places=3))
    note = notes_by_label(printer, derivation, [ref_of(derivation, "q_5.k_1", 1)])["q_5.k_1"]
    assert f"{dec(products[0])} - {dec(-products[1])} = {dec(total)}" in note
    assert f"which rounds to {R.text(total)}" in plain(note)
    assert plain(note).endswith(f"rounds to {R.text(exact['qk'][1][4][0])}.")


def test_quotient_reading_from_the_printed_e_s(derivation):
    """a_{5,3} of head 1 = 11.027 / (0.189 + 0.624 + 11.027 + 5.652 + 0.243): the reader's
    exact quotient, its rounding, and no note (it agrees with the printed 0.622)."""
    rows = R.seed_rows(R.SEED_HEADS[1])
    es = [R.printed(r[4]) for r in rows]
    reader = es[2] / sum(es)
    printer = Printer(derivation, Format(places=3))
    reading = printer.byhand.reading(ref_of(derivation, "a_{5,3}", 1))
    assert F(int(reading.value.p), int(reading.value.q)) == reader
    assert "11.027 / (0.189 + 0.624 + 11.027 + 5.652 + 0.243)" in reading.calculation
    assert plain(reading.reader) == R.text(reader) == rows[2][5]
    assert not reading.noteworthy


def test_quotient_disagreement_at_two_places(derivation, exact):
    """At 2 places the printed e^s of row 5 are e.g. 0.62 and 0.19 + 0.62 + 11.03 + 5.65 +
    0.24: the reader's quotients are compared with the exact weights, all computed here."""
    printer = Printer(derivation, Format(places=2))
    found = 0
    for head in (1, 2):
        es = [R.rounded(v, 2) for v in (exact["es"][head][4][j] for j in range(5))]
        refs = table_refs(table(derivation, "attention", f"Head {head}, row 5"))
        noted = notes_by_label(printer, derivation, refs)
        for j in range(5):
            reader = es[j] / sum(es)
            differs = R.rounded(reader, 2) != R.rounded(exact["a"][head][4][j], 2) or R.is_tie(reader, 2)
            label = f"a_{{5,{j + 1}}}"
            assert (label in noted) == differs, (head, label)
            if differs:
                found += 1
                assert f"which rounds to {R.text(reader, 2)}" in plain(noted[label])
                assert plain(noted[label]).endswith(f"rounds to {R.text(exact['a'][head][4][j], 2)}.")
    assert found >= 1


# ----------------------------------------------------------------------------- softmax rows
def test_softmax_row_sum_notes(derivation):
    """Head 1 row 5: 0.011 + 0.035 + 0.622 + 0.319 + 0.014 = 1.001, noted; head 2's printed
    row adds up to 1.000, not noted."""
    sums = {head: sum(R.printed(r[5]) for r in R.seed_rows(R.SEED_HEADS[head])) for head in (1, 2)}
    assert sums == {1: F("1.001"), 2: F(1)}
    printer = Printer(derivation, Format(places=3))
    for head in (1, 2):
        refs = table_refs(table(derivation, "attention", f"Head {head}, row 5"))
        sum_notes = [n for n in printer.notes(refs) if len(n.refs) > 1]
        if sums[head] == 1:
            assert not sum_notes
        else:
            terms = " + ".join(r[5] for r in R.seed_rows(R.SEED_HEADS[head]))
            assert len(sum_notes) == 1 and len(sum_notes[0].refs) == 5
            assert f"{terms} = {dec(sums[head])}" in sum_notes[0].text


def test_softmax_row_sum_note_cli():
    out = run_cli("run", "cat-climbed", "--step", "attention")
    assert out.returncode == 0, out.stderr
    assert "0.011 + 0.035 + 0.622 + 0.319 + 0.014 = 1.001" in out.stdout
    assert "0.016 + 0.882 + 0.067 + 0.015 + 0.020" not in out.stdout


# ----------------------------------------------------------------------------- the SGD step
def test_sgd_update_from_the_printed_gradient(derivation):
    """The row of ␣the after the step, written from the printed gradient:
    -0.5 - 0.1*(-0.011) = -0.4989 -> -0.499, which agrees with the seed; likewise the
    other three components, each weight written as the seed writes it (seed 000, its
    step 8: "0.0 - 0.1 · (0.011)", "1.0 - 0.1 · (-0.028)": as the table of E prints it)."""
    seed_weights = ["-0.5", "0.0", "-0.5", "1.0"]
    before = R.E[1]
    grad = next(R.seed_vector(g) for i, _, g in R.seed_rows(R.SEED_GRADIENTS) if i == "1")
    seed_after = R.seed_vector(R.SEED_THE_UPDATED)
    printer = Printer(derivation, Format(places=3))
    for c in range(4):
        reader = before[c] - F(1, 10) * grad[c]
        leaf = next(i for i, n in enumerate(derivation.graph.nodes) if n.meta.label == f"E_{{2,{c + 1}}}")
        reading = printer.byhand.reading(Ref("updated", leaf))
        assert reading is not None, c
        assert F(seed_weights[c]) == before[c]
        assert f"{seed_weights[c]} - 0.1·({dec(grad[c])}) = {dec(reader)}" in reading.calculation
        assert R.printed(reading.reader) == R.rounded(reader) == seed_after[c]
        assert R.printed(reading.correct) == seed_after[c]
        assert reading.noteworthy == (R.rounded(reader) != seed_after[c] or R.is_tie(reader))
        assert not reading.noteworthy
    assert dec(before[0] - F(1, 10) * grad[0]) == "-0.4989"


# ----------------------------------------------------------------------------- --carry printed
def test_carry_printed_chain_and_drift_api(derivation, exact):
    """The student's chain (every named quantity rounded to 3 places before it is used),
    computed independently, against derive's carried cells; a drift note on exactly the
    cells where the chain leaves the exact value."""
    chain = R.forward(carry=3)
    printer = Printer(derivation, Format(places=3), carry="printed")
    logits = step(derivation, "logits").tables[0]
    drifted = set()
    for ref in table_refs(logits):
        meta = derivation.meta(ref)
        key, piece = {"z": ("z", meta.label[2:]), "exp_z": ("ez", meta.label[4:]),
                      "p": ("p", meta.label[2:-1])}[meta.symbol]
        assert plain(printer.number(ref)) == R.text(chain[key][piece]), meta.label
        if R.text(chain[key][piece]) != R.text(exact[key][piece]):
            drifted.add(meta.label)
    assert "z_␣roof" in drifted  # 2.490 carried, 2.491 exact
    assert R.text(chain["z"]["␣roof"]) == "2.490"
    notes = {derivation.meta(n.refs[0]).label: n.text for n in printer.notes(table_refs(logits)) if len(n.refs) == 1}
    assert set(notes) == drifted
    assert "carried from the printed values, 2.490" in notes["z_␣roof"]
    assert "from the exact values, 2.491" in notes["z_␣roof"]
    # f_5 drifts too: the chain's f_5 is not the printed one
    final = step(derivation, "final")
    f_refs = [r for t in final.tables for r in table_refs(t) if derivation.meta(r).symbol == "f"
              and derivation.meta(r).position == 5]
    assert [plain(printer.number(r)) for r in f_refs] == R.texts(chain["f"])


def test_carry_printed_cli(exact):
    chain = R.forward(carry=3)
    out = run_cli("run", "cat-climbed", "--carry", "printed", "--step", "logits")
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if "`␣roof`" in line)
    assert R.text(chain["z"]["␣roof"]) in row
    assert "carried from the printed values" in out.stdout
    exact_out = run_cli("run", "cat-climbed", "--step", "logits")
    assert "carried from the printed values" not in exact_out.stdout


def test_carry_printed_carries_the_pass_after_the_step_too(derivation, exact, monkeypatch):
    """A user trial: --carry printed carried the pass before the step (L = 0.929) but
    printed the pass after it exact (0.927), with no note, as if the two were alike. The
    student goes on from the weights the SGD table prints (the seed's gradient rows, each
    E_i - 0.1 dL/dE_i rounded to 3 places) through the same chain: L after is 0.926."""
    E_after = [list(row) for row in R.E]
    for row in R.seed_rows(R.SEED_GRADIENTS):
        i, g = int(row[0]), R.seed_vector(row[2])
        moved = [R.E[i][c] - F(1, 10) * g[c] for c in range(4)]
        # (g to 3 places moves the 4th place by at most 0.00005: the row is decided unless that place is a 5)
        assert all((abs(v) * 10 ** 4) % 10 != 5 for v in moved)
        E_after[i] = [R.rounded(v) for v in moved]
    assert E_after[1] == R.seed_vector(R.SEED_THE_UPDATED)  # (the seed's row of ␣the after the step)
    before = R.forward(carry=3)
    monkeypatch.setattr(R, "E", E_after)
    after = R.forward(carry=3)
    monkeypatch.undo()
    printer = Printer(derivation, Format(places=3), carry="printed")
    L, p = derivation.loss, derivation.outputs["p"][R.TARGET]  # (node ids)
    assert (R.text(before["L"]), R.text(after["L"]), R.text(exact["L"])) == ("0.929", "0.926", "0.928")
    assert plain(printer.number(Ref("before", L))) == R.text(before["L"])
    assert plain(printer.number(Ref("after", L))) == R.text(after["L"])  # (exact after the step: 0.927)
    assert plain(printer.number(Ref("after", p))) == R.text(after["p"]["␣roof"])
    notes = [n.text for n in printer.notes([Ref("before", L), Ref("after", L)])]
    assert any(n.startswith("L after the step: carried from the printed values, 0.926 (") and
               n.endswith("from the exact values, 0.927.") for n in notes), notes


# ----------------------------------------------------------------------------- huge magnitudes
def _all_notes(case_path) -> list[str]:
    """Every note derive writes for a case at 3 places, in the plain notation."""
    from derive.cells import step_refs
    d = derive(load_case(str(case_path)))
    printer = Printer(d, Format(places=3))
    return [n.text for s in d.steps for n in printer.notes(step_refs(s))]


def test_e_to_the_1000_from_an_exact_input_has_no_note(tmp_path):
    """The reader's input 1000 is the given logit itself: their e^1000 is the exact one
    (435 digits before the point), so no note; never 'rounds to undecided'."""
    case = tmp_path / "big.toml"
    case.write_text('name = "big"\n[vocab]\npieces = ["0", "1"]\n[input]\nlogits = [0, 1000]\n'
                    '[prompt]\ntarget = "1"\n')
    assert _all_notes(case) == []
    out = run_cli("run", str(case))
    assert out.returncode == 0, out.stderr
    assert "from the printed inputs" not in out.stdout and "undecided" not in out.stdout


def test_a_note_on_a_value_near_1e300_has_every_digit_right(tmp_path):
    """o_2 = a_{2,1} v_1 + a_{2,2} v_2 with v = 10^300 e_i: the reader multiplies the printed
    a_{2,1} = 0.330 by 10^300 (exact); the exact value a_{2,1} 10^300, with
    a_{2,1} = 1 / (1 + e^(1/sqrt 2)) (mpmath, 400 digits), has 300 digits before the point,
    every one of them in the note (a ball at the starting precision gives about 39)."""
    import mpmath
    case = tmp_path / "bigv.toml"
    case.write_text('name = "bigv"\n[input]\nQ = [[1, 0], [0, 1]]\nK = [[1, 0], [1, 1]]\n'
                    'V = [[1e300, 0], [0, 1e300]]\n')
    notes = [n for n in _all_notes(case) if n.startswith("o_2^(1)[1]")]
    assert len(notes) == 1
    with mpmath.workdps(400):
        a21 = 1 / (1 + mpmath.e ** (1 / mpmath.sqrt(2)))
        scaled = a21 * mpmath.mpf(10) ** 305
        cut5 = int(mpmath.floor(scaled))
        near3 = int(mpmath.nint(a21 * mpmath.mpf(10) ** 303))
    printed_a = F(int(mpmath.nint(a21 * 1000)), 1000)
    assert printed_a == F("0.330")
    reader = printed_a * 10 ** 300
    exact_digits = f"{str(cut5)[:-5]}.{str(cut5)[-5:]}\u2026"
    rounded = f"{str(near3)[:-3]}.{str(near3)[-3:]}"
    assert len(str(cut5)[:-5]) == 300
    note = notes[0]
    assert f"which rounds to {reader}.000" in note
    assert f"the exact value {exact_digits} rounds to {rounded}." in note
    assert "undecided" not in note


# ----------------------------------------------------------------------------- sums of given Q, K, V rows
def _half_away(q: F, places: int) -> F:
    """q rounded half away from zero to ``places`` (the test's own rounding)."""
    scaled = abs(q) * 10 ** places
    n = int(scaled + F(1, 2)) if scaled.denominator != 1 else int(scaled)
    return (n if q >= 0 else -n) / F(10 ** places)


@pytest.mark.parametrize("places", [1, 0])
@pytest.mark.parametrize("mask", [None, "window"])
def test_given_qkv_softmax_rows_get_the_sum_note(tmp_path, places, mask):
    """Q = K = 0 over 8 tokens: row i gives each visible key 1/(number visible) (causal:
    i keys; a given window of 3: min(i, 3)); every row whose rounded weights do not add up
    to 1 gets a note, the others none (was: none at all without a prompt)."""
    T = 8
    visible = [[1 if (j <= i and (mask is None or i - j < 3)) else 0 for j in range(T)] for i in range(T)]
    lines = ['name = "qk0"', "[input]", f"Q = {[[0]] * T}", f"K = {[[0]] * T}", f"V = {[[i + 1] for i in range(T)]}"]
    if mask:
        lines += ["[conventions]", f"mask = {visible}"]
    case = tmp_path / "qk0.toml"
    case.write_text("\n".join(lines) + "\n")
    d = derive(load_case(str(case)))
    printer = Printer(d, Format(places=places))
    refs = [r for t in step(d, "attention").tables for r in table_refs(t)]
    found = {n.text.split(" of head")[0] for n in printer.notes(refs) if len(n.refs) > 1}
    expected = set()
    for i, row in enumerate(visible, start=1):
        weights = [F(v, sum(row)) for v in row]
        total = sum(_half_away(w, places) for w in weights)
        if total != 1:
            expected.add(f"a_{{{i},j}}")
    assert expected and found == expected
    if places == 1 and mask is None:
        out = run_cli("run", str(case), "--step", "attention", "--places", "1")
        assert out.returncode == 0, out.stderr
        assert "0.1 + 0.1 + 0.1 + 0.1 + 0.1 + 0.1 + 0.1 + 0.1 = 0.8, not 1" in out.stdout
        assert "0.3 + 0.3 + 0.3 + 0.0 + 0.0 + 0.0 + 0.0 + 0.0 = 0.9, not 1" in out.stdout


# ----------------------------------------------------------------------------- wording of the notes
def test_probability_sum_note_says_probabilities(tmp_path):
    """Logits (0, 0, 0): p = 1/3 each (fractions), printed 0.333 three times, which add up
    to 0.999: the note calls them probabilities (they are not attention weights)."""
    case = tmp_path / "thirds.toml"
    case.write_text('name = "thirds"\n[vocab]\npieces = ["a", "b", "c"]\n[input]\nlogits = [0, 0, 0]\n'
                    '[prompt]\ntarget = "b"\n')
    printed_p = _half_away(F(1, 3), 3)
    total = 3 * printed_p
    assert total != 1
    out = run_cli("run", str(case))
    assert out.returncode == 0, out.stderr
    terms = " + ".join([dec(printed_p)] * 3)
    assert f"the printed probabilities add up to {terms} = {dec(total)}, not 1" in out.stdout
    assert "printed weights" not in out.stdout


def test_loss_of_one_row_is_named_as_its_header(tmp_path):
    """loss = "mean": the table's column is headed l_t, so the plain notes name l_2, l_3, ...
    (were ell_2 under the header l_t)."""
    from derive.name import Name
    from derive.printing import text
    assert text(Name("ell", position=2)) == "l_2"
    source = Path(__file__).parent.parent / "cases" / "cat-climbed.toml"
    case = tmp_path / "mean.toml"
    case.write_text(source.read_text().replace("[conventions]", '[conventions]\nloss = "mean"', 1))
    d = derive(load_case(str(case)))
    assert "l_t" in step(d, "loss").tables[0].columns
    out = run_cli("run", str(case), "--step", "loss", "--places", "2")
    assert out.returncode == 0, out.stderr
    assert "ell" not in out.stdout and re.search(r"\bl_\d: from the printed inputs", out.stdout)


def test_sgd_words_plural_derivatives(tmp_path):
    """Two trained weights: 'they move against their derivatives'; one: 'its derivative'."""
    source = (Path(__file__).parent.parent / "cases" / "cat-climbed.toml").read_text()
    for trained, words in ((' ["E", "W_U"]', "they move against their derivatives,"),
                           (' ["E"]', "it moves against its derivative,")):
        case = tmp_path / "trained.toml"
        case.write_text(source.replace('trained = ["E"]', "trained =" + trained, 1))
        d = derive(load_case(str(case)))
        assert words in step(d, "sgd").words


# ----------------------------------------------------------------------------- remembered work
def _page_refs(derivation) -> list[Ref]:
    return [r for step in derivation.steps for table in step.tables for r in table_refs(table)]


@pytest.mark.parametrize("case, places", [("cat-climbed", 3), ("cat-climbed", 2), ("woodchuck", 3), ("softmax", 3)])
def test_the_screen_keeps_exactly_the_noteworthy_readings(case, places):
    """``reading(ref, noteworthy=True)`` decides from the values alone, before a formula is
    built (forward quantities and weights after the step alike): it is None exactly when
    the full reading is None or not worth a note, and otherwise the same note."""
    derivation = derive(load_case(case))
    byhand = Printer(derivation, Format(places=places)).byhand
    kept = {"before": 0, "updated": 0}
    for ref in dict.fromkeys(_page_refs(derivation)):
        full = byhand.reading(ref)
        screened = byhand.reading(ref, noteworthy=True)
        if full is None or not full.noteworthy:
            assert screened is None, ref
        else:
            assert screened is not None and screened.note() == full.note(), ref
            kept[ref.phase] += 1
    if case != "softmax":  # the seed page has z_roof's tie at 3 places, more at 2
        assert kept["before"] >= 1
    if case != "cat-climbed":  # the seed's SGD step has no note; woodchuck's and softmax's have
        assert kept["updated"] >= 1


def test_notes_do_not_depend_on_what_was_read_before(derivation):
    """The reader's inputs (values and formulas) are remembered per node and precision
    (ByHand._taken, ._inputs): a table's notes are the same read first, last or alone."""
    fmt = Format(places=2)
    tables = [table_refs(t) for step in derivation.steps for t in step.tables]
    forward = Printer(derivation, fmt).byhand
    backward = Printer(derivation, fmt).byhand
    notes_forward = [[r.note() for r in forward.readings(refs)] for refs in tables]
    notes_backward = [[r.note() for r in backward.readings(refs)] for refs in reversed(tables)][::-1]
    assert notes_forward == notes_backward and sum(map(len, notes_forward)) >= 5
    for refs, notes in zip(tables, notes_forward):
        if notes:
            assert [r.note() for r in Printer(derivation, fmt).byhand.readings(refs)] == notes


def test_a_reader_value_is_computed_again_at_a_higher_precision(derivation):
    """An input the reader computes unrounded (an e^s that no table prints, a ball) is
    remembered per precision: asked again at more bits, it is a narrower ball inside the
    first, not the remembered one."""
    from derive.graph import is_exact

    byhand = Printer(derivation, Format()).byhand
    ball = None
    for i, node in enumerate(derivation.graph.nodes):
        if node.op is not None and byhand._shown(i) is None:
            byhand._prec = 256
            value = byhand._input_value(i)
            if not is_exact(value):
                ball = i
                break
    assert ball is not None, "the seed page has unprinted transcendental scratch values"
    coarse, coarse_formula, _ = byhand._input(ball)
    byhand._prec = 1024
    fine, fine_formula, _ = byhand._input(ball)
    assert fine.rad() < coarse.rad() and coarse.contains(fine)
    assert byhand._input_value(ball).rad() == fine.rad()
    byhand._prec = 256
    assert byhand._input(ball)[0].rad() == coarse.rad()


@pytest.mark.parametrize("value, fmt, tie", [
    (F("2.4905"), Format(places=3), True),  # the seed's z_roof
    (F("-2.4905"), Format(places=3), True),
    (F("2.49051"), Format(places=3), False),
    (F("0.0005"), Format(places=3), True),
    (F(1, 3), Format(places=3), False),
    (F(1, 8), Format(places=2), True),  # 0.125
    (F(1, 8), Format(places=2, mode="down"), False),
    (F(125), Format(places=None, sig=2), True),  # to 2 figures: between 120 and 130 (places -1)
    (F(135), Format(places=None, sig=2), True),
    (F(-1135, 1000), Format(places=None, sig=3), True),
    (F(1136, 1000), Format(places=None, sig=3), False),
    (F("0.00125"), Format(places=None, sig=2), True),
])
def test_is_tie(value, fmt, tie):
    """A tie: the digit after the last printed place is exactly 5, nothing after (values
    chosen by hand)."""
    from derive.byhand import is_tie

    assert is_tie(value, fmt) is tie


def test_given_attention_weights_get_no_sum_note():
    """yeh-small gives its attention weights (rows of 0s and 1s adding up to 2 or 3: a
    reader's mixing weights, not a softmax): no note says they are rounded on their own
    and should add up to 1 (a sentence the numbers do not support)."""
    from typer.testing import CliRunner

    from derive.cli import app

    rows = load_case("yeh-small").blocks[0].matrices["attention_weights"]
    assert [sum(row) for row in rows] == [2, 3, 3, 3, 2]  # (the case file's rows: not 1)
    out = CliRunner().invoke(app, ["run", "yeh-small"])
    assert out.exit_code == 0 and "add up to" not in out.stdout


def test_a_note_writes_every_minus_sign_one_way():
    """A note in the plain notation writes the numbers it takes from the table (the
    reader's rounded value, the correct one) with the same ASCII minus as its own
    arithmetic: ``= -0.81699…, which rounds to -0.817; the exact value -0.81648… rounds
    to -0.816`` (the table itself prints −0.817 with the Unicode minus)."""
    derivation = derive(load_case("cat-climbed"))
    printer = Printer(derivation, Format(places=3, minus="\u2212"))  # (derive run's tables)
    notes = [note.text for step in derivation.steps for table in step.tables
             for note in printer.notes(table_refs(table))]
    negative = [n for n in notes if "rounds to -" in n]
    assert negative and not any("\u2212" in n for n in notes)


def test_a_sum_printed_whole_has_no_note_and_is_read_whole(tmp_path):
    """The seed with E[the] = (9/16, -5/16, 1/16, 1) (a trial's sixteenths): x_1 = E[the] +
    P_1 = E[the] is printed whole in the table of X (0.5625: given numbers are printed as
    they are), so there is no last digit to explain, yet each entry got a tie note ("which
    gives 0.563"); and the reader of h_1[1] = x_1[1] + attn_1[1] took x_1[1] as the 0.563
    the residual's table prints, a number the page gives whole as 0.5625 (a trial's case:
    notes that marked digits a reader with the page's own 0.5625 gets right). Now X has no
    note, and the reader starts from 0.5625; a number whose rounding changes nothing
    (x_5[1] = -0.5, printed -0.500 there) is read as that table prints it."""
    text = (Path(__file__).resolve().parent.parent / "cases" / "cat-climbed.toml").read_text(encoding="utf-8")
    old = "  [-0.5, -0.5,  0,    1  ],  # the"
    assert text.count(old) == 1
    path = tmp_path / "sixteenths.toml"
    path.write_text(text.replace(old, "  [0.5625, -0.3125, 0.0625, 1],  # the"), encoding="utf-8")
    derivation = derive(load_case(str(path)))
    printer = Printer(derivation, Format())
    x = [r for r in table_refs(derivation.steps[2].tables[0]) if derivation.meta(r).label.startswith("x_1[")]
    assert [printer.number(r, True) for r in x] == ["0.5625", "-0.3125", "0.0625", "1.0"]
    assert printer.notes(x) == []
    by_label = {derivation.meta(r).label: r for r in printer.text if r.phase == "before"}
    assert printer.byhand.reading(by_label["h_1[1]"]).calculation.startswith("0.5625 + ")
    assert printer.byhand.reading(by_label["h_5[1]"]).calculation.startswith("-0.500 ")
