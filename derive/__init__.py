"""derive: exact, correctly rounded worked examples of small hand-set transformers.

The Python API, the same pieces the ``derive`` command is made of::

    import derive

    case = derive.load_case("cat-climbed")      # a bundled name or a TOML path
    d = derive.derive(case)                      # the whole worked example, exact
    d.step("loss")                               # one step: words, tables, equations
    L = derive.Ref("before", d.loss)             # a quantity: the loss, in the forward pass
    d.decimal(L, derive.Format(places=4))        # '0.9277', correctly rounded
    d.exact_text(L)                              # its exact form (SymPy)
    tex = derive.latex(d, derive.Format(), standalone=True)
    verdicts = derive.Checker(d).check_text("L = 0.928")   # [Verdict(status='correct', ...)]

Names:

- :func:`load_case` reads and validates a case file into a :class:`Case`
  (raises :class:`CaseError`).
- :func:`derive` builds a case's :class:`Derivation`: its graph of quantities and its
  :class:`Step` list, in the seed's order; values are computed on demand.
- :class:`Derivation` gives each quantity (a :class:`Ref`) exactly, correctly rounded
  under a :class:`Format` (``decimal``, ``decimals``), or as an exact form
  (``exact_text``, ``closed_form``); raises :class:`EvaluationError` where the forward
  pass is undefined.
- :func:`latex`, :func:`markdown`, :func:`html`: the chapter as LaTeX, Markdown or an HTML
  page (the functions ``render_latex``... of the modules of the same names; the public names
  differ from the modules', which an import would otherwise put in their place);
  :func:`records`: every quantity as JSON-ready records.
- :class:`Checker` judges a hand computation line by line against a derivation.
- :class:`DeriveError` is every error a user can cause (a bad file, an undefined value);
  its message names the file, the field and what was expected.

``import derive`` loads none of these until one is used (PEP 562), so importing the engine
(``derive.graph``, ``derive.rounding``, ...) stays free of the layers above it.
"""

from __future__ import annotations

import sys
from importlib import import_module

# Python refuses to write an int of more than 4,300 digits as text (a guard against slow
# conversions of untrusted input). derive bounds its own numbers (a case's digits; past the
# 65,536 bits derive.rounding.MAX_BITS a value is printed in scientific form) and must write every digit
# of a value it prints (e^z for z = 10^4 has 4,343), so the guard is lifted here.
if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)
from pkgutil import extend_path
from typing import TYPE_CHECKING

# In a checkout, derive/ holds no rules/ or cases/ (pyproject.toml installs them as
# derive.rules and derive.cases): run from there (``python -m derive`` with the checkout
# first on sys.path), derive/ shadows the installed package, whose rules and cases are
# then found through this path.
__path__ = extend_path(__path__, __name__)

_HOMES = {  # public name -> the module that defines it (and its name there, where it differs)
    "load_case": "derive.case",
    "Case": "derive.case",
    "derive": "derive.derivation",
    "Derivation": "derive.derivation",
    "Step": "derive.steps",
    "Ref": "derive.steps",
    "Format": "derive.rounding",
    "DeriveError": "derive.errors",
    "CaseError": "derive.errors",
    "EvaluationError": "derive.errors",
    "latex": ("derive.render_latex", "render_latex"),
    "markdown": ("derive.render_markdown", "render_markdown"),
    "html": ("derive.render_html", "render_html"),
    "records": "derive.export_json",
    "Checker": "derive.check",
}

__all__ = list(_HOMES)


def __getattr__(name: str):
    """Import a public name from its module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'derive' has no attribute {name!r}")
    module, attribute = home if isinstance(home, tuple) else (home, name)
    value = getattr(import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


if TYPE_CHECKING:  # for type checkers and editors; at run time the names come lazily
    from .case import Case, load_case
    from .check import Checker
    from .derivation import Derivation, derive
    from .errors import CaseError, DeriveError, EvaluationError
    from .export_json import records
    from .render_html import render_html as html
    from .render_latex import render_latex as latex
    from .render_markdown import render_markdown as markdown
    from .rounding import Format
    from .steps import Ref, Step
