"""Benchmark: every size side by side, with the goals of issue 12 ("Fast at every size").

Run from the repository root, with derive installed (``pip install -e '.[test]'``):

    python bench/run.py                      # every section, default budget 60 s a measurement
    python bench/run.py --budget 20 --sizes 16,64,128
    python bench/run.py --sections startup,seed

Each measurement runs in a process of its own, so that its time and its peak memory (the
process's peak resident set, ``ru_maxrss``, which counts python-flint's memory too) are its
own; a measurement that passes the time budget (``--budget``) or the memory cap
(``--max-mb``) is stopped and printed as ``skipped: > N s budget``, and the larger sizes of
the same column are skipped without being started. Times are CPU seconds (user + system)
unless marked wall, and the goals are judged on them: the machine is shared, and CPU time
moves less with its load (the budget and the memory cap are wall time and resident memory).

Sections (``--sections``, comma-separated; all by default):

startup  ``derive run cat-climbed``, the whole process, its output to a file and on a
         pseudo-terminal 120 columns wide (Rich's styles, the progress bar), against
         ``python -c "import rich, typer, flint"`` (the libraries any such CLI loads),
         interleaved, median of ``--runs``; goal: at most 2x, each.
         ``python -c "import sympy"`` is shown for scale.
seed     the seed case cat-climbed; crane  the bundled crane (64 tokens, d = 16). For each:
         the numpy float64 floor (the same shapes, random weights: forward, backward, one
         SGD step and the pass after, on one core), derive's engine (load_case + derive() +
         every quantity correctly rounded to 3 places, after import) and the whole CLI
         (``derive run``, ``--format json``, ``latex``), with the ratios. Goals (crane):
         engine under 0.2 s; each CLI command under 3 s.
blocks   synthetic one-block cases (``bench/synthetic.py``: pre-norm block, GELU-tanh,
         d_mlp = 4 d_model, 16 tokens, dyadic weights) at d_model ``--sizes`` (default 16,
         64, 128, 256, 768), 12 heads where 12 divides d_model, else 4: the numpy floor,
         derive with gradients (loss, every gradient, the SGD step, the pass after, every
         activation of both passes certified at 3 places, as the goal for d_model 768 says;
         the derivatives and the weights after the step are certified balls, rounded only
         when a page or an export prints them) and forward only (no target), each with
         its peak memory (the case files are read with DERIVE_MAX_CASE_MB raised: the
         wide ones are large TOML files on purpose); the least-squares slope of
         log(time) against log(multiply-adds). Goals: d_model 128 with gradients under 1 s
         and 200 MB; d_model 768 under 30 s and 4 GB, forward only under 5 s.
gpt2     a 12-block GPT-2-small-shaped forward pass (d_model 768, 12 heads, d_mlp 3072,
         8 tokens, vocabulary 32, its weights in a 680 MB safetensors file): the numpy
         floor, and derive (every activation and logit certified at 3 places) within a
         budget and a memory cap of its own (``--gpt2-budget``, default 240 s;
         ``--gpt2-max-mb``, default 12288); the time per multiply-add of each. Goal:
         under 120 s.

check    ``derive check cat-climbed FILE``, the whole process (report printed to a file), on
         hand files written to ``--check-lines`` lines (default 100,000): derive's own page
         (``derive run cat-climbed``) and the tests' two hand files (tests/hand/), repeated;
         as many distinct claims (``z_roof = 2.4871``: names of the case, random values
         with 3 to 7 places, nearly all wrong: every line traced back to the ones before);
         and hostile files: 200 lines nested 3,000 to 5,000 brackets deep, 20 lines of
         15,000 terms each, and a file past the 16 MB limit (refused before it is read).
         Goal (issue "work is bounded"): the repeated file under 5 s (CPU) and 300 MB.
         (bench/check.py times ``Checker.check_text`` alone, on Markdown chapters.)

The header gives the machine's speed: the CPU time of a fixed pure-Python loop, best of
three (this shared virtual machine's speed moved by a third within one hour of one session:
compare figures of two runs through it, or through the ratios each section prints).

The numpy floor is checked against derive on the smallest synthetic case before it is
timed: the same weights give the same L, and the same L after the SGD step (which needs
every gradient right), to 1e-9.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SIZES = (16, 64, 128, 256, 768)
TOKENS = 16
GPT2 = {"d_model": 768, "heads": 12, "d_mlp": 3072, "tokens": 8, "vocab": 32, "blocks": 12}
EPS = 1e-5  # the synthetic cases' LayerNorm eps (derive's default), inside the square root
LEARNING_RATE = 0.1
GELU_C = 0.044715


# =========================================================================== numpy floor

def random_params(shape: dict, seed: int = 0) -> dict:
    """Random float64 weights of a GPT-2-shaped model: ``E`` (V x d), ``P`` (T x d), ``W_U``
    (d x V) and per block ``W_Q, W_K, W_V, W_O`` (d x d), ``W_1`` (d x d_mlp), ``W_2``
    (d_mlp x d), standard deviation 1/sqrt(fan-in) (E, P: 1/2). ``shape``: d_model, heads,
    d_mlp, tokens, vocab, blocks."""
    import numpy as np

    rng = np.random.default_rng(seed)
    d, m, V, T = shape["d_model"], shape["d_mlp"], shape["vocab"], shape["tokens"]

    def mat(rows, cols, sd):
        return rng.normal(0.0, sd, (rows, cols))

    params = {"E": mat(V, d, 0.5), "P": mat(T, d, 0.5), "W_U": mat(d, V, d ** -0.5), "blocks": []}
    for _ in range(shape["blocks"]):
        block = {name: mat(d, d, d ** -0.5) for name in ("W_Q", "W_K", "W_V", "W_O")}
        block.update(W_1=mat(d, m, d ** -0.5), W_2=mat(m, d, m ** -0.5))
        params["blocks"].append(block)
    params["ids"] = [int(i) for i in rng.integers(0, V, T)]
    params["target"] = int(rng.integers(0, V))
    return params


def _layernorm(x):
    """LayerNorm without gain or bias, variance over n, eps inside the root: (u, sigma)."""
    import numpy as np

    xc = x - x.mean(axis=-1, keepdims=True)
    sigma = np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + EPS)
    return xc / sigma, sigma


def _layernorm_back(du, u, sigma):
    """dL/dx of u = LayerNorm(x) from dL/du (variance over n)."""
    return (du - du.mean(axis=-1, keepdims=True) - u * (du * u).mean(axis=-1, keepdims=True)) / sigma


def _softmax(s):
    import numpy as np

    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def floor_forward(params: dict, heads: int):
    """The forward pass in float64: pre-norm blocks (LayerNorm, causal multi-head attention
    scaled by sqrt(d_k), residual, LayerNorm, GELU-tanh MLP, residual), the final LayerNorm,
    the last row's logits. Returns (z, caches) for :func:`floor_backward`."""
    import numpy as np

    ids = params["ids"]
    T = len(ids)
    x = params["E"][ids] + params["P"][:T]
    d = x.shape[1]
    dk = d // heads
    mask = np.triu(np.full((T, T), -np.inf), 1)
    caches = []
    for W in params["blocks"]:
        u, s1 = _layernorm(x)
        q, k, v = (u @ W[n] for n in ("W_Q", "W_K", "W_V"))
        qh, kh, vh = (t.reshape(T, heads, dk).transpose(1, 0, 2) for t in (q, k, v))
        a = _softmax(qh @ kh.transpose(0, 2, 1) / math.sqrt(dk) + mask)
        o = (a @ vh).transpose(1, 0, 2).reshape(T, d)
        h = x + o @ W["W_O"]
        u2, s2 = _layernorm(h)
        m = u2 @ W["W_1"]
        t = np.tanh(math.sqrt(2 / math.pi) * (m + GELU_C * m ** 3))
        g = 0.5 * m * (1 + t)
        caches.append((u, s1, qh, kh, vh, a, o, u2, s2, m, t, g))
        x = h + g @ W["W_2"]
    f, sf = _layernorm(x)
    z = f[-1] @ params["W_U"]
    return z, (caches, f, sf)


