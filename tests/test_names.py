"""Names as data (issue 8, item 2) and formulas as SymPy expressions (item 3): one Name
type, one printer in three notations, one parser for all three, lookup by fields, and
the by-hand notes as typeset formulas in the LaTeX and the HTML.

The expected notations are written here by hand the way the seed 000 page writes them
(``q_5 \\cdot k_j``, ``e^{s_{5,j}}``, ``o_5^{(1)}``, ``\\partial L / \\partial E_{i}``,
``-\\ln 0.395``); the expected numbers of the calculations are Fraction arithmetic on the
printed decimals typed from the seed page, never derive's output.
"""

from __future__ import annotations

import html
import re
from fractions import Fraction as F

import pytest
import sympy

from documents import CASES, cli, derivation_of

from derive import formula as fm
from derive.cells import Printer, table_refs
from derive.errors import DeriveError
from derive.name import UNPOSITIONED, Name, Piece, name_of
from derive.name_parser import parse_name
from derive.names import find
from derive.printing import latex, plain_text, text, unicode
from derive.render_html import HtmlRenderer
from derive.render_latex import LatexRenderer
from derive.rounding import Format

# (Name, plain, Unicode, LaTeX) for the chapter's names
NAMES = [
    (Name("u", primes=1, position=5, index=2), "u'_5[2]", "u\u2032_5[2]", "u'_{5}[2]"),
    (Name("mu", position=5), "mu_5", "\u03bc_5", r"\mu_{5}"),
    (Name("mu", position=5, norm="ln2"), "mu'_5", "\u03bc\u2032_5", r"\mu'_{5}"),
    (Name("mu", position=5, norm="final"), "mu^f_5", "\u03bc^f_5", r"\mu^{f}_{5}"),
    (Name("sigma", position=5, norm="ln2"), "sigma'_5", "\u03c3\u2032_5", r"\sigma'_{5}"),
    (Name("s", position=5, index=3), "s_{5,3}", "s_{5,3}", "s_{5,3}"),
    (Name("a", position=5, index=3, head=1), "a_{5,3}^(1)", "a_{5,3}^(1)", "a_{5,3}^{(1)}"),
    (Name("o", position=3, head=1, index=1), "o_3^(1)[1]", "o_3^(1)[1]", "o_{3}^{(1)}[1]"),
    (Name("qk", position=5, index=1), "q_5.k_1", "q_5\u00b7k_1", r"q_{5} \cdot k_{1}"),
    (Name("exp_s", position=5, index=3), "e^s_{5,3}", "e^s_{5,3}", "e^{s_{5,3}}"),
    (Name("sum_exp_s", position=5), "sum_j e^s_{5,j}", "\u03a3_j e^s_{5,j}", r"\sum_{j} e^{s_{5,j}}"),
    (Name("z", index=Piece("\u2423roof")), "z_\u2423roof", "z_\u2423roof", r"z_{\texttt{\textvisiblespace{}roof}}"),
    (Name("p", index=Piece("\u2423roof")), "p(\u2423roof)", "p(\u2423roof)", r"p(\texttt{\textvisiblespace{}roof})"),
    (Name("exp_z", index=Piece("<eot>")), "e^z_<eot>", "e^z_<eot>", r"e^{z_{\texttt{\textless{}eot\textgreater{}}}}"),
    # under a temperature T other than 1, the softmax's term e^(z_j/T) and their sum
    (Name("exp_z_over_T", index=Piece("\u2423roof")), "e^(z_\u2423roof/T)", "e^(z_\u2423roof/T)",
     r"e^{z_{\texttt{\textvisiblespace{}roof}}/T}"),
    (Name("sum_exp_z_over_T"), "sum_j e^(z_j/T)", "\u03a3_j e^(z_j/T)", r"\sum_{j} e^{z_{j}/T}"),
    (Name("E", param=True, position=3, index=1, grad=True), "dL/dE_{3,1}", "\u2202L/\u2202E_{3,1}",
     r"\partial L / \partial E_{3,1}"),
    (Name("W_Q", param=True, position=1, index=3), "(W_Q)_{1,3}", "(W_Q)_{1,3}", r"(W_{Q})_{1,3}"),
    (Name("b_O", param=True, position=3), "(b_O)_3", "(b_O)_3", r"(b_{O})_{3}"),
    (Name("W_Q", param=True, position=1, index=3, grad=True), "dL/d(W_Q)_{1,3}", "\u2202L/\u2202(W_Q)_{1,3}",
     r"\partial L / \partial (W_{Q})_{1,3}"),
    (Name("E", param=True, position=2, index=1, after=True), "E_{2,1} after the step", "E_{2,1} after the step",
     r"E_{2,1}\ \text{after the step}"),
    (Name("attn", position=5, index=1), "attn_5[1]", "attn_5[1]", r"\mathrm{attn}_{5}[1]"),
    (Name("hidden", position=5, index=3), "u'_5W_1[3]", "(u\u2032_5 W_1)[3]", "(u'_{5} W_{1})[3]"),
    (Name("L"), "L", "L", "L"),
]


