"""The model's operations, one module per step of the worked example.

Each module builds that step's named quantities on a :class:`derive.graph.Graph` from its
inputs, with the equation it implements in its docstring, and says how the step is written
by hand (:class:`derive.steps.Step`: its tables and equations, in the chapter's notation).
Installed as ``derive.rules``.
"""
