"""Write ``cases/crane.toml``: the seed 004's setting at full size, with random weights.

Two short paragraphs of our own, split into word-level tokens (a word or a punctuation
mark), with "crane" once as a machine and once as a bird and "it" twice, first pointing
at "load", then at "crane". The vocabulary is every distinct token, sorted (Python's
``sorted``, so "," and "." come first), and a token's id is its place in that list.

The weights are drawn from a fixed seed and stored as exact dyadic rationals k/64, written
as decimals (1/64 = 0.015625, so every weight has at most six decimals and TOML reads it
exactly). The draws use only :meth:`random.Random.random`, whose sequence Python promises
to keep for a given seed; a normal draw is the Irwin-Hall sum of twelve uniforms minus 6
(mean 0, variance 1), scaled and rounded to the nearest 1/64.

    E       V x 16    normal, standard deviation 1/2
    head 1  W_Q, W_K, W_V  16 x 8   normal, standard deviation 1/4 (= 1/sqrt(d))
    head 2  the same, drawn after head 1
    hand set  W_Q = E[it] as a column, W_K = E[load] as a column (d_k = 1), W_V = I (d_v = 16)
    W_O     (8 + 8 + 16) x 16: rows 1-16 (the random heads) normal, sd 1/4; rows 17-32
            (the hand-set head) the identity, so that head adds what it reads unchanged

Run from the repository root: ``python tools/make_crane.py`` (or ``--check`` to compare
with the file on disk; exit 1 when they differ). Not part of the installed package: only
the .toml it writes is shipped.
"""

from __future__ import annotations

import random
import sys
from fractions import Fraction
from pathlib import Path

SEED = 4  # the seed 004
D = 16
D_K = 8
DENOMINATOR = 64

PARAGRAPHS = [
    "the crane on the building site lifted a heavy load over the wall , and then it dropped "
    "slowly onto the truck . the men below cheered and went home .",
    "by the river , a tall grey crane stood in the cold water , and it waited there for a "
    "small fish . the site was quiet for the rest of the day .",
]
TARGET_AT_END = True  # the prompt is every token but the last; the last is the target

OUT = Path(__file__).resolve().parent.parent / "cases" / "crane.toml"


def tokens() -> list[str]:
    """The text's word-level tokens, both paragraphs in order."""
    return [t for p in PARAGRAPHS for t in p.split()]


def normal(rng: random.Random, sd: Fraction) -> Fraction:
    """One draw, approximately normal with standard deviation ``sd``, as k/64."""
    z = sum(rng.random() for _ in range(12)) - 6
    return Fraction(round(z * float(sd) * DENOMINATOR), DENOMINATOR)


def matrix(rng: random.Random, rows: int, cols: int, sd: Fraction) -> list[list[Fraction]]:
    """A rows x cols matrix of draws, row by row."""
    return [[normal(rng, sd) for _ in range(cols)] for _ in range(rows)]


def decimal(q: Fraction) -> str:
    """The exact decimal of a dyadic rational (k/64 has at most six decimals)."""
    assert DENOMINATOR % q.denominator == 0
    if q.denominator == 1:
        return str(q.numerator)
    text = f"{float(q):.6f}".rstrip("0")
    text = text + "0" if text.endswith(".") else text
    assert Fraction(text) == q
    return "0" if text in ("0.0", "-0.0") else text


def toml_matrix(name: str, m: list[list[Fraction]], labels: list[str] | None = None) -> str:
    """``name = [...]`` with one row per line (a ``# label`` after each row when given)."""
    width = max(len(decimal(x)) for row in m for x in row)
    lines = [f"{name} = ["]
    for i, row in enumerate(m):
        cells = ", ".join(decimal(x).rjust(width) for x in row)
        lines.append(f"  [{cells}]," + (f"  # {labels[i]}" if labels else ""))
    lines.append("]")
    return "\n".join(lines)


def column(v: list[Fraction]) -> list[list[Fraction]]:
    """A vector as a d x 1 matrix."""
    return [[x] for x in v]


