"""Hostile case files (issue 13, item 4): Hypothesis strategies that mutate the bundled cases
as a hostile user would, and a bounded in-process run of ``derive`` on the result.

A mutated case is the bundled case's TOML, parsed (numbers as :class:`~decimal.Decimal`),
changed by one to three mutations and written back as TOML (:func:`to_toml`):

- a value's type: a number as text, a list for a scalar, a table, a boolean, garbage text;
- a shape: a row or an entry dropped or repeated, a column added to or dropped from every
  row, an empty list;
- a magnitude from 1e-400 to 1e1000, written as a plain decimal (every digit) or with an
  exponent, and the issue's own ±1e4, 1e6, 1e10, 1e30, 1e100, 1e300;
- an exact tie: a value half-way between two printed decimals (0.0005, 2.4905), a row or a
  column copied over another (equal logits, equal keys);
- an unknown key in any table;
- the heads split differently: another ``heads`` count, or W_Q, W_K, W_V cut into
  ``[[blocks.heads]]`` of random widths;
- ``nan``, ``inf`` and ``-inf`` as TOML floats, and "nan", "inf", "1/0" as text;
- a setting of ``[conventions]`` (eps, temperature, learning rate) given any of these.

Used by tests/test_case_fuzz.py and bench/fuzz.py.
"""

from __future__ import annotations

import gc
import json
import re
import signal
import time
import tomllib
import traceback
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
# Every bundled case but crane (64 tokens: 10 to 40 s a run unmutated, past the bound).
CASES = sorted(p.stem for p in (ROOT / "cases").glob("*.toml") if p.stem != "crane")
TEXTS = {name: (ROOT / "cases" / f"{name}.toml").read_text(encoding="utf-8") for name in CASES}
COMMANDS = (("run",), ("run", "--sig", "4"), ("run", "--exact", "--places", "5"), ("run", "--format", "json"))


@dataclass(frozen=True)
class Raw:
    """A TOML value written as it is (``nan``, ``inf``, ``1e1000``, ``0.000...1``)."""

    text: str


BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _key(key: str) -> str:
    return key if BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _value(value) -> str:
    """One TOML value on one line (tables inline)."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            return {"NaN": "nan", "sNaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}[str(value)]
        text = str(value)
        return text if any(c in text for c in ".eE") else text + ".0"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


def to_toml(data: dict) -> str:
    """``data`` as a TOML document: its scalars and lists first, then one ``[table]`` per
    table (nested tables inline), then arrays of tables as ``[[key]]``."""
    lines, tables = [], []
    for key, value in data.items():
        if isinstance(value, dict) or (isinstance(value, list) and value and all(isinstance(v, dict) for v in value)):
            tables.append((key, value))
        else:
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in tables:
        for table in ([value] if isinstance(value, dict) else value):
            lines.append(f"\n[{_key(key)}]" if isinstance(value, dict) else f"\n[[{_key(key)}]]")
            lines += [f"{_key(k)} = {_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def parse(text: str) -> dict:
    return tomllib.loads(text, parse_float=Decimal)


# ---------------------------------------------------------------- where to mutate
def _paths(data, at=()):
    """Every path (a tuple of keys and indices) to a value in ``data``, the root excluded."""
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        yield at + (key,)
        yield from _paths(value, at + (key,))


def _get(data, path):
    for key in path:
        data = data[key]
    return data


def _set(data, path, value):
    _get(data, path[:-1])[path[-1]] = value


def _numeric(value) -> bool:
    return isinstance(value, (int, Decimal)) and not isinstance(value, bool)


# ---------------------------------------------------------------- values
ISSUE_MAGNITUDES = ("1e4", "-1e4", "1e6", "-1e6", "1e10", "1e30", "1e100", "1e300", "-1e300", "1e1000",
                    "1e-400", "1e-300", "1e-30")


@st.composite
def magnitudes(draw) -> Raw:
    """A number from 1e-400 to 1e1000 in size, with an exponent or as a plain decimal."""
    text = draw(st.sampled_from(ISSUE_MAGNITUDES)) if draw(st.booleans()) else None
    if text is None:
        exponent = draw(st.integers(-400, 1000))
        mantissa = draw(st.sampled_from(["1", "-1", "3.7", "-9.99", "5", "1.5"]))
        text = f"{mantissa}e{exponent}"
    value = Decimal(text)
    if draw(st.booleans()) and abs(value.adjusted()) <= 450:  # every digit written out
        plain = f"{value:f}"
        text = plain if "." in plain else plain + ".0"
    return Raw(text)


TIES = ("0.0005", "-0.0005", "2.4905", "0.00005", "-1.5", "0.125", "0.0625", "1.0000005", "0.5")
TEXTS_FOR_NUMBERS = ("nan", "inf", "-inf", "NaN", "Infinity", "1/0", "0/0", "1/3", "-2/7", "1e400", "abc", "",
                     " 0.5 ", "0x10", "1_000", "\u22120.5", "½")


@st.composite
def replacement(draw, old):
    """A new value for the leaf or subtree ``old``."""
    kind = draw(st.sampled_from(["magnitude", "magnitude", "magnitude", "tie", "tie", "text", "number-as-text",
                                 "list", "table", "bool", "nan-inf", "big-int", "zero", "negative"]))
    if kind == "magnitude":
        return draw(magnitudes())
    if kind == "tie":
        return Raw(draw(st.sampled_from(TIES)))
    if kind == "text":
        return draw(st.sampled_from(TEXTS_FOR_NUMBERS))
    if kind == "number-as-text":
        return _value(old) if _numeric(old) else str(draw(st.integers(-3, 3)))
    if kind == "list":
        return [old] if not isinstance(old, list) else [old, old]
    if kind == "table":
        return {} if draw(st.booleans()) else {"x": old}
    if kind == "bool":
        return draw(st.booleans())
    if kind == "nan-inf":
        return Raw(draw(st.sampled_from(["nan", "inf", "-inf", "+nan"])))
    if kind == "big-int":
        return 10 ** draw(st.integers(15, 500)) * draw(st.sampled_from([1, -1]))
    if kind == "zero":
        return Decimal("0") if draw(st.booleans()) else 0
    return -old if _numeric(old) else -1


# ---------------------------------------------------------------- mutations
def _mutate_value(draw, data):
    paths = [p for p in _paths(data) if not isinstance(_get(data, p), (dict, list))]
    numeric = [p for p in paths if _numeric(_get(data, p))]
    pool = numeric if numeric and draw(st.integers(0, 3)) else paths  # mostly numbers
    path = draw(st.sampled_from(pool))
    _set(data, path, draw(replacement(_get(data, path))))
    return f"value {path}"


def _mutate_subtree(draw, data):
    paths = list(_paths(data))
    path = draw(st.sampled_from(paths))
    _set(data, path, draw(replacement(_get(data, path))))
    return f"subtree {path}"


def _mutate_shape(draw, data):
    lists = [p for p in _paths(data) if isinstance(_get(data, p), list) and _get(data, p)]
    if not lists:
        return "no list"
    path = draw(st.sampled_from(lists))
    value = _get(data, path)
    how = draw(st.sampled_from(["drop", "repeat", "add-column", "drop-column", "empty"]))
    i = draw(st.integers(0, len(value) - 1))
    if how == "drop":
        del value[i]
    elif how == "repeat":
        value.insert(i, value[i])
    elif how == "empty":
        _set(data, path, [])
    else:
        rows = [r for r in value if isinstance(r, list)] or [value]
        for row in rows:
            if how == "add-column":
                row.append(row[-1] if row else 0)
            elif row:
                del row[-1]
    return f"shape {how} {path}"


def _mutate_tie(draw, data):
    """Copy a row over another (equal logits, keys, embeddings), or one entry of a row over another."""
    lists = [p for p in _paths(data) if isinstance(_get(data, p), list) and len(_get(data, p)) >= 2]
    if not lists:
        return "no list"
    path = draw(st.sampled_from(lists))
    value = _get(data, path)
    i, j = draw(st.integers(0, len(value) - 1)), draw(st.integers(0, len(value) - 1))
    value[j] = value[i] if not isinstance(value[i], list) else list(value[i])
    return f"tie {path} {i}->{j}"


def _mutate_key(draw, data):
    tables = [()] + [p for p in _paths(data) if isinstance(_get(data, p), dict)]
    path = draw(st.sampled_from(tables))
    key = draw(st.sampled_from(["W_q", "heads", "extra", "d_model", "eps", "temperature", "ids", "é", "a b",
                                "W_Q", "E", "limits", "kv_heads", "bias"]))
    _get(data, path)[key] = draw(st.sampled_from([1, Decimal("0.5"), "x", [1, 2], {}, True, Raw("nan")]))
    return f"key {path}.{key}"


def _mutate_heads(draw, data):
    model = data.get("model")
    blocks = data.get("blocks")
    if not isinstance(model, dict) or not isinstance(blocks, list) or not blocks:
        return "no heads"
    if draw(st.booleans()):  # another count: a divisor of d_model or not
        model["heads"] = draw(st.sampled_from([1, 2, 3, 4, 8, 0, -1]))
        return f"heads = {model['heads']}"
    block = draw(st.sampled_from(blocks))
    d = model.get("d_model")
    if not isinstance(d, int) or not 0 < d <= 64 or not isinstance(block, dict):
        return "no heads"

    def columns(name):
        m = block.get(name, "I" if name == "W_V" else None)
        if m == "I":
            return [[int(i == j) for j in range(d)] for i in range(d)]
        return m if isinstance(m, list) and all(isinstance(r, list) and len(r) == d for r in m) else None

    q, k, v = columns("W_Q"), columns("W_K"), columns("W_V")
    if q is None or k is None or v is None:
        return "no heads"
    cuts = sorted(set(draw(st.lists(st.integers(1, d - 1), max_size=3)))) if d > 1 else []
    edges = [0, *cuts, d]
    heads = [{"W_Q": [row[a:b] for row in q], "W_K": [row[a:b] for row in k], "W_V": [row[a:b] for row in v]}
             for a, b in zip(edges, edges[1:])]
    for name in ("W_Q", "W_K", "W_V"):
        block.pop(name, None)
    block["heads"] = heads
    return f"heads split at {cuts}"


def _mutate_convention(draw, data):
    """A setting of [conventions] (eps, temperature, learning rate, ...) given a hostile value:
    the issue's layernorm_eps = 1e400 and temperature = 0.0001 are among them."""
    table = data.setdefault("conventions", {})
    if not isinstance(table, dict):
        return "no conventions"
    key = draw(st.sampled_from(sorted(set(table) | {"layernorm_eps", "temperature", "learning_rate"})))
    table[key] = draw(st.one_of(magnitudes(), replacement(table.get(key, Decimal("1"))),
                                st.sampled_from([Raw("0.0001"), Raw("1e400"), Raw("1e-400"), 0, -1])))
    return f"conventions.{key}"


