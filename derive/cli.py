"""The ``derive`` command line (typer): run a case, list the bundled cases."""

from __future__ import annotations

import errno
import os
import sys
import time
from contextlib import contextmanager
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from typer.core import TyperGroup
from typer.exceptions import TyperException

# What every command needs; a module only some commands use (the JSON export, the document
# renderers and their Jinja2 templates, the name parser and its Lark grammar, the checker)
# is imported inside the command that uses it, so that `derive run` does not pay for it.
from . import registry
from .byhand import CARRY_MODES
from .case import bundled_cases, load_case
from .derivation import derive
from .errors import DeriveError, file_name, max_mb, read_text
from .evaluate import Progress, reporting, set_aside
from .output import write_atomic
from .printing import counted
from .rounding import MINUS, MODES, Format
from .steps import HEAD_ROWS, ROW_LIMIT, TAIL_ROWS

if TYPE_CHECKING:
    from rich.console import Console

    from .page import Page

BUG_EXIT = 3  # a bug in derive (exit 2 is bad input, 1 a failed check)


def plain_console(**options) -> Console:
    """A Rich console that prints text as written: no emoji codes (a token or a title
    ``:smile:`` stays ``:smile:``, not an emoji), at least :data:`MIN_WIDTH` wide. Options
    as :class:`rich.console.Console`'s. (Rich's console is imported here, when a command
    prints through it: a page derive writes itself, :func:`show_page`, does not load it.)"""
    from rich.console import Console

    if "width" not in options and os.environ.get("COLUMNS", "").isdigit() and _columns() is None:
        options["width"] = _terminal_width()  # (COLUMNS=0: Rich would print nothing at all)
    console = Console(emoji=False, **options)
    if console.width < MIN_WIDTH:  # (COLUMNS=1: Rich drew tables of borders, no number in them)
        console.width = MIN_WIDTH
    return console


MIN_WIDTH = 20  # the narrowest page derive prints: narrower (COLUMNS=1), Rich's tables lose their text; at 20
# a number that does not fit its column folds, every digit printed (derive params at 20 columns)


def _columns() -> Optional[int]:
    """The width ``COLUMNS`` gives, when it is a positive number (at least :data:`MIN_WIDTH`);
    None when it is unset or not one (``COLUMNS=0`` made Rich print nothing at all, and exit 0)."""
    value = os.environ.get("COLUMNS", "")
    return max(MIN_WIDTH, int(value)) if value.isdigit() and int(value) > 0 else None


def _terminal_width() -> int:
    """The width of the first of stdin, stdout and stderr that is a terminal, as Rich's
    console reads it (:attr:`rich.console.Console.size`); 80 when none is (or says 0);
    at least :data:`MIN_WIDTH`."""
    for descriptor in (0, 1, 2):
        try:
            return max(MIN_WIDTH, os.get_terminal_size(descriptor).columns or 80)
        except (AttributeError, ValueError, OSError):  # (not a terminal)
            continue
    return 80


def print_error(message: str) -> None:
    """``error: MESSAGE`` on stderr, the word in bold red, the message as it is (not Rich
    markup) on one line however long."""
    from rich.markup import escape

    plain_console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", markup=True, highlight=False,
                                     soft_wrap=True)


class GracefulGroup(TyperGroup):
    """derive's command group: no traceback, ever (issue 13, item 3).

    A :class:`~derive.errors.DeriveError` that escapes a command is bad input: one line,
    exit code 2 (as :func:`fail`). Any other exception is a bug in derive: one line on
    stderr naming the exception, the case and the command as typed, exit code
    :data:`BUG_EXIT`; with ``derive --debug`` (or ``DERIVE_DEBUG=1``) the exception
    propagates and Python prints its traceback. A closed pipe (``derive run crane | head``)
    ends the run quietly with exit code 1. A usage error is one line too (:func:`usage_error`);
    typer's own exits (``--help``) pass through.
    """

    def make_context(self, info_name, args, parent=None, **extra):
        """The group's context, holding the command line as typed (``ctx.meta``) for the bug line."""
        words = list(args)
        try:
            ctx = super().make_context(info_name, args, parent=parent, **extra)
        except TyperException as exc:  # derive --no-such-option
            usage_error(exc)
        ctx.meta["derive.argv"] = words
        return ctx

    def invoke(self, ctx: typer.Context):
        try:
            return self._invoke(ctx)
        finally:
            set_aside(False)  # what derived() set aside goes back to the collector (a test runs many commands)

    def _invoke(self, ctx: typer.Context):
        try:
            return super().invoke(ctx)
        except TyperException as exc:  # a usage error (derive run --places 99, derive rnu): one line
            usage_error(exc)
        except (typer.Exit, typer.Abort):  # --help, exits: typer's own
            raise
        except DeriveError as exc:
            fail(exc)
        except BrokenPipeError:  # the reader went away: nothing to say, and nothing more to write
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(1) from None
        except Exception as exc:
            if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG) \
                    and not ctx.params.get("debug"):  # the output could not be written (> /dev/full): not a bug
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                print(f"error: cannot write the output: {exc.strerror}", file=sys.stderr)
                raise typer.Exit(2) from None
            if ctx.params.get("debug"):
                raise
            report_bug(exc, ctx.meta.get("derive.argv", []), self._case_of(ctx))

    def _case_of(self, ctx: typer.Context) -> Optional[str]:
        """The CASE (or FOLDER) argument of the command line, parsed again leniently; None if none."""
        try:
            words = [w for w in ctx.meta.get("derive.argv", []) if w not in ("--debug", "--no-debug")]
            while words and words[0].startswith("-"):
                words.pop(0)
            _, command, rest = self.resolve_command(ctx, words)
            sub = command.make_context(command.name, rest, parent=ctx, resilient_parsing=True)
            return sub.params.get("case") or sub.params.get("folder")
        except Exception:  # noqa: BLE001 -- the bug line is written all the same
            return None


