"""`derive markdown` and `derive html`: the numbers are the JSON export's, every formula
renders with KaTeX (npm, under Node, throwOnError and strict), and the page opens in
headless Chromium with no console message, every formula typeset, and a screenshot."""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from documents import (CASES, NUMBER, ROOT, aligned_blocks, check_numbers, cli, derivation_of, json_decimals,
                       katex_failures, katex_ready, markdown_tables, math_in_markdown, tool)
from typer.testing import CliRunner

from derive.cells import Printer
from derive.cli import app
from derive.render_html import katex_css
from derive.render_markdown import FLAVORS, MarkdownRenderer
from derive.rounding import MINUS, Format
from derive.steps import Ref, Vec

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


SKIPPED = ("script", "style", "code", "pre")  # where KaTeX's auto-render looks for no math


class TextAndMath(HTMLParser):
    """The text of a page outside <script>, <style>, <code> and <pre>, and the formulas
    in it, found as KaTeX's auto-render finds them (its default delimiters)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.skip = 0
        self.text = []

    def handle_starttag(self, tag, attrs):
        self.skip += tag in SKIPPED

    def handle_endtag(self, tag):
        self.skip -= tag in SKIPPED

    def handle_data(self, data):
        if not self.skip:
            self.text.append(data)

    def formulas(self) -> list[tuple[str, bool]]:
        text = "".join(self.text)
        return ([(t, True) for t in re.findall(r"\\\[(.*?)\\\]", text, re.S)]
                + [(t, False) for t in re.findall(r"\\\((.*?)\\\)", text, re.S)])


def page_formulas(page: str) -> list[tuple[str, bool]]:
    parser = TextAndMath()
    parser.feed(page)
    return parser.formulas()


def chromium(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess:
    """Headless Chromium on ``url`` with a fresh profile, its console on stderr."""
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    return subprocess.run([tool("chromium"), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr",
                           "--v=0", "--virtual-time-budget=10000", *args, url],
                          capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("case, math, options",
                         [(case, "dollars", ()) for case in CASES]
                         + [(CASES[0], "brackets", ("--places", "4", "--rounding", "half-even"))],
                         ids=CASES + [f"{CASES[0]}, brackets, 4 half-even"])
def test_markdown_numbers_are_the_json_decimals(case, math, options):
    text = cli("markdown", case, "--math", math, *options)
    compared = check_numbers(case, markdown_tables(text), aligned_blocks(text), json_decimals(case, *options))
    assert compared > (100 if case in ("cat-climbed", "woodchuck", "crane") else 20)  # exercises are short


def test_markdown_sections_and_tables():
    text = cli("markdown", CASES[0])
    derivation = derivation_of(CASES[0])
    headings = re.findall(r"^## Step (\d+)\. ", text, re.M)
    assert headings == [str(n) for n in range(1, len(derivation.steps) + 1)]
    for table in markdown_tables(text):
        assert len({len(row) for row in table}) == 1
    assert "| token | `the` | `␣cat` | `␣climb` | `ed` | `␣the` |" in text  # the seed's step 1
    assert "| id | 0 | 2 | 4 | 5 | 1 |" in text


EXACT = ("--exact",)  # the exact forms too: the most formulas, printed by SymPy


@pytest.mark.parametrize("case, math, options",
                         [(case, "dollars", ()) for case in CASES]
                         + [(CASES[0], math, EXACT) for math in ("dollars", "brackets")],
                         ids=CASES + [f"{CASES[0]}, {math}, exact" for math in ("dollars", "brackets")])
def test_every_markdown_formula_renders_with_katex(case, math, options):
    text = cli("markdown", case, "--math", math, *options)
    formulas = math_in_markdown(text, math)
    assert len(formulas) > 10  # the smallest bundled case (raschka-simplified, three steps) has 15
    assert katex_failures(formulas) == []


@pytest.mark.parametrize("case, options", [(case, ()) for case in CASES] + [(CASES[0], EXACT)],
                         ids=CASES + [f"{CASES[0]}, exact"])
def test_every_html_formula_renders_with_katex(case, options):
    page = cli("html", case, *options)
    formulas = page_formulas(page)
    assert len(formulas) > 10  # the smallest bundled case (raschka-simplified) has fewer than 20
    assert katex_failures(formulas) == []


def test_katex_check_catches_a_bad_formula():
    failures = katex_failures([("\\frac{1}{", True), ("\\undefinedcommand", False), ("a_{5}", False)])
    assert [f["tex"] for f in failures] == ["\\frac{1}{", "\\undefinedcommand"]


def test_html_page_in_chromium(tmp_path):
    page = tmp_path / "page.html"
    cli("html", CASES[0], "-o", str(page))
    expected = len(page_formulas(page.read_text(encoding="utf-8")))
    done = chromium(tmp_path, page.as_uri(), "--dump-dom")
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    dom = done.stdout
    assert dom.count('class="katex"') == expected  # every formula typeset by the inlined KaTeX
    assert 'class="katex-error"' not in dom
    steps = derivation_of(CASES[0]).steps
    assert len(re.findall(r'<details class="step"', dom)) == len(steps)
    assert [int(n) for n in re.findall(r'<span class="number">Step (\d+)\.</span>', dom)] == list(range(1, len(steps) + 1))

    shot = tmp_path / "attention.png"
    done = chromium(tmp_path, page.as_uri() + "#step-attention", "--window-size=1200,1600", "--hide-scrollbars",
                    f"--screenshot={shot}")
    assert [line for line in done.stderr.splitlines() if ":CONSOLE" in line] == []
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 30000


def test_html_page_is_self_contained():
    page = cli("html", CASES[0])
    assert len(page) < 2_000_000
    markup = re.sub(r"<script>.*?</script>", "", page, flags=re.S)  # the scripts are inline
    links = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)""", markup)
    assert [link for link in links if not link.startswith(("#", "data:"))] == []
    style = "".join(re.findall(r"<style>(.*?)</style>", page, re.S))
    urls = re.findall(r"url\(([^)]*)\)", style)
    assert len(urls) == 20 and all(u.startswith("data:font/woff2;base64,") for u in urls)
    assert "<script src" not in page and "<link" not in page


