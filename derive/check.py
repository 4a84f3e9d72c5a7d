"""``derive check``: a verdict on every line of a hand computation.

Each written value is rounded to the places it is written with (``0.395`` is judged at 3
places, ``0.40`` at 2) under the run's rounding mode, and gets one verdict:

- ``correct``: it is the correctly rounded exact value;
- ``explained``: it is what a reader gets from the correctly printed (rounded) inputs
  (:mod:`derive.byhand`), so it is right given the rounded inputs it was computed from;
- ``inherited``: it is wrong, but follows from an earlier wrong line (recomputing the
  graph from the reader's own earlier values reproduces it); the origin line is named: the
  nearest wrong line whose error alone reproduces it (an inherited value passes its origin on);
- ``convention``: it is wrong here, but right under another convention, which is named
  (GELU erf vs tanh, LayerNorm variance over n-1, eps added to sigma, scores over
  sqrt(d_model), mask missing or applied after the softmax, log base 2, sinusoid columns
  concatenated); a value that fits several conventions names them all, joined by "or"; a
  value a reader gets from the inputs printed under another convention (``L = 1.340``:
  -log2 of the printed 0.395, where the exact loss in bits is 1.338) names it with that
  calculation;
- ``wrong``: none of these; the exact value is given and the line becomes the origin of
  the errors that follow from it;
- ``unreadable``: the line could not be read or names nothing derive knows;
- ``not checked``: a value in prose, or a definition derive cannot evaluate (the reason
  is given); it does not fail the check.

A note under a table (a reader's calculation from the printed inputs) is ``explained``
when its arithmetic and roundings hold (:mod:`derive.notes`), ``wrong`` when one does not.

Free arithmetic lines are judged on their own numbers; when their result is not the
correct rounding of their own arithmetic but is the printed value of a quantity whose
inputs they are (``1.732*-0.816 + -0.577*1.633 = -2.357`` is q_5 . k_1 of head 1, from
the printed inputs), the line is ``explained``.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Sequence
from functools import lru_cache
from dataclasses import dataclass
from fractions import Fraction

from flint import arb, ctx, fmpq

from . import formula as F, mathread, registry
from .byhand import READER_PREC, exact_text, is_number, is_tie, printed_fraction
from .cells import Printer
from .derivation import Derivation, derive
from .errors import DeriveError, NotDerived
from .evaluate import MAX_PREC
from .graph import NeedPrecision, Undefined, Value, is_exact
from .handfile import MINUS_INF, PLUS_INF, Entry, decimal_places, parse, prose_entry, read_name
from .name import OVER_T
from .names import HEAD, as_stepped, find, hidden_by_mask, label_of, masked_score, per_derivation, same_place_in_head
from .notes import check_note
from .printing import counted, excerpt, listed, quoted
from .rounding import Format, format_fraction, format_value
from .steps import Ref
from .tablenames import (AmbiguousRow, Claim, cell_claim, in_context, masked_row, norm_slot, page_equation,
                         param_row, param_rows)

# every slip a registered convention declares: the checker's phrase -> (field, value, applies)
CONVENTIONS = {phrase: (conv.field, value, conv.applies) for conv in registry.conventions()
               for value, phrase in conv.slips.items()}
# the other way: a case that itself uses a slip's choice, and a reader who used the default:
# phrase -> (field, default, applies, the case's choice it answers)
DEFAULTS = {f"{conv.field} = {conv.default} (the usual default) instead of this case's {value}":
            (conv.field, conv.default, conv.applies, value)
            for conv in registry.conventions() for value in conv.slips
            if conv.default not in conv.slips}  # (a slip back to the default is already declared: GELU tanh)
WEIGHT_INDEX = re.compile(r"_\{?([0-9, ]+)\}?|\[([^\]]+)\]")  # _2, _{2,1}, [2], [1,2], [␣the]
SETTINGS = ("eps", "eta", "d_k", "d_model", "h")  # always the case's settings
SIZES = ("d", "V", "T", "d_mlp", "d_ff", "r")  # the case's sizes, when no quantity has the name
UNDECIDED_DIGITS = "(digits not decided)"  # a value whose digits no precision up to MAX_PREC certifies
# the largest hand file `derive check` reads, in MB (DERIVE_MAX_HAND_MB raises it): 100,000 lines of
# derive's own page are 9 MB, checked in about 7 s and 300 MB (bench/run.py --sections check)
MAX_HAND_MB = 16
# CPU seconds one file's wrong values may spend on finding where each comes from (an earlier line,
# another head, another convention): 100,000 distinct wrong claims took 40 s; past this budget a wrong
# value is judged against the exact value alone, and its verdict says so (the searches never change a
# wrong value into a correct one: they name why it is wrong)
SEARCH_SECONDS = 5.0
STATUSES = ("not checked", "correct", "explained", "inherited", "convention", "wrong", "unreadable")
FAILING = ("inherited", "convention", "wrong", "unreadable")
RANK = {status: k for k, status in enumerate(STATUSES)}  # a line's verdict is its worst component's


@dataclass
class Verdict:
    """The verdict on one entry of the file (see the module docstring for ``status``).

    ``name`` is the quantity's label (or the arithmetic), ``written`` the values as
    written, ``expected`` the correctly rounded values at the same places, ``exact`` the
    exact values with two more digits, ``origin`` the line of the first error an
    ``inherited`` line follows from, ``convention`` the convention a value matches."""

    line: int
    source: str
    status: str
    message: str
    name: str | None = None
    written: list[str] | None = None
    expected: list[str] | None = None
    exact: list[str] | None = None
    origin: int | None = None
    convention: str | None = None

    def as_dict(self) -> dict:
        """The verdict as a JSON-ready dict."""
        return dataclasses.asdict(self)

    def json_text(self) -> str:
        """The verdict as ``json.dumps(self.as_dict(), ensure_ascii=False, indent=1)``
        writes it, each line after the first indented by one space more (a record of the
        report's JSON array, :func:`json_chunks`), its values encoded by json's C encoder
        one by one (:func:`_json`): a verdict's fields are flat (a number, a text, None or a
        list of texts), and a long file has 141,000 of them (the indented encoder, pure
        Python, and asdict's deep copy took 4.6 s of 100,000 lines; now 0.8 s)."""
        fields = []
        for name in VERDICT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, list):
                text = "[\n   " + ",\n   ".join(map(_json, value)) + "\n  ]" if value else "[]"
            else:
                text = _json(value)
            fields.append(f'  "{name}": {text}')
        return "{\n" + ",\n".join(fields) + "\n }"


VERDICT_FIELDS = tuple(f.name for f in dataclasses.fields(Verdict))


def _json(value) -> str:
    """One value of a verdict (a number, a text or None) as json.dumps writes it; a text
    once per distinct text (a long file repeats its lines, values and messages)."""
    return _json_string(value) if isinstance(value, str) else json.dumps(value)


@lru_cache(maxsize=1 << 16)
def _json_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def json_chunks(verdicts: list[Verdict]):
    """The report as JSON, ``json.dumps([v.as_dict() for v in verdicts],
    ensure_ascii=False, indent=1)`` and a line's end, in pieces (a verdict at a time: a
    long file's report is never held whole as text)."""
    yield "["
    for k, verdict in enumerate(verdicts):
        yield ("," if k else "") + "\n " + verdict.json_text()
    yield ("\n]" if verdicts else "]") + "\n"


def _head_hint(name: str) -> str:
    """What a checked file's line of a name several heads (or blocks) hold needs: a context
    line before it, or the head in the name, shown on the name as written (``a_{1,2}``:
    ``a_{1,2}^{(1)}``; a name already raised or called, ``a_{5,3}^{(1)}``)."""
    example = "a_{5,3}^{(1)}" if "^" in name or "(" in name else f"{name.strip()}^{{(1)}}"
    return f"a `Head 1` (or `block 1`) line before it, or the head in the name, as in {example}"