def floor_backward(params: dict, heads: int, z, state) -> dict:
    """Reverse mode of L = -ln softmax(z)[target] through :func:`floor_forward`: dL/d every
    weight, shaped as the weight (``blocks``: a list of dicts)."""
    import numpy as np

    caches, f, sf = state
    ids, T = params["ids"], len(params["ids"])
    d = f.shape[1]
    dk = d // heads
    dz = _softmax(z)
    dz[params["target"]] -= 1
    grads = {"W_U": np.outer(f[-1], dz), "blocks": [None] * len(caches)}
    df = np.zeros_like(f)
    df[-1] = params["W_U"] @ dz
    dx = _layernorm_back(df, f, sf)
    for b in range(len(caches) - 1, -1, -1):
        W = params["blocks"][b]
        u, s1, qh, kh, vh, a, o, u2, s2, m, t, g = caches[b]
        G = {"W_2": g.T @ dx}
        dg = dx @ W["W_2"].T
        c = math.sqrt(2 / math.pi)
        dm = dg * (0.5 * (1 + t) + 0.5 * m * (1 - t * t) * c * (1 + 3 * GELU_C * m * m))
        G["W_1"] = u2.T @ dm
        dh = dx + _layernorm_back(dm @ W["W_1"].T, u2, s2)
        G["W_O"] = o.T @ dh
        doh = (dh @ W["W_O"].T).reshape(T, heads, dk).transpose(1, 0, 2)
        da = doh @ vh.transpose(0, 2, 1)
        dvh = a.transpose(0, 2, 1) @ doh
        ds = a * (da - (da * a).sum(axis=-1, keepdims=True)) / math.sqrt(dk)
        dqh, dkh = ds @ kh, ds.transpose(0, 2, 1) @ qh
        du = np.zeros_like(u)
        for name, dth in (("W_Q", dqh), ("W_K", dkh), ("W_V", dvh)):
            dt = dth.transpose(1, 0, 2).reshape(T, d)
            G[name] = u.T @ dt
            du += dt @ W[name].T
        dx = dh + _layernorm_back(du, u, s1)
        grads["blocks"][b] = G
    grads["E"] = np.zeros_like(params["E"])
    np.add.at(grads["E"], ids, dx)
    grads["P"] = np.zeros_like(params["P"])
    grads["P"][:T] = dx
    return grads


