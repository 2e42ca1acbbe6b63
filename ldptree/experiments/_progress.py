"""A dependency-free progress line on stderr: ``[done/total] label  elapsed, ETA``."""

from __future__ import annotations

import sys
import time
from typing import TextIO

import attrs


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
