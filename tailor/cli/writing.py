"""Writing a command's output file: whole or not at all, and a failure is a usage error.

A disk that fills up or a read-only mount used to end a finished run in an
OSError traceback and leave a truncated file behind (a JSON list cut in the
middle). Regular files are written beside the target and renamed over it, so the
target holds the old content or the new, never part of it; a device or pipe
(`/dev/stdout`) is written in place, as it cannot be renamed over.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import typer


def special_file(path: Path) -> bool:
    """An existing target that is not a regular file (a device, a pipe)."""
    return path.exists() and not path.is_file()


def _mode(path: Path) -> int:
    """Permissions the file gets: those it had, else what a plain open() would give."""
    if path.exists():
        return path.stat().st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_file(path: Path, write: Callable[[Path], object], flag: str) -> None:
    """Call `write(file)` so that `path` ends up fully written; OSError -> BadParameter."""
    try:
        if special_file(path):
            write(path)
            return
        target = path.resolve()  # a symlink's file is replaced, not the link
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        os.close(handle)
        try:
            write(Path(temporary))
            os.chmod(temporary, _mode(target))
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as error:
        reason = error.strerror or str(error)
        raise typer.BadParameter(f"cannot write {path}: {reason}", param_hint=flag) from None


def write_text(path: Path, text: str, flag: str = "--output") -> None:
    """`text` into `path` as UTF-8 (names may hold any character), whole or not at all."""
    write_file(path, lambda file: file.write_text(text, encoding="utf-8"), flag)
