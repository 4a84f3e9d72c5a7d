"""The worked example as one self-contained web page, laid out like the seed 000's.

Numbered steps, each a ``<details>`` that opens in place with its words, tables and
equations (the first is open; ``page.html#step-attention`` opens that step). Each table
sits in a box of its own that scrolls sideways when the table is wider than the text
column (the page itself never does). Printed, every step is open (a print style sheet
shows the content of closed ``<details>``, and a ``beforeprint`` handler opens them for
browsers without ``::details-content``), tables and display math are not clipped, and
vectors wrap between their numbers, never inside one. The math is
written between ``\\(...\\)`` and ``\\[...\\]`` and typeset in the browser by KaTeX, whose
script, style sheet and fonts (as ``data:`` URLs) are inlined from the copy vendored in
``derive/katex`` (MIT licence): the page fetches nothing when it is viewed.

:func:`fragment` gives the same steps without KaTeX, for notebooks (Jupyter typesets the
``\\(...\\)`` math itself).
"""

from __future__ import annotations

import base64
import html
import re
from functools import lru_cache
from pathlib import Path

from .render_doc import DocumentRenderer, StepView, TableView
from .rounding import MINUS

KATEX = Path(__file__).parent / "katex"

STYLE = """
.derive { font-family: Georgia, 'Times New Roman', serif; line-height: 1.5; color: #1d1d1f; max-width: 62rem; }
.derive h1 { font-size: 1.6rem; margin-bottom: .2rem; }
.derive .intro { color: #444; }
.derive details.step { border-top: 1px solid #ccc; padding: .3rem 0; }
.derive details.step > summary { cursor: pointer; font-weight: bold; font-size: 1.1rem; padding: .3rem 0; }
.derive details.step > summary .number { color: #8a3b12; }
.derive .body { padding: 0 0 .6rem 1.2rem; }
.derive .table-scroll { overflow-x: auto; max-width: 100%; }
.derive figure { margin: .8rem 0; }
.derive figcaption { font-weight: bold; margin-bottom: .3rem; }
.derive table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
.derive th, .derive td { padding: .15rem .7rem; text-align: left; white-space: nowrap; }
.derive thead th { border-top: 2px solid #333; border-bottom: 1px solid #333; }
.derive tbody tr:last-child td { border-bottom: 2px solid #333; }
.derive td.number, .derive td.integer { text-align: right; }
.derive sup { line-height: 0; }
.derive td.number sup, .derive td.integer sup { display: inline-block; width: 0; } /* a note mark hangs in the padding: the digits stay aligned */
.derive code { font-family: 'DejaVu Sans Mono', Menlo, monospace; font-size: .92em; background: #f3f1ec; padding: 0 .15em; }
.derive ol.notes { list-style: none; padding-left: 0; font-size: .88rem; color: #333; }
.derive .equations { overflow-x: auto; }
.derive .exact { display: flex; flex-wrap: wrap; gap: .5rem 2.5rem; align-items: baseline; margin: .6rem 0; }
.derive .exact .form { max-width: 100%; overflow-x: auto; overflow-y: hidden; padding: .2rem 0; }
.derive .controls button { font: inherit; font-size: .9rem; }
@media print {
  .derive { max-width: none; }
  .derive .controls { display: none; }
  .derive details.step::details-content { content-visibility: visible; display: block; }
  .derive details.step > summary { list-style: none; break-after: avoid; }
  .derive details.step > summary::-webkit-details-marker { display: none; }
  .derive .table-scroll, .derive .equations, .derive .exact .form { overflow: visible; }
  .derive table { font-size: 9pt; }
  .derive th, .derive td { white-space: normal; padding: .1rem .4rem; }
  .derive td.number, .derive td.integer { white-space: nowrap; }
  .derive tr, .derive figcaption { break-inside: avoid; break-after: auto; }
  .derive figcaption { break-after: avoid; }
}
"""

SCRIPT = r"""
renderMathInElement(document.body, {
  delimiters: [{left: "\\[", right: "\\]", display: true}, {left: "\\(", right: "\\)", display: false}],
  throwOnError: true, strict: "error"
});
function openStep() {
  var step = location.hash && document.getElementById(location.hash.slice(1));
  if (step && step.tagName === "DETAILS") { step.open = true; }
}
window.addEventListener("hashchange", openStep);
var closedForPrint = [];
window.addEventListener("beforeprint", function () {
  closedForPrint = Array.prototype.filter.call(document.querySelectorAll("details.step"), function (s) { return !s.open; });
  closedForPrint.forEach(function (s) { s.open = true; });
});
window.addEventListener("afterprint", function () {
  closedForPrint.forEach(function (s) { s.open = false; });
  closedForPrint = [];
});
openStep();
document.getElementById("open-all").addEventListener("click", function () {
  var steps = document.querySelectorAll("details.step");
  var open = Array.prototype.some.call(steps, function (s) { return !s.open; });
  steps.forEach(function (s) { s.open = open; });
  this.textContent = open ? "Close all steps" : "Open all steps";
});
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%(title)s</title>
<style>%(katex_css)s</style>
<style>%(style)s
body { margin: 2rem auto; padding: 0 1rem; max-width: 64rem; }
</style>
</head>
<body>
%(body)s
<script>%(katex_js)s</script>
<script>%(auto_render)s</script>
<script>%(script)s</script>
</body>
</html>
"""


