"""What the document commands share: atomic output files (a failed or killed run leaves
the previous file as it was), an author's Jinja2 templates, the notebook displays, and the
options they share with `derive run`."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap

import pytest
import typer
from typer.testing import CliRunner

from documents import CASES, ROOT, cli

import derive.output
from derive.cli import app
from derive.notebook import load
from derive.render_html import HtmlRenderer
from derive.rounding import Format
from derive.steps import Step

PREVIOUS = "the previous, complete output\n"


def test_a_failure_while_rendering_leaves_the_previous_file(tmp_path, monkeypatch):
    page = tmp_path / "page.html"
    page.write_text(PREVIOUS)
    calls = []
    table = HtmlRenderer.table

    def fail_on_the_fifth_table(self, view):
        calls.append(view)
        if len(calls) == 5:
            raise RuntimeError("injected failure halfway through the page")
        return table(self, view)

    monkeypatch.setattr(HtmlRenderer, "table", fail_on_the_fifth_table)
    result = CliRunner().invoke(app, ["html", CASES[0], "-o", str(page)])
    assert result.exit_code == 3 and "injected failure halfway through the page" in result.output  # a bug in derive
    assert "Traceback" not in result.output
    assert page.read_text() == PREVIOUS
    assert os.listdir(tmp_path) == ["page.html"]


def test_a_failure_while_writing_leaves_the_previous_file(tmp_path, monkeypatch):
    out = tmp_path / "chapter.tex"
    out.write_text(PREVIOUS)

    def broken_disk(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(derive.output.os, "fsync", broken_disk)
    result = CliRunner().invoke(app, ["latex", CASES[0], "--step", "loss", "-o", str(out)])
    assert result.exit_code == 2 and "cannot write: Input/output error" in result.output  # one line, no traceback
    assert out.read_text() == PREVIOUS
    assert os.listdir(tmp_path) == ["chapter.tex"]


KILLED_HALFWAY = textwrap.dedent("""
    import os, signal, sys
    import derive.output

    real_write = os.write

    def half_then_killed(fd, data):
        real_write(fd, bytes(data[: len(data) // 2]))
        os.kill(os.getpid(), signal.SIGKILL)

    derive.output.os.write = half_then_killed
    from derive.cli import app
    app(sys.argv[1:])
""")


@pytest.mark.parametrize("command", ["latex", "markdown", "html"])
def test_a_run_killed_halfway_leaves_the_previous_file_and_nothing_else(tmp_path, command):
    out = tmp_path / f"out.{command}"
    out.write_text(PREVIOUS)
    done = subprocess.run([sys.executable, "-c", KILLED_HALFWAY, command, CASES[0], "-o", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == -9, done.stderr  # SIGKILL, halfway through writing
    assert out.read_text() == PREVIOUS
    assert os.listdir(tmp_path) == [out.name]  # the half-written file had no name (O_TMPFILE)


def _reader(fifo, got: list):
    """Read a FIFO to its end in a thread (the writer blocks until a reader opens it)."""
    import threading

    def read():
        with open(fifo, encoding="utf-8") as handle:
            got.append(handle.read())
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("through_link", [False, True])
def test_o_onto_a_fifo_writes_through_and_leaves_it_a_fifo(tmp_path, through_link):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    target = fifo
    if through_link:
        target = tmp_path / "link"
        target.symlink_to(fifo)
    got: list[str] = []
    thread = _reader(fifo, got)
    cli("markdown", CASES[0], "--step", "loss", "-o", str(target))
    thread.join(timeout=60)
    assert got and "## Step" in got[0] and got[0].endswith("\n")  # every byte went to the reader
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert os.path.islink(target) == through_link
    assert sorted(os.listdir(tmp_path)) == sorted({"pipe", target.name})


def test_o_onto_a_link_replaces_the_file_it_points_to(tmp_path):
    real = tmp_path / "real.md"
    real.write_text(PREVIOUS)
    link = tmp_path / "link.md"
    link.symlink_to(real)
    cli("markdown", CASES[0], "--step", "loss", "-o", str(link))
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert "## Step" in real.read_text()


@pytest.mark.parametrize("kind", ["read-only", "folder", "empty", "no folder"])
def test_o_refuses_with_one_line(tmp_path, kind):
    target = {"read-only": tmp_path / "ro.md", "folder": tmp_path, "empty": "",
              "no folder": tmp_path / "missing" / "x.md"}[kind]
    if kind == "read-only":
        target.write_text(PREVIOUS)
        target.chmod(0o444)
    result = CliRunner().invoke(app, ["markdown", CASES[0], "--step", "loss", "-o", str(target)])
    assert result.exit_code == 2, result.output
    message = result.output.strip()
    assert message.startswith("error:") and "\n" not in message and "Traceback" not in message
    assert {"read-only": "read-only", "folder": "is a folder", "empty": "file name",
            "no folder": "cannot write"}[kind] in message
    if kind == "read-only":
        assert target.read_text() == PREVIOUS


def test_o_dash_is_the_standard_output():
    result = CliRunner().invoke(app, ["markdown", CASES[0], "--step", "loss", "-o", "-"])
    assert result.exit_code == 0 and "## Step" in result.output


def test_a_complete_run_replaces_the_file_and_keeps_its_permissions(tmp_path):
    out = tmp_path / "chapter.md"
    out.write_text(PREVIOUS)
    out.chmod(0o640)
    cli("markdown", CASES[0], "--step", "loss", "-o", str(out))
    assert out.read_text().startswith("# the cat climbed the")
    assert out.stat().st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path) == ["chapter.md"]


@pytest.mark.parametrize("reach", ["{{ ''.__class__.__mro__[1].__subclasses__() }}",
                                   "{{ case.__class__.__init__.__globals__['os'].system('touch {marker}') }}",
                                   "{{ cycler.__init__.__globals__.os.system('touch {marker}') }}"])
def test_a_template_cannot_reach_python(tmp_path, reach):
    marker = tmp_path / "ran"
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "loss.j2").write_text(reach.replace("{marker}", str(marker)))
    result = CliRunner().invoke(app, ["markdown", CASES[0], "--step", "loss", "--templates", str(folder)])
    assert result.exit_code == 2, result.output
    assert "loss.j2" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not marker.exists()


def test_templates_replace_the_words(tmp_path):
    (tmp_path / "layernorm.j2").write_text(
        '{% set title = "LayerNorm, row by row" %}'
        "From here on we follow the last row: $mu_5$ = {{ eq['mu_5'] }} and $sigma_5$ = {{ value('sigma_5') }}. "
        "{{ words }}")
    (tmp_path / "attention.latex.j2").write_text("\\emph{Raw} words for step {{ number }} of `{{ case.name }}`.")
    latex = cli("latex", CASES[0], "--templates", str(tmp_path))
    # mu_5 = 0.000 and sigma_5 = 0.866: the seed 000's step 4, derive's step 5 (its step 4
    # prints the weights, which the seed does not)
    assert "\\subsection*{Step 5. LayerNorm, row by row}" in latex
    assert "the last row: $\\mu_{5}$ = 0.000 and $\\sigma_{5}$ = 0.866. Each row is normalised" in latex
    assert "\\emph{Raw} words for step 7 of `cat-climbed`." in latex
    markdown = cli("markdown", CASES[0], "--templates", str(tmp_path))
    assert "## Step 5. LayerNorm, row by row" in markdown
    assert "the last row: $\\mu_{5}$ = 0.000" in markdown
    assert "Raw" not in markdown  # the raw template is LaTeX's only
    page = cli("html", CASES[0], "--templates", str(tmp_path), "--step", "layernorm")
    assert "the last row: \\(\\mu_{5}\\) = 0.000" in page


@pytest.mark.parametrize("template, message", [
    ("{{ undefined_name }}", "'undefined_name' is undefined"),
    ("{{ value('no_such_quantity') }}", "no quantity is called 'no_such_quantity'"),
    ("{% if %}", "line 1"),
])
def test_a_bad_template_is_a_user_error(tmp_path, template, message):
    (tmp_path / "loss.j2").write_text(template)
    result = CliRunner().invoke(app, ["markdown", CASES[0], "--templates", str(tmp_path)])
    assert result.exit_code == 2
    error = " ".join(result.stderr.split())
    assert "loss.j2" in error and message in error


def test_a_missing_template_folder_is_a_user_error(tmp_path):
    result = CliRunner().invoke(app, ["latex", CASES[0], "--templates", str(tmp_path / "nowhere")])
    assert result.exit_code == 2
    assert "not a folder of templates" in result.stderr


def test_notebook_displays():
    derivation = load(CASES[0])
    page = derivation._repr_html_()
    assert page.count('<details class="step"') == len(derivation.steps)
    assert "0.866" in page and "<script" not in page  # Jupyter typesets the math itself
    loss = derivation.step("loss")
    assert "0.928" in loss._repr_latex_()  # L = 0.928, the seed 000's loss
    assert loss._repr_html_().count('<details class="step"') == 1
    derivation.display_format = Format(places=4)
    assert "0.9277" in loss._repr_latex_()
    assert Step("x", "A step of no derivation", "words")._repr_html_() is None
    with pytest.raises(KeyError):
        derivation.step("no-such-step")


SHARED = ("case", "step", "exact", "places", "sig", "rounding", "signed_zero", "carry", "output")


@pytest.mark.parametrize("command", ["latex", "markdown", "html"])
def test_document_commands_share_runs_options(command):
    group = typer.main.get_command(app)
    params = {name: {p.name: p for p in group.commands[name].params} for name in ("run", command)}
    for name in SHARED:
        run, other = params["run"][name], params[command][name]
        assert (run.opts, run.help if hasattr(run, "help") else None, run.default) == \
               (other.opts, other.help if hasattr(other, "help") else None, other.default), name


def test_cli_polish():
    """--version; flags shown as flags (no <bool>); help text reflowed, with check's exit
    rule as the README states it; a bundled case named by its name in errors; plurals."""
    from importlib.metadata import version

    runner = CliRunner()
    assert runner.invoke(app, ["--version"]).output.strip() == f"derive {version('derive')}"
    run_help = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "100"}).output
    assert "--exact " in run_help and "--exact <bool>" not in run_help.replace("  ", " ")
    assert not [line for line in run_help.splitlines() if "--exact" in line and "<bool>" in line]
    check_help = " ".join(runner.invoke(app, ["check", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "Exits 1 when any line is inherited, convention, wrong or unreadable" in check_help
    result = runner.invoke(app, ["generate", "cat-climbed", "-n", "2"])
    assert result.exit_code == 2
    assert "cat-climbed (bundled case)" in result.output and "site-packages" not in result.output
    assert "at most 1 new token," in " ".join(result.output.split())


def test_the_page_header_counts_in_the_singular():
    """The run's header: "1 significant figure", "1 place", "3 places" (a trial read
    "1 significant figures")."""
    from derive.cli import fmt_description
    from derive.rounding import Format

    assert fmt_description(Format(places=None, sig=1)) == "1 significant figure, half-away"
    assert fmt_description(Format(places=None, sig=5, mode="half-even")) == "5 significant figures, half-even"
    assert fmt_description(Format(places=1)) == "1 place, half-away"
    assert fmt_description(Format(places=3)) == "3 places, half-away"
