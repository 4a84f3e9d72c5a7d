"""Benchmark: ``derive check`` on large hand files (issue 11, item 6: time and memory linear
in the file, a 5 MB file checked in under 10 s; random files never run long).

Run from the repository root, with derive and the test extras installed:
``python bench/check.py`` (``--megabytes 5``, ``--case cat-climbed``, ``--fuzz 500`` random
files, ``--no-memory`` to skip the second, traced run of each file).

Three figures, each on a case derived afresh (nothing the checker remembers per derivation
is warm; the derivation itself is made before the clock starts):

1. repeated: the case's Markdown chapter followed by the seed's hand file
   (tests/hand/seed_000.md), repeated to the size asked for. The checker does each
   context-free piece of work once per distinct text (a cell's reading, a table's claims,
   a note's verdict, a correct value's verdict), so this is its best case.
2. distinct: chapters of the case in every form derive writes them that the checker reads
   (Markdown for Pandoc, LaTeX, Markdown for GitHub, at 1 to 8 places and 2 to 6 significant
   figures, half-away and half-even) to half the size, then copies of the unit of (1) in which every decimal number is
   drawn at random with the places it had (so nearly every value is wrong, the checker's
   slowest path: other conventions, other heads, errors inherited from earlier lines),
   to the same size. The share of distinct lines is printed.
3. fuzz: the slowest of ``--fuzz`` random hand files drawn from tests/test_check_fuzz.py's
   strategies (one Checker each, one derivation for all, as the tests do).

Times are CPU seconds of ``Checker.check_text`` (the machine is shared: wall seconds are
printed too, but they count other processes' work); peak memory is tracemalloc's, from a
second run of the same file.
"""

from __future__ import annotations

import argparse
import collections
import random
import re
import sys
import time
import tracemalloc
from pathlib import Path

from derive.case import load_case
from derive.check import Checker
from derive.cli import make_format, select_steps
from derive.derivation import derive
from derive.render_latex import LatexRenderer
from derive.render_markdown import MarkdownRenderer

ROOT = Path(__file__).resolve().parents[1]
SEED_HAND = ROOT / "tests" / "hand" / "seed_000.md"
DECIMAL = re.compile(r"(?<![\w.])(\d+)\.(\d+)(?![\w.])")


def chapter(derivation, renderer=MarkdownRenderer, places=3, sig=None, rounding="half-away", **options) -> str:
    """The case's chapter as ``derive markdown`` (or ``latex``) writes it."""
    fmt = make_format(None if sig else places, sig, rounding, False, renderer.minus)
    return renderer(derivation, fmt, carry="exact", exact=False, templates=None, **options).render(
        select_steps(derivation, None), True)


def unit(derivation) -> str:
    """The chapter (Markdown, 3 places) and the seed's hand file."""
    return chapter(derivation) + "\n" + SEED_HAND.read_text(encoding="utf-8") + "\n"


def repeated_file(derivation, megabytes: float) -> str:
    """The unit repeated to ``megabytes`` MB."""
    one = unit(derivation)
    return one * (int(megabytes * 1e6 / len(one.encode("utf-8"))) + 1)


def distinct_file(derivation, megabytes: float, seed: int = 0) -> str:
    """Chapters in every form and format (see the module docstring), then copies of the unit
    with random numbers, to ``megabytes`` MB."""
    parts = []
    forms = [(renderer, options, rounding, fmt) for rounding in ("half-away", "half-even")
             for fmt in [dict(places=p) for p in range(1, 9)] + [dict(sig=s) for s in range(2, 7)]
             for renderer, options in ((MarkdownRenderer, dict(flavor="pandoc")), (LatexRenderer, dict(all_rows=False)),
                                       (MarkdownRenderer, dict(flavor="github")))]
    for renderer, options, rounding, fmt in forms:
        if sum(len(p.encode("utf-8")) for p in parts) > megabytes * 1e6 / 2:
            break
        parts.append(chapter(derivation, renderer, rounding=rounding, **fmt, **options))
    rng = random.Random(seed)
    one = unit(derivation)

    def draw(match) -> str:
        whole, places = match.group(1), match.group(2)
        return f"{rng.randrange(10 ** len(whole))}.{rng.randrange(10 ** len(places)):0{len(places)}d}"
    while sum(len(p.encode("utf-8")) for p in parts) < megabytes * 1e6:
        parts.append(DECIMAL.sub(draw, one))
    return "\n".join(parts)


