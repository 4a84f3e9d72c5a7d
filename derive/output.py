"""Writing output files atomically: a failed run never leaves a partial or emptied file."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from .errors import DeriveError


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder, then
    rename it over the target, so the old file stays whole until the new one is complete.

    The new file is flushed to disk before the rename (so a crash cannot leave an empty
    file behind the new name) and keeps the old file's permissions, or gets the usual
    ones (0666 less the umask) when there was none: not the temporary file's 0600.

    Raises:
        DeriveError: when the folder does not exist or cannot be written.
    """
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    except OSError as exc:
        raise DeriveError(f"cannot write: {exc.strerror}", file=str(target)) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, _mode(target))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _mode(target: Path) -> int:
    """The permissions a replaced file keeps, or 0666 less the umask for a new one."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
