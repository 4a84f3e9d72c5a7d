"""The by-hand readings' short cuts give what the long way gives.

The reader's values of a matrix product's entries, computed as one product
(:meth:`derive.byhand.ByHand._product_values`), are those of the entry-by-entry path
(each Dot node's own sum over the reader's inputs): the same exact fmpq, the same ball
where an input is a ball, and the same None where an input is undefined for the reader.
The entry-by-entry path is the reference here: a ByHand whose ``_kernel_of`` finds no
product computes every entry on its own, as before products were read whole.

A reading whose value lies strictly inside the printed digits' rounding interval is
dropped before its text is made (:meth:`~derive.byhand.ByHand._rounds_as_printed`): the
notes are those found with that test off, under every mode and format.
"""

from __future__ import annotations

import pytest
from flint import fmpq

from derive.byhand import ByHand
from derive.case import load_case
from derive.cells import Printer
from derive.derivation import derive
from derive.graph import Dot, Undefined
from derive.rounding import MINUS, Format
from derive.steps import Ref

FMT = Format(places=3)


def entry_by_entry(byhand: ByHand) -> ByHand:
    """A ByHand like ``byhand`` that computes every product's entries one by one."""
    out = ByHand(byhand.derivation, byhand.fmt, byhand.printed, byhand.carry, byhand.whole)
    out._kernel_of = lambda node_id: None
    return out


def same_value(a, b) -> bool:
    """The same exact rational, or the same ball (midpoint and radius)."""
    if type(a) is fmpq or type(b) is fmpq:
        return type(a) is type(b) and a == b
    return a.mid() == b.mid() and a.rad() == b.rad()


def product_refs(derivation) -> list[Ref]:
    """Every forward quantity that is an entry of a recorded matrix product."""
    kernels = derivation.graph.kernels.values()
    return [Ref("before", i) for kernel in kernels for i in kernel.ids]


def assert_same_readings(fast: ByHand, slow: ByHand, refs) -> int:
    """Every reading of ``refs`` alike on both; returns how many there are."""
    count = 0
    for ref in refs:
        a, b = fast.reading(ref), slow.reading(ref)
        assert (a is None) == (b is None), ref
        if a is not None:
            count += 1
            assert same_value(a.value, b.value), ref
            assert (a.reader, a.correct, a.tie, a.exact_digits, a.calculation) == \
                (b.reader, b.correct, b.tie, b.exact_digits, b.calculation), ref
    return count


@pytest.mark.parametrize("case", ["cat-climbed", "cat-climbed-llama", "encoder-post-norm", "woodchuck"])
def test_product_readings_are_the_entry_by_entry_ones(case):
    derivation = derive(load_case(case))
    fast = Printer(derivation, FMT).byhand
    refs = product_refs(derivation)
    assert refs and all(isinstance(derivation.graph.nodes[r.id].op, Dot) for r in refs)
    assert assert_same_readings(fast, entry_by_entry(fast), refs) > 0
    assert fast._products and all(v is not None for v in fast._products.values())


def test_ball_inputs_give_the_entry_by_entry_balls():
    """With the GELU outputs g not on the page, the reader computes them (GELU_tanh of
    the printed hidden values: balls), and the product of g by W_2 has ball entries: those
    are each node's own sum, the same balls as entry by entry."""
    derivation = derive(load_case("cat-climbed"))
    symbol = {derivation.meta(Ref("before", k.rows[0][0])).symbol for k in derivation.graph.kernels.values()}
    assert "g" in symbol
    printed = {ref: text for ref, text in Printer(derivation, FMT).text.items()
               if derivation.meta(ref).symbol != "g"}
    fast = ByHand(derivation, FMT, printed)
    refs = [r for r in product_refs(derivation) if r in printed]
    assert assert_same_readings(fast, entry_by_entry(fast), refs) > 0
    values = [v for vs in fast._products.values() if vs is not None for v in vs]
    assert any(type(v) is not fmpq for v in values)


def test_an_undefined_input_fails_only_the_entries_that_read_it():
    """An input of one row undefined for the reader: the product is not read whole, and
    only the entries of that row have no reading (as entry by entry)."""
    derivation = derive(load_case("cat-climbed"))
    fast = Printer(derivation, FMT).byhand
    kernel = next(k for k in derivation.graph.kernels.values() if derivation.meta(Ref("before", k.start)).symbol == "q")
    bad = kernel.rows[0][0]
    for byhand in (fast, slow := entry_by_entry(fast)):
        read = byhand._input_value

        def failing(node_id, read=read):
            if node_id == bad:
                raise Undefined("division by zero")
            return read(node_id)

        byhand._input_value = failing
    refs = [Ref("before", i) for i in kernel.ids]
    assert assert_same_readings(fast, slow, refs) > 0
    assert fast.reading(Ref("before", kernel.members[0][0])) is None
    assert fast._products[(fast._prec, kernel.start)] is None


@pytest.mark.parametrize("fmt", [Format(places=3, minus=MINUS), Format(places=2, mode="half-even"),
                                 Format(places=0), Format(places=4, signed_zero=True, minus=MINUS),
                                 Format(places=None, sig=3), Format(places=3, mode="down"),
                                 Format(places=1, mode="ceiling")], ids=str)
def test_the_interval_test_keeps_every_note(fmt):
    derivation = derive(load_case("cat-climbed"))
    fast = Printer(derivation, fmt).byhand
    slow = ByHand(fast.derivation, fmt, fast.printed, fast.carry, fast.whole)
    slow._rounds_as_printed = lambda ref, value: False
    inside = []
    test = fast._rounds_as_printed
    fast._rounds_as_printed = lambda ref, value: inside.append(test(ref, value)) or inside[-1]
    refs = list(fast.printed)
    notes = [r.note() for r in fast.readings(refs)]
    assert notes == [r.note() for r in slow.readings(refs)]
    assert notes
    assert any(inside) if fmt.places is not None and fmt.mode.startswith("half") else not any(inside)
