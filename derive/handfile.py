"""Reading a hand computation, or a chapter derive wrote: the lines ``derive check`` accepts.

A file mixes, one per line or block:

- named lines in the chapter's notation: ``u_5 = [-0.577, -0.577, -0.577, 1.732]``,
  ``p(␣roof) = 0.395``, ``L = -ln 0.395 = 0.928`` (the last side gives the value), in plain
  text, Unicode or LaTeX (``\\mu'_{5} = -0.092``);
- free arithmetic: ``1.732*-0.816 + -0.577*1.633 = -2.357``, ``e^{2.400} = 11.023``;
- tables: Markdown pipe tables and LaTeX ``tabular`` rows (``&`` and ``\\\\``; booktabs
  rules, ``\\multicolumn``, footnote marks): the key columns (``token``, ``id``, ``row``,
  ``j``) name the row, each other header names the quantity (``z``, ``e^z``, ``p``,
  ``s_{5,j}``, ``q_5 · k_j``, ``u_1``, ``mu``, ``sigma``, ``Q head 1``, ``x_t``,
  ``∂L/∂E_i``); the table's title (``Head 1, row 5``, ``LayerNorm before the MLP, block 1``)
  is kept with it;
- displays: ``$$...$$`` and ``\\[...\\]``, with ``aligned`` rows (several ``name &= value``
  pairs may share a row) and ``\\quad``-separated equations;
- each Markdown flavour derive writes: GitHub's ``$`...`$`` and ````` ```math ````` blocks, and
  a page escaped for KaTeX's auto-render (``\\\\(u\\_{5}\\\\)``), read as its HTML holds the
  math (:func:`as_written`);
- notes under tables (``<sup>a</sup> ...``, ``\\textsuperscript{a}\\,...``): a reader's
  calculation from the printed inputs;
- prose with inline math (``$\\varepsilon = 1\\mathrm{e}{-05}$``): a value given in an
  inline formula is a claim, and so is arithmetic there (``$2 \\cdot 3 = 7$``, judged as
  in a display); a sentence's ``NAME = NUMBER`` outside math (``The loss is L = 0.929.``)
  is a claim the checker judges when it knows the name (:func:`sentence_claims`); the rest
  is prose and is skipped;
- several equations on one line (``sigma_5 = 0.866, mu_5 = 0``), read apart as well as
  whole (:func:`_assignments`): the checker judges them apart when it knows each name;
- context lines that choose the head or block of what follows: ``Head 1``, ``# head 2``,
  ``block 2`` (or write the head in the name: ``a_{5,3}^{(1)}``); a heading starts afresh.

The math in every form is read by :mod:`derive.mathread` (one grammar); this module only
finds where the formulas, cells and notes are. :func:`parse` gives :class:`Entry` objects.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache

from . import mathread
from .decimals import UNDECIDED
from .errors import DeriveError
from .mathread import Chain, Neg, Num, Vec
from .printing import quoted
from .steps import OMITTED, PART_LINE, column_group_read

MINUS = "\u2212"
MAX_SOURCE = 300  # characters of a line repeated in each of its entries (one line of 20,000 equations)
MAX_PLACES = 100  # a value written with more places is not checked: `derive run` prints 50 places, or 50
# significant figures (a weight of 0.0106... then has 51 places; one of 1e-50, 100)

# a masked score's value, -inf (the mask writes it before the softmax): -inf, −∞, -\infty, - \infty;
# an infinity without its minus (+inf, inf, ∞, \infty) is read too, for the checker to say it is wrong
MINUS_INF, PLUS_INF = "-inf", "+inf"
INFINITY = re.compile(r"^(?P<name>[^=]+)=\s*(?:(?P<sign>[-\u2212+])\s*)?(?:\\infty|\u221e|(?i:inf(?:inity)?))"
                      r"(?![A-Za-z])\s*(?:[.,;]\s*)?$")  # (one run of spaces at a time: a long line is read in linear time)
# one side of a chain that is an infinity (s_{1,2} = -\infty = -inf: the same value written twice)
INFINITE_SIDE = re.compile(r"\s*(?:(?P<sign>[-\u2212+])\s*)?(?:\\infty|\u221e|(?i:inf(?:inity)?))(?![A-Za-z])"
                           r"\s*(?:[.,;]\s*)?")  # (as INFINITY: one run of spaces at a time)
NUMBER = re.compile(r"[-\u2212]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
VALUE = re.compile(r"^\s*(\[[^\]]*\]|[-\u2212]?\d[\d.eE+-]*)\s*(?:[.,;]\s*)?$")
# LaTeX lines that are the document's structure, not math (``\begin{adjustbox}{max width=...}``)
STRUCTURE = re.compile(r"\\(begin|end|usepackage|documentclass|set[a-z]*|new[a-z]*|renew[a-z]*|def|hypersetup|"
                       r"geometry|sisetup|captionsetup|definecolor|input|include[a-z]*|label|caption|item)(?![A-Za-z])")
BOX = "\u2502\u2503"  # │ ┃: the cell borders of a terminal table
BOX_SPLIT = re.compile("[" + BOX + "]")  # (a row of a terminal table split into its cells)
BOX_LINES = "".join(map(chr, range(0x2500, 0x2580)))  # Unicode's box drawing: a table's borders and rules
SUPERSCRIPT_MARK = re.compile("^[\u00b9\u00b2\u00b3\u2070\u2074-\u2079]+\\s*")  # a note's mark: ¹, ¹², ...
NOTE_LINE = re.compile("^[\u00b9\u00b2\u00b3\u2070\u2074-\u2079]+ [^:]{1,40}:( |$)")  # ¹ u_1[1]: from the ...
MARKS = re.compile("(?<=\\d)[\u00b9\u00b2\u00b3\u2070\u2074-\u2079]+(?=\\s*([,\\]]|$))")  # 0.964¹, in a value
STEP_HEADING = re.compile(r"^Step \d+\.\s")
# "after the step" (or "before the SGD step", "\ \text{after the step}") after a name: its pass
PHASE_WORDS = re.compile(r"(?:\\[ ,;]\s*)?(\\text\{\s*)?\b(after|before)\s+(?:the\s+)?(?:SGD\s+)?step\b\s*(?(1)\})")
MATRIX_OPEN = re.compile(r"\\begin\{([bpvBV]?matrix)\}")
MATRIX_LINES = 1000  # the most lines one matrix may take (a 768-wide row, one entry a line, fits)
MATRIX = re.compile(r"\\begin\{([bpvBV]?matrix)\}((?:(?!\\begin\{\1\}).)*?)\\end\{\1\}")  # (one opening tried once)
RELATION = re.compile(r"=|\u2248|\\(approx|to)(?![A-Za-z])")
PROSE_NUMBER = re.compile(r"(?<![\w.^_{])[-\u2212]?\d+\.\d+(?!\w|\.\d)")
SENTENCE_WORD = re.compile(r"(?<![\\\w])(?!(?:exp|sqrt|sum|tanh|erf|sin|cos|log|GELU)\b)[A-Za-z]{3,}(?![\w(])")
WORDS = re.compile(r"(?<![A-Za-z])[A-Za-z]{2,}\s+[A-Za-z]{2,}\s+[A-Za-z]{2,}")  # three words in a row: a sentence
# (tried only where a word starts: from inside a long run of letters each try read the run to its end again)
# ``Head 1``, ``# head 2``, ``Head 1, with ...``, ``Head 2: a_{5,2} = ...`` (not ``Head 1 looks at ...``)
CONTEXT = re.compile(r"^[#\s*]*(head|block)\s+(\d+)(?=\s*$|\s*[:,.;(]|\s*\*)", re.IGNORECASE)
TITLE_CONTEXT = re.compile(r"\b(head|block|row)\s+(\d+)\b", re.IGNORECASE)
KEY_WORDS = {"token", "id", "row", "j", "i", "t", "position", "pos", "i\\backslashj", "i\\j", "i/j"}
# text-mode LaTeX in notes and cells, as plain text
TEXT_MODE = [("\\textperiodcentered\\allowbreak{}", "\u00b7"), ("\\textperiodcentered{}", "\u00b7"),
             ("\\textperiodcentered", "\u00b7"), ("\\allowbreak{}", ""), ("\\ldots{}", "\u2026"),
             ("\\ldots", "\u2026"), ("\\textasciicircum{}", "^"), ("\\textvisiblespace{}", "\u2423"),
             ("\\textless{}", "<"), ("\\textgreater{}", ">"), ("\\textbackslash{}", "\\"),
             ("\\_", "_"), ("\\{", "{"), ("\\}", "}"), ("\\&", "&"), ("\\%", "%"), ("\\#", "#"),
             ("\\par", ""), ("\\,", " "), ("~", " ")]


@dataclass
class Table:
    """A table of a file: its title (the bold line above it, ``""`` when none), its header
    cells, its data rows (cells as text, marks removed) and how many leading columns are
    keys (token, id, row) rather than quantities."""

    title: str
    header: list[str]
    rows: list[list[str]]
    keys: int
    # where each data row and column stands in the whole table (0-based): a part of a table
    # (derive's LaTeX comment :data:`~derive.steps.PART_LINE`) starts further down or holds
    # some of its columns; a gap row (``… 35 rows omitted``) skips rows. None: as written.
    origin_rows: list[int] | None = None
    origin_columns: list[int] | None = None
    # what the checker works out once per table rather than once per cell (the pieces of a key
    # column, the prompt positions of its tokens: :mod:`derive.tablenames`)
    memo: dict = field(default_factory=dict, repr=False, compare=False)

    def row_at(self, r: int) -> int:
        """Data row ``r``'s place (0-based) in the whole table."""
        return self.origin_rows[r] if self.origin_rows is not None else r

    def column_at(self, c: int) -> int:
        """Column ``c``'s place (0-based) in the whole table."""
        return self.origin_columns[c] if self.origin_columns is not None else c