@pytest.mark.parametrize("name, plain, uni, tex", NAMES, ids=[n[1] for n in NAMES])
def test_one_printer_three_notations_and_one_parser(name, plain, uni, tex):
    assert (text(name), unicode(name), latex(name)) == (plain, uni, tex)
    assert str(name) == plain and sympy.latex(name.sympy()) == tex  # SymPy's own printers agree
    assert eval(repr(name), {"Name": Name, "Piece": Piece}) == name  # (repr is the call that makes it)
    for written in (plain, uni, tex):
        assert parse_name(written) == name, written


@pytest.mark.parametrize("written, same_as", [
    ("a_5,3", "a_{5,3}"), ("h_{5,1}", "h_5[1]"), ("u2_5[2]", "u'_5[2]"), ("\u03c3_5", "sigma_5"),
    (r"\sigma^{f}_{5}", "sigma^f_5"), ("q_5 . k_1", "q_5.k_1"), (r"o_{5}^{(1)}", "o_5^(1)"),
    ("p(\\text{\u2423roof})", "p(\u2423roof)"), ('z_{\\texttt{{\\char"2423}roof}}', "z_\u2423roof"),
    (r"\frac{\partial L}{\partial E_{3,1}}", "dL/dE_{3,1}"), ("W_{Q}", "W_Q"), ("W_Q_{1,3}", "(W_Q)_{1,3}"),
    ("{W_{Q}}_{1,3}", "(W_Q)_{1,3}"), ("W_{Q,1,3}", "(W_Q)_{1,3}"), ("(u'_{5} W_{1})[3]", "u'_5W_1[3]"),
    ("a^{(1)}_{5,3}", "a_{5,3}^{(1)}"), ("a^(2)_5,3", "a_{5,3}^(2)"), ("q^{(1)}_5[2]", "q_5^(1)[2]"),  # the head first
])
def test_a_reader_may_write_a_name_loosely(written, same_as):
    assert parse_name(written) == parse_name(same_as)


def test_names_compare_fields_not_text():
    assert Name("s", position=5, index=3) != Name("s", position=5, index=3, head=1)
    assert Name("mu", position=5, norm="ln2") != Name("mu", position=5, norm="final")
    assert Name("u", primes=1, position=5) != Name("u", position=5)
    assert Name("z", index=Piece("the")) != Name("z", index=Piece("\u2423the"))
    assert {Name("s", position=5, index=3): 1}[parse_name("s_{5,3}")] == 1
    assert Name("u", primes=1, position=5).key(index=False) == Name("u", primes=1, position=5, index=2).key(index=False)


@pytest.mark.parametrize("bad", ["", "q_5 . v_1", "e^h_5", "x_1_2_3", "mu''_5", "u'^f_5"])
def test_what_is_not_a_name(bad):
    with pytest.raises(ValueError):
        parse_name(bad)


# ----------------------------------------------------------------------------- every quantity
@pytest.mark.parametrize("case", CASES)
def test_a_row_is_read_back_without_the_parser_as_the_parser_reads_it(case):
    """A row of named quantities written as its label less the column (o_51^(1), of
    o_51^(1)[1] ...) is looked up without the Earley parser (names._row_name): the Name it
    gives is the one the parser reads from that text, the Name of each of the row's
    components less its column (for crane, the rows of three positions)."""
    from derive import names

    derivation = derivation_of(case)
    rows = {}
    for node in derivation.graph.nodes:
        label = node.meta.label
        if node.meta.symbol and label and label.endswith("]"):
            rows.setdefault(label[:label.rindex("[")], []).append(node.meta)
    assert rows or case != "cat-climbed"
    for text_, metas in rows.items():
        if case == "crane" and metas[0].position not in (None, 1, 64):
            continue
        row = names._row_name(derivation, text_)
        if row is None:  # (not its own Name's text: the parser reads it)
            continue
        assert row == parse_name(text_), text_
        assert all(m.name.but(index=None, block=None) == row for m in metas), text_


