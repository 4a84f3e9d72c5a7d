"""The weights step (issue 10, item 2): every matrix and vector the model reads is printed,
so that a note recomputing "from the printed inputs" only ever uses printed numbers.

The expected numbers are read from the case files themselves, independently of derive:
``tomllib`` with every float parsed as a :class:`fractions.Fraction` of its text (and
``"p/q"`` strings as fractions, ``"I"`` as the identity), a weights file through
``safetensors.numpy`` (each float32 is the exact dyadic rational ``Fraction(float(x))``);
each is rounded by hand here (half away from zero at 3 places, or written as it is when
its exact decimal has at most 3 + 3 places, as the seed prints E: ``-0.5``, ``1.0``, and
crane's ``0.484375``).
"""

from __future__ import annotations

import json
import re
import tomllib
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from derive.case import bundled_cases, load_case
from derive.cells import Printer
from derive.derivation import derive
from derive.printing import text
from derive.rounding import Format

from documents import cli

MINUS = "\u2212"
SLOW = {"crane"}  # 46,000 quantities: its run takes most of a minute
CASES = [pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name for name in sorted(bundled_cases())]


# --------------------------------------------------------------------------- the case file, read by hand

def number(value) -> Fraction:
    """One case-file value (an int, a float's text parsed as a Fraction, "p/q")."""
    return Fraction(value) if not isinstance(value, str) else Fraction(value.replace(MINUS, "-"))


def matrix(value, d: int) -> list[list[Fraction]]:
    """A TOML matrix, ``"I"`` (the d x d identity), or a vector as one row."""
    if value == "I":
        return [[Fraction(int(r == c)) for c in range(d)] for r in range(d)]
    if not isinstance(value[0], list):
        return [[number(v) for v in value]]
    return [[number(v) for v in row] for row in value]


def is_weight(key: str, value) -> bool:
    """A weight of a block: numbers in a list (or "I"), not the given attention weights."""
    if key == "attention_weights":
        return False
    if value == "I":
        return True
    flat = value[0] if isinstance(value, list) and value and isinstance(value[0], list) else value
    return isinstance(flat, list) and bool(flat) and all(isinstance(v, (int, Fraction, str)) and v != "I"
                                                      and not isinstance(v, bool) for v in flat) \
        and all(not isinstance(v, str) or re.fullmatch(r"-?\d+(/\d+)?", v) for v in flat)


def case_weights(path: Path) -> dict[tuple, list[list[Fraction]]]:
    """Every weight of a case file by (block, head, name): [model]'s (block None) and each
    block's, heads and [[blocks.layers]] given one by one included (W_l, b_l), with a
    weights file's tensors merged in. W_U = "tied" is no weight of its own."""
    data = tomllib.loads(path.read_text(encoding="utf-8"), parse_float=Fraction)
    if "weights" in data:
        for name, array in load_file(str(path.parent / data["weights"])).items():
            rows = [[Fraction(float(x)) for x in row] for row in np.atleast_2d(array)]
            value = rows if array.ndim == 2 else rows[0]
            where = data.setdefault("model", {})
            if name.startswith("blocks."):
                _, b, name = name.split(".", 2)
                blocks = data.setdefault("blocks", [])
                while len(blocks) < int(b):
                    blocks.append({})
                where = blocks[int(b) - 1]
            where[name] = value
    model = data.get("model", {})
    d = model.get("d_model")
    out = {}
    for key, value in model.items():
        if key in ("E", "P", "W_U", "lnf_gain", "lnf_bias") and value != "tied":
            out[(None, None, key)] = matrix(value, d)
    for b, block in enumerate(data.get("blocks", []), 1):
        for key, value in block.items():
            if key != "heads" and key != "layers" and is_weight(key, value):
                out[(b, None, key)] = matrix(value, d)
        for h, head in enumerate(block.get("heads", []), 1):
            for key, value in head.items():
                if is_weight(key, value):
                    out[(b, h, key)] = matrix(value, d)
        for l, layer in enumerate(block.get("layers", []), 1):
            out[(b, None, f"W_{l}")] = matrix(layer["W"], d)
            if "b" in layer:
                out[(b, None, f"b_{l}")] = matrix(layer["b"], d)
    return out


def printed(q: Fraction, places: int = 3, short: bool = True) -> str:
    """A given weight as the tables print it: its exact decimal when it has 1 to
    ``places`` + 3 places (``-0.5``, ``1.0``, ``0.484375``), else (or with ``short``
    False, as every other number) rounded half away from zero."""
    for k in range(1, places + 4 if short else 1):
        if (q * 10 ** k).denominator == 1:
            n = abs(q * 10 ** k).numerator
            break
    else:
        k = places
        scaled = abs(q) * 10 ** k
        n = int(scaled) + (scaled - int(scaled) >= Fraction(1, 2))
    digits = str(n).rjust(k + 1, "0")
    return (MINUS if q < 0 and n else "") + digits[:-k] + "." + digits[-k:]