class Checker:
    """Checks hand computations against one derived case under a rounding mode.

    Args:
        derivation: the derived case. mode: the rounding mode readers are assumed to use
            (half-away by default, the school rule).
    """

    def __init__(self, derivation: Derivation, mode: str = "half-away"):
        self.derivation = derivation
        self.mode = mode
        # the reader's file: what they wrote so far and where their errors began
        self.student: dict[Ref, Fraction] = {}
        self.origin: dict[Ref, int] = {}
        self.written_on: dict[Ref, int] = {}  # the line each of the reader's values was written on
        self._written: dict[int, fmpq] = {}  # the reader's values of the forward pass, by node id
        self._origins: dict[int, int] = {}  # the origin lines of the forward pass's errors, by node id
        self._sgd_rows: dict[int, int] = {}  # id(entry) -> the weight a block of SGD steps names for it
        self._tables: dict[int, int] = {}  # id(table) -> the number of its signature, in the file being checked
        self._printers: dict[int, Printer] = {}
        self._searched = 0.0  # CPU seconds spent finding where wrong values come from (at most SEARCH_SECONDS)
        self._stopped: int | None = None  # the line at which that search stopped, the budget spent
        # work that depends on the case and the rounding mode alone, never on the lines before: done
        # once for every checker of this derivation (a file repeats it; so do many files checked in
        # turn). Nothing kept there refers to the derivation itself (it is forgotten with it).
        shared = per_derivation(derivation, ("checker", mode), lambda: {})

        def memo(name: str) -> dict:
            return shared.setdefault(name, {})
        self._variants: dict[str, Derivation | None] = memo("variants")
        self._readings: dict[int, dict] = memo("readings")
        self._found: dict[tuple, list[Ref]] = memo("found")  # a name's quantities, by (name, block, head)
        self._reading: dict[tuple, object] = memo("reading")  # the by-hand reading of a quantity, by (ref, places)
        self._exact: dict[Ref, str] = memo("exact")  # a quantity's exact digits, for messages
        self._steps: dict[tuple, dict] = memo("steps")  # (weight, gradient) printed at given places -> the weights
        self._claims: dict[tuple, Claim | tuple] = memo("claims")  # a cell's claim, by its table's keys and place
        self._signatures: dict[tuple, int] = memo("signatures")  # a table's title, header and keys -> its number
        self._notes: dict[tuple, tuple] = memo("notes")  # a note's verdict, by its text, head and block
        self._eps: dict[str, object] = memo("eps")  # a section's eps
        self._others: dict[tuple, list] = memo("others")  # (ref, format) -> [(convention, its printed value)]
        self._heads: dict[tuple, list] = memo("heads")  # (ref, format) -> [(another head, its printed value)]
        self._places: dict[tuple, list[Ref]] = memo("places")  # (phase, symbol, block, head, norm) -> its quantities
        self._by_hand: dict[tuple, list] = memo("by_hand")  # (ref, format) -> conventions_by_hand's readings
        self._settled: dict[tuple, tuple] = memo("settled")  # judge_value's correct or explained result, by (ref, text)
        # judge's verdict on a line whose every value is correct or explained, by its quantities and values
        self._settled_lines: dict[tuple, tuple] = memo("settled lines")
        self._variant_values: dict[tuple, str | None] = memo("under")  # _under's answer, by its arguments
        self._labels: dict[Ref, str] = memo("labels")  # label_of's answer, by ref
        self._behind: dict[int, tuple] = memo("behind")  # every ancestor of a node, and them with it, in order
        # what the reader's values upstream of a node are, by (node, how many values were written): the
        # written nodes only grow (none is forgotten), so their count says which they are
        self._upstream: dict[tuple, tuple] = {}
        self._recomputed: dict[tuple, list[int]] = {}  # the nodes a recomputation changes, by _gives's key
        self._statistics: set[str] | None = None  # the symbols of the norms' statistics (mu, sigma, rms)

    # ------------------------------------------------------------------ helpers
    def label(self, ref: Ref) -> str:
        """:func:`derive.names.label_of` (the printed name of ``ref``), worked out once per ref."""
        if ref not in self._labels:
            self._labels[ref] = label_of(self.derivation, ref)
        return self._labels[ref]

    def fmt(self, places: int) -> Format:
        """The format a value written with ``places`` decimals is judged at."""
        return Format(places=places, mode=self.mode)

    def printer(self, places: int) -> Printer:
        """The correctly printed page at ``places`` (the reader's inputs)."""
        if places not in self._printers:
            self._printers[places] = Printer(self.derivation, self.fmt(places))
        return self._printers[places]

    def variant(self, description: str | tuple[str, ...]) -> Derivation | None:
        """The case derived again under another convention, a slip of :data:`CONVENTIONS` or
        the default of :data:`DEFAULTS`, or under several of them together (a tuple of
        descriptions, each about another field: variance over n-1 with eps added to sigma,
        as the Annotated Transformer computes LayerNorm). None when one of them is the case's
        own choice, answers another choice than the case's, or the case cannot be derived."""
        if description not in self._variants:
            case = self.derivation.case
            changes = {}
            for one in (description,) if isinstance(description, str) else description:
                if one in DEFAULTS:
                    key, value, applies, answers = DEFAULTS[one]
                else:
                    (key, value, applies), answers = CONVENTIONS[one], None
                if getattr(case.conventions, key) == value or (applies is not None and not applies(case.conventions)) \
                        or answers is not None and getattr(case.conventions, key) != answers or key in changes:
                    changes = None
                    break
                changes[key] = value
            self._variants[description] = None
            if changes:
                try:
                    self._variants[description] = derive(dataclasses.replace(
                        case, conventions=dataclasses.replace(case.conventions, **changes)))
                except DeriveError:
                    pass
        return self._variants[description]

    # ------------------------------------------------------------------ the file
    def check_text(self, text: str) -> list[Verdict]:
        """Verdicts for every entry of a hand-computation file's text, in order (a table row
        keyed by a token the prompt repeats gets one verdict, not one per cell)."""
        verdicts, kept = [], []
        last = [len(self.derivation.case.ids)]
        entries = parse(text)
        self._sgd_rows = self.sgd_blocks(entries)
        self._tables = {}
        ambiguous: set[tuple[int, int]] = set()  # (table, row) already said to be ambiguous
        for entry in (part for read in entries for part in self.readings(read, last[0])):
            kept.append(entry)
            try:
                verdicts.append(self.check_entry(entry, last))
            except AmbiguousRow as exc:  # (the table names a quantity: its row does not say which position)
                row = (id(entry.cell.table), entry.cell.row)
                if row in ambiguous:
                    kept.pop()
                    continue
                ambiguous.add(row)
                verdicts.append(Verdict(entry.line, entry.source, "unreadable", f"{exc.detail} (expected "
                                        f"{exc.expected}; the row's values are not checked)", entry.name))
            except NotDerived as exc:  # dL/dW_Q where conventions.gradients leaves W_Q out
                verdicts.append(Verdict(entry.line, entry.source, "not checked", f"not checked: {exc.detail}",
                                        entry.name))
            except DeriveError as exc:
                verdicts.append(Verdict(entry.line, entry.source, "unreadable", exc.detail +
                                        (f" (expected {exc.expected})" if exc.expected else ""), entry.name))
            except RecursionError:  # (a formula read but too deep to work out: one line, not the file)
                verdicts.append(Verdict(entry.line, entry.source, "unreadable", "the line nests too deeply (brackets, "
                                        "signs or terms) for derive to work out", entry.name))
        verdicts = _carried(kept, _foreign_tables(kept, verdicts, {table for table, _ in ambiguous}))
        return [dataclasses.replace(verdict, message=f"{quoted(entry.formula.strip())}: {verdict.message}")
                if entry.formula is not None else verdict  # one of a sentence's formulas: the message says which
                for entry, verdict in zip(kept, verdicts)]

    def readings(self, entry: Entry, last: int) -> list[Entry]:
        """The entries to judge for one entry of the file (``last``: the position of the row
        the file follows):

        - a line of several equations (``sigma_5 = 0.866, mu_5 = 0``: ``entry.parts``) gives
          each of them, when every one reads and each after the first names what derive knows
          (:meth:`knows`; the first may be arithmetic); else the line as one;
        - a sentence (or a line whose name has words before it, ``Also L = 0.929``, that
          names nothing) gives the claims whose name derive knows (``entry.claims``: each
          read from the longest run of words before its ``=`` that it knows), and the
          sentence's other decimal numbers as not checked; a sentence with no known claim
          is listed as before (nothing, when it has no decimal number)."""
        parts = entry.parts
        if parts and not any(part.error for part in parts) and (parts[0].name is None or self.knows(parts[0], last)) \
                and all(part.name is not None and self.knows(part, last) for part in parts[1:]):
            return [dataclasses.replace(part, section=entry.section) for part in parts]
        if entry.claims and (entry.kind == "prose" or not self.knows(entry, last)):
            judged = [(claim.span, next((r for r in claim.readings if self.knows(r, last)), None))
                      for claim in entry.claims]
            judged = [(span, reading) for span, reading in judged if reading is not None]
            if judged:
                rest = prose_entry(entry.source, entry.line, [span for span, _ in judged], entry.outside_math)
                return [dataclasses.replace(reading, section=entry.section) for _, reading in judged] + \
                    ([dataclasses.replace(rest, section=entry.section)] if rest is not None else [])
        return [entry] if entry.kind != "prose" or entry.values else []

    def knows(self, entry: Entry, last: int) -> bool:
        """Whether a named entry names what derive knows, as :meth:`check_entry` would look
        it up: a setting or size of the case (:meth:`definition`), or quantities as many as
        its values (one for an exact value); a quantity the case does not derive
        (``NotDerived``: its line is not checked, with why) counts as known."""
        if entry.error or entry.name is None:
            return False
        if self.definition(entry) is not None:
            return True
        try:
            refs = in_pass(self.resolve(entry, last), entry.phase)
        except NotDerived:
            return True
        except DeriveError:
            return self.definition(entry, SIZES) is not None or bool(self._masked(entry))
        return len(refs) == (1 if entry.exact is not None else len(entry.values))

    def check_entry(self, entry: Entry, last: list[int]) -> Verdict:
        """The verdict on one entry; ``last`` carries the position of the previous line.

        Raises:
            DeriveError: when the entry names nothing derive knows.
        """
        if entry.error:
            return Verdict(entry.line, entry.source, "unreadable", entry.error, entry.name)
        if entry.skip:
            return Verdict(entry.line, entry.source, "not checked", f"not checked: {entry.skip}", entry.name,
                           entry.values or None)
        broken = next((link for link in entry.links if not _agrees(link[0], link[2], self.mode)), None)
        if broken is not None:  # L = 0.5 = 0.928: the line contradicts itself, whatever L is
            return Verdict(entry.line, entry.source, "wrong", f"{entry.name or excerpt(entry.expr or '') or 'the line'}: "
                           f"{broken[0]} = {broken[2]} does not hold", entry.name, entry.values or None)
        explained = None  # the first step that does not give its value, explained (see below)
        for node, value, relation in entry.steps:  # L = -ln(0.5) = 0.928: a wrong calculation, whatever L is
            step = Entry(entry.line, entry.source, expr=mathread.show(node), values=[value], head=entry.head,
                         block=entry.block, node=node, kind="arithmetic")
            verdict = self.check_arithmetic(step)
            if verdict.status == "wrong":
                return Verdict(entry.line, entry.source, "wrong", f"{entry.name or excerpt(entry.expr)}: {verdict.message}",
                               entry.name, entry.values or None)
            explained = explained or (verdict if verdict.status == "explained" and relation == "=" else None)
        verdict = self._judged(entry, last)
        unread = self._unread_working(entry)
        if unread is not None and verdict.status in ("correct", "explained"):
            # L = foo(0.395) = 0.928: L is right, but the working that gives it is not read
            return dataclasses.replace(verdict, status="not checked", message=f"{verdict.message}; but the working "
                                       f"{mathread.show(unread[0])} is not read ({unread[1]}), so the line is not checked")
        if explained is not None and verdict.status == "correct":
            # L = -ln(0.395) = 0.928: L is right, but the step from the printed 0.395 gives 0.929; its
            # value is L's own (from unrounded inputs): the line is explained, not correct
            return dataclasses.replace(verdict, status="explained", message=f"{entry.name}: {explained.message}")
        return verdict

    def _unread_working(self, entry: Entry) -> tuple | None:
        """The first step of the line's chain that writes numbers and names and that derive
        cannot evaluate over the case's quantities (an unknown function or name: ``foo(0.395)``,
        ``sqrt(0.75) + zzz``), with why; None when every such step evaluates (it is not
        judged: its names are exact values, the line's value a reader's from rounded ones)."""
        for node, _, _ in entry.working:
            try:
                mathread.evaluate(node, lambda name: self.value_of(name, entry.block, entry.head),
                                  self.derivation.case.conventions.activation)
            except DeriveError as exc:
                return node, exc.detail
            except ValueError as exc:
                if not isinstance(exc, (mathread.Beyond, ArithmeticError)):
                    return node, str(exc)
            except (ArithmeticError, RecursionError):
                pass
        return None

    def _judged(self, entry: Entry, last: list[int]) -> Verdict:
        """:meth:`check_entry` of an entry whose own line agrees with itself (its links and
        steps aside).

        Raises:
            DeriveError: when the entry names nothing derive knows.
        """
        if entry.kind == "note":
            key = (entry.note, entry.head, entry.block)
            if key not in self._notes:  # a note's verdict is its own text's (and its head's, block's)
                self._notes[key] = check_note(self.derivation, entry, self.mode)
            status, message, name = self._notes[key]
            return Verdict(entry.line, entry.source, status, message, name)
        if entry.kind == "arithmetic":
            return self.check_arithmetic(entry)
        if entry.kind == "cell":
            claim = self.claim(entry)
            if claim.values is not None:
                return self.judge_computed(entry, claim)
            refs = claim.refs
        else:
            known = self.definition(entry)
            if known is not None:
                return known
            try:
                refs = self.resolve(entry, last[0])
            except DeriveError as exc:
                known = self.definition(entry, SIZES)
                if known is not None:
                    return known
                masked = self._masked(entry, quiet=False)
                if masked:
                    return self.judge_masked(entry, masked[0])
                if entry.kind == "inline":
                    return Verdict(entry.line, entry.source, "not checked",
                                   f"a value in prose: {exc.detail}", entry.name)
                raise
        refs = in_pass(refs, entry.phase)
        infinite = next((v for v in entry.values if v in (MINUS_INF, PLUS_INF)), None)
        if infinite is not None:  # (a computed quantity: only a masked score is -inf, and nothing is +inf)
            label = self.label(refs[0]) if len(refs) == 1 else entry.name
            exact = self.printer(3).byhand.exact_digits(refs[0]) or UNDECIDED_DIGITS if len(refs) == 1 else None
            said = "only a score the mask hides is -inf (never computed)" if infinite == MINUS_INF else \
                "no quantity of the derivation is +inf"
            return Verdict(entry.line, entry.source, "wrong", f"{label}: wrong: " +
                           (f"the exact value is {exact}" if exact else f"{label} is computed") + f"; {said}",
                           label, entry.values, None, [exact] if exact else None)
        if entry.exact is not None:
            return self.judge_exact(entry, refs)
        if len(refs) != len(entry.values):
            raise DeriveError(f"{entry.name or 'the cell'} has {counted(len(refs), 'component')} but the line gives "
                              f"{len(entry.values)}")
        last[0] = self.derivation.meta(refs[-1]).position or last[0]
        return self.judge(entry, refs)

    def claim(self, entry: Entry) -> Claim:
        """:func:`derive.tablenames.cell_claim`, worked out once per place in a table of the
        same title, header and key columns under the same heading (what the claim is read
        from; a repeated table, or the same table with other numbers, gives the same claims).

        Raises:
            DeriveError: when the header or the row names nothing derive knows."""
        cell = entry.cell
        table = cell.table
        signature = self._tables.get(id(table))
        if signature is None:  # (a number per distinct signature: a wide table's is hashed once, not per cell)
            whole = (table.title, tuple(table.header), table.keys, tuple(tuple(row[:table.keys]) for row in table.rows),
                     tuple(table.origin_rows or ()), tuple(table.origin_columns or ()))
            signature = self._signatures.setdefault(whole, len(self._signatures))
            self._tables[id(table)] = signature
        masked = entry.values == ["0"] and masked_row(table, cell.row)
        key = (signature, entry.section, cell.row, cell.column, entry.head, entry.block, masked)
        if key not in self._claims:
            try:
                self._claims[key] = cell_claim(self.derivation, entry)
            except DeriveError as exc:
                self._claims[key] = (type(exc), exc.detail, exc.expected)  # (not the exception: its frames hold the case)
        found = self._claims[key]
        if isinstance(found, tuple):
            kind, detail, expected = found
            raise kind(detail, expected=expected)
        return found

    def definition(self, entry: Entry, names: tuple[str, ...] = SETTINGS) -> Verdict | None:
        """A definition of the case's settings (``\\varepsilon = 1e-05``, ``\\eta = 1/10``,
        ``d_k = 2``, ``h = 2``), or of its sizes in the chapter's letters when no quantity has
        that name (``d = 4`` the width, ``V = 12`` the vocabulary, ``T = 1`` the temperature or
        the number of tokens, ``d_mlp = 8``), judged against the case; None for any other
        name, or a size the case does not have (no MLP, no vocabulary)."""
        if entry.name not in names or entry.node is None:
            return None
        meanings = [(Fraction(value), meaning) for value, meaning in self.settings(entry.section).get(entry.name, [])
                    if value is not None]
        if not meanings:
            return None
        if entry.exact is not None:
            try:
                written = mathread.evaluate(entry.exact)
            except ValueError as exc:
                return Verdict(entry.line, entry.source, "unreadable", f"cannot read the value: {exc}", entry.name)
            text = mathread.show(entry.exact)
            fits = [m for m in meanings if is_exact(written) and Fraction(int(written.p), int(written.q)) == m[0]]
        elif len(entry.values) == 1:
            places = decimal_places(entry.values[0])
            text = entry.values[0]
            fits = [] if text in (MINUS_INF, PLUS_INF) else \
                [m for m in meanings if (_same(text, format_fraction(m[0], self.fmt(places))) if places is not None
                                         else printed_fraction(text) == m[0])]
        else:
            return None
        said = [f"{entry.name} = {exact_text(value)}" + (f" ({meaning})" if meaning else "")
                for value, meaning in (fits or meanings)]
        message = f"{listed(said)} in this case" if fits else f"{' or '.join(said)} in this case, not {text}"
        return Verdict(entry.line, entry.source, "correct" if fits else "wrong", message, entry.name, [text],
                       [exact_text((fits or meanings)[0][0])])

    def settings(self, section: str) -> dict[str, list[tuple]]:
        """The case's settings and sizes by the names a chapter writes them with: name ->
        [(value, what it is, or "" when the name says it)]; a value is None when the case
        has no such thing (no MLP, no temperature step)."""
        case = self.derivation.case
        block = case.blocks[0] if case.blocks else None
        rotary = case.conventions.positions == "rotary"
        width = block.d_mlp if block is not None and "W_1" in block.matrices else None
        return {"eps": [(self.eps(section), "")], "eta": [(case.conventions.learning_rate, "")],
                "d_k": [(case.d_k, "")], "d_model": [(case.d_model, "")], "h": [(case.heads, "")],
                "d": [(case.d_model, "the width d_model")], "V": [(len(case.pieces), "the vocabulary size")],
                "T": [(case.conventions.temperature, "the temperature"),
                      (len(case.tokens or []) or None, "the number of tokens")],
                "r": [(case.conventions.rotary_fraction * case.d_k if rotary else None,
                       "the columns RoPE turns")],  # rules/rope.py
                "d_mlp": [(width, "")], "d_ff": [(width, "the MLP width d_mlp")]}

    def setting(self, text: str) -> tuple[str, list[tuple[Fraction, str]]] | None:
        """A name written alone (what ``derive explain`` is asked about) that is one of the
        case's settings or sizes, as :meth:`definition` judges it in a file: (the name, [(its
        value, what it is, or "")]); eps is each norm's, its convention field said
        (``conventions.layernorm_eps``); a size (:data:`SIZES`) only when no quantity has the
        name. None for any other name, or a size the case does not have."""
        name, phase = read_name(text)
        if phase != "before" or name not in SETTINGS + SIZES:
            return None
        if name in SIZES:
            try:
                self.lookup(name)
                return None
            except DeriveError:
                pass
        if name == "eps":
            meanings = sorted({(Fraction(value), f"conventions.{field}") for field, value in self.norms_eps()})
        else:
            meanings = [(Fraction(value), meaning) for value, meaning in self.settings("").get(name, [])
                        if value is not None]
        return (name, meanings) if meanings else None

    def norms_eps(self) -> list[tuple[str, object]]:
        """(the convention field, its value) of the eps of each norm the case computes, in
        the order of the graph."""
        return [self._norm_eps(slot) for slot in dict.fromkeys(
            (n.meta.block, n.meta.norm) for n in self.derivation.graph.nodes if n.meta.norm)]

    def _norm_eps(self, slot: tuple[int | None, str]) -> tuple[str, object]:
        """(the convention field, its value) of the eps of the norm at ``slot`` (block, norm)."""
        block, norm = slot
        case = self.derivation.case
        op = case.final_norm if norm == "final" else case.blocks[block - 1].norms[norm]
        field = registry.get(op).undefined[0]
        return field, getattr(case.conventions, field)

    def eps(self, section: str):
        """The eps of the norm a section is about: the convention (``layernorm_eps``, or
        the eps field another registered norm declares) of the norm slot whose step the
        section's heading names (``LayerNorm before the MLP``: ln2); the first norm's when
        the heading names none (worked out once per section); None for a case that
        computes no norm (the softmax cases: no eps to state)."""
        if section not in self._eps:
            self._eps[section] = self._section_eps(section)
        return self._eps[section]

    def _section_eps(self, section: str):
        derivation = self.derivation
        slots = [(n.meta.block, n.meta.norm) for n in derivation.graph.nodes if n.meta.norm]
        named = norm_slot(derivation, section)
        if named is not None:
            slots.insert(0, named)
        if not slots:
            return None
        return self._norm_eps(slots[0])[1]

    def judge_exact(self, entry: Entry, refs: list[Ref]) -> Verdict:
        """An exact form (``E_{1,1} = -1/2``, ``sigma_1 = sqrt(375010)/1000``) or a definition
        in terms of other quantities (``m_1[1] = W_2_{1,1} g_1[1] + ...``), compared with the
        exact value to 30 digits."""
        label = self.label(refs[0]) if len(refs) == 1 else entry.name
        if len(refs) != 1:
            raise DeriveError(f"{entry.name} has {len(refs)} components but the line gives one exact value")
        meta = self.derivation.meta(refs[0])
        try:
            written = mathread.evaluate(entry.exact, lambda node: self.value_of(node, meta.block, meta.head),
                                        self.derivation.case.conventions.activation)
        except (ValueError, DeriveError) as exc:
            detail = exc.detail if isinstance(exc, DeriveError) else str(exc)
            return Verdict(entry.line, entry.source, "not checked",
                           f"{label}: the formula is not evaluated ({detail})", label)
        value = self.derivation.value(refs[0])
        shown = mathread.show(entry.exact)
        if _same_value(value, written, 30):
            return Verdict(entry.line, entry.source, "correct", f"{label}: correct: {shown}", label, [shown])
        exact = self.printer(3).byhand.exact_digits(refs[0]) or UNDECIDED_DIGITS
        return Verdict(entry.line, entry.source, "wrong", f"{label}: wrong: {shown} is {_show(written)}, "
                       f"the exact value is {exact}", label, [shown], None, [exact])

    def value_of(self, node, block: int | None = None, head: int | None = None):
        """The exact value of a name in a formula (one scalar quantity, a weight or the
        derivative of L by one), in ``block`` and ``head`` when it has several."""
        name = mathread.label(node)
        try:
            refs = find(self.derivation, name, block, head)
        except DeriveError:
            refs = self.weight(name, block, head)
        if len(refs) != 1:
            raise DeriveError(f"{name} is not one number")
        return self.derivation.value(refs[0])

    def weight(self, name: str, block: int | None = None, head: int | None = None) -> list[Ref]:
        """A weight by its label (``E_{1,1}``, ``W_2_{1,1}``), or ``dL/dE_{1,1}``: of the
        block and head of the line's context when several weights have the name (a head's
        own W_Q, numbered from column 1 as the page prints it, before one the heads share)."""
        phase = "before"
        if name.startswith("dL/d"):
            phase, name = "grad", name[4:]
        key = name.replace("{", "").replace("}", "")
        graph = self.derivation.graph
        leaves = per_derivation(self.derivation, "param leaves", graph.param_leaves)
        found = in_context(graph, [i for i in leaves if graph.nodes[i].meta.label.replace("{", "").replace("}", "")
                                   == key], block, head)
        if not found:
            found = [r.id for r in self.weight_part(name, block, head)]
        return [Ref(phase, i) for i in found]

    def weight_part(self, name: str, block: int | None = None, head: int | None = None) -> list[Ref]:
        """A row or an entry of a weight matrix written with an index: ``E_2`` or ``E[2]``
        (row 2), ``E[␣the]`` (the row of that piece), ``W_Q[1,2]`` (row 1, column 2), of
        the context's block and head as :meth:`weight` reads them.

        Raises:
            DeriveError: when the name is no such part."""
        params = sorted(per_derivation(self.derivation, "params", lambda: {
            self.derivation.graph.nodes[i].meta.param for i in self.derivation.graph.param_leaves()}), key=len)
        for param in reversed(params):
            index = WEIGHT_INDEX.fullmatch(name[len(param):]) if name.startswith(param) else None
            if index is None:
                continue
            parts = [p.strip() for p in (index.group(1) or index.group(2)).split(",")]
            case = self.derivation.case
            if param == "E" and len(parts) == 1 and parts[0] in case.pieces:
                parts = [str(case.pieces.index(parts[0]) + 1)]  # E[␣the]: the row of the piece
            if not all(p.isdigit() for p in parts) or len(parts) > 2:
                break
            if len(parts) == 1 and param != "E" and param_rows(self.derivation, param, block, head) == 1:
                parts = ["1", parts[0]]  # b_1[5]: a weight of one row (a bias, a gain) named by its entry
            row = param_row(self.derivation, param, int(parts[0]), block, head)
            if len(parts) == 2:
                if not 1 <= int(parts[1]) <= len(row):
                    break
                return [row[int(parts[1]) - 1]]
            return row
        raise DeriveError(f"no quantity is called {quoted(name)}")

    def judge_computed(self, entry: Entry, claim: Claim) -> Verdict:
        """A cell whose value a formula or a fact gives (``E_i - 1/10 dL/dE_i``, an id)."""
        if len(claim.values) != len(entry.values):
            raise DeriveError(f"{claim.label} has {counted(len(claim.values), 'component')} but the cell gives "
                              f"{len(entry.values)}")
        expected, exact, wrong, undecided = [], [], [], []
        for value, text in zip(claim.values, entry.values):
            places = decimal_places(text) or 0
            v = fmpq(value.numerator, value.denominator) if isinstance(value, Fraction) else value
            with ctx.workprec(READER_PREC):
                rounded = format_value(v, self.fmt(places))
                either = [rounded] if rounded is not None else _roundings(v, self.fmt(places))
            expected.append(rounded)
            exact.append(_show(Fraction(int(v.p), int(v.q)) if is_exact(v) else v))
            if not any(_same(text, r.replace("\u2212", "-")) for r in either):
                wrong.append(f"{claim.label}: {text} is wrong: " + (
                    f"the exact value is {exact[-1]}, which rounds to {rounded}" if rounded is not None
                    else _rounds_to_either(exact[-1], either)))
            elif rounded is None:  # (the ball sits on a rounding boundary: either digit may be right)
                undecided.append(f"{claim.label}: not checked: {text}: "
                                 + _on_boundary(exact[-1], either, "these places"))
        if wrong:
            return Verdict(entry.line, entry.source, "wrong", "; ".join(wrong), claim.label, entry.values, expected,
                           exact)
        if undecided:
            message = "; ".join(undecided)
            return Verdict(entry.line, entry.source, "not checked", message, claim.label, entry.values, expected, exact)
        return Verdict(entry.line, entry.source, "correct", f"{claim.label}: correct", claim.label,
                       entry.values, expected, exact)

    # ------------------------------------------------------------------ names
    def named(self, text: str, block: int | None = None, head: int | None = None) -> list[Ref]:
        """The quantities a name written alone means, in ``block`` and ``head``: read as the
        name of a checked line (:func:`derive.handfile.read_name`: ``L after``, ``E_{2,1}
        after the step``) and looked up as a line's name is (:meth:`lookup`: ``dL/dE_{2,1}``,
        ``E[␣the]``, ``a_5``...), each in its pass (a weight's value after the step is its
        ``updated`` Ref); what ``derive explain`` is asked about.

        Raises:
            DeriveError: when nothing has that name, or ``block``/``head`` do not choose
                one of several (the message names ``--block`` and ``--head``)."""
        label, phase = read_name(text)
        return in_pass(self.lookup(label, block, head), phase)

    def masked_score(self, text: str, block: int | None = None, head: int | None = None,
                     in_file: bool = False) -> list[Ref]:
        """The weight a_{i,j} standing for a score the mask hides, written ``text``
        (``s_{1,2}`` under the causal mask: -inf, never computed, no quantity of the graph;
        :func:`derive.names.masked_score`), as one Ref; [] when ``text`` names no such score.
        Call it when :meth:`lookup` has found nothing.

        Raises:
            DeriveError: when the score is masked in several heads or blocks and ``block``/
                ``head`` do not choose one, in the words of a file (``in_file``) or of the
                command line."""
        label, phase = read_name(text)
        if phase != "before":
            return []
        try:
            return masked_score(self.derivation, label, block, head)
        except DeriveError as exc:
            if in_file:
                raise DeriveError(exc.detail, expected=_head_hint(text)) from None
            raise

    def _masked(self, entry: Entry, quiet: bool = True) -> list[Ref]:
        """:meth:`masked_score` of a line of one value written in the pass before the step,
        in its head and block ([] when it names no masked score; with ``quiet``, also when
        it names one in several heads).

        Raises:
            DeriveError: without ``quiet``, as :meth:`masked_score` (in the words of a file)."""
        if entry.phase != "before" or _one_value(entry) is None:
            return []
        try:  # (e^s_{1,2} of a masked score is e^-inf = 0: found by its score's name)
            return self.masked_score(entry.name.removeprefix("e^"), entry.block, entry.head, in_file=True)
        except DeriveError:
            if quiet:
                return []
            raise

    def judge_masked(self, entry: Entry, weight: Ref) -> Verdict:
        """A line about a score the mask hides (``s_{1,2} = -inf``; ``weight``: its a_{i,j},
        :meth:`masked_score`): correct when it gives -inf (``−∞``, ``-\\infty``), else wrong,
        with why: the mask writes -inf there, and the score is never computed. Its e^s
        (``e^{s_{1,2}} = 0``) is e^-inf = 0 exactly, at any places."""
        meta = self.derivation.meta(weight)
        label = str(meta.name.but(symbol="s"))
        why = hidden_by_mask(meta)
        written = _one_value(entry)
        if entry.name.startswith("e^"):  # e^s of a masked score
            label = str(meta.name.but(symbol="exp_s"))
            if is_number(written) and printed_fraction(written) == 0:
                return Verdict(entry.line, entry.source, "correct", f"{label}: correct: exactly 0, e^-inf ({why}; "
                               "never computed)", label, [written], ["0"], ["0"])
            return Verdict(entry.line, entry.source, "wrong", f"{label}: wrong: {why}, so {label} is e^-inf, exactly "
                           f"0 (never computed), not {written}", label, [written], ["0"], ["0"])
        if written == MINUS_INF:
            return Verdict(entry.line, entry.source, "correct", f"{label}: correct: -inf ({why}; never computed)",
                           label, [written], [MINUS_INF], [MINUS_INF])
        return Verdict(entry.line, entry.source, "wrong", f"{label}: wrong: {why}, so {label} is -inf (never "
                       f"computed, and {meta.label} is exactly 0), not {written}", label, [written],
                       [MINUS_INF], [MINUS_INF])

    def resolve(self, entry: Entry, last: int) -> list[Ref]:
        """:meth:`lookup` of an entry's name (``last``: the position of the row the file
        follows), its errors said in the words of a file (a `Head 1` line, not --head)."""
        return self.lookup(entry.name, entry.block, entry.head, last, in_file=True)

    def lookup(self, name: str, block: int | None = None, head: int | None = None, last: int | None = None,
               in_file: bool = False) -> list[Ref]:
        """The quantities a name means (aliases of the chapter's notation: ``a_5`` is the
        joined attention output, ``X[5]`` the row of X, ``p_roof`` is ``p(roof)``, ``E[1]``
        the row of E read for id 1; with ``last``, the position of the row followed, ``GELU``
        is the row of g and a bare ``mu``, ``sigma`` or ``rms`` the followed row's; then a
        forward quantity, a weight or its gradient, a name of another head than a table
        title's, an equation of the page), before the step (``grad`` for a gradient).

        Raises:
            DeriveError: when the name is nothing derive knows, in the words of a file
                (``in_file``) or of the command line."""
        name = name.strip()
        name = re.sub(r"^a_\{?(\d+)\}?$", r"attn_\1", name)
        name = re.sub(r"^[xX]\[(\d+)\]$", r"x_\1", name)  # X[5]: the row of X at position 5
        name = re.sub(r"^p_(\S+)$", r"p(\1)", name)  # p_roof: p(roof)
        row = re.match(r"^E\[(\d+)\]$", name)
        if row:  # E[1]: the row of E read for id 1 (ids count from 0)
            return param_row(self.derivation, "E", int(row.group(1)) + 1, block)
        if last is not None:
            if re.match(r"^GELU\b", name):
                name = f"g_{last}"
            if self._statistics is None:
                self._statistics = {n.meta.symbol for n in self.derivation.graph.nodes if n.meta.norm}
            if name in self._statistics:
                name = f"{name}_{last}"  # a norm's statistic (mu, sigma, rms) of the followed row
        key = (name, block, head, in_file)
        if key not in self._found:  # (a name that is nothing is remembered too: its message)
            try:
                self._found[key] = self._resolve(name, block, head, in_file)
            except DeriveError as exc:
                self._found[key] = (exc.detail, exc.expected)
        found = self._found[key]
        if isinstance(found, tuple):
            raise DeriveError(found[0], expected=found[1])
        return found

    def _resolve(self, name: str, block: int | None, head: int | None, in_file: bool) -> list[Ref]:
        try:
            return find(self.derivation, name, block, head)
        except DeriveError as exc:
            for retry in (lambda: self.weight(name, block, head),
                          lambda: find(self.derivation, name, block, None),
                          lambda: page_equation(self.derivation, name)):
                try:
                    return retry()  # a weight; or a name of another head than a table title's
                except DeriveError:
                    pass
            case = self.derivation.case
            how = ("a `Head h` line", "a `block b` line") if in_file else ("--head h", "--block b")
            if head is not None and not 1 <= head <= case.heads:
                raise DeriveError(f"head {head} does not exist: the case has {counted(case.heads, 'head')}",
                                  expected=f"{how[0]} with h from 1 to {case.heads}") from None
            if block is not None and not 1 <= block <= len(case.blocks):
                raise DeriveError(f"block {block} does not exist: the case has {counted(len(case.blocks), 'block')}",
                                  expected=f"{how[1]} with b from 1 to {len(case.blocks)}") from None
            if in_file and exc.expected and exc.expected.startswith("--block"):  # a context line, or the name
                raise DeriveError(exc.detail, expected=_head_hint(name)) from None
            raise

    # ------------------------------------------------------------------ judging
    def judge(self, entry: Entry, refs: list[Ref]) -> Verdict:
        """Judge each written component and combine them into the line's verdict. A line
        whose every value is correct or explained has a verdict that depends on its values
        alone (:meth:`judge_value`), kept once per quantities and values (a long file
        repeats its lines)."""
        key = (*refs, *entry.values)  # (a Ref is a tuple, a value a str: the key says which is which)
        settled = self._settled_lines.get(key)
        if settled is not None:
            for ref, text in zip(refs, entry.values):
                self._wrote(ref, text, entry.line)
                self.origin.pop(ref, None)
                self._origins.pop(ref.id, None)
            status, message, label, expected, exact = settled
            return Verdict(entry.line, entry.source, status, message, label, entry.values, expected, exact)
        step = self.last_step(entry) if len(refs) == 1 else None
        results = [self.judge_value(ref, text, entry.line, step) for ref, text in zip(refs, entry.values)]
        for ref, text in zip(refs, entry.values):
            self._wrote(ref, text, entry.line)
        worst = max(results, key=lambda r: RANK[r[0]])
        status = worst[0]
        label = self.label(refs[0]) if len(refs) == 1 else _row_name([self.label(r) for r in refs]) or (
            entry.name + AFTER if entry.name and entry.phase == "after" else entry.name)
        messages = [m for _, m, *_ in results if not m.endswith(": correct")]
        message = "; ".join(dict.fromkeys(messages)) or (f"{label}: correct" if label else "correct")
        for ref, result in zip(refs, results):
            # a wrong value starts a chain of errors; an inherited one carries its origin on; a value written
            # again ends the chain its earlier value started (what follows reads the new one): a wrong one
            # starts its own, a right one none
            if result[0] in ("wrong", "convention"):
                self.origin[ref] = entry.line
            elif result[0] == "inherited":
                self.origin[ref] = result[2]
            elif result[0] in ("correct", "explained"):
                self.origin.pop(ref, None)
                self._origins.pop(ref.id, None)
            if ref in self.origin and ref.phase == "before":
                self._origins[ref.id] = self.origin[ref]
        origin = next((r[2] for r in results if r[0] == "inherited"), None)
        convention = _common([r[3] for r in results if r[0] == "convention"])
        expected, exact = [r[4] for r in results], [r[5] for r in results]
        if all(r[0] in ("correct", "explained") and self._settled.get((ref, text)) is r
               for ref, text, r in zip(refs, entry.values, results)):  # (not an explanation by the lines before)
            self._settled_lines[key] = (status, message, label, expected, exact)
        return Verdict(entry.line, entry.source, status, message, label, entry.values, expected, exact, origin,
                       convention)

    def _wrote(self, ref: Ref, text: str, line: int) -> None:
        """Keep the reader's value ``text`` of ``ref``, written on ``line``."""
        self.student[ref] = _fraction(text)
        self.written_on[ref] = line  # the reader's latest value of it
        if ref.phase == "before":
            self._written[ref.id] = _fmpq(text)

    def last_step(self, entry: Entry) -> tuple | None:
        """The calculation a named line writes just before its value, and the calculation's
        exact value (``z_roof = 0.4935 + 0.928 + 0 + 1.069 = 2.4905``: the sum and 2.4905);
        None when the line writes none, or the value is not that calculation's (its steps
        are judged on their own: :meth:`check_entry`)."""
        if not entry.steps or len(entry.values) != 1 or entry.steps[-1][1] != entry.values[0]:
            return None
        node, text, _ = entry.steps[-1]
        try:
            value, _ = _evaluate(node, self.fmt(decimal_places(text) or 0))
        except (ValueError, ArithmeticError):  # (mathread.Beyond is a ValueError)
            return None
        return node, value

    def page_of(self, ref: Ref, step: tuple, places: int) -> int | None:
        """The places of the page (fewer than ``places``, the line's, and as many as one of
        the calculation's numbers has) from whose printed inputs a reader gets exactly the
        value of ``step`` (:meth:`last_step`) for ``ref``: 3 for the seed's ``z_roof =
        0.4935 + 0.928 + 0 + 1.069 = 2.4905`` (the products of the f_5 printed at 3 places,
        summed whole at 4); None when no page gives it."""
        node, value = step
        pages = sorted({decimal_places(n.text) or 0 for n in mathread.numbers(node)}, reverse=True)
        ref = as_stepped(self.derivation, ref)
        return next((page for page in pages if 0 < page < places and ref in self.by_hand_of(value, page)), None)

    def judge_value(self, ref: Ref, text: str, line: int, step: tuple | None = None) -> tuple:
        """(status, message, origin line, conventions matched (a list), expected text, exact
        digits). ``step``: the calculation the line writes before ``text`` (:meth:`last_step`),
        which explains a value that is a reader's from the page printed at fewer places."""
        settled = self._settled.get((ref, text))
        if settled is not None:
            return settled
        places = decimal_places(text) or 0
        printer = self.printer(places)
        fmt = printer.fmt
        expected = printer.text[ref].replace("\u2212", "-") if ref in printer.text else \
            self.derivation.decimal(ref, Format(places=places, mode=self.mode))
        if ref not in self._exact:
            self._exact[ref] = printer.byhand.exact_digits(ref) or UNDECIDED_DIGITS
        exact = self._exact[ref]
        label = self.label(ref)
        if not is_number(expected):  # (no precision and no exact simplification decided the last digit)
            either = self.roundings(ref, fmt)
            if any(_same(text, r) for r in either):
                self._settled[ref, text] = ("not checked", f"{label}: not checked: " + _on_boundary(
                    exact, either, f"{places} places"), None, None, expected, exact)
            else:
                self._settled[ref, text] = ("wrong", f"{label}: wrong: " + _rounds_to_either(exact, either), None, None,
                                            expected, exact)
            return self._settled[ref, text]
        reading = self.reading(ref, places)
        if _same(text, expected):  # correct and explained depend on the value alone, not on earlier lines
            note = f" ({reading.brief()})" if reading is not None and reading.noteworthy else ""
            self._settled[ref, text] = ("correct", f"{label}: correct{note}", None, None, expected, exact)
            return self._settled[ref, text]
        if reading is not None and _same(text, reading.reader.replace("\u2212", "-")):
            self._settled[ref, text] = ("explained", f"{label}: correct given the rounded inputs: "
                                        f"{reading.calculation}, while the exact value {exact} rounds to {expected}",
                                        None, None, expected, exact)
            return self._settled[ref, text]
        if self._searched >= SEARCH_SECONDS:
            self._stopped = self._stopped or line
            return ("wrong", f"{label}: wrong: the exact value is {exact}, which rounds to {expected} (where it "
                    f"comes from was not searched: the file's {SEARCH_SECONDS:g} s for such searches were spent "
                    f"by line {self._stopped})", None, None, expected, exact)
        start = time.process_time()
        try:
            return self._searched_value(ref, text, fmt, step, places, label, exact, expected)
        finally:
            self._searched += time.process_time() - start

    def roundings(self, ref: Ref, fmt: Format) -> list[str]:
        """The texts a value whose last digit is undecided under ``fmt`` may round to: those
        of its certified ball's two ends (``0.062`` and ``0.063`` for a ball around the tie
        0.0625), at the highest precision the evaluation reaches."""
        return _roundings(self.derivation.value(ref, MAX_PREC), fmt)

    def _searched_value(self, ref: Ref, text: str, fmt: Format, step: tuple | None, places: int, label: str,
                        exact: str, expected: str) -> tuple:
        """:meth:`judge_value` of a value that is neither correct nor the reader's from the
        printed inputs: where it comes from (a page at fewer places, earlier lines, an
        earlier error, another head, another convention), else wrong."""
        page = self.page_of(ref, step, places) if step is not None else None
        if page is not None:  # z_roof = 0.4935 + 0.928 + 0 + 1.069 = 2.4905: the sum from the page at 3 places
            return ("explained", f"{label}: correct given the rounded inputs: {excerpt(mathread.show(step[0]))} = "
                    f"{_show(step[1])} is {label} from the inputs printed at {page} places, while the exact value "
                    f"{exact} rounds to {expected}", None, None, expected, exact)
        lines = self.follows(ref, text, fmt)
        if lines:
            return ("explained", f"{label}: correct given what was written on {_lines(lines)}, while the "
                    f"exact value {exact} rounds to {expected}", None, None, expected, exact)
        origin = self.inherited(ref, text, fmt)
        if origin is not None:
            return ("inherited", f"{label}: follows from the error on line {origin} (exact value {exact}, "
                    f"correctly {expected})", origin, None, expected, exact)
        swapped = self.other_head(ref, text, fmt)
        if swapped is not None:
            return ("wrong", f"{label}: {text} is the value of head {swapped}, not head "
                    f"{self.derivation.meta(ref).head} (heads swapped?); the exact value {exact} rounds to {expected}",
                    None, None, expected, exact)
        matches = self.conventions_matching(ref, text, fmt)
        if matches:
            named = " or ".join(matches)
            return ("convention", f"{label}: {text} is the value under another convention: {named} "
                    f"(this case: {expected})", None, matches, expected, exact)
        by_hand = self.conventions_by_hand(ref, text, fmt)
        if by_hand:  # L = 1.340: -log2 of the printed p (0.395), where log base 2's exact L is 1.338
            named = " or ".join(f"{d} ({r.calculation}, while that convention's exact value {r.exact_digits} "
                                f"rounds to {r.correct})" for d, r in by_hand)
            return ("convention", f"{label}: {text} is the value under another convention, from the printed "
                    f"inputs: {named} (this case: {expected})", None, [d for d, _ in by_hand], expected, exact)
        place = self.other_place(ref, text, fmt)
        if place is not None:  # mu'_5 = -0.467: mu'_4's value, a row too high
            return ("wrong", f"{label}: {text} is the value of {self.label(place)}, not of {label} (another row or "
                    f"column?); the exact value {exact} rounds to {expected}", None, None, expected, exact)
        return ("wrong", f"{label}: wrong: the exact value is {exact}, which rounds to {expected}",
                None, None, expected, exact)

    def conventions_matching(self, ref: Ref, text: str, fmt: Format) -> list[str]:
        """Every convention of :data:`CONVENTIONS` (a reader's slip from the case's choice)
        or :data:`DEFAULTS` (the usual default, when the case itself uses another choice)
        under which ``ref`` rounds to ``text`` (one value can fit several: a_{3,1} is the same
        with no mask and with the mask applied after the softmax). When none does alone,
        every pair of them that changes this quantity is tried together (variance over n-1
        with eps added to sigma), each pair named as "A, together with B"."""
        if (ref, fmt) not in self._others:  # the quantity's value under each convention, printed once
            others = [(d, self._under(d, ref, fmt)) for d in list(CONVENTIONS) + list(DEFAULTS)]
            self._others[ref, fmt] = [(d, other) for d, other in others if other is not None]
        matches = [description for description, other in self._others[ref, fmt] if _same(text, other)]
        if matches:
            return matches
        # the conventions that move this quantity at all (two more places than written)
        finer = Format(places=fmt.places + 2, mode=fmt.mode)
        own = self.derivation.decimal(ref, finer)
        moving = [d for d, _ in self._others[ref, fmt] if self._under(d, ref, finer) not in (None, own)]
        pairs = [(a, b) for i, a in enumerate(moving) for b in moving[i + 1:]]
        return [", together with ".join(pair) for pair in pairs if _same(text, self._under(pair, ref, fmt) or "")]

    def conventions_by_hand(self, ref: Ref, text: str, fmt: Format) -> list[tuple[str, object]]:
        """(convention, the reader's :class:`~derive.byhand.Reading`) for every convention of
        :meth:`conventions_matching` under which a reader who redoes ``ref`` from the inputs
        printed under that convention writes ``text``, where its exact value rounds to another
        (``L = 1.340`` on cat-climbed: -log2 of the printed p(␣roof) = 0.395 is 1.34007…,
        while log base 2's exact L, 1.33843…, rounds to 1.338). Only conventions that move
        ``ref`` at all are tried (each one's page is printed once per places; the readings
        are made once per quantity and format, whatever the texts judged against them)."""
        key = (ref, fmt)
        if key not in self._by_hand:
            finer = Format(places=fmt.places + 2, mode=fmt.mode)
            own = self.derivation.decimal(ref, finer)
            readings = []
            for description, _ in self._others.get(key, []):
                if self._under(description, ref, finer) in (None, own):
                    continue
                reading = self._reading_under(description, ref, fmt.places)
                if reading is not None:
                    readings.append((description, reading, reading.reader.replace("\u2212", "-")))
            self._by_hand[key] = readings
        return [(description, reading) for description, reading, reader in self._by_hand[key] if _same(text, reader)]

    def _reading_under(self, description: str, ref: Ref, places: int):
        """The reader's :class:`~derive.byhand.Reading` of ``ref`` in the case derived under
        ``description``, from that page printed at ``places`` (None: no such quantity or no
        by-hand form)."""
        found = self._in_variant(description, ref)
        if found is None:
            return None
        variant, other = found
        key = ("under", description, places)
        if key not in self._variants:
            self._variants[key] = Printer(variant, self.fmt(places))
        return self._variants[key].byhand.reading(other)

    def _under(self, description: str | tuple[str, ...], ref: Ref, fmt: Format) -> str | None:
        """``ref``'s value written at ``fmt`` in the case derived under ``description``
        (None when that variant does not exist or has no such quantity)."""
        key = (description, ref, fmt)
        if key not in self._variant_values:
            self._variant_values[key] = None
            found = self._in_variant(description, ref)
            if found is not None:
                try:  # (a quantity the variant does not derive: NotDerived)
                    self._variant_values[key] = found[0].decimal(found[1], fmt).replace("\u2212", "-")
                except DeriveError:
                    pass
        return self._variant_values[key]

    def _in_variant(self, description: str | tuple[str, ...], ref: Ref) -> tuple[Derivation, Ref] | None:
        """The case derived under ``description`` and the same quantity in it, in the same
        pass (L after the step is not L); None when that variant does not exist or has no
        such quantity."""
        variant = self.variant(description)
        if variant is None:
            return None
        meta = self.derivation.meta(ref)
        try:
            return variant, Ref(ref.phase, find(variant, meta.label, meta.block, meta.head)[0].id)
        except DeriveError:
            pass
        plain = next((symbol for symbol, scaled in OVER_T.items() if scaled == meta.symbol), None)
        if plain is not None:  # (at T = 1, e^(z_j/T) is e^z_j)
            try:
                name = meta.name.but(symbol=plain)
                return variant, Ref(ref.phase, find(variant, name, meta.block, meta.head)[0].id)
            except DeriveError:
                pass
        return None

    def other_head(self, ref: Ref, text: str, fmt: Format) -> int | None:
        """The head whose quantity of the same name (or, for a row split among the heads by
        columns, whose component at the same place: q_5[3] for head 1's q_5[1]) has the
        written value, when it is not this quantity's head (a swapped head), else None."""
        meta = self.derivation.meta(ref)
        if meta.head is None:
            return None
        if (ref, fmt) not in self._heads:  # the same name's value in each other head, printed once
            heads = []
            for head in range(1, self.derivation.case.heads + 1):
                if head == meta.head:
                    continue
                try:
                    other = find(self.derivation, HEAD.sub("", meta.label), meta.block, head)
                except DeriveError:  # q_5[2] is a column of head 1 only: head 2's column at its place
                    place = same_place_in_head(self.derivation, ref.id, head)
                    other = [] if place is None else [Ref(ref.phase, place)]
                if len(other) == 1:
                    heads.append((head, self.derivation.decimal(other[0], fmt).replace("\u2212", "-")))
            self._heads[ref, fmt] = heads
        return next((head for head, other in self._heads[ref, fmt] if _same(text, other)), None)

    def other_place(self, ref: Ref, text: str, fmt: Format) -> Ref | None:
        """The quantity of the same name in the same column of another row, or the same row
        of another column (same pass, block, head and norm: mu'_4 for mu'_5, u_4[1] for
        u_5[1], z_wall for z_roof) whose printed value is ``text``, the first in the graph's
        order, when one is (a value copied from the wrong row); None otherwise, and for a
        written 0 (many quantities print it)."""
        if _fraction(text) == 0:
            return None
        meta = self.derivation.meta(ref)
        if meta.symbol in (None, "param"):
            return None
        if not self._places:  # (every named quantity by its name without its place, once per derivation)
            for r in self.derivation.quantities():
                m = self.derivation.meta(r)
                self._places.setdefault((r.phase, m.symbol, m.block, m.head, m.norm), []).append(r)
        for other in self._places.get((ref.phase, meta.symbol, meta.block, meta.head, meta.norm), ()):
            m = self.derivation.meta(other)
            if (m.position == meta.position) != (m.index == meta.index) \
                    and _same(text, self.derivation.decimal(other, fmt).replace("\u2212", "-")):
                return other
        return None

    def follows(self, ref: Ref, text: str, fmt: Format) -> list[int]:
        """The lines of the reader's earlier values (right at the places they were written,
        but rounded) that ``text`` follows from: recomputing the graph from those values
        gives ``text`` at its places (u_5 from mu_5 = 0.00 and sigma_5 = 0.87 written at 2
        places). Empty when no earlier value reaches this quantity, one of them was wrong
        (that is :meth:`inherited`), or they do not give ``text``."""
        if ref.phase != "before" or not self._written:
            return []
        upstream, nodes = self.upstream(ref.id)
        used = [i for i in upstream if i in self._written]
        if not used or any(i in self._origins for i in used) or \
                not self._gives(ref, text, fmt, upstream, None, nodes):
            return []
        values = self.derivation.evaluation().before
        rounded = [Ref("before", i) for i in used if not (is_exact(values[i]) and values[i] == self._written[i])]
        return sorted({self.written_on[r] for r in rounded if r in self.written_on})  # mu_5 = 0.00 is mu_5 itself

    def inherited(self, ref: Ref, text: str, fmt: Format) -> int | None:
        """The line of an earlier error that explains ``text``: recompute the graph with
        the reader's own earlier values in place of the exact ones and see whether it
        gives what they wrote. None when no earlier line was wrong upstream.

        When errors from several lines reach this quantity, the origin is the nearest line
        whose errors alone (the reader's other wrong values put back to exact) explain it;
        a dependency that does not change the value (a zero weight) names no origin."""
        if ref.phase != "before" or not self.origin:
            return None
        graph = self.derivation.graph
        # the reader's own values shadow what lies behind them: an error before a value
        # they wrote again (right or wrong) does not reach this line through it
        upstream, upstream_nodes = self.upstream(ref.id)
        origins = self._origins
        lines = sorted({origins[i] for i in (upstream if len(upstream) < len(origins) else origins)
                        if i in upstream and i in origins})
        if not lines:
            return None
        # every written value upstream takes the reader's value: what lies behind them is not read
        if not self._gives(ref, text, fmt, upstream, None, upstream_nodes):
            return None
        if len(lines) > 1:
            # a written value from another line is recomputed from what lies behind it
            if ref.id not in self._behind:
                self._behind[ref.id] = tuple(sorted(_ancestors(graph, ref.id) | {ref.id}))
            nodes = self._behind[ref.id]
            for line in reversed(lines):
                if self._gives(ref, text, fmt, upstream, line, nodes):
                    return line
        return lines[0]

    def upstream(self, node_id: int) -> tuple[set[int], tuple[int, ...]]:
        """The nodes ``node_id`` is computed from, not looking behind the reader's values
        (:func:`_ancestors` with the written nodes as ``stop``), and those nodes with
        ``node_id`` in the graph's order; worked out once per node and set of written nodes."""
        key = (node_id, len(self._written))
        if key not in self._upstream:
            upstream = _ancestors(self.derivation.graph, node_id, self._written.keys())
            self._upstream[key] = (upstream, tuple(sorted(upstream | {node_id})))
        return self._upstream[key]

    def _gives(self, ref: Ref, text: str, fmt: Format, upstream: set[int], only: int | None,
               nodes: tuple[int, ...]) -> bool:
        """Recomputing ``ref`` from the reader's values upstream (only the wrong ones that
        come from line ``only``, when given) gives ``text``; ``nodes`` (in order) are the
        nodes that can change it (of them, those downstream of the reader's values are
        recomputed: found once per set of values taken and ``nodes``)."""
        written = self._written
        near = upstream if len(upstream) < len(written) else written
        overrides = {i: written[i] for i in near if i in upstream and i in written
                     and (only is None or Ref("before", i) not in self.origin or self.origin[Ref("before", i)] == only)}
        key = (ref.id, frozenset(overrides), nodes)
        if key not in self._recomputed:
            self._recomputed[key] = _changed(self.derivation.graph, overrides, nodes)
        with ctx.workprec(READER_PREC):
            try:
                value = _forward_with(self.derivation.graph, self.derivation.evaluation().before, overrides, ref.id,
                                      self._recomputed[key])
            except (Undefined, NeedPrecision):  # (sigma_5 = 0 written above: from the reader's values, no value)
                return False
            again = format_value(value, fmt)
        return again is not None and _same(text, again)

    # ------------------------------------------------------------------ arithmetic
    def check_arithmetic(self, entry: Entry) -> Verdict:
        """Judge ``expression = value`` on its own numbers, or as a quantity's by-hand form."""
        text = entry.values[-1] if len(entry.values) == 1 else None
        expr = excerpt(entry.expr or "")  # (what the messages repeat of it)
        if text is None:
            return Verdict(entry.line, entry.source, "unreadable", "an arithmetic line needs one number on the right")
        places = decimal_places(text) or 0
        fmt = self.fmt(places)
        flipped = self.sgd_sign(entry, text)
        if flipped is not None:
            return flipped
        try:
            value, expected = _evaluate(entry.node, fmt)
        except mathread.TooLarge as big:
            if abs(printed_fraction(text)) < 10 ** mathread.MAX_DIGITS:
                return Verdict(entry.line, entry.source, "wrong", f"wrong: {big}, not {text}", entry.expr, [text])
            return Verdict(entry.line, entry.source, "not checked", f"not checked: {big}", entry.expr, [text])
        except mathread.Beyond as exc:
            return Verdict(entry.line, entry.source, "not checked", f"not checked: {exc}", entry.expr, [text])
        except (ValueError, ArithmeticError) as exc:
            return Verdict(entry.line, entry.source, "unreadable", f"cannot read the arithmetic {quoted(entry.expr)}: {exc}")
        if expected is None:
            return Verdict(entry.line, entry.source, "not checked",
                           f"not checked: {expr} = {_show(value)} lies on a rounding boundary at {places} places "
                           f"(or too near one to tell at {mathread.MAX_PREC} bits): derive does not guess its last digit",
                           entry.expr, [text], None, [_show(value)])
        shown = _show(value)
        # a by-hand form takes its inputs from a page printed at the result's places
        given = max((decimal_places(n.text) or 0 for n in mathread.numbers(entry.node)), default=0)
        # (a whole number, 1 + 1 = 2, is arithmetic on its own: no page is printed at 0 places)
        quantities = [ref for ref in self.by_hand_of(value, places) if self.writes_inputs(entry.node, ref, places)] \
            if given <= places and "." in text else []
        if expected is not None and _same(text, expected):
            message = f"correct: {expr} = {shown}"
            tie = isinstance(value, Fraction) and is_tie(value, fmt)
            if tie:
                message += f", exactly on a tie at {places} places ({self.mode} gives {expected})"
            for ref in quantities:
                correct = self.printer(places).text[ref].replace("\u2212", "-")
                if tie or not _same(text, correct):
                    exact = self.printer(places).byhand.exact_digits(ref) or UNDECIDED_DIGITS
                    message += (f"; this is {self._name(ref)} from the printed inputs, whose exact value {exact} "
                                f"rounds to {correct}")
            return Verdict(entry.line, entry.source, "correct", message, entry.expr, [text], [expected], [shown])
        match = next((r for r in quantities if _same(text, self.printer(places).text[r].replace("\u2212", "-"))), None)
        if match is not None:
            return Verdict(entry.line, entry.source, "explained",
                           f"{expr} = {shown} rounds to {expected}, but {text} is {self._name(match)}: its exact "
                           "value, computed from unrounded inputs, rounds to it", entry.expr, [text], [expected], [shown])
        return Verdict(entry.line, entry.source, "wrong", f"wrong: {expr} = {shown}, which rounds to {expected}",
                       entry.expr, [text], [expected], [shown])

    def sgd_sign(self, entry: Entry, text: str) -> Verdict | None:
        """A line written as an SGD step, ``theta ± eta·(g) = value``, where eta is the
        case's learning rate and theta and g are the printed values (at the places written)
        of a weight and of ±its gradient: the step goes against the gradient, theta - eta
        dL/dtheta (the seed's step 2b), so a line that adds the gradient, or subtracts it
        with its sign flipped, is wrong, with the weight and its gradient named. None for
        any other line (it is judged as arithmetic)."""
        shape = _sgd_shape(entry.node)
        if shape is None:
            return None
        theta, op, eta, g = shape
        if eta != Fraction(self.derivation.case.conventions.learning_rate):
            return None
        places = (decimal_places(theta) or 0, decimal_places(g.lstrip("-")) or 0)
        if places not in self._steps:
            graph = self.derivation.graph
            index: dict = {}
            for leaf in per_derivation(self.derivation, "gradient leaves", self.derivation.gradient_leaves):
                w = self.derivation.decimal(Ref("before", leaf), self.fmt(places[0])).replace("\u2212", "-")
                d = self.derivation.decimal(Ref("grad", leaf), self.fmt(places[1])).replace("\u2212", "-")
                if is_number(d) and printed_fraction(d) != 0:
                    index.setdefault((printed_fraction(w), printed_fraction(d)), []).append(leaf)
            self._steps[places] = index
        w, written = printed_fraction(theta), printed_fraction(g)
        plus, minus = self._steps[places].get((w, written), []), self._steps[places].get((w, -written), [])
        leaf = self._sgd_rows.get(id(entry))
        if leaf is not None:  # the row of a block of steps (the seed's aligned step 2b) says which weight
            plus, minus = [leaf] if leaf in plus else [], [leaf] if leaf in minus else []
        if op == "-" and plus or op == "+" and minus or not (plus or minus):
            return None  # against the gradient (or not a weight and its gradient)
        leaf = (plus or minus)[0]
        label, grad, after = (self.label(Ref(phase, leaf)) for phase in ("before", "grad", "after"))
        gradient = written if plus else -written
        right = w - eta * gradient
        how = "adds the gradient" if op == "+" else f"writes the gradient with its sign flipped ({g})"
        message = (f"wrong: an SGD step goes against the gradient: {label} - {exact_text(eta)}·{grad} = "
                   f"{theta} - {exact_text(eta)}·({_text(gradient)}) = {_text(right)}; this line {how}")
        return Verdict(entry.line, entry.source, "wrong", message, after, [text],
                       [format_fraction(right, self.fmt(decimal_places(text) or 0))], [_text(right)])

    def sgd_blocks(self, entries: list[Entry]) -> dict[int, int]:
        """Runs of two or more SGD-shaped arithmetic lines (``theta ± eta·(g) = value``) in
        a row, matched to the one row of a weight matrix whose printed weights they start
        from, column by column, and whose gradients they use up to sign: id(entry) -> the
        weight (graph leaf) of each line. A run that fits no row, or several, names none."""
        graph = self.derivation.graph
        rows: dict[tuple, list[int]] = {}
        for leaf in per_derivation(self.derivation, "gradient leaves", self.derivation.gradient_leaves):
            meta = graph.nodes[leaf].meta
            rows.setdefault((meta.param, meta.block, meta.position), []).append(leaf)
        out: dict[int, int] = {}
        run: list[tuple[Entry, tuple]] = []
        for entry in entries + [Entry(0, "")]:
            shape = _sgd_shape(entry.node) if entry.kind == "arithmetic" and entry.node is not None else None
            if shape is not None and (not run or entry.line - run[-1][0].line <= 1):
                run.append((entry, shape))
                continue
            if len(run) >= 2:
                fits = [leaves for leaves in rows.values() if len(leaves) >= len(run) and
                        all(self._fits(leaf, shape) for leaf, (_, shape) in zip(
                            sorted(leaves, key=lambda i: graph.nodes[i].meta.index), run))]
                if len(fits) == 1:
                    ordered = sorted(fits[0], key=lambda i: graph.nodes[i].meta.index)
                    out.update({id(e): leaf for leaf, (e, _) in zip(ordered, run)})
            run = [(entry, shape)] if shape is not None else []
        return out

    def _fits(self, leaf: int, shape: tuple) -> bool:
        """The weight's printed value is theta and its gradient's is g or -g (at the places written)."""
        theta, _, _, g = shape
        w = self.derivation.decimal(Ref("before", leaf), self.fmt(decimal_places(theta) or 0))
        d = self.derivation.decimal(Ref("grad", leaf), self.fmt(decimal_places(g.lstrip("-")) or 0))
        if not (is_number(w) and is_number(d)):
            return False
        return printed_fraction(w) == printed_fraction(theta) and abs(printed_fraction(d)) == abs(printed_fraction(g))

    def _name(self, ref: Ref) -> str:
        meta = self.derivation.meta(ref)
        return self.label(ref) + (f" (head {meta.head})" if meta.head else "")

    def by_hand_of(self, value, places: int) -> list[Ref]:
        """The printed quantities whose by-hand form from the printed inputs (at ``places``)
        is exactly ``value`` (a Fraction, or a ball that agrees with it to 12 more places)."""
        if places not in self._readings:
            printer = self.printer(places)
            readings: dict = {}  # the readings' values by their digits at places + 12, cut
            for ref in printer.text:
                reading = printer.byhand.reading(ref)
                if reading is not None and reading.value is not None:
                    readings.setdefault(_key(reading.value, places + 12), []).append((ref, reading.value))
            self._readings[places] = readings
        candidates = self._readings[places].get(_key(value, places + 12), [])
        return [ref for ref, v in candidates if _same_value(v, value, places + 12)]

    def reading(self, ref: Ref, places: int):
        """The by-hand reading of ``ref`` from the page printed at ``places``
        (:meth:`derive.byhand.ByHand.reading`), or None; worked out once. A weight after the
        step (``E_{1,3} after the step``: the pass after it) is read as the SGD step writes it,
        theta - eta dL/dtheta from the printed weight and derivative, as explain reads it."""
        ref = as_stepped(self.derivation, ref)
        if (ref, places) not in self._reading:
            self._reading[ref, places] = self.printer(places).byhand.reading(ref)
        return self._reading[ref, places]

    def writes_inputs(self, node, ref: Ref, places: int) -> bool:
        """The arithmetic ``node`` is ``ref``'s by-hand form: it writes every printed input
        of it (each number the reader takes from the page at ``places``, up to sign) that
        adds to it (a 0, or one multiplied by 0, whose term a reader may leave out, aside). A
        quantity with no printed input (x_5 = E + P, from the weights alone) is no line's: a
        value alone is a coincidence (``2^-1 = 0.5`` is not m_5[3], whose printed inputs are
        g_5's)."""
        reading = self.reading(ref, places)
        if reading is None:
            return False
        formula = reading.formula  # the calculation and its results; a weight the step does not move: its value
        hand = formula.args[0] if isinstance(formula, F.Chain) else formula
        live = {abs(d.fraction) for d in F.decimals(hand, live=True)}
        needed = {abs(d.fraction) for _, e in reading.sources for d in F.decimals(e)} & live - {0}
        return bool(needed) and needed <= _written_numbers(node)


