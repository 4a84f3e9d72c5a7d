"""Modules imported on first use: SymPy for the exact forms, which a plain ``derive run``
never prints (importing SymPy is most of a command's start-up: 0.5 s of 0.9 s), and numpy
for the float64 bounds and products of wide matrices (:func:`numpy`).

The recipe of the Python documentation (``importlib.util.LazyLoader``, "Implementing lazy
imports"): the module object exists at once, its code runs when an attribute is first
read.
"""

from __future__ import annotations

import importlib.util
import os
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


BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")  # numpy's wheels (OpenBLAS); an MKL build


def numpy() -> ModuleType:
    """numpy, its BLAS on one thread unless the environment names a number of threads.

    derive's float64 matrix products are many and small (a radius bound of a dense
    layer, 16 x 128 by 128 x 512 at d_model 128), and a threaded OpenBLAS's workers wait
    for the next product by spinning: on a 2-core machine a d_model 128 derivation with
    gradients took 2.1-3.2 s of CPU (1.6-2.7 s wall) with OpenBLAS's default two threads
    and 1.5-2.0 s (1.6-2.1 s wall) on one, four runs each. The variables are set only if numpy is not loaded
    yet (they are read when it loads) and only where unset (``OPENBLAS_NUM_THREADS=2``
    in the environment is kept); they hold for the rest of the process and its children.
    """
    if "numpy" not in sys.modules:
        for var in BLAS_THREADS:
            os.environ.setdefault(var, "1")
    import numpy as np

    return np


__all__ = ["lazy", "numpy"]
