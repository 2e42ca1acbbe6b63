"""One writer per folder: an exclusive ``flock`` on the folder itself.

The lock is held on an open descriptor of the folder, not by the existence of a lock file, so
it cannot be broken by deleting a file, and the operating system releases it when the process
ends, however it ends: a killed writer's folder is free again at once, with no manual step.
A second holder (another process, or another descriptor in the same process) is refused.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

__all__ = ["lock_folder", "unlock_folder"]


def lock_folder(folder: Path, busy: str) -> int:
    """An open descriptor of the existing ``folder`` holding its exclusive lock (give it back
    with :func:`unlock_folder`); ``ValueError(busy)`` when another holder has it."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        os.close(fd)
        if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise ValueError(busy) from None
        raise
    return fd


def unlock_folder(fd: int) -> None:
    """Release a lock taken by :func:`lock_folder` (closing its descriptor)."""
    os.close(fd)