CARRIED = re.compile(r"^(?P<name>[^:]{1,60}): carried from the printed values, (?P<value>[-\u2212]?\d+(?:\.\d+)?)\b")


def _one_value(entry: Entry) -> str | None:
    """The one value a line gives, as written (``-inf``, ``0.5``, an exact ``-1`` of an
    inline formula), or None when it gives several or none."""
    if entry.exact is not None:
        return None if entry.values else mathread.show(entry.exact)
    return entry.values[0] if len(entry.values) == 1 else None


def in_pass(refs: list[Ref], phase: str) -> list[Ref]:
    """``refs`` (of the pass before the step, or gradients) in the pass ``phase`` a name
    wrote: ``after`` gives the same node ids in the forward pass after the SGD step (a
    weight's: its value after the step), ``before`` leaves them as they are."""
    return refs if phase == "before" else [Ref(phase, r.id) for r in refs]


def _carried(entries: list[Entry], verdicts: list[Verdict]) -> list[Verdict]:
    """A chapter written with ``--carry printed`` (each step from the values printed before
    it) says so in a note: ``a_{4,3}: carried from the printed values, 0.494 (2.910 / 5.885
    = 0.49447…); from the exact values, 0.495``. A value judged wrong that such a note, whose
    own arithmetic holds (explained), gives for the same quantity is explained by it."""
    carried = {}
    for entry, verdict in zip(entries, verdicts):
        match = CARRIED.match(entry.note or "") if entry.kind == "note" else None
        if match and verdict.status == "explained":
            carried[(match["name"].strip(), match["value"].replace("\u2212", "-"))] = entry.line
    if not carried:
        return verdicts
    out = []
    for verdict in verdicts:
        line = carried.get((verdict.name, (verdict.written or [""])[0])) if verdict.status == "wrong" and \
            verdict.written and len(verdict.written) == 1 else None
        if line is not None:
            verdict = dataclasses.replace(verdict, status="explained", message=(
                f"{verdict.name}: {verdict.written[0]} is carried from the printed values (the note on line {line}); "
                f"the exact value rounds to {(verdict.expected or ['?'])[0]}"))
        out.append(verdict)
    return out