def floor_loss(z, target: int) -> float:
    """L = -ln softmax(z)[target], in float64."""
    import numpy as np

    return float(-(z[target] - z.max() - np.log(np.exp(z - z.max()).sum())))


def floor_step(params: dict, heads: int, with_grad: bool) -> tuple[float, float | None]:
    """One run of what derive computes: the forward pass, and with ``with_grad`` the loss,
    every gradient, the SGD step and the pass after. Returns (L before, L after), or the
    largest logit and None for a forward pass alone."""
    z, state = floor_forward(params, heads)
    if not with_grad:
        return float(z.max()), None
    before = floor_loss(z, params["target"])
    grads = floor_backward(params, heads, z, state)
    stepped = dict(params, blocks=[{n: w - LEARNING_RATE * grads["blocks"][b][n] for n, w in W.items()}
                                   for b, W in enumerate(params["blocks"])])
    for name in ("E", "P", "W_U"):
        stepped[name] = params[name] - LEARNING_RATE * grads[name]
    z2, _ = floor_forward(stepped, heads)
    return before, floor_loss(z2, params["target"])


def params_of_case(case) -> dict:
    """A derive Case's weights as float64 arrays for the floor (the synthetic cases' layout)."""
    import numpy as np

    def arr(rows):
        return np.array([[float(x) for x in row] for row in rows])

    return {"E": arr(case.E), "P": arr(case.P), "W_U": arr(case.W_U), "ids": list(case.ids), "target": case.target,
            "blocks": [{n: arr(b.matrices[n]) for n in ("W_Q", "W_K", "W_V", "W_O", "W_1", "W_2")}
                       for b in case.blocks]}


def shape_of_case(case) -> dict:
    """The shape of a bundled case for the floor: d_model, heads, d_mlp, tokens, vocab, blocks."""
    blocks = case.blocks
    d_mlp = max((len(b.matrices["W_1"][0]) for b in blocks if "W_1" in b.matrices), default=4 * case.d_model)
    heads = max((len(b.heads) if getattr(b, "heads", None) else case.heads) for b in blocks)
    while case.d_model % heads:  # a hand-set head of its own width: the nearest divisor for the floor
        heads -= 1
    return {"d_model": case.d_model, "heads": heads, "d_mlp": d_mlp, "tokens": len(case.ids),
            "vocab": len(case.pieces), "blocks": len(blocks)}


# =========================================================================== workers

def worker(kind: str, args: list[str]) -> dict:
    """One measurement, in this (child) process; returns what it measured."""
    if kind == "check-files":  # (written by a child: the parent's memory, which the measured processes start
        # from, stays small; Linux counts it in their peak)
        return {"files": {title: str(path) for title, path in check_files(args[0], int(args[1])).items()}}
    if kind == "synthetic":  # (written by a child, as the check files are: 600 MB at d_model 768)
        return {"path": write_synthetic(args[0], json.loads(args[1]), args[2] == "1")}
    if kind == "floor":
        shape, with_grad, repeats = json.loads(args[0]), args[1] == "1", int(args[2])
        params = random_params(shape)
        cpu = []
        for _ in range(repeats):
            c0 = time.process_time()
            floor_step(params, shape["heads"], with_grad)
            cpu.append(time.process_time() - c0)
        return {"cpu": statistics.median(cpu)}
    if kind == "engine":
        path, repeats = args[0], int(args[1])
        activations = len(args) > 2 and args[2] == "activations"
        from derive.case import load_case
        from derive.derivation import derive
        from derive.rounding import Format

        cpu, parts = [], None
        for _ in range(repeats):
            c0 = time.process_time()
            case = load_case(path)
            c1 = time.process_time()
            dv = derive(case)
            c2 = time.process_time()
            dv.evaluation()
            c3 = time.process_time()
            # activations: the forward passes' quantities (the derivatives are certified balls, not rounded)
            texts = dv.decimals(dv.quantities(derivatives=not activations), Format())
            c4 = time.process_time()
            cpu.append(c4 - c0)
            parts = {"load": c1 - c0, "graph": c2 - c1, "evaluate": c3 - c2, "round": c4 - c3}
        return {"cpu": statistics.median(cpu), "parts": parts, "nodes": len(dv.graph.nodes),
                "quantities": len(texts), "undecided": sum("undecided" in t for t in texts.values()),
                "prec": max(dv.precisions)}
    if kind == "check-floor":  # the floor against derive on one case: L and L after the step
        from derive.case import load_case
        from derive.derivation import derive
        from derive.steps import Ref

        case = load_case(args[0])
        dv = derive(case)
        L = dv.outputs["L"]
        exact = [float(dv.decimal(Ref(phase, L), _value_format())) for phase in ("before", "after")]
        params = params_of_case(case)
        mine = floor_step(params, case.heads, True)
        return {"derive": exact, "floor": list(mine)}
    raise SystemExit(f"unknown worker {kind!r}")