@lru_cache(maxsize=1)
def katex_css() -> str:
    """KaTeX's style sheet with each font face reduced to its woff2 file, inlined as a
    ``data:`` URL.

    Raises:
        FileNotFoundError: when the vendored KaTeX is incomplete.
    """
    css = (KATEX / "katex.min.css").read_text(encoding="utf-8")

    def inline(match: re.Match) -> str:
        name = re.search(r"fonts/([\w-]+)\.woff2", match.group()).group(1)
        data = base64.b64encode((KATEX / "fonts" / f"{name}.woff2").read_bytes()).decode("ascii")
        return f'src:url(data:font/woff2;base64,{data}) format("woff2")'

    return re.sub(r"src:[^;}]*", inline, css)


def _script(name: str) -> str:
    text = (KATEX / name).read_text(encoding="utf-8")
    if "</script" in text.lower():  # would end the inline script early
        raise ValueError(f"{name} cannot be inlined: it contains </script")
    return text


class HtmlRenderer(DocumentRenderer):
    """The HTML printer of the document view (see :mod:`derive.render_doc`)."""

    output = "html"
    target = "katex"
    minus = MINUS

    def document(self, views: list[StepView], standalone: bool) -> str:
        title, opening = self.heading()
        self.first = views[0].key if views else None
        steps = "\n".join(self.step(v) for v in views)
        if not standalone:
            return f'<style>{STYLE}</style>\n<div class="derive">\n{steps}\n</div>'
        body = (f'<main class="derive">\n<h1>{self.prose(title)}</h1>\n<p class="intro">{self.text(opening)}</p>\n'
                '<p class="controls"><button type="button" id="open-all">Open all steps</button></p>\n'
                + steps + "\n</main>")
        return PAGE % {"title": self.prose(title), "katex_css": katex_css(), "style": STYLE, "body": body,
                       "katex_js": _script("katex.min.js"), "auto_render": _script("auto-render.min.js"),
                       "script": SCRIPT}

    def step_frame(self, view: StepView, body: list[str]) -> str:
        """A ``<details>`` whose summary is the step's number and title (the first step open)."""
        is_open = " open" if view.key == self.first else ""
        return "\n".join([f'<details class="step" id="step-{html.escape(view.anchor)}"{is_open}>',
                          f'<summary><span class="number">Step {view.number}.</span> '
                          f'{self.text(view.words.title)}</summary>', '<div class="body">', *body,
                          "</div>", "</details>"])

    def words_block(self, view: StepView) -> str:
        words = self.words(view)
        return words if view.words.raw or not words else f"<p>{words}</p>"

    def table(self, view: TableView) -> str:
        """A ``<figure>`` with the table's title as caption and its notes below."""
        out = ["<figure>"]
        if view.title:
            out.append(f"<figcaption>{self.label(view.title)}</figcaption>")
        out.append('<div class="table-scroll" tabindex="0">\n<table>\n<thead><tr>' + "".join(f"<th>{self.label(c)}</th>" for c in view.columns)
                   + "</tr></thead>\n<tbody>")
        for row in view.rows:
            out.append("<tr>" + "".join(f'<td class="{k}">{self.cell_text(c)}</td>'
                                        for c, k in zip(row, view.kinds)) + "</tr>")
        out.append("</tbody>\n</table>\n</div>")
        return "\n".join(out + self.annotations(view.notes, view.exact) + ["</figure>"])

    def notes(self, notes) -> str:
        """The notes as a list, each led by its mark."""
        return ('<ol class="notes">' + "".join(f"<li>{self.mark(m)} {self.rich(t)}</li>" for m, t in notes)
                + "</ol>")

    def exact_display(self, forms: list[tuple[str, str]]) -> str:
        """The exact forms as a row of display-style formulas, one box each, that wraps
        as the width allows (three or four to a line on a wide screen, one on a printed
        page) instead of one aligned block as wide as its widest row."""
        boxes = (self.inline_math("\\displaystyle " + name + " = " + form) for name, form in forms)
        return '<div class="exact">' + "".join(f'<span class="form">{box}</span>' for box in boxes) + "</div>"

    def display(self, tex_math: str) -> str:
        """Display math for KaTeX's auto-render."""
        return '<div class="equations">\\[' + html.escape(tex_math, quote=False) + "\\]</div>"

    def prose(self, text: str) -> str:
        return html.escape(text, quote=False)

    def inline_math(self, tex_math: str) -> str:
        return "\\(" + html.escape(tex_math, quote=False) + "\\)"

    def piece(self, piece: str) -> str:
        return f"<code>{html.escape(piece, quote=False)}</code>"

    def mark(self, mark: str) -> str:
        return f"<sup>{mark}</sup>"


def render_html(derivation, fmt, steps=None, **options) -> str:
    """The self-contained page of ``steps`` (default: all) of ``derivation`` under ``fmt``.
    ``options``: ``carry``, ``exact``, ``templates`` (see
    :class:`~derive.render_doc.DocumentRenderer`)."""
    return HtmlRenderer(derivation, fmt, **options).render(steps, standalone=True)


def fragment(derivation, fmt, steps=None, **options) -> str:
    """The steps as an HTML fragment (style included, no KaTeX), for a notebook."""
    return HtmlRenderer(derivation, fmt, **options).render(steps, standalone=False)
