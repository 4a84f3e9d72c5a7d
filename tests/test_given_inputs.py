"""Cases that start late: given logits (a softmax or temperature exercise), given Q, K, V
(an attention exercise) and a given 0/1 mask. Every record is compared with torch
(tests/gpt2_export.py's PartsModel, written independently of derive's rules), and the
printed numbers with values computed here from the definitions."""

from __future__ import annotations

import math

import pytest

from derive.case import load_case
from derive.derivation import derive
from derive.errors import CaseError
from derive.rounding import Format

from gpt2_export import PartsModel, compare, reference_elements

pytest.importorskip("torch")

SOFTMAX = """\
name = "softmax"
[vocab]
pieces = ["a", "b", "c"]
[input]
logits = [2, 1, 0.1]
[prompt]
target = "b"
[conventions]
temperature = {T}
loss_log = "{log}"
"""


def write(tmp_path, text: str, name: str = "case.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def parts_check(case, exported: bool = True) -> dict:
    """Every record of ``case`` against PartsModel, one to one."""
    model = PartsModel(case)
    return compare(derive(case), reference_elements(case, model.forward, model.views()), where=case.name,
                   exported=exported)


@pytest.mark.parametrize("T, log", [("1", "e"), ("0.5", "e"), ("2", "e"), ("1", "2"), ('"1/3"', "2")])
def test_softmax_exercise_against_torch(tmp_path, T, log):
    """z, e^(z/T), the sum, p, L, dL/dz, z after one step and the pass after, against torch."""
    case = load_case(str(write(tmp_path, SOFTMAX.format(T=T, log=log))))
    result = parts_check(case)
    assert result["symbols"]["grad"] == 3 and result["symbols"]["updated"] == 3
    assert result["symbols"]["z"] == 6  # before and after the step


def test_softmax_exercise_numbers(tmp_path):
    """The textbook softmax of (2, 1, 0.1): p = (0.659, 0.242, 0.099); at T = 1/2
    p(b) = e^2 / (e^4 + e^2 + e^0.2); dL/dz = (p - y) / T; computed here with math.exp."""
    for T in (1, 0.5):
        case = load_case(str(write(tmp_path, SOFTMAX.format(T=T, log="e"))))
        d = derive(case)
        e = [math.exp(v / T) for v in (2, 1, 0.1)]
        p = [x / sum(e) for x in e]
        fmt = Format(places=6)
        got = [float(d.decimal(_before(i), fmt)) for i in d.outputs["p"]]
        assert got == pytest.approx(p, abs=1e-6)
        assert float(d.decimal(_before(d.outputs["L"]), fmt)) == pytest.approx(-math.log(p[1]), abs=1e-6)
        grads = [float(d.decimal(_grad(i), fmt)) for i in d.outputs["z"]]
        assert grads == pytest.approx([(p[c] - (c == 1)) / T for c in range(3)], abs=1e-6)
    assert [round(x, 3) for x in (math.exp(2), math.exp(1), math.exp(0.1))] == [7.389, 2.718, 1.105]


def _before(i):
    from derive.steps import Ref
    return Ref("before", i)


def _grad(i):
    from derive.steps import Ref
    return Ref("grad", i)


def test_softmax_exercise_greedy_and_default_pieces(tmp_path):
    """T = 0 without a vocabulary: pieces 1, 2, 3, p one-hot at the largest logit, no loss."""
    text = '[input]\nlogits = [0.5, 3, 3]\n[conventions]\ntemperature = 0\n'
    case = load_case(str(write(tmp_path, text)))
    assert case.pieces == ["1", "2", "3"]
    d = derive(case)
    assert d.loss is None
    assert [str(d.value(_before(i))) for i in d.outputs["p"]] == ["0", "1", "0"]  # a tie: the lowest id
    parts_check(case)


@pytest.mark.parametrize("text, field, message", [
    ('[vocab]\npieces = ["a", "b"]\n[input]\nlogits = [1, 2, 3]\n', "input.logits", "has 3 entries"),
    ('[input]\nlogits = []\n', "input.logits", "is not a list of numbers"),
    ('[input]\nlogits = [1, 2]\n[model]\nd_model = 2\n', "model", "has no model"),
    ('[input]\nlogits = [1, 2]\nX = [[1]]\n', "input.X", "unknown field"),
    ('[input]\nlogits = [1, 2]\n[prompt]\ntext = "a"\n', "prompt.text", "unknown field"),
    ('[input]\nlogits = [1, 2]\n[prompt]\ntarget = "c"\n', "prompt.target", "not in the vocabulary"),
    ('[input]\nlogits = [1, 2]\n[prompt]\ntarget = 1\n[conventions]\nloss = "mean"\n', "conventions.loss",
     "one row"),
])
def test_softmax_exercise_errors(tmp_path, text, field, message):
    """Each mistake is a one-line error naming the file and the field."""
    with pytest.raises(CaseError) as info:
        load_case(str(write(tmp_path, text)))
    assert f"field {field}" in str(info.value) and message in str(info.value)
    assert "\n" not in str(info.value)


QKV = """\
name = "qkv"
[input]
Q = {Q}
K = {K}
V = {V}
heads = {heads}
[conventions]
mask = {mask}
score_scale = {scale}
"""


def random_rows(rng, T: int, n: int) -> str:
    """T rows of n dyadic numbers (exact in binary, so torch's doubles are the case's values)."""
    return "[" + ", ".join("[" + ", ".join(str(rng.randrange(-8, 9) / 4) for _ in range(n)) + "]"
                           for _ in range(T)) + "]"


def random_mask(rng, T: int) -> str:
    """A T x T 0/1 matrix with a 1 in every row."""
    rows = []
    for i in range(T):
        row = [rng.randrange(2) for _ in range(T)]
        row[rng.randrange(T)] = 1
        rows.append("[" + ", ".join(map(str, row)) + "]")
    return "[" + ", ".join(rows) + "]"


@pytest.mark.parametrize("seed", range(10))
def test_given_qkv_against_torch(tmp_path, seed):
    """Q, K, V given (1 to 3 heads, d_v unlike d_k), every mask (a given 0/1 matrix
    included) and score scale: q.k, s, e^s, sums, a and o against torch's softmax and
    F.scaled_dot_product_attention."""
    import random
    rng = random.Random(f"derive-given-qkv-{seed}")
    heads, T = 1 + seed % 3, 2 + seed % 4
    d_k, d_v = 1 + rng.randrange(3), 1 + rng.randrange(3)
    mask = ['"causal"', '"none"', '"causal_after_softmax"', random_mask(rng, T), random_mask(rng, T)][seed % 5]
    scale = ['"d_k"', '"none"', '"d_model"', "2"][seed % 4]
    text = QKV.format(Q=random_rows(rng, T, heads * d_k), K=random_rows(rng, T, heads * d_k),
                      V=random_rows(rng, T, heads * d_v), heads=heads, mask=mask, scale=scale)
    case = load_case(str(write(tmp_path, text)))
    result = parts_check(case)
    assert result["symbols"]["a"] == heads * T * T and result["symbols"]["o"] == T * heads * d_v


def test_given_mask_numbers(tmp_path):
    """A given mask on given Q = K: the weights of row i spread over its visible keys only,
    a_{i,j} = e^{q_i.k_j/sqrt(2)} / sum over visible j, computed here with math.exp."""
    text = QKV.format(Q="[[1, 0], [0, 1], [1, 1]]", K="[[1, 0], [0, 1], [1, 1]]", V="[[1, 2], [3, 4], [5, 6]]",
                      heads=1, mask="[[1, 0, 0], [1, 1, 0], [0, 1, 1]]", scale='"d_k"')
    d = derive(load_case(str(write(tmp_path, text))))
    a = {(m.position, m.index): d.decimal(_before(i), Format(places=9))
         for i, n in enumerate(d.graph.nodes) for m in [n.meta] if m.symbol == "a"}
    e1, e2 = math.exp(1 / math.sqrt(2)), math.exp(2 / math.sqrt(2))
    assert float(a[(3, 2)]) == pytest.approx(e1 / (e1 + e2), abs=1e-9)
    assert a[(3, 1)] == "0.000000000" and a[(1, 1)] == "1.000000000"
    assert float(a[(2, 1)]) == pytest.approx(1 / (1 + e1), abs=1e-9)  # q_2.k_1 = 0, q_2.k_2 = 1


@pytest.mark.parametrize("mask, field, message", [
    ("[[1, 0], [1, 2]]", "conventions.mask row 2, column 2", "is 2"),
    ("[[1, 0], [1, 0.5]]", "conventions.mask row 2, column 2", "is 1/2"),
    ("[[1, 0], [1, 1]]", "conventions.mask", "has 2 rows but the case has T = 3"),
    ("[[1, 0, 0], [1, 1, 0], [0, 0, 0]]", "conventions.mask row 3", "is all 0"),
    ("[[1, 0], [1, 1], [1, 1]]", "conventions.mask row 1", "has 2 columns"),
    ('"diagonal"', "conventions.mask", "unknown value"),
])
def test_mask_errors(tmp_path, mask, field, message):
    """A bad given mask is a one-line error naming the field and the row (exit 2), never NaN."""
    text = QKV.format(Q="[[1], [2], [3]]", K="[[1], [0], [1]]", V="[[1], [2], [3]]", heads=1, mask=mask,
                      scale='"d_k"')
    with pytest.raises(CaseError) as info:
        load_case(str(write(tmp_path, text)))
    assert f"field {field}:" in str(info.value) and message in str(info.value), str(info.value)
    assert "\n" not in str(info.value)


def test_mask_error_exit_code(tmp_path):
    """From the command line: exit 2 and one line."""
    from typer.testing import CliRunner
    from derive.cli import app
    text = QKV.format(Q="[[1], [2]]", K="[[1], [0]]", V="[[1], [2]]", heads=1, mask="[[1, 0], [0, 0]]",
                      scale='"d_k"')
    result = CliRunner().invoke(app, ["run", str(write(tmp_path, text))])
    assert result.exit_code == 2 and "conventions.mask row 2" in result.output


@pytest.mark.parametrize("text, field, message", [
    ('[input]\nQ = [[1, 2]]\nK = [[1]]\nV = [[1]]\n', "input.K", "has 1 columns but input.Q has 2"),
    ('[input]\nQ = [[1, 2, 3]]\nK = [[1, 2, 3, 4]]\nV = [[1]]\n', "input.K", "has 4 columns but input.Q has 3"),
    ('[input]\nQ = [[1], [2]]\nK = [[1], [0]]\nV = [[1], [2]]\n[conventions]\nloss = "mean"\n', "conventions.loss",
     "no vocabulary, so no logits and no loss"),
    ('[input]\nQ = [[1, 2]]\nK = [[1, 2], [3, 4]]\nV = [[1]]\n', "input.K", "has 2 rows"),
    ('[input]\nQ = [[1, 2, 3]]\nK = [[1, 2, 3]]\nV = [[1]]\nheads = 3\n', "input.V", "not divisible by heads"),
    ('[input]\nQ = [[1]]\nV = [[1]]\n', "input.K", "missing field"),
    ('[input]\nQ = [[1]]\nK = [[1]]\nV = [[1]]\n[model]\nd_model = 1\n', "model", "has no vocabulary"),
])
def test_given_qkv_errors(tmp_path, text, field, message):
    """Each mistake in given Q, K, V is a one-line error naming the file and the field."""
    with pytest.raises(CaseError) as info:
        load_case(str(write(tmp_path, text)))
    assert f"field {field}" in str(info.value) and message in str(info.value), str(info.value)


def test_uniform_keys_with_a_given_mask():
    """verify's uniform-keys check on the bundled given-Q/K/V case: with K = 0 every row's
    weight is 1/(its number of 1s in the mask), 0 where the mask has 0 (the window of 2:
    1 for row 1, 1/2 for the others)."""
    from derive.case import load_case as load
    from derive.verify import uniform_keys
    result = uniform_keys(load("attention-qkv"))
    assert result.passed, result.lines
    assert "32 weights" in " ".join(result.lines)


def test_a_case_from_given_vectors_has_a_title(tmp_path):
    """Without a title, a case that starts from X is called after its vectors, not ''."""
    case = load_case(str(write(tmp_path, '[input]\nX = [[1, 0], [0, 1]]\n[model]\nd_model = 2\nheads = 1\n'
                                          '[[blocks]]\nsublayers = ["attention"]\nlayernorm = false\n'
                                          'projections = false\n')))
    assert case.title == "from the given vectors X"


def test_a_temperature_leaves_the_logits_as_they_are():
    """z names the logits f W_U at any temperature, as for given logits (docs/operations.md:
    z = f W_U, p = softmax(z / T)): cat-climbed at T = 2 has its z of T = 1 (the seed's
    z_roof = 2.49067..., 2.491 by hand), e^z is e^(z / 2) and p = softmax(z / 2); a hand
    line of z = f W_U checks correct, and the page's table heads the column e^(z/T)."""
    import math
    from dataclasses import replace
    from fractions import Fraction

    from flint import fmpq

    from derive.cells import Printer
    from derive.check import Checker
    from derive.rounding import Format
    from derive.steps import Ref

    case = load_case("cat-climbed")
    hot = derive(replace(case, conventions=replace(case.conventions, temperature=Fraction(2))))
    one = derive(case)
    z = [hot.value(Ref("before", i)) for i in hot.outputs["z"]]
    for a, b in zip(z, [one.value(Ref("before", i)) for i in one.outputs["z"]]):  # (the same ball, or rational)
        assert type(a) is type(b) and (a == b if isinstance(a, fmpq) else (a.mid(), a.rad()) == (b.mid(), b.rad()))
    roof = case.pieces.index("\u2423roof")
    assert abs(float(z[roof]) - 2.49067) < 1e-5
    floats = [float(v) for v in z]
    total = sum(math.exp(v / 2) for v in floats)
    for c, v in enumerate(floats):
        assert abs(float(hot.value(Ref("before", hot.outputs["exp_z"][c]))) - math.exp(v / 2)) < 1e-12
        assert abs(float(hot.value(Ref("before", hot.outputs["p"][c]))) - math.exp(v / 2) / total) < 1e-12
    [verdict] = Checker(hot).check_text("z_\u2423roof = 2.491")
    assert verdict.status == "correct", verdict.message
    logits = next(s for s in hot.steps if s.key == "logits")
    assert logits.tables[0].columns[2] == "e^(z/T)"
    assert Printer(hot, Format(places=3)).text[Ref("before", hot.outputs["z"][roof])] == "2.491"


def test_under_a_temperature_the_softmax_terms_are_named_e_to_the_z_over_T():
    """softmax-temperature (logits 2, 1, 0.1 for a, b, c at T = 1/2): the softmax's terms
    are e^(z_j/T), e^4 = 54.59815 for a, named so in every notation and in the JSON
    (``exp_z_over_T``), and their sum sum_j e^(z_j/T) = e^4 + e^2 + e^0.2 = 63.20861; a
    hand line of either name checks correct, and e^z_a (e^2, the temperature forgotten)
    is answered with the name to write. At T = 1 the terms stay e^z_j."""
    from derive.check import Checker
    from derive.export_json import records
    from derive.steps import Ref

    hot = derive(load_case("softmax-temperature"))
    terms = [hot.graph.nodes[i].meta for i in hot.outputs["exp_z"]]
    assert [m.label for m in terms] == ["e^(z_a/T)", "e^(z_b/T)", "e^(z_c/T)"]
    assert abs(float(hot.value(Ref("before", hot.outputs["exp_z"][0]))) - math.exp(4)) < 1e-12
    assert hot.graph.nodes[hot.outputs["sum"]].meta.label == "sum_j e^(z_j/T)"
    symbols = {r["label"]: r["symbol"] for r in records(hot, Format(places=3)) if not r["after_step"]}
    assert symbols["e^(z_a/T)"] == "exp_z_over_T" and symbols["sum_j e^(z_j/T)"] == "sum_exp_z_over_T"
    assert round(math.exp(4) + math.exp(2) + math.exp(0.2), 3) == 63.209
    verdicts = Checker(hot).check_text("e^(z_a/T) = 54.598\ne^{z_{a}/T} = 54.598\n"
                                       "\\sum_{j} e^{z_{j}/T} = 63.209\ne^z_a = 7.389\n")
    assert [v.status for v in verdicts] == ["correct", "correct", "correct", "unreadable"], verdicts
    assert "temperature T = 1/2" in verdicts[3].message and "e^(z_a/T)" in verdicts[3].message
    cold = derive(load_case("softmax"))
    assert [cold.graph.nodes[i].meta.label for i in cold.outputs["exp_z"]][0].startswith("e^z_")


def test_forgetting_the_temperature_is_named_as_a_convention():
    """softmax-temperature at T = 1/2: a student who takes the softmax of z itself gets
    p = softmax(2, 1, 0.1) = (0.659, 0.242, 0.099) and L = -ln 0.242 = 1.417 (the case
    file's own table for T = 1); each is named the temperature left out, not just wrong.
    At T = 1 there is no such slip to name."""
    from derive.check import Checker

    hot = derive(load_case("softmax-temperature"))
    e = [math.exp(v) for v in (2, 1, 0.1)]
    assert [round(x / sum(e), 3) for x in e[:2]] == [0.659, 0.242] and round(-math.log(e[1] / sum(e)), 3) == 1.417
    verdicts = Checker(hot).check_text("p(a) = 0.659\np(b) = 0.242\nL = 1.417\np(a) = 0.864\n")
    assert [v.status for v in verdicts] == ["convention", "convention", "convention", "correct"], verdicts
    assert all("the temperature left out" in v.message for v in verdicts[:3])
    # e^(z_a/T) and their sum with the temperature left out: e^2 = 7.389, e^2 + e^1 + e^0.1 = 11.21251 (it was
    # "7.389 is the value of e^(z_b/T)": no quantity of the case at T = 1 has the name e^(z_a/T))
    assert round(sum(e), 3) == 11.213
    slips = Checker(hot).check_text("e^(z_a/T) = 7.389\nsum_j e^(z_j/T) = 11.213\n")
    assert [v.status for v in slips] == ["convention", "convention"], [v.message for v in slips]
    assert all("the temperature left out" in v.message for v in slips)
    [cold] = Checker(derive(load_case("softmax"))).check_text("p(a) = 0.864\n")
    assert cold.status == "wrong" and "temperature" not in cold.message


def test_a_piece_with_a_space_mark_reads_in_e_to_the_z_over_T():
    """cat-climbed at T = 2: derive's own label e^(z_␣roof/T) (the JSON's, the notes') reads
    back in a checked file and in explain, as e^{z_␣roof/T} does: the ␣-piece ran on into
    "/T" ('no quantity is called e^z_␣roof/T', a trial's finding). e^(2.49067/2) = 3.4741."""
    from dataclasses import replace
    from fractions import Fraction

    from derive.check import Checker
    from derive.names import find

    case = load_case("cat-climbed")
    hot = derive(replace(case, conventions=replace(case.conventions, temperature=Fraction(2))))
    assert round(math.exp(2.49067 / 2), 3) == 3.474
    verdicts = Checker(hot).check_text("e^(z_\u2423roof/T) = 3.474\ne^{z_\u2423roof/T} = 3.474\n")
    assert [v.status for v in verdicts] == ["correct", "correct"], [v.message for v in verdicts]
    [ref] = find(hot, "e^(z_\u2423roof/T)")
    assert hot.graph.nodes[ref.id].meta.label == "e^(z_\u2423roof/T)"


def test_a_hand_table_with_an_e_to_the_z_over_T_column_is_read():
    """A student's Markdown table of the logits at T = 2 headed e^(z/T) (or $e^{(z/T)}$, or
    e^{z/T}), without derive's table title: each row's cell is e^(z_piece/T) of its token
    (it was 'e^(z / T) does not name one quantity per row', a trial's finding)."""
    from dataclasses import replace
    from fractions import Fraction

    from derive.check import Checker

    case = load_case("cat-climbed")
    hot = derive(replace(case, conventions=replace(case.conventions, temperature=Fraction(2))))
    rows = "|:--|--:|--:|\n| `\u2423roof` | 2.491 | 3.474 |\n\n"
    text = "".join(f"| token | {z} | {e} |\n" + rows for z, e in (("$z$", "$e^{(z/T)}$"), ("z", "e^(z/T)"),
                                                                     ("z", "e^{z/T}")))
    verdicts = Checker(hot).check_text(text)
    assert [(v.name, v.status) for v in verdicts] == [("z_\u2423roof", "correct"), ("e^(z_\u2423roof/T)", "correct")] * 3, \
        [v.message for v in verdicts]


@pytest.mark.parametrize("log", ["e", "2"])
def test_the_logits_gradient_has_a_by_hand_note_from_the_printed_p(tmp_path, log):
    """dL/dz = (p - y) / T (over ln 2 in bits), the gradient table's own formula, worked
    from the printed p: at T = 1/2, p(c) = e^0.2 / (e^4 + e^2 + e^0.2) prints 0.019, and
    (0.019 - 0) / 0.5 = 0.038 while 2 p(c) = 0.03864... rounds to 0.039 (in bits 0.038 /
    ln 2 = 0.0548... -> 0.055, 2 p(c) / ln 2 = 0.0557... -> 0.056): the page notes it, the
    checker explains a reader's 0.038, and explain works it out. Computed here with math."""
    from derive.cells import Printer
    from derive.check import Checker
    from derive.explain import explain
    from derive.page import render_steps

    e = [math.exp(v / 0.5) for v in (2, 1, 0.1)]
    p_c = e[2] / sum(e)
    bits = math.log(2) if log == "2" else 1
    reader, exact = round(0.019 / 0.5 / bits, 3), 2 * p_c / bits
    assert round(p_c, 3) == 0.019 and reader != round(exact, 3)  # (the disagreement the note explains)
    d = derive(load_case(str(write(tmp_path, SOFTMAX.format(T=0.5, log=log)))))
    printer = Printer(d, Format(places=3))
    step = next(s for s in d.steps if s.key == "gradient")
    page = "\n".join(line.text for line in render_steps(d, [step], printer).parts if hasattr(line, "text"))
    calc = "(0.019 - 0) / 0.5" + (" / ln(2)" if log == "2" else "")
    assert f"dL/dz_c: from the printed inputs, {calc} = " in page
    assert f"rounds to {reader:.3f}; the exact value {str(exact)[:7]}" in page
    verdicts = Checker(d).check_text(f"dL/dz_c = {reader:.3f}\ndL/dz_c = {round(exact, 3):.3f}\n"
                                     f"dL/dz_c = {reader - 0.001:.3f}")
    assert [v.status for v in verdicts] == ["explained", "correct", "wrong"]
    lines = explain(d, printer, _grad(d.outputs["z"][2]))
    assert f"  the reader, from the printed inputs: {calc} = " in "\n".join(lines)
    assert any("the printed p(c) is off by up to 0.0005" in line for line in lines)
