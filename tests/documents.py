"""Helpers of the document tests (LaTeX, Markdown, HTML): the external tools, the CLI, and
reading the numbers back out of a rendered document.

The expected numbers come from the JSON export (``derive run CASE --format json``, its
``decimal`` fields, the given weights' ``given`` records included), never from the
renderer under test.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

from typer.testing import CliRunner

from derive.case import bundled_cases, load_case
from derive.cells import Printer
from derive.cli import app
from derive.derivation import derive
from derive.rounding import Format
from derive.steps import Ref, Vec

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted(bundled_cases(), key=lambda name: (name != "cat-climbed", name))  # the seed first
NUMBER = re.compile(r"undecided(?: at 10\^-\d+)?|-?\d+(?:\.\d+)?(?:e-?\d+)?")
GAP = re.compile(r"(\d+) rows? omitted")  # a summarised table's gap row (derive.render_doc.omitted_sentence)
MARKS = re.compile(r"\{\\textsuperscript\{[a-z]+\}\}|\^\{\\mathrm\{[a-z]+\}\}|<sup>[a-z]+</sup>")


def tool(name: str) -> str:
    """The path of an external program the test needs; fails (not skips) when it is
    missing, since .ci/run installs it."""
    path = shutil.which(name)
    assert path, f"{name} is not installed: .ci/run installs it (apt-get), do the same here"
    return path


def katex_ready() -> None:
    """Fail unless the project's KaTeX (npm ci) is installed."""
    tool("node")
    assert (ROOT / "node_modules" / "katex" / "package.json").is_file(), \
        "KaTeX is not installed: run `npm ci` at the top of the repository (as .ci/run does)"


def cli(*args: str) -> str:
    """Run ``derive ARGS`` in this process; its standard output (exit code 0 asserted)."""
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


@lru_cache(maxsize=None)
def derivation_of(case: str):
    """The case's derivation (cached: the tests only read it)."""
    return derive(load_case(case))


@lru_cache(maxsize=None)
def json_decimals(case: str, *options: str) -> dict[Ref, str]:
    """The ``decimal`` field of each quantity in the JSON export, by its Ref. The records
    come in the order of :meth:`Derivation.given` (the weights), then
    :meth:`Derivation.quantities`; their labels are checked."""
    records = json.loads(cli("run", case, "--format", "json", *options))
    derivation = derivation_of(case)
    refs = derivation.given() + derivation.quantities()
    assert len(refs) == len(records)
    for ref, record in zip(refs, records):
        assert record["label"] == derivation.meta(ref).label
    return {ref: record["decimal"] for ref, record in zip(refs, records)}


def numbers_in(cell: str) -> list[str]:
    """The numbers written in a cell or an equation's value (``undecided`` where derive
    cannot decide the last digit), marks left out, minus signs made ASCII,
    ``1.2\\mathrm{e}{-06}`` read as ``1.2e-06``."""
    text = MARKS.sub("", cell).replace("\u2212", "-").replace("\\mathrm{e}", "e").replace("\\textasciicircum{}", "^")
    text = re.sub(r"e\{(-?\d+)\}", r"e\1", text)
    return NUMBER.findall(text)


def latex_tables(text: str) -> list[list[list[str]]]:
    """The body rows of every booktabs table, as cell texts: a table's parts (groups of
    columns, runs of rows) put back together by the comment before each tabular
    (:data:`derive.steps.PART`: its rows and columns). A summarised table's gap row
    is one cell, its text."""
    from derive.steps import PART_LINE

    tables, current = [], {}
    lines = text.split("\n")
    for i, line in enumerate(lines):
        part = PART_LINE.match(line)
        if not part:
            continue
        if not part.group(1):
            current = {}
            tables.append(current)
        columns = [int(c) for c in part.group(4).split()]
        body = lines[lines.index("\\midrule", i) + 1:lines.index("\\bottomrule", i)]
        assert len(body) == int(part.group(3)) - int(part.group(2)) + 1, line
        for row, source in enumerate(body, int(part.group(2))):
            source = source.rstrip().removesuffix("\\\\").rstrip()
            cells = current.setdefault(row, {})
            if GAP.search(source):
                cells[0] = source
                continue
            found = source.split(" & ")
            assert len(found) == len(columns), source
            cells.update(zip(columns, found))
    return [[[table[r][c] for c in sorted(table[r])] for r in sorted(table)] for table in tables]


def markdown_tables(text: str) -> list[list[list[str]]]:
    """The body rows of every Markdown table, as cell texts."""
    tables, current = [], []
    for line in text.split("\n") + [""]:
        if line.startswith("|"):
            current.append([c.strip() for c in line.strip().strip("|").split(" | ")])
        elif current:
            tables.append(current[2:])
            current = []
    return tables