def usage_error(exc: TyperException) -> None:
    """A usage error of the command line (an unknown command or option, a value out of its
    range, ``--places`` with ``--sig``) on one line, as :func:`fail` prints bad input, with
    the command whose ``--help`` lists what it takes, and exit code 2; typer's box of usage,
    hint and message (3 to 5 lines) is not printed. Anything else typer raises (no
    arguments at all: the help, which is how ``derive`` alone answers) goes on as typer's.

    Raises:
        typer.Exit: code 2, after the line; ``exc`` itself when it is not a usage error."""
    if getattr(exc, "exit_code", None) != 2 or not hasattr(exc, "format_message") \
            or type(exc).__name__ == "NoArgsIsHelpError":
        raise exc
    ctx = getattr(exc, "ctx", None)
    names = []  # the subcommands below the group, named as derive (not `root`, not `python -m derive`)
    while ctx is not None and ctx.parent is not None:
        names.insert(0, ctx.info_name)
        ctx = ctx.parent
    hint = f" (`{' '.join(['derive', *names])} --help` lists what it takes)"
    fail(DeriveError(" ".join(exc.format_message().split()) + hint))


def report_bug(exc: BaseException, argv: list[str], case: Optional[str]) -> None:
    """Print one line saying that ``exc`` is a bug in derive, with the case and the command
    (``derive ARGV``) and how to see the traceback, and exit with :data:`BUG_EXIT`.
    The exception's own text is cut to 200 characters and kept on the line."""
    import shlex

    what = " ".join(str(exc).split())
    if len(what) > 200:
        what = what[:197] + "..."
    command = shlex.join(["derive", *argv])
    debug = shlex.join(["derive", "--debug", *argv])
    where = f"case {case}, " if case else ""
    message = (f"a bug in derive, not in your input: {type(exc).__name__}" + (f": {what}" if what else "")
               + f" ({where}command: {command}); please report it with the case file; `{debug}` shows the traceback")
    try:  # a bundled case by its name, not its install path (when the bug is not in that lookup itself)
        for name, path in bundled_cases().items():
            message = message.replace(str(path), f"{name} (bundled case)")
    except Exception:  # noqa: BLE001
        pass
    print_error(message)
    raise typer.Exit(BUG_EXIT)


app = typer.Typer(help="Exact, correctly rounded worked examples of small hand-set transformers.",
                  cls=GracefulGroup, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  rich_markup_mode="markdown")

STEP_KEYS = tuple(registry.step_keys())  # every step key a registered operation's page has

Carry = Enum("Carry", {m: m for m in CARRY_MODES}, type=str)
Rounding = Enum("Rounding", {m.replace("-", "_"): m for m in MODES}, type=str)


def _version(shown: bool) -> None:
    if shown:
        from importlib.metadata import version

        print(f"derive {version('derive')}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option("--version", metavar="", callback=_version, is_eager=True,
                                                help="Print derive's version and exit.")] = False,
          debug: Annotated[bool, typer.Option("--debug", metavar="", envvar="DERIVE_DEBUG",
                                              help="Show the traceback of a bug in derive (exit code 3 "
                                              "otherwise prints one line); also DERIVE_DEBUG=1.")] = False) -> None:
    """Exact, correctly rounded worked examples of small hand-set transformers."""


class OutputFormat(str, Enum):
    rich = "rich"
    json = "json"


def fail(error: Exception) -> None:
    """Print a user error on one line and exit with code 2 (never a traceback).

    The message is printed as it is (a bundled case's file named by the case's name):
    brackets in it (``[[blocks]]``, ``blocks[1].W_Q``,
    ``['swish']``) are not Rich markup, and a line break in it becomes a space.
    """
    message = " ".join(str(error).splitlines())
    for name, path in bundled_cases().items():  # a bundled case by its name, not its install path
        message = message.replace(str(path), f"{name} (bundled case)")
    print_error(message)
    raise typer.Exit(2)


