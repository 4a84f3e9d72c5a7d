"""The registry is the only list of operations: case validation, ``--step``, the checker's
conventions and docs/operations.md all come from it, and a new operation is one module.
Also the array-of-nodes type rules write their forward passes with (derive/array.py)."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from flint import fmpq
from typer.testing import CliRunner

from derive import registry
from derive.array import leaves
from derive.case import load_case
from derive.check import CONVENTIONS
from derive.cli import STEP_KEYS, app
from derive.derivation import derive
from derive.errors import CaseError
from derive.graph import Dot, Graph, Lin, Meta

ROOT = Path(__file__).resolve().parent.parent
SEED = (ROOT / "cases" / "cat-climbed.toml").read_text(encoding="utf-8")


def test_operations_doc_is_generated_from_the_registry():
    """docs/operations.md is what tools/operations_doc.py writes from the registry now."""
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "operations_doc.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    for conv in registry.conventions():
        assert f"`{conv.field}`" in text


def test_every_step_of_every_bundled_case_is_a_registered_step_key():
    """The steps derive builds are named by keys some operation declares, and --step takes
    each of them (``input`` included: cli.STEP_KEYS once forgot it)."""
    for name in ("cat-climbed", "woodchuck", str(ROOT / "tests" / "cases" / "hand_set_head.toml")):
        for step in derive(load_case(name)).steps:
            assert step.key in STEP_KEYS
    result = CliRunner().invoke(app, ["run", str(ROOT / "tests" / "cases" / "hand_set_head.toml"),
                                      "--step", "input"])
    assert result.exit_code == 0, result.output
    assert "The input vectors" in result.output


def test_the_checkers_conventions_are_the_registered_slips():
    """Each slip a convention declares is a convention the checker tries, and nothing else."""
    slips = {phrase for conv in registry.conventions() for phrase in conv.slips.values()}
    assert set(CONVENTIONS) == slips
    assert "LayerNorm variance over n-1 instead of n" in slips  # declared by rules/layernorm.py


def _case(tmp_path, text: str) -> str:
    path = tmp_path / "case.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_an_unknown_norm_or_convention_is_refused_with_the_registered_choices(tmp_path):
    """A block's ln1 must name a registered norm; [conventions] accepts only declared fields."""
    with pytest.raises(CaseError) as err:
        load_case(_case(tmp_path, SEED.replace("[[blocks]]\n", '[[blocks]]\nln1 = "batchnorm"\n', 1)))
    assert "blocks[1].ln1" in str(err.value) and "layernorm" in str(err.value)
    with pytest.raises(CaseError) as err:
        load_case(_case(tmp_path, SEED.replace("[conventions]\n", "[conventions]\nwarmup = 1\n", 1)))
    assert "conventions.warmup" in str(err.value) and "layernorm_variance" in str(err.value)


def test_a_new_norm_is_one_registration(tmp_path):
    """An operation registered from outside derive/ (here: the identity, a norm that leaves
    the row as it is) is at once a valid choice for a slot, and its step is built."""
    from derive.rules.norms import norm_step

    def identity(x, slot, conv, weights):
        out = (x + 0).named(slot.output())  # x + 0 is the same quantity: named copies
        return out, norm_step(slot, "Identity", "The rows pass through.", [], out.ids(), f"{slot.input}_5")

    op = registry.register(registry.Operation("identity_norm", "norm", "Identity", "this test", forward=identity))
    try:
        case = load_case(_case(tmp_path, SEED.replace("[[blocks]]\n", '[[blocks]]\nln1 = "identity_norm"\n', 1)))
        d = derive(case)
        step = d.step("layernorm")
        assert step.title == "Identity before attention"
        x5 = d.step("positions").tables[0].rows[-1][3].refs  # the seed's x_5 = (-0.5, -0.5, -0.5, 1.5)
        u5 = step.tables[0].rows[-1][1:]
        assert [d.value(r) for r in u5] == [d.value(r) for r in x5]
        assert d.value(u5[3]) == fmpq(3, 2)
    finally:
        del registry.OPERATIONS[op.name]


def _leaf_array(graph, values, name):
    return leaves(graph, [[Fraction(v) for v in row] for row in values], lambda t, c: Meta(None, f"{name}{t}{c}"))


def test_array_fuses_an_affine_map_into_one_dot_product_per_entry():
    """x W + b is one Dot node per entry with the bias as b * 1, as a reader writes it;
    the values are the matrix product: (1, 2) [[3, 4], [5, 6]] + (1/2, 0) = (13.5, 16)."""
    graph = Graph()
    x, W, b = _leaf_array(graph, [[1, 2]], "x"), _leaf_array(graph, [[3, 4], [5, 6]], "W"), \
        _leaf_array(graph, [["1/2", 0]], "b")
    y = (x @ W + b).named(lambda t, c: Meta("y", f"y{c}"))
    ids = y.ids()[0]
    assert all(isinstance(graph.nodes[i].op, Dot) and len(graph.nodes[i].parents) == 6 for i in ids)
    from derive.evaluate import forward
    values = forward(graph).values
    assert [values[i] for i in ids] == [fmpq(27, 2), fmpq(16)]