def aligned_blocks(text: str) -> list[list[str]]:
    """The lines of every ``aligned`` block."""
    return [block.split(" \\\\\n") for block in re.findall(r"\\begin\{aligned\}\n(.*?)\n\\end\{aligned\}", text, re.S)]


def check_numbers(case: str, tables: list, equations: list, decimals: dict[Ref, str]) -> int:
    """Walk the case's steps, their tables and equations in order beside the parsed ones,
    and assert every printed number equals the JSON's decimal (in a table of given weights
    as a number: ``-0.5`` for ``-0.500``). A summarised table's shown rows are compared with
    the model's first and last rows, and its gap row must count the rows between. Returns
    how many numbers were compared."""
    derivation = derivation_of(case)
    printer = Printer(derivation, Format())  # only for the order of sorted rows
    tables, equations = iter(tables), iter(equations)
    compared = 0
    for step in derivation.steps:
        for table in step.tables:
            parsed = next(tables)
            rows = printer.rows(table)
            gap = next((i for i, row in enumerate(parsed) if GAP.search(row[0])), None)
            if gap is not None:  # a summarised table: its first rows, the gap, its last rows
                tail = len(parsed) - gap - 1
                assert int(GAP.search(parsed[gap][0]).group(1)) == len(rows) - gap - tail, parsed[gap][0]
                rows, parsed = rows[:gap] + rows[len(rows) - tail:], parsed[:gap] + parsed[gap + 1:]
            assert len(parsed) == len(rows), f"{step.key}: {table.title}"
            for model_row, parsed_row in zip(rows, parsed):
                for cell, text in zip(model_row, parsed_row):
                    compared += _compare(derivation, cell, text, decimals, table.short_exact, table.title)
        if step.equations:
            lines = next(equations)
            assert len(lines) == len(step.equations), step.key
            for eq, line in zip(step.equations, lines):
                compared += _compare(derivation, eq.rhs, line.rsplit("= ", 1)[1], decimals, False, eq.lhs)
    assert next(tables, None) is None and next(equations, None) is None, "more tables or equations than steps"
    return compared


def _compare(derivation, cell, text: str, decimals: dict[Ref, str], short_exact: bool, where: str) -> int:
    refs = [cell] if isinstance(cell, Ref) else cell.refs if isinstance(cell, Vec) else []
    if not refs:
        return 0
    found = numbers_in(text)
    assert len(found) == len(refs), f"{where}: {text!r} has {len(found)} numbers, expected {len(refs)}"
    for ref, printed in zip(refs, found):
        label = f"{where}: {derivation.meta(ref).label}"
        assert ref in decimals, f"{label}: printed but not in the JSON"
        expected = decimals[ref].replace("\u2212", "-")
        if short_exact and expected[0] != "u":  # a given number printed as it is: -0.5 for -0.500, or
            # whole (crane's 0.484375 for 0.484): the same number, or within the JSON's rounding of it
            places = len(expected.split(".")[1]) if "." in expected else 0
            assert abs(Fraction(printed) - Fraction(expected)) <= Fraction(1, 2 * 10 ** places), label
            assert len(printed.split(".")[-1]) <= places + 3 or printed == expected, label
        else:
            assert printed == expected, label
    return len(refs)


def katex_failures(formulas: list[tuple[str, bool]]) -> list[dict]:
    """Render each (tex, display) with the project's KaTeX under Node (throwOnError,
    strict); the failures."""
    katex_ready()
    payload = json.dumps([{"tex": t, "display": d} for t, d in formulas])
    done = subprocess.run([tool("node"), str(ROOT / "tests" / "katex_check.js")], input=payload, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.stdout, done.stderr
    return json.loads(done.stdout)["failures"]


def math_in_markdown(text: str, math: str) -> list[tuple[str, bool]]:
    """Every formula of a Markdown document, (tex, display), for the delimiters ``math``."""
    if math == "dollars":
        display = re.findall(r"\$\$\n?(.*?)\n?\$\$", text, re.S)
        rest = re.sub(r"\$\$.*?\$\$", "", text, flags=re.S)
        inline = re.findall(r"(?<!\\)\$(.+?)(?<!\\)\$", rest)
    else:
        display = re.findall(r"\\\[\n?(.*?)\n?\\\]", text, re.S)
        inline = re.findall(r"\\\((.+?)\\\)", text)
    return [(t, True) for t in display] + [(t, False) for t in inline]