class ProgressBar(Progress):
    """A Rich progress bar on stderr for long work (issue 13, item 5): a spinner, the
    command, how many quantities are rounded or read by hand so far, and the time taken;
    shown only once the work has taken :data:`DELAY` seconds, redrawn at most ten times a
    second, and erased when the command ends (see :func:`progress_bar`)."""

    DELAY = 1.0  # seconds of work before the bar appears (a quick run shows none)
    REDRAW = 0.1  # seconds between two updates of the count

    def __init__(self, label: str, console: Optional[Console] = None):
        self.label = label
        self.console = console  # (None: stderr's, made when the bar is first shown)
        self.started = time.monotonic()
        self.shown = self.started
        self.done = 0
        self.bar = None

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.shown < self.REDRAW or now - self.started < self.DELAY:
            return
        self.shown = now
        if self.bar is None:
            from rich.progress import BarColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self.bar = RichProgress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                    TextColumn("{task.completed:,} quantities"), TimeElapsedColumn(),
                                    console=self.console or plain_console(stderr=True, force_terminal=True),
                                    transient=True, redirect_stdout=False, redirect_stderr=False)
            self.task = self.bar.add_task(self.label, total=None)
            self.bar.tasks[0].start_time = self.started  # the time shown counts from the start of the work
            self.bar.start()
        self.bar.update(self.task, completed=self.done)

    def stop(self) -> None:
        """Erase the bar (if it was shown)."""
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _is_terminal(stream) -> bool:
    """Whether ``stream`` (stdout, stderr) is a terminal itself (FORCE_COLOR and the like do
    not make a pipe one)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress_bar(label: str):
    """A :class:`ProgressBar` for the work of a block, when stderr is a terminal; nothing
    at all otherwise (a pipe, a file, the tests), so no output ever holds a bar."""
    if not _is_terminal(sys.stderr):
        yield
        return
    bar = ProgressBar(label)
    try:
        with reporting(bar):
            yield
    finally:
        bar.stop()


def make_format(places: Optional[int], sig: Optional[int], rounding: str, signed_zero: bool, minus: str) -> Format:
    """The run's :class:`Format` from the command-line options."""
    if places is not None and sig is not None:
        raise typer.BadParameter("give --places or --sig, not both")
    try:
        return Format(places=None if sig is not None else (3 if places is None else places), sig=sig,
                      mode=rounding, signed_zero=signed_zero, minus=minus)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def check_step(step: Optional[str]) -> Optional[str]:
    """Validate ``--step`` against :data:`STEP_KEYS`."""
    if step is not None and step not in STEP_KEYS:
        raise typer.BadParameter(f"unknown step {step!r}; expected one of {', '.join(STEP_KEYS)}")
    return step


def select_steps(derivation, step: Optional[str]) -> list:
    """The derivation's steps, or the one ``--step`` names.

    Raises:
        DeriveError: when the case has no such step (e.g. no loss without a target).
    """
    steps = [s for s in derivation.steps if step is None or s.key == step]
    if not steps:
        why = " (conventions.gradients = [] derives the loss alone: no gradient, no step, no pass after)" \
            if step in ("gradient", "sgd", "after") and derivation.case.conventions.gradients == () else ""
        raise DeriveError(f"case {derivation.case.name!r} has no step {step!r}{why}", file=derivation.case.path,
                          expected="one of its steps: " + ", ".join(s.key for s in derivation.steps))
    return steps


# Options shared by `run` and the document commands (latex, markdown, html).
CaseArg = Annotated[str, typer.Argument(help="A bundled case name (see `derive cases`) or a path to a case TOML file.")]
StepOpt = Annotated[Optional[str], typer.Option("--step", callback=check_step,
                                                help="Show one step only: " + ", ".join(STEP_KEYS) + ".")]
ExactOpt = Annotated[bool, typer.Option("--exact", metavar="", help="Also show every quantity's exact form (fraction, "
                                        "closed form, or its definition).")]
PlacesOpt = Annotated[Optional[int], typer.Option("--places", min=0, max=50,
                                                  help="Digits after the decimal point (default 3; at most 50).")]
SigOpt = Annotated[Optional[int], typer.Option("--sig", min=1, max=50,
                                               help="Significant figures instead of --places (at most 50).")]
RoundingOpt = Annotated[Rounding, typer.Option("--rounding", help="Rounding mode: half-away (the school rule), "
                                               "half-even, down (toward zero), floor or ceiling.")]
SignedZeroOpt = Annotated[bool, typer.Option("--signed-zero", metavar="", help="Print a negative value that rounds to zero as "
                                             "-0.000 (default: 0.000).")]
CarryOpt = Annotated[Carry, typer.Option("--carry", help="exact: every value from unrounded parents (the usual "
                                         "way); printed: each step recomputed from the previous step's printed "
                                         "values, as a student works on paper (the pass after the SGD step from "
                                         "the weights its table prints), with the drift from the exact values "
                                         "noted.")]
OutputOpt = Annotated[Optional[str], typer.Option("-o", "--output", help="Write to this file (atomically) instead "
                                                  "of the terminal.")]
