"""Writing output files: a failed or killed run never leaves a partial, emptied or stray file.

``-o PATH`` means, by what PATH is:

- ``-``: the standard output;
- a regular file, or a new name in an existing folder: written atomically (a complete new
  file renamed over the old one), keeping the old file's permissions; a read-only file is
  refused, not replaced;
- a symbolic link: the file it points to, as above (the link stays a link);
- this process's own standard output or error or another descriptor it holds open
  (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``, ``/proc/self/fd/N``): written into
  that open descriptor, whatever it leads to (a pipe, or a file opened for appending by the
  shell: what it holds already stays);
- a device, FIFO or socket (a named pipe): written through, in place;
- a folder, an empty name or a missing folder: a one-line error.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from .errors import DeriveError


def write_atomic(path: str | Path, text: str | bytes | Iterable[str]) -> None:
    """Write ``text`` (UTF-8; bytes as they are; an iterable of strings, such as the JSON
    export's records, written as they come without the whole text ever held) to ``path``
    as the module docstring says.

    A regular file is written atomically: the text goes to an unnamed temporary file in
    the same folder (Linux ``O_TMPFILE``; elsewhere a hidden temporary name), flushed to
    disk, then given the target's name by one rename, so the old file stays whole until
    the new one is complete and no temporary name is left behind by a kill while writing.
    The new file keeps the old one's permissions, or gets 0666 less the umask.

    Raises:
        DeriveError: for an empty name, a folder, a read-only file, a missing or
            unwritable folder (naming the path).
    """
    descriptor = own_descriptor(path)
    if str(path) == "-" or descriptor == 1:
        if isinstance(text, (bytes, bytearray)):
            sys.stdout.flush()
            sys.stdout.buffer.write(text)
        else:
            for piece in [text] if isinstance(text, str) else text:
                sys.stdout.write(piece)
        sys.stdout.flush()
        return
    data = _encoded(text)
    if descriptor is not None:
        sys.stderr.flush()  # (ours, written before: it stays first)
        try:
            with open(os.dup(descriptor), "wb") as handle:  # (the descriptor as it is: no truncation, no rename)
                for chunk in data:
                    handle.write(chunk)
        except OSError as exc:
            raise DeriveError(f"cannot write: {exc.strerror}", file=str(path)) from None
        return
    if not str(path):
        raise DeriveError("-o needs a file name (or - for the standard output)", file="-o")
    target = Path(os.path.realpath(path))  # a link: the file it points to
    try:
        info = target.stat()
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise DeriveError(f"cannot write: {exc.strerror}", file=str(path)) from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise DeriveError("is a folder; -o expects a file name", file=str(path))
    if info is not None and not stat.S_ISREG(info.st_mode):  # a device, FIFO or socket
        _write_through(target, data, path)
        return
    if info is not None and not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise DeriveError("is read-only; not replaced", file=str(path))
    mode = stat.S_IMODE(info.st_mode) if info is not None else _new_file_mode()
    try:
        _replace(target, data, mode)
    except OSError as exc:
        raise DeriveError(f"cannot write: {exc.strerror}", file=str(path)) from None


def own_descriptor(path: str | Path) -> int | None:
    """The file descriptor of this process that ``path`` names (``/dev/stdout``: 1,
    ``/dev/stderr``: 2, ``/dev/fd/N``, ``/proc/self/fd/N``: N), or None for any other path.
    Such a path resolves to whatever the descriptor leads to (a pipe, a file the shell opened
    for appending): written by name, a pipe would be missing and a file replaced."""
    text = os.path.normpath(str(path))
    named = {"/dev/stdout": 1, "/dev/stderr": 2}
    if text in named:
        return named[text]
    for prefix in ("/dev/fd/", "/proc/self/fd/"):
        if text.startswith(prefix) and text[len(prefix):].isdigit():
            return int(text[len(prefix):])
    return None


def _encoded(text: str | bytes | Iterable[str]) -> Iterator[bytes]:
    """``text`` as UTF-8 byte chunks (see :func:`write_atomic`)."""
    if isinstance(text, (bytes, bytearray)):
        yield bytes(text)
    elif isinstance(text, str):
        yield text.encode("utf-8")
    else:
        for piece in text:
            yield piece.encode("utf-8")


def _write_through(target: Path, data: Iterator[bytes], path) -> None:
    """Write into a device, FIFO or socket as it is (no rename: it must stay what it is)."""
    try:
        with open(target, "wb") as handle:
            for chunk in data:
                handle.write(chunk)
    except OSError as exc:
        raise DeriveError(f"cannot write: {exc.strerror}", file=str(path)) from None


def _replace(target: Path, data: Iterator[bytes], mode: int) -> None:
    """Put ``data`` at ``target`` by one rename of a complete, synced file with ``mode``."""
    folder = str(target.parent)
    try:
        fd = os.open(folder, os.O_TMPFILE | os.O_RDWR, mode)
    except (AttributeError, OSError):  # no O_TMPFILE here (or not on this file system)
        fd = None
    if fd is not None:
        try:
            _write_all(fd, data, mode)
        except BaseException:
            os.close(fd)
            raise
        try:
            tmp = _free_name(target)
            os.link(f"/proc/self/fd/{fd}", tmp, follow_symlinks=True)
        except OSError:  # e.g. no /proc: the named temporary file below, with what fd holds
            data = _read_back(fd)
        else:
            os.close(fd)
            _rename(tmp, target)
            return
    import tempfile  # (only here: most commands write no file)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
    try:
        try:
            _write_all(fd, data, mode)
        finally:
            os.close(fd)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _rename(tmp, target)


WRITE_BLOCK = 1 << 20  # bytes gathered before one write (crane's JSON: 48,600 records, 18 MB)


def _write_all(fd: int, data: Iterator[bytes], mode: int) -> None:
    """Write every chunk of ``data`` to ``fd`` in blocks of about WRITE_BLOCK bytes (one
    system call per record took a tenth of crane's JSON export), sync it and set ``mode``."""
    block = bytearray()
    for chunk in data:
        block += chunk
        if len(block) >= WRITE_BLOCK:
            _write_block(fd, block)
            block.clear()
    _write_block(fd, block)
    os.fsync(fd)
    os.fchmod(fd, mode)


def _write_block(fd: int, block: bytearray) -> None:
    """Write all of ``block`` to ``fd`` (os.write may write less than it is given)."""
    done = 0
    while done < len(block):
        done += os.write(fd, block[done:] if done else block)


def _read_back(fd: int) -> Iterator[bytes]:
    """What an open file holds, from its start, in blocks; closes it at the end."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        while block := os.read(fd, 1 << 20):
            yield block
    finally:
        os.close(fd)


def _rename(tmp: str, target: Path) -> None:
    try:
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _free_name(target: Path) -> str:
    """A hidden name next to ``target`` that no file has (for the instant before the rename)."""
    for _ in range(100):
        name = target.parent / f".{target.name}.{os.urandom(4).hex()}"
        if not name.exists():
            return str(name)
    raise FileExistsError(f"no free temporary name next to {target}")


def _new_file_mode() -> int:
    """0666 less the umask: the permissions of a new file."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