def _value_format():
    from derive.rounding import Format

    return Format(places=None, sig=17, mode="half-even")


class Measure:
    """Runs a command in a child process within a time budget and a memory cap.

    Returns a dict with ``cpu`` (user + system seconds of the child), ``wall``, ``peak_mb``
    (the child's peak resident set), ``out`` (its standard output, or the output file's size
    in ``bytes``) and, for a worker, what it reported; or ``{"skipped": reason}``."""

    def __init__(self, budget: float, max_mb: float):
        self.budget, self.max_mb = budget, max_mb

    def __call__(self, argv: list[str], env: dict | None = None, codes: tuple[int, ...] = (0,)) -> dict:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            start = time.perf_counter()
            child = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                     env={**os.environ, **(env or {})})
            while True:
                pid, status, usage = os.wait4(child.pid, os.WNOHANG)
                if pid:
                    break
                reason = None
                if time.perf_counter() - start > self.budget:
                    reason = f"> {self.budget:g} s budget"
                elif _rss_mb(child.pid) > self.max_mb:
                    reason = f"> {self.max_mb:g} MB memory cap"
                if reason:
                    child.kill()
                    os.wait4(child.pid, 0)
                    return {"skipped": reason}
                time.sleep(0.02)
            child.returncode = os.waitstatus_to_exitcode(status)
            wall = time.perf_counter() - start
            size = out.seek(0, os.SEEK_END)
            out.seek(max(0, size - TAIL))  # (the last lines alone: a child forked later counts the memory
            err.seek(max(0, err.seek(0, os.SEEK_END) - TAIL))  # this process holds in its own peak)
            text = out.read().decode("utf-8", "replace")
            error = err.read().decode("utf-8", "replace").strip().splitlines() or ["(no message)"]
            if child.returncode not in codes:
                return {"skipped": f"failed (exit {child.returncode}): {error[-1][:160]}"}
            return {"cpu": usage.ru_utime + usage.ru_stime, "wall": wall, "peak_mb": usage.ru_maxrss / 1024,
                    "bytes": size, "out": text, "code": child.returncode, "error": error[-1]}

    def terminal(self, argv: list[str], columns: int = 120) -> dict:
        """``argv`` run on a pseudo-terminal ``columns`` wide (as a user's terminal: Rich
        prints styles, and derive's progress bar is drawn), its output read and dropped:
        ``cpu``, ``wall`` and ``peak_mb`` as :meth:`__call__` gives them (no budget: a
        start-up command)."""
        import pty

        start = time.perf_counter()
        pid, fd = pty.fork()
        if pid == 0:  # (the child: the command, with the terminal's width)
            os.environ["COLUMNS"] = str(columns)
            os.execv(argv[0], argv)
        while True:
            try:
                if not os.read(fd, 1 << 16):
                    break
            except OSError:  # (the terminal closes when the command ends)
                break
        _, status, usage = os.wait4(pid, 0)
        os.close(fd)
        if os.waitstatus_to_exitcode(status) != 0:
            return {"skipped": f"failed (exit {os.waitstatus_to_exitcode(status)})"}
        return {"cpu": usage.ru_utime + usage.ru_stime, "wall": time.perf_counter() - start,
                "peak_mb": usage.ru_maxrss / 1024}

    def worker(self, kind: str, *args: str) -> dict:
        """A :func:`worker` measurement; its report's fields are merged in (its ``cpu`` is
        the measured part alone; ``process_cpu`` the whole child's, imports included)."""
        env = {"DERIVE_MAX_CASE_MB": "1000"}  # (the wide synthetic cases are large TOML files on purpose)
        if kind == "floor":  # the floor on one core; derive runs numpy as a user's derive does (derive.lazy.numpy)
            env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        got = self([sys.executable, str(Path(__file__).resolve()), "--worker", kind, *args], env)
        if "skipped" in got:
            return got
        report = json.loads(got.pop("out").strip().splitlines()[-1])
        got["process_cpu"] = got.pop("cpu")
        return {**got, **report}


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


# =========================================================================== helpers

def derive_argv() -> list[str]:
    """The installed ``derive`` command (the one beside this Python), else ``python -m derive``."""
    exe = Path(sys.executable).with_name("derive")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("derive")
    return [found] if found else [sys.executable, "-m", "derive"]


