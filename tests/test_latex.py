"""`derive latex`: every bundled case compiles alone with pdflatex into pages a book can
print (no text below 8 pt, no line more than 1 pt too wide, crane's chapter at most 40
pages), the fragment compiles with the preamble it names, fragments of two cases share a
book, the PDF renders to PNG pages, and every number in the LaTeX is the JSON export's,
cell for cell, under several rounding options (a summarised table's shown rows; with
--all-rows every row)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from documents import (CASES, ROOT, aligned_blocks, check_numbers, cli, derivation_of, json_decimals, latex_tables,
                       tool)

from derive.case import load_case
from derive.render_doc import elide_rows
from derive.render_latex import PACKAGES, escape, table_format

SMALLEST_FONT = 8.0  # pt: no text below it
TOO_WIDE = 1.0  # pt: no line, table or formula wider than the text by more than this
CRANE_PAGES = 40
# pdftotext -bbox gives a word's box: its font size times the font's ascent less its
# descent, 0.88 for Latin Modern Roman and Math Italic and 0.82 for Latin Modern Mono (8 pt:
# 7.04 and 6.56 bp). A word lower than this is set below 8 pt (or scaled down).
LOWEST_WORD = 6.5  # bp

OPTION_SETS = [(), ("--places", "4", "--rounding", "half-even"), ("--places", "2", "--rounding", "down")]
OPTION_IDS = ["3 places", "4 places half-even", "2 places down"]


def pdflatex(tex: Path) -> str:
    """Compile ``tex`` in its folder; the log. Asserts no error, no undefined control
    sequence, no missing character, no multiply defined label, nothing running off the
    bottom of a page and no line more than :data:`TOO_WIDE` too wide."""
    done = subprocess.run([tool("pdflatex"), "-interaction=nonstopmode", "-halt-on-error", tex.name],
                          cwd=tex.parent, capture_output=True, text=True, timeout=1200)
    log = tex.with_suffix(".log").read_text(encoding="latin-1")
    assert done.returncode == 0, log[-3000:]
    errors = [line for line in log.splitlines() if line.startswith("!")]
    assert not errors, errors
    assert "Undefined control sequence" not in log
    assert "Missing character" not in log
    assert "LaTeX Error" not in log
    assert "multiply defined" not in log
    assert "Overfull \\vbox" not in log  # nothing runs off the bottom of a page
    wide = [float(w) for w in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", log)]
    assert all(w <= TOO_WIDE for w in wide), sorted(wide)[-3:]
    return log


def pages(log: str) -> int:
    """The page count pdflatex reports."""
    return int(re.search(r"Output written on .*?\((\d+) pages?", log).group(1))


def font_sizes(pdf: Path) -> tuple[int, float]:
    """The smallest design size of the PDF's fonts (Latin Modern names its size:
    LMRoman8, LMMathItalic10) and the height of its lowest word of two or more letters or
    digits (pdftotext -bbox; the glyphs of the math extension font, a sum sign, a big
    bracket's pieces, come out as one letter, control or private-use characters, and have
    the box of no font size)."""
    fonts = subprocess.run([tool("pdffonts"), pdf.name], cwd=pdf.parent, capture_output=True, text=True,
                           check=True, timeout=120).stdout
    names = [line.split()[0] for line in fonts.splitlines()[2:]]
    assert names and all("+LM" in n for n in names), names  # Latin Modern only
    design = min(int(re.search(r"(\d+)(?:-\w+)?$", n).group(1)) for n in names)
    boxes = subprocess.run([tool("pdftotext"), "-bbox", pdf.name, "-"], cwd=pdf.parent, capture_output=True,
                           text=True, check=True, timeout=300).stdout
    heights = [float(y1) - float(y0) for y0, y1, word in
               re.findall(r'<word xMin="[\d.]+" yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">([^<]*)</word>', boxes)
               if sum(c.isalnum() for c in word) > 1]
    return design, min(heights)


def look_at(pdf: Path, first: int, last: int, resolution: int = 60) -> list[Path]:
    """Pages ``first``..``last`` as PNG images (pdftoppm), asserted to be images with
    something on them."""
    stem = pdf.stem + "-page"
    subprocess.run([tool("pdftoppm"), "-r", str(resolution), "-f", str(first), "-l", str(last), "-png", pdf.name,
                    stem], cwd=pdf.parent, check=True, timeout=300)
    pngs = sorted(pdf.parent.glob(f"{stem}-*.png"))
    assert len(pngs) == last - first + 1
    assert all(p.read_bytes().startswith(b"\x89PNG") and p.stat().st_size > 3000 for p in pngs)
    return pngs


@pytest.mark.parametrize("case", CASES)
def test_standalone_compiles_into_printable_pages(case, tmp_path):
    tex = tmp_path / f"{case}.tex"
    cli("latex", case, "--standalone", "-o", str(tex))
    log = pdflatex(tex)
    count = pages(log)
    assert count >= (3 if case in ("cat-climbed", "woodchuck", "crane") else 1)  # exercises: a page or two
    if case == "crane":
        assert count <= CRANE_PAGES
    design, lowest = font_sizes(tex.with_suffix(".pdf"))
    assert design >= SMALLEST_FONT and lowest >= LOWEST_WORD, (design, lowest)
    look_at(tex.with_suffix(".pdf"), 1, min(count, 8))


@pytest.mark.slow
@pytest.mark.parametrize("case", ["cat-climbed", "woodchuck", "encoder-post-norm", "cat-climbed-llama"])
def test_exact_forms_fit_the_line(case, tmp_path):
    """--exact: long exact forms (a softmax weight over five exponentials, a sum of eight
    products) are broken over lines; nothing is more than 1 pt too wide (they ran 373 pt
    into the margin), and nothing is set below 8 pt."""
    tex = tmp_path / f"{case}.tex"
    cli("latex", case, "--standalone", "--exact", "-o", str(tex))
    text = tex.read_text(encoding="utf-8")
    assert "&\\quad " in text  # some form was broken
    pdflatex(tex)
    design, lowest = font_sizes(tex.with_suffix(".pdf"))
    assert design >= SMALLEST_FONT and lowest >= LOWEST_WORD, (design, lowest)


def test_crane_is_summarised():
    """A table of crane's 64 tokens shows its first 5 and last 3 rows and says how many it
    leaves out (64 - 8 = 56); with --all-rows it shows all 64."""
    tokens = len(load_case("crane").tokens)
    assert tokens == 64
    text = cli("latex", "crane", "--step", "residual")
    ((rows,),) = [latex_tables(text)]
    assert len(rows) == 5 + 1 + 3
    assert f"\\ldots{{}} {tokens - 8} rows omitted; \\texttt{{-{{}}-all-rows}} prints them" in rows[5][0]
    (every,) = latex_tables(cli("latex", "crane", "--step", "residual", "--all-rows"))
    assert len(every) == tokens and not any("omitted" in cell for row in every for cell in row)


def test_elide_rows():
    assert elide_rows(list(range(16)), 16) == (list(range(16)), 0)
    assert elide_rows(list(range(17)), 16) == ([0, 1, 2, 3, 4, 14, 15, 16], 9)
    assert elide_rows(list(range(64)), None) == (list(range(64)), 0)


def test_fragment_compiles_with_the_preamble_it_names(tmp_path):
    fragment = cli("latex", CASES[0], "--step", "attention")
    assert "\\documentclass" not in fragment
    named = [line[2:] for line in fragment.splitlines() if line.startswith("% \\usepackage")]
    assert "\n".join(named) == PACKAGES
    (tmp_path / "steps.tex").write_text(fragment, encoding="utf-8")
    chapter = tmp_path / "chapter.tex"
    chapter.write_text("\\documentclass{book}\n" + "\n".join(named) + "\n\\begin{document}\n\\chapter{Attention}\n"
                       "\\input{steps}\nSee step~\\ref{derive:cat-climbed:attention}.\n\\end{document}\n",
                       encoding="utf-8")
    pdflatex(chapter)


def test_fragments_of_two_cases_and_steps_share_a_book(tmp_path):
    """Two cases' attention steps and a post-norm block's two residual steps in one book:
    every label differs (derive:CASE:KEY, KEY-2 for a key met again), no clash."""
    parts = {"a": ("cat-climbed", "attention"), "b": ("woodchuck", "attention"),
             "c": ("encoder-post-norm", "residual")}
    for name, (case, step) in parts.items():
        (tmp_path / f"{name}.tex").write_text(cli("latex", case, "--step", step), encoding="utf-8")
    labels = re.findall(r"\\label\{([^}]*)\}", "".join((tmp_path / f"{n}.tex").read_text() for n in parts))
    assert len(labels) == len(set(labels)) >= 4, labels
    assert {"derive:cat-climbed:attention", "derive:woodchuck:attention", "derive:encoder-post-norm:residual",
            "derive:encoder-post-norm:residual-2"} <= set(labels)
    book = tmp_path / "book.tex"
    book.write_text("\\documentclass[11pt]{book}\n" + PACKAGES + "\n\\begin{document}\n"
                    + "".join(f"\\chapter{{{n}}}\n\\input{{{n}}}\n" for n in parts)
                    + "See \\ref{derive:woodchuck:attention} and \\ref{derive:encoder-post-norm:residual-2}.\n"
                    "\\end{document}\n", encoding="utf-8")
    pdflatex(book)
    assert "undefined" not in pdflatex(book)  # the second run finds every \\ref's label


@pytest.mark.parametrize("case, options", [(case, ()) for case in CASES]
                         + [(CASES[0], options) for options in OPTION_SETS[1:]],
                         ids=CASES + [f"{CASES[0]}, {i}" for i in OPTION_IDS[1:]])
def test_numbers_are_the_json_decimals(case, options):
    text = cli("latex", case, *options)
    compared = check_numbers(case, latex_tables(text), aligned_blocks(text), json_decimals(case, *options))
    assert compared > (100 if case in ("cat-climbed", "woodchuck", "crane") else 20)  # exercises are short


@pytest.mark.slow
def test_all_rows_prints_every_number_of_crane():
    """--all-rows: every row of crane's 64-row tables, every number the JSON's."""
    text = cli("latex", "crane", "--all-rows")
    assert "omitted" not in text
    assert check_numbers("crane", latex_tables(text), aligned_blocks(text), json_decimals("crane")) > 20000


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
    assert escape("--all-rows prints them") == "-{}-all-rows prints them"


def test_a_note_is_printed_once():
    """The seed's a_{5,j} of head 1 add up to 1.001: that note was printed under both tables
    of the head; now under the first only, and no note's words appear twice for one head
    (the heads' q_5 . k_1 notes read alike: the seed's two heads see the same numbers)."""
    notes, head = [], None  # (the head of the table above, the note's words)
    for line in cli("latex", CASES[0]).splitlines():
        if line.startswith("\\textbf{"):
            head = re.search(r"Head (\d+)", line)
            head = head and head.group(1)
        note = re.match(r"\\textsuperscript\{[a-z]+\}\\,(.*)\\par$", line)
        if note:
            notes.append((head, note.group(1)))
    assert len(notes) > 20
    assert len(notes) == len(set(notes)), [n for n in notes if notes.count(n) > 1][:2]
    sums = [n for h, n in notes if "the printed weights add up to" in n and "head 1" in n]
    assert len(sums) == 1 and "0.011 + 0.035 + 0.622 + 0.319 + 0.014 = 1.001" in sums[0]


# The widths TeX gives these (The TeXbook, ch. 18; Latin Modern's digits are 0.5 em and its
# minus sign 0.778 em wide; 18 mu = 1 em): the padding of a vector entry, in mu.
MU = {"\\;": 5, "\\:": 4, "\\,": 3}
DIGIT_MU, MINUS_MU = 9, 14


def entry_widths(entry: str) -> tuple[int, int]:
    """A padded vector entry's widths (mu) before and after its decimal point, its note
    mark and the space that stands for a missing mark (a pair of ``\\:``) left out."""
    entry = re.sub(r"(\\:\\:)+$", "", re.sub(r"\^\{\\mathrm\{[a-z]+\}\}", "", entry))
    before, _, after = entry.partition(".")

    def width(part):
        spaces = sum(MU[s] * part.count(s) for s in MU)
        bare = re.sub(r"\\[;:,]", "", part)
        return spaces + DIGIT_MU * sum(c.isdigit() for c in bare) + MINUS_MU * bare.count("-")
    return width(before), width(after)


def test_vector_entries_align_on_the_point():
    """In every vector column of the seed's chapter (and crane's broken vectors), the
    entries at one position have the same width before the point, so the points line up
    from row to row (and the widths after it match too)."""
    for case in (CASES[0], "crane"):
        text = cli("latex", case)
        for table in latex_tables(text):
            columns = {}
            for row in table:
                for j, cell in enumerate(row):
                    if cell.startswith("$["):
                        # no space between a number and its comma or bracket (the padding that
                        # lines the entries up follows them): back in front for the widths
                        assert not re.search(r"\\[;:,][,\]]", cell), cell
                        cell = re.sub(r"([,\]])((?:\\[;:,])+)", r"\2\1", cell)
                        entries = re.sub(r"\$ ?\$?\\;|\$|^\[|\]$", "", cell.replace("$[", "[").replace("]$", "]"))
                        columns.setdefault(j, []).append([entry_widths(e.strip()) for e in entries.split(",")])
            for vectors in columns.values():
                for i in range(len(vectors[0])):
                    assert len({v[i][0] for v in vectors}) == 1, (case, i, vectors)
                    assert len({v[i][1] for v in vectors}) == 1, (case, i, vectors)
            assert "adjustbox" not in text


def test_ref_prints_the_steps_number(tmp_path):
    """``\\ref{derive:CASE:KEY}`` prints the number of the step's heading ("Step N"), not
    the chapter's: two steps of one chapter (cat-climbed's attention and its MLP, numbered
    by their place in the derivation's list of steps) and a third case's step, in a book that
    \\inputs three fragments (each defining the step counter only if no fragment before did)."""
    keys = [s.key for s in derivation_of("cat-climbed").steps]
    attention, mlp = str(keys.index("attention") + 1), str(keys.index("mlp") + 1)
    parts = {"a": ("cat-climbed", "attention"), "b": ("cat-climbed", "mlp"), "c": ("encoder-post-norm", "residual")}
    headings = {}
    for name, (case, step) in parts.items():
        fragment = cli("latex", case, "--step", step)
        headings[name] = re.findall(r"\\subsection\*\{Step (\d+)\.", fragment)
        (tmp_path / f"{name}.tex").write_text(fragment, encoding="utf-8")
    assert headings["a"] == [attention] and headings["b"] == [mlp]
    book = tmp_path / "book.tex"
    book.write_text("\\documentclass[11pt]{book}\n" + PACKAGES + "\n\\begin{document}\n\\chapter{One}\n"
                    "\\input{a}\n\\input{b}\n\\chapter{Two}\n\\input{c}\n\\newpage\n"
                    "REFS \\ref{derive:cat-climbed:attention} \\ref{derive:cat-climbed:mlp} "
                    "\\ref{derive:encoder-post-norm:residual} \\ref{derive:encoder-post-norm:residual-2} END\n"
                    "\\end{document}\n", encoding="utf-8")
    pdflatex(book)
    assert "undefined" not in pdflatex(book)
    text = subprocess.run([tool("pdftotext"), "book.pdf", "-"], cwd=tmp_path, capture_output=True, text=True,
                          check=True).stdout
    refs = re.search(r"REFS (.*?) END", text, re.S).group(1).split()
    assert refs == [attention, mlp] + headings["c"], (refs, headings["c"])
    assert len(headings["c"]) == 2 and headings["c"][0] != headings["c"][1]


def test_an_entry_of_a_subscripted_weight_is_bracketed():
    """The note of an SGD step's entry of W_Q (encoder-post-norm) names it (W_Q)_{1,1}: the
    entry's subscript does not run into the weight's own (printed W_{Q1,1} before)."""
    text = cli("latex", "encoder-post-norm", "--step", "sgd")
    assert r"(W_{Q})_{1,1}\ \text{after the step}" in text
    assert not re.search(r"W_\{[A-Z0-9]\}\}?_\{", text)


def test_the_loss_step_sets_its_piece_as_typewriter_text(tmp_path):
    """A target piece that reads like a formula (``r*o_o&f``, the seed's ␣roof renamed)
    is typewriter text in the loss step's words and equations and in the after step's
    p(piece) before/after, never math (``r\\cdot o_{o}\\&f``)."""
    case = tmp_path / "rof.toml"
    case.write_text((ROOT / "cases" / "cat-climbed.toml").read_text(encoding="utf-8").replace("␣roof", "r*o_o&f"),
                    encoding="utf-8")
    for step, count in (("loss", 3), ("after", 2)):
        text = cli("latex", str(case), "--step", step)
        assert text.count(r"p(\texttt{r*o\_o\&f})") == count, text
        assert r"r\cdot o" not in text and "o_{o}" not in text


def test_pieces_pdflatex_has_no_glyph_for_compile_in_notes_and_fit(tmp_path):
    """A trial's vocabulary pieces a combining accent, an emoji joined by U+200D, Hebrew and
    Japanese (the seed with ␣dog, ␣wall, ␣sofa, ␣floor replaced): the tables wrote them
    ``[U+0301]``, but a note (e^z of the accented piece, at ids 3) wrote the characters
    themselves inside ``\\texttt`` and pdflatex stopped on them; and the tables' widths
    counted one character where the page prints ``[U+XXXX]`` (8), 201 pt too wide. Every
    character of the chapter is one T1 sets, and it compiles with nothing too wide."""
    text = (Path(__file__).resolve().parent.parent / "cases" / "cat-climbed.toml").read_text(encoding="utf-8")
    for old, new in (("␣dog", "e\u0301"), ("␣wall", "\u200d\U0001F469\u200d\U0001F4BB"), ("␣sofa", "שלום"),
                     ("␣floor", "日本")):
        text = text.replace(f'"{old}"', f'"{new}"', 1)
    case = tmp_path / "pieces.toml"
    case.write_text(text, encoding="utf-8")
    tex = tmp_path / "pieces.tex"
    cli("latex", str(case), "--standalone", "-o", str(tex))
    chapter = tex.read_text(encoding="utf-8")
    assert "$e^{z_{\\texttt{e[U+0301]}}}$: from the printed inputs" in chapter
    assert [ch for ch in chapter if ord(ch) >= 0x250 and ch not in "\u2013\u2014\u2018\u2019\u201c\u201d"] == []
    pdflatex(tex)
