"""Names in SymPy's arithmetic: a :class:`~derive.name.Name` as a SymPy symbol.

derive prints its formulas without SymPy (:mod:`derive.formula`, :mod:`derive.printing`);
an author who wants to differentiate or simplify with the chapter's names asks a Name for
its symbol (``Name("h", position=5).sympy()``), which this module makes. Importing it
imports SymPy.
"""

from __future__ import annotations

import sympy
from sympy.core.symbol import Symbol

from .name import Name


class NameSymbol(Symbol):
    """A SymPy symbol that carries a :class:`~derive.name.Name`'s fields: SymPy's ``str``
    and ``latex`` print it in the chapter's notation (``mu'_5``, ``\\mu'_{5}``); two are
    equal when their fields are (never by their text).
    """

    __slots__ = ("fields",)

    def __new__(cls, name: Name):
        obj = Symbol.__xnew__(cls, name.name)
        obj.fields = name.fields
        return obj

    def __getnewargs__(self):
        return (Name(**{k: getattr(self.fields, k) for k in self.fields.__dataclass_fields__}),)

    @property
    def derive_name(self) -> Name:
        """The :class:`~derive.name.Name` this symbol stands for."""
        return self.__getnewargs__()[0]

    def _sympystr(self, printer) -> str:
        """The plain notation, for SymPy's own ``str``."""
        return self.name

    def _latex(self, printer) -> str:
        """The LaTeX notation, for SymPy's own ``latex``."""
        from .printing import latex
        return latex(self.derive_name)

    def _hashable_content(self):
        # a string, so that SymPy can order Names (Basic.compare) as well as compare them
        return (repr(self.fields),)

    def sort_key(self, order=None):
        return self.class_key(), (1, (self.name, repr(self.fields))), sympy.S.One.sort_key(), sympy.S.One


__all__ = ["NameSymbol"]
