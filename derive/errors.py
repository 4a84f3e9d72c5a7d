"""Errors derive reports to its users.

Every error a user can cause (a bad case file, an impossible convention, a file that
cannot be written) is a :class:`DeriveError`. The CLI prints its message on one line and
exits with code 2; it never shows a traceback for one.
"""

from __future__ import annotations

import os
import sys


class DeriveError(Exception):
    """A user-facing error: what went wrong, where, and what was expected.

    Attributes:
        file: the file the error is about (a case file, a hand computation), or None.
        field: the dotted field inside that file (``blocks[1].W_Q``), with row and
            column when they apply (``row 2, column 3``), or None.
        expected: what derive expected to find there.
    """

    def __init__(self, message: str, *, file: str | None = None, field: str | None = None,
                 expected: str | None = None):
        self.file = file
        self.field = field
        self.expected = expected
        self.detail = message
        parts = [p for p in (file, f"field {field}" if field else None) if p]
        where = ": ".join(parts)
        text = f"{where}: {message}" if where else message
        if expected:
            text += f" (expected {expected})"
        super().__init__(text)


def not_utf8(exc: UnicodeDecodeError) -> str:
    """A file's bytes that are not UTF-8, said for a user: ``cannot read: line 5, column
    10: invalid start byte (byte 0xff): not UTF-8 text``: the line, and the column in
    characters (the line's bytes before it read as UTF-8 where they can be), not Python's
    byte offset; a file that starts with UTF-16's byte-order mark is said to be UTF-16 (as
    Windows Notepad saves "Unicode")."""
    raw, at = exc.object, exc.start
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "cannot read: the file is UTF-16 text (it starts with UTF-16's byte-order mark): not UTF-8 text"
    start = raw.rfind(b"\n", 0, at) + 1
    line, column = raw.count(b"\n", 0, at) + 1, len(raw[start:at].decode("utf-8", "replace")) + 1
    return f"cannot read: line {line}, column {column}: {exc.reason} (byte 0x{raw[at]:02x}): not UTF-8 text"


def nul_bytes(text: str) -> str | None:
    """Why text read as UTF-8 is not text, when it holds a NUL byte: UTF-16 saved with no
    byte-order mark (ASCII with a 0 byte beside each character: a third of the characters
    or more are NUL), else the place of the first NUL byte; None for text with none."""
    at = text.find("\x00")
    if at < 0:
        return None
    if 3 * text.count("\x00") >= len(text):
        return "cannot read: the file is UTF-16 text (a 0 byte beside each character): not UTF-8 text"
    line, column = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
    return f"cannot read: line {line}, column {column}: a NUL byte (0x00): not text"


STDIN = "-"  # the file argument that names the standard input (derive check CASE -)


def file_name(path) -> str:
    """How messages and reports name the file at ``path``: ``standard input`` for
    :data:`STDIN`, else the path as given."""
    return "standard input" if str(path) == STDIN else str(path)


def max_mb(variable: str, default: float, file: str, error: type[DeriveError] = DeriveError) -> float:
    """The largest file of a kind read, in MB: ``default``, or the environment variable
    ``variable`` (``DERIVE_MAX_CASE_MB``, ``DERIVE_MAX_HAND_MB``) when it is set.

    Raises:
        DeriveError: of class ``error``, naming ``file``, when the variable is not a positive number."""
    text = os.environ.get(variable)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise error(f"{variable} = {text[:40]!r} is not a positive number", file=file,
                    expected="a size in MB, such as 64")
    return value


def read_text(path, error: type[DeriveError] = DeriveError, limit: tuple[float, str] | None = None) -> str:
    """The text of the file at ``path`` (a case or a hand file; :data:`STDIN`: the standard input),
    read as UTF-8 (a leading byte-order mark kept: the readers read past it). ``limit``: (the
    largest size read, in MB; what the message expects instead), checked before the text is
    read (the standard input is read up to the limit).

    Raises:
        DeriveError: of class ``error``, naming the file (:func:`file_name`), on one line: the file cannot be
            read (the system's reason alone: "No such file or directory"), is larger than
            ``limit``, a byte is not UTF-8 (:func:`not_utf8`), or the text holds a NUL byte
            (UTF-16 saved without its mark: :func:`nul_bytes`)."""
    name = file_name(path)
    most = None if limit is None else int(limit[0] * 10**6)
    try:
        if str(path) == STDIN:  # read whole, as a file is
            data = sys.stdin.buffer.read() if most is None else sys.stdin.buffer.read(most + 1)
            if most is not None and len(data) > most:
                raise error(f"is more than the limit of {limit[0]:g} MB", file=name, expected=limit[1])
            text = data.decode("utf-8")
        else:
            with open(path, encoding="utf-8") as file:
                size = os.fstat(file.fileno()).st_size
                if most is not None and size > most:
                    raise error(f"is {size / 10**6:.1f} MB, more than the limit of {limit[0]:g} MB", file=name,
                                expected=limit[1])
                text = file.read()
    except UnicodeDecodeError as exc:
        raise error(not_utf8(exc), file=name, expected="a text file saved as UTF-8") from None
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}", file=name,
                    expected="a readable UTF-8 text file") from None
    reason = nul_bytes(text)
    if reason is not None:
        raise error(reason, file=name, expected="a text file saved as UTF-8")
    return text


class CaseError(DeriveError):
    """A case file that cannot be loaded: malformed TOML, a missing or malformed field,
    a shape mismatch, a token not in the vocabulary, or a convention derive does not know."""


class EvaluationError(DeriveError):
    """A case that loads but whose forward pass is undefined, e.g. the LayerNorm of a
    constant row with eps = 0 (a division by zero)."""


class NotDerived(DeriveError):
    """A quantity the case asks derive not to compute: the derivative of a weight that
    ``conventions.gradients`` leaves out, its value after the step, or the pass after a
    step that has no derivative to take. The checker says such a line is not checked."""