@dataclass
class Cell:
    """Where a table entry stands: ``table``, its data row (0-based) and column (0-based)."""

    table: Table
    row: int
    column: int


@dataclass
class Entry:
    """One thing to check.

    Attributes:
        line: 1-based line number in the file; source: that line's text (a line longer than
            MAX_SOURCE characters is given by the entry's own part, cut at MAX_SOURCE).
        name: the quantity's name (None for free arithmetic); expr: the arithmetic's
            left-hand side as written (None for a named value).
        values: the written values (several for a vector), as written (ASCII minus).
        head, block: the context in force (None when not given).
        error: a message when the line could not be read (nothing else is set).
        node: the parsed name or arithmetic (:mod:`derive.mathread`).
        exact: the written exact value (an expression without names), for ``name = -1/2``.
        cell: the table cell, for a table entry.
        kind: ``value`` (a named value), ``arithmetic``, ``cell``, ``note``, ``inline``
            (a value in an inline formula of prose: an unknown name there is prose), or
            ``prose`` (a sentence's numbers, listed as not checked).
        phase: ``after`` for a quantity of the pass after the SGD step (``L after``).
        note: the text of a note (plain), for ``kind == "note"``.
        section: the heading the entry stands under (``## Step 8. LayerNorm before the MLP``),
            "" before the first; it says which norm a sentence's eps belongs to.
        skip: why the entry is not checked (a value beyond the bounds of a hand computation,
            prose), None when it is.
        links: the ``a = b`` steps of the chain after its name where both sides are written
            numbers (``L = 0.5 = 0.928``: ("0.5", "=", "0.928")), which must agree to the
            shorter one's places.
        formula: the inline formula the entry was read from (``2 \\cdot 3 = 7`` of a sentence's
            ``$2 \\cdot 3 = 7$``), None for any other entry; its messages quote it.
        steps: the ``expression = number`` steps of the chain after its first side where the
            expression is arithmetic without names (``L = -ln(0.395) = 0.929``: (the read
            ``-ln(0.395)``, "0.929", "=")), each judged as an arithmetic line of its own.
        parts: the equations of a line that writes several, one after another
            (``sigma_5 = 0.866, mu_5 = 0``, ``... and mu_5 = 0``, ``...; mu_5 = 0``), read
            apart (:func:`_assignments`); the checker judges them instead of the whole line
            when each names what derive knows. Empty for a line of one equation.
        claims: the ``NAME = NUMBER`` claims of a sentence (:class:`SentenceClaim`,
            :func:`sentence_claims`), for a prose entry or a line whose left side has words
            before its name (``Also L = 0.929``); the checker judges those whose name it
            knows (a prose entry with no decimal number, ``values`` empty, is then only their
            carrier: nothing is listed for it when none is known).
        outside_math: for the prose carrier of a line whose inline formulas are entries of
            their own (``We get $z_1 = 0.5$ and so L = 0.928.``): only the numbers outside
            its math are its to list as not checked.
        working: the ``expression = number`` steps of the chain whose expression writes
            numbers and names (``sqrt(mu_5 + 0.75)``, ``foo(0.395)``): the checker says when
            it cannot read one (an unknown function or name), as it judges :attr:`steps`.
    """

    line: int
    source: str
    name: str | None = None
    expr: str | None = None
    values: list[str] = field(default_factory=list)
    head: int | None = None
    block: int | None = None
    error: str | None = None
    node: object = None
    exact: object = None
    cell: Cell | None = None
    kind: str = "value"
    phase: str = "before"
    note: str | None = None
    section: str = ""
    skip: str | None = None
    links: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    formula: str | None = None
    parts: list = field(default_factory=list)
    claims: list = field(default_factory=list)
    outside_math: bool = False
    working: list = field(default_factory=list)


@dataclass
class SentenceClaim:
    """A ``NAME = NUMBER`` a sentence states (``The loss is L = 0.929.``): ``span``, where
    the number stands in the sentence (as :func:`prose_entry` reads it: it is not listed
    among the sentence's unchecked numbers once the claim is judged), and ``readings``: an
    entry for each run of words right before the ``=`` that reads as a name, the longest
    first (at most :data:`CLAIM_WORDS` words: ``E_{2,1} after``, ``L``, not ``is L``)."""

    span: tuple[int, int]
    readings: list[Entry]


def clean_latex(text: str) -> str:
    """Plain text from text-mode LaTeX (``s\\_\\{5,2\\}`` -> ``s_{5,2}``, ``\\ldots{}`` -> ``…``)."""
    for latex, plain in TEXT_MODE:
        text = text.replace(latex, plain)
    return text


def split_values(text: str) -> list[str] | None:
    """The numbers of a written value (``0.395`` or ``[a, b, c]``), or None if it is not one
    (each number must be whole: ``0.3.95`` or ``.395`` is not a number)."""
    if not VALUE.match(text):
        return None
    body = text.strip().rstrip(".,;").strip()
    if body.startswith("["):
        body = body[1:-1] if body.endswith("]") else None
    if body is None:
        return None
    numbers = [n.strip() for n in body.split(",")]
    if not all(re.fullmatch(NUMBER.pattern, n) for n in numbers):
        return None
    return [n.replace("\u2212", "-") for n in numbers] or None


@lru_cache(maxsize=1 << 16)
def decimal_places(number: str) -> int | None:
    """The places a written number is given to (``0.395`` -> 3, ``9.28e-1`` -> 3, ``928e-3``
    -> 3), or None when it has no digits after the point (``1``, ``11e0``, ``1.5e2``). The
    number is within :func:`derive.mathread.number_limit`'s bounds or None is returned."""
    if mathread.number_limit(number) is not None:
        return None
    mantissa, _, exponent = number.rstrip("\u2026").lower().partition("e")
    if "." not in mantissa:  # (928e-3, 928 × 10^-3: the exponent alone gives the places)
        places = -int(exponent or 0)
        return places if places > 0 else None
    places = len(mantissa.split(".", 1)[1]) - int(exponent or 0)
    return places if places >= 0 else None


def value_limit(number: str, most: int = MAX_PLACES) -> str | None:
    """Why a written value is not checked: beyond a hand computation's bounds
    (:func:`derive.mathread.number_limit`) or written with more than ``most`` places;
    None when it is checked."""
    reason = mathread.number_limit(number)
    if reason is None and (decimal_places(number) or 0) > most:
        reason = f"{number[:12]}... is written with {decimal_places(number)} places (derive judges at most {most})"
    return reason


def value_texts(node) -> list[str] | None:
    """The written numbers of a value side (a number or a vector of numbers; footnote
    marks dropped, cut digits kept with their ``…``), or None when it is not a value."""
    items = node.items if isinstance(node, Vec) else (node,)
    out = []
    for item in items:
        negative = isinstance(item, Neg)
        if negative:
            item = item.a
        if not isinstance(item, Num):
            return None
        out.append(("-" if negative else "") + item.text + ("\u2026" if item.cut else ""))
    return out or None


def parse(text: str) -> list[Entry]:
    """All entries of a file, in order (see the module docstring). Markdown written for
    another renderer is first read as that renderer's HTML holds it (:func:`as_written`)."""
    return _Reader(as_written(text.lstrip("\ufeff").splitlines())).read()


# Markdown whose TeX is backslash-escaped for KaTeX's auto-render: ``\\(`` ... ``\\)``,
# a display opened by ``\\[``, or a command written ``\\frac`` (an unescaped TeX never has
# two backslashes before a letter: its line break ``\\`` ends a line or stands before a space)
KATEX_ESCAPED = re.compile(r"(?<!\\)\\\\(?:\(|\[\s*$|[A-Za-z])")
LATEX_DOCUMENT = re.compile(r"(?<!\\)\\(documentclass|begin\{(tabular|document)\})")
# a Markdown escape (CommonMark 0.31, 2.4: a backslash before ASCII punctuation) or a code span,
# kept as it is; ``\|`` is kept too: a table row splits at ``|`` but not at ``\|``
MARKDOWN_ESCAPE = re.compile(r"((?<!`)`+(?!`))(?:.+?)(?<!`)\1(?!`)|\\([!-/:-@\[-`{-~])")  # (a code span's fences:
# whole runs of backticks, CommonMark 0.31, 6.1; a run tried as every shorter fence was cubic in its length)
GITHUB_INLINE = re.compile(r"\$`(.+?)`\$")  # GitHub's inline math: $`a_{5}`$


def as_written(lines: list[str]) -> list[str]:
    """The lines of a file with the math as TeX between the delimiters the reader knows:

    - GitHub's math (``$`...`$`` inline, a fenced ````` ```math ````` block) between ``$``
      and ``$$``;
    - a page written for KaTeX's auto-render (derive's ``--flavor katex``: every TeX
      backslash and active character escaped, so that CommonMark gives the TeX back) with
      Markdown's escapes undone, outside code spans, as its HTML holds it.
    Other files are returned as they are."""
    out, fenced = [], False
    for line in lines:
        stripped = line.strip()
        if not fenced and stripped == "```math" or fenced and stripped == "```":
            out.append("$$")
            fenced = not fenced
            continue
        if "$`" in line:  # (up to the last `$: every opening after it would be tried to the line's end)
            end = line.rfind("`$") + 2
            line = GITHUB_INLINE.sub(lambda m: "$" + m.group(1) + "$", line[:end]) + line[end:]
        out.append(line)
    if any(KATEX_ESCAPED.search(line) for line in out) and not any(LATEX_DOCUMENT.search(line) for line in out):
        out = [MARKDOWN_ESCAPE.sub(lambda m: m.group(0) if m.group(1) or m.group(2) == "|" else m.group(2), line)
               for line in out]
    return out


