"""A module imported on first use: SymPy for the exact forms, which a plain ``derive run``
never prints (importing SymPy is most of a command's start-up: 0.5 s of 0.9 s).

The recipe of the Python documentation (``importlib.util.LazyLoader``, "Implementing lazy
imports"): the module object exists at once, its code runs when an attribute is first
read.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy(name: str) -> ModuleType:
    """The module ``name``, loaded when an attribute of it is first read (at once if it is
    already loaded).

    Raises:
        ModuleNotFoundError: when the module is not installed.
    """
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


__all__ = ["lazy"]