def _foreign_tables(entries: list[Entry], verdicts: list[Verdict], named=frozenset()) -> list[Verdict]:
    """A table none of whose cells names a quantity of the case (the parameter counts of
    GPT-2 beside a chapter) is not about the case: its cells are not checked, with the
    reason, instead of unreadable. ``named``: the tables (ids) known to name one, whose
    rows alone are unreadable (a token the prompt repeats)."""
    cells: dict[int, list[int]] = {}
    for k, entry in enumerate(entries):
        if entry.cell is not None:
            cells.setdefault(id(entry.cell.table), []).append(k)
    for table, members in cells.items():
        if table not in named and all(verdicts[k].status == "unreadable" for k in members):
            for k in members:
                v = verdicts[k]
                verdicts[k] = dataclasses.replace(v, status="not checked", message="not checked: a table that names no "
                                                  f"quantity of this case ({v.message})")
    return verdicts


def _sgd_shape(node) -> tuple[str, str, Fraction, str] | None:
    """``theta ± eta·(g)`` written with numbers: (theta, ``+`` or ``-``, eta, g), the
    numbers as written with their signs; None for any other shape."""
    if not (isinstance(node, mathread.Bin) and node.op in ("+", "-")):
        return None
    theta, step = _signed(node.a), node.b
    if theta is None or not (isinstance(step, mathread.Bin) and step.op in ("*", "jux")):
        return None
    eta, g = _signed(step.a), step.b
    if isinstance(g, mathread.Paren) and len(g.items) == 1:
        g = g.items[0]
    g = _signed(g)
    if eta is None or g is None or eta.startswith("-"):
        return None
    return theta, node.op, printed_fraction(eta), g


