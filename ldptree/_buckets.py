"""Shape buckets for jitted kernels.

XLA compiles one program per input shape, and compiling the privatize kernel costs seconds. Padding
the holder axis and the cell axis up to a power of two (and slicing the result back) bounds the
number of distinct programs a parameter grid triggers to a handful per session.
"""

from __future__ import annotations

MIN_ROWS = 256


def bucket(size: int, minimum: int = 1) -> int:
    """Smallest power of two ``>= max(size, minimum)``."""
    size = max(int(size), minimum, 1)
    return 1 << (size - 1).bit_length()


def fine_bucket(size: int, minimum: int = MIN_ROWS, steps: int = 16) -> int:
    """``size`` rounded up to a multiple of ``max(minimum, bucket(size) / steps)``: padding at
    most ``2 / steps`` of the size, for kernels compiled once per data set (an experiment's
    fits share their holder count) rather than once per call; never above :func:`bucket`."""
    step = max(minimum, bucket(size, minimum) // steps)
    return max(step, -(-max(int(size), 1) // step) * step)
