"""Work that may have to be stopped, done in a forked child process (POSIX ``fork``).

SymPy keeps state between calls: an lru cache per cached function, and on each expression
the facts its assumptions system has deduced so far (``sympy/core/assumptions.py``, ``_ask``
stores ``None`` for a fact while it deduces it). A CPU budget that interrupts SymPy halfway
(SIGPROF raising an exception at any bytecode) can leave that state half-updated, and a
later, unrelated call then computes with it: derive once printed ``exp(10^400)`` for
``exp(3*10^400)`` after a budget stopped SymPy's printer. :func:`isolated_map` runs such work
in a child process instead: a child that is stopped is thrown away with whatever it held,
and the parent's SymPy is never interrupted. The child is a fork, so it starts with the
parent's objects (the graph, its values, the forms built so far) at no copying cost.
"""

from __future__ import annotations

import gc
import os
import pickle
import select
import signal
import struct
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

BACKSTOP = 4.0  # a child that sends nothing for BACKSTOP x its budget + 2 s of wall time is killed
_HEADER = struct.Struct("<Q")


class Outcome(NamedTuple):
    """What one item came to: ``value`` (the function's result) when ``done``, else the item
    used up its budget (or its child died) and ``value`` is None. ``seconds``: its CPU time."""

    done: bool
    value: Any
    seconds: float


class OverBudget(Exception):
    """The work on one quantity passed its time budget (see :func:`budget`); ``owner``: the
    token that budget's ``with`` gave, so that an inner budget's handler lets an outer
    one's stop through (``except OverBudget as stop: if stop.owner is not mine: raise``)."""

    def __init__(self, message: str, owner: object = None):
        super().__init__(message)
        self.owner = owner


@contextmanager
def budget(seconds: float):
    """Raise :class:`OverBudget` in the block once it has used ``seconds`` of CPU time
    (user + system: ITIMER_PROF and SIGPROF; in the main thread only, elsewhere no limit).
    CPU time, not wall time, so that a busy machine (a test suite on both cores) reaches
    the same verdicts as an idle one: under wall time a loaded run printed ``undecided``
    where an idle one decided. A budget already running (an outer one) is put back
    afterwards with what it has left, and fires at once if it fell due meanwhile; a
    caller's SIGALRM (a test's wall-clock bound) is left alone. A single long C call (a
    huge integer product) is interrupted only when it returns. The ``with`` gives a token,
    the ``owner`` of the :class:`OverBudget` this budget raises."""
    me = object()
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield me
        return

    def over(signum, frame):
        raise OverBudget(f"more than {seconds:g} s of CPU time", me)

    pending, interval = signal.getitimer(signal.ITIMER_PROF)
    if pending and pending < seconds:  # the outer budget is due first: keep it, untouched
        # (re-arming it with what setitimer reports left pushed it later each time: the
        # kernel's sample of the CPU clock lags, and a form of many nodes re-armed it 2,000
        # times; a budget of 0.25 s stopped after 0.5)
        yield me
        return
    start = time.process_time()
    previous = signal.signal(signal.SIGPROF, over)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield me
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
        if pending:
            signal.setitimer(signal.ITIMER_PROF, max(pending - (time.process_time() - start), 1e-3), interval)


def isolated_map(fn: Callable[[Any], Any], items: Sequence, seconds: float, total: float) -> list[Outcome]:
    """``fn`` applied to each item, each with ``seconds`` of CPU time (user + system), all of
    them together with ``total``; an item past its budget, or past what is left of the
    total, is an :class:`Outcome` not ``done``. The items run one after another in a forked
    child; a child that is stopped (its budget spent, a signal, a crash) is thrown away and
    the items after it go to a new child. Where ``fork`` is missing or this is not the main
    thread, they run in this process under :func:`budget` (the state
    SymPy keeps may then be left half-updated by a stop: see the module's docstring).

    ``fn``'s results must pickle (a Fraction, an int, None, a string). An exception other
    than :class:`OverBudget` raised by ``fn`` makes the item done with value None.

    Raises:
        nothing: every failure of a child is an outcome not done.
    """
    outcomes: list[Outcome] = []
    spent = 0.0
    isolated = hasattr(os, "fork") and threading.current_thread() is threading.main_thread()
    while len(outcomes) < len(items):
        left = total - spent
        if left <= 0:
            outcomes.extend(Outcome(False, None, 0.0) for _ in items[len(outcomes):])
            break
        rest = items[len(outcomes):]
        batch = _in_child(fn, rest, seconds, left) if isolated else _here(fn, rest, seconds, left)
        outcomes.extend(batch)
        spent += sum(o.seconds for o in batch)
        if batch and not batch[-1].done and left <= seconds:
            spent = total  # (stopped on what was left of the total: it is spent, a timer's last tick short or not)
    return outcomes


def _run(fn, item, seconds: float) -> tuple[Outcome, bool]:
    """One item under its budget: (its outcome, whether it was stopped)."""
    start = time.process_time()
    try:
        with budget(seconds):
            value = fn(item)
    except OverBudget:
        return Outcome(False, None, time.process_time() - start), True
    except Exception:  # noqa: BLE001 (an item SymPy cannot do is undecided, as one past its budget)
        return Outcome(True, None, time.process_time() - start), False
    return Outcome(True, value, time.process_time() - start), False


def _here(fn, items: Sequence, seconds: float, left: float) -> list[Outcome]:
    """The items in this process (no fork): up to the first stopped, or the total spent."""
    out = []
    for item in items:
        outcome, _stopped = _run(fn, item, min(seconds, left))
        out.append(outcome)
        left -= outcome.seconds
        if left <= 0:
            break
    return out


def _in_child(fn, items: Sequence, seconds: float, left: float) -> list[Outcome]:
    """The items in one forked child, up to the first one stopped (included) or the total
    spent; at least one outcome (the first item's, not done, if the child died on it)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns (os._exit skips the parent's atexit handlers and buffers)
        # (the parent's objects out of the collector's reach: a full collection would walk, and
        # copy page by page, the whole inherited heap, a test worker's gigabyte included)
        gc.freeze()
        os.close(read_end)
        code = 0
        try:
            for item in items:
                outcome, stopped = _run(fn, item, min(seconds, left))
                data = pickle.dumps(outcome)
                os.write(write_end, _HEADER.pack(len(data)) + data)
                left -= outcome.seconds
                if stopped or left <= 0:
                    break
        except BaseException:  # noqa: BLE001 (the parent reads the missing outcome as not done)
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    out: list[Outcome] = []
    buffer = b""
    wait = BACKSTOP * seconds + 2.0
    try:
        while True:
            ready, _, _ = select.select([read_end], [], [], wait)
            if not ready:  # (stuck in one C call that SIGPROF cannot reach: a huge integer power)
                os.kill(pid, signal.SIGKILL)
                break
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            buffer += chunk
            while len(buffer) >= _HEADER.size and len(buffer) >= _HEADER.size + _HEADER.unpack_from(buffer)[0]:
                size = _HEADER.unpack_from(buffer)[0]
                out.append(pickle.loads(buffer[_HEADER.size:_HEADER.size + size]))
                buffer = buffer[_HEADER.size + size:]
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    if len(out) < len(items) and (not out or out[-1].done) and left - sum(o.seconds for o in out) > 0:
        out.append(Outcome(False, None, min(seconds, left)))  # the child died on this one: not done
    return out
