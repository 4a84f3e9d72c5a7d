"""Public worked examples reproduced from cases that say what the example does
(shared/reference/public-examples.md): every number below is the published one."""

from __future__ import annotations

from derive.case import load_case
from derive.derivation import derive
from derive.export_json import records
from derive.rounding import Format

# Raschka, Build a Large Language Model (From Scratch), ch. 3 (ch03.ipynb), printed at 4 places
RASCHKA_SCORES_ROW_2 = ["0.9544", "1.4950", "1.4754", "0.8434", "0.7070", "1.0865"]
RASCHKA_WEIGHTS = {1: ["0.2098", "0.2006", "0.1981", "0.1242", "0.1220", "0.1452"],
                   2: ["0.1385", "0.2379", "0.2333", "0.1240", "0.1082", "0.1581"]}
RASCHKA_CONTEXT = [["0.4421", "0.5931", "0.5790"], ["0.4419", "0.6515", "0.5683"],
                   ["0.4431", "0.6496", "0.5671"], ["0.4304", "0.6298", "0.5510"],
                   ["0.4671", "0.5910", "0.5266"], ["0.4177", "0.6503", "0.5645"]]


def _table(recs, symbol):
    """{(position, index): decimal} of one symbol's records."""
    return {(r["position"], r["index"]): r["decimal"] for r in recs if r["symbol"] == symbol}


def test_raschka_simplified_self_attention():
    """Scores X X^T (no projections, no scaling, no mask), softmax weights, context = weights X:
    the published scores of row 2, weights of rows 1 and 2, and all six context vectors."""
    case = load_case("raschka-simplified")
    recs = records(derive(case), Format(places=4))
    scores, weights, context = _table(recs, "s"), _table(recs, "a"), _table(recs, "o")
    assert [scores[(2, j)] for j in range(1, 7)] == RASCHKA_SCORES_ROW_2
    for i, row in RASCHKA_WEIGHTS.items():
        assert [weights[(i, j)] for j in range(1, 7)] == row
    assert [[context[(i, c)] for c in range(1, 4)] for i in range(1, 7)] == RASCHKA_CONTEXT
    assert not {"q", "k", "v", "attn", "h", "u"} & {r["symbol"] for r in recs}  # nothing contrived


# AI by Hand (Tom Yeh), Excel workbook Transformer, sheet Small: the published Z, H and out,
# written with tokens as columns; the case has tokens as rows, so each list here is a column.
YEH_Z = [[1, 1, 2, 0], [2, 2, 6, 0], [2, 0, 4, 2], [1, 2, 3, 0], [2, 1, 5, 1]]
YEH_H = [[7, 8, 1], [13, 16, 5], [11, 14, 7], [9, 10, 1], [12, 15, 6]]
YEH_OUT = [[23, 0, 18, 0], [49, 0, 36, 0], [45, 0, 34, 0], [29, 0, 22, 0], [47, 0, 35, 0]]


def test_yeh_given_attention_then_two_relu_layers():
    """Z = X A with the 0/1 weights given, H = ReLU(W1 [Z; 1]), out = ReLU(W2 [H; 1]), no
    residual, no normalisation: every published integer, exactly (printed with 0 places)."""
    recs = records(derive(load_case("yeh-small")), Format(places=0))
    o, g, m = _table(recs, "o"), _table(recs, "g"), _table(recs, "m")
    for table, published in ((o, YEH_Z), (g, YEH_H), (m, YEH_OUT)):
        assert [[table[(t + 1, c + 1)] for c in range(len(row))] for t, row in enumerate(published)] == \
            [[str(v) for v in row] for row in published]
    exact = {(r["symbol"], r["position"], r["index"]): r["exact"] for r in recs}
    assert exact[("m", 2, 1)] == "49" and exact[("m", 2, 2)] == "0"  # exact integers, not rounded
    assert not {"s", "exp_s", "h", "y", "u", "mu"} & {r["symbol"] for r in recs}