def test_vendored_katex_is_the_npm_release():
    katex_ready()
    dist = ROOT / "node_modules" / "katex" / "dist"
    vendored = ROOT / "derive" / "katex"
    pairs = [(dist / "katex.min.js", vendored / "katex.min.js"), (dist / "katex.min.css", vendored / "katex.min.css"),
             (dist / "contrib" / "auto-render.min.js", vendored / "auto-render.min.js"),
             (dist.parent / "LICENSE", vendored / "LICENSE")]
    pairs += [(font, vendored / "fonts" / font.name) for font in sorted((dist / "fonts").glob("*.woff2"))]
    assert len(pairs) == 24
    for npm, ours in pairs:
        assert ours.read_bytes() == npm.read_bytes(), ours.name


def test_html_words_and_tables_are_escaped():
    page = cli("html", CASES[0], "--step", "logits")
    assert "<code>&lt;eot&gt;</code>" in page  # the vocabulary's <eot> piece, as text
    body = page[page.index("<main"):page.index("</main>")]
    assert "<eot>" not in body  # in the notes' formulas too: z_{\texttt{\textless{}eot\textgreater{}}}
    assert "\\(z_{\\texttt{\\textless{}eot\\textgreater{}}}\\)" in body


HOSTILE_CASE = """
name = "<script>alert(1)</script>"
title = "a|b <img src=x onerror=alert(1)>"
[vocab]
pieces = ["a|b", "<img src=x onerror=alert(2)>", "c`d"]
[prompt]
ids = [0, 1, 2]
target = 0
[model]
d_model = 2
heads = 1
E = [[1, 0], [0, 1], [1, 1]]
P = [[0, 0], [0, 0], [0, 0]]
W_U = "tied"
[[blocks]]
W_Q = "I"
W_K = "I"
W_V = "I"
W_O = "I"
W_1 = [[1, 0], [0, 1]]
W_2 = "I"
"""