@lru_cache(maxsize=1 << 10)
def _title_context(title: str) -> dict:
    """``Head 1, row 5`` -> {"head": 1, "row": 5}: the context a table title writes (read
    once per title, not once per cell)."""
    return {m.group(1).lower(): int(m.group(2)) for m in TITLE_CONTEXT.finditer(title)}


def _source(source: str, part: str) -> str:
    """What an entry shows of its line: the line, or when it is long the entry's part."""
    if len(source) <= MAX_SOURCE:
        return source
    part = part.strip()
    return part if len(part) <= MAX_SOURCE else part[:MAX_SOURCE] + "\u2026"


class _Reader:
    """One pass over a file's lines, keeping the context (head, block, table title)."""

    def __init__(self, lines: list[str]):
        self.lines = _matrix_lines(lines)
        self.context: dict = {"head": None, "block": None}
        self.title = ""
        self.section = ""
        self.entries: list[Entry] = []
        self.prose_line = 0  # the number (1-based) of the last line read as prose
        self.width = max(map(len, self.lines), default=0)  # the page's width: its longest line
        self._equations: dict[tuple, Entry] = {}  # an equation read, by its text, line and context (:meth:`equation`)

    @property
    def here(self) -> dict:
        """The head and block in force: a table title's (``Head 1, row 5``) until the next
        title or heading, else the file's context lines'."""
        found = _title_context(self.title)
        return {key: found.get(key, self.context[key]) for key in ("head", "block")}

    def read(self) -> list[Entry]:
        i = 0
        while i < len(self.lines):
            known = len(self.entries)
            i = self.step(i)
            for entry in self.entries[known:]:
                entry.section = self.section
        return self.entries

    def step(self, i: int) -> int:
        """Read what starts at line ``i``; the index of the next line to read."""
        line = self.lines[i]
        stripped = line.strip()
        if not stripped or stripped.startswith("%"):
            return i + 1
        if stripped.startswith("|"):
            j = self._until(i, lambda s: s.startswith("|"))
            self.table([self.lines[k] for k in range(i, j)], i + 1, _markdown_row)
            return j
        if "\t" in line.strip("\r\n "):  # a table copied from a web page: cells between tabs
            j = self._until(i, lambda s: "\t" in s, strip=False)
            self.table([self.lines[k] for k in range(i, j)], i + 1, _tab_row)
            return j
        if stripped.startswith(("\u250f", "\u250c")):  # a box table of the terminal (derive run): ┏ or ┌
            j = self._until(i, lambda s: not s.startswith(("\u2514", "\u2517")))
            self.box_table(i, j)
            return min(j + 1, len(self.lines))
        top = next((k for k in range(i + 1, min(i + 1 + TITLE_LINES, len(self.lines)))
                    if self.lines[k].strip().startswith(("\u250f", "\u250c"))), None)
        if top is not None and _title_start(self.lines, top) <= i:
            return i + 1  # (a line of) the title of a terminal table, read with it
        if NOTE_LINE.match(stripped) and self.entries:
            j, body = i + 1, stripped  # a terminal note, "¹ u_1[1]: ...", folded onto lines until its "."
            while not body.endswith(".") and j < len(self.lines) and self.lines[j].strip():
                # (a number wider than the page is cut into lines of its width: its pieces join without a space)
                folded = len(self.lines[j - 1].rstrip()) == self.width and " " not in self.lines[j - 1].strip()
                body, j = body + ("" if folded else " ") + self.lines[j].strip(), j + 1
            self.note(SUPERSCRIPT_MARK.sub("", body), i + 1, stripped, latex=False)
            return j
        if STEP_HEADING.match(stripped):  # "Step 4. LayerNorm" (the terminal's and the seed page's headings)
            self.context = {"head": None, "block": None}
            self.title = ""
            self.section = stripped
            return i + 1
        if stripped.startswith("\\begin{tabular}"):
            j = self._through(i, "\\end{tabular}")
            self.latex_table(i, j)
            return j
        if stripped.startswith(("<sup>", "\\textsuperscript{")):
            self.note(stripped, i + 1)
            return i + 1
        for opening, closing in (("$$", "$$"), ("\\[", "\\]")):
            if stripped.startswith(opening):
                return self.display(i, opening, closing)
        if stripped.startswith("\\begin{aligned}") or stripped.startswith("\\begin{align"):
            return self.display(i, "", "\\end{align")
        if stripped.startswith("**") and stripped.endswith("**") or stripped.startswith("\\textbf{"):
            self.title = _title(stripped)
            self.inline(self.title, i + 1, stripped)
            return i + 1
        match = CONTEXT.match(stripped)
        if match:
            self.context[match.group(1).lower()] = int(match.group(2))
            self.title = ""
            rest = stripped[match.end():].lstrip(" ,:;.")  # Head 2: a_{5,2} = 0.999
            if rest:
                self.lines[i] = rest
                self.step(i)
                self.lines[i] = line
                for entry in self.entries:
                    if entry.line == i + 1:
                        entry.source = stripped
            return i + 1
        if stripped.startswith("#") or stripped.startswith(("\\section", "\\subsection", "\\chapter")):
            self.context = {"head": None, "block": None}
            self.title = ""
            self.section = stripped
            return i + 1
        if "$" in stripped or "\\(" in stripped or ("\\[" in stripped and "\\]" in stripped):
            self.inline(stripped, i + 1, stripped)  # (a display inside a sentence too: see _inline_formulas)
            return i + 1
        if stripped.startswith("\\") and (not _has_relation(stripped) or STRUCTURE.match(stripped)):
            return i + 1  # the document's structure: \begin{center}, \usepackage, ...
        end = self._wrapped(i)  # u_5 = (x_5 - mu_5) / sigma_5 = [−0.577, | −0.577, −0.577, 1.732]
        stripped = " ".join(self.lines[k].strip() for k in range(i, end))
        if _has_relation(stripped) and not any(ch.isdigit() for ch in stripped) and _defines_a_name(stripped) \
                and not INFINITY.match(stripped) and RELATION.split(stripped)[-1].strip():
            # a definition without numbers (L = -ln p(␣roof), in nats.): no claim (L = -inf is one; L = with
            # nothing after it is a line left unfinished, read as an equation: unreadable)
            return end
        if _has_relation(stripped):
            stripped = _unmarked(stripped)
            entries = [self.equation(part, i + 1, stripped, self.here, exact=stripped.startswith("\\"))
                       for part in _split_quads(stripped)]
            known = len(self.entries)
            if not any(map(_readable, entries)) and (_sentence(stripped) or self._in_sentence(i)):
                self.prose(stripped, i + 1)  # a sentence with an = in it (␣climb + ed = 0.94)
                if len(self.entries) == known and CLAIMED_NUMBER.search(stripped) and not WORDS.search(stripped):
                    self.entries += entries  # (read as prose, with no three words in a row, it gave no number
                    # to list, yet it writes `= 3`: said unreadable, not dropped unsaid: `foo bar = = 3 ((` alone
                    # passed the check; a page's sentence, `... with M_{i,j} = 1 (the given mask ...`, is prose)
            else:
                self.entries += entries
            return end
        self.prose(stripped, i + 1)
        return end

    def _wrapped(self, i: int) -> int:
        """The index past the last line of the equation line ``i`` starts (``i + 1`` when it
        ends there): a line whose left side is no sentence (``u_5 = ...``, ``L before =``)
        and that leaves a bracket open or ends with an operator (Rich wrapped it at the
        page's width) goes on over the lines below it, none of them blank, indented, a
        table's or a heading, nor an equation of its own, up to where its brackets close (at
        most :data:`MATRIX_LINES` lines)."""
        text = self.lines[i].strip()
        if not _unfinished(text) or not _has_relation(text) or WORDS.search(RELATION.split(text, 1)[0]):
            return i + 1
        for j in range(i + 1, min(len(self.lines), i + MATRIX_LINES)):
            line = self.lines[j]
            stripped = line.strip()
            if not stripped or line[:1].isspace() or stripped[:1] in BOX_LINES or STEP_HEADING.match(stripped) \
                    or _has_relation(stripped) and _defines_a_name(stripped):
                return i + 1
            text += " " + stripped
            if not _unfinished(text):
                return j + 1
        return i + 1

    def _in_sentence(self, i: int) -> bool:
        """Whether line ``i``, which has words (:data:`SENTENCE_WORD`) but reads as no
        equation, is a piece of a sentence Rich wrapped at the page's width: it continues a
        line of prose that did not end its sentence (with a period or a colon) and does not
        start as an equation (``name = ...``), or it and the lines after it, through the one
        that ends the sentence or the paragraph (at most :data:`SENTENCE_LINES`; none of
        them a readable equation, as ``L = 1``), read as a sentence (:func:`_sentence`)."""
        if not SENTENCE_WORD.search(self.lines[i]):
            return False
        above = self.lines[i - 1].strip() if i > 0 else ""
        equation = _has_relation(self.lines[i]) and _defines_a_name(self.lines[i].strip())
        if self.prose_line == i and above and not above.endswith((".", ":")) and not equation:
            return True
        text = ""
        for j in range(i, min(len(self.lines), i + SENTENCE_LINES)):
            line = self.lines[j]
            stripped = line.strip()
            if not stripped or line[:1].isspace() or stripped[:1] in BOX_LINES or STEP_HEADING.match(stripped) \
                    or j > i and _reads_as_equation(stripped):
                break
            text += " " + stripped
            if stripped.endswith("."):
                break
        return _sentence(text)

    def prose(self, text: str, line: int) -> None:
        """A line of words: its decimal numbers (``0.94`` in ``␣climb + ed = 0.94``) are
        listed as not checked, since derive does not read sentences; the ``NAME = NUMBER``
        claims it states outside its math (:func:`sentence_claims`) go with them, for the
        checker to judge those whose name it knows."""
        self.prose_line = line
        entry = prose_entry(text, line)
        claims = sentence_claims(text, line, self.here)
        if claims:
            entry = entry or Entry(line, text, kind="prose")
            entry.claims = claims
        if entry is not None:
            self.entries.append(entry)

    def equation(self, text: str, line: int, source: str, context: dict, exact: bool = False) -> Entry:
        """:func:`_equation` of one equation of a line, with the ways the checker may read
        it apart: the equations of a line that writes several (``parts``: :func:`_assignments`)
        and, when its left side is several words (``Also L = 0.929``, ``Then sigma = 0.866
        and mu = 0``), the claims of a sentence (``claims``: :func:`sentence_claims`)."""
        if len(_left_side(text).split()) > 1:
            entry = _equation_and_parts(text, line, source, context, exact)
            entry.claims = sentence_claims(text, line, context)
            return entry
        # (an equation repeated with the same context reads as before: a copy on its own line)
        key = (text, source, context["head"], context["block"], exact)
        read = self._equations.get(key)
        if read is None:  # (kept as read: the entry returned is a copy, which the reader may change)
            read = self._equations[key] = _equation_and_parts(text, line, source, context, exact)
        return replace(read, line=line, values=list(read.values), links=list(read.links), steps=list(read.steps),
                       parts=[replace(part, line=line) for part in read.parts], claims=list(read.claims))

    def _until(self, i: int, keep, strip: bool = True) -> int:
        j = i
        while j < len(self.lines) and keep(self.lines[j].strip() if strip else self.lines[j].strip("\r\n ")):
            j += 1
        return j

    def _through(self, i: int, closing: str) -> int:
        j = i
        while j < len(self.lines) and closing not in self.lines[j]:
            j += 1
        return min(j + 1, len(self.lines))

    # ------------------------------------------------------------------ displays
    def display(self, i: int, opening: str, closing: str) -> int:
        """A display: one or more equations, or aligned rows of ``name &= value`` pairs."""
        first = self.lines[i].strip()[len(opening):]
        j, body = i, []
        rest = first
        while True:
            if closing in rest:
                body.append((j, rest.split(closing, 1)[0]))
                break
            body.append((j, rest))
            j += 1
            if j >= len(self.lines):
                break
            rest = self.lines[j]
        rows: list[tuple[int, str]] = []
        for number, text in body:
            text = re.sub(r"\\(begin|end)\{(aligned|align\*?|gathered|split)\}", " ", text)
            for part in text.split("\\\\"):
                if not part.strip():
                    continue
                if rows and CONTINUED_ROW.match(part):  # a long form's further line: `&\quad + ...`
                    rows[-1] = (rows[-1][0], rows[-1][1] + " " + CONTINUED_ROW.sub("", part, count=1))
                elif rows and CONTINUED_CHAIN.match(part):  # the chain of the row above goes on: `&= 2.4905`
                    rows[-1] = (rows[-1][0], rows[-1][1] + " " + CONTINUED_CHAIN.sub("", part, count=1))
                else:
                    rows.append((number, part))
        for number, row in rows:
            for equation in _pairs(row):
                for part in _split_quads(equation):
                    if not any(ch.isdigit() for ch in part):
                        continue  # a formula without numbers (E_{i,c} <- E_{i,c} - eta dL/dE_{i,c}): no claim
                    if split_values(part) is not None and not _has_relation(part):
                        self.entries.append(Entry(number + 1, self.lines[number].strip(), values=split_values(part),
                                                  kind="prose", skip="a value without a name"))
                        continue
                    if part.strip():
                        self.entries.append(self.equation(part, number + 1, self.lines[number].strip(), self.here,
                                                          exact=True))
        return j + 1

    # ------------------------------------------------------------------ inline math
    def inline(self, text: str, line: int, source: str) -> None:
        """The values claimed in the inline formulas of a line of prose; its numbers are
        listed as prose when no formula claims a value, else the ``NAME = NUMBER`` claims
        its plain text states beside them (:func:`sentence_claims`: ``and so L = 0.928``
        after ``$z_1 = 0.5$``) are judged as a sentence's are."""
        known = len(self.entries)
        self._inline(text, line, source)
        if len(self.entries) == known:
            self.prose(source, line)
            return
        claims = sentence_claims(source, line, self.here)
        if claims:
            self.entries.append(Entry(line, source, kind="prose", claims=claims, outside_math=True))

    def _inline(self, text: str, line: int, source: str) -> None:
        """The claims of a line's inline formulas: each formula cut at ``\\quad`` and
        ``\\text{ and }`` (:func:`_split_quads`) and, as plain text is, at a comma, a semicolon
        or ``and`` before another equation of a name (:func:`_assignments`:
        ``$\\mu_5 = 0, \\sigma_5 = 0.866$`` is two claims)."""
        for formula in [one for whole in _inline_formulas(text) for part in _split_quads(whole)
                        for one in _assignments(part)]:
            infinite = INFINITY.match(formula.strip())
            entry = None if infinite is None else _infinity(infinite.group("name"), _infinity_value(infinite), formula,
                                                               line, source, self.here)
            if entry is not None:  # ($s_{1,2} = -\infty$: a masked score's value, as on a line of its own)
                entry.kind, entry.formula = "inline", formula
                self.entries.append(entry)
                continue
            try:
                chain = mathread.read(formula)
            except DeriveError:
                # ($\mu_5 = 0, 1$: numbers given a name that no value reads, said so; a formula is not judged)
                relation = RELATION.search(formula)
                if relation and _is_name(formula[:relation.start()]) \
                        and NUMBERS_ONLY.fullmatch(formula[relation.end():]):
                    entry = _equation(formula, line, source, self.here, exact=True)
                    entry.kind, entry.formula = "inline", formula
                    self.entries.append(entry)
                elif relation and _is_name(formula[:relation.start()]) and not formula[relation.end():].strip() \
                        and source.strip().strip("$").strip() == formula.strip():
                    # ($L = $ on a line of its own: nothing after the =, said so; in a sentence, the value
                    # may follow the math: $\partial L / \partial z =$ (p - y) / T)
                    entry = _unread(formula, line, source, self.here)
                    entry.kind, entry.formula = "inline", formula
                    self.entries.append(entry)
                continue
            if len(chain.exprs) < 2:
                continue
            if not mathread.is_name(chain.exprs[0]):
                if _claims_arithmetic(chain):  # $2 \cdot 3 = 7$: judged as in a display
                    entry = _from_chain(chain, formula, line, source, self.here, exact=True)
                    entry.formula = formula
                    self.entries.append(entry)
                continue
            last = chain.exprs[-1]
            if value_texts(last) is None and (mathread.names(last) or not mathread.numbers(last)):
                continue  # a formula (s_{i,j} = q_i . k_j / sqrt(2)), not a value
            entry = _from_chain(chain, formula, line, source, self.here, exact=True)
            entry.kind, entry.formula = "inline", formula
            self.entries.append(entry)

    # ------------------------------------------------------------------ notes
    def box_table(self, i: int, j: int) -> None:
        """A terminal table (rich's box characters) from its top border, line ``i``, to its
        bottom one, ``j``: the ``┃`` lines are the header, the ``│`` lines the data, a cell
        wrapped over several lines one cell (:func:`_box_rows`); the lines above it are its
        title (:func:`_title_start`). A column group of a table wider than the page (its
        title ends ``(columns 2-9 of 12)``, data columns) places its cells in the whole table."""
        written = " ".join(self.lines[k].strip() for k in range(_title_start(self.lines, i), i))
        title, group = column_group_read(written)
        if (title or group) and _title_like(title):
            self.title = title
        rows, numbers = _box_rows(self.lines, i, j)
        columns = None
        if group is not None and rows:  # the columns naming the row first (repeated in every group), then the data's
            lead = len(_box_row(rows[0])) - (group[1] - group[0] + 1)
            columns = list(range(lead)) + list(range(lead + group[0] - 1, lead + group[1])) if lead >= 1 else None
        if len(rows) > 1 and _box_row(rows[1])[:1] == [""]:  # Rich narrowed the key column to nothing
            self.entries.append(Entry(numbers[1], rows[1][:MAX_SOURCE], kind="prose", skip=(
                "the table's rows have no key: the page was too narrow to print its first column, so its "
                "cells cannot be placed (derive run --width gives a wider page)")))
            return
        self.table(rows, None, _box_row, numbers, columns=columns)

    def note(self, text: str, line: int, source: str | None = None, latex: bool = True) -> None:
        """A note under a table: a reader's calculation from the printed inputs (in
        LaTeX or Markdown, or with ``latex=False`` the terminal's plain text, where ``~``
        marks a rotated q~ or k~, not a space)."""
        body = re.sub(r"^(<sup>[^<]*</sup>|\\textsuperscript\{[^{}]*\})\s*(\\,)?", "", text)
        body = re.sub(r"(?<!\\)\$|\\\(|\\\)", "", body)  # a note's formulas are math: read as written
        body = _markdown_text(clean_latex(body)).strip() if latex else body.strip()
        self.entries.append(Entry(line, source or text, kind="note", note=body, head=self.here["head"],
                                  block=self.here["block"]))

    # ------------------------------------------------------------------ tables
    def latex_table(self, i: int, j: int) -> None:
        """A LaTeX tabular: rows end with ``\\\\``, cells split at ``&``; rules are skipped."""
        rows, text, first = [], "", None
        for k in range(i + 1, j):
            stripped = self.lines[k].strip()
            if stripped.startswith("\\end{tabular}"):
                break
            stripped = re.sub(r"\\(toprule|midrule|bottomrule|hline|cmidrule(\([lr]*\))?(\{[^}]*\})?)", "", stripped)
            if not stripped:
                continue
            first = k if first is None else first
            text += " " + stripped
            if text.rstrip().endswith("\\\\"):
                rows.append((first, text.rstrip()[:-2]))
                text, first = "", None
        part = next((PART_LINE.match(self.lines[k].strip()) for k in range(max(i - 3, 0), i)
                     if PART_LINE.match(self.lines[k].strip())), None)
        self.table([r for _, r in rows], None, _latex_row, [n + 1 for n, _ in rows],
                   int(part.group(2)) - 1 if part else 0, [int(k) - 1 for k in part.group(4).split()] if part else None)

    def table(self, rows: list[str], first_line: int | None, split, numbers: list[int] | None = None,
              first_row: int = 0, columns: list[int] | None = None) -> None:
        """One entry per value cell of a table (Markdown, LaTeX or terminal rows). A part of
        a table (derive's comment before a LaTeX part, a terminal table's column group)
        starts at row ``first_row`` (0-based) of the whole table and holds its ``columns``
        (0-based places; None: all, as written)."""
        cells = [split(r) for r in rows]
        numbers = numbers or [first_line + k for k in range(len(rows))]
        data = [(n, r, c) for n, r, c in zip(numbers, rows, cells)][1:]
        data = [(n, r, c) for n, r, c in data if not all(set(x) <= set("-: ") for x in c)]
        if not cells:
            return
        header = cells[0]
        keys = 0
        while keys < len(header) - 1 and _key(header[keys]):
            keys += 1
        # a gap row (… 35 rows omitted) is no data: the rows after it stand that much further down
        origin, at, kept = [], first_row, []
        for n, r, c in data:
            gap = OMITTED.search(c[0]) if len([x for x in c if x.strip()]) == 1 else None
            if gap:
                at += int(gap.group(1))
            else:
                origin.append(at)
                kept.append((n, r, c))
                at += 1
        data = kept
        # a short row is padded with empty cells: every row has every key column
        table = Table(self.title, header, [c + [""] * (len(header) - len(c)) for _, _, c in data], max(keys, 1),
                      origin if origin != list(range(len(origin))) else None,
                      columns if columns is not None and len(columns) == len(header) else None)
        here = self.here
        for r, (number, row, row_cells) in enumerate(data):
            source = row.strip()  # one string shared by the row's entries
            for c in range(table.keys, min(len(header), len(row_cells))):
                if "=" in row_cells[c]:
                    chain = _cell_arithmetic(row_cells[c])
                    if chain is not None:  # arithmetic in a cell (12 × 4 = 48): judged on its own numbers
                        self.entries.append(_from_chain(chain, row_cells[c], number, source, here))
                        continue
                values, reason = _cell_reading(row_cells[c])
                if reason == "":
                    continue  # no number in the cell
                entry = Entry(number, source, head=here["head"], block=here["block"], cell=Cell(table, r, c),
                              kind="cell")
                if values is None:
                    entry.error = reason
                else:
                    entry.values, entry.skip = list(values), reason
                self.entries.append(entry)


