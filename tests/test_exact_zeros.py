"""Values that are exactly zero but computed through square roots.

In the seed 000 case the first row attends only to itself (causal mask), so its attention
output is its own value row v_1 = u_1 = (-0.816, -0.816, 0, 1.633), whose entries sum to
0. Hence h_1 = x_1 + u_1 = (-0.5 + u, -0.5 + u, 0, 1 + u') has mean 0 exactly and
h_1[3] - mu'_1 = 0: u'_1[3], the MLP's hidden units 3 and 7, g, m and y at column 3 are
all exactly 0. A ball can never certify a zero to significant figures, so derive must
find these exactly (their closed forms simplify to 0) instead of printing "undecided".
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from documents import cli

from derive.case import load_case
from derive.derivation import derive
from derive.export_json import records
from derive.rounding import Format

ZERO_LABELS = ["u'_1[3]", "u'_1W_1[3]", "u'_1W_1[7]", "g_1[3]", "g_1[7]", "m_1[3]", "y_1[3]"]


def test_structural_zeros_are_exact_and_decided_in_every_format():
    derivation = derive(load_case("cat-climbed"))
    for fmt in (Format(places=None, sig=3), Format(signed_zero=True), Format(mode="floor")):
        rows = records(derivation, fmt)
        assert not [r["label"] for r in rows if "undecided" in r["decimal"] or "undecided" in r["value"]]
        by_label = {r["label"]: r for r in rows if r["block"] == 1 or r["symbol"] in ("y",)}
        for label in ZERO_LABELS:
            assert by_label[label]["exact"] == "0", label
            assert by_label[label]["decimal"] in ("0.00", "0.000"), (label, by_label[label]["decimal"])


def test_first_causal_row_weight_is_exactly_one():
    derivation = derive(load_case("cat-climbed"))
    rows = records(derivation, Format())
    firsts = [r for r in rows if r["symbol"] == "a" and r["position"] == 1 and r["index"] == 1]
    assert len(firsts) == 2 and all(r["exact"] == "1" for r in firsts)


def test_the_exact_path_stops_at_its_total():
    """Once a derivation's exact path has spent EXACT_PATH_TOTAL of CPU time it gives up on
    every later quantity (undecided), so a case of many ties stays bounded (a fuzzed
    woodchuck with tied rows of W_Q and W_K spent 12 s on eight of them): u'_1[3] is an
    exact 0 the path finds, and finds no more once the total is spent."""
    from derive import exact

    fresh = derive(load_case("cat-climbed"))
    node = next(i for i, n in enumerate(fresh.graph.nodes) if n.meta.label == "u'_1[3]")
    assert fresh.forms.rational(node) == 0
    spent = derive(load_case("cat-climbed"))
    spent.forms._exact_spent = exact.EXACT_PATH_TOTAL
    assert spent.forms.rational(node) is None


def test_a_derivative_and_a_weight_after_the_step_on_a_tie_take_the_exact_path(tmp_path):
    """The softmax case with eight equal logits (a fresh user's natural first example):
    p = 1/8 each, so dL/dz = p - y is 1/8 = 0.125 and, at the target d, -7/8 = -0.875,
    both ties at 2 places; after the step (eta = 1/10) z = 1 - 1/80 = 0.9875 and, at d,
    1 + 7/80 = 1.0875, ties at 3 places. Their balls straddle the tie at every precision,
    and they were printed ``undecided``; the exact path now differentiates the loss's
    closed form and rounds the rationals: half away from zero 0.13, -0.88, 0.988, 1.088;
    half to even 0.12, -0.88, 0.988, 1.088."""
    from derive.rounding import Format
    from derive.steps import Ref

    text = (Path(__file__).resolve().parent.parent / "cases" / "softmax.toml").read_text(encoding="utf-8")
    old = "logits = [1, 2, 3, 4, 1, 2, 3]"
    assert text.count(old) == 1
    path = tmp_path / "ties.toml"
    path.write_text(text.replace(old, "logits = [1, 1, 1, 1, 1, 1, 1, 1]").replace(
        'pieces = ["a", "b", "c", "d", "e", "f", "g"]', 'pieces = ["a", "b", "c", "d", "e", "f", "g", "h"]'),
        encoding="utf-8")
    derivation = derive(load_case(str(path)))
    labels = {n.meta.label: i for i, n in enumerate(derivation.graph.nodes) if n.op is None}
    a, d = labels["z_a"], labels["z_d"]
    refs = [Ref("grad", a), Ref("grad", d), Ref("updated", a), Ref("updated", d)]
    def rounded(fmt):
        texts = derivation.decimals(refs, fmt)
        return [texts[r] for r in refs]

    assert rounded(Format(places=2))[:2] == ["0.13", "-0.88"]
    assert rounded(Format(places=2, mode="half-even"))[:2] == ["0.12", "-0.88"]
    assert rounded(Format(places=3))[2:] == ["0.988", "1.088"]
    assert rounded(Format(places=3, mode="half-even"))[2:] == ["0.988", "1.088"]


def test_one_query_s_attention_weights_have_derivative_exactly_zero(tmp_path):
    """A prompt of one token attends only to itself: its attention weight is 1 whatever
    the score, so dL/dW_Q and dL/dW_K are exactly 0 and every entry of W_Q and W_K stays
    where it was. The seeded random-18 case (tests/random_cases.py) has W_Q_{2,1} = 9/16
    = 0.5625 and W_K_{1,2} = -5/16 = -0.3125, ties at 3 places: after the step they round
    half away from zero to 0.563 and -0.313, half to even to 0.562 and -0.312, and the
    tie's note names the exact value whole. SymPy took 2.5 s of the exact path's 2 s to
    build the form that cancels (the score's e^s over a sum holding the LayerNorm's square
    roots), and both were printed undecided."""
    from random_cases import write_case

    from derive.steps import Ref

    write_case(18, tmp_path)
    path = tmp_path / "random-18.toml"
    derivation = derive(load_case(str(path)))
    labels = {n.meta.label: i for i, n in enumerate(derivation.graph.nodes) if n.op is None}
    q, k = labels["(W_Q)_{2,1}"], labels["(W_K)_{1,2}"]
    assert [Fraction(str(derivation.graph.nodes[i].leaf)) for i in (q, k)] == [Fraction(9, 16), Fraction(-5, 16)]
    refs = [Ref("grad", q), Ref("grad", k), Ref("updated", q), Ref("updated", k)]
    assert [derivation.forms.rationals([r])[r] for r in refs] == [0, 0, Fraction(9, 16), Fraction(-5, 16)]
    texts = derivation.decimals(refs[2:], Format())
    assert [texts[r] for r in refs[2:]] == ["0.563", "-0.313"]
    texts = derivation.decimals(refs[2:], Format(mode="half-even"))
    assert [texts[r] for r in refs[2:]] == ["0.562", "-0.312"]
    page = " ".join(cli("run", str(path)).split())  # (a note wraps at the terminal's width)
    assert "(W_Q)_{2,1} after the step: from the printed inputs, 0.5625 - 1·(0.000) = 0.5625, exactly on a tie" in page
    assert "the exact value 0.5625 rounds to 0.563." in page
    assert "the exact value -0.3125 rounds to -0.313." in page


def test_a_weight_read_by_a_whole_block_with_derivative_exactly_zero(tmp_path):
    """random-16 (two blocks, d_model 8, a one-token prompt, W_K and W_1 trained): every
    entry of W_K, in both blocks, has dL/dW_K exactly 0 (one query's attention weight is
    1), so after the step each is its own value; those on a tie at 3 places (the sixteenths
    with an odd numerator: 0.1875, -0.0625, ...) were undecided. Block 1's W_K is read by
    more than GRADIENT_FORM_NODES quantities, but by few once the weight of 1 has cut it
    off."""
    from random_cases import write_case

    from derive.steps import Ref

    write_case(16, tmp_path)
    derivation = derive(load_case(str(tmp_path / "random-16.toml")))
    leaves = [(i, Fraction(str(n.leaf))) for i, n in enumerate(derivation.graph.nodes) if n.meta.param == "W_K"]
    assert len(leaves) == 2 * 8 * 8
    ties = [(i, q) for i, q in leaves if (q * 10_000).denominator == 1 and (q * 1000).denominator != 1]
    assert len(ties) > 10 and {n.meta.block for n in (derivation.graph.nodes[i] for i, _ in ties)} == {1, 2}
    refs = [Ref("updated", i) for i, _ in ties]
    texts = derivation.decimals(refs, Format())
    for (i, q), ref in zip(ties, refs):  # half away from zero, from the exact sixteenths
        want = (abs(q) * 1000 + Fraction(1, 2)).__floor__() * (1 if q > 0 else -1)
        assert texts[ref] == f"{want / 1000:.3f}", (derivation.graph.nodes[i].meta.label, texts[ref])