def test_array_mean_broadcasts_a_column_and_fuses_linear_terms():
    """x - mean(x) broadcasts the T x 1 column; (s / n + eps) is one Lin node."""
    graph = Graph()
    x = _leaf_array(graph, [[1, 2, 6], [0, 0, 3]], "x")
    mu = x.mean().named(lambda t, c: Meta("mu", f"mu{t}"))
    centred = x - mu
    var = ((centred * centred).sum() / 3 + Fraction(1, 10)).named(lambda t, c: Meta("v", f"v{t}"))
    node = graph.nodes[var.ids()[0][0]]
    assert isinstance(node.op, Lin) and node.op.const == fmpq(1, 10)
    from derive.evaluate import forward
    values = forward(graph).values
    # row 1: mu = 3, squares 4 + 1 + 9 = 14, 14/3 + 1/10 = 143/30; row 2: mu = 1, 1 + 1 + 4 = 6, 2 + 1/10
    assert [values[i] for i in mu.column()] == [fmpq(3), fmpq(1)]
    assert [values[i] for i in var.column()] == [fmpq(143, 30), fmpq(21, 10)]
    with pytest.raises(ValueError):
        x + _leaf_array(graph, [[1, 2]], "y")  # 2 x 3 and 1 x 2 do not broadcast


def test_every_json_symbol_is_declared_by_an_operation():
    """The JSON ``symbol`` of every record of the bundled cases is one a registered
    operation declares (docs/operations.md lists them with their meanings)."""
    from derive.export_json import records
    from derive.rounding import Format

    declared = registry.symbols()
    for name in ("cat-climbed", "woodchuck", str(ROOT / "tests" / "cases" / "hand_set_head.toml")):
        found = {r["symbol"] for r in records(derive(load_case(name)), Format())}
        assert found <= set(declared), found - set(declared)
    assert {"mu", "sigma", "s", "a", "z", "p", "L", "grad"} <= set(declared)


def test_a_norm_that_divides_by_zero_names_its_own_eps(tmp_path):
    """A row of zeros under RMSNorm with eps = 0 (rms = 0) is a clear error naming the row
    and conventions.rmsnorm_eps, from the message RMSNorm registers; LayerNorm's names
    conventions.layernorm_eps (tests/test_bad_input.py)."""
    from derive.errors import EvaluationError
    text = SEED.replace("[conventions]\n", '[conventions]\nnorm = "rmsnorm"\nrmsnorm_eps = 0\n', 1)
    case = load_case(_case(tmp_path, text))
    row = case.ids[0]
    case.E[row] = [Fraction(0)] * case.d_model  # x_1 = E[the] + P_1 = 0 when P_1 = 0 too
    case.P[0] = [Fraction(0)] * case.d_model
    with pytest.raises(EvaluationError) as err:
        derive(case).evaluation()
    message = str(err.value)
    assert "RMSNorm (ln1) of row 1 of block 1" in message and "conventions.rmsnorm_eps" in message


def test_json_of_one_step_holds_that_steps_quantities():
    """``--format json --step attention`` gives the records the attention step shows (the
    scores and weights of each head), not the whole derivation."""
    import json
    whole = json.loads(CliRunner().invoke(app, ["run", "cat-climbed", "--format", "json"]).output)
    step = json.loads(CliRunner().invoke(app, ["run", "cat-climbed", "--format", "json", "--step", "attention"]).output)
    assert 0 < len(step) < len(whole)
    assert {r["symbol"] for r in step} >= {"s", "a"} and not {r["symbol"] for r in step} & {"L", "grad", "mu"}
    # the seed's last row of head 1: a_{5,3} = 0.622 (shared/seeds/000, step 6)
    assert any(r["label"] == "a_{5,3}" and r["head"] == 1 and r["decimal"] == "0.622" for r in step)


def test_the_engine_and_outputs_know_no_norm_by_name():
    """derive/ never names RMSNorm: the norm is one file of rules/ (issue "One model
    language": grep -rli rmsnorm derive/ finds nothing)."""
    hits = [p.name for p in (ROOT / "derive").rglob("*.py") if "rmsnorm" in p.read_text(encoding="utf-8").lower()]
    assert hits == []
    assert "rmsnorm" in registry.load()  # ... and yet it is registered