@pytest.mark.parametrize("case", CASES)
def test_every_quantity_prints_as_its_label_and_parses_back(case):
    """The Name of every named node prints as the label the rules wrote, and reads back
    from all three notations with the same fields (for crane, one node of each kind)."""
    derivation = derivation_of(case)
    seen = set()
    for node in derivation.graph.nodes:
        meta = node.meta
        if not meta.symbol:
            continue
        name = meta.name
        assert text(name) == meta.label
        kind = (meta.symbol, meta.norm, meta.head is not None, isinstance(name.fields.index, Piece))
        if case == "crane" and kind in seen:
            continue
        seen.add(kind)
        for written in (text(name), unicode(name), latex(name), latex(name, "katex")):
            assert parse_name(written).key() == name.key(), written


def test_lookup_by_fields_in_every_notation():
    derivation = derivation_of("cat-climbed")
    for written in ("o_3^(1)[1]", r"o_{3}^{(1)}[1]", "o_3^{(1)}[1]"):
        (ref,) = find(derivation, written)
        assert derivation.meta(ref).label == "o_3^(1)[1]" and derivation.meta(ref).head == 1
    assert find(derivation, r"\mu'_{5}") == find(derivation, "mu'_5") == find(derivation, "\u03bc\u2032_5")
    assert [derivation.meta(r).label for r in find(derivation, "u'_5")] == [f"u'_5[{c}]" for c in range(1, 5)]
    assert find(derivation, "z_{\\texttt{\\textvisiblespace{}roof}}") == find(derivation, "z_roof")
    (the,) = find(derivation, "z_the")
    (space_the,) = find(derivation, "z_\u2423the")
    assert the != space_the
    with pytest.raises(DeriveError):
        find(derivation, "a_{5,3}")  # two heads: --head chooses
    with pytest.raises(DeriveError):
        find(derivation, "nonsense ^^")


def test_meta_name_from_fields():
    from derive.graph import Meta
    assert name_of(Meta("u2", "u'_5[2]", block=1, position=5, index=2)) == Name("u", primes=1, position=5, index=2,
                                                                               block=1)
    assert name_of(Meta("sigma", "sigma^f_5", position=5, norm="final")) == Name("sigma", position=5, norm="final")
    assert name_of(Meta("mu", "mu_5", position=5, norm="ln1")) == parse_name("mu_5") == Name("mu", position=5)
    assert parse_name("rms'_5") == Name("rms", position=5, norm="ln2")
    assert name_of(Meta(None, "x - mu")) is None


# ----------------------------------------------------------------------------- formulas
def test_a_calculation_prints_in_the_readers_order():
    """The seed's z_roof from the printed f_5: 0.4935 + 0.928 + 0 + 1.069 = 2.4905, in that
    order in every notation (SymPy's Add would sort it)."""
    products = [F("-0.987") * F("-0.5"), F("0.928") * 1, F("-1.011") * 0, F("1.069") * 1]
    assert sum(products) == F("2.4905")
    chain = fm.Chain(fm.Terms(*[fm.number(p) for p in products]), fm.number(sum(products)))
    assert text(chain) == latex(chain) == "0.4935 + 0.928 + 0 + 1.069 = 2.4905"
    assert fm.value(chain.args[0]) == F("2.4905")


