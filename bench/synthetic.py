"""Synthetic one-block cases for the width benchmarks (issue 12, items 1 and 5).

A GPT-2-shaped case of any width: learned positions, one pre-norm block (LayerNorm,
causal multi-head attention, LayerNorm, GELU MLP with d_mlp = 4 d_model by default), a
final LayerNorm, W_U of its own, a target and one SGD step on every weight. Every weight is
an exact dyadic rational k/256 drawn from a seeded normal with standard deviation 1/2 for
E and P and 1/sqrt(fan-in) for the matrices (so the stream keeps its scale at any width),
written as a TOML fraction string; the same arguments give the same text, always.

Reuse from another script (bench/run.py)::

    from synthetic import case_text, measure      # with bench/ on sys.path
    text = case_text(d_model=64, heads=4, d_mlp=256, tokens=16)

or run alone from the repository root::

    python bench/synthetic.py 16 64 128 [--heads 4] [--forward-only] [--profile 64]

which writes each case to a temporary file and prints, per width, the CPU time of
``derive()`` (the graph), of the evaluation (forward, gradients, SGD step, pass after),
of rounding every quantity to 3 places, and the peak memory (tracemalloc) of a second run.
"""

from __future__ import annotations

import argparse
import cProfile
import math
import pstats
import random
import sys
import tempfile
import time
import tracemalloc
from fractions import Fraction
from pathlib import Path

DENOMINATOR = 256  # every weight is k / 256


def _number(q: Fraction) -> str:
    return str(q.numerator) if q.denominator == 1 else f'"{q.numerator}/{q.denominator}"'


def _draw(rng: random.Random, rows: int, cols: int, sd: float) -> list[list[Fraction]]:
    """A rows x cols matrix of dyadic numbers N(0, sd) rounded to 1/256, drawn row by row."""
    return [[Fraction(round(rng.gauss(0.0, sd) * DENOMINATOR), DENOMINATOR) for _ in range(cols)] for _ in range(rows)]


def _toml(matrix: list[list[Fraction]]) -> str:
    """A matrix as a TOML list of rows."""
    return "[\n" + "".join("  [" + ", ".join(map(_number, row)) + "],\n" for row in matrix) + "]"


def _weights(rng: random.Random, d_model: int, d_mlp: int, tokens: int, vocab: int, blocks: int) -> dict:
    """The weights by field path (E, P, W_U, blocks.1.W_Q, ...), drawn in the file's order."""
    out = {"E": _draw(rng, vocab, d_model, 0.5), "P": _draw(rng, tokens, d_model, 0.5),
           "W_U": _draw(rng, d_model, vocab, 1 / math.sqrt(d_model))}
    for b in range(1, blocks + 1):
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            out[f"blocks.{b}.{name}"] = _draw(rng, d_model, d_model, 1 / math.sqrt(d_model))
        out[f"blocks.{b}.W_1"] = _draw(rng, d_model, d_mlp, 1 / math.sqrt(d_model))
        out[f"blocks.{b}.W_2"] = _draw(rng, d_mlp, d_model, 1 / math.sqrt(d_mlp))
    return out


def case_text(d_model: int, heads: int, d_mlp: int | None = None, tokens: int = 16, vocab: int = 32,
              blocks: int = 1, seed: int = 0, trained: bool = True, activation: str = "gelu_tanh",
              weights_file: str | None = None) -> str:
    """The TOML text of a synthetic case.

    Args:
        d_model: the width; heads: attention heads (must divide d_model); d_mlp: the MLP's
            width (default 4 d_model); tokens: prompt length T; vocab: vocabulary size V;
            blocks: number of blocks; seed: the random weights' seed; trained: with a
            target (loss, gradients, the SGD step and the pass after) or forward only
            (no target); activation: a registered activation name; weights_file: the
            name of a safetensors file that holds the matrices (:func:`write_case` with
            ``safetensors``), written ``weights = "..."`` instead of the matrices.

    Raises:
        ValueError: heads does not divide d_model, or a size is below 1.
    """
    head, matrices = _case(d_model, heads, d_mlp, tokens, vocab, blocks, seed, trained, activation)
    return _render(head, matrices, blocks, weights_file)


def _render(head: list[str], matrices: dict, blocks: int, weights_file: str | None = None) -> str:
    """The case's TOML text: ``head`` (:func:`_case`), then the matrices, or a
    ``weights = "..."`` line naming the safetensors file that holds them."""
    if weights_file is not None:
        return f'weights = "{weights_file}"\n' + "\n".join(head) + "\n" + "\n[[blocks]]" * blocks + "\n"
    lines = list(head)
    for name, matrix in matrices.items():
        if name.startswith("blocks."):
            if name.endswith(".W_Q"):
                lines += ["", "[[blocks]]"]
            name = name.split(".", 2)[2]
        lines.append(f"{name} = {_toml(matrix)}")
    return "\n".join(lines) + "\n"