def build() -> str:
    """The text of cases/crane.toml."""
    words = tokens()
    vocab = sorted(set(words))
    prompt, target = (words[:-1], words[-1]) if TARGET_AT_END else (words, None)
    rng = random.Random(SEED)
    E = matrix(rng, len(vocab), D, Fraction(1, 2))
    heads = []
    for _ in range(2):
        heads.append({m: matrix(rng, D, D_K, Fraction(1, 4)) for m in ("W_Q", "W_K", "W_V")})
    W_O = matrix(rng, 2 * D_K, D, Fraction(1, 4))
    W_O += [[Fraction(int(i == j)) for j in range(D)] for i in range(D)]
    identity = [[Fraction(int(i == j)) for j in range(D)] for i in range(D)]
    ids = [vocab.index(w) for w in prompt]
    crane = [i for i, w in enumerate(prompt) if w == "crane"]
    it = [i for i, w in enumerate(prompt) if w == "it"]
    load = [i for i, w in enumerate(prompt) if w == "load"]

    out = []
    out.append(f"""\
# The seed 004's setting at full size ("Transformers explained, one stage at a time"):
# two short paragraphs, {len(prompt)} word-level tokens, "crane" once as a machine (token
# {crane[0] + 1}) and once as a bird (token {crane[1] + 1}), "it" twice (token {it[0] + 1} points at "load",
# token {it[1] + 1} at the bird "crane"), d = 16, random weights, sinusoidal positions, one
# attention layer with two random heads plus the hand-set head.
#
# WRITTEN BY tools/make_crane.py (seed {SEED}); edit that script and run it again rather than
# editing this file. Every weight is an exact dyadic rational k/64, written as a decimal.
#
# The text (the prompt is every token but the last; the last, ".", is the target):
#   {PARAGRAPHS[0]}
#   {PARAGRAPHS[1]}
name = "crane"
title = "two paragraphs, a crane and a crane (seed 004)"
source = "seed 004_d3017e095c4d049b, stages 0-5 and the hand-set head; text and weights our own"

[vocab]
# every distinct token, sorted (Python's sorted: "," and "." first); id = place in the list
pieces = [{", ".join('"' + w + '"' for w in vocab)}]

[prompt]
# word-level: one id per word or punctuation mark, in order (the text above)
ids = [{", ".join(map(str, ids))}]
target = "{target}"

[conventions]
positions = "sinusoidal"        # PE[pos, 2i] = sin(pos w_i), PE[pos, 2i+1] = cos(pos w_i),
sinusoid_layout = "interleaved" #   w_i = 1/10000^(2i/16): circle 0 turns one radian per token
sinusoid_base = 10000
first_position = 0              # the first token sits at pos 0: PE[0] = 0, 1, 0, 1, ...
mask = "causal"                 # a token sees itself and everything before it
# The seed stops at stage 5, the attention output, and its stage 6 is "multiply by a
# matrix, softmax again, and read off the prediction". So the example ends there: the
# last row times W_U = E^T (tied, no weights of its own), with no LayerNorm in between
# (the seed has none anywhere: every stage reads x' = x + PE directly), then the softmax,
# the loss against the text's next token, the gradient and one SGD step.
final_layernorm = false
# Without a LayerNorm the rows are long (|x'|^2 is about 12, plus what attention adds),
# so the gradient of a logit is large: eta = 0.1 would take L from 5.269 to 0.004 in one
# step. eta = 0.01 takes it to 3.422.
learning_rate = 0.01

[model]
d_model = 16
# E: {len(vocab)} x 16, normal with sd 1/2, rows in vocabulary order
{toml_matrix("E", E, vocab)}
W_U = "tied"

[[blocks]]
# One attention layer and nothing else (stage 5); the heads read x' directly, so the
# block has no LayerNorm (the hand-set head is q_i = x'_i . E[it], k_j = x'_j . E[load]).
sublayers = ["attention"]
layernorm = false
# W_O: (8 + 8 + 16) x 16. Rows 1-8 read head 1, rows 9-16 head 2 (random, sd 1/4);
# rows 17-32 read the hand-set head and are the identity, so its output (a weighted
# average of whole rows x'_j) is added to the stream as it is.
{toml_matrix("W_O", W_O)}
""")
    for h, head in enumerate(heads, 1):
        out.append(f"""
[[blocks.heads]]
# random head {h}: d_k = d_v = 8, every weight normal with sd 1/4
{toml_matrix("W_Q", head["W_Q"])}
{toml_matrix("W_K", head["W_K"])}
{toml_matrix("W_V", head["W_V"])}
""")
    out.append(f"""
[[blocks.heads]]
# The hand-set head (seed 004): d_k = 1, q_i = x'_i . E[it] ("how much does this token
# look like it"), k_j = x'_j . E[load] ("how much does it look like load"), so a token
# resembling "it" looks at one resembling "load". Not trained: constructed. It gets the
# second "it" (which means the crane) wrong on purpose, as in the seed. W_V = I: the head
# returns the weighted average of the rows x'_j it looks at.
name = "hand set"
{toml_matrix("W_Q", column(E[vocab.index("it")]))}
{toml_matrix("W_K", column(E[vocab.index("load")]))}
{toml_matrix("W_V", identity)}
""")
    return "".join(out)


def main(argv: list[str]) -> int:
    """Write cases/crane.toml, or with ``--check`` compare it with a fresh build."""
    text = build()
    if "--check" in argv:
        same = OUT.read_text(encoding="utf-8") == text
        print("cases/crane.toml is up to date" if same else "cases/crane.toml differs from tools/make_crane.py")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