@pytest.mark.parametrize("flavor", FLAVORS)
def test_markdown_keeps_hostile_pieces_and_names_as_text(tmp_path, flavor):
    """A piece with | keeps its table's columns, and HTML in a piece or a case's name is
    text, when the Markdown of each flavour goes through a CommonMark renderer with GFM
    tables (markdown-it-py, Rich's own Markdown parser); through the flavour's own
    renderer every formula arrives as derive wrote it."""
    from markdown_it import MarkdownIt

    case = tmp_path / "hostile.toml"
    case.write_text(HOSTILE_CASE)
    page = MarkdownIt("commonmark").enable("table").render(cli("markdown", str(case), "--flavor", flavor))
    assert "<script" not in page and "<img" not in page
    tables = re.findall(r"<table>.*?</table>", page, re.S)
    assert len(tables) > 5
    for table in tables:
        rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
        widths = {len(re.findall(r"<t[hd][ >]", row)) for row in rows}
        assert len(widths) == 1, table  # every row as wide as the header: no | split a cell
    assert "<code>a|b</code>" in page  # the piece, whole, as code
    text, meant = flavored(str(case), flavor)  # and through the flavour's own renderer, every formula whole
    math = FLAVORS[flavor][0]
    assert Counter(rendered_formulas(to_html(text, flavor, math), flavor, math)) == meant


@pytest.mark.parametrize("case", [c for c in CASES if c != "crane"])
def test_step_anchors_are_unique(case):
    """A step key that occurs twice (a post-norm block's two residual steps, two blocks'
    norms) gets KEY, KEY-2, ...: the HTML ids and the LaTeX labels of a case are unique."""
    ids = re.findall(r'<details class="step" id="([^"]+)"', cli("html", case))
    labels = re.findall(r"\\label\{(derive:[^}]+)\}", cli("latex", case))
    assert ids and len(ids) == len(set(ids)), ids
    assert labels and len(labels) == len(set(labels)), labels
    if case == "encoder-post-norm":
        assert "step-residual-2" in ids and "derive:encoder-post-norm:residual-2" in labels  # labels name the case


def printed_json_decimals(case: str) -> Counter:
    """How often each of the JSON export's decimals is printed in the case's tables and
    equations (the cells and right sides that stand for a quantity the JSON lists; the
    given E and P, printed short, are left out), minus signs made ASCII."""
    derivation, decimals = derivation_of(case), json_decimals(case)
    printer = Printer(derivation, Format())
    cells = [cell for step in derivation.steps for table in step.tables if not table.short_exact
             for row in printer.rows(table) for cell in row]
    cells += [eq.rhs for step in derivation.steps for eq in step.equations]
    refs = [r for c in cells for r in ([c] if isinstance(c, Ref) else c.refs if isinstance(c, Vec) else [])]
    return Counter(decimals[r].replace("\u2212", "-") for r in refs if r in decimals)


def numbers_of_text(text: str) -> Counter:
    """The numbers written in a text (a PDF's words), minus signs made ASCII."""
    return Counter(NUMBER.findall(text.replace("\u2212", "-")))