def title(block: int | None, head: int | None, name: str, rows: int, cols: int, blocks: int) -> str:
    """The table's title as the chapter writes it: ``W_Q (4 x 4)``, ``W_Q (16 x 1), head 3``
    (a head's name after it: ``head 3 (hand set)``), ``b_1 (1 x 8), block 2``."""
    return f"{name} ({rows} x {cols})" + (f", head {head}" if head is not None else "") + (
        f", block {block}" if block is not None and blocks > 1 else "")


# --------------------------------------------------------------------------- the printed tables, read back

def rich_tables(output: str) -> dict[str, list[list[str]]]:
    """The tables of a ``derive run`` text by their title line: each body row's cells."""
    lines = output.splitlines()
    tables = {}
    for i, line in enumerate(lines[:-1]):
        if lines[i + 1].startswith("\u250f"):  # a title, then the table's top border
            rows, j = [], i + 4  # the border, the header, the header's rule
            while lines[j].startswith("\u2502"):
                rows.append([c.strip() for c in lines[j].split("\u2502")[1:-1]])
                j += 1
            tables.setdefault(line.strip(), rows)
    return tables


def check_printed(weights: dict, output: str, blocks: int, T: int | None) -> int:
    """Assert every entry of every weight is printed in its table, in its row and column
    (E in the embedding step's ``E (V x d)``, P's rows in the positions step's X table),
    and return how many were found."""
    tables = rich_tables(output)
    found = 0
    for (block, head, name), rows in weights.items():
        if name == "P":  # the positions step: row t of X = E[ids] + P shows P_t
            shown = [r for r in tables["X = E[ids] + P"]]
            for t, row in enumerate(rows[:T]):
                assert shown[t][2] == "[" + ", ".join(printed(v) for v in row) + "]", f"P row {t + 1}"
                found += len(row)
            continue
        key = f"E ({len(rows)} x {len(rows[0])})" if name == "E" else \
            title(block, head, name, len(rows), len(rows[0]), blocks)
        named = [t for t in tables if t == key or t.startswith(key + " (")]  # head 3 (hand set)
        assert len(named) == 1, f"no table {key!r}; the tables are {sorted(tables)}"
        body = tables[named[0]]
        assert len(body) == len(rows), key
        for r, (row, cells) in enumerate(zip(rows, body), 1):
            values = cells[-len(row):]  # after the row's number (and E's id and token)
            assert values == [printed(v) for v in row], f"{key} row {r}"
            found += len(row)
    return found


@pytest.mark.parametrize("name", CASES)
def test_every_weight_of_every_bundled_case_is_printed(name):
    path = bundled_cases()[name]
    weights = case_weights(path)
    data = tomllib.loads(path.read_text(encoding="utf-8"), parse_float=Fraction)
    T = len(load_case(name).tokens)
    found = check_printed(weights, cli("run", name, "--width", "100000"), len(data.get("blocks", [])), T)
    assert found == sum(len(rows[:T]) * len(rows[0]) if n == "P" else len(rows) * len(rows[0])
                        for (_, _, n), rows in weights.items())


@pytest.mark.parametrize("name", [n for n in sorted(bundled_cases()) if n not in SLOW])
def test_the_json_gives_every_weight_as_a_given_record(name):
    """One ``given`` record per weight entry, its exact value the case file's, its decimal
    the value rounded half away from zero at 3 places (``-0.500``; the tables print
    ``-0.5``)."""
    weights = case_weights(bundled_cases()[name])
    given = [r for r in json.loads(cli("run", name, "--format", "json")) if r["symbol"] == "given"]
    by_entry = {(r["block"], r["head"], r["param"], r["position"], r["index"]): r for r in given}
    assert len(by_entry) == len(given)
    expected = {(b, h, n, r, c): v for (b, h, n), rows in weights.items()
                for r, row in enumerate(rows, 1) for c, v in enumerate(row, 1)}
    T = len(load_case(name).tokens)
    expected = {k: v for k, v in expected.items() if k[2] != "P" or k[3] <= T}  # P's rows the prompt reads
    assert set(by_entry) == set(expected)
    for key, value in expected.items():
        assert Fraction(by_entry[key]["exact"]) == value, key
        assert by_entry[key]["decimal"] == printed(value, short=False).replace(MINUS, "-"), key


def test_step_weights_alone():
    """``--step weights``: the one step, after the tokens, E and X (the seed's steps 1-3),
    with the seed's W_U column of ␣roof (-0.5, 1, 0, 1: its z_roof = f_5 . W_U^(6))."""
    out = cli("run", "cat-climbed", "--step", "weights", "--width", "200")
    assert re.findall(r"^Step (\d+)\. (.*)$", out, re.M) == [("4", "The weights")]
    tables = rich_tables(out)
    assert list(tables) == ["W_Q (4 x 4)", "W_K (4 x 4)", "W_V (4 x 4)", "W_O (4 x 4)", "W_1 (4 x 8)",
                            "W_2 (8 x 4)", "W_U (4 x 12)"]
    header = [line for line in out.splitlines() if line.startswith("\u2503") and "roof" in line][0]
    column = [c.strip() for c in header.split("\u2503")[1:-1]].index("`\u2423roof`")
    assert [row[column] for row in tables["W_U (4 x 12)"]] == ["\u22120.5", "1.0", "0.0", "1.0"]
    assert "E and P are printed above" in out
    records = json.loads(cli("run", "cat-climbed", "--format", "json", "--step", "weights"))
    assert {r["symbol"] for r in records} == {"given"}
    assert len(records) == 4 * 16 + 32 + 32 + 48  # W_Q, W_K, W_V, W_O; W_1, W_2; W_U