NOT_DECIDED = "its last digit is not decided, so it is not checked"


@lru_cache(maxsize=1 << 14)
def _cell_reading(cell: str) -> tuple[tuple[str, ...] | None, str | None]:
    """What a table cell writes, read once per distinct cell text: (its numbers, why they
    are not checked or None), (None, the message) when it is not a value, or (None, "")
    when the cell has no number at all."""
    if not cell or not any(ch.isdigit() for ch in cell):
        return None, ""
    if UNDECIDED in cell:  # (derive's own page: a value whose last digit nothing decided)
        return (), f"the cell holds a value derive printed {UNDECIDED} ({quoted(cell)}): " + NOT_DECIDED
    try:
        values = value_texts(mathread.read(cell).exprs[-1])
    except DeriveError:
        values = None
    if values is None:
        return None, f"cannot read the cell {quoted(cell)}: expected a number or a vector [a, b]"
    return tuple(values), next((r for r in map(value_limit, values) if r is not None), None)


def _cell_arithmetic(cell: str):
    """The read formula of a cell that writes arithmetic (``12 × 4 = 48``: numbers on the
    left of its relation, no names), else None."""
    try:
        chain = mathread.read(cell)
    except DeriveError:
        return None
    return chain if len(chain.exprs) > 1 and not mathread.names(chain.exprs[0]) else None