def test_signs_and_functions_in_each_notation():
    dot = fm.Terms(fm.Times(fm.Dec("1.732"), fm.Dec("-0.816")), fm.Times(fm.Dec("-0.577"), fm.Dec("1.633")))
    assert text(dot) == "1.732\u00b7(-0.816) - 0.577\u00b71.633"
    assert unicode(dot) == "1.732\u00b7(\u22120.816) \u2212 0.577\u00b71.633"
    assert latex(dot) == r"1.732 \cdot (-0.816) - 0.577 \cdot 1.633"
    assert fm.value(dot) == F("1.732") * F("-0.816") + F("-0.577") * F("1.633")
    loss = fm.Neg(fm.ln(fm.Dec("0.395")))
    assert (text(loss), latex(loss)) == ("-ln(0.395)", r"-\ln 0.395")
    scale = fm.Over(fm.Dec("3.395"), fm.sqrt(2))
    assert (text(scale), unicode(scale), latex(scale)) == ("3.395 / sqrt(2)", "3.395 / \u221a2", r"3.395 / \sqrt{2}")
    assert latex(scale, display=True) == r"\frac{3.395}{\sqrt{2}}"
    assert (text(fm.exp(fm.Dec("-0.472"))), latex(fm.exp(fm.Dec("-0.472")))) == ("e^(-0.472)", "e^{-0.472}")
    sgd = fm.Terms(fm.Dec("-0.5"), fm.Neg(fm.Times(fm.Dec("0.1"), fm.Group(fm.Dec("-0.011")))))
    assert latex(sgd) == r"-0.5 - 0.1 \cdot (-0.011)" and fm.value(sgd) == F("-0.4989")
    twice = fm.Terms(fm.Dec("0.911"), fm.Neg(fm.Dec("-0.092")))
    assert text(twice) == "0.911 - (-0.092)"
    assert latex(fm.Times(fm.Rat(1, 4), fm.Dec("2.146"))) == r"\frac{1}{4} \cdot 2.146"
    assert text(fm.Times(fm.Rat(1, 4), fm.Dec("2.146"))) == "(1/4)\u00b72.146"
    assert latex(fm.Dec("2.49067\u2026", cut=True)) == r"2.49067\ldots"


def test_a_sum_of_numbers_and_products_prints_each_sign_once():
    """The shapes of crane's notes: a sum of printed numbers (some cut short) and of
    products led by one; a negative one after the first term is a subtraction of its
    digits, a negative factor after the first is parenthesised, in every notation."""
    cut = fm.Dec("-2.25266\u2026", cut=True)
    terms = fm.Terms(fm.Dec("-0.308864"), fm.Dec("0.25413"), cut, fm.Dec("-1e-05"),
                     fm.Times(fm.Dec("-0.591"), fm.Dec("-0.430"), fm.Dec("2")),
                     fm.Times(fm.Dec("-0.10749\u2026", cut=True), fm.Dec("1.5")),
                     fm.Times(fm.Dec("0.5"), fm.Dec("-0.25")), fm.Times(fm.Neg(fm.Dec("0.5")), fm.Dec("3")))
    assert text(terms) == ("-0.308864 + 0.25413 - 2.25266\u2026 - 1e-05 - 0.591\u00b7(-0.430)\u00b72"
                           " - 0.10749\u2026\u00b71.5 + 0.5\u00b7(-0.25) - 0.5\u00b73")
    assert unicode(terms) == ("\u22120.308864 + 0.25413 \u2212 2.25266\u2026 \u2212 1e\u221205 \u2212 "
                              "0.591\u00b7(\u22120.430)\u00b72 \u2212 0.10749\u2026\u00b71.5 + 0.5\u00b7(\u22120.25)"
                              " \u2212 0.5\u00b73")
    assert latex(terms) == (r"-0.308864 + 0.25413 - 2.25266\ldots - 1\mathrm{e}{-05} - 0.591 \cdot (-0.430) \cdot 2"
                            r" - 0.10749\ldots \cdot 1.5 + 0.5 \cdot (-0.25) - 0.5 \cdot 3")


def test_every_reading_computes_what_it_prints():
    """Each rational by-hand calculation of the seed case gives, in exact arithmetic, the
    result it prints after its last '='."""
    derivation = derivation_of("cat-climbed")
    printer = Printer(derivation, Format(places=3))
    checked = 0
    for step in derivation.steps:
        for table in step.tables:
            for reading in printer.byhand.readings(table_refs(table)):
                sides = reading.formula.args if isinstance(reading.formula, fm.Chain) else ()
                try:
                    values = [fm.value(side) for side in sides]
                except ValueError:
                    continue  # e^x, sqrt: not rational
                if sides and not (isinstance(sides[-1], fm.Dec) and sides[-1].cut):
                    assert len(set(values)) == 1, reading.calculation
                    checked += 1
    assert checked >= 20


# ----------------------------------------------------------------------------- the documents
MATH = {"latex": re.compile(r"(?<!\\)\$(.+?)(?<!\\)\$|\\\[(.*?)\\\]", re.S),
        "html": re.compile(r"\\\((.*?)\\\)|\\\[(.*?)\\\]", re.S)}
