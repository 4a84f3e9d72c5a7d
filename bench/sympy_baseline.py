"""Benchmark: derive against a naive SymPy baseline on the bundled case ``cat-climbed``
(the first benchmark; ``bench/run.py`` is the one that puts every size side by side).

Run from the repository root, with derive installed:  ``python bench/sympy_baseline.py``
(``--help`` for the options; the defaults finish in about seven minutes; ``--no-baseline``
skips sections 2 and 3, ``--no-crane`` sections 4 and 5, ``--no-scaling`` section 5).

What is measured
----------------
1. derive, after import (the import time is shown apart): ``load_case`` + ``derive()`` +
   ``Derivation.decimals(derivation.quantities(), Format())``, i.e. the whole seed
   derivation (forward pass, loss, reverse-mode gradients, one SGD step, the forward pass
   after it) with every named quantity correctly rounded to 3 places. Median of
   ``--runs`` runs, CPU time (``time.process_time``) and wall time, SymPy's cache cleared
   before each run. Separately: the JSON export ``derive.export_json.records`` (which also
   rounds every value to 30 digits and writes the exact forms). Also: the number of graph
   nodes and quantities, and the peak memory of one run under ``tracemalloc``.

2. A naive SymPy baseline, written here independently of derive's engine (it reads only
   the Case object's weights and conventions). Every output is ONE SymPy expression in
   which everything is substituted: weights as ``sympy.Rational``, LayerNorm with
   ``sympy.sqrt``, softmax with ``sympy.exp``, the tanh GELU with ``sympy.tanh`` and
   ``sympy.pi``; SymPy's default automatic evaluation is left on. Two tasks:
     * forward: the logits z, p and L, plus a sample of intermediates (the first entry of
       the last row of every layer, and mu and sigma of every LayerNorm), each through
       ``evalf(20)``. The sample is evaluated as soon as its layer is built.
     * gradient: the same L with a real ``sympy.Symbol`` for every entry of E, then
       ``sympy.diff(L, E_ij)`` for every entry and ``evalf(20, subs=values of E)``.
   Each task runs in a forked process with a CPU budget (``--budget`` CPU seconds,
   enforced with RLIMIT_CPU) and a wall-clock cap (``--wall``); the two run side by side.
   On this case the full baseline takes far longer than a few minutes, so the script
   times the part that fits in the budget and says so: the CPU time it measured is a
   LOWER BOUND of the full baseline. A rough extrapolation is printed too, clearly
   labelled: the CPU time spent so far divided by the quantities finished, times the
   quantities planned (likely an underestimate: the quantities not reached sit at the end
   of the network, where each expression contains all the earlier ones).
   Every value the baseline finishes is checked against derive's certified 30-digit value.

3. The ratios (baseline CPU / derive CPU), next to the goals: derive under 1 s of compute
   after import, and at least 50x faster than the baseline. A goal on the ratio is marked
   met only when the measured lower bound already reaches it.

4. The bundled case ``crane`` (the seed 004's setting at full size: 64 tokens, d = 16,
   two random heads and the hand-set head, tied W_U, a loss, its gradients, one SGD step
   and the pass after it), measured as in 1: ``load_case`` + ``derive()`` + ``decimals``
   of every quantity at 3 places, median of ``--crane-runs`` runs, CPU and wall time,
   nodes, quantities, the working precision reached, the peak memory under tracemalloc,
   and the CPU time per graph node. Goal: under 5 s.

5. A scaling table: synthetic cases built here from the crane's weights (the first 8,
   16, 32 or 64 tokens of its text, its block repeated 1, 2 or 4 times), each measured as
   in 4 (median of ``--scaling-runs``): time, peak memory, nodes, and the CPU time per
   node, so the reader can see whether time grows in proportion to the number of
   intermediates. Goal: it does, not faster: the least-squares slope of log(CPU) against
   log(nodes) over the twelve cases is at most 1.1 (1 is proportional).

The comparison favours the baseline: it computes about 100 quantities to 20 digits, with
no correctness check of the last digit, while derive certifies and rounds every one of its
~1000 quantities, including the SGD step and the forward pass after it.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import resource
import signal
import statistics
import sys
import tempfile
import time
import tomllib
import tracemalloc
from decimal import Decimal
from importlib import resources
from multiprocessing import get_context
from multiprocessing.connection import wait

CASE = "cat-climbed"
GOAL_SECONDS = 1.0
GOAL_RATIO = 50.0


# =========================================================================== derive

def import_derive():
    """Import derive's entry points; return them and the import time in seconds."""
    t0 = time.perf_counter()
    from derive.case import load_case
    from derive.derivation import VALUE_FORMAT, derive
    from derive.export_json import records
    from derive.rounding import Format
    return (load_case, derive, records, Format, VALUE_FORMAT), time.perf_counter() - t0