CONTINUED_ROW = re.compile(r"^\s*&\s*\\q?quad(?![A-Za-z])")  # an aligned row that goes on the row above
CONTINUED_CHAIN = re.compile(r"^\s*&\s*(?==|\\approx(?![A-Za-z])|\\to(?![A-Za-z])|\u2248)")  # a row with no left side: `&= 2.4905`


def _key(header: str) -> bool:
    """A key column (``token``, ``id``, ``row``, ``$j$``, ``$i \\backslash j$``), by its header."""
    word = header.replace("$", "").replace(" ", "").replace("\\(", "").replace("\\)", "").strip("{}")
    return word.lower() in KEY_WORDS or word == ""


def _matrices(line: str) -> str:
    """``\\begin{bmatrix} a & b \\\\ c & d \\end{bmatrix}`` (or pmatrix, matrix) as the vector
    ``[a, b, c, d]`` of its entries, row by row (a matrix on one line)."""
    def vector(match) -> str:
        rows = [r for r in match.group(2).split("\\\\") if r.strip()]
        return "[" + ", ".join(c.strip() for r in rows for c in _split_top(r, "&")) + "]"
    return MATRIX.sub(vector, line)


def _matrix_lines(lines: list[str]) -> list[str]:
    """The lines with each matrix environment written as a vector (:func:`_matrices`); a
    matrix over several lines is joined onto its first line, its other lines left empty
    (so every line keeps its number). An environment that never closes is left as written."""
    lines = list(lines)
    for i, line in enumerate(lines):
        if "matrix}" not in line:
            continue
        opened = MATRIX_OPEN.search(line)
        if opened and f"\\end{{{opened.group(1)}}}" not in line[opened.end():]:
            closing = f"\\end{{{opened.group(1)}}}"
            j = next((k for k in range(i + 1, min(len(lines), i + MATRIX_LINES)) if closing in lines[k]), None)
            if j is not None:
                lines[i] = " ".join(part.strip() for part in lines[i:j + 1])
                lines[i + 1:j + 1] = [""] * (j - i)
        lines[i] = _matrices(lines[i])
    return lines


def _defines_a_name(line: str) -> bool:
    """The left side of ``line``'s first relation is a name (``L = -ln p(␣roof)``)."""
    try:
        node = mathread.read(RELATION.split(line, 1)[0].strip()).exprs[0]
    except DeriveError:
        return False
    try:
        return isinstance(node, (mathread.Sym, mathread.Call, mathread.Deriv)) and mathread.is_name(node)
    except DeriveError:
        return False


def _unmarked(line: str) -> str:
    """An equation without the terminal's note marks on its value (``= 0.928¹``, ``[−1.102, 0.964¹]``)."""
    head, relation, value = line.rpartition("=")
    return head + relation + MARKS.sub("", value) if relation else line


SENTENCE_LINES = 6  # the most lines a sentence read as one is wrapped onto (a step's words at 40 columns: 4)
TITLE_LINES = 3  # the most lines a terminal table's title is wrapped onto (51 characters and a group's words at 40)


def _title_start(lines: list[str], top: int) -> int:
    """The first line of the title above a terminal table whose top border is line ``top``
    (``top`` when the line above is blank or a table's): the line just above it, and when
    that one can be a title (:func:`_title_like`), the lines above it that a title wrapped
    at the page's width continues (up to :data:`TITLE_LINES` in all), each a title with a
    word in it, not indented (a note, an exact form) nor a table's."""
    if top == 0 or not lines[top - 1].strip() or lines[top - 1].strip()[:1] in BOX_LINES:
        return top
    start = top - 1
    while start > 0 and top - start < TITLE_LINES and _title_like(lines[start].strip()):
        line = lines[start - 1]
        stripped = line.strip()
        if not stripped or line[:1].isspace() or stripped[:1] in BOX_LINES or not _title_like(stripped) \
                or not SENTENCE_WORD.search(stripped):
            break
        start -= 1
    return start


def _title_like(text: str) -> bool:
    """Whether a line can be (a piece of) a table's title: neither a "Step N." heading, the
    end of a sentence (the step's words, a note: a period or a colon) nor an equation (a
    relation without three words of a sentence: ``LayerNorm after the MLP, of y = u + m``
    is a title)."""
    return not STEP_HEADING.match(text) and not text.endswith((".", ":")) \
        and not (_has_relation(text) and not WORDS.search(text))