WidthOpt = Annotated[Optional[int], typer.Option("--width", min=40, max=100_000, help="The width of the "
                                                 "page in characters (default: the terminal's; a file or pipe "
                                                 "gets what its widest table needs). A wider table is split "
                                                 "into groups of columns: no number is ever cut.")]
TemplatesOpt = Annotated[Optional[str], typer.Option("--templates", help="A folder of Jinja2 templates that replace "
                                                     "the words of the steps: KEY.j2 or KEY.FORMAT.j2 (see "
                                                     "docs/templates.md).")]


@app.command()
def run(
    case: CaseArg,
    step: StepOpt = None,
    exact: ExactOpt = False,
    places: PlacesOpt = None,
    sig: SigOpt = None,
    rounding: RoundingOpt = Rounding("half-away"),
    signed_zero: SignedZeroOpt = False,
    carry: CarryOpt = Carry("exact"),
    output_format: OutputFormat = typer.Option(OutputFormat.rich, "--format", help="rich: the step-by-step tables; "
                                               "json: one record per scalar quantity."),
    output: OutputOpt = None,
    width: WidthOpt = None,
    exact_forms: bool = typer.Option(True, "--exact-forms/--no-exact-forms", metavar="", help="json: each record's `exact` "
                                     "field holds the fraction, closed form or definition (the default); "
                                     "--no-exact-forms: the fraction of a rational value and null for any other, "
                                     "faster on a large case."),
) -> None:
    """Derive CASE: the forward pass, the loss, the gradients and one SGD step, every number
    exact and correctly rounded, printed step by step as a worked example in a book."""
    from .cells import Printer, step_refs
    from .page import Line, render_steps

    json_out = output_format == OutputFormat.json
    fmt = make_format(places, sig, rounding.value, signed_zero, "-" if json_out else MINUS)
    with progress_bar(f"derive run {case}"):  # erased before anything is printed on the terminal
        try:
            derivation = derived(case)
            if json_out:  # streamed: one record at a time, never the whole list or text
                from itertools import chain

                from .export_json import iter_records, json_chunks

                only = None if step is None else {r for s in select_steps(derivation, step) for r in step_refs(s)}
                chunks = json_chunks(iter_records(derivation, fmt, only, exact_forms))
                text = chain([next(chunks, "")], chunks)  # every number rounded before the first chunk
            else:
                steps = select_steps(derivation, step)
                printer = Printer(derivation, fmt, carry.value)
                page = render_steps(derivation, steps, printer, exact)
                page.parts.insert(0, Line(f"{derivation.case.title}  ({derivation.case.name}, {fmt_description(fmt)})"))
        except DeriveError as exc:
            fail(exc)
        if output is not None and not json_out:
            return show_page(page, width, output)
        if output is not None:
            try:
                write_atomic(output, text)
            except DeriveError as exc:
                fail(exc)
            return
    if json_out:
        for chunk in text:
            sys.stdout.write(chunk)
        return
    show_page(page, width)


def show_page(page: Page, width: Optional[int], output: Optional[str] = None) -> None:
    """Print ``page`` (:mod:`derive.page`) on stdout, or write it to the file ``output``,
    at ``width`` when given, else the terminal's (or ``COLUMNS``), or for a file or a pipe
    the widest table's own width (at least 120), so nothing is split that need not be; a
    table wider than the page is split into column groups, never cut (see
    :class:`derive.page.WholeTable`).

    derive writes the page itself (:meth:`derive.page.Page.text`: Rich's page, byte for
    byte, without loading Rich's console) to a file, and on stdout when it knows how Rich
    would print there (:func:`_stdout_styles`); any other page is printed by Rich
    (:func:`derive.render_rich.rich_page`), every line already fitting (tables split,
    paragraphs wrapped: Rich's crop would only split the page into lines again, and would
    cut a line that did not fit).

    Raises:
        typer.Exit: the output file cannot be written (:func:`fail`)."""
    if output is not None:
        width = width or max(120, page.natural_width())
        text = page.text(width)
        if text is None:
            from .render_rich import rich_page

            console = plain_console(width=width, record=True, file=open(os.devnull, "w"))
            console.print(rich_page(page), crop=False)
            text = console.export_text()
        try:
            write_atomic(output, text)
        except DeriveError as exc:
            fail(exc)
        return
    styles = _stdout_styles()
    width = width or _stdout_width(page)
    text = page.text(width, styles) if styles is not None else None
    if text is None:
        from .render_rich import rich_page

        plain_console(width=width).print(rich_page(page), crop=False)
    else:
        sys.stdout.write(text)


def _stdout_styles() -> Optional[bool]:
    """How derive writes a page on stdout itself, as Rich would print it there: False, the
    text alone (stdout is no terminal); True, with its styles' ANSI codes (a terminal, its
    ``TERM`` not ``dumb``). None when Rich prints it: ``FORCE_COLOR`` or ``TTY_COMPATIBLE``
    is set (what makes a terminal, :meth:`rich.console.Console.is_terminal`), on Windows
    (Rich narrows its legacy console by a column, and styles it through its API), in an
    encoding other than UTF (Rich draws ASCII boxes)."""
    encoding = (getattr(sys.stdout, "encoding", None) or "utf-8").lower()
    if sys.platform == "win32" or "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ \
            or not encoding.startswith("utf"):
        return None
    if not _is_terminal(sys.stdout):
        return False
    return None if os.environ.get("TERM", "").lower() in ("dumb", "unknown") else True