@pytest.mark.parametrize("case", ["cat-climbed", "encoder-post-norm"])
def test_html_print_shows_every_step(case, tmp_path):
    """Printed (Chromium's print to PDF), the page shows every step, not only the open
    one: every decimal of the JSON export that the tables and equations hold is in the
    PDF's text as often, whole, and no word runs past the page's right edge."""
    page = tmp_path / "page.html"
    cli("html", case, "-o", str(page))
    pdf = tmp_path / "page.pdf"
    done = chromium(tmp_path, page.as_uri(), "--no-pdf-header-footer", f"--print-to-pdf={pdf}")
    assert pdf.is_file(), done.stderr
    text = subprocess.run([tool("pdftotext"), str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    steps = derivation_of(case).steps
    assert [int(n) for n in re.findall(r"Step (\d+)\.", text)] == list(range(1, len(steps) + 1))
    expected, found = printed_json_decimals(case), numbers_of_text(text)
    assert sum(expected.values()) > 200
    missing = {number: count - found[number] for number, count in expected.items() if found[number] < count}
    assert missing == {}
    bbox = subprocess.run([tool("pdftotext"), "-bbox", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    width = float(re.search(r'<page width="([\d.]+)"', bbox).group(1))
    right = max(float(x) for x in re.findall(r'<word xMin="[\d.]+" yMin="[\d.]+" xMax="([\d.]+)"', bbox))
    assert right <= width - 18  # inside the page, in its right margin at most


def layout_report(tmp_path: Path, page: str, probe: str, window: str) -> dict:
    """Chromium's report on ``page`` (an HTML page's text) laid out in a window of
    ``window`` pixels (``1200,1600``): ``probe``, a script that sets ``report``, runs at the
    end of the page's body, and its report comes back as JSON."""
    path = tmp_path / "probe.html"
    path.write_text(page.replace("</body>", "<script>" + probe + """var out = document.createElement("pre");
out.id = "layout";
out.textContent = JSON.stringify(report);
document.body.appendChild(out);
</script></body>"""), encoding="utf-8")
    done = chromium(tmp_path, path.as_uri(), f"--window-size={window}", "--dump-dom")
    return json.loads(unescape(re.search(r'<pre id="layout">(.*?)</pre>', done.stdout, re.S).group(1)))


LAYOUT_CHECK = """
document.querySelectorAll("details.step").forEach(function (s) { s.open = true; });
var report = {page: document.documentElement.scrollWidth, view: document.documentElement.clientWidth,
              overflowing: [], tables: []};
document.querySelectorAll("main *").forEach(function (el) {
  if (!el.closest(".table-scroll, .equations, .katex") && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1) {
    report.overflowing.push(el.tagName + "." + el.className);
  }
});
var main = document.querySelector("main").getBoundingClientRect();
document.querySelectorAll("main table").forEach(function (table) {
  var box = table.parentElement, heads = table.querySelectorAll("th");
  box.scrollLeft = box.scrollWidth;
  report.tables.push({box: box.className, overflow: getComputedStyle(box).overflowX, table: table.offsetWidth,
                      scroll: box.scrollWidth, client: box.clientWidth, boxRight: box.getBoundingClientRect().right,
                      mainRight: main.right, lastRight: heads[heads.length - 1].getBoundingClientRect().right});
});
"""


def test_html_tables_scroll_inside_their_box(tmp_path):
    """At 1200 px with every step open, nothing but a table's own box is wider than the
    page: each table sits in a box that scrolls sideways (the seed's MLP table, wider
    than the text column, among them), the box ends at the column's edge, and scrolled
    to its end it shows the last column whole. A screenshot of the MLP step is taken."""
    page = tmp_path / "page.html"
    cli("html", CASES[0], "-o", str(page))
    report = layout_report(tmp_path, page.read_text(encoding="utf-8"), LAYOUT_CHECK, "1200,1600")
    assert report["page"] <= report["view"]  # the page itself never scrolls sideways
    assert report["overflowing"] == []
    assert len(report["tables"]) == sum(len(s.tables) for s in derivation_of(CASES[0]).steps)
    wide = [t for t in report["tables"] if t["table"] > t["client"]]
    assert wide, "no table is wider than the column at 1200 px: the test checks nothing"
    for table in report["tables"]:
        assert (table["box"], table["overflow"]) == ("table-scroll", "auto")
        assert table["scroll"] >= table["table"] and table["boxRight"] <= table["mainRight"] + 0.5
        assert table["lastRight"] <= table["boxRight"] + 0.5  # scrolled to the end: the last column whole

    shot = tmp_path / "mlp.png"
    chromium(tmp_path, page.as_uri() + "#step-mlp", "--window-size=1200,1300", f"--screenshot={shot}")
    assert shot.read_bytes().startswith(b"\x89PNG")



PRINT_PROBE = """
document.querySelectorAll("details.step").forEach(function (s) { s.open = true; });
var wider = [];
document.querySelectorAll("main *").forEach(function (el) {
  if (el.closest("svg, .katex-mathml")) return;  // KaTeX's drawn strokes and its hidden MathML
  if (el.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5) {
    wider.push((el.closest(".form, .equations, td, li, p, figcaption") || el).textContent.slice(0, 80));
  }
});
var report = {page: document.documentElement.scrollWidth, view: document.documentElement.clientWidth,
              wider: wider.slice(0, 5)};
"""


@pytest.mark.parametrize("case, options", [(CASES[0], ()), (CASES[0], EXACT), ("encoder-post-norm", EXACT)],
                         ids=[CASES[0], f"{CASES[0]}, exact", "encoder-post-norm, exact"])
def test_html_print_layout_fits_the_page(case, options, tmp_path):
    """Laid out with the print style sheet (applied to the screen here, so the layout can
    be measured) in a 700 px window, narrower than A4's or Letter's text width at
    Chromium's default margins: no table, formula or exact form runs past the edge,
    where a printer would cut it (an aligned block of exact forms was 1160 px wide)."""
    page = cli("html", case, *options)
    assert "@media print" in page
    report = layout_report(tmp_path, page.replace("@media print", "@media all"), PRINT_PROBE, "700,1000")
    assert report["wider"] == [] and report["page"] <= report["view"] < 700


DIGITS_PROBE = """
document.querySelectorAll("details.step").forEach(function (s) { s.open = true; });
var columns = {};  // table and column -> [[right edge of the cell's digits, marked?], ...]
document.querySelectorAll("main table").forEach(function (table, t) {
  table.querySelectorAll("tbody tr").forEach(function (row) {
    Array.prototype.forEach.call(row.cells, function (cell, c) {
      if (!cell.classList.contains("number") || !cell.firstChild || cell.firstChild.nodeType !== 3) { return; }
      var range = document.createRange();
      range.selectNodeContents(cell.firstChild);  // the digits alone, before any note mark
      var key = t + ":" + c;
      (columns[key] = columns[key] || []).push([range.getBoundingClientRect().right, !!cell.querySelector("sup")]);
    });
  });
});
var report = columns;
"""


def test_a_note_mark_leaves_the_digits_aligned(tmp_path):
    """A cell with a note's mark (−0.816 with its a) ends its digits where the column's
    other cells do: the mark hangs in the cell's padding. It was set after the digits,
    which moved them left of the column's other numbers by the mark's width (a trial saw
    u_1's decimal points out of line in the seed's LayerNorm table)."""
    page = cli("html", CASES[0])
    columns = layout_report(tmp_path, page, DIGITS_PROBE, "1200,1600")
    mixed = {key: cells for key, cells in columns.items() if len({marked for _, marked in cells}) == 2}
    assert mixed, "no column mixes marked and unmarked cells: the test checks nothing"
    for key, cells in mixed.items():
        rights = [right for right, _ in cells]
        assert max(rights) - min(rights) < 0.5, (key, cells)


class Recorder(MarkdownRenderer):
    """derive's Markdown renderer, keeping each formula it writes as TeX, before any
    escaping: what the reader is meant to see typeset."""

    def __init__(self, *args, **options):
        super().__init__(*args, **options)
        self.meant = []

    def inline_math(self, tex_math: str) -> str:
        self.meant.append((tex_math, False))
        return super().inline_math(tex_math)

    def display(self, tex_math: str) -> str:
        self.meant.append((tex_math, True))
        return super().display(tex_math)


def flavored(case: str, flavor: str, math: str | None = None, exact: bool = False) -> tuple[str, Counter]:
    """The case's Markdown in ``flavor`` and the formulas derive meant in it (as
    ``derive markdown CASE --flavor FLAVOR`` writes it: the same text is asserted)."""
    renderer = Recorder(derivation_of(case), Format(minus=MINUS), flavor=flavor, math=math, exact=exact)
    text = renderer.render(None, True)
    assert text == cli("markdown", case, "--flavor", flavor, *(["--math", math] if math else []),
                       *(["--exact"] if exact else []))
    return text, Counter(renderer.meant)


def to_html(text: str, flavor: str, math: str) -> str:
    """The Markdown through a real renderer of the flavour: Pandoc (its HTML with MathJax
    delimiters), markdown-it-py in CommonMark mode with GFM tables (a processor that knows
    no math, as KaTeX's auto-render finds its input), or cmark-gfm, GitHub's own
    CommonMark fork, with GitHub's extensions (GitHub typesets what it marks as math)."""
    if flavor == "pandoc":
        reader = "markdown" + ("+tex_math_single_backslash" if math == "brackets" else "")
        return subprocess.run([tool("pandoc"), "-f", reader, "-t", "html", "--mathjax", "--wrap=none"], input=text,
                              capture_output=True, text=True, check=True).stdout
    if flavor == "katex":
        from markdown_it import MarkdownIt

        return MarkdownIt("commonmark").enable("table").render(text)
    extensions = [a for e in ("table", "strikethrough", "autolink", "tagfilter") for a in ("-e", e)]
    return subprocess.run([tool("cmark-gfm"), *extensions, "--unsafe", "--github-pre-lang", "-t", "html"],
                          input=text, capture_output=True, text=True, check=True).stdout


class Cells(HTMLParser):
    """The text of each body row's cells of every table of an HTML page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self.cell, self.body = [], None, False

    def handle_starttag(self, tag, attrs):
        if tag == "tbody":
            self.tables.append([])
            self.body = True
        elif tag == "tr" and self.body:
            self.tables[-1].append([])
        elif tag == "td" and self.body:
            self.cell = []

    def handle_endtag(self, tag):
        self.body = self.body and tag != "tbody"
        if tag == "td" and self.cell is not None:
            self.tables[-1][-1].append("".join(self.cell).strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)

    @classmethod
    def tables_of(cls, page: str) -> list[list[list[str]]]:
        parser = cls()
        parser.feed(page)
        return parser.tables


def rendered_formulas(page: str, flavor: str, math: str) -> list[tuple[str, bool]]:
    """The formulas the renderer's HTML hands to the math typesetter, in order: GitHub's
    ``$<code>...</code>$`` and ``<pre lang="math">`` blocks; otherwise what KaTeX's
    auto-render (or MathJax, for Pandoc's ``\\(...\\)``) finds in the text, with ``$`` and
    ``$$`` for the katex flavour's dollars."""
    if flavor == "github":
        found = re.finditer(r'\$<code>(.*?)</code>\$|<pre lang="math"><code>(.*?)</code></pre>', page, re.S)
        return [(unescape(m.group(1) or m.group(2)).strip(), m.group(1) is None) for m in found]
    parser = TextAndMath()
    parser.feed(page)
    text = "".join(parser.text)
    pattern = r"\$\$(.*?)\$\$|\$(.*?)\$" if (flavor, math) == ("katex", "dollars") else r"\\\[(.*?)\\\]|\\\((.*?)\\\)"
    return [((m.group(1) if m.group(1) is not None else m.group(2)).strip(), m.group(1) is not None)
            for m in re.finditer(pattern, text, re.S)]


def default_math(flavor: str, math: str | None) -> str:
    return math or FLAVORS[flavor][0]


RENDERED = [(case, flavor, None) for case in CASES if case != "crane" for flavor in FLAVORS]
RENDERED += [(CASES[0], "pandoc", "brackets"), (CASES[0], "katex", "dollars")]


@pytest.mark.parametrize("case, flavor, math", RENDERED, ids=[f"{c}, {f}, {m or 'default'}" for c, f, m in RENDERED])
def test_markdown_flavor_survives_its_renderer(case, flavor, math):
    """Through a real renderer of its flavour every formula reaches the typesetter as
    derive wrote it (the TeX before any escaping, \\\\ of aligned included), KaTeX
    typesets them all, and every number of the tables and equations is the JSON's."""
    text, meant = flavored(case, flavor, math)
    page = to_html(text, flavor, default_math(flavor, math))
    formulas = rendered_formulas(page, flavor, default_math(flavor, math))
    assert Counter(formulas) == meant
    assert katex_failures(formulas) == []
    equations = aligned_blocks("\n\n".join(t for t, display in formulas if display))
    compared = check_numbers(case, Cells.tables_of(page), equations, json_decimals(case))
    assert compared > (100 if case in ("cat-climbed", "woodchuck") else 20)


@pytest.mark.parametrize("flavor", FLAVORS)
def test_markdown_flavor_survives_its_renderer_with_exact_forms(flavor):
    text, meant = flavored(CASES[0], flavor, exact=True)
    formulas = rendered_formulas(to_html(text, flavor, FLAVORS[flavor][0]), flavor, FLAVORS[flavor][0])
    assert Counter(formulas) == meant and len(formulas) > 400
    assert katex_failures(formulas) == []


def test_plain_markdown_eats_unescaped_tex():
    """The check above can fail: Pandoc's Markdown (the TeX as it is) through a processor
    that knows no math loses a backslash of every \\\\ (the issue's aligned blocks), and
    the katex flavour keeps it."""
    text, meant = flavored(CASES[0], "pandoc")
    formulas = rendered_formulas(to_html(text, "katex", "dollars"), "katex", "dollars")
    aligned = [t for t, display in formulas if display and "aligned" in t]
    assert Counter(formulas) != meant
    assert aligned and not any("\\\\" in t for t in aligned)  # every \\ became \


def test_katex_flavor_in_chromium_auto_render(tmp_path):
    """The katex flavour through markdown-it-py and KaTeX's auto-render with its default
    options (no single $), in headless Chromium: every formula typeset, none an error."""
    text, meant = flavored(CASES[0], "katex")
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark").enable("table").render(text)
    katex = ROOT / "derive" / "katex"
    page = tmp_path / "page.html"
    page.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{katex_css()}</style></head><body>"
                    f"{body}<script>{(katex / 'katex.min.js').read_text()}</script>"
                    f"<script>{(katex / 'auto-render.min.js').read_text()}</script>"
                    "<script>renderMathInElement(document.body, {throwOnError: true, strict: 'error'});</script>"
                    "</body></html>", encoding="utf-8")
    done = chromium(tmp_path, page.as_uri(), "--dump-dom")
    assert [line for line in done.stderr.splitlines() if ":CONSOLE" in line] == []
    assert done.stdout.count('class="katex"') == sum(meant.values()) > 300
    assert 'class="katex-error"' not in done.stdout


def test_markdown_flavor_and_math_options():
    """--flavor github takes dollars only; each flavour's default delimiters."""
    result = CliRunner().invoke(app, ["markdown", CASES[0], "--flavor", "github", "--math", "brackets"])
    assert result.exit_code == 2 and "dollars only" in result.output
    assert "\\\\(E\\\\)" in cli("markdown", CASES[0], "--flavor", "katex", "--step", "embedding")
    assert "$`E`$" in cli("markdown", CASES[0], "--flavor", "github", "--step", "embedding")
    assert "\n```math\n\\begin{aligned}\n" in cli("markdown", CASES[0], "--flavor", "github", "--step", "layernorm")
    with pytest.raises(ValueError, match="dollars, not brackets|dollars only|between dollars"):
        MarkdownRenderer(derivation_of(CASES[0]), Format(), flavor="github", math="brackets")
    with pytest.raises(ValueError, match="unknown Markdown flavour"):
        MarkdownRenderer(derivation_of(CASES[0]), Format(), flavor="mathjax")


@pytest.mark.parametrize("piece", ["`x`", "a``b", "`", "x`", " ` "])
def test_a_piece_with_backticks_is_a_code_span_cmark_gfm_keeps(piece):
    """A piece containing backticks, as --flavor github writes it, is one code span
    whose text cmark-gfm (GitHub's CommonMark) gives back whole, backticks and all."""
    renderer = MarkdownRenderer(derivation_of(CASES[0]), Format(), flavor="github")
    html = to_html(f"see {renderer.piece(piece)} here\n", "github", "dollars")
    assert re.findall(r"<code>(.*?)</code>", html) == [piece], html


@pytest.mark.parametrize("output", ["markdown", "html"])
def test_the_loss_step_sets_its_piece_as_typewriter_text(output, tmp_path):
    """A target piece that reads like a formula (``r*o_o&f``, the seed's ␣roof renamed)
    is \\texttt in the loss step's words and equations, never math (``r\\cdot o_{o}``)."""
    case = tmp_path / "rof.toml"
    case.write_text((ROOT / "cases" / "cat-climbed.toml").read_text(encoding="utf-8").replace("␣roof", "r*o_o&f"),
                    encoding="utf-8")
    text = cli(output, str(case), "--step", "loss")
    assert len(re.findall(r"p\(\\texttt\{r\*o\\_o\\&(?:amp;)?f\}\)", text)) == 3, text
    assert r"r\cdot o" not in text and "o_{o}" not in text


def test_heads_with_different_score_scales_are_written_per_head():
    """crane's heads scale their scores differently (by sqrt(d_k): heads 1 and 2 have
    d_k = 8, the hand-set head 3 has d_k = 1, cases/crane.toml): the step says which
    head uses which, each formula whole in its math (it wrote "q_i . k_j / sqrt(1 or 8)",
    whose Markdown closed the math after sqrt(1) and left "or 8)" in the prose)."""
    result = CliRunner().invoke(app, ["markdown", "crane", "--step", "attention"])
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.output.splitlines() if "s_{i,j} = q" in line]
    assert "$s_{i,j} = q_{i} \\cdot k_{j} / \\sqrt{8}$ in heads 1 and 2; $s_{i,j} = q_{i} \\cdot k_{j}$ in head 3" \
        in line, line
    prose = re.sub(r"\$[^$]*\$", "", line)
    assert prose.count("(") == prose.count(")") and " or " not in prose, line
