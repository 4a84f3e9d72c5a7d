"""Tokenize: text to ids by greedy longest match (seed 000, step 1).

A space before a word belongs to the piece that follows it and is written ``␣`` in the
vocabulary, so "the cat" becomes ``the`` ``␣cat``.
"""

from __future__ import annotations

from derive.registry import Operation, register

SPACE = "\u2423"


def tokenize(text: str, pieces: list[str]) -> list[int]:
    """Split ``text`` into vocabulary ids, longest piece first at each point.

    Args:
        text: the prompt as written (plain spaces).
        pieces: the vocabulary, by id; ``␣`` marks a leading space.

    Returns:
        The ids, in order.

    Raises:
        ValueError: when no piece matches at some point, naming the text that is left.
    """
    spelled = text.replace(" ", SPACE)
    by_length = sorted(range(len(pieces)), key=lambda i: -len(pieces[i]))
    ids, at = [], 0
    while at < len(spelled):
        match = next((i for i in by_length if spelled.startswith(pieces[i], at)), None)
        if match is None:
            rest = spelled[at:].replace(SPACE, " ")
            raise ValueError(f"no vocabulary piece matches the text at {rest!r}")
        ids.append(match)
        at += len(pieces[match])
    if not ids:
        raise ValueError("the prompt is empty")
    return ids


def tokens_step(case):
    """Step 1 of the worked example: the prompt's pieces and their ids (seed 000, step 1)."""
    from derive.steps import Step, Table

    table = Table(["token"] + [f"`{p}`" for p in case.tokens], [["id"] + list(case.ids)])
    if case.text is not None and tokenize(case.text, case.pieces) == list(case.ids):
        words = ("The tokenizer cuts the text into pieces of a vocabulary fixed beforehand "
                 "(longest match first), and each piece becomes the number of its row.")
    else:  # prompt.ids: the case chose its pieces itself
        words = ("The prompt is given as ids (prompt.ids), not cut from a text: each id is the number of a row "
                 "of the vocabulary, fixed beforehand.")
    return Step("tokens", "From text to ids", words, [table])


TOKENS = register(Operation(
    name="tokens", kind="stage", title="Tokens", stage=10, steps=("tokens",),
    source="greedy longest match over the vocabulary (seed 000, step 1)", forward=tokenize,
))