def _stdout_width(page: Page) -> int:
    """The width of a page on stdout: ``COLUMNS`` when it is a positive number (anything
    else in it is not read), else the terminal's (:func:`_terminal_width`), or for a file
    or a pipe the width its tables need (at least 120)."""
    columns = _columns()
    if columns is not None:
        return columns
    return _terminal_width() if _is_terminal(sys.stdout) else max(120, page.natural_width())


MathDelimiters = Enum("MathDelimiters", {"dollars": "dollars", "brackets": "brackets"}, type=str)
Flavor = Enum("Flavor", {f: f for f in ("pandoc", "katex", "github")}, type=str)
FlavorOpt = Annotated[Flavor, typer.Option("--flavor", help="What renders the Markdown, so that its math survives: "
                                           "pandoc (also Jupyter and math-aware processors: the TeX as it is), "
                                           "katex (a plain CommonMark processor, then KaTeX's auto-render: "
                                           "backslashes and Markdown punctuation escaped) or github ($\\`...\\`$ "
                                           "and \\`\\`\\`math blocks).")]
MathOpt = Annotated[Optional[MathDelimiters], typer.Option("--math", help="Math delimiters: dollars ($...$ and "
                                                           "$$...$$) or brackets (\\\\(...\\\\) and \\\\[...\\\\]); "
                                                           "default brackets for katex (auto-render's own), "
                                                           "dollars otherwise; github reads dollars only.")]


def write_document(renderer, case: str, output: Optional[str], step: Optional[str], standalone: bool,
                   templates: Optional[str], fmt_options: tuple, carry: str, exact: bool, **options) -> None:
    """Render CASE with a :class:`~derive.render_doc.DocumentRenderer` subclass and write it
    to ``output`` (atomically) or to the terminal; a user error exits with code 2.
    ``fmt_options`` are (places, sig, rounding, signed_zero) as given on the command line."""
    from .templates import Templates

    fmt = make_format(*fmt_options, renderer.minus)
    try:
        with progress_bar(f"derive {renderer.__name__.removesuffix('Renderer').lower()} {case}"):
            derivation = derived(case)
            words = Templates(templates) if templates is not None else None
            text = renderer(derivation, fmt, carry=carry, exact=exact, templates=words, **options).render(
                select_steps(derivation, step), standalone)
            if output is not None:
                write_atomic(output, text)
    except DeriveError as exc:
        fail(exc)
    if output is None:
        sys.stdout.write(text)


@app.command()
def latex(
    case: CaseArg,
    output: OutputOpt = None,
    step: StepOpt = None,
    standalone: bool = typer.Option(False, "--standalone", metavar="", help="A whole document that compiles alone with "
                                    "pdflatex (default: a fragment to \\input, whose first lines name the "
                                    "packages it needs)."),
    exact: ExactOpt = False,
    all_rows: bool = typer.Option(False, "--all-rows", metavar="", help="Print every row of a large table (default: "
                                  f"a table of more than {ROW_LIMIT} rows shows its first {HEAD_ROWS} and last "
                                  f"{TAIL_ROWS} rows, and says how many it leaves out)."),
    templates: TemplatesOpt = None,
    places: PlacesOpt = None,
    sig: SigOpt = None,
    rounding: RoundingOpt = Rounding("half-away"),
    signed_zero: SignedZeroOpt = False,
    carry: CarryOpt = Carry("exact"),
) -> None:
    """The worked example of CASE as LaTeX: booktabs tables with the numbers aligned on the
    decimal point (siunitx), equations in aligned, the last-digit notes under each table."""
    from .render_latex import LatexRenderer

    write_document(LatexRenderer, case, output, step, standalone, templates,
                   (places, sig, rounding.value, signed_zero), carry.value, exact, all_rows=all_rows)


@app.command()
def markdown(
    case: CaseArg,
    output: OutputOpt = None,
    step: StepOpt = None,
    flavor: FlavorOpt = Flavor("pandoc"),
    math: MathOpt = None,
    fragment: bool = typer.Option(False, "--fragment", metavar="", help="Leave out the title and the opening sentence."),
    exact: ExactOpt = False,
    templates: TemplatesOpt = None,
    places: PlacesOpt = None,
    sig: SigOpt = None,
    rounding: RoundingOpt = Rounding("half-away"),
    signed_zero: SignedZeroOpt = False,
    carry: CarryOpt = Carry("exact"),
) -> None:
    """The worked example of CASE as Markdown with KaTeX/MathJax math: one section per step,
    Markdown tables, equations in aligned, the math written for the renderer --flavor names."""
    from .render_markdown import FLAVORS, MarkdownRenderer

    if math is not None and math.value not in FLAVORS[flavor.value]:
        raise typer.BadParameter(f"--flavor {flavor.value} writes math between dollars only", param_hint="--math")
    write_document(MarkdownRenderer, case, output, step, not fragment, templates,
                   (places, sig, rounding.value, signed_zero), carry.value, exact, flavor=flavor.value,
                   math=math and math.value)