def clear_caches():
    import sympy.core.cache
    sympy.core.cache.clear_cache()
    gc.collect()


def timed(fn, runs: int) -> list[tuple[float, float]]:
    """(cpu, wall) seconds of ``runs`` calls of ``fn``, caches cleared before each."""
    out = []
    for _ in range(runs):
        clear_caches()
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        out.append((time.process_time() - c0, time.perf_counter() - w0))
    return out


def median(pairs, k):
    return statistics.median(p[k] for p in pairs)


# =========================================================================== baseline

class Budget(BaseException):
    """Raised in a baseline process when its CPU budget or wall cap is reached.
    (A BaseException, so that SymPy's ``except Exception`` clauses do not swallow it.)"""


def supported(case) -> str | None:
    """None when the baseline implements the case's conventions, else what it lacks."""
    conv = case.conventions
    defaults = {"layernorm_variance": "n", "layernorm_eps_placement": "inside", "score_scale": "d_k",
                "loss_log": "e", "positions": "learned"}
    for name, value in defaults.items():
        if getattr(conv, name, value) != value:
            return f"conventions.{name} = {getattr(conv, name)!r}"
    if conv.mask not in ("causal", "none"):
        return f"conventions.mask = {conv.mask!r}"
    if getattr(case, "X", None) is not None:
        return "a given input X"
    if case.target is None or conv.temperature == 0:
        return "no loss"
    return None


