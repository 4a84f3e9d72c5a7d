"""No traceback, ever (issue 13, item 3): an unexpected exception inside any command is one
line on stderr saying it is a bug in derive, with the case and the command as typed, and
exit code 3 (bad input stays exit code 2); ``derive --debug`` or ``DERIVE_DEBUG=1`` shows
the traceback instead.

The bugs here are made on purpose: an internal function is replaced by one that raises.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import derive.cli
from derive.cli import BUG_EXIT, app
from derive.errors import DeriveError


def boom(*args, **kwargs):
    raise ZeroDivisionError("division by zero")


def invoke(*args: str, env: dict | None = None):
    """``derive ARGS`` in this process; stdout and stderr apart."""
    return CliRunner().invoke(app, list(args), env=env)


def bug_line(result) -> str:
    """The one stderr line of a bug, checked: exit code 3, nothing else on stderr, no traceback."""
    assert result.exit_code == BUG_EXIT == 3, (result.exit_code, result.output, result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output and "Traceback" not in result.stderr
    assert lines[0].startswith("error: a bug in derive"), lines[0]
    return lines[0]


@pytest.mark.parametrize("args, case", [
    (["run", "cat-climbed", "--sig", "4"], "cat-climbed"),
    (["run", "softmax", "--format", "json"], "softmax"),
    (["explain", "cat-climbed", "z_roof"], "cat-climbed"),
    (["markdown", "woodchuck", "--exact"], "woodchuck"),
])
def test_an_unexpected_exception_is_one_line_naming_case_and_command(monkeypatch, args, case):
    monkeypatch.setattr(derive.cli, "derive", boom)
    line = bug_line(invoke(*args))
    assert "ZeroDivisionError: division by zero" in line
    assert f"case {case}," in line
    assert "command: derive " + " ".join(args) in line
    assert "derive --debug " + " ".join(args) in line


def test_a_bug_while_writing_a_file_leaves_no_file(monkeypatch, tmp_path):
    monkeypatch.setattr(derive.cli, "write_atomic", boom)
    out = tmp_path / "cat.tex"
    line = bug_line(invoke("latex", "cat-climbed", "-o", str(out)))
    assert "-o " + str(out) in line
    assert not out.exists()


def test_a_bug_in_a_command_without_a_case_names_the_command(monkeypatch):
    monkeypatch.setattr(derive.cli, "bundled_cases", boom)  # also what the bug line itself uses
    line = bug_line(invoke("cases"))
    assert "(command: derive cases)" in line


def test_the_bug_line_is_one_short_line_whatever_the_message(monkeypatch):
    def long_message(*args, **kwargs):
        raise RuntimeError("first line\nsecond line\n" + "x" * 10_000)

    monkeypatch.setattr(derive.cli, "derive", long_message)
    line = bug_line(invoke("run", "cat-climbed"))
    assert "RuntimeError: first line second line xxx" in line
    assert len(line) < 600


def test_debug_shows_the_exception(monkeypatch):
    monkeypatch.setattr(derive.cli, "derive", boom)
    for result in (invoke("--debug", "run", "cat-climbed"), invoke("run", "cat-climbed", env={"DERIVE_DEBUG": "1"})):
        assert isinstance(result.exception, ZeroDivisionError)
        assert result.exit_code not in (0, 2, 3)


def test_a_user_error_raised_outside_a_commands_own_handler_stays_exit_2(monkeypatch):
    def bad(*args, **kwargs):
        raise DeriveError("what went wrong", file="x.toml", field="model.E")

    monkeypatch.setattr(derive.cli, "show_page", bad)
    result = invoke("run", "cat-climbed")
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: x.toml: field model.E: what went wrong"


def test_bad_input_is_still_exit_2_and_usage_errors_are_typers():
    assert invoke("run", "no-such-case").exit_code == 2
    assert invoke("run", "cat-climbed", "--places", "99").exit_code == 2
    assert invoke("run", "cat-climbed", "--step", "tokens").exit_code == 0


def test_a_closed_pipe_ends_quietly(monkeypatch):
    def closed(*args, **kwargs):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(derive.cli, "show_page", closed)
    result = invoke("run", "cat-climbed")
    assert result.exit_code == 1
    assert result.stderr == ""


PATCHED = ("import sys, derive.cli as c\n"
           "def boom(*a, **k): raise KeyError('no such node')\n"
           "c.derive = boom\n"
           "sys.argv[0] = 'derive'\n"
           "c.app()\n")


@pytest.mark.parametrize("debug", [False, True])
def test_in_a_process_of_its_own(debug, tmp_path):
    """The installed entry point as a user meets it: stderr is one line, or the traceback."""
    env = {"PATH": str(Path(sys.executable).parent), "DERIVE_DEBUG": "1" if debug else "0"}
    done = subprocess.run([sys.executable, "-c", PATCHED, "run", "cat-climbed", "--exact"], env=env,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    if debug:
        assert done.returncode == 1
        assert "Traceback (most recent call last)" in done.stderr and "KeyError: 'no such node'" in done.stderr
    else:
        assert done.returncode == 3, done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert "KeyError: 'no such node'" in done.stderr and "derive run cat-climbed --exact" in done.stderr
        assert done.stdout == ""


@pytest.mark.parametrize("args", [("run", "cat-climbed"), ("latex", "cat-climbed"), ("markdown", "cat-climbed"),
                                  ("latex", "cat-climbed", "--output", "/nonexistent-folder/x.tex")])
def test_a_command_gives_back_what_it_set_aside_from_the_garbage_collector(monkeypatch, args):
    """A command sets its derivation aside from the collector's full passes (cli.derived:
    gc.freeze) and gives it back when it ends, however it ends (here the last fails to
    write its file): a process that runs many commands (the tests) keeps collecting them."""
    import gc

    during = []
    real = derive.cli.select_steps  # called once the case is derived
    monkeypatch.setattr(derive.cli, "select_steps", lambda *a: (during.append(gc.get_freeze_count()), real(*a))[1])
    invoke(*args)
    assert during and during[0] > 0  # set aside while the page is made
    assert gc.get_freeze_count() == 0  # and given back


MAIN = ("import atexit, sys, derive.__main__ as c\n"
        "atexit.register(lambda: sys.stderr.write('teardown ran\\n'))\n"
        "sys.argv[0] = 'derive'\n"
        "c.main()\n")


@pytest.mark.parametrize("args, code", [(("run", "cat-climbed", "--step", "loss"), 0), (("run", "no-such-case"), 2)])
def test_the_entry_point_ends_without_pythons_teardown(args, code, tmp_path):
    """The installed entry point (derive.__main__.main) leaves the command's objects to the operating
    system: no atexit handler runs (Python's teardown is skipped), yet the exit code is the
    command's and everything it wrote is there (stdout and stderr flushed first)."""
    done = subprocess.run([sys.executable, "-c", MAIN, *args], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == code, done.stderr
    assert "teardown ran" not in done.stderr
    if code == 0:  # the seed's loss, L = 0.928 nats, the page's last line
        assert done.stdout.rstrip().endswith("the exact value 0.92773\u2026 rounds to 0.928.")
    else:
        assert done.stderr.startswith("error: no such case file") and done.stderr.count("\n") == 1


@pytest.mark.parametrize("code, flush_fails, exits_with", [(0, False, 0), (None, False, 0), (2, False, 2),
                                                           (0, True, None), ("a message", False, None)])
def test_exit_now_skips_the_teardown_only_after_a_clean_flush(monkeypatch, code, flush_fails, exits_with):
    """cli.exit_now ends the process (os._exit) with the command's code once stdout and
    stderr are flushed; when a flush fails (a reader that went away) or the code is
    sys.exit's message, it returns, and Python exits its usual way."""
    import io

    class Stream(io.StringIO):
        def flush(self):
            if flush_fails:
                raise BrokenPipeError(32, "Broken pipe")

    exits = []
    monkeypatch.setattr(derive.cli.os, "_exit", exits.append)
    monkeypatch.setattr(sys, "stdout", Stream())
    derive.cli.exit_now(SystemExit(code))
    assert exits == ([] if exits_with is None else [exits_with])


def test_the_entry_point_raises_the_collectors_threshold_before_importing_the_cli(tmp_path):
    """derive.__main__.main sets the young threshold (GC_THRESHOLD) before derive.cli and
    the libraries under it are imported: their import no longer pays for collections."""
    spy = ("import gc, sys\n"
           "real = gc.set_threshold\n"
           "def spy(*a):\n"
           "    sys.stderr.write(f'threshold {a[0]}, cli imported: {\"derive.cli\" in sys.modules}\\n')\n"
           "    real(*a)\n"
           "gc.set_threshold = spy\n"
           "import derive.__main__ as m\n"
           "sys.argv[0] = 'derive'\n"
           "m.main()\n")
    done = subprocess.run([sys.executable, "-c", spy, "--help"], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == "threshold 20000, cli imported: False"
