"""The sentences and tables of the training step say what the numbers do (issue 10's false
sentences): with a tied W_U every row of E that moves is in the SGD table; with an untied
W_U the rows left out have derivative exactly 0, as many as the sentence says; the loss in
bits is written -log2 p."""

from __future__ import annotations

import re

from derive.case import load_case
from derive.derivation import derive
from derive.graph import is_zero
from derive.steps import Ref


def moved_rows(d) -> set[int]:
    """The rows of E (0-based ids) with a nonzero derivative, from the evaluation."""
    grads = d.evaluation().grads
    return {d.graph.nodes[i].meta.position - 1 for i in d.graph.param_leaves()
            if d.graph.nodes[i].meta.param == "E" and not is_zero(grads[i])}


def test_tied_every_moving_row_is_in_the_sgd_table():
    """woodchuck (W_U = E^T): every row of E moves, and every one is in the SGD table."""
    d = derive(load_case("woodchuck"))
    rows = {r[0] for r in d.step("sgd").tables[0].rows}
    assert moved_rows(d) == rows == set(range(8))
    assert "every row of E is also a column of W_U" in d.step("gradient").words
    assert "derivative exactly 0" not in d.step("gradient").words


def test_untied_the_rows_left_out_do_not_move():
    """cat-climbed (untied W_U): the sentence's count of rows with derivative 0 is the
    number of rows that do not move, and the table shows exactly the moving ones."""
    d = derive(load_case("cat-climbed"))
    rows = {r[0] for r in d.step("sgd").tables[0].rows}
    assert rows == moved_rows(d)
    said = int(re.search(r"The other (\d+) rows of E have derivative exactly 0", d.step("gradient").words).group(1))
    assert said == 12 - len(rows) == 7


def test_loss_in_bits_says_log2(tmp_path):
    """loss_log = 2: the page writes L = -log2 p(piece), and the value is -ln p / ln 2."""
    import math
    with open(load_case("cat-climbed").path, encoding="utf-8") as file:
        text = file.read()
    path = tmp_path / "bits.toml"
    path.write_text(text.replace("[conventions]\n", '[conventions]\nloss_log = "2"\n', 1), encoding="utf-8")
    d = derive(load_case(str(path)))
    step = d.step("loss")
    assert "-log2 p(" in step.words and "-ln" not in step.words
    assert [str(e.lhs) for e in step.equations][-1] == "L = -log2 p(`␣roof`)"
    p = float(d.value(Ref("before", d.outputs["p"][6])).mid())  # ␣roof, id 6
    L = float(d.value(Ref("before", d.outputs["L"])).mid())
    assert abs(L - (-math.log(p) / math.log(2))) < 1e-12
