"""A file a user names must be a regular file to read, and is named as what it is if not.

`Path.is_file()` answers False for a FIFO, a socket and a symlink loop alike, which the
readers reported as "no such file"; reading a FIFO would block a command forever.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_KINDS = {
    stat.S_ISFIFO: "a named pipe (FIFO)",
    stat.S_ISSOCK: "a socket",
    stat.S_ISCHR: "a character device",
    stat.S_ISBLK: "a block device",
    stat.S_ISDIR: "a directory",
}


def regular_file(file: Path) -> None:
    """Raise an OSError that says what `file` is when it is not a regular file to read."""
    try:
        mode = file.stat().st_mode
    except FileNotFoundError:
        if file.is_symlink():
            target = os.readlink(file)
            raise FileNotFoundError(f"{file}: a broken symbolic link (to {target})") from None
        raise FileNotFoundError(f"{file}: no such file") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise OSError(f"{file}: a symbolic link loop, not a file") from None
        raise
    for test, kind in _KINDS.items():
        if test(mode):
            if kind == "a directory":
                raise IsADirectoryError(f"{file}: is a directory, not a file")
            raise OSError(f"{file}: {kind}, not a regular file")
