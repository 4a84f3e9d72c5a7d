"""Runs of entries (derive/graph.py ``Entries``): an elementwise operation named whole is
one record in the graph, read back as the nodes it stands for.

1. Every bundled case: the graph built with runs has, id by id, the nodes the graph built
   entry by entry has (the same operation, parents, leaf value and name), the same first
   readers, and the same values in a pass.
   Its first readers are those found node by node, by definition (_first_readers).
2. A run whose operation cannot be evaluated at one entry (an exact division by 0, a
   ball around 0) raises for that entry: its id and its name, as a node of its own does.
3. A pass made for some nodes only computes a run's wanted entries, and None for the rest.
4. The weights a causal mask sets to 0 are leaves of value 0 named a_{i,j}.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from flint import ctx

from derive.array import Array, leaves
from derive.case import bundled_cases, load_case
from derive.derivation import derive
from derive.evaluate import forward
from derive.graph import Entries, Graph, Meta, NeedPrecision, Operands, Undefined
from derive.steps import Ref

FIELDS = ("symbol", "label", "block", "head", "position", "index", "norm", "param", "token")
CASES = sorted(name for name in bundled_cases() if name != "crane")  # (crane: the slow tests' own)


def _entry_by_entry(monkeypatch) -> None:
    """Build graphs as before runs: every elementwise operation entry by entry."""
    monkeypatch.setattr(Array, "_elementwise", lambda self, op, other=None, expression=None: None)


def _node(graph: Graph, i: int) -> tuple:
    node = graph.nodes[i]
    return (type(node.op).__name__, tuple(node.parents), node.leaf, tuple(getattr(node.meta, f) for f in FIELDS))


@pytest.mark.parametrize("name", CASES)
def test_runs_are_the_nodes_made_one_by_one(name, monkeypatch):
    case = load_case(bundled_cases()[name])
    runs = derive(case)
    with monkeypatch.context() as m:
        _entry_by_entry(m)
        alone = derive(case)
    g, h = runs.graph, alone.graph
    assert len(g.nodes) == len(h.nodes)
    assert [_node(g, i) for i in range(len(g.nodes))] == [_node(h, i) for i in range(len(h.nodes))]
    assert g.first_readers() == h.first_readers()
    assert runs.quantities() == alone.quantities()
    assert runs.decimals(runs.quantities(), runs.display_format) == alone.decimals(alone.quantities(),
                                                                                  alone.display_format)
    if name == "cat-climbed":  # (the comparison is not empty: its softmax's e^s and a are runs)
        assert {g.nodes.items[i].symbol for i in range(len(g.nodes)) if type(g.nodes.items[i]) is Entries} \
            >= {"exp_s", "a"}


def _first_readers(graph: Graph) -> tuple[dict, dict, dict]:
    """Graph.first_readers by its definition, one node at a time in order: the first node
    reading each weight entry one by one; for each weight a product reads as whole
    columns, the first such product's entry; for each weight with an entry read one by
    one, the first reader of any of its entries."""
    starts = {w.start + c: w.start for w in graph.weights for c in range(w.cols)}
    entries = {i for w in graph.weights for i in range(w.start, w.start + w.rows * w.cols)}
    by_id, whole = {}, {}
    for i in range(len(graph.nodes)):
        parents = graph.nodes[i].parents
        if isinstance(parents, Operands) and type(parents.w) is range and parents.w.start in starts:
            whole.setdefault(starts[parents.w.start], i)
            parents = [*parents.x, *parents.b, *parents.one]
        for p in parents:
            if p in entries:
                by_id.setdefault(p, i)
    alone = {}
    for w in graph.weights:
        found = [by_id[p] for p in range(w.start, w.start + w.rows * w.cols) if p in by_id]
        if found:
            alone[w.start] = min(found)
    return by_id, whole, alone


@pytest.mark.parametrize("name", CASES)
def test_first_readers_are_those_of_their_definition(name):
    graph = derive(load_case(bundled_cases()[name])).graph
    assert graph.first_readers() == _first_readers(graph)


def _named(symbol: str):
    return lambda t, c: Meta.entry(symbol, t + 1, c + 1)


def test_a_division_by_an_exact_zero_names_its_entry():
    graph = Graph()
    x = leaves(graph, [[Fraction(1), Fraction(2), Fraction(3)]], _named("x"))
    y = leaves(graph, [[Fraction(1), Fraction(0), Fraction(2)]], _named("y"))
    q = (x / y).named(_named("q"))
    assert type(graph.nodes.items[q.ids()[0][1]]) is Entries
    with pytest.raises(Undefined) as info:
        forward(graph)
    assert info.value.args[1] == q.ids()[0][1]
    assert info.value.args[0] == "q_1[2]: division by zero"  # (the label of row 1, column 2: DESIGN.md's plain names)


def test_a_ball_around_zero_asks_for_precision_at_its_entry():
    graph = Graph()
    x = leaves(graph, [[Fraction(1), Fraction(1)]], _named("x"))
    two = leaves(graph, [[Fraction(2), Fraction(4)]], _named("w"))
    root = two.sqrt().named(_named("r"))  # sqrt(2) (a ball), sqrt(4) = 2 (exact)
    d = (root * root - two).named(_named("d"))  # sqrt(2)^2 - 2: a ball around 0; 2 * 2 - 4 = 0 exactly
    q = (x / d).named(_named("q"))
    with ctx.workprec(128), pytest.raises((NeedPrecision, Undefined)) as info:
        forward(graph)
    if info.type is NeedPrecision:
        assert info.value.node == q.ids()[0][0]
    else:  # (the exact 0 of entry 2 is met first only if entry 1 is decided: it never is)
        pytest.fail(f"entry 2 raised before entry 1: {info.value}")


def test_a_pass_for_some_nodes_computes_a_runs_wanted_entries_only():
    graph = Graph()
    x = leaves(graph, [[Fraction(k) for k in range(1, 6)]], _named("x"))
    e = x.exp().named(_named("e"))
    ids = e.ids()[0]
    wanted = [ids[1], ids[3]]
    with ctx.workprec(64):
        values = forward(graph, needed=graph.ancestor_operations(tuple(wanted))).values
        whole = forward(graph).values
    assert [values[i] is None for i in ids] == [True, False, True, False, True]
    for i in wanted:
        assert values[i].mid() == whole[i].mid() and values[i].rad() == whole[i].rad()
    for k, i in enumerate(ids, 1):  # e^k, a ball around it
        assert abs(float(whole[i].mid()) - math.exp(k)) < 1e-12 * math.exp(k) and whole[i].rad() > 0


def test_masked_attention_weights_are_leaves_of_zero():
    dv = derive(load_case(bundled_cases()["cat-climbed"]))
    graph = dv.graph
    masked = [i for i in range(len(graph.nodes)) if graph.nodes[i].meta.symbol == "a" and graph.nodes[i].op is None]
    T = len(dv.case.tokens)
    heads = dv.case.heads * len(dv.case.blocks)
    assert len(masked) == heads * T * (T - 1) // 2  # (above the diagonal of each head's T x T weights)
    for i in masked:
        node = graph.nodes[i]
        assert node.leaf == 0 and node.parents == () and node.meta.index > node.meta.position
        assert dv.decimal(Ref("before", i), dv.display_format) == "0.000"


def test_a_sum_read_entry_by_entry_still_fuses_into_one_linear_node():
    """x + y becomes a run only when it is named as it is; read further, each entry is the
    Linear expression it always was: (x + y) 2 - x is one Lin node 2x + 2y - x."""
    graph = Graph()
    x = leaves(graph, [[Fraction(1), Fraction(2)]], _named("x"))
    y = leaves(graph, [[Fraction(3), Fraction(5)]], _named("y"))
    z = ((x + y) * 2 - x).named(_named("z"))
    node = graph.nodes[z.ids()[0][1]]
    assert [int(c) for c in node.op.coeffs] == [2, 2, -1]
    assert tuple(node.parents) == (x.ids()[0][1], y.ids()[0][1], x.ids()[0][1])
    s = (x + y).named(_named("s"))  # named as it is: one run of x_c + y_c
    assert type(graph.nodes.items[s.ids()[0][0]]) is Entries
    with ctx.workprec(64):
        values = forward(graph).values
    assert [values[i] for i in z.ids()[0]] == [7, 12] and [values[i] for i in s.ids()[0]] == [4, 7]