def _box_rows(lines: list[str], top: int, bottom: int) -> tuple[list[str], list[int]]:
    """The rows of the terminal table between its borders, lines ``top`` and ``bottom``
    (its rules skipped), each as one line of cells, and the number (1-based) of each one's
    first line. Rich wraps a long cell (a vector after its commas, a header's words) onto
    the lines below its row: the header's lines (``┃``) are one row, and a data line
    (``│``) continues the row above when its first cell is empty (derive prints no row
    without a key) or a cell above is cut (:func:`_cut`). A cell's pieces are joined by a
    space, or by nothing after a piece that fills its column without a space (the digits
    of a number Rich folded)."""
    rows: list[tuple[str, list[str], list[str]]] = []  # (border, each cell's text, each cell's last piece)
    numbers: list[int] = []
    for k in range(top, bottom):
        stripped = lines[k].strip()
        if not stripped or stripped[0] not in BOX:
            continue
        cells = BOX_SPLIT.split(stripped)[1:-1]
        border = stripped[0]
        last = rows[-1] if rows else None
        if last is None or last[0] != border or len(last[1]) != len(cells) \
                or border != BOX[1] and cells and cells[0].strip() and not any(map(_cut, last[1])):
            rows.append((border, [c.strip() for c in cells], cells))
            numbers.append(k + 1)
            continue
        for c, piece in enumerate(cells):
            text, before = piece.strip(), last[2][c]
            if text:
                folded = len(before.strip()) == len(before) - 2 and " " not in before.strip()
                last[1][c] = last[1][c] + ("" if folded or not last[1][c] else " ") + text
                last[2][c] = piece
    return [border + "".join(f" {c} {border}" for c in cells) for border, cells, _ in rows], numbers


def _cut(cell: str) -> bool:
    """Whether a terminal table's cell goes on on the next line: a vector's bracket or a
    token's code span left open (```␣cl`` folded at a narrow column, ``imb``` below; a
    span fenced by two backticks, ````` ``a`b`` `````, is closed by two)."""
    if cell.count("[") > cell.count("]"):
        return True
    fence = len(cell) - len(cell.lstrip("`"))
    if fence > 1:
        return not (len(cell) > 2 * fence and cell.endswith("`" * fence) and not cell.endswith("`" * (fence + 1)))
    return cell.count("`") % 2 == 1


def _box_row(row: str) -> list[str]:
    """The cells of a terminal table's row (``│ `the` │ 0.000 │ −0.816¹ │``), note marks dropped."""
    return list(_box_cells(row))


@lru_cache(maxsize=1 << 12)
def _box_cells(row: str) -> tuple[str, ...]:
    """:func:`_box_row`, read once per distinct row (a page checked again repeats its tables)."""
    cells = BOX_SPLIT.split(row.strip())[1:-1]
    return tuple(_cell_text(MARKS.sub("", c.strip())) for c in cells)


def _tab_row(row: str) -> list[str]:
    """The cells of a row copied from a web page's table: separated by tabs."""
    return [_cell_text(c) for c in row.strip("\r\n").split("\t")]


def _markdown_row(row: str) -> list[str]:
    """The cells of a Markdown table's row, split as GitHub's tables split them (GFM spec
    0.29, 4.10 Tables): at each ``|`` that no backslash escapes, the outer ones dropped;
    ``\\|`` in a cell (a piece's pipe, as derive's own tables write it) is the pipe itself."""
    cells = re.split(r"(?<!\\)\|", row.strip())
    if cells and not cells[0].strip():
        cells = cells[1:]
    if cells and not cells[-1].strip():
        cells = cells[:-1]
    return [_cell_text(c.replace("\\|", "|")) for c in cells]


def _latex_row(row: str) -> list[str]:
    out = []
    for cell in _split_top(row, "&"):
        cell = cell.strip()
        multi = re.match(r"^\\multicolumn\{(\d+)\}\{[^}]*\}\{(.*)\}$", cell)
        if multi:
            out += [_cell_text(multi.group(2))] + [""] * (int(multi.group(1)) - 1)
        else:
            out.append(_cell_text(cell))
    return out


@lru_cache(maxsize=1 << 14)
def _cell_text(cell: str) -> str:
    """A cell without its markup: footnote marks, ``$``, ``\\num{}``, wrapping braces."""
    if not any(mark in cell for mark in "<\\{$"):
        return cell.strip()  # (most cells: a number or a token, nothing to remove)
    text = re.sub(r"<sup>[^<]*</sup>|\{?\\textsuperscript\{[^{}]*\}\}?", "", cell).strip()
    text = re.sub(r"\\num\{([^{}]*)\}", r"\1", text)
    return MATH_DELIMITER.sub(lambda m: m.group(1) or "", _unbraced(text)).strip()


# a cell's math delimiters (``$``, ``\\(``, ``\\)``), not ``\\$`` (TeX's dollar: ``\\texttt{\\$5}``)
# nor a character of a code span (`` `$5` ``, a piece as Markdown writes it), which are kept
MATH_DELIMITER = re.compile(r"((?<!`)(`+)(?!`).*?(?<!`)\2(?!`))|(?<!\\)\$|\\[()]")  # (fences: whole runs, as above)


def _unbraced(text: str) -> str:
    """``text`` without the braces that wrap all of it (``{{0.5}}`` -> ``0.5``), in one pass
    (a brace closes the one it matches, so ``{a}{b}`` keeps its braces)."""
    match = mathread.matching_braces(text)
    lo, hi = 0, len(text) - 1
    while lo < hi and text[lo] == "{" and match.get(lo) == hi:
        lo, hi = lo + 1, hi - 1
        while lo <= hi and text[lo].isspace():
            lo += 1
        while hi >= lo and text[hi].isspace():
            hi -= 1
    return text[lo:hi + 1]


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside braces and brackets (``\\&`` is not a separator)."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        elif text.startswith(sep, i) and depth == 0:
            out.append(text[start:i])
            start = i + len(sep)
            i += len(sep)
            continue
        i += 1
    out.append(text[start:])
    return out


def _pairs(row: str) -> list[str]:
    """The equations of one aligned row: ``A &= B & C &= D`` is ``A = B`` and ``C = D``."""
    parts = _split_top(row, "&")
    out: list[str] = []
    for part in parts:
        starts_relation = part.lstrip().startswith(("=", "\\to", "\\approx", "\u2248"))
        if out and (starts_relation or not _has_relation(out[-1])):
            out[-1] += " " + part
        else:
            out.append(part)
    return out


def _sentence(text: str) -> bool:
    """Whether a line that reads as no equation is a sentence: three words in a row, or
    numbers among two words (``␣climb + ed = 0.94``)."""
    return bool(WORDS.search(text)) or any(ch.isdigit() for ch in text) and len(SENTENCE_WORD.findall(text)) >= 2


OPEN_END = re.compile(r"(=|\u2248|[-+\u2212*/\u00b7\u00d7,])\s*$")  # a line that ends before its right side or term


def _unfinished(text: str) -> bool:
    """Whether an equation goes on after ``text``: a bracket left open, or a relation or an
    operator at its end."""
    return text.count("[") > text.count("]") or text.count("(") > text.count(")") or bool(OPEN_END.search(text))


def _reads_as_equation(text: str) -> bool:
    """Whether a line has an equation derive reads (a name or arithmetic, a relation, a
    value), whole or as the several equations it writes (:func:`_assignments`)."""
    if not _has_relation(text):
        return False
    context = {"head": None, "block": None}
    return any(_readable(_equation_and_parts(part, 0, text, context)) for part in _split_quads(text))


def _equation_and_parts(text: str, line: int, source: str, context: dict, exact: bool = False) -> Entry:
    """:func:`_equation` of ``text``, with ``parts``: its equations read apart when it
    writes several (:func:`_assignments`)."""
    entry = _equation(text, line, source, context, exact)
    pieces = _assignments(text)
    if len(pieces) > 1:
        entry.parts = [_equation(piece, line, source, context, exact) for piece in pieces]
    return entry


def _readable(entry: Entry) -> bool:
    """Whether an equation reads, whole or as the several equations of its line (every one
    of its ``parts``: ``sigma_5 = 0.866, mu_5 = 5 and L = 0.928``)."""
    return not entry.error or bool(entry.parts) and not any(part.error for part in entry.parts)


def _has_relation(text: str) -> bool:
    """The text has a relation: ``=``, ``≈``, ``\\approx`` or ``\\to`` (not ``\\toprule``)."""
    return RELATION.search(text) is not None


# TeX's word "and" between two equations of one formula (``\\mu_5 = 0 \\text{ and } \\sigma_5 = 0.866``)
TEX_AND = re.compile(r",?(?<!\s)\s*\\(?:text|textrm|mbox|mathrm)\{\s*and\s*\}")


def _split_quads(text: str) -> list[str]:
    """Equations separated by ``\\quad`` (``\\mu = 0.000,\\quad \\sigma = 0.866``) or by
    ``\\text{ and }`` where each side is an equation (as ``and`` cuts a line of plain text:
    :func:`_assignments`)."""
    parts = re.split(r",?(?<!\s)\s*\\q?quad\b", text)  # (tried where a run of spaces starts: linear)
    out = []
    for part in parts:
        pieces = [p for p in TEX_AND.split(part) if p.strip()]
        if len(pieces) > 1 and not all(map(_has_relation, pieces)):
            pieces = [part]  # (x = 1 \text{ and } 2: no second equation)
        out += [p.strip().rstrip(",") for p in pieces if p.strip()]
    return out


def _claims_arithmetic(chain: Chain) -> bool:
    """An inline formula is arithmetic that claims a value: no names on any side, a number
    on the first (``2 \\cdot 3 = 7``, ``\\sqrt{2} \\approx 1.414``) and a written value on the
    last (``\\frac{1}{2} = \\frac{2}{4}``, a form, is no claim derive judges in prose)."""
    return not any(mathread.names(e) for e in chain.exprs) and bool(
        mathread.numbers(chain.exprs[0]) or mathread.infinite_in(chain.exprs[0])) and value_texts(chain.exprs[-1]) is not None


def _inline_formulas(text: str) -> list[str]:
    """The inline formulas of a line of prose: ``$...$``, ``\\(...\\)`` and a display
    ``\\[...\\]`` written inside the line (``Display: \\[2 \\cdot 3 = 7\\] here.``)."""
    out: list[str] = []
    text = text.replace("$$", "")
    for opening, closing in (("\\(", "\\)"), ("\\[", "\\]")):
        text = _taken(text, opening, closing, out)
    parts = text.split("$")
    out += [p for k, p in enumerate(parts) if k % 2 and k < len(parts) - 1]
    return out