@app.command()
def html(
    case: CaseArg,
    output: OutputOpt = None,
    step: StepOpt = None,
    exact: ExactOpt = False,
    templates: TemplatesOpt = None,
    places: PlacesOpt = None,
    sig: SigOpt = None,
    rounding: RoundingOpt = Rounding("half-away"),
    signed_zero: SignedZeroOpt = False,
    carry: CarryOpt = Carry("exact"),
) -> None:
    """The worked example of CASE as one self-contained web page: numbered steps that open in
    place, math typeset by KaTeX inlined in the page (nothing is fetched when it is viewed)."""
    from .render_html import HtmlRenderer

    write_document(HtmlRenderer, case, output, step, True, templates,
                   (places, sig, rounding.value, signed_zero), carry.value, exact)


@app.command("explain")
def explain_command(
    case: str = typer.Argument(..., help="A bundled case name or a path to a case TOML file."),
    name: str = typer.Argument(..., help="The quantity, as the chapter writes it: z_roof, 'a_{5,3}', 'h_5[1]', "
                               "sigma_5, 'p(␣roof)', L. A row name (u_5) explains each component."),
    block: Optional[int] = typer.Option(None, "--block", help="The block, when the name occurs in several."),
    head: Optional[int] = typer.Option(None, "--head", help="The head, for per-head quantities (q.k, s, a, o)."),
    places: PlacesOpt = None,
    sig: SigOpt = None,
    rounding: Rounding = typer.Option("half-away", "--rounding", help="Rounding mode, as for `derive run`."),
) -> None:
    """Explain one quantity: its definition, its inputs (exact and printed), the reader's
    calculation from the printed inputs, the exact one, and why their last digits differ."""
    from .cells import Printer
    from .check import Checker
    from .explain import explain, explain_masked_score, explain_setting
    from .handfile import read_name

    fmt = make_format(places, sig, rounding.value, False, MINUS)
    try:
        derivation = derived(case)
        checker = Checker(derivation, rounding.value)
        setting = checker.setting(name)  # eta, d_k, T: as `derive check` judges a line that defines one
        if setting is not None:
            lines = explain_setting(*setting) + [""]
        else:
            printer = Printer(derivation, fmt)
            try:
                refs = checker.named(name, block, head)  # as `derive check` reads a name
            except DeriveError:
                masked = checker.masked_score(name, block, head)  # s_{1,2}: -inf by the mask, no quantity
                label = read_name(name)[0]
                exp = not masked and label.startswith("e^")  # e^{s_{1,2}}: e^-inf = 0
                masked = masked or (checker.masked_score(label[2:], block, head) if exp else [])
                if not masked:
                    raise
                lines = explain_masked_score(derivation, printer, masked[0], exp) + [""]
            else:
                lines = [line for ref in refs for line in explain(derivation, printer, ref) + [""]]
    except DeriveError as exc:
        fail(exc)
    plain_console().print("\n".join(lines), highlight=False, markup=False)


@app.command("check")
def check_command(
    case: str = typer.Argument(..., help="A bundled case name or a path to a case TOML file."),
    file: str = typer.Argument(..., help="The hand computation: named lines (u_5 = [...], p(␣roof) = 0.395), "
                               "arithmetic (e^{2.400} = 11.023), Markdown tables, LaTeX aligned lines; "
                               "'Head 1' / 'block 2' lines set the head or block of what follows; - reads the standard input."),
    rounding: Rounding = typer.Option("half-away", "--rounding", help="The rounding rule the reader used."),
    output_format: OutputFormat = typer.Option(OutputFormat.rich, "--format", help="rich: a report; json: one "
                                               "record per checked entry."),
) -> None:
    """Check a hand computation line by line: correct; correct given the rounded inputs
    (explained); inherited from an earlier wrong line; right under another convention
    (named); wrong (with the exact value); unreadable; not checked (a name derive does not know).
    Exits 1 when any line is inherited, convention, wrong or unreadable (not checked lines do
    not fail it), 2 on bad input (an empty file among it)."""
    from .check import FAILING, MAX_HAND_MB, Checker

    try:
        derivation = derived(case)
        limit = max_mb("DERIVE_MAX_HAND_MB", MAX_HAND_MB, file_name(file))
        text = read_text(file, limit=(limit, f"a hand file of at most {limit:g} MB, whose time and memory grow with it; "
                                             "DERIVE_MAX_HAND_MB=N raises it on purpose"))
        if not text.lstrip("\ufeff").strip():  # (nothing to check is bad input, not a pass)
            raise DeriveError("the file is empty", file=file_name(file),
                              expected="lines of a hand computation, such as `sigma_5 = 0.866`")
        verdicts = Checker(derivation, rounding.value).check_text(text)
    except DeriveError as exc:
        fail(exc)
    try:  # a report that cannot be written (a full disk, a closed pipe) is an error, never exit 0
        if output_format == OutputFormat.json:  # (streamed: json.dumps(verdicts, indent=1), a record at a time)
            from .check import json_chunks

            for chunk in json_chunks(verdicts):
                sys.stdout.write(chunk)
        else:
            from .render_rich import print_verdicts
            print_verdicts(plain_console(), verdicts, file_name(file))
        sys.stdout.flush()
    except OSError as exc:
        fail(DeriveError(f"cannot write the report: {exc.strerror or exc}"))
    if any(v.status in FAILING for v in verdicts):
        raise typer.Exit(1)