def sympy_model(case, E, stage):
    """The naive SymPy model: one expression per quantity, every weight substituted.

    ``E`` is the embedding table as SymPy objects (Rationals or Symbols). ``stage(name,
    samples)`` is called after each layer is built with ``samples``, a list of
    ((symbol, block, head, position, index, norm), expression). Returns L.
    """
    import sympy
    from sympy import Add, Rational, exp, log, sqrt

    def R(q):
        return Rational(q.numerator, q.denominator)

    conv = case.conventions
    d, T = case.d_model, len(case.ids)
    eps = R(conv.layernorm_eps)
    last = T - 1

    def layer_norm(rows, gain, shift, norm, block, symbol):
        out, samples = [], []
        for t, row in enumerate(rows):
            mu = Add(*row) / d
            sigma = sqrt(Add(*[(x - mu) ** 2 for x in row]) / d + eps)
            out.append([(x - mu) / sigma * (R(gain[j]) if gain else 1) + (R(shift[j]) if shift else 0)
                        for j, x in enumerate(row)])
            if t == last:
                samples = [(("mu", block, None, T, None, norm), mu), (("sigma", block, None, T, None, norm), sigma),
                           ((symbol, block, None, T, 1, None), out[-1][0])]
        return out, samples

    def affine(rows, W, b):
        return [[Add(*[r[k] * R(W[k][j]) for k in range(len(r))]) + (R(b[j]) if b else 0)
                 for j in range(len(W[0]))] for r in rows]

    def act(x):
        if conv.activation == "gelu_tanh":
            c = Rational(44715, 1000000)
            return x * (1 + sympy.tanh(sqrt(2 / sympy.pi) * (x + c * x ** 3))) / 2
        if conv.activation == "gelu_erf":
            return x * (1 + sympy.erf(x / sqrt(2))) / 2
        return sympy.Max(0, x)

    stream = [[E[i][j] + R(case.P[t][j]) for j in range(d)] for t, i in enumerate(case.ids)]
    for b, block in enumerate(case.blocks, 1):
        M, V = block.matrices, block.vectors
        u, samples = layer_norm(stream, V.get("ln1_gain"), V.get("ln1_bias"), "ln1", b, "u")
        stage(f"block {b}: LayerNorm 1", samples)
        Q, K, Vv = (affine(u, M[f"W_{n}"], V.get(f"b_{n}")) for n in ("Q", "K", "V"))
        dk = case.d_k
        heads, samples = [], []
        for h in range(case.heads):
            cols = range(h * dk, (h + 1) * dk)
            o = []
            for i in range(T):
                visible = range(i + 1) if conv.mask == "causal" else range(T)
                s = [Add(*[Q[i][c] * K[j][c] for c in cols]) / sqrt(dk) for j in visible]
                e = [exp(x) for x in s]
                total = Add(*e)
                a = [x / total for x in e]
                o.append([Add(*[a[n] * Vv[j][c] for n, j in enumerate(visible)]) for c in cols])
                if i == last:
                    samples += [(("s", b, h + 1, T, 1, None), s[0]), (("a", b, h + 1, T, 1, None), a[0])]
            heads.append(o)
        joined = [[x for o in heads for x in o[i]] for i in range(T)]
        attn = affine(joined, M["W_O"], V.get("b_O"))
        stage(f"block {b}: attention", samples + [(("attn", b, None, T, 1, None), attn[last][0])])
        h_ = [[x + y for x, y in zip(r1, r2)] for r1, r2 in zip(stream, attn)]
        u2, samples = layer_norm(h_, V.get("ln2_gain"), V.get("ln2_bias"), "ln2", b, "u2")
        stage(f"block {b}: residual h, LayerNorm 2", [(("h", b, None, T, 1, None), h_[last][0])] + samples)
        hidden = affine(u2, M["W_1"], V.get("b_1"))
        g = []
        for t, row in enumerate(hidden):
            g.append([act(x) for x in row])
            stage(f"block {b}: GELU of row {t + 1}", [])
        stage(f"block {b}: MLP hidden, GELU", [(("hidden", b, None, T, 1, None), hidden[last][0]),
                                                (("g", b, None, T, 1, None), g[last][0])])
        m = affine(g, M["W_2"], V.get("b_2"))
        stage(f"block {b}: MLP out m", [(("m", b, None, T, 1, None), m[last][0])])
        stream = [[x + y for x, y in zip(r1, r2)] for r1, r2 in zip(h_, m)]
        stage(f"block {b}: residual y", [(("y", b, None, T, 1, None), stream[last][0])])
    if conv.final_layernorm:
        fv = case.final_vectors
        f, samples = layer_norm(stream, fv.get("lnf_gain"), fv.get("lnf_bias"), "final", None, "f")
        stage("final LayerNorm", samples)
    else:
        f = stream
    row = f[last]
    W_U = case.W_U
    inv_temp = 1 / R(conv.temperature)
    z = [Add(*[row[k] * (R(W_U[k][j]) if W_U is not None else E[j][k]) for k in range(d)]) * inv_temp
         for j in range(len(case.pieces))]
    stage("logits z", [(("z", None, None, T, piece, None), zj) for piece, zj in zip(case.pieces, z)])
    ez = [exp(x) for x in z]
    total = Add(*ez)
    p = [e / total for e in ez]
    stage("softmax p", [(("p", None, None, T, piece, None), pj) for piece, pj in zip(case.pieces, p)])
    L = -log(p[case.target])
    target = case.pieces[case.target]
    stage("loss L", [(("L", None, None, T, target, None), L)])
    return L


def planned_outputs(case) -> dict[str, int]:
    """How many quantities each baseline task evaluates when it runs to the end."""
    blocks = len(case.blocks)
    per_block = 3 + 2 * case.heads + 1 + 1 + 3 + 2 + 1 + 1   # ln1, s/a per head, attn, h, ln2, hidden+g, m, y
    forward = blocks * per_block + (3 if case.conventions.final_layernorm else 0) + 2 * len(case.pieces) + 1
    return {"forward": forward, "gradient": len(case.E) * case.d_model}


