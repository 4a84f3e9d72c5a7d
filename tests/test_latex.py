"""`derive latex`: every bundled case compiles alone with pdflatex, the fragment compiles
with the preamble it names, the PDF renders to PNG pages, and every number in the LaTeX
is the JSON export's, cell for cell, under several rounding options."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from documents import (CASES, aligned_blocks, check_numbers, cli, json_decimals, latex_tables, tool)

from derive.render_latex import PACKAGES, escape, table_format

OPTION_SETS = [(), ("--places", "4", "--rounding", "half-even"), ("--places", "2", "--rounding", "down")]
OPTION_IDS = ["3 places", "4 places half-even", "2 places down"]


def pdflatex(tex: Path) -> str:
    """Compile ``tex`` in its folder; the log. Asserts no error, no undefined control
    sequence and no missing character."""
    done = subprocess.run([tool("pdflatex"), "-interaction=nonstopmode", "-halt-on-error", tex.name],
                          cwd=tex.parent, capture_output=True, text=True, timeout=1200)
    log = tex.with_suffix(".log").read_text(encoding="latin-1")
    assert done.returncode == 0, log[-3000:]
    errors = [line for line in log.splitlines() if line.startswith("!")]
    assert not errors, errors
    assert "Undefined control sequence" not in log
    assert "Missing character" not in log
    assert "LaTeX Error" not in log
    assert "Overfull \\vbox" not in log  # nothing runs off the bottom of a page
    return log


@pytest.mark.parametrize("case", CASES)
def test_standalone_compiles_and_renders_to_png(case, tmp_path):
    tex = tmp_path / f"{case}.tex"
    cli("latex", case, "--standalone", "-o", str(tex))
    log = pdflatex(tex)
    pages = int(re.search(r"Output written on .*?\((\d+) pages?", log).group(1))
    assert pages >= (3 if case in ("cat-climbed", "woodchuck", "crane") else 1)  # exercises: a page or two
    first = min(pages, 8)  # the opening pages, to look at
    subprocess.run([tool("pdftoppm"), "-r", "60", "-l", str(first), "-png", tex.with_suffix(".pdf").name, case],
                   cwd=tmp_path, check=True, timeout=300)
    pngs = sorted(tmp_path.glob(f"{case}-*.png"))
    assert len(pngs) == first
    assert all(p.read_bytes().startswith(b"\x89PNG") and p.stat().st_size > 5000 for p in pngs)


def test_fragment_compiles_with_the_preamble_it_names(tmp_path):
    fragment = cli("latex", CASES[0], "--step", "attention")
    assert "\\documentclass" not in fragment
    named = [line[2:] for line in fragment.splitlines() if line.startswith("% \\usepackage")]
    assert "\n".join(named) == PACKAGES
    (tmp_path / "steps.tex").write_text(fragment, encoding="utf-8")
    chapter = tmp_path / "chapter.tex"
    chapter.write_text("\\documentclass{book}\n" + "\n".join(named) + "\n\\begin{document}\n\\chapter{Attention}\n"
                       "\\input{steps}\nSee step~\\ref{derive:attention}.\n\\end{document}\n", encoding="utf-8")
    pdflatex(chapter)


@pytest.mark.parametrize("case, options", [(case, ()) for case in CASES]
                         + [(CASES[0], options) for options in OPTION_SETS[1:]],
                         ids=CASES + [f"{CASES[0]}, {i}" for i in OPTION_IDS[1:]])
def test_numbers_are_the_json_decimals(case, options):
    text = cli("latex", case, *options)
    compared = check_numbers(case, latex_tables(text), aligned_blocks(text), json_decimals(case, *options))
    assert compared > (100 if case in ("cat-climbed", "woodchuck", "crane") else 20)  # exercises are short


@pytest.mark.parametrize("options", [("--signed-zero",), ("--sig", "2")], ids=["signed zero", "2 sig"])
def test_sig_and_signed_zero_numbers_are_the_json_decimals(options):
    text = cli("latex", CASES[0], *options)
    assert check_numbers(CASES[0], latex_tables(text), aligned_blocks(text), json_decimals(CASES[0], *options)) > 300


def test_numbers_align_on_the_point():
    text = cli("latex", CASES[0], "--step", "attention")
    # The per-head table of the last row: q.k, s, e^s and a are decimal columns.
    assert "S[table-format=-1.3, retain-negative-zero, group-digits=none" in text
    assert "\\toprule" in text and "\\midrule" in text and "\\bottomrule" in text
    assert table_format(["-2.357", "11.027", "0.5"]) == "-2.3"
    assert table_format(["1.2e-06", "-3.4e12"]) == "-1.1e-2"
    assert table_format(["12"]) == "2"


def test_equations_in_aligned_with_the_chapters_notation():
    text = cli("latex", CASES[0], "--step", "layernorm")
    (block,) = aligned_blocks(text)
    assert block[0].startswith("\\mu_{5} &= ")
    assert block[1].startswith("\\sigma_{5} &= ")
    assert block[2].startswith("u_{5} &= \\frac{x_{5} - \\mu_{5}}{\\sigma_{5}} = [")


def test_each_norm_names_its_own_input_and_statistics():
    """Steps 8 and 11 of the seed: the second LayerNorm reads h_5 with mu'_5 and sigma'_5,
    the final one y_5 with mu^f_5 and sigma^f_5 (not x_5, mu, sigma)."""
    (second,) = aligned_blocks(cli("latex", CASES[0], "--step", "layernorm2"))
    assert second[0].startswith("\\mu'_{5} &= ") and second[1].startswith("\\sigma'_{5} &= ")
    assert second[2].startswith("u'_{5} &= \\frac{h_{5} - \\mu'_{5}}{\\sigma'_{5}} = [")
    (final,) = aligned_blocks(cli("latex", CASES[0], "--step", "final"))
    assert final[2].startswith("f_{5} &= \\frac{y_{5} - \\mu^{f}_{5}}{\\sigma^{f}_{5}} = [")


def test_exact_forms_come_from_sympys_printer():
    text = cli("latex", CASES[0], "--step", "layernorm", "--exact")
    # The seed 000's sigma_5 = sqrt(750010)/1000 (eps = 1e-5 inside the square root).
    assert "\\sigma_{5} &= \\frac{\\sqrt{750010}}{1000}" in text


def test_text_escapes():
    assert escape("50% of $x_1 & {y}") == "50\\% of \\$x\\_1 \\& \\{y\\}"
    assert escape("\u2423the \u2212 0.49\u2026") == "\\textvisiblespace{}the \\textminus{} 0.49\\ldots{}"