def fmt_description(fmt: Format) -> str:
    """``3 places, half-away`` or ``5 significant figures, half-even``."""
    amount = counted(fmt.places, "place") if fmt.places is not None else counted(fmt.sig, "significant figure")
    return f"{amount}, {fmt.mode}"


@app.command()
def cases() -> None:
    """List the bundled cases: their names (for `derive run NAME`) and prompts."""
    console = plain_console()
    for name, path in sorted(bundled_cases().items()):
        try:
            case = load_case(str(path))
            if case.logits is not None:  # a softmax exercise: no model
                console.print(f"{name}: {case.title!r} (logits over {counted(len(case.pieces), 'token')})",
                              highlight=False)
                continue
            heads = max(len(b.heads) if b.heads else case.heads for b in case.blocks)
            console.print(f"{name}: {case.title!r} ({counted(len(case.tokens), 'token')}, d_model = {case.d_model}, "
                          f"{counted(heads, 'head')}, {counted(len(case.blocks), 'block')})", highlight=False)
        except DeriveError as exc:
            console.print(f"{name}: cannot load ({exc})", highlight=False)


@app.command("verify")
def verify_command(
    case: str = typer.Argument(..., help="A bundled case name or a path to a case TOML file."),
    check: str = typer.Argument(..., help="rotation (PE[pos+k] = R_k PE[pos] for sinusoids), uniform-keys "
                                "(identical keys: uniform weights, the plain average of the values), "
                                "temperature (T keeps the most probable token), shift (a constant added to "
                                "every logit changes nothing), or all."),
) -> None:
    """Check a textbook fact about attention on CASE, exactly: prints what was checked and PASS or
    FAIL; exits 1 on a FAIL, 2 on bad input (or a check that does not apply)."""
    from .verify import verify

    try:
        results = verify(load_case(case), check)
    except DeriveError as exc:
        fail(exc)
    console = plain_console()
    for result in results:
        verdict = "[yellow]SKIP[/]" if result.skipped else "[green]PASS[/]" if result.passed else "[bold red]FAIL[/]"
        console.print(f"[bold]{result.name}[/]: {verdict}", highlight=False)
        for line in result.lines:
            console.print(f"  {line}", markup=False, highlight=False)
    if not all(r.passed for r in results):
        raise typer.Exit(1)


@app.command("generate")
def generate_command(
    case: CaseArg,
    n: int = typer.Option(1, "-n", min=1, help="How many tokens to generate."),
    places: PlacesOpt = None,
    sig: SigOpt = None,
    rounding: RoundingOpt = Rounding("half-away"),
    signed_zero: SignedZeroOpt = False,
    carry: CarryOpt = Carry("exact"),
    width: WidthOpt = None,
) -> None:
    """Greedy generation: append the argmax of the logits (a tie goes to the lowest id) to
    the prompt and derive again, N times; one worked step per new token (the logits and
    softmax table of that step, rounded as by `derive run`, and the chosen token)."""
    from .generate import generate
    from .page import Line, render_generated

    fmt = make_format(places, sig, rounding.value, signed_zero, MINUS)
    try:
        loaded = load_case(case)
        page = render_generated(loaded, generate(loaded, n), fmt, carry.value)
    except DeriveError as exc:
        fail(exc)
    page.parts.insert(0, Line(f"{loaded.title}  ({loaded.name}, {fmt_description(fmt)})"))
    show_page(page, width)


