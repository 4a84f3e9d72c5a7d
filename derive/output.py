"""Writing output files atomically: a failed run never leaves a partial or emptied file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import DeriveError


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder, then
    rename it over the target, so the old file stays whole until the new one is complete.

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
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