def byte_compiled() -> str:
    """Byte-compile derive's modules (``derive``, ``derive.rules``, ``derive.cases``) where
    they are not, as ``pip install .`` (the README's install) does, so that every process
    measured starts as a user's does; a line saying so, with what the compilation took.
    (An editable install compiles them at the first start on a machine that writes
    bytecode; one that sets PYTHONDONTWRITEBYTECODE, as this one may, would compile them
    at every start: about 0.5 s of each command.)"""
    import compileall

    import derive
    import derive.cases
    import derive.rules

    start = time.process_time()
    folders = [Path(p.__file__).parent for p in (derive, derive.rules, derive.cases)]
    ok = all(compileall.compile_dir(str(f), maxlevels=0, quiet=1) for f in folders)
    took = time.process_time() - start
    return (f"derive's modules byte-compiled first, as pip install . does ({took:.2f} s; "
            f"PYTHONDONTWRITEBYTECODE {'set' if os.environ.get('PYTHONDONTWRITEBYTECODE') else 'not set'})"
            + ("" if ok else "; some could not be compiled: they are compiled at every start"))


def macs(shape: dict, with_grad: bool = False) -> int:
    """Multiply-adds of one forward pass: per block T (4 d^2 + 2 d d_mlp) for the dense
    layers and T(T+1)/2 * 2 d for the causal scores and mix, plus the last row's d V logits."""
    d, m, T = shape["d_model"], shape["d_mlp"], shape["tokens"]
    per_block = T * (4 * d * d + 2 * d * m) + T * (T + 1) // 2 * 2 * d
    return shape["blocks"] * per_block + d * shape["vocab"]


def slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log(time) against log(work); None for fewer than 2 points."""
    if len(points) < 2:
        return None
    xs, ys = [math.log(w) for w, _ in points], [math.log(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def secs(r: dict, key: str = "cpu") -> str:
    """A measurement as text: ``1.23 s`` / ``45.6 ms``, or its skip reason."""
    if "skipped" in r:
        return "skipped: " + r["skipped"]
    x = r[key]
    return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"


def ratio(a: dict, b: dict, key_a: str = "cpu", key_b: str = "cpu") -> str:
    """``a`` over ``b`` as ``12.3x``, or ``-`` when either was skipped."""
    if "skipped" in a or "skipped" in b or not b[key_b]:
        return "-"
    return f"{a[key_a] / b[key_b]:.1f}x"


def goal(text: str, met: bool | None) -> str:
    """``goal: TEXT -> met`` / ``NOT met`` / ``not measured`` (``met`` None)."""
    return f"goal: {text} -> " + ("not measured" if met is None else "met" if met else "NOT met")


# =========================================================================== sections

def section_startup(args, measure: Measure) -> None:
    """The start-up section (module docstring): three commands interleaved, medians, the ratio."""
    print("\n== start-up: derive run cat-climbed, the whole process ==", flush=True)
    floor_argv = [sys.executable, "-c", "import rich, typer, flint"]
    runs = {"derive run cat-climbed": [], "derive run cat-climbed, on a terminal": [],
            'python -c "import rich, typer, flint"': [], 'python -c "import sympy"': []}
    commands = [derive_argv() + ["run", "cat-climbed"], None, floor_argv, [sys.executable, "-c", "import sympy"]]
    for _ in range(args.runs):  # interleaved, so that a change in the machine's load hits all alike
        for (label, got), argv in zip(runs.items(), commands):
            got.append(measure.terminal(commands[0]) if argv is None else measure(argv))
    med = {}
    for label, got in runs.items():
        ok = [r for r in got if "skipped" not in r]
        if not ok:
            print(f"{label:42} {secs(got[0])}")
            continue
        med[label] = {k: statistics.median(r[k] for r in ok) for k in ("wall", "cpu", "peak_mb")}
        print(f"{label:42} {med[label]['wall']:6.3f} s wall, {med[label]['cpu']:6.3f} s CPU, "
              f"peak {med[label]['peak_mb']:5.0f} MB (median of {len(ok)})")
    base = med.get('python -c "import rich, typer, flint"')
    for label, where in (("derive run cat-climbed", "output to a file"),
                         ("derive run cat-climbed, on a terminal", "on a terminal")):
        cli = med.get(label)
        if cli and base:
            r = cli["cpu"] / base["cpu"]
            print(f"ratio, {where}: {r:.2f}x CPU ({cli['wall'] / base['wall']:.2f}x wall); "
                  + goal("at most 2x (CPU)", r <= 2))


def section_case(args, measure: Measure, name: str, engine_goal: float | None, cli_goal: float | None) -> None:
    """A bundled case: the floor, the engine and the CLI commands, with their goals in seconds (None: none)."""
    from derive.case import load_case

    case = load_case(name)
    shape = shape_of_case(case)
    print(f"\n== {name}: {shape['tokens']} tokens, d_model {shape['d_model']}, {shape['blocks']} block(s), "
          f"d_mlp {shape['d_mlp']}, vocabulary {shape['vocab']} ==", flush=True)
    floor = measure.worker("floor", json.dumps(shape), "1", str(max(3, args.runs)))
    engine = measure.worker("engine", name, str(args.runs))
    print(f"numpy float64 floor (same shapes, random weights), forward+backward+step+after: {secs(floor)}")
    if "skipped" not in engine:
        parts = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in engine["parts"].items())
        print(f"derive engine, load + derive + round all {engine['quantities']} quantities (3 places): "
              f"{secs(engine)} ({parts}; {engine['nodes']} nodes, {engine['prec']} bits, "
              f"{engine['undecided']} undecided), process peak {engine['peak_mb']:.0f} MB; "
              f"{ratio(engine, floor)} the floor")
    else:
        print(f"derive engine: {secs(engine)}")
    if engine_goal is not None:
        print("  " + goal(f"engine under {engine_goal:g} s", None if "skipped" in engine else engine["cpu"] < engine_goal))
    commands = {"derive run": ["run", name], "derive run --format json": ["run", name, "--format", "json"],
                "derive latex": ["latex", name]}
    for label, argv in commands.items():
        r = measure(derive_argv() + argv)
        if "skipped" in r:
            print(f"{label:26} {secs(r)}")
            continue
        print(f"{label:26} {r['wall']:6.2f} s wall, {r['cpu']:6.2f} s CPU, peak {r['peak_mb']:5.0f} MB, "
              f"{r['bytes'] / 1e6:.2f} MB out; {ratio(r, engine)} the engine")
        if cli_goal is not None:
            print("  " + goal(f"under {cli_goal:g} s (CPU)", r["cpu"] < cli_goal))


def block_shape(d: int, tokens: int = TOKENS) -> dict:
    """The synthetic one-block case of width d: 12 heads where 12 divides d, else 4."""
    return {"d_model": d, "heads": 12 if d % 12 == 0 else 4, "d_mlp": 4 * d, "tokens": tokens, "vocab": 32,
            "blocks": 1}


WIDE = 512  # d_model from which a synthetic case keeps its weights in a safetensors file (as a wide model should)


def write_synthetic(folder: str, shape: dict, trained: bool) -> str | None:
    """The case file of ``shape`` (bench/synthetic.py), in a folder of its own (with its
    safetensors file from d_model :data:`WIDE` on: 64.6 MB of TOML at d_model 768), or
    None when that module is absent."""
    try:
        from synthetic import write_case
    except ImportError:
        return None
    own = Path(folder) / (f"d{shape['d_model']}-b{shape['blocks']}-t{shape['tokens']}-" + ("grad" if trained else "fwd"))
    own.mkdir(exist_ok=True)
    return str(write_case(own, safetensors=shape["d_model"] >= WIDE, d_model=shape["d_model"], heads=shape["heads"],
                          d_mlp=shape["d_mlp"], tokens=shape["tokens"], vocab=shape["vocab"], blocks=shape["blocks"],
                          trained=trained))


def synthetic_case(measure: Measure, folder: str, shape: dict, trained: bool) -> str | None:
    """:func:`write_synthetic` in a child process: writing the d_model 768 case takes this
    process to about 600 MB, and every measured process started after would count that in
    its peak (Linux keeps the peak resident set across exec: a refused check of 0.16 s read
    623 MB); None when bench/synthetic.py is absent or the writing was stopped."""
    return measure.worker("synthetic", folder, json.dumps(shape), "1" if trained else "0").get("path")


def section_blocks(args, measure: Measure, folder: str) -> dict:
    """The one-block table; returns each column's (MACs, CPU seconds) points."""
    print(f"\n== one block: d_model {', '.join(map(str, args.sizes))}; d_mlp = 4 d_model, {TOKENS} tokens, "
          "vocabulary 32 ==", flush=True)
    first = block_shape(min(args.sizes))
    small = synthetic_case(measure, folder, first, True)
    if small is None:
        print("skipped: bench/synthetic.py (the synthetic cases) is not there")
        return {}
    check = measure.worker("check-floor", small)
    if "skipped" not in check:
        diff = max(abs(a - b) for a, b in zip(check["derive"], check["floor"]))
        print(f"the floor against derive at d_model {first['d_model']}: L {check['floor'][0]:.12g} / "
              f"{check['derive'][0]:.12g}, L after the step {check['floor'][1]:.12g} / {check['derive'][1]:.12g} "
              f"(largest difference {diff:.1e}; {'agree' if diff < 1e-9 else 'DISAGREE'})")
    else:
        print(f"the floor against derive: {secs(check)}")
    columns = {"floor": "numpy fwd+bwd", "grad": "derive grad", "fwd": "derive fwd"}
    print(f"{'d_model':>7} {'heads':>5} {'MACs':>10} | " + " | ".join(f"{c:>22}" for c in columns.values())
          + " | derive/floor")
    stopped: dict[str, str] = {}
    points = {key: [] for key in columns}
    for d in args.sizes:
        shape = block_shape(d)
        work = macs(shape)
        row = {}
        for key in columns:
            if key in stopped:
                row[key] = {"skipped": stopped[key]}
                continue
            if key == "floor":
                r = measure.worker("floor", json.dumps(shape), "1", "3")
            else:
                path = synthetic_case(measure, folder, shape, key == "grad")
                r = measure.worker("engine", path, "1", "activations")
                shutil.rmtree(Path(path).parent)
            if "skipped" in r:
                stopped[key] = r["skipped"]
            else:
                points[key].append((work, r["cpu"]))
            row[key] = r
        cells = []
        for key in columns:
            r = row[key]
            cells.append(f"{secs(r):>22}" if "skipped" in r else f"{secs(r):>10} {r['peak_mb']:6.0f} MB   ")
        print(f"{d:7d} {shape['heads']:5d} {work:10.3g} | " + " | ".join(cells) + f" | {ratio(row['grad'], row['floor'])}",
              flush=True)
        if "parts" in row["grad"]:  # where derive's time goes, for the next step
            print("  derive grad: " + ", ".join(f"{k} {v:.2f} s" for k, v in row["grad"]["parts"].items())
                  + f"; {row['grad']['nodes']:,} nodes, {row['grad']['quantities']:,} activations rounded")
        if d == 128:
            r = row["grad"]
            print("  " + goal("d_model 128 with gradients under 1 s and 200 MB",
                              None if "skipped" in r else r["cpu"] < 1 and r["peak_mb"] < 200))
        if d == 768:
            for key, text in (("grad", "with gradients under 30 s and 4 GB"), ("fwd", "forward only under 5 s")):
                r = row[key]
                met = None if "skipped" in r else r["cpu"] < (30 if key == "grad" else 5) and r["peak_mb"] < 4096
                print("  " + goal(f"d_model 768 {text}", met))
    for key, label in columns.items():
        s = slope(points[key])
        if s is not None:
            per = ", ".join(f"{t / w * 1e9:.3g}" for w, t in points[key])
            print(f"{label}: slope of log(time) on log(MACs) {s:.2f} over {len(points[key])} sizes; ns per MAC: {per}")
    return points


