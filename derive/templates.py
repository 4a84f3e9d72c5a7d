"""An author's own words around the numbers: Jinja2 templates, one per step.

The built-in words and titles come from each rule (:class:`derive.steps.Step`). With
``--templates DIR`` an author replaces them without forking derive. For the step with key
``KEY`` (``layernorm``, ``attention``, ... see ``derive run --step``) and the output
``FORMAT`` (``latex``, ``markdown`` or ``html``), the first file found is used:

- ``DIR/KEY.FORMAT.j2``: its output goes into the document as it is (raw LaTeX, Markdown
  or HTML);
- ``DIR/KEY.j2``: its output is *marked text*, as the rules write their words: prose,
  ``$...$`` around a formula in the plain notation (``$sigma_5 = sqrt(var + eps)$``) and
  backticks around a vocabulary piece; each format prints it in its own way.

A step with neither file keeps the rule's words. Templates run in Jinja2's
:class:`~jinja2.sandbox.SandboxedEnvironment`: they see the variables below, not Python's
internals (``''.__class__.__mro__`` is an error, and nothing runs). A template may set the step's title with
``{% set title = "..." %}``. Variables a template sees:

``words``, ``title``
    the rule's words and title (marked text), to quote or extend;
``step``, ``number``
    the :class:`~derive.steps.Step` and its number in the worked example;
``case``, ``fmt``, ``format``
    the :class:`~derive.case.Case`, the run's :class:`~derive.rounding.Format` and the
    output format's name;
``eq``
    the printed value of each of the step's equations, by its left-hand side
    (``eq["mu_5"]`` is ``0.000``);
``value(name)``
    the printed value of any quantity by the chapter's name (``value("z_roof")``,
    ``value("u_5")`` for a whole row, see :mod:`derive.names`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from .errors import DeriveError
from .isolated import OverBudget, budget

FORMATS = ("latex", "markdown", "html")
TEMPLATE_SECONDS = 10.0  # the time one template may run (a sandboxed loop of 10^10 steps would run for hours)


@dataclass
class Words:
    """A step's words and title as a renderer prints them.

    ``raw`` is True when ``words`` is already in the output format (a ``KEY.FORMAT.j2``
    template), False when it is marked text."""

    title: str
    words: str
    raw: bool = False


class Templates:
    """The Jinja2 templates in one folder (see the module docstring).

    Raises:
        DeriveError: when ``folder`` is not a folder.
    """

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise DeriveError("not a folder of templates", file=str(self.folder))
        self.env = SandboxedEnvironment(loader=jinja2.FileSystemLoader(str(self.folder)),
                                      undefined=jinja2.StrictUndefined, autoescape=False,
                                      keep_trailing_newline=False)

    def words(self, key: str, output: str, built_in: Words, context: dict) -> Words:
        """The words of the step ``key`` in the format ``output``: the author's template's,
        or ``built_in`` when the folder has none for this step.

        Raises:
            DeriveError: when the template does not compile or fails (an undefined
                variable, a name ``value`` does not know), naming the file and line.
        """
        if output not in FORMATS:
            raise ValueError(f"unknown output format {output!r}")
        for name, raw in ((f"{key}.{output}.j2", True), (f"{key}.j2", False)):
            if not (self.folder / name).is_file():
                continue
            try:
                with budget(TEMPLATE_SECONDS):
                    module = self.env.get_template(name).make_module(
                        dict(context, words=built_in.words, title=built_in.title, format=output))
            except OverBudget:
                raise DeriveError(f"the template runs for more than {TEMPLATE_SECONDS:g} s (a loop too long?)",
                                  file=str(self.folder / name)) from None
            except jinja2.TemplateSyntaxError as exc:
                raise DeriveError(f"line {exc.lineno}: {exc.message}", file=str(self.folder / name)) from None
            except jinja2.exceptions.SecurityError as exc:
                raise DeriveError(f"the template reaches outside its variables ({exc}); templates run "
                                  "sandboxed", file=str(self.folder / name)) from None
            except (jinja2.TemplateError, DeriveError, ArithmeticError, ValueError, TypeError, LookupError) as exc:
                # (the sandbox's range() past 100,000 raises OverflowError; 1/0, int("x"), a[9] in a template)
                raise DeriveError(f"the template fails: {exc}", file=str(self.folder / name)) from None
            title = getattr(module, "title", built_in.title)
            return Words(str(title), str(module).strip(), raw)
        return built_in
