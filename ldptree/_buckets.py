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