def section_gpt2(args, folder: str) -> None:
    """The 12-block forward pass: the floor, and derive within a budget and a memory cap
    of its own (``--gpt2-budget``, ``--gpt2-max-mb``: its 85 million weights are beyond
    the one-block cap)."""
    shape = GPT2
    work = macs(shape)
    measure = Measure(args.gpt2_budget, args.gpt2_max_mb)
    print(f"\n== GPT-2-small-shaped forward pass: {shape['blocks']} blocks, d_model {shape['d_model']}, "
          f"{shape['heads']} heads, d_mlp {shape['d_mlp']}, {shape['tokens']} tokens ({work:.3g} MACs); budget "
          f"{args.gpt2_budget:g} s, {args.gpt2_max_mb:g} MB ==", flush=True)
    floor = measure.worker("floor", json.dumps(shape), "0", "3")
    print(f"numpy float64 floor, forward: {secs(floor)}"
          + ("" if "skipped" in floor else f" ({floor['cpu'] / work * 1e9:.3g} ns per MAC)"))
    path = synthetic_case(measure, folder, shape, False)
    if path is None:
        print("derive: skipped: bench/synthetic.py (the synthetic cases) is not there")
        return
    r = measure.worker("engine", path, "1")
    shutil.rmtree(Path(path).parent)
    print(f"derive, every activation and logit certified (3 places): {secs(r)}"
          + ("" if "skipped" in r else f", peak {r['peak_mb']:.0f} MB, {r['cpu'] / work * 1e9:.3g} ns per MAC; "
             f"{ratio(r, floor)} the floor; " + ", ".join(f"{k} {v:.1f} s" for k, v in r["parts"].items())
             + f"; evaluated at {r['prec']} bits"))
    print("  " + goal("under 120 s", None if "skipped" in r else r["cpu"] < 120))


# =========================================================================== main

SPEED_LOOP = 10 ** 7  # the squares summed by machine_speed
TAIL = 1 << 16  # bytes of a child's output (and error) kept by Measure: the last lines