def _taken(text: str, opening: str, closing: str, out: list[str]) -> str:
    """``text`` with each formula between ``opening`` and ``closing`` (on one line) put in
    ``out`` and a space in its place, found left to right (linear in the length)."""
    rest = []
    for line in text.split("\n"):  # (a formula stays on its line)
        start, done = line.find(opening), 0
        while start != -1 and (end := line.find(closing, start + 2)) != -1:
            out.append(line[start + 2:end])
            rest += [line[done:start], " "]
            done = end + 2
            start = line.find(opening, done)
        rest.append(line[done:] + "\n")
    return "".join(rest)[:-1]


def _title(text: str) -> str:
    """The text of a table title line (``**...**`` or ``\\textbf{...}\\par\\smallskip``)."""
    if text.startswith("**"):
        return text.strip("*").strip()
    body = text[len("\\textbf{"):]
    depth, end = 1, len(body)
    for k, ch in enumerate(body):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth == 0:
            end = k
            break
    return body[:end]


def _markdown_text(text: str) -> str:
    """Markdown's backslash escapes removed (``u\\_1\\[1\\]`` -> ``u_1[1]``)."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)


def prose_entry(text: str, line: int, claimed=(), outside_math: bool = False) -> Entry | None:
    """The entry listing a sentence's decimal numbers as not checked (derive does not read
    sentences), those in the ``claimed`` spans (judged claims: :class:`SentenceClaim`) left
    out, and with ``outside_math`` those of its inline math (judged as entries of their
    own); None when no number is left."""
    plain = _prose_text(text, outside_math)
    numbers = [m.group(0) for m in PROSE_NUMBER.finditer(plain)
               if not any(start <= m.start() < end for start, end in claimed)]
    if not numbers:
        return None
    return Entry(line, text, values=[n.replace(MINUS, "-") for n in numbers], kind="prose",
                 skip="prose: derive does not read sentences (numbers in it: "
                 + ", ".join(numbers[:8]) + (", ..." if len(numbers) > 8 else "") + ")")


CLAIM_WORDS = 4  # the most words a name in a sentence is read from (q_5 · k_1 after: 4)
# ``= NUMBER`` in a sentence, the number plainly one: whole or with a point, then the sentence's
# end, a space or a punctuation mark before one (not 0.5x, 0.929.5, 39.5%, 1e-05)
CLAIMED_NUMBER = re.compile(r"(?<![=<>!\u2248])=\s*([-\u2212]?\d+(?:\.\d+)?)(?=$|\s|[.,;:!?)](?:\s|$))")
# the word a claimed name may follow: a word of the sentence (``is``, ``Also``, ``one:``, ``(so``), or the comma
# or semicolon after the claim before it (``sigma_5 = 0.866, mu_5 = 0``), not math
# (x_5[1] + P_5[1] = 0.3, \partial z / \partial E_{2,1} = 0.3, 2 L = 1.856 claim nothing of P_5[1], E_{2,1}, L)
CLAIM_AFTER = re.compile("^(?:[(\"'\u201c\u2018]?[A-Za-z]{2,}[.,:;!?)\"'\u201d\u2019]*|[,;])$")
CLAIM_START = re.compile(r"^[-+\u2212*/\u00b7\u00d7^=\u2248<>]")  # nor start as an operator: + L
CLAIM_GOES_ON = re.compile(r"^\s*(?:[-+\u2212*/\u00b7\u00d7^=\u2248<>(\[{\\]|rounds\s+to\b)")  # 0.5 + 0.3, 0.5 \cdot 2


def sentence_claims(text: str, line: int, context: dict) -> list[SentenceClaim]:
    """The ``NAME = NUMBER`` claims a sentence states outside its math (``A wrong one:
    p(␣roof) = 0.359``, ``The loss is L = 0.929.``, ``Also L = 0.929``): each ``=`` whose
    right side is plainly a number (:data:`CLAIMED_NUMBER`, nothing after it that goes on
    computing: :data:`CLAIM_GOES_ON`), with an entry for each run of the words right before
    it (back to the previous claim's number, at most :data:`CLAIM_WORDS` words and
    :data:`NAME_LENGTH` characters) that reads as a name and follows a word of the sentence
    or nothing (not math, an operator or a number) and starts with no operator
    (``x_5[1] + P_5[1] = 0.3`` claims nothing of P_5[1]: :data:`CLAIM_AFTER`,
    :data:`CLAIM_START`). Whether derive knows the name is the checker's to say."""
    plain = _prose_text(text)
    claims, start = [], 0
    for match in CLAIMED_NUMBER.finditer(plain):
        left = plain[start:match.start()]
        start = match.end()
        if not left.strip() or CLAIM_GOES_ON.match(plain[match.end():]):
            continue
        words = PHASE_WORDS.sub(r" \2", left).split()
        number = match.group(1).replace(MINUS, "-")
        readings = []
        for k in range(min(CLAIM_WORDS, len(words)), 0, -1):
            name = " ".join(words[-k:])
            if k < len(words) and not CLAIM_AFTER.match(words[-k - 1]) or CLAIM_START.match(name) \
                    or len(name) > NAME_LENGTH:
                continue
            entry = _equation(f"{name} = {number}", line, text, context)
            if entry.error is None and entry.name is not None:
                readings.append(entry)
        if readings:
            claims.append(SentenceClaim(match.span(1), readings))
    return claims


# what opens or closes inline math in a sentence (``$``, ``\\(``, ``\\)``, ``\\[``, ``\\]``), and an
# escaped character (``\\$`` is a dollar), read left to right once
MATH_MARK = re.compile(r"\\[()\[\]]|\\.|\$")
MATH_CLOSES = {"$": "$", "\\(": "\\)", "\\[": "\\]"}


def _inline_math(text: str) -> list[tuple[int, int]]:
    """Where a sentence's inline math stands (``$...$``, ``\\(...\\)``, ``\\[...\\]``, found
    before Markdown's escapes are removed: ``\\$`` is a dollar), in one pass (linear in the
    length: a line of unclosed ``\\(`` is read once)."""
    spans, start, closing = [], None, None
    for mark in MATH_MARK.finditer(text):
        if start is None and mark.group() in MATH_CLOSES:
            start, closing = mark.start(), MATH_CLOSES[mark.group()]
        elif start is not None and mark.group() == closing:
            spans.append((start, mark.end()))
            start = None
    return spans


def _prose_text(text: str, outside_math: bool = True) -> str:
    """A sentence as its words are read (:func:`sentence_claims`, :func:`prose_entry`):
    Markdown's escapes removed (:func:`_markdown_text`) and, with ``outside_math``, its
    inline math (:func:`_inline_math`, found before the escapes are removed: ``\\(x = 1\\)``
    is math, not ``(x = 1)``) blanked out, as many spaces as the math has characters once
    unescaped, so that a place in the text is the same with or without ``outside_math``."""
    if not outside_math:
        return _markdown_text(text)
    out, done = [], 0
    for start, end in _inline_math(text):
        out += [_markdown_text(text[done:start]), " " * len(_markdown_text(text[start:end]))]
        done = end
    return "".join(out) + _markdown_text(text[done:])


NUMBERS_ONLY = re.compile(r"[\s.,;+\-\u2212\[\]()]*\d[\d\s.,;+\-\u2212\[\]()]*")  # digits, signs, commas, brackets
ASSIGNMENT_BREAK = re.compile(r",|;|(?<=\s)and(?=\s)")  # where a line may go on with another equation


def _assignments(text: str) -> list[str]:
    """The equations of a line that writes several one after another (``sigma_5 = 0.866,
    mu_5 = 0``, ``sigma_5 = 0.866 and mu_5 = 0``, ``...; mu_5 = 0``): the line cut at a
    comma, a semicolon or ``and`` outside brackets, braces and math, where what follows
    starts as an equation of a name (``mu_5 =``, ``L after =``); ``[text]`` when it writes
    one. Whether derive knows the names is the checker's to say."""
    relations = [m.start() for m in RELATION.finditer(text)]
    if not relations or not ASSIGNMENT_BREAK.search(text):
        return [text]
    depth, math, cuts = 0, False, []
    for k, ch in enumerate(text):
        if ch == "$" and (k == 0 or text[k - 1] != "\\"):
            math = not math
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and not math and relations[0] < k and (match := ASSIGNMENT_BREAK.match(text, k)):
            after = bisect.bisect_left(relations, match.end())  # the relation the part after it starts with
            if after < len(relations) and _is_name(text[match.end():relations[after]]):
                cuts.append((k, match.end()))
    if not cuts:
        return [text]
    bounds = [0] + [at for cut in cuts for at in cut] + [len(text)]
    return [text[bounds[k]:bounds[k + 1]].strip() for k in range(0, len(bounds), 2)]


NAME_LENGTH = 100  # the most characters of a name before its relation (E_{2,1} after the step, 22)


def _is_name(text: str) -> bool:
    """Whether ``text`` (the left side of an equation) is a name (``mu_5``, ``\\mu_{5}``,
    ``L after``); one longer than :data:`NAME_LENGTH` characters is not read."""
    if not text.strip() or len(text) > NAME_LENGTH:
        return False
    try:
        node = mathread.read(PHASE_WORDS.sub(r" \2", text).strip()).exprs[0]
    except DeriveError:
        return False
    node = _phase(node)[0]
    return isinstance(node, (mathread.Sym, mathread.Call, mathread.Deriv)) and mathread.is_name(node)


