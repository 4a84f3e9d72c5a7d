"""Worked examples in Jupyter: a derived case and each of its steps display themselves.

    from derive.notebook import load
    d = load("cat-climbed")               # a Derivation; the last line of a cell shows it
    d.step("attention")                    # one step, with its tables and equations
    d.display_format = Format(places=4)    # how the next displays round

Importing this module gives :class:`~derive.derivation.Derivation` and
:class:`~derive.steps.Step` their ``_repr_html_`` (the page's steps, without KaTeX: Jupyter
typesets the ``\\(...\\)`` math itself) and ``_repr_latex_`` (the LaTeX fragment, for
``nbconvert --to latex``, whose preamble must load the packages
:data:`derive.render_latex.PACKAGES` names): the functions :func:`html` and :func:`latex`
below, with the derivation's ``display_format``. The two classes live below the renderers
(DESIGN.md, "Structure"), so the displays are attached here rather than defined there.
"""

from __future__ import annotations

from .case import load_case
from .derivation import Derivation, derive
from .render_html import fragment
from .render_latex import render_latex
from .steps import Step


def load(case: str) -> Derivation:
    """Load and derive a case (a bundled name or a TOML path), ready to display.

    Raises:
        CaseError: when the case file cannot be loaded (see :func:`derive.case.load_case`).
    """
    return derive(load_case(case))


def _target(obj) -> tuple[Derivation, list[Step]] | None:
    if isinstance(obj, Derivation):
        return obj, obj.steps
    derivation = getattr(obj, "derivation", None)
    return (derivation, [obj]) if derivation is not None else None


def html(obj: Derivation | Step) -> str | None:
    """HTML of a derivation (every step) or of one step of it; None for a step that
    belongs to no derivation (Jupyter then shows its repr)."""
    found = _target(obj)
    if found is None:
        return None
    derivation, steps = found
    return fragment(derivation, derivation.display_format, steps)


def latex(obj: Derivation | Step) -> str | None:
    """The LaTeX fragment of a derivation or of one step of it (None as for :func:`html`)."""
    found = _target(obj)
    if found is None:
        return None
    derivation, steps = found
    return render_latex(derivation, derivation.display_format, steps)


for _cls in (Derivation, Step):  # see the module docstring
    _cls._repr_html_ = html
    _cls._repr_latex_ = latex