def baseline_task(kind: str, case, conn, budget: float):
    """Body of a forked baseline process: build, evaluate, stream events through ``conn``."""
    def on_signal(signum, frame):
        signal.signal(signal.SIGXCPU, signal.SIG_IGN)  # report once; the hard limit still applies
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Budget("wall-clock cap" if signum == signal.SIGTERM else "CPU budget")

    signal.signal(signal.SIGXCPU, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    soft = max(1, int(budget))
    resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 15))
    import sympy
    import sympy.core.cache
    sympy.core.cache.clear_cache()
    c0 = time.process_time()

    def cpu():
        return time.process_time() - c0

    def send(*msg):
        conn.send(msg)

    try:
        if kind == "forward":
            def stage(name, samples):
                send("stage", name, cpu())
                for key, expr in samples:
                    t = cpu()
                    value = expr.evalf(20)
                    send("value", key, str(value), cpu() - t, cpu())

            E = [[sympy.Rational(q.numerator, q.denominator) for q in row] for row in case.E]
            sympy_model(case, E, stage)
        else:
            def stage(name, samples):
                send("stage", name, cpu())

            syms = [[sympy.Symbol(f"E_{i + 1}_{j + 1}", real=True) for j in range(case.d_model)]
                    for i in range(len(case.E))]
            values = {syms[i][j]: sympy.Rational(q.numerator, q.denominator)
                      for i, row in enumerate(case.E) for j, q in enumerate(row)}
            L = sympy_model(case, syms, stage)
            send("stage", "dL/dE: diff + evalf(subs)", cpu())
            # rows of the prompt first (their derivatives are the non-zero ones)
            order = list(dict.fromkeys(case.ids)) + [i for i in range(len(case.E)) if i not in case.ids]
            for i in order:
                for j in range(case.d_model):
                    t = cpu()
                    value = sympy.diff(L, syms[i][j]).evalf(20, subs=values)
                    send("value", ("grad", None, None, i + 1, j + 1, "E"), str(value), cpu() - t, cpu())
        send("done", cpu())
    except Budget as exc:
        send("stopped", str(exc), cpu())
    except Exception as exc:  # a baseline bug: report it, do not hang the parent
        send("error", f"{type(exc).__name__}: {exc}", cpu())
    finally:
        conn.close()


def proc_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) of a live process, from /proc (Linux)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def run_baseline(case, budget: float, wall: float, log) -> dict[str, dict]:
    """Run both baseline tasks side by side; return each task's record."""
    ctx = get_context("fork")
    tasks = {}
    for kind in ("forward", "gradient"):
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=baseline_task, args=(kind, case, child, budget), daemon=True)
        proc.start()
        child.close()
        tasks[kind] = {"proc": proc, "conn": parent, "stages": [], "values": {}, "costs": {},
                       "status": None, "cpu": 0.0, "open": True}
    start = time.perf_counter()
    terminated = False
    while any(t["open"] for t in tasks.values()):
        conns = [t["conn"] for t in tasks.values() if t["open"]]
        ready = wait(conns, timeout=1.0)
        for kind, t in tasks.items():
            if not t["open"] or t["conn"] not in ready:
                continue
            try:
                msg = t["conn"].recv()
            except EOFError:
                t["open"] = False
                if t["status"] is None:
                    t["status"] = "killed (CPU hard limit)"
                    t["cpu"] = max(t["cpu"], budget)
                continue
            if msg[0] == "stage":
                t["stages"].append((msg[1], msg[2]))
                t["cpu"] = msg[2]
                log(f"  [{kind:8s} {msg[2]:7.1f} s cpu] built: {msg[1]}")
            elif msg[0] == "value":
                _, key, text, cost, now = msg
                t["values"][key], t["costs"][key], t["cpu"] = text, cost, now
                log(f"  [{kind:8s} {now:7.1f} s cpu] evalf {_key_text(key)} = {text}  ({cost:.2f} s)")
            else:
                t["status"] = msg[0] if msg[0] == "done" else f"{msg[0]}: {msg[1]}"
                t["cpu"] = msg[-1]
                log(f"  [{kind:8s} {msg[-1]:7.1f} s cpu] {t['status']}")
        if not terminated and time.perf_counter() - start > wall:
            terminated = True
            for kind, t in tasks.items():
                if t["open"] and t["proc"].is_alive():
                    used = proc_cpu(t["proc"].pid)
                    if used is not None:
                        t["cpu"] = max(t["cpu"], used)
                    os.kill(t["proc"].pid, signal.SIGTERM)
        if terminated and time.perf_counter() - start > wall + 20:
            for t in tasks.values():
                if t["open"]:
                    t["proc"].kill()
                    t["open"] = False
                    t["status"] = t["status"] or "killed (wall-clock cap)"
    for t in tasks.values():
        t["proc"].join(timeout=5)
        t["wall"] = time.perf_counter() - start
    return tasks


def _key_text(key) -> str:
    symbol, block, head, position, index, extra = key
    if symbol == "grad":
        return f"dL/dE[{position},{index}]"
    parts = [f"block {block}" if block else None, f"head {head}" if head else None,
             f"row {position}" if position else None, f"index {index}" if index is not None else None,
             extra]
    return f"{symbol}(" + ", ".join(p for p in parts if p) + ")"


# =========================================================================== checks

