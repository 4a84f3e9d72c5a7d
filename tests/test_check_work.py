"""Issue "work is bounded": the work of checking a long file grows with what is new in it,
not with its length. A reader's wrong values are traced back to earlier lines by
recomputing the graph from them; the nodes upstream of a quantity are found once per set of
written values (not once per line). bench/check.py measures the times; these tests count the
work.
"""

from __future__ import annotations

import pytest

from derive import check
from derive.case import load_case
from derive.check import Checker
from derive.derivation import derive


@pytest.fixture(scope="module")
def derivation():
    return derive(load_case("cat-climbed"))


def counting(monkeypatch, module, name: str) -> list:
    calls = []
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)
    monkeypatch.setattr(module, name, counted)
    return calls


def test_the_nodes_upstream_are_found_once_per_set_of_written_values(derivation, monkeypatch):
    # sigma_5 wrong, then 300 different wrong values of z_roof (each traced back to line 1)
    lines = ["sigma_5 = 0.900"] + [f"z_roof = {2 + k / 1000:.3f}" for k in range(300)]
    calls = counting(monkeypatch, check, "_ancestors")
    verdicts = Checker(derivation).check_text("\n".join(lines))
    assert len(verdicts) == 301 and verdicts[0].status == "wrong"
    # at most: sigma_5 and z_roof, each before and after its first written value
    assert len(calls) <= 4, len(calls)


def test_an_equation_repeated_in_the_same_context_is_read_once(derivation, monkeypatch):
    from derive import handfile

    calls = counting(monkeypatch, handfile, "_equation_and_parts")
    text = "Head 2: a_{5,2} = 0.882\n" + "a_{5,2} = 0.882\n" * 200 + "Head 1\n" + "a_{5,2} = 0.882\n" * 2
    verdicts = Checker(derivation).check_text(text)
    assert len(calls) == 2  # once in head 2 (its words before it read apart), once in head 1
    # each a copy on its own line: the first keeps its whole line, the others their own
    assert [v.line for v in verdicts] == list(range(1, 202)) + [203, 204]
    assert verdicts[0].source == "Head 2: a_{5,2} = 0.882" and verdicts[1].source == "a_{5,2} = 0.882"
    assert {v.status for v in verdicts[:201]} == {"correct"} and verdicts[-1].status != "correct"


def test_the_search_for_where_a_wrong_value_comes_from_is_bounded(derivation, monkeypatch):
    """A file's wrong values may spend check.SEARCH_SECONDS of CPU on finding where each
    comes from (100,000 distinct wrong claims took 40 s); past that, a wrong value is judged
    against the exact value alone and its verdict says so, naming the line where the search
    stopped. L = 1.338 is the loss in bits (log base 2: the seed's -log2 0.395 rounds to
    1.338, the natural log's 0.928): a convention while the search runs, plainly wrong after."""
    lines = ["L = 1.338", "sigma_5 = 0.900", "L = 1.338"]
    usual = Checker(derivation).check_text("\n".join(lines))
    assert usual[0].status == "convention" and usual[2].status == "convention"
    monkeypatch.setattr(check, "SEARCH_SECONDS", 0.0)
    bounded = Checker(derivation).check_text("\n".join(lines))
    assert [v.status for v in bounded] == ["wrong"] * 3
    assert all("not searched" in v.message and "by line 1" in v.message for v in bounded)
    assert "the exact value is 0.92" in bounded[0].message and "which rounds to 0.928" in bounded[2].message
