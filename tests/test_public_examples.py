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
