"""Norm slots: where a block or the model normalises the stream, and how a norm's step
is shown (the seed 000's steps 4, 8 and 10: LayerNorm before attention, before the MLP,
before W_U).

A slot is filled by any registered operation of kind ``norm`` (LayerNorm, RMSNorm, ...):
the case chooses it with ``conventions.norm`` for every slot, or per slot with
``ln1``/``ln2`` in a block and ``lnf`` in ``[model]``. A norm's weights are written with
the slot's prefix: ``ln1_gain``, ``ln2_bias``, ``lnf_gain``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from derive import formula as F
from derive.graph import Meta
from derive.name import Name
from derive.printing import text
from derive.steps import Equation, Ref, Step, Table, vec

Ids = list[list[int]]


def eps_text(eps: Fraction) -> str:
    """A norm's eps as its words print it: Python's short form (``1e-05``, ``0.015625``)
    when that is the exact value, else the exact value (``1/3``): never a cut digit."""
    try:
        short = f"{float(eps):g}"
    except OverflowError:  # past a float's range (layernorm_eps = 1e400): the exact value
        short = None
    return short if short is not None and Fraction(short) == eps else text(F.number(eps))


@dataclass(frozen=True, eq=False)
class NormSlot:
    """One place a norm runs.

    Attributes:
        key: ``ln1`` (before attention), ``ln2`` (before the MLP) or ``lnf`` (before W_U);
            the prefix of the slot's weights and the JSON ``norm``.
        block: the block (1-based), None for the final norm.
        symbol: the letter of the output (u, f) and primes its primes (u' has 1; its JSON
            symbol is u2). The statistics (mu, sigma, rms) carry the slot's mark: none
            before attention (mu_5), ' before the MLP (mu'_5), ^f before W_U (mu^f_5).
        input: the name of the rows it reads (x, x', h, y).
        step: the step key (layernorm, layernorm2, final). where: the title's words.
        tokens: the rows' names.
    """

    key: str
    block: int | None
    symbol: str
    primes: int
    input: str
    step: str
    where: str
    tokens: tuple[str, ...]

    @property
    def norm_name(self) -> str:
        """The JSON ``norm`` of the slot (ln1, ln2, final)."""
        return "final" if self.key == "lnf" else self.key

    @property
    def name(self) -> str:
        """The output's letter as the page writes it: u, u', f."""
        return text(Name(self.symbol, primes=self.primes))

    def stat(self, symbol: str, position: int) -> str:
        """A statistic of row ``position`` (1-based) as the page writes it: mu_5, mu'_5, mu^f_5."""
        return text(self._stat(symbol, position))

    def _stat(self, symbol: str, position: int) -> Name:
        return Name(symbol, position=position, norm=None if self.key == "ln1" else self.norm_name)

    def statistic(self, symbol: str):
        """The metadata maker of a per-row statistic (mu, sigma, rms) of this slot."""
        return lambda t, c: Meta.of(self._stat(symbol, t + 1), block=self.block, norm=self.norm_name)

    def output(self):
        """The metadata maker of the normalised entries (u_5[1], u'_5[1], f_5[1])."""
        return Meta.entries(self.symbol, self.primes, block=self.block)


def norm_step(slot: NormSlot, title: str, words: str, stats: list[tuple[str, list[int]]], out: Ids,
              formula: str) -> Step:
    """The step of a norm: a table of every row (its statistics, then the normalised
    entries) and the equations of the last row (its statistics and ``formula``, the
    normalised row written with the slot's names, e.g. ``u'_5 = (h_5 - mu'_5) / sigma'_5``)."""
    d = len(out[0])
    table = Table(["token"] + [name for name, _ in stats] + [f"{slot.name}_{j + 1}" for j in range(d)],
                  [[f"`{tok}`"] + [Ref("before", ids[t]) for _, ids in stats] + [Ref("before", u) for u in out[t]]
                   for t, tok in enumerate(slot.tokens)],
                  title=f"{title} {slot.where}" + (f", block {slot.block}" if slot.block else ""))
    T = len(out)
    equations = [Equation(slot.stat(name, T), Ref("before", ids[-1])) for name, ids in stats]
    equations.append(Equation(f"{slot.name}_{T} = {formula}", vec(out[-1])))
    return Step(slot.step, f"{title} {slot.where}", words, [table], equations)
