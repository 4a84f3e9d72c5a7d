"""Write docs/operations.md from the registry: every operation a case can use, with its
weights, its conventions (field, choices, default, meaning, source) and its steps.

    python tools/operations_doc.py            # rewrite docs/operations.md
    python tools/operations_doc.py --check    # exit 1 when the file is out of date

The file is generated, never edited by hand: the registry (``rules/``) is the only list.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

from derive import registry

DOC = Path(__file__).resolve().parent.parent / "docs" / "operations.md"
KIND_TITLES = {"stage": "Stages of the model", "sublayer": "Sublayers of a block",
               "norm": "Norms (a norm slot: a block's ln1, ln2, the model's lnf)",
               "activation": "Activations (conventions.activation)"}

KIND_WORDS = {"number": "an exact number", "positive": "an exact number > 0",
              "nonnegative": "an exact number >= 0", "count": "an integer >= 0", "bool": "true or false",
              "weights": '"all" or a list of weight names'}


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, Fraction):
        return str(v.numerator) if v.denominator == 1 else f'"{v}"'
    if v is None:
        return '"all"'
    return f'"{v}"' if isinstance(v, str) else str(v)


def text() -> str:
    """The whole of docs/operations.md."""
    registry.load()
    out = ["# Operations", "",
           "Generated from the registry by `python tools/operations_doc.py`; do not edit by hand.",
           "Each operation is one module of `rules/`; a case selects the choices below in",
           "`[conventions]` (see [case-format.md](case-format.md)).", ""]
    for kind, title in KIND_TITLES.items():
        out += [f"## {title}", ""]
        for op in registry.operations(kind):
            out += [f"### `{op.name}`: {op.title}", "", f"Source: {op.source}.", ""]
            if op.steps:
                out += ["Steps (`--step`): " + ", ".join(f"`{s}`" for s in op.steps) + ".", ""]
            if op.symbols:
                out += ["JSON symbols: " + "; ".join(f"`{s}` ({m})" for s, m in op.symbols.items()) + ".", ""]
            if op.params:
                out += ["| weight | shape | trainable | optional | meaning |", "|---|---|---|---|---|"]
                out += [f"| `{p.name}` | {' x '.join(p.shape)} | {'yes' if p.trainable else 'no'} | "
                        f"{'yes' if p.optional else 'no'} | {p.meaning} |" for p in op.params]
                out.append("")
            for conv in op.options:
                out.append(f"- block field `{conv.field}` = {_value(conv.default)} (default): {conv.meaning}"
                           + (f" ({conv.source})" if conv.source else "") + ".")
            for conv in op.conventions:
                out.append(f"- `{conv.field}` = {_value(conv.default)} (default): {conv.meaning}"
                           + (f" ({conv.source})" if conv.source else "") + ".")
                if conv.kind in ("choice", "choice_or_positive", "choice_or_matrix"):
                    out += [f"  - `\"{name}\"`: {meaning}" for name, meaning in conv.options().items()]
                    if conv.kind == "choice_or_positive":
                        out.append("  - or an exact number > 0")
                    if conv.kind == "choice_or_matrix":
                        out.append("  - or a T x T matrix of 0 and 1 (1: visible), every row with a 1")
                else:
                    out.append(f"  - {KIND_WORDS[conv.kind]}")
            if op.conventions or op.options:
                out.append("")
    return "\n".join(out).rstrip() + "\n"


def main() -> int:
    """Rewrite the file, or with ``--check`` say whether it is current (exit 1 if not)."""
    if "--check" in sys.argv[1:]:
        current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
        if current != text():
            print(f"{DOC} is out of date: run python tools/operations_doc.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
