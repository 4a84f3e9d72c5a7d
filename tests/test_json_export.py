"""The JSON export streamed (issue 12, item 3): the same text as one ``json.dumps`` of the
whole list, records made one at a time, ``--no-exact-forms``, and an output file that is
replaced only by a complete one even when its text comes in pieces."""

from __future__ import annotations

import json
import os
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

from derive.case import load_case
from derive.cli import app
from derive.derivation import derive
from derive.errors import DeriveError
from derive.export_json import iter_records, json_chunks, records
from derive.output import write_atomic
from derive.rounding import Format


@pytest.fixture(scope="module")
def seed():
    return derive(load_case("cat-climbed"))


@pytest.mark.parametrize("rows", [[], [{"a": 1}], [{"a": "␣roof", "b": None}, {"c": [1, 2], "d": {"e": True}}],
                                  [{"q\"uote": 'a\nb\\c"\t\u0001é', "f": -1.5e-300, "t": False, "n": -0}, {},
                                   {"x": "}, {", "y": ",\n  "}]])
def test_chunks_are_the_text_of_one_dump(rows):
    assert "".join(json_chunks(iter(rows))) == json.dumps(rows, ensure_ascii=False, indent=1) + "\n"


def test_cli_streams_the_same_records(seed, tmp_path):
    out = tmp_path / "seed.json"
    result = CliRunner().invoke(app, ["run", "cat-climbed", "--format", "json", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8") == json.dumps(records(seed, Format(minus="-")), ensure_ascii=False,
                                                         indent=1) + "\n"


def test_no_exact_forms_keeps_fractions_only(seed, tmp_path):
    """The seed's E is given in halves (E[the] = [-0.5, -0.5, 0, 1]); sigma_5 = sqrt(750010)/1000
    (README) is irrational: null without exact forms."""
    result = CliRunner().invoke(app, ["run", "cat-climbed", "--format", "json", "--no-exact-forms"])
    assert result.exit_code == 0, result.output
    recs = json.loads(result.output)
    given = [r for r in recs if r["symbol"] == "given" and r["param"] == "E"]
    assert [Fraction(r["exact"]) for r in given[:4]] == [Fraction(-1, 2), Fraction(-1, 2), 0, 1]
    sigma = [r for r in recs if r["symbol"] == "sigma" and r["position"] == 5 and r["norm"] in (None, "ln1")]
    assert sigma and sigma[0]["exact"] is None
    full = {(r["symbol"], r["label"], r["after_step"]): r["exact"] for r in records(seed, Format())}
    for r in recs:  # every fraction is the full export's; the rest are its closed forms or definitions
        if r["exact"] is not None:
            assert r["exact"] == full[(r["symbol"], r["label"], r["after_step"])]
    assert sum(r["exact"] is None for r in recs) > 100


def test_a_stream_that_fails_leaves_the_old_file(tmp_path):
    out = tmp_path / "old.json"
    out.write_text("old\n", encoding="utf-8")

    def pieces():
        yield "[\n"
        raise DeriveError("broken halfway")

    with pytest.raises(DeriveError):
        write_atomic(out, pieces())
    assert out.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["old.json"]  # no temporary file left behind
    write_atomic(out, iter(["[", "1", "]\n"]))
    assert out.read_text(encoding="utf-8") == "[1]\n"


@pytest.mark.parametrize("places", [3, 40])
def test_roundings_of_the_export_share_one_evaluation(places, monkeypatch):
    """Derivation.decimals_each: the export's two roundings (the run's places and the 30
    significant figures of ``value``) are each what decimals gives alone, and the graph is
    evaluated first at the higher of the precisions they start at (3 places start at 128
    bits, 30 figures at 163, 40 places at 197): the evaluations of the two roundings one
    after the other, less any below that (cat-climbed at 3 places: 128, then 163 and up)."""
    from derive import evaluate
    from derive.derivation import VALUE_FORMAT

    case = load_case("cat-climbed")
    fmt = Format(places=places, minus="-")
    made = []
    real = evaluate.evaluate
    monkeypatch.setattr(evaluate, "evaluate", lambda graph, *args: made.append(args[2]) or real(graph, *args))
    d = derive(case)
    refs = d.given() + d.quantities()
    one_by_one = [d.decimals(refs, fmt), d.decimals(refs, VALUE_FORMAT)]
    before, made[:] = list(made), []
    start = max(128, int(3.33 * places) + 64, int(3.33 * 30) + 64)
    assert derive(case).decimals_each(refs, [fmt, VALUE_FORMAT]) == one_by_one
    assert made[0] == start and made == [p for p in before if p >= start]
    assert len(made) == len(before) - (places == 3)


def test_no_closed_form_under_a_huge_square_root(tmp_path, monkeypatch):
    """With layernorm_eps = 1.5e641 (a fuzzed seed case) sigma_t = sqrt(var_t + eps) is the
    square root of a rational of about 2,100 bits: SymPy factors such integers to build the
    root (several seconds a quantity, just under each form's budget), and the closed form,
    a 640-digit number under a root, is nothing a reader uses. Its exact text is the
    definition, and SymPy's factorint is never asked. The seed's own sigma_5 keeps
    sqrt(750010)/1000 (step 4: sigma^2 = 0.75 + 1e-5)."""
    import sympy

    from derive.steps import Ref

    text = Path(load_case("cat-climbed").path).read_text(encoding="utf-8")
    assert text.count("layernorm_eps = 1e-5 ") == 1
    path = tmp_path / "eps.toml"
    path.write_text(text.replace("layernorm_eps = 1e-5 ", "layernorm_eps = 1.5e641 "), encoding="utf-8")
    d = derive(load_case(str(path)))
    sigma = next(i for i, n in enumerate(d.graph.nodes) if n.meta.label == "sigma_1")

    def refuse(*args, **kwargs):
        raise AssertionError("factorint asked")

    seed = derive(load_case("cat-climbed"))
    sigma_5 = next(i for i, n in enumerate(seed.graph.nodes) if n.meta.label == "sigma_5")
    assert seed.exact_text(Ref("before", sigma_5)) == "sqrt(750010)/1000"
    monkeypatch.setattr(sympy.ntheory.factor_, "factorint", refuse)
    exact = d.exact_text(Ref("before", sigma))
    assert exact.startswith("sqrt(1/4*((x_1[1] - mu_1)**2"), exact[:80]


def test_a_file_is_whole_when_each_write_takes_only_part_of_its_block(tmp_path, monkeypatch):
    """os.write may write fewer bytes than it is given: what is left of a block is written
    next, and the blocks gathered from many chunks come out whole and in order."""
    import derive.output

    real_write = os.write
    calls = []

    def short_write(fd, data):
        calls.append(len(data))
        return real_write(fd, bytes(data[:1000]))

    monkeypatch.setattr(derive.output.os, "write", short_write)
    chunks = [f"record {i}: {'x' * (i % 97)}\n" for i in range(30_000)]
    out = tmp_path / "out.txt"
    derive.output.write_atomic(str(out), iter(chunks))
    assert out.read_text() == "".join(chunks)
    assert len(calls) > 1  # (the whole text, about 1.6 MB, takes more than one write)


def test_eulers_number_is_written_exp_1():
    """softmax of (1, 2, 3, 4, 1, 2, 3): e^z_a = e^1. SymPy's string syntax writes Euler's
    number E, which a page reads as the embedding table E ("e^z_a = E", a trial's finding);
    derive writes exp(1), in the JSON's exact field and on the --exact page, and SymPy reads
    it back as e."""
    import sympy

    from derive.export_json import records
    from derive.rounding import Format

    exact = {r["label"]: r["exact"] for r in records(derive(load_case("softmax")), Format()) if not r["after_step"]}
    assert exact["e^z_a"] == "exp(1)" and sympy.sympify(exact["e^z_a"]) == sympy.E
    assert exact["p(a)"].startswith("exp(1)/(") and "E" not in exact["p(a)"]
    page = CliRunner().invoke(app, ["run", "softmax", "--exact"]).stdout
    assert "e^z_a = exp(1)" in page and "= E" not in page
