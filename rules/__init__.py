"""The model's operations, one module per operation (installed as ``derive.rules``).

Each module declares its operations with :func:`derive.registry.register`: name, kind,
parameters, conventions, the step keys of its page and its forward function, which adds
the operation's named quantities to a :class:`derive.graph.Graph` with the equation it
implements in its docstring, and says how the step is written by hand
(:class:`derive.steps.Step`: its tables and equations, in the chapter's notation).

Importing this package imports every module in it, so a new operation is one new file.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