UNIT_AFTER = re.compile(r"(\d)(?:\s|\\[ ,;:!])*(?:\\(?:text|mathrm)\{\s*)?(?:nats?|bits?)\}?\s*(?:[.,;]\s*)?$")
PERCENT_AFTER = re.compile(r"(\d)\s*\(\s*(?:\u2248\s*|\\approx\s*)?([-\u2212]?\d+(?:\.\d+)?\s*\\?%)\s*\)\s*(?:[.,;]\s*)?$")


def _equation(text: str, line: int, source: str, context: dict, exact: bool = False) -> Entry:
    """``name = ... = value`` or ``expression = value``; with ``exact`` (a display), also
    ``name = exact form`` and ``name = formula over other names``."""
    text = PHASE_WORDS.sub(r" \2", text)  # E_{2,1} after the step = ...: E_{2,1} after
    text = PERCENT_AFTER.sub(r"\1 = \2", text)  # 0.395 (39.5%): the same value again, as a percentage
    text = UNIT_AFTER.sub(r"\1", text)  # L = 0.928 nats: the unit of the loss, said after its value
    name, *sides = text.split("=")
    signs = {match.group("sign") in (None, "+") for match in map(INFINITE_SIDE.fullmatch, sides) if match}
    if len(sides) > 1 and len(signs) == 1 and all(map(INFINITE_SIDE.fullmatch, sides)):
        text = f"{name}={sides[0]}"  # s_{1,2} = -\infty = -inf: one infinity, written twice
    infinite = INFINITY.match(text.strip())
    if infinite:  # s_{1,2} = -inf: a masked score's value (no number: judged by the checker as such)
        entry = _infinity(infinite.group("name"), _infinity_value(infinite), text, line, source, context)
        if entry is not None:
            return entry
    try:
        chain = mathread.read(text.strip().rstrip(".,;"))
    except DeriveError as exc:
        entry = _unread(text, line, source, context)
        if isinstance(exc, mathread.TooDeep):
            entry.error = exc.detail  # (why it cannot be read, not which part)
        elif isinstance(exc, mathread.TooLong):  # (past mathread.MAX_LENGTH: not read)
            entry.skip = next((r for r in (value_limit(m.group(0)) for m in NUMBER.finditer(text)) if r), None)
            # a number beyond the bounds is not checked, as in a shorter line; else why it is not read
            entry.error = None if entry.skip else f"cannot read {quoted(text.strip())}: {exc.detail}"
        return entry
    if len(chain.exprs) < 2:
        return _unread(text, line, source, context)
    return _from_chain(chain, text, line, source, context, exact)


def _infinity_value(match: re.Match) -> str:
    """:data:`MINUS_INF` or :data:`PLUS_INF`, as an :data:`INFINITY` match writes it."""
    return PLUS_INF if match.group("sign") in (None, "+") else MINUS_INF


def _infinity(name: str, value: str, text: str, line: int, source: str, context: dict) -> Entry | None:
    """The entry of ``NAME = -inf`` (``−∞``, ``-\\infty``) or of ``NAME = +inf`` (``inf``,
    ``∞``): the name read as a checked line's name, its one value ``value``, :data:`MINUS_INF`
    (which only a score the mask hides has) or :data:`PLUS_INF` (which nothing has; the
    checker judges both so); None when ``name`` is no name (``1 - 2 = -inf``)."""
    try:
        chain = mathread.read(name.strip())
    except DeriveError:
        return None
    head, phase = _phase(chain.exprs[0])
    if len(chain.exprs) != 1 or not mathread.is_name(head):
        return None
    return Entry(line, _source(source, text), name=mathread.label(head), values=[value], head=context["head"],
                 block=context["block"], node=head, phase=phase)


def _from_chain(chain: Chain, text: str, line: int, source: str, context: dict, exact: bool = False) -> Entry:
    """The entry of a read formula; with ``exact``, a number without places (``1e-05``,
    ``2``) is an exact value, else it is judged at 0 places."""
    entry = Entry(line, _source(source, text), head=context["head"], block=context["block"])
    last = chain.exprs[-1]
    values = value_texts(last)
    written = text.rsplit("=", 1)[-1].strip()
    for a, rel, b in zip(chain.exprs[1:], chain.rels[1:], chain.exprs[2:]):
        pair = value_texts(a), value_texts(b)
        if pair[1] is None or len(pair[1]) != 1:
            continue
        if rel == "=" and pair[0] is not None and len(pair[0]) == 1:
            entry.links.append((pair[0][0], rel, pair[1][0]))
        elif rel in ("=", "\u2248") and pair[0] is None and mathread.numbers(a) and not mathread.names(a) \
                and not pair[1][0].endswith("\u2026"):  # a calculation written out in the chain: judged on its own
            entry.steps.append((a, pair[1][0], rel))
        elif rel in ("=", "\u2248") and pair[0] is None and mathread.numbers(a):
            entry.working.append((a, pair[1][0], rel))  # numbers and names: read by the checker, or said unread
    if values is None:
        if written.startswith(UNDECIDED):  # derive's own page: p(d) = undecided at 10^-2
            entry.skip = f"the line gives a value derive printed {UNDECIDED} ({quoted(written)}): " + NOT_DECIDED
        elif (exact or len(chain.exprs) == 2 and _quantities_only(last)) and mathread.names(last) \
                and mathread.is_name(_phase(chain.exprs[0])[0]):
            entry.exact = last  # a definition over other names: m_1[1] = W_2_{1,1} g_1[1] + ... (derive run --exact)
        elif mathread.names(last) or not mathread.numbers(last):
            entry.error = f"cannot read the value {quoted(written)}: expected a number such as 0.395 or a vector [a, b]"
            return entry
        else:
            entry.exact = last  # an exact form: - \frac{1}{2}, \frac{\sqrt{375010}}{1000}
    else:
        entry.skip = next((r for r in map(value_limit, values) if r is not None), None)
        undotted = [v for v in values if decimal_places(v) is None]
        if undotted and len(values) == 1 and exact and entry.skip is None \
                and mathread.is_name(_phase(chain.exprs[0])[0]):
            # (a name's exact value; arithmetic, 2 \cdot 3 = 6, and a vector, [1, 2], are judged at their places)
            entry.exact, values = last, []
        entry.values = values  # a whole number (1 + 1 = 2, mu_5 = 0) is judged at 0 places
    head = chain.exprs[0]
    head, entry.phase = _phase(head)
    entry.node = head
    if mathread.is_name(head):
        entry.name = mathread.label(head)
    elif not mathread.names(head) and entry.exact is None:
        entry.expr = _left_side(text)
        entry.kind = "arithmetic"
    else:
        entry.error = f"cannot read {quoted(_left_side(text))} as a name or as arithmetic"
    return entry


def _quantities_only(node) -> bool:
    """Whether every name in a formula of a plain line is written as a quantity is (a
    subscript, a prime or a single letter: a_{2,1}*v_1[1], sigma'_1): a definition, not
    words (``u_5 = 0.5 is what the sum gives``)."""
    return all(not isinstance(n, mathread.Sym) or n.scripts or n.primes or len(n.base) == 1
               for n in mathread.names(node))


def read_name(text: str) -> tuple[str, str]:
    """A name written alone, read as the left side of a checked line is: its label in the
    plain notation of derive's labels (:func:`derive.mathread.label`) and its pass,
    ``before`` or ``after`` (``L after``, ``E_{2,1} after the step``, ``\\mu'_{5}``,
    ``dL/dE_{2,1}``). A text the grammar does not read as a name is returned as it is, in
    the pass before the step (the lookup then says that nothing has that name)."""
    try:
        chain = mathread.read(PHASE_WORDS.sub(r" \2", text).strip())
    except DeriveError:
        return text.strip(), "before"
    node, phase = _phase(chain.exprs[0])
    if len(chain.exprs) != 1 or not mathread.is_name(node):
        return text.strip(), "before"
    return mathread.label(node), phase


def _phase(node):
    """``L after`` (``L\\ \\text{after}``) names L of the pass after the SGD step."""
    if isinstance(node, mathread.Bin) and node.op == "jux" and isinstance(node.b, mathread.Sym) and \
            node.b.base in ("before", "after") and mathread.is_name(node.a):
        return node.a, node.b.base
    return node, "before"


def _left_side(text: str) -> str:
    return text.split("=", 1)[0].strip()


def _unread(text: str, line: int, source: str, context: dict) -> Entry:
    """The message for a line the grammar cannot read: which part is not a name, an
    arithmetic or a value."""
    parts = [p.strip() for p in text.strip().rstrip(".,;").split("=")]
    entry = Entry(line, _source(source, text), head=context["head"], block=context["block"])
    if "==" in text:
        entry.error = "`==` is not read: expected one `=`, `name = value` or `arithmetic = value`"
    elif len(parts) >= 2 and not parts[-1] and parts[0]:
        entry.error = "nothing after the `=`: expected `name = value` or `arithmetic = value`"
    elif len(parts) < 2 or not parts[-1]:
        entry.error = "expected `name = value` or `arithmetic = value`"
    elif not parts[0]:
        entry.error = "nothing before the `=`: expected `name = value` or `arithmetic = value`"
    elif split_values(parts[-1]) is None:
        entry.error = f"cannot read the value {quoted(parts[-1])}: expected a number such as 0.395 or a vector [a, b]"
    elif parts[0].count("(") != parts[0].count(")") or parts[0].count("{") != parts[0].count("}"):
        entry.error = f"cannot read the arithmetic {quoted(parts[0])}: a bracket is not closed"
    else:
        entry.error = f"cannot read {quoted(parts[0])} as a name or as arithmetic"
    return entry
