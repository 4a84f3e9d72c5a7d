"""Work that may have to be stopped (derive/isolated.py): CPU budgets, and the forked child
the exact path's SymPy runs in, so that a stop never leaves this process's SymPy
half-updated."""

from __future__ import annotations

import os
import time
from fractions import Fraction

import pytest
import sympy
from sympy.core.parameters import global_parameters

from derive.isolated import OverBudget, budget, isolated_map

pytestmark = pytest.mark.quick


def test_a_budget_stops_its_block_though_inner_budgets_come_and_go():
    """An outer budget of 0.2 s around a loop that opens an inner budget of 0.5 s 200,000
    times a second: each inner one re-armed the outer timer with what setitimer reported
    left, and the kernel's lagging sample of the CPU clock pushed it later each time; the
    loop then never stopped (a 0.25 s budget of the exact path stopped after 0.5 s, and
    this loop ran on for 20 s). It stops now, and the stop is the outer budget's own."""
    start = time.process_time()
    with pytest.raises(OverBudget) as stopped:
        with budget(0.2) as outer:
            while time.process_time() - start < 5:
                with budget(0.5):
                    sum(range(200))
    assert stopped.value.owner is outer
    assert time.process_time() - start < 5


def test_an_inner_budget_lets_an_outer_stop_through():
    """The token a budget gives tells its own stop from an outer one's: code that handles
    its own stop (a closed form given up) does not swallow the stop of the work around it."""
    with pytest.raises(OverBudget) as stopped:
        with budget(0.1) as outer:
            try:
                with budget(1.0) as mine:
                    while True:
                        pass
            except OverBudget as stop:
                assert stop.owner is not mine
                raise
    assert stopped.value.owner is outer


def spin_after_changing_sympy(item):
    """Changes SymPy's global state, then works forever when asked to."""
    global_parameters.evaluate = False
    if item == "spin":
        while True:
            pass
    if item == "die":
        os._exit(3)
    if item == "fail":
        raise ValueError("SymPy cannot")
    return Fraction(item, 3)


def test_work_stopped_in_a_child_leaves_this_process_as_it_was():
    """Each item runs in a forked child: a stopped one (spin), a crashed one (die) and a
    failing one (fail) are outcomes, not exceptions; the items after each run in a new
    child; SymPy's global state in this process is untouched by what the children did."""
    assert global_parameters.evaluate is True
    outcomes = isolated_map(spin_after_changing_sympy, [1, "spin", 2, "die", "fail", 4], 0.2, 10.0)
    assert [(o.done, o.value) for o in outcomes] == [
        (True, Fraction(1, 3)), (False, None), (True, Fraction(2, 3)), (False, None), (True, None),
        (True, Fraction(4, 3))]
    assert 0.15 < outcomes[1].seconds < 1.0
    assert global_parameters.evaluate is True
    assert sympy.Add(1, 2) == 3  # (evaluated here as ever)


def test_the_total_budget_ends_the_items_left():
    """Once the items together have used ``total``, the rest are not done, unrun."""
    outcomes = isolated_map(spin_after_changing_sympy, ["spin", "spin", 1, 2], 0.2, 0.3)
    assert [o.done for o in outcomes] == [False, False, False, False]
    assert sum(o.seconds for o in outcomes) < 0.6