def derive_lookup(dv, value_format):
    """derive's certified 30-digit values by baseline key."""
    from derive.steps import Ref
    keys = {}
    for ref in dv.quantities():
        if ref.phase not in ("before", "grad"):
            continue
        m = dv.meta(ref)
        if ref.phase == "grad":
            if m.param == "E":
                keys[("grad", None, None, m.position, m.index, "E")] = ref
            continue
        keys[(m.symbol, m.block, m.head, m.position, m.index, m.norm)] = ref
    return keys, (lambda refs: dv.decimals(refs, value_format))


def check_values(tasks, dv, value_format):
    """(checked, unmatched, max relative difference) of the baseline against derive."""
    keys, decimals = derive_lookup(dv, value_format)
    wanted = {k: keys[k] for t in tasks.values() for k in t["values"] if k in keys}
    ours = decimals(list(wanted.values()))
    worst, checked = Decimal(0), 0
    bad = []
    unmatched = sum(1 for t in tasks.values() for k in t["values"] if k not in keys)
    for t in tasks.values():
        for key, text in t["values"].items():
            if key not in wanted:
                continue
            try:
                b, d = Decimal(text), Decimal(ours[wanted[key]])
            except ArithmeticError:  # not a real number (or derive's value undecided): a disagreement
                bad.append((key, text, ours[wanted[key]]))
                continue
            diff = abs(b - d) / max(abs(d), Decimal(1))
            worst = max(worst, diff)
            checked += 1
            if diff > Decimal("1e-15"):
                bad.append((key, text, ours[wanted[key]]))
    return checked, unmatched, worst, bad


# =========================================================================== crane and scaling

CRANE = "crane"
CRANE_GOAL_SECONDS = 5.0
SLOPE_GOAL = 1.1
SCALING_TOKENS = (8, 16, 32, 64)
SCALING_BLOCKS = (1, 2, 4)


def _toml(value) -> str:
    """A TOML literal for a value read from a case file (lists, strings, booleans, numbers)."""
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def scaling_case(tokens: int, blocks: int) -> str:
    """The text of a synthetic case built from the bundled crane's weights: the first
    ``tokens`` tokens of the crane text as the prompt (the next token as the target), the
    crane's E, conventions and block repeated ``blocks`` times. Block 1 is the crane's
    (no LayerNorm, as in the seed 004); blocks 2.. have the same heads and W_O behind a
    LayerNorm, so the stream stays in the range of block 1 (repeating the hand-set head
    on the raw stream makes the scores grow with every block, e^s reaches 10^278 by
    block 4, and rounding such numbers to 3 places needs 1000-bit balls: a test of big
    numbers, not of scaling)."""
    crane_path = resources.files("derive.cases") / f"{CRANE}.toml"
    crane = tomllib.loads(crane_path.read_text(encoding="utf-8"), parse_float=Decimal)
    pieces = crane["vocab"]["pieces"]
    text = crane["prompt"]["ids"] + [pieces.index(crane["prompt"]["target"])]
    if not 1 <= tokens < len(text):
        raise ValueError(f"the crane text has {len(text)} tokens; a prompt of {tokens} leaves no target")
    lines = [f'name = "crane-{tokens}-tokens-{blocks}-blocks"', "[vocab]", f"pieces = {_toml(pieces)}",
             "[prompt]", f"ids = {_toml(text[:tokens])}", f"target = {text[tokens]}", "[conventions]"]
    lines += [f"{key} = {_toml(value)}" for key, value in crane["conventions"].items()]
    lines += ["[model]"] + [f"{key} = {_toml(value)}" for key, value in crane["model"].items()]
    (block,) = crane["blocks"]
    for b in range(blocks):
        lines += ["[[blocks]]", f"layernorm = {_toml(b > 0)}"]
        lines += [f"{key} = {_toml(value)}" for key, value in block.items() if key not in ("heads", "layernorm")]
        for head in block["heads"]:
            lines += ["[[blocks.heads]]"] + [f"{key} = {_toml(value)}" for key, value in head.items()]
    return "\n".join(lines) + "\n"


def measure_case(path: str, load_case, derive, Format, runs: int) -> dict:
    """load_case + derive() + decimals(every quantity, 3 places) of one case (a bundled
    name or a path): median CPU and wall of ``runs`` runs, the peak memory of one more run
    under tracemalloc, the graph's size and the working precision reached."""
    last = {}

    def run():
        dv = derive(load_case(str(path)))
        last["dv"], last["texts"] = dv, dv.decimals(dv.quantities(), Format())

    timings = timed(run, runs)
    dv, texts = last["dv"], last["texts"]
    clear_caches()
    tracemalloc.start()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"cpu": median(timings, 0), "wall": median(timings, 1), "peak": peak,
            "nodes": len(dv.graph.nodes), "quantities": len(dv.quantities()),
            "undecided": sum("undecided" in t for t in texts.values()), "prec": max(dv.precisions)}