def _signed(node) -> str | None:
    """The text of a written number or of its negation (``-0.011``), else None."""
    if isinstance(node, mathread.Neg) and isinstance(node.a, mathread.Num):
        return "-" + node.a.text
    return node.text if isinstance(node, mathread.Num) else None


def _written_numbers(node) -> set[Fraction]:
    """The numbers written in a formula, up to sign (one that is not a decimal, such as
    ``39.5%``, left out)."""
    out = set()
    for number in mathread.numbers(node):
        try:
            out.add(abs(_fraction(number.text)))
        except ValueError:
            pass
    return out


def _text(q: Fraction) -> str:
    return exact_text(q)


def _key(value, places: int) -> str | None:
    """A value cut to ``places`` (toward zero): two values :func:`_same_value` calls the same
    have the same key."""
    if isinstance(value, Fraction):
        value = fmpq(value.numerator, value.denominator)
    with ctx.workprec(READER_PREC):
        return format_value(value, Format(places=places, mode="down"))


def _same_value(a: Value, b, places: int) -> bool:
    """Two values are the same: equal rationals, or balls that agree to ``places``."""
    if isinstance(b, Fraction):
        b = fmpq(b.numerator, b.denominator)
    if is_exact(a) and is_exact(b):
        return a == b
    with ctx.workprec(READER_PREC):
        fa = format_value(a, Format(places=places, mode="down"))
        fb = format_value(b, Format(places=places, mode="down"))
        if fa is None or fb is None:  # a ball on a boundary of its digits (e^{√2} / (2 e^{√2}) = 1/2): agree
            return bool((arb(a) - arb(b)).abs_upper() < arb(10) ** -places)  # when within 10^-places
    return fa == fb


