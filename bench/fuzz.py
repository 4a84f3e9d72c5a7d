"""Benchmark: the time of each fuzzed case (issue 13, item 4; "bench/ prints the worst time
per fuzzed case").

Run from the repository root, with derive installed (``pip install -e '.[test]'``):

    python bench/fuzz.py                    # 200 mutated bundled cases, bound 10 s each
    python bench/fuzz.py -n 1000 --bound 20 --seed 7 --keep /tmp/fuzz

Each example is a bundled case (crane excepted) mutated by tests/case_mutations.py
(types, shapes, magnitudes from 1e-400 to 1e1000, ties, unknown keys, heads split, NaN and
inf) and run in this process through typer's CliRunner with one of ``run``, ``run --sig
4``, ``run --exact --places 5``, ``run --format json``, stopped after ``--bound`` seconds.
Prints the outcomes (exit 0, exit 2, a bug: exit 3 or a malformed error, over the bound),
the worst wall times per case with what was mutated, and the worst time per base case and
command; ``--keep DIR`` writes every case that failed or took more than a second there.
Times are wall seconds of one in-process run (the machine is shared: they move with its load).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from hypothesis import HealthCheck, given, settings  # noqa: E402

from case_mutations import mutated_cases, problem, run_bounded  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=200, help="examples (default 200)")
    parser.add_argument("--bound", type=float, default=10.0, help="seconds a run may take (default 10)")
    parser.add_argument("--seed", type=int, default=None, help="Hypothesis seed (default: random)")
    parser.add_argument("--keep", default=None, help="write slow or failing cases to this folder")
    parser.add_argument("--worst", type=int, default=10, help="how many of the slowest runs to list")
    options = parser.parse_args()
    seed = options.seed if options.seed is not None else random.randrange(2**32)
    keep = Path(options.keep) if options.keep else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="derive-fuzz-"))
    runs = []

    @settings(max_examples=options.n, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(mutated_cases())
    def one(example):
        name, text, done, command = example
        path = folder / f"{len(runs)}.toml"
        path.write_text(text, encoding="utf-8")
        outcome = run_bounded([*command, str(path)], options.bound)
        wrong = problem(outcome)
        verdict = "over" if outcome.exit_code == -1 else "bug" if wrong else f"exit {outcome.exit_code}"
        runs.append((outcome.seconds, name, " ".join(command), done, verdict, wrong, text))
        if keep and (wrong or outcome.seconds > 1):
            (keep / f"{len(runs)}-{name}-{verdict.replace(' ', '')}.toml").write_text(
                f"# {' '.join(command)}; {done}; {wrong or ''}\n{text}", encoding="utf-8")

    print(f"derive fuzz: {options.n} mutated cases, bound {options.bound:g} s, seed {seed}", flush=True)
    one._hypothesis_internal_use_seed = seed
    one()
    print(f"runs: {len(runs)}; " + ", ".join(f"{k}: {v}" for k, v in sorted(Counter(r[4] for r in runs).items())))
    print(f"worst time per fuzzed case: {max(r[0] for r in runs):.2f} s; "
          f"median {sorted(r[0] for r in runs)[len(runs) // 2]:.2f} s")
    print(f"\nthe {options.worst} slowest runs (wall s, case, command, verdict, mutations):")
    for seconds, name, command, done, verdict, wrong, _ in sorted(runs, key=lambda r: -r[0])[:options.worst]:
        print(f"  {seconds:7.2f}  {name:20} {command:24} {verdict:8} {'; '.join(done)}")
    print("\nworst time by case and command (s):")
    worst = defaultdict(float)
    for seconds, name, command, *_ in runs:
        worst[name, command] = max(worst[name, command], seconds)
    commands = sorted({c for _, c in worst})
    print(f"  {'case':20} " + " ".join(f"{c:>24}" for c in commands))
    for name in sorted({n for n, _ in worst}):
        print(f"  {name:20} " + " ".join(f"{worst[name, c]:24.2f}" if (name, c) in worst else f"{'-':>24}"
                                         for c in commands))
    failures = [r for r in runs if r[5]]
    for seconds, name, command, done, verdict, wrong, _ in failures[:20]:
        print(f"\nFAILED {name} {command} ({seconds:.2f} s): {'; '.join(done)}\n  {wrong}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