def log_slope(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of log(time) against log(nodes): 1 is proportional."""
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def crane_and_scaling(load_case, derive, Format, runs: int, scaling_runs: int, scaling: bool) -> None:
    """Section 4: the bundled crane (64 tokens, d = 16) with every quantity certified at
    3 places (median of ``runs``); section 5, when ``scaling``: the table over prompt
    lengths and blocks (median of ``scaling_runs`` each)."""
    print(f"\n== 4. {CRANE}: the seed 004's setting at full size (64 tokens, d = 16, 3 heads) ==", flush=True)
    crane = measure_case(CRANE, load_case, derive, Format, runs)
    per_node = crane["cpu"] / crane["nodes"]
    print(f"graph nodes: {crane['nodes']}; quantities rounded: {crane['quantities']} ({crane['undecided']} undecided); "
          f"working precision reached: {crane['prec']} bits")
    print(f"load_case + derive() + decimals(all, 3 places): median of {runs}: {fmt_s(crane['cpu'])} CPU, "
          f"{fmt_s(crane['wall'])} wall; {per_node * 1e6:.1f} us CPU per node; "
          f"peak memory (tracemalloc) {crane['peak'] / 2**20:.1f} MiB")
    print(f"goal: {CRANE} under {CRANE_GOAL_SECONDS:.0f} s -> "
          f"{'met' if crane['cpu'] < CRANE_GOAL_SECONDS else 'NOT met'} ({fmt_s(crane['cpu'])} CPU)")
    if not scaling:
        return
    print(f"\n== 5. scaling: synthetic cases from the crane's weights, {', '.join(map(str, SCALING_TOKENS))} tokens x "
          f"{', '.join(map(str, SCALING_BLOCKS))} blocks ==", flush=True)
    print("(block 1 as in the crane; blocks 2.. the same heads behind a LayerNorm; median of "
          f"{scaling_runs} run{'s' if scaling_runs > 1 else ''}; CPU and wall seconds of load_case + derive() + "
          "decimals(all, 3 places); peak memory of one more run under tracemalloc)")
    header = f"{'tokens':>6} {'blocks':>6} {'nodes':>8} {'quantities':>10} {'CPU':>9} {'wall':>9} " \
             f"{'us/node':>8} {'peak MiB':>9} {'bits':>5}"
    print(header)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for blocks in SCALING_BLOCKS:
            for tokens in SCALING_TOKENS:
                path = os.path.join(tmp, f"crane-{tokens}-{blocks}.toml")
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(scaling_case(tokens, blocks))
                r = measure_case(path, load_case, derive, Format, scaling_runs)
                rows.append((tokens, blocks, r))
                print(f"{tokens:6d} {blocks:6d} {r['nodes']:8d} {r['quantities']:10d} {r['cpu']:8.3f}s "
                      f"{r['wall']:8.3f}s {r['cpu'] / r['nodes'] * 1e6:8.1f} {r['peak'] / 2**20:9.1f} "
                      f"{r['prec']:5d}" + (f"  ({r['undecided']} undecided)" if r["undecided"] else ""), flush=True)
    per_node = [r["cpu"] / r["nodes"] for _, _, r in rows]
    slope = log_slope([(r["nodes"], r["cpu"]) for _, _, r in rows])
    print(f"CPU per node: {min(per_node) * 1e6:.1f} to {max(per_node) * 1e6:.1f} us "
          f"(max/min {max(per_node) / min(per_node):.2f}); slope of log(CPU) on log(nodes): {slope:.2f} "
          "(1 = time in proportion to the number of intermediates)")
    for blocks in SCALING_BLOCKS:
        mine = [(r["nodes"], r["cpu"]) for _, b, r in rows if b == blocks]
        print(f"  {blocks} block{'s' if blocks > 1 else ' '}: slope {log_slope(mine):.2f}, "
              f"us/node {', '.join(f'{c / n * 1e6:.0f}' for n, c in mine)}")
    higher = [f"{t}x{b}" for t, b, r in rows if r["prec"] > 128]
    if higher:
        print(f"  ({', '.join(higher)} (tokens x blocks) reached more than 128 bits: some value the first "
              "evaluation's balls could not round, so the whole graph was evaluated again at twice the "
              "precision, which about doubles the time per node)")
    print(f"goal: time in proportion to the intermediates, not faster -> "
          f"{'met' if slope <= SLOPE_GOAL else 'NOT met'} (slope {slope:.2f}, goal at most {SLOPE_GOAL})")


# =========================================================================== main

def fmt_s(x: float) -> str:
    return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7, help="derive runs (median), default 7")
    ap.add_argument("--json-runs", type=int, default=3, help="JSON export runs (median), default 3")
    ap.add_argument("--budget", type=float, default=150, help="CPU seconds per baseline task, default 150")
    ap.add_argument("--wall", type=float, default=210, help="wall-clock cap of the baseline, default 210 s")
    ap.add_argument("--quiet", action="store_true", help="do not print the baseline's progress")
    ap.add_argument("--profile", action="store_true", help="also print a cProfile of one derive run")
    ap.add_argument("--no-baseline", action="store_true", help="skip the SymPy baseline (sections 2 and 3)")
    ap.add_argument("--no-crane", action="store_true", help="skip the crane case and the scaling table (4, 5)")
    ap.add_argument("--no-scaling", action="store_true", help="skip the scaling table (section 5)")
    ap.add_argument("--crane-runs", type=int, default=3, help="crane runs (median), default 3")
    ap.add_argument("--scaling-runs", type=int, default=1, help="runs per scaling case (median), default 1")
    args = ap.parse_args(argv)
    log = (lambda s: None) if args.quiet else (lambda s: print(s, flush=True))

    load = f", load average {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else ""
    print(f"derive benchmark, case {CASE!r}; Python {sys.version.split()[0]}, {os.cpu_count()} CPUs{load}",
          flush=True)
    (load_case, derive, records, Format, VALUE_FORMAT), import_s = import_derive()
    import flint
    import sympy

    print(f"sympy {sympy.__version__}, python-flint {flint.__version__}; import of derive: {fmt_s(import_s)}")

    def run_decimals():
        dv = derive(load_case(CASE))
        return dv, dv.decimals(dv.quantities(), Format())

    def run_json():
        return records(derive(load_case(CASE)), Format())

    # ---------------------------------------------------------------- derive
    print("\n== 1. derive ==", flush=True)
    clear_caches()
    c0, w0 = time.process_time(), time.perf_counter()
    dv, texts = run_decimals()  # the first call also imports derive's rules: shown apart
    first = (time.process_time() - c0, time.perf_counter() - w0)
    runs = timed(run_decimals, args.runs)
    d_cpu, d_wall = median(runs, 0), median(runs, 1)
    jruns = timed(run_json, args.json_runs)
    j_cpu, j_wall = median(jruns, 0), median(jruns, 1)
    clear_caches()
    tracemalloc.start()
    run_decimals()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    clear_caches()
    tracemalloc.start()
    recs = run_json()
    _, jpeak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    refs = dv.quantities()
    undecided = sum(1 for t in texts.values() if "undecided" in t)
    nodes = len(dv.graph.nodes)
    print(f"graph nodes: {nodes}; quantities rounded: {len(refs)} ({undecided} undecided); "
          f"working precision reached: {max(dv.precisions, default=0)} bits")
    print(f"load_case + derive() + decimals(all, 3 places): median of {args.runs}: "
          f"{fmt_s(d_cpu)} CPU, {fmt_s(d_wall)} wall (min {fmt_s(min(r[0] for r in runs))}, "
          f"max {fmt_s(max(r[0] for r in runs))} CPU); the first call (imports the rules): {fmt_s(first[0])} CPU")
    print(f"JSON export (records: 3 places + 30 digits + exact forms): median of {args.json_runs}: "
          f"{fmt_s(j_cpu)} CPU, {fmt_s(j_wall)} wall; {len(recs)} records, "
          f"{sum(1 for r in recs if 'undecided' in str(r.get('value')))} with value 'undecided' at 30 digits")
    print(f"peak memory (tracemalloc): {peak / 2**20:.2f} MiB for the run, {jpeak / 2**20:.2f} MiB for the JSON export")

    if args.profile:
        import cProfile
        import pstats
        clear_caches()
        prof = cProfile.Profile()
        prof.runcall(run_json)
        print("\ncProfile of one JSON export (top 15 by cumulative time):")
        pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(15)

    def crane_sections():
        if not args.no_crane:
            crane_and_scaling(load_case, derive, Format, args.crane_runs, args.scaling_runs, not args.no_scaling)

    if args.no_baseline:
        crane_sections()
        return 0

    # ---------------------------------------------------------------- baseline
    case = load_case(CASE)
    plan = planned_outputs(case)
    print(f"\n== 2. naive SymPy baseline == (forward: {plan['forward']} quantities; gradient: "
          f"dL/dE for all {plan['gradient']} entries of E)", flush=True)
    lacking = supported(case)
    if lacking:
        print(f"the baseline does not implement {lacking}; no comparison")
        return 1
    print(f"two forked processes side by side, each with a budget of {args.budget:.0f} s CPU; "
          f"wall-clock cap {args.wall:.0f} s", flush=True)
    tasks = run_baseline(case, args.budget, args.wall, log)
    total_cpu = sum(t["cpu"] for t in tasks.values())
    finished = all(t["status"] == "done" for t in tasks.values())
    done_n = sum(len(t["values"]) for t in tasks.values())
    planned_n = sum(plan.values())
    print()
    for kind, t in tasks.items():
        last_stage = t["stages"][-1][0] if t["stages"] else "(nothing)"
        print(f"{kind:8s}: {t['status']}; {t['cpu']:.1f} s CPU; {len(t['values'])} of {plan[kind]} "
              f"quantities evaluated; last stage built: {last_stage}")
    checked, unmatched, worst, bad = check_values(tasks, dv, VALUE_FORMAT)
    print(f"check: {checked} baseline values against derive's certified values, max relative difference "
          f"{float(worst):.1e}" + (f"; {unmatched} not matched to a derive quantity" if unmatched else "")
          + (f"; {len(bad)} DISAGREE: {bad[:3]}" if bad else ""))
    if finished:
        base_cpu, base_label = total_cpu, "measured, full baseline"
        extrap = None
    else:
        base_cpu, base_label = total_cpu, "LOWER BOUND: measured on the part that fit in the budget"
        mean_cost = total_cpu / done_n if done_n else None
        extrap = max(total_cpu, mean_cost * planned_n) if mean_cost else None
        print(f"NOT FINISHED: the full baseline takes more than the budget; {done_n} of {planned_n} quantities "
              f"were evaluated in {total_cpu:.1f} s CPU (the timed subset).")
        if extrap:
            print(f"ROUGH EXTRAPOLATION (an estimate, not a measurement): {total_cpu:.1f} s CPU / {done_n} quantities "
                  f"finished x {planned_n} planned = {extrap:.0f} s CPU. Likely an underestimate: the quantities not "
                  "reached (logits, softmax, loss, dL/dE) sit at the end of the network, where each expression "
                  "contains all the earlier ones.")
        else:
            print("EXTRAPOLATION: not possible, no quantity finished within the budget.")

    # ---------------------------------------------------------------- ratios
    print("\n== 3. side by side (CPU seconds) ==")
    rows = [("derive: load + derive + decimals (3 places)", d_cpu),
            ("derive: JSON export (3 places + 30 digits + exact)", j_cpu),
            (f"SymPy baseline ({base_label})", base_cpu)]
    if extrap:
        rows.append(("SymPy baseline (ROUGH EXTRAPOLATION, an estimate)", extrap))
    for label, value in rows:
        print(f"  {label:72s} {value:10.3f} s")
    bound = "" if finished else ">= "
    ratio, jratio = base_cpu / d_cpu, base_cpu / j_cpu
    print(f"  ratio baseline / derive run:         {bound}{ratio:,.0f}x"
          + (f"   (extrapolated: {extrap / d_cpu:,.0f}x)" if extrap else ""))
    print(f"  ratio baseline / derive JSON export: {bound}{jratio:,.0f}x"
          + (f"   (extrapolated: {extrap / j_cpu:,.0f}x)" if extrap else ""))
    print("\n== goals ==")
    print(f"  derive under {GOAL_SECONDS:.0f} s of compute after import: {fmt_s(d_cpu)} CPU "
          f"-> {'met' if d_cpu < GOAL_SECONDS else 'NOT met'}"
          f" (JSON export {fmt_s(j_cpu)}: {'met' if j_cpu < GOAL_SECONDS else 'NOT met'})")
    print(f"  at least {GOAL_RATIO:.0f}x faster than the baseline: {bound}{ratio:,.0f}x "
          f"-> {'met' if ratio >= GOAL_RATIO else 'not shown'}"
          + ("" if finished else " (on the measured lower bound)"))
    crane_sections()
    return 0


if __name__ == "__main__":
    sys.exit(main())
