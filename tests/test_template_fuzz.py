"""Fuzzed templates and output paths (issue 13, item 4, "the same for --templates
directories and output paths"): a folder of hostile Jinja2 templates (loops past the
sandbox's range or nested too deep, undefined names, attribute escapes, includes out of the
folder, division by zero, broken syntax, any text) and an output path that may be a folder,
a missing folder, /dev/full or a name with odd characters. Each run must end with exit 0, or
2 with one ``error:`` line and no traceback, within BOUND seconds; a failed run leaves the
file that was at the output path as it was.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from case_mutations import problem, run_bounded

BOUND = 25.0  # seconds: a template may run 10 s (derive.templates.TEMPLATE_SECONDS), the chapter ~1 s
PREVIOUS = "the chapter as it was\n"

FRAGMENTS = [
    "{{ words }}", "{{ title }}", '{{ value("p(\u2423roof)") }}', '{{ value("L") }}', '{{ value("no_such_name") }}',
    "{% for i in range(10) %}.{% endfor %}", "{% for i in range(100001) %}x{% endfor %}",
    "{% for i in range(99999) %}{% for j in range(99999) %}x{% endfor %}{% endfor %}",
    "{{ undefined_name }}", "{{ words.__class__.__mro__ }}", "{{ ''.__class__ }}", "{% include '../x.j2' %}",
    "{{ 1/0 }}", "{{ 1 // 0 }}", "{{ 'a' * 10 }}", "{% if %}", "{{", "}}", "{% endfor %}", "{{ words|upper }}",
    "{{ [1, 2][5] }}", "{{ {'a': 1}['b'] }}", "{% set title = 'My title' %}", "$\\frac{1}{2}$", "\u2423\u00e9\u4e2d",
]
FILES = ["layernorm.j2", "attention.latex.j2", "softmax.markdown.j2", "loss.html.j2", "unknown.j2", "tokens.j2"]
COMMANDS = [("latex", ".tex"), ("markdown", ".md"), ("html", ".html")]


@st.composite
def hostile(draw):
    """(files {name: text}, command, output kind, output name)."""
    files = draw(st.dictionaries(st.sampled_from(FILES), st.lists(
        st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30)), min_size=1, max_size=4).map("".join),
        min_size=1, max_size=3))
    command = draw(st.sampled_from(COMMANDS))
    where = draw(st.sampled_from(["file", "file", "missing-folder", "folder", "dev-full", "odd-name"]))
    return files, command, where


def check(example, tmp_path_factory) -> None:
    files, (command, suffix), where = example
    root = tmp_path_factory.mktemp("tfuzz")
    folder = root / "templates"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    out = {"file": root / f"chapter{suffix}", "missing-folder": root / "no" / "such" / f"chapter{suffix}",
           "folder": root, "dev-full": "/dev/full", "odd-name": root / f"ch \u00e9\u2423 'x'{suffix}"}[where]
    if where in ("file", "odd-name"):
        out.write_text(PREVIOUS, encoding="utf-8")
    outcome = run_bounded([command, "cat-climbed", "--templates", str(folder), "-o", str(out)], BOUND)
    wrong = problem(outcome)
    assert wrong is None, f"{command} -o {where} with {files!r}: {wrong}"
    if outcome.exit_code != 0 and where in ("file", "odd-name"):
        assert out.read_text(encoding="utf-8") == PREVIOUS  # never a half-written file
    if where == "dev-full":
        assert outcome.exit_code == 2


@settings(max_examples=20, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(example=hostile())
def test_fuzzed_templates_quick(example, tmp_path_factory):
    check(example, tmp_path_factory)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(example=hostile())
def test_fuzzed_templates(example, tmp_path_factory):
    check(example, tmp_path_factory)
