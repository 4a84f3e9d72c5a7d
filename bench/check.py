"""Benchmark: ``derive check`` on a large hand file (issue 11, item 6: time and memory
linear in the file).

Run from the repository root, with derive installed:  ``python bench/check.py``
(``--megabytes 5`` by default; ``--case cat-climbed``).

The file is derive's own Markdown chapter of the case followed by the seed's hand file
(tests/hand/seed_000.md), repeated until it reaches the size asked for: every line is a
claim derive judges (tables, displays, notes, named lines, arithmetic). Reported: the
file's size, lines and entries, the wall and CPU time of ``Checker.check_text`` alone
(the case is derived first, apart), lines and entries per second, the verdicts by status,
and the peak memory of the check under ``tracemalloc``.
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from derive.case import load_case
from derive.check import Checker
from derive.derivation import derive

ROOT = Path(__file__).resolve().parents[1]


def hand_file(case: str, megabytes: float) -> str:
    """The chapter and the seed's hand file, repeated to ``megabytes`` MB."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "chapter.md"
        subprocess.run([sys.executable, "-m", "derive", "markdown", case, "-o", str(out)], check=True)
        unit = out.read_text(encoding="utf-8") + "\n" + (ROOT / "tests" / "hand" / "seed_000.md").read_text(
            encoding="utf-8") + "\n"
    copies = max(1, int(megabytes * 1e6 / len(unit.encode("utf-8"))) + 1)
    return unit * copies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=5.0)
    parser.add_argument("--case", default="cat-climbed")
    args = parser.parse_args()
    text = hand_file(args.case, args.megabytes)
    derivation = derive(load_case(args.case))
    lines = text.count("\n")
    tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    verdicts = Checker(derivation).check_text(text)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    statuses = collections.Counter(v.status for v in verdicts)
    print(f"file: {len(text.encode('utf-8')) / 1e6:.2f} MB, {lines} lines, {len(verdicts)} entries")
    print(f"check_text: {wall:.1f} s wall, {cpu:.1f} s CPU; {lines / wall:.0f} lines/s, "
          f"{len(verdicts) / wall:.0f} entries/s; peak memory {peak / 1e6:.0f} MB (tracemalloc)")
    print("verdicts: " + ", ".join(f"{n} {s}" for s, n in statuses.most_common()))


if __name__ == "__main__":
    main()