def _case(d_model: int, heads: int, d_mlp: int | None, tokens: int, vocab: int, blocks: int, seed: int,
          trained: bool, activation: str) -> tuple[list[str], dict]:
    """The TOML lines before the weights, and the weights (:func:`_weights`)."""
    d_mlp = 4 * d_model if d_mlp is None else d_mlp
    if min(d_model, heads, d_mlp, tokens, vocab, blocks) < 1 or d_model % heads:
        raise ValueError(f"bad shape: d_model {d_model}, heads {heads}, d_mlp {d_mlp}, tokens {tokens}")
    rng = random.Random(f"derive-synthetic-{d_model}-{heads}-{d_mlp}-{tokens}-{vocab}-{blocks}-{seed}")
    ids = [rng.randrange(vocab) for _ in range(tokens)]
    lines = [f'name = "synthetic-d{d_model}-h{heads}-m{d_mlp}-t{tokens}-b{blocks}"', "", "[vocab]",
             "pieces = [" + ", ".join(f'"t{i}"' for i in range(vocab)) + "]", "",
             "[prompt]", "ids = [" + ", ".join(map(str, ids)) + "]"]
    if trained:
        lines.append(f"target = {rng.randrange(vocab)}")
    lines += ["", "[conventions]", f'activation = "{activation}"', 'mask = "causal"', "learning_rate = 0.1",
              "final_layernorm = true", "", "[limits]", "weights = 1000000000  # (a benchmark: large on purpose)",
              "", "[model]", f"d_model = {d_model}", f"heads = {heads}"]
    return lines, _weights(rng, d_model, d_mlp, tokens, vocab, blocks)


def write_case(folder: Path | str, safetensors: bool = False, **shape) -> Path:
    """Write :func:`case_text` (``shape``: its keyword arguments but ``weights_file``) to a
    file in ``folder`` and return its path; with ``safetensors``, the matrices go to a
    safetensors file beside it (float64, exact: every weight is k/256), as a wide model's
    weights should (the case file stays small)."""
    shape = {"d_mlp": None, "tokens": 16, "vocab": 32, "blocks": 1, "seed": 0, "trained": True,
             "activation": "gelu_tanh", **shape}  # (case_text's defaults)
    head, matrices = _case(**shape)
    name = head[0].split('"', 2)[1]
    weights_file = None
    if safetensors:
        import numpy as np

        from derive.weights import serialize

        weights_file = f"{name}.safetensors"
        tensors = {k: np.array(m, dtype=np.float64) for k, m in matrices.items()}  # (k/256: exact as doubles)
        (Path(folder) / weights_file).write_bytes(serialize(tensors))
    path = Path(folder) / f"{name}.toml"
    path.write_text(_render(head, matrices, shape["blocks"], weights_file), encoding="utf-8")
    return path


def measure(path: Path | str, memory: bool = True) -> dict:
    """Derive the case at ``path``, evaluate it and round every quantity to 3 places.
    Returns CPU seconds (``time.process_time``: the machine is shared) for ``derive`` (the graph), ``evaluate`` (the values at the
    first precision that decides every branch) and ``round`` (every quantity to 3 places,
    including any escalation), ``total``, the ``wall`` time of the whole, the graph's ``nodes``, the ``quantities``
    rounded, how many are ``undecided``, the working precision ``prec`` reached and, when
    ``memory``, the ``peak`` memory in bytes of a second run under tracemalloc (None
    otherwise; tracemalloc slows a run, so the times come from the first)."""
    from derive.case import load_case
    from derive.derivation import derive
    from derive.rounding import Format

    def run():
        wall, t0 = time.perf_counter(), time.process_time()
        dv = derive(load_case(str(path)))
        t1 = time.process_time()
        dv.evaluation()
        t2 = time.process_time()
        refs = dv.quantities()
        texts = dv.decimals(refs, Format())
        t3 = time.process_time()
        return dv, refs, texts, (t0, t1, t2, t3, time.perf_counter() - wall)

    dv, refs, texts, (t0, t1, t2, t3, wall) = run()
    peak = None
    if memory:
        del dv
        tracemalloc.start()
        dv, refs, texts, _ = run()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return {"derive": t1 - t0, "evaluate": t2 - t1, "round": t3 - t2, "total": t3 - t0, "wall": wall, "peak": peak,
            "nodes": len(dv.graph.nodes), "quantities": len(refs),
            "undecided": sum("undecided" in t for t in texts.values()), "prec": max(dv.precisions)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("widths", type=int, nargs="*", default=[16, 64, 128])
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--forward-only", action="store_true", help="no target: no gradients, no step")
    parser.add_argument("--profile", action="store_true", help="cProfile each run instead (no memory figure)")
    parser.add_argument("--no-memory", action="store_true", help="skip the second run under tracemalloc")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        for d in args.widths:
            path = write_case(folder, d_model=d, heads=args.heads, tokens=args.tokens, trained=not args.forward_only)
            if args.profile:
                profiler = cProfile.Profile()
                profiler.runcall(measure, path, False)
                pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
                pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
                continue
            m = measure(path, not args.no_memory)
            print(f"d_model {d:4d}: derive {m['derive']:6.2f} s, evaluate {m['evaluate']:6.2f} s, "
                  f"round {m['round']:6.2f} s, total {m['total']:6.2f} s CPU ({m['wall']:6.2f} s wall), "
                  + (f"peak {m['peak'] / 1e6:7.1f} MB; " if m["peak"] is not None else "")
                  + f"{m['nodes']} nodes, {m['quantities']} quantities, "
                  f"{m['undecided']} undecided, {m['prec']} bits", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
