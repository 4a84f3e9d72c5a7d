"""The ``derive`` command (pyproject's entry point) and ``python -m derive``.

A command is one short process that allocates millions of objects and frees most by
reference counting: the young generation is collected every GC_THRESHOLD allocations
instead of every 700 (the cyclic collector's share of ``derive check crane`` on its 3 MB
page fell from 12 s to 5 s, its peak memory unchanged; see :func:`derive.cli.derived` for
the other half), and it is raised before derive's modules are imported (their import made
54 collections, 19 ms of ``derive run cat-climbed``'s 0.5 s).
"""

import gc

GC_THRESHOLD = 20_000  # objects allocated between two young collections (Python's default: 700)


def main() -> None:
    """Run the command line (:func:`derive.cli.main`) with the collector's young threshold
    at GC_THRESHOLD."""
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    gc.disable()  # (what an import makes, modules, classes and functions, lives as long as the process)
    try:
        from .cli import main as command
    finally:
        gc.freeze()  # (so no collection walks it: one young collection, 3 to 8 ms of derive run cat-climbed)
        gc.enable()
    command()


if __name__ == "__main__":
    main()