def check_files(folder: str, lines: int, seed: int = 0) -> dict[str, Path]:
    """The hand files of the check section (module docstring), written to ``folder``."""
    import random

    rng = random.Random(seed)
    hand = HERE.parent / "tests" / "hand"
    page = subprocess.run(derive_argv() + ["run", "cat-climbed"], capture_output=True, text=True,
                          encoding="utf-8", check=True).stdout
    unit = "\n".join([page] + [(hand / name).read_text(encoding="utf-8") for name in ("seed_000.md", "seed_000_slips.md")])
    unit_lines = unit.splitlines()
    repeated = (unit_lines * (lines // len(unit_lines) + 1))[:lines]
    names = ["mu_5", "sigma_5", "z_roof", "L", "p(\u2423roof)", "a_{5,3}^{(1)}", "h_5[1]", "x_3[2]", "u_5[4]",
             "f_5[2]"]
    distinct = [f"{rng.choice(names)} = {rng.uniform(-3, 3):.{rng.randint(3, 7)}f}" for _ in range(lines)]
    nested = ["z_roof = " + "{" * 5000 + "2.491" + "}" * 5000] * 100 + ["L = " + "(" * 3000 + "0.928" + ")" * 3000] * 100
    long = ["z_roof = " + " + ".join(f"{rng.random():.3f}" for _ in range(15000)) for _ in range(20)]
    texts = {f"repeated: derive's page and the tests' hand files, {lines:,} lines": repeated,
             f"distinct claims, {lines:,} lines": distinct,
             "nested brackets, 200 lines 3,000 to 5,000 deep": nested, "long lines, 20 of 15,000 terms": long,
             "past the limit: 17 MB of comments": ["L = 0.928"] + ["% " + "x" * 97] * 170_000}
    paths = {}
    for k, (title, text) in enumerate(texts.items()):
        paths[title] = Path(folder) / f"hand-{k}.md"
        paths[title].write_text("\n".join(text) + "\n", encoding="utf-8")
    return paths


def section_check(args, measure: Measure, folder: str) -> None:
    """The check section (module docstring): derive check on each file, the whole process."""
    print("\n== check: derive check cat-climbed FILE, the whole process (report to a file) ==", flush=True)
    files = measure.worker("check-files", folder, str(args.check_lines))
    if "skipped" in files:
        print(f"the hand files: {secs(files)}")
        return
    for title, path in files["files"].items():
        path = Path(path)
        with open(path, "rb") as fh:
            size = f"{path.stat().st_size / 1e6:.1f} MB, {sum(1 for _ in fh):,} lines"
        r = measure(derive_argv() + ["check", "cat-climbed", str(path)], codes=(0, 1, 2))
        if "skipped" in r:
            print(f"{title} ({size}): {secs(r)}")
            continue
        said = r["out"].strip().splitlines()[-1] if r["code"] != 2 else r["error"]
        print(f"{title} ({size}): {r['cpu']:.2f} s CPU ({r['wall']:.2f} s wall), peak {r['peak_mb']:.0f} MB, "
              f"exit {r['code']}: {said[:110]}")
        if title.startswith("repeated"):
            print("  " + goal("under 5 s (CPU) and 300 MB", r["cpu"] < 5 and r["peak_mb"] < 300))


def machine_speed() -> str:
    """A line giving this machine's speed at the start, for comparing runs across machines
    and hours: the CPU time of a fixed pure-Python loop (sum of i*i for i < 10^7), the best
    of three (a virtual machine's speed moves by a third within an hour)."""
    best = min(_loop_seconds() for _ in range(3))
    return f"machine speed: {best:.3f} s of CPU for sum(i*i for i < 10^7) (best of 3; lower is faster)"


def _loop_seconds() -> float:
    start = time.process_time()
    sum(i * i for i in range(SPEED_LOOP))
    return time.process_time() - start


def main(argv=None) -> int:
    """Run the sections asked for (see the module docstring); ``--worker`` runs one measurement."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    ap.add_argument("--sections", default="startup,seed,crane,blocks,gpt2,check",
                    help="comma-separated: startup, seed, crane, blocks, gpt2, check (default all)")
    ap.add_argument("--check-lines", type=int, default=100_000, help="lines of the check section's files")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="d_model of the one-block cases")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds a measurement may take (default 60)")
    ap.add_argument("--max-mb", type=float, default=4096.0, help="memory cap of a measurement in MB (default 4096)")
    ap.add_argument("--gpt2-budget", type=float, default=240.0,
                    help="seconds the 12-block measurement may take (default 240: twice its goal)")
    ap.add_argument("--gpt2-max-mb", type=float, default=12288.0,
                    help="memory cap of the 12-block measurement in MB (default 12288)")
    ap.add_argument("--runs", type=int, default=5, help="runs of the start-up and case measurements (median)")
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1:])))
        return 0
    args.sizes = sorted(int(s) for s in args.sizes.split(","))
    sections = args.sections.split(",")
    import flint
    import numpy

    print(f"derive benchmark: Python {sys.version.split()[0]}, numpy {numpy.__version__}, python-flint "
          f"{flint.__version__}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start; "
          f"budget {args.budget:g} s and {args.max_mb:g} MB a measurement", flush=True)
    print(byte_compiled(), flush=True)
    print(machine_speed(), flush=True)
    measure = Measure(args.budget, args.max_mb)
    if "startup" in sections:
        section_startup(args, measure)
    if "seed" in sections:
        section_case(args, measure, "cat-climbed", None, None)
    if "crane" in sections:
        section_case(args, measure, "crane", 0.2, 3.0)
    with tempfile.TemporaryDirectory() as folder:
        if "blocks" in sections:
            section_blocks(args, measure, folder)
        if "check" in sections:  # (before gpt2: a child forked after it counts the parent's 7 GB in its peak)
            section_check(args, measure, folder)
        if "gpt2" in sections:
            section_gpt2(args, folder)
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