def test_a_case_without_weights_has_no_weights_step():
    """The softmax exercise starts from its logits: nothing to print, no empty step."""
    assert "weights" not in [s.key for s in derive(load_case("softmax")).steps]
    assert "weights" not in [s.key for s in derive(load_case("raschka-simplified")).steps]


# --------------------------------------------------------------------------- a weights file

HEAD = """[vocab]
pieces = ["a", "b", "c"]
[prompt]
ids = [0, 2, 1]
target = "b"
[model]
d_model = 2
heads = 1
W_U = "tied"
[[blocks]]
"""


@pytest.fixture
def file_case(tmp_path) -> Path:
    """A case whose weights sit in a float32 safetensors file: values with more places
    than 3 + 3 (float32(0.3) = 10066330 / 2^25 prints 0.300, float32(0.1) 0.100) and
    fewer (0.0625 prints whole), gains and biases of the norms and the MLP."""
    rng = np.random.default_rng(7)
    arrays = {"E": np.array([[0.5, -0.25], [0.0625, 1.0], [-0.3, 0.75]], dtype=np.float32),
              "P": np.array([[0.0, 0.1], [0.2, 0.0], [-0.1, 0.3]], dtype=np.float32),
              "lnf_gain": np.array([1.5, 0.9375], dtype=np.float32),
              "blocks.1.ln1_gain": np.array([1.0625, 0.8], dtype=np.float32),
              "blocks.1.ln1_bias": np.array([0.0, -0.0625], dtype=np.float32)}
    for name, shape in {"W_Q": (2, 2), "W_K": (2, 2), "W_V": (2, 2), "W_O": (2, 2), "W_1": (2, 3),
                        "W_2": (3, 2)}.items():
        arrays[f"blocks.1.{name}"] = (rng.integers(-16, 17, size=shape) / 16).astype(np.float32)
    arrays["blocks.1.W_Q"][0, 0] = 0.3
    arrays["blocks.1.b_1"] = np.array([0.3, -0.4, 0.0625], dtype=np.float32)
    save_file(arrays, str(tmp_path / "w.safetensors"))
    path = tmp_path / "case.toml"
    path.write_text('weights = "w.safetensors"\n' + HEAD, encoding="utf-8")
    return path


def test_every_weight_of_a_weights_file_is_printed(file_case):
    weights = case_weights(file_case)
    assert (1, None, "ln1_bias") in weights and weights[(1, None, "W_Q")][0][0] == Fraction(10066330, 2 ** 25)
    assert weights[(1, None, "b_1")][0][0] == Fraction(10066330, 2 ** 25)  # float32(0.3), worked out by hand
    out = cli("run", str(file_case), "--width", "100000")
    assert check_printed(weights, out, 1, 3) == sum(len(r) * len(r[0]) for r in weights.values())
    assert "W_Q (2 x 2)" in rich_tables(out) and "ln1_gain (1 x 2)" in rich_tables(out)


def test_a_note_uses_a_weight_as_printed(file_case):
    """W_Q_{1,1} = float32(0.3) = 0.300000011920928955078125 prints as 0.300 at 3 places:
    the reader's q_1[1] multiplies by 0.300, never by the float's 24 places; at 4 places
    by 0.3000; x_2[1] = E_{3,1} + P_{2,1} = -0.300 + 0.200. E_{2,1} = 0.0625 prints
    whole (4 places): x_3[1] = 0.0625 + P_{3,1}."""
    from derive.steps import Ref
    derivation = derive(load_case(str(file_case)))
    label = {n.meta.label: i for i, n in enumerate(derivation.graph.nodes) if n.meta.symbol}
    for places, shown in ((3, "0.300"), (4, "0.3000")):
        fmt = Format(places=places)
        hand = Printer(derivation, fmt).byhand
        q = text(hand.reading(Ref("before", label["q_1[1]"])).formula).replace(" ", "")
        assert f"\u00b7{shown}" in q and "0.30000001" not in q, q
        zeros = "0" * (places - 1)  # float32(0.3) and (0.2), rounded: -0.300 + 0.200 at 3 places
        x = text(hand.reading(Ref("before", label["x_2[1]"])).formula).replace(" ", "")
        assert x.startswith(f"-0.3{zeros}+0.2{zeros}="), x
        x = text(hand.reading(Ref("before", label["x_3[1]"])).formula).replace(" ", "")  # E_{2,1} + P_{3,1}
        assert x.startswith(f"0.0625-0.1{zeros}="), x
