"""Progress on long work (issue 13, item 5): a Rich progress bar on stderr counts the
quantities rounded and read by hand, once the work has taken ProgressBar.DELAY seconds,
and only when stderr is a terminal: a pipe, a file or a test sees nothing, and stdout
never holds a bar."""

from __future__ import annotations

import io
import subprocess
import sys

from rich.console import Console
from typer.testing import CliRunner

import derive.cli
from derive.cli import ProgressBar, app
from derive.evaluate import Progress, progress, reporting


def test_the_bar_counts_quantities_once_the_delay_has_passed(monkeypatch):
    monkeypatch.setattr(ProgressBar, "REDRAW", 0.0)
    out = io.StringIO()
    bar = ProgressBar("derive run crane", Console(file=out, force_terminal=True, width=100))
    bar.started -= ProgressBar.DELAY  # a second of work done already
    with reporting(bar):
        assert progress() is bar
        for _ in range(1234):
            progress().advance()
    assert isinstance(progress(), Progress) and progress() is not bar  # the no-op one again
    bar.bar.refresh()
    shown = out.getvalue()
    bar.stop()
    assert "derive run crane" in shown and "1,234 quantities" in shown


def test_no_bar_before_the_delay():
    out = io.StringIO()
    bar = ProgressBar("derive run x", Console(file=out, force_terminal=True))
    bar.advance(10)
    bar.stop()
    assert bar.done == 10 and out.getvalue() == ""


def run(env: dict | None = None):
    return CliRunner().invoke(app, ["run", "woodchuck", "--sig", "4"], env=env)


def test_a_run_on_a_terminal_shows_the_bar_on_stderr_only(monkeypatch):
    monkeypatch.setattr(ProgressBar, "DELAY", 0.0)
    monkeypatch.setattr(ProgressBar, "REDRAW", 0.0)
    plain = run()
    assert run({"FORCE_COLOR": "1"}).stderr == ""  # colour asked for, but stderr is no terminal
    monkeypatch.setattr(derive.cli, "_is_terminal", lambda stream: stream is sys.stderr)  # (stdout: a pipe still)
    shown = run()
    assert shown.exit_code == 0 and "quantities" in shown.stderr and "derive run woodchuck" in shown.stderr
    assert "quantities" not in shown.stdout
    assert plain.stderr == "" and plain.stdout == shown.stdout


def test_quiet_when_stderr_is_not_a_terminal(monkeypatch):
    monkeypatch.setattr(ProgressBar, "DELAY", 0.0)
    monkeypatch.setattr(ProgressBar, "REDRAW", 0.0)
    calls = []
    monkeypatch.setattr(ProgressBar, "advance", lambda self, n=1: calls.append(n))
    result = run()
    assert result.exit_code == 0 and result.stderr == "" and calls == []  # no bar was even made


def test_a_pipe_sees_no_bar():
    """A process of its own, stderr a pipe: nothing on it (the documents too)."""
    for args in (["run", "cat-climbed", "--exact"], ["markdown", "cat-climbed"]):
        done = subprocess.run([sys.executable, "-m", "derive", *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stderr == ""