SOURCE_TEXT = ["sqrt(", ".k_", "^(", "+ -", "+ \u2212"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("output", ["latex", "html"])
def test_notes_and_equations_are_typeset_math(case, output):
    """In the LaTeX and the HTML of every bundled case: no source text in the math
    (``sqrt(``, ``q_5.k_1``, ``^(``, ``+ -``), no hyphen as a minus in the notes' prose,
    and the notes' names and calculations are formulas."""
    renderer = (LatexRenderer if output == "latex" else HtmlRenderer)(derivation_of(case), Format())
    document = renderer.render(standalone=True)
    body = document[document.index("\\begin{document}"):] if output == "latex" else \
        html.unescape(document[document.index("<main"):document.index("</main>")])
    formulas = [a or b for a, b in MATH[output].findall(body)]
    assert len(formulas) > 10  # the smallest bundled case (yeh-small) has 11 in its HTML
    found = [(s, f) for f in formulas for s in SOURCE_TEXT if s in f]
    assert found == []
    notes = re.findall(r"\\textsuperscript\{[a-z]+\}\\,(.*?)\\par" if output == "latex" else
                       r'<li><sup>[a-z]+</sup> (.*?)</li>', body)
    assert notes or case == "yeh-small"  # integers throughout: no last digit to disagree on
    for note in notes:
        prose = MATH[output].sub("", note)
        assert not re.search(r"(?<![\w-])-\d", prose), note  # every number of a note is math
        assert "from the printed inputs" not in note or MATH[output].match(note), note  # its name first, as math


def test_seed_notes_in_latex():
    text_ = cli("latex", "cat-climbed", "--step", "attention")
    assert r"$q_{5} \cdot k_{1}$: from the printed inputs, $1.732 \cdot (-0.816) - 0.577 \cdot 1.633 = " \
           r"-1.413312 - 0.942241 = -2.355553$" in text_
    assert r"$s_{5,3}$: from the printed inputs, $3.395 / \sqrt{2} = 2.40062\ldots$" in text_
    assert r"$e^{s_{5,3}}$: from the printed inputs, $e^{2.400} = " in text_
    assert r"$a_{5,j}$ of head 1: the printed weights add up to $0.011 + 0.035 + 0.622 + 0.319 + 0.014 = 1.001$" \
        in text_
    logits = cli("latex", "cat-climbed", "--step", "logits")
    assert r"$z_{\texttt{\textvisiblespace{}roof}}$: from the printed inputs, " in logits
    assert "0.4935 + 0.928 + 0 + 1.069 = 2.4905$, exactly on a tie" in logits
    mix = cli("latex", "cat-climbed", "--step", "mix")
    assert r"$o_{3}^{(1)}[1]$: from the printed inputs" in mix


def test_rich_text_in_the_terminal_is_plain():
    derivation = derivation_of("cat-climbed")
    printer = Printer(derivation, Format(places=3))
    note = next(n for n in printer.notes(table_refs(derivation.step("logits").tables[0]))
                if text(n.parts[0]) == "z_\u2423roof")
    assert plain_text(note.parts) == note.text
    assert "0.4935 + 0.928 + 0 + 1.069 = 2.4905" in note.text


def test_rules_may_give_names_and_formulas_for_headers_and_equations():
    """A column header or an equation's left side given as a Name or a formula prints in
    each notation: LaTeX display with \\frac, the terminal in the plain notation."""
    import dataclasses
    import io

    from rich.console import Console

    from derive.page import render_steps
    from derive.render_rich import rich_page
    from derive.steps import Equation

    derivation = derivation_of("cat-climbed")
    step = derivation.step("layernorm2")
    mu, sigma = Name("mu", position=5, norm="ln2"), Name("sigma", position=5, norm="ln2")
    formula = fm.Chain(Name("u", primes=1, position=5), fm.Over(fm.Terms(Name("h", position=5), fm.Neg(mu)), sigma))
    table = dataclasses.replace(step.tables[0], columns=["token", mu, sigma] + step.tables[0].columns[3:])
    custom = dataclasses.replace(step, tables=[table], equations=[Equation(mu, step.equations[0].rhs),
                                                                  Equation(formula, step.equations[-1].rhs)])
    custom.derivation = derivation
    latex_text = LatexRenderer(derivation, Format()).render([custom], standalone=False)
    assert "\\mu'_{5} &= " in latex_text
    assert "u'_{5} &= \\frac{h_{5} - \\mu'_{5}}{\\sigma'_{5}} = [" in latex_text
    assert "{$\\mu'_{5}$} & {$\\sigma'_{5}$}" in latex_text  # the headers of two number columns
    page = HtmlRenderer(derivation, Format()).render([custom], standalone=False)
    assert "<th>token</th><th>\\(\\mu'_{5}\\)</th><th>\\(\\sigma'_{5}\\)</th>" in page
    console = Console(width=200, record=True, color_system=None, file=io.StringIO())
    console.print(rich_page(render_steps(derivation, [custom], Printer(derivation, Format()))))
    terminal = console.export_text()
    assert "u'_5 = (h_5 - mu'_5) / sigma'_5 = [" in terminal and "sigma'_5" in terminal


def _fields(meta) -> tuple:
    """A quantity's metadata field by field (a weight's entry is a WeightEntry, not a Meta)."""
    return tuple(getattr(meta, f) for f in ("symbol", "label", "block", "head", "position", "index", "norm",
                                            "param", "token"))


@pytest.mark.parametrize("case", ["cat-climbed", "woodchuck"])
def test_meta_of_a_name_gives_the_rules_metadata(case):
    """Meta.of(name, context) gives back every node's symbol, label and fields: a rule may
    build its metadata from a Name instead of a label f-string."""
    from derive.graph import Meta

    derivation = derivation_of(case)
    count = 0
    for node in derivation.graph.nodes:
        meta = node.meta
        if not meta.symbol:
            continue
        name = meta.name
        context = dict(token=meta.token)  # what the name does not write:
        if name.head is None:
            context["head"] = meta.head  # the head of a score, of q, k, v cut from one W_Q
        if name.symbol in UNPOSITIONED or name.symbol == "PE":
            context["position"] = meta.position  # the row of a logit; PE's row from 1
        if name.symbol in ("L", "PE"):
            context["index"] = meta.index  # the target of L; PE's column from 1
        if meta.norm == "ln1":
            context["norm"] = "ln1"  # a statistic before attention (no mark)
        assert _fields(Meta.of(name, **context)) == _fields(meta), meta.label
        count += 1
    assert count > 500


def test_names_work_in_sympy_arithmetic():
    """A Name's SymPy symbol works in products, sums, derivatives and simplification,
    printed by SymPy's own printers in the chapter's notation (the definition of u'_5[2] by
    hand: d/dh of (h - mu') / sigma' is 1 / sigma'), and keeps the Name's fields."""
    h = Name("h", position=5, index=2).sympy()
    mu, sigma = Name("mu", position=5, norm="ln2").sympy(), Name("sigma", position=5, norm="ln2").sympy()
    assert mu != Name("mu", position=5).sympy() and mu == Name("mu", position=5, norm="ln2").sympy()
    assert mu.derive_name == Name("mu", position=5, norm="ln2")
    u = (h - mu) / sigma
    assert sympy.diff(u, h) == 1 / sigma and sympy.diff(u, mu) == -1 / sigma
    assert sympy.simplify(u * sigma + mu) == h
    assert str(u) == "(h_5[2] - mu'_5)/sigma'_5"
    assert sympy.latex(u) == r"\frac{h_{5}[2] - \mu'_{5}}{\sigma'_{5}}"
    assert sorted([sigma, h, mu], key=sympy.default_sort_key) == sorted([mu, sigma, h], key=sympy.default_sort_key)


def test_each_notation_keeps_its_own_print_methods_whatever_printed_before():
    """The printers remember the print method SymPy's dispatch finds for a class, per
    printer class (TextPrinter._methods...): a square root, a fraction and a quotient printed
    in one notation and then another each keep their own notation, in either order."""
    root = fm.Over(fm.Dec("3.395"), fm.sqrt(2))
    third = fm.Times(fm.Rat(1, 3), Name("h", position=5))
    expected = {"text": ("3.395 / sqrt(2)", "(1/3)\u00b7h_5"),
                "unicode": ("3.395 / \u221a2", "(1/3)\u00b7h_5"),
                "latex": (r"3.395 / \sqrt{2}", r"\frac{1}{3} \cdot h_{5}"),
                "display": (r"\frac{3.395}{\sqrt{2}}", r"\frac{1}{3} \cdot h_{5}")}
    printers = {"text": text, "unicode": unicode, "latex": latex, "display": lambda e: latex(e, display=True)}
    for order in (list(printers), list(reversed(printers))):
        for notation in order:
            assert (printers[notation](root), printers[notation](third)) == expected[notation], notation
    gelu = fm.GeluTanh(fm.Dec("0.5"))  # a function
    assert (text(gelu), latex(gelu)) == ("GELU_tanh(0.5)", r"\mathrm{GELU}_{\tanh}(0.5)")