def _row_name(labels: list[str]) -> str | None:
    """``u_5`` for the components ``u_5[1]`` ... ``u_5[4]``, ``u_5 after the step`` for
    theirs after the step (None when they are not one row)."""
    after = all(label.endswith(AFTER) for label in labels)
    labels = [label.removesuffix(AFTER) for label in labels] if after else labels
    rows = {label.rsplit("[", 1)[0] for label in labels if label.endswith("]")}
    row = rows.pop() if len(rows) == 1 and all(label.endswith("]") for label in labels) else None
    return row + AFTER if row is not None and after else row


AFTER = " after the step"  # (how a label of the pass after the step ends: derive.name.after_step)


def _common(lists: list[list[str]]) -> str | None:
    """The conventions that fit every component of a line (all of the first component's
    when none fits them all), joined with "or"; None when there are none."""
    if not lists:
        return None
    common = [c for c in lists[0] if all(c in other for other in lists[1:])] or lists[0]
    return " or ".join(common)


_fraction = lru_cache(maxsize=1 << 16)(printed_fraction)  # a written number's value, read once per text


@lru_cache(maxsize=1 << 16)
def _fmpq(text: str) -> fmpq:
    """A written number's value as python-flint's fmpq, made once per text."""
    value = _fraction(text)
    return fmpq(value.numerator, value.denominator)