@app.command("import")
def import_command(
    folder: str = typer.Argument(..., help="A Hugging Face checkpoint folder: config.json and model.safetensors "
                                           "(GPT2LMHeadModel or LlamaForCausalLM)."),
    output: str = typer.Option(..., "-o", "--output", help="The case file to write; its weights go to the "
                                                           "same name with .safetensors."),
    prompt: Optional[str] = typer.Option(None, "--prompt", help="The prompt, tokenized with the checkpoint's "
                                                                "tokenizer.json."),
    ids: Optional[str] = typer.Option(None, "--ids", help="The prompt's token ids, 1,2,3 (without tokenizer.json)."),
    target: Optional[str] = typer.Option(None, "--target", help="A next token (piece or id): adds the loss "
                                                                "and its gradient (trained = [])."),
) -> None:
    """A Hugging Face checkpoint on disk as a case: the TOML (settings, vocabulary, prompt)
    and, next to it, its weights in derive's names in a safetensors file, exact."""
    import time
    from pathlib import Path

    from .checkpoint import import_checkpoint
    from .weights import serialize

    start = time.perf_counter()
    try:
        token_ids = None
        if ids is not None:
            try:
                token_ids = [int(i) for i in ids.replace(" ", "").split(",") if i]
            except ValueError:
                raise DeriveError(f"{ids!r} is not a list of ids", field="--ids",
                                  expected="token ids separated by commas, 1,2,3") from None
        case_path = Path(output)
        weights_path = case_path.with_suffix(".safetensors")
        if case_path == weights_path:
            raise DeriveError("is the weights file's own name", field="-o",
                              expected="a case file name such as case.toml (its weights go to case.safetensors)")
        imported = import_checkpoint(folder, weights_path.name, prompt, token_ids, target)
        write_atomic(weights_path, serialize(imported.tensors, {"source": str(Path(folder).resolve()),
                                                                "architecture": imported.architecture}))
        write_atomic(case_path, imported.toml)
        load_case(str(case_path))  # the case loads as written
    except DeriveError as exc:
        fail(exc)
    plain_console().print(f"wrote {case_path} and {weights_path.name}: {imported.architecture}, "
                    f"{counted(imported.tokens, 'token')}, {imported.values} weights, exact "
                    f"({time.perf_counter() - start:.2f} s); next: derive run {case_path}", highlight=False)


@app.command("params")
def params_command(
    case: str = typer.Argument(..., help="A bundled case name or a path to a case TOML file."),
) -> None:
    """Where the weights are: the case's parameter count piece by piece (E, P, W_Q/W_K/W_V,
    W_O, W_1/W_2, W_U, total), beside GPT-2 small's; biases and
    LayerNorm gains and biases on a line of their own."""
    from .page import WholeTable
    from .params import side_by_side
    from .render_rich import rich_part

    try:
        rows, notes = side_by_side(load_case(case))
    except DeriveError as exc:
        fail(exc)
    columns = ["piece", "shape", "this case", "GPT-2 small (12 blocks)", "exact"]
    console = plain_console()  # (a table that never cuts a number: split into column groups on a narrow page)
    console.print(rich_part(WholeTable(f"Where the weights are ({case})", columns, [list(row) for row in rows])))
    console.print("\n".join(notes), highlight=False)


def derived(case: str):
    """The derivation of CASE (a bundled name or a path) for one command, set aside from
    the garbage collector's full passes (``gc.freeze``) until the command ends (the group's
    invoke gives it back, however the command ends): its objects (a node, a value and a text
    per scalar) live that long, and each full pass rescanned them all (``derive run crane``:
    2.5 s of its 10 went to such passes).

    Raises:
        DeriveError: bad input (see :func:`derive.case.load_case`, :func:`derive.derivation.derive`)."""
    derivation = derive(load_case(case))
    set_aside(True)
    return derivation


def main() -> None:
    """The command: typer's app, run as ``derive`` (through :func:`derive.__main__.main`,
    which raises the collector's threshold before this module is imported).

    The command's objects are left to the operating system when it ends: once stdout and
    stderr are flushed, the process exits without Python's teardown, which frees every
    object and module one by one (``derive run cat-climbed``: 0.1 s of 0.5; crane's JSON:
    0.6 s). A flush that fails (a closed pipe, a full disk) goes Python's usual way."""
    try:
        for_command(sys.argv[1:])()
    except SystemExit as exc:  # (typer's standalone mode always ends here, as sys.exit does)
        exit_now(exc)
        raise


def for_command(argv: list[str]) -> typer.Typer:
    """The app as it runs ``derive ARGV``: when the first word that is not an option names
    a command, a copy of :data:`app` holding that command alone, else the app itself
    (``derive``, ``--help``, a misspelled command: every command is listed or suggested).
    Typer makes the click command of every registered command (its options read from the
    function's signature) before it runs one: 12 ms of CPU for derive's eleven, 3 ms for
    one, of a ``derive run cat-climbed`` of about 250 ms. The global options (``--debug``,
    ``--version``) take no value, so the first word that is not an option is the command."""
    from copy import copy

    name = next((word for word in argv if not word.startswith("-")), None)
    kept = [info for info in app.registered_commands
            if (info.name or typer.main.get_command_name(info.callback.__name__)) == name]
    if not kept:
        return app
    one = copy(app)
    one.registered_commands = kept
    return one


def exit_now(exc: SystemExit) -> None:
    """End the process with ``exc``'s exit code, skipping Python's teardown (``os._exit``),
    after flushing stdout and stderr; return (for the caller to raise ``exc``) when a
    flush fails or the code is not an integer or None (sys.exit's message), so that Python
    reports and exits as usual. No atexit handler of derive's needs to run (a forked child
    of :mod:`derive.isolated` is waited for by the call that made it)."""
    code = exc.code
    if code is not None and not isinstance(code, int):
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # (a closed pipe or stream: Python's own exit says what it always says)
        return
    os._exit(code or 0)
