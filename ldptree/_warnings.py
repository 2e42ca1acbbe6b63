"""Warnings that point at the user's line.

A warning raised deep inside ldptree (a runner, a tuning mode, a fit) is about the user's call,
so :func:`warn_user` gives :func:`warnings.warn` the stack level of the first frame outside the
ldptree package: the line the user wrote (or the command line's entry point when every frame is
ldptree's own).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

_PACKAGE = str(Path(__file__).resolve().parent)


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the first caller outside ldptree."""
    frame = sys._getframe(1)
    level = 2  # the caller of warn_user
    while frame.f_back is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(
        _PACKAGE
    ):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