def measure(case: str, text: str, memory: bool) -> dict:
    """check_text's CPU and wall time on a fresh derivation of ``case``, its verdicts, and
    (with ``memory``) the peak traced memory of a second run on another fresh derivation."""
    derivation = derive(load_case(case))
    wall, cpu = time.perf_counter(), time.process_time()
    verdicts = Checker(derivation).check_text(text)
    out = dict(cpu=time.process_time() - cpu, wall=time.perf_counter() - wall, entries=len(verdicts),
               statuses=collections.Counter(v.status for v in verdicts), peak=None)
    del verdicts
    if memory:
        derivation = derive(load_case(case))
        tracemalloc.start()
        Checker(derivation).check_text(text)
        out["peak"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return out


def report(title: str, text: str, figures: dict) -> None:
    lines = text.count("\n") + 1
    distinct = len(set(text.splitlines()))
    print(f"{title}: {len(text.encode('utf-8')) / 1e6:.2f} MB, {lines} lines ({distinct} distinct), "
          f"{figures['entries']} entries")
    cpu = figures["cpu"]
    peak = f"; peak memory {figures['peak'] / 1e6:.0f} MB (tracemalloc)" if figures["peak"] is not None else ""
    print(f"  check_text: {cpu:.1f} s CPU ({figures['wall']:.1f} s wall); {lines / cpu:.0f} lines/s, "
          f"{figures['entries'] / cpu:.0f} entries/s (CPU){peak}")
    print("  verdicts: " + ", ".join(f"{n} {s}" for s, n in figures["statuses"].most_common()))


def fuzz(case: str, examples: int) -> None:
    """The slowest of ``examples`` random hand files (tests/test_check_fuzz.py's strategies)."""
    from hypothesis import HealthCheck, given, settings

    sys.path.insert(0, str(ROOT / "tests"))
    from test_check_fuzz import BYTE_FILE, TEXT_FILE

    derivation = derive(load_case(case))
    times: list[tuple[float, str]] = []

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(TEXT_FILE | BYTE_FILE.map(lambda b: b.decode("utf-8", "replace")))
    def one(text):
        cpu = time.process_time()
        Checker(derivation).check_text(text)
        times.append((time.process_time() - cpu, text))

    one()
    times.sort(key=lambda t: t[0])
    worst, text = times[-1]
    first = times[0][0]
    print(f"fuzz: {len(times)} random hand files: slowest {worst:.2f} s CPU "
          f"({len(text)} characters: {text[:60]!r}...), 99th percentile {times[int(len(times) * 0.99) - 1][0]:.3f} s, "
          f"median {times[len(times) // 2][0]:.4f} s (fastest {first:.4f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=5.0)
    parser.add_argument("--case", default="cat-climbed")
    parser.add_argument("--fuzz", type=int, default=500, help="random hand files to time (0: none)")
    parser.add_argument("--no-memory", action="store_true", help="skip the traced runs (peak memory)")
    args = parser.parse_args()
    derivation = derive(load_case(args.case))
    for title, text in (("repeated", repeated_file(derivation, args.megabytes)),
                        ("distinct", distinct_file(derivation, args.megabytes))):
        report(title, text, measure(args.case, text, not args.no_memory))
    if args.fuzz:
        fuzz(args.case, args.fuzz)


if __name__ == "__main__":
    main()
