"""A dependency-free progress line on stderr: ``[done/total] label  elapsed, ETA``; and the line
that says, before the first fit, that it compiles the kernels (the first repetition is much
slower than the others, and the reader should know why)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

import attrs

from ldptree._jax_cache import cache_dir


def compile_note() -> str:
    """The line printed before the first fit of a run: it compiles the kernels, which the
    persistent compilation cache keeps for later runs (when it is on)."""
    folder = cache_dir()
    where = (
        f"cached in {folder} for later runs"
        if folder is not None
        else "the compilation cache is off, so every new process compiles them again"
    )
    return f"compiling kernels on the first fit ({where}) ..."


@attrs.define
class ProgressLine:
    """Rewrites one terminal line per step (a new line per step when not a terminal)."""

    total: int
    stream: TextIO = sys.stderr
    done: int = 0
    start: float = attrs.field(factory=time.perf_counter)

    def step(self, label: str) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        text = f"[{self.done}/{self.total}] {label}  {elapsed:.0f} s elapsed, ETA {eta:.0f} s"
        if self.stream.isatty():
            self.stream.write("\r\033[K" + text)
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