MUTATIONS = (_mutate_value, _mutate_value, _mutate_value, _mutate_subtree, _mutate_shape, _mutate_tie,
             _mutate_key, _mutate_heads, _mutate_convention)


@st.composite
def mutated_cases(draw):
    """(bundled case name, mutated TOML text, what was done, command arguments)."""
    name = draw(st.sampled_from(CASES))
    data = parse(TEXTS[name])
    done = []
    for _ in range(draw(st.integers(1, 3))):
        mutation = draw(st.sampled_from(MUTATIONS))
        done.append(mutation(draw, data))
    command = draw(st.sampled_from(COMMANDS))
    return name, to_toml(data), done, command


# ---------------------------------------------------------------- one bounded run
class OverTime(BaseException):
    """A run past its bound (a BaseException, so that no handler in derive catches it)."""


@dataclass
class Outcome:
    exit_code: int
    stderr: str
    seconds: float
    exception: BaseException | None


def run_bounded(args: list[str], bound: float) -> Outcome:
    """``derive ARGS`` in this process through typer's CliRunner, stopped by SIGALRM after
    ``bound`` seconds (raising :class:`OverTime` out of the run: exit code -1, and the
    innermost frames of derive it stopped in, as the outcome's stderr).

    The run is set up as ``derive`` in a process of its own (:func:`derive.__main__.main`): the
    collector's young threshold at GC_THRESHOLD."""
    from typer.testing import CliRunner

    from derive.__main__ import GC_THRESHOLD
    from derive.cli import app

    def alarm(signum, frame):
        raise OverTime(f"past {bound} s")

    threshold = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, *threshold[1:])
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, bound)
    start = time.perf_counter()
    try:
        result = CliRunner().invoke(app, args)
    except OverTime as exc:  # where it was: the innermost frames in derive
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/derive/" in f.filename][-3:]
        where = "; ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in frames)
        return Outcome(-1, f"over the bound of {bound:g} s, in {where}", time.perf_counter() - start, exc)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        gc.set_threshold(*threshold)
    return Outcome(result.exit_code, result.stderr, time.perf_counter() - start, result.exception)


def problem(outcome: Outcome) -> str | None:
    """What is wrong with a run's outcome (None: exit 0, or exit 2 with one error line)."""
    if outcome.exit_code == -1:
        return outcome.stderr
    if outcome.exit_code not in (0, 2):
        return f"exit code {outcome.exit_code}: {outcome.stderr.strip()[:500]} {outcome.exception!r}"[:800]
    if outcome.exit_code == 2:
        lines = [line for line in outcome.stderr.splitlines() if line.strip()]
        if len(lines) != 1 or not lines[0].startswith("error: ") or "Traceback" in outcome.stderr:
            return f"not one error line: {outcome.stderr[:500]!r}"
    return None