@lru_cache(maxsize=1 << 16)
def _same(written: str, expected: str) -> bool:
    """Two decimal texts name the same printed number (``-0.000`` = ``0.000``)."""
    if written is None or expected is None:
        return False
    try:
        return decimal_places(written) == decimal_places(expected) and _fraction(written) == _fraction(expected)
    except ValueError:  # not a number (undecided ...)
        return False


def _ancestors(graph, node_id: int, stop=frozenset()) -> set[int]:
    """The nodes ``node_id`` is computed from, not looking behind the nodes in ``stop``
    (they are included, their own parents are not)."""
    seen, stack = set(), [node_id]
    while stack:
        for p in graph.nodes[stack.pop()].parents:
            if p not in seen:
                seen.add(p)
                if p not in stop:
                    stack.append(p)
    return seen


def _lines(lines: list[int]) -> str:
    """"line 3", "lines 1 and 2", "lines 1, 2 and 4"."""
    return ("line " if len(lines) == 1 else "lines ") + listed([str(n) for n in lines])


def _changed(graph, overrides, nodes) -> list[int]:
    """The nodes of ``nodes`` (in order) that :func:`_forward_with` recomputes when the
    nodes in ``overrides`` take other values: those with a parent among them or among the
    nodes recomputed before (a shorter ``nodes`` that gives the same value)."""
    changed, out = set(overrides), []
    for i in nodes:
        if i not in changed and graph.nodes[i].op is not None and any(p in changed for p in graph.nodes[i].parents):
            changed.add(i)
            out.append(i)
    return out


