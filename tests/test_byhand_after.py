"""By-hand readings of the pass after the SGD step (a user trial): the seed's step 2b says
"p(␣roof) goes from 0.395 to 0.396 and the loss from 0.928 to 0.927". A reader who writes
``L after = -ln(0.396) = 0.926`` got "wrong" where ``L = -ln(0.395) = 0.929`` is
"explained", and the page had no note under L after, where the reader's -ln(0.396) rounds
to 0.926. The pass after the step is now read as the pass before it is: each quantity from
the printed values of its inputs in that pass, the weights as the SGD step's table prints
them after the step.

Every expected number is computed here, independently of derive: the forward pass of
tests/hand/hand_reference.py (weights typed from /work/shared/reference/cat-climbed.md),
its derivatives dL/dE by central differences at h = 10^-40 on exact fractions (the pass's
transcendental steps are certain to 400 bits, so the derivatives are good to about 10^-80),
the step E - 0.1 dL/dE, and mpmath for -ln of the printed p. The seed's own printed numbers
(p after 0.396, L after 0.927, the gradient rows and the row of ␣the after the step) check
that computation. derive's output is only ever the thing under test.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from fractions import Fraction as F
from pathlib import Path

import mpmath
import pytest

import derive.explain as explain_module
from derive import formula
from derive.case import load_case
from derive.cells import Printer
from derive.derivation import derive
from derive.name import after_step
from derive.rounding import Format
from derive.steps import Ref

sys.path.insert(0, str(Path(__file__).parent / "hand"))
import hand_reference as R  # noqa: E402

MINUS = "\u2212"
ELLIPSIS = "\u2026"
SEED_P_AFTER, SEED_L_AFTER = "0.396", "0.927"  # the seed's step 2b: "from 0.395 to 0.396 ... from 0.928 to 0.927"
ETA = F(1, 10)
H = F(1, 10 ** 40)


def forward_with(E) -> dict:
    """The reference forward pass with the embedding table ``E`` (the reference reads its
    module's E)."""
    saved = R.E
    R.E = E
    try:
        return R.forward()
    finally:
        R.E = saved


def cut(q, places: int = 5) -> str:
    """q cut (not rounded) to ``places``, with the ellipsis, as derive writes an unfinished value."""
    q = F(q)
    scaled = abs(q) * 10 ** places
    digits = str(scaled.numerator // scaled.denominator).rjust(places + 1, "0")
    return ("-" if q < 0 else "") + digits[:-places] + "." + digits[-places:] + ELLIPSIS


def neg_ln(text: str) -> F:
    """-ln of a printed decimal, to 100 digits."""
    with mpmath.workdps(100):
        return F(str(-mpmath.log(mpmath.mpf(text))))


@pytest.fixture(scope="module")
def after() -> dict:
    """The step and the pass after it, computed here: the exact gradient rows of the prompt's
    tokens, E after the step (exact, and as the SGD table prints it at 3 places), the exact
    pass after, and the reader's pass after from the printed E after the step."""
    grads = {}
    for i in dict.fromkeys(R.IDS):
        row = []
        for c in range(4):
            up = [list(r) for r in R.E]
            down = [list(r) for r in R.E]
            up[i][c] += H
            down[i][c] -= H
            row.append((forward_with(up)["L"] - forward_with(down)["L"]) / (2 * H))
        grads[i] = row
    exact_E = [[R.E[i][c] - ETA * grads[i][c] if i in grads else R.E[i][c] for c in range(4)] for i in range(12)]
    printed_E = [[R.rounded(exact_E[i][c]) if i in grads else R.E[i][c] for c in range(4)] for i in range(12)]
    return {"grads": grads, "exact_E": exact_E, "printed_E": printed_E,
            "exact": forward_with(exact_E), "reader": forward_with(printed_E)}


@pytest.fixture(scope="module")
def derivation():
    return derive(load_case("cat-climbed"))


def run_cli(*args: str, input_text: str | None = None) -> subprocess.CompletedProcess:
    """The installed ``derive`` on a wide, plain terminal (no wrapped lines)."""
    script = Path(sys.executable).with_name("derive")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "derive"]
    env = dict(os.environ, COLUMNS="400", NO_COLOR="1", TERM="dumb")
    return subprocess.run(command + list(args), capture_output=True, text=True, env=env, timeout=300,
                          input=input_text)


def node_of(derivation, label: str) -> int:
    return next(i for i, n in enumerate(derivation.graph.nodes) if n.meta.label == label)


# ----------------------------------------------------------------------------- the computation here
def test_the_independent_step_gives_the_seeds_numbers(after):
    """The gradient rows at 3 places are the seed's (step 2b), the row of ␣the after the step
    is the seed's −0.499, −0.001, −0.503, 1.003, and the pass after gives the seed's
    p(␣roof) = 0.396 and L = 0.927: the computation the other tests rely on is the seed's."""
    for i, _, g in R.seed_rows(R.SEED_GRADIENTS):
        assert [R.rounded(x) for x in after["grads"][int(i)]] == R.seed_vector(g), i
    assert after["printed_E"][1] == R.seed_vector(R.SEED_THE_UPDATED)
    assert R.text(after["exact"]["p"]["␣roof"]) == SEED_P_AFTER
    assert R.text(after["exact"]["L"]) == SEED_L_AFTER


# ----------------------------------------------------------------------------- the page
def test_the_page_notes_the_loss_after_the_step(after):
    """From the printed p(␣roof) after the step, 0.396, a reader gets -ln(0.396) = 0.92634…,
    which rounds to 0.926, where the exact loss after the step rounds to 0.927: the page
    says so under L after, as it says it under L before (-ln(0.395) -> 0.929, not 0.928)."""
    reader = neg_ln(SEED_P_AFTER)
    assert R.text(reader) == "0.926" != SEED_L_AFTER
    out = run_cli("run", "cat-climbed", "--step", "after")
    assert out.returncode == 0, out.stderr
    note = (f"L after the step: from the printed inputs, -ln({SEED_P_AFTER}) = {cut(reader)}, which rounds to "
            f"0.926; the exact value {cut(after['exact']['L'])} rounds to {SEED_L_AFTER}.")
    assert note in out.stdout, out.stdout
    assert f"L after = {SEED_L_AFTER}²" in out.stdout
    assert "L: from the printed inputs, -ln(0.395)" in out.stdout  # (the note before the step stays)


@pytest.fixture(params=["whole pass", "one by one"])
def passes(request, monkeypatch):
    """The reader's pass after the step made as one forward pass (ByHand._reader_pass), or,
    as when that pass is undefined or undecided somewhere, quantity by quantity."""
    if request.param == "one by one":
        import derive.byhand

        def undecided(*args, **kwargs):
            raise derive.byhand.NeedPrecision()
        monkeypatch.setattr(derive.byhand, "forward", undecided)
    return request.param


def test_no_note_for_p_after_where_the_reader_agrees(after, passes):
    """p(␣roof) after the step, recomputed from the weights as the page prints them after the
    step (E's moved rows at 3 places, every other weight as given), is the reader's value of
    the independent pass; it rounds to the printed 0.396, so the page has no note for it."""
    derivation = derive(load_case("cat-climbed"))
    p_id = node_of(derivation, "p(␣roof)")
    reading = Printer(derivation, Format(places=3)).byhand.reading(Ref("after", p_id))
    reader = after["reader"]["p"]["␣roof"]
    assert reader != after["exact"]["p"]["␣roof"]  # (the printed weights after the step are rounded)
    assert reading is not None
    assert reading.calculation.endswith(f"= {cut(reader)}") and reading.reader == R.text(reader)
    assert R.text(reader) == SEED_P_AFTER and not reading.noteworthy
    assert reading.name == after_step(derivation.graph.nodes[p_id].meta.name)
    assert all(name.fields.after for name, _ in reading.inputs)


# ----------------------------------------------------------------------------- derive check and explain
def test_check_explains_the_loss_after_from_the_printed_p(after):
    """``L after = -ln(0.396) = 0.926`` (the user's line) and ``L after = 0.926`` are
    explained, as their pass-before twins are; the printed p(␣roof) after is correct, and a
    value no reading gives is still wrong."""
    reader, exact = neg_ln(SEED_P_AFTER), cut(after["exact"]["L"])
    text = (f"L after = -ln({SEED_P_AFTER}) = 0.926\nL after = 0.926\np(␣roof) after = {SEED_P_AFTER}\n"
            "L after = 0.925\nL = -ln(0.395) = 0.929\n")
    out = run_cli("check", "cat-climbed", "-", "--format", "json", input_text=text)
    assert out.returncode == 1, out.stderr  # (line 4 is wrong)
    verdicts = json.loads(out.stdout)
    verdicts = verdicts["verdicts"] if isinstance(verdicts, dict) else verdicts
    statuses = [v["status"] for v in verdicts]
    assert statuses == ["explained", "explained", "correct", "wrong", "explained"], verdicts
    assert verdicts[0]["message"] == (f"L after the step: correct given the rounded inputs: -ln({SEED_P_AFTER}) = "
                                      f"{cut(reader)}, while the exact value {exact} rounds to {SEED_L_AFTER}")
    assert verdicts[3]["message"] == f"L after the step: wrong: the exact value is {exact}, which rounds to 0.927"


def test_explain_the_loss_after_the_step_writes_the_readers_calculation(after):
    """``derive explain cat-climbed 'L after'`` said "no recalculation (derive writes the
    reader's calculation for the pass before the step and for the SGD step)"; it writes it
    for the pass after too, and why the digits differ."""
    out = run_cli("explain", "cat-climbed", "L after")
    assert out.returncode == 0, out.stderr
    lines = [x.strip() for x in out.stdout.splitlines()]
    reader, exact = cut(neg_ln(SEED_P_AFTER)), cut(after["exact"]["L"])
    assert f"the reader, from the printed inputs: -ln({SEED_P_AFTER}) = {reader} -> 0.926" in lines
    p = cut(after["exact"]["p"][R.PIECES[R.TARGET]])  # (the exact p(␣roof) after the step: -ln of it, not -(-L))
    assert f"exact: -ln({p}) = {exact} -> {SEED_L_AFTER}" in lines
    assert any(x.startswith("why: ") and "0.9265" in x for x in lines), lines
    assert "no recalculation" not in out.stdout


def test_a_deep_model_after_the_step_is_read_without_recursion(tmp_path, passes):
    """A reader of p after the step works through the whole pass from the weights after the
    step (the pass after prints p and L alone): 100 blocks are read in the graph's order,
    not by a chain of calls as deep as the model (a RecursionError was a crash of
    ``derive run``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from synthetic import case_text
    path = tmp_path / "deep.toml"
    path.write_text(case_text(d_model=4, heads=1, d_mlp=4, tokens=2, vocab=4, blocks=100))
    d = derive(load_case(str(path)))
    printer = Printer(d, Format(places=3))
    p = next(r for r in printer.text if r.phase == "after" and d.meta(r).symbol == "p")
    reading = printer.byhand.reading(p)
    assert reading is not None and reading.name.fields.after


# ----------------------------------------------------------------------------- a weight the step does not move
def test_an_unprinted_zero_gradient_is_read_as_zero(derivation):
    """E_{4,1} (the row of ␣dog, id 3: 1, −0.5, −0.5, 0 in the seed's E) is read by no token
    of the prompt (ids 0, 2, 4, 5, 1) and W_U is untied, so dL/dE_{4,·} is exactly 0 and no
    table prints it. The reader's SGD step takes that 0 (ByHand._sgd_reading; derive explain
    held this case on its own): the weight itself, not moved. A printed gradient is unchanged."""
    assert 3 not in R.IDS and R.E[3] == [1, F(-1, 2), F(-1, 2), 0]
    byhand = Printer(derivation, Format(places=3)).byhand
    for c in range(4):
        leaf = node_of(derivation, f"E_{{4,{c + 1}}}")
        assert Ref("grad", leaf) not in byhand.printed
        reading = byhand.reading(Ref("updated", leaf))
        assert reading is not None, c
        assert F(int(reading.value.p), int(reading.value.q)) == R.E[3][c]
        assert reading.remark == " (derivative 0)" and not reading.noteworthy
        (name, gradient), = reading.inputs
        assert name.fields.grad and gradient == formula.number(F(0))
    moved = byhand.reading(Ref("updated", node_of(derivation, "E_{2,1}")))
    assert moved.calculation == "-0.5 - 0.1·(-0.011) = -0.4989"


@pytest.mark.parametrize("name, weight", [("E_{4,1} after the step", "1.0"), ("E_{4,3} after the step", "-0.5")])
def test_explain_a_weight_that_does_not_move_says_so(name, weight):
    """The sentence derive explain writes for it is the one it wrote before the reading moved
    into ByHand (the test of test_explain.py, for two entries of the row)."""
    out = run_cli("explain", "cat-climbed", name)
    assert out.returncode == 0, out.stderr
    grad = "dL/d" + name.split(" after")[0]
    assert f"the reader: {grad} is exactly 0 (no table prints it), so the weight does not move: {weight}; " \
        "not printed" in out.stdout


def test_explain_reads_byhand_through_its_public_methods(derivation, after):
    """derive explain wrote digits through ByHand's private _digits/_digits_expr/_value_text;
    they are public (digits, digits_expr, value_text) and give z_␣roof's 2.49067… at 3 places
    (the seed's tie: the exact value just above 2.4905)."""
    assert not re.search(r"byhand\._", inspect.getsource(explain_module))
    byhand = Printer(derivation, Format(places=3)).byhand
    z = derivation.value(Ref("before", node_of(derivation, "z_␣roof")))
    assert byhand.digits(z) == byhand.value_text(z) == cut(R.forward()["z"]["␣roof"]) == "2.49067…"
    assert byhand.digits_expr(z) == formula.Dec("2.49067", cut=True)


def test_a_reading_off_the_pages_path_after_the_step_is_the_same_in_any_order():
    """The reader's pass after the step is made for what the page prints there (p and L
    and what they read: under the causal mask, not a_{2,1}); a reading off that path
    (a_{2,1} of head 1 after the step, as explain asks for it) made after the page's
    readings is the one made first, from the whole pass."""
    def readings(order):
        derivation = derive(load_case("cat-climbed"))
        ids = {"p": node_of(derivation, "p(␣roof)"),
               "a": next(i for i, n in enumerate(derivation.graph.nodes)
                         if n.meta.symbol == "a" and n.meta.head == 1 and (n.meta.position, n.meta.index) == (2, 1))}
        byhand = Printer(derivation, Format(places=3)).byhand
        out = {key: byhand.reading(Ref("after", ids[key])) for key in order}
        return {key: (r.calculation, r.reader) for key, r in out.items()}

    assert readings(["p", "a"]) == readings(["a", "p"])