def _forward_with(graph, values: Sequence[Value], overrides: dict[int, Value], target: int,
                  changed: list[int]) -> Value:
    """The value of ``target`` when the nodes in ``overrides`` take the given values
    (the reader's own) and the nodes ``changed`` (in the graph's order: :func:`_changed`)
    are recomputed from them."""
    new = dict(overrides)
    for i in changed:
        new[i] = graph.nodes[i].op.eval([new.get(p, values[p]) for p in graph.nodes[i].parents])
    return new.get(target, values[target])


def _roundings(ball, fmt: Format) -> list[str]:
    """The texts (ASCII minus) a value whose ball ``fmt`` cannot round may round to: those of
    the ball's two ends (``0.062`` and ``0.063`` around the tie 0.0625)."""
    ends = [format_value(end, fmt) for end in (ball.lower(), ball.upper())] if not is_exact(ball) else \
        [format_value(ball, fmt)]
    return list(dict.fromkeys(e.replace("\u2212", "-") for e in ends if e is not None))


def _on_boundary(exact: str, either: list[str], places: str) -> str:
    """Why a value whose last digit is undecided is not checked: its ``exact`` digits, the
    roundings ``either`` (:func:`_roundings`) and the ``places`` (``3 places``)."""
    return (f"the exact value {exact} lies on a rounding boundary at {places} (or too near one to tell): it rounds "
            f"to {' or '.join(either)}, and derive does not guess which")


def _rounds_to_either(exact: str, either: list[str]) -> str:
    """What a value whose last digit is undecided rounds to, for a text that is neither."""
    return f"the exact value is {exact}, which rounds to {' or '.join(either)} (derive cannot tell which)"


def _evaluate(node, fmt: Format):
    """The value of free arithmetic (an exact Fraction when it is rational, else a
    certified ball) and its rounding under ``fmt`` (None when undecided): the ball is
    evaluated again at twice the precision while it straddles a rounding boundary, up to
    mathread.MAX_PREC bits.

    Raises:
        mathread.TooLarge, mathread.Beyond: a value beyond a hand computation's bounds;
        ValueError: when the value is undefined (a division by zero) or not real."""
    prec = mathread.PREC
    while True:
        value = mathread.evaluate(node, prec=prec)
        if is_exact(value):
            value = Fraction(int(value.p), int(value.q))
            return value, format_fraction(value, fmt)
        if not value.is_finite():
            raise ValueError("it is undefined (a division by zero?)")
        with ctx.workprec(prec):
            expected = format_value(value, fmt)
        if expected is not None or prec >= mathread.MAX_PREC:
            return value, expected
        prec *= 2


def _show(value) -> str:
    """A value for a message: an exact decimal or fraction (in e notation when long), or a
    ball's first digits followed by ``…``."""
    if isinstance(value, Fraction):
        text = exact_text(value)
        if len(text) <= 40:
            return text
        value = fmpq(value.numerator, value.denominator)
    with ctx.workprec(READER_PREC):
        digits = format_value(value, Format(places=6, mode="down"))
        if digits is None or len(digits) > 40:
            digits = arb(value).str(8, radius=False)
        return digits + "\u2026"


def _agrees(a: str, b: str, mode: str) -> bool:
    """Whether two written numbers of a chain (``sigma_5 = 0.8660 = 0.866``) agree: the one
    with more places rounds (under ``mode``) to the other; with as many places, they are
    equal. A number that cannot be read as a decimal agrees with anything (not judged)."""
    try:
        x, y = printed_fraction(a), printed_fraction(b)
    except ValueError:
        return True
    pa, pb = decimal_places(a) or 0, decimal_places(b) or 0
    if pa == pb:
        return x == y
    (long, short), places = ((x, y), pb) if pa > pb else ((y, x), pa)
    return printed_fraction(format_fraction(long, Format(places=places, mode=mode))) == short

